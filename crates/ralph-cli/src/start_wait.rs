//! Waits before a run starts. What prepares a run (`--task ID` checked in the task list, a step
//! a killed ralph left half done finished) may be told "not now" by the list's service (a
//! rate limit): it waits as the run waits for its task list, counting down with Ctrl+C to look
//! at once (twice to stop), then is tried again, instead of failing the start. Once a wait has
//! taken the signals, a step runs on a thread of its own, so that a Ctrl+C or a SIGTERM while
//! it waits on a request that does not answer ends ralph at once, as before the first wait.

use std::io::Write;
use std::time::{Duration, SystemTime};

use ralph_engine::{Event, EventKind, EventSink, InterruptSignal, WaitReason};
use ralph_escalation::EscalationError;
use ralph_tasks::TaskListError;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use crate::error::CliError;
use crate::render::{Style, TerminalRenderer};

/// The signals ralph takes instead of dying from them, and the warnings of those it cannot.
pub(crate) type Signals = (
    mpsc::UnboundedSender<InterruptSignal>,
    mpsc::UnboundedReceiver<InterruptSignal>,
    Vec<String>,
);

/// The waits of a run's preparation, on the runtime the run then uses.
pub(crate) struct StartWaits<'a> {
    runtime: &'a Runtime,
    style: Style,
    to_stderr: bool,
    run_id: String,
    /// Taken at the first wait (and kept for the run): until then a Ctrl+C ends ralph as
    /// usual, with nothing started.
    signals: Option<Signals>,
}

impl<'a> StartWaits<'a> {
    pub(crate) fn new(runtime: &'a Runtime, style: Style, to_stderr: bool, run_id: &str) -> Self {
        Self {
            runtime,
            style,
            to_stderr,
            run_id: run_id.to_owned(),
            signals: None,
        }
    }

    /// `step`'s result, `step` tried again after each "not now" of the task list's service.
    pub(crate) fn retry<T: Send>(
        &mut self,
        mut step: impl FnMut() -> Result<T, CliError> + Send,
    ) -> Result<T, CliError> {
        loop {
            let outcome = match &mut self.signals {
                // Until a wait takes them, a signal ends ralph as usual, wherever it is.
                None => step(),
                Some(_) => stoppable(&mut step),
            };
            match outcome {
                Err(CliError::Escalation(EscalationError::Tasks(TaskListError::RetryAfter {
                    wait,
                    why,
                }))) => self.wait(wait, why)?,
                done => return done,
            }
        }
    }

    /// The signals for the run: those the waits took, or taken now.
    pub(crate) fn into_signals(self) -> Signals {
        match self.signals {
            Some(signals) => signals,
            None => take_signals(self.runtime),
        }
    }

    fn wait(&mut self, wait: Duration, why: String) -> Result<(), CliError> {
        let runtime = self.runtime;
        let (_, signals, _) = self.signals.get_or_insert_with(|| take_signals(runtime));
        let out: Box<dyn Write + Send> = match self.to_stderr {
            true => Box::new(std::io::stderr()),
            false => Box::new(std::io::stdout()),
        };
        let mut renderer = TerminalRenderer::new(out, self.style);
        // The line the run's own wait for its task list starts with.
        renderer.event(&Event {
            ts: SystemTime::now(),
            run_id: self.run_id.clone(),
            kind: EventKind::WaitStarted {
                iteration: 0,
                reason: WaitReason::Task,
                delay_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                why: Some(why.clone()),
            },
        });
        runtime
            .block_on(ralph_engine::wait_before_start(
                wait,
                &mut renderer,
                signals,
            ))
            .map_err(|signal| CliError::StoppedBeforeStart { why, signal })
    }
}

/// `step` run on a thread of its own while this one watches for signals: a signal that comes
/// before it is done ends ralph there and then (a request GitHub does not answer ends only at
/// its timeout, a minute on). The step is cut short where it is, as a signal before the first
/// wait cuts it short: what it changes on disk is journaled first.
fn stoppable<T: Send>(
    step: &mut (impl FnMut() -> Result<T, CliError> + Send),
) -> Result<T, CliError> {
    let before = crate::interrupts::count();
    std::thread::scope(|scope| {
        let worker = scope.spawn(step);
        // A request the signal cut short ends the step too: the signal is looked at last.
        while !worker.is_finished() && crate::interrupts::since(before).is_none() {
            std::thread::sleep(STEP_POLL);
        }
        if let Some(signal) = crate::interrupts::since(before) {
            let err = CliError::StoppedBeforeStart {
                why: "a step of the start was under way, such as a request the task list's \
                      service had not answered"
                    .to_owned(),
                signal,
            };
            crate::report(&err);
            // The step cannot be joined: it may wait a minute more on its request.
            std::process::exit(err.exit_code());
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// How often [`stoppable`] looks whether its step is done.
const STEP_POLL: Duration = Duration::from_millis(20);

/// SIGINT, SIGTERM and SIGHUP sent to a channel from now on ([`crate::run::forward_signals`]).
fn take_signals(runtime: &Runtime) -> Signals {
    let _entered = runtime.enter();
    let (tx, rx) = mpsc::unbounded_channel();
    let warnings = crate::run::forward_signals(&tx);
    (tx, rx, warnings)
}
