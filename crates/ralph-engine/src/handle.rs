//! [`RunHandle`]: a run started as its own task, cancelled and watched from anywhere.
//!
//! The loop itself is [`Engine::run`], a `Send` future; [`Engine::spawn`] starts it on the
//! current tokio runtime and hands back what a program running many loops needs of each: its
//! events as they happen, a way to cancel it, and its outcome.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::engine::{Engine, EngineError};
use crate::event::{Event, EventSink};
use crate::outcome::{InterruptSignal, RunOutcome};

/// A run started by [`Engine::spawn`].
///
/// Events are kept for [`next_event`](RunHandle::next_event) (or the handle read as a
/// [`Stream`](futures_core::Stream)) until read; a program that does not want them calls
/// [`wait`](RunHandle::wait) at once, which drops them as they come.
///
/// Dropping the handle without [`wait`](RunHandle::wait) cancels the run, as
/// [`cancel`](RunHandle::cancel) does: a run nobody watches any more does not go on spending.
/// A run meant to go on unwatched is [`detach`](RunHandle::detach)ed; a [`Canceller`] taken
/// before still stops it.
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    log_dir: Option<PathBuf>,
    canceller: Canceller,
    events: mpsc::UnboundedReceiver<Event>,
    /// `None` once waited for or detached.
    task: Option<JoinHandle<Result<RunOutcome, EngineError>>>,
}

impl RunHandle {
    /// The run's id, in each of its events (a resumed run keeps its own).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run's log folder ([`EngineOptions::log_dir`](crate::EngineOptions::log_dir)), if it
    /// writes logs: `events.jsonl`, `session.json`, each iteration's output.
    pub fn log_dir(&self) -> Option<&Path> {
        self.log_dir.as_deref()
    }

    /// A way to stop the run from anywhere: cloned, moved into another task or thread, kept
    /// after the handle is gone.
    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// Ends the run as soon as it can: the running agent, command or check is stopped as
    /// SIGTERM would stop it, a wait is cut short, and the run ends with `RUN_ENDED` reason
    /// `cancelled` ([`EndReason::Cancelled`](crate::EndReason::Cancelled), exit code 1,
    /// resumable). Does nothing once the run has ended.
    pub fn cancel(&self) {
        self.canceller.cancel();
    }

    /// Hands the run an interrupt, as the `ralph` binary does with its own SIGINT (a first
    /// Ctrl+C lets the iteration finish), SIGTERM and SIGHUP.
    pub fn interrupt(&self, signal: InterruptSignal) {
        self.canceller.interrupt(signal);
    }

    /// The run's next event, in the order its sinks get them; `None` once the run has ended
    /// and every event has been taken.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// Waits for the run to end and returns its outcome. A panic inside the run is resumed
    /// here, in the caller.
    pub async fn wait(mut self) -> Result<RunOutcome, EngineError> {
        self.events.close();
        let task = self.task.take().expect("a handle is waited for once");
        match task.await {
            Ok(outcome) => outcome,
            Err(err) => match err.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // The task is never aborted: only the runtime shutting down cancels it.
                Err(err) => panic!("the run's task was cancelled by its runtime: {err}"),
            },
        }
    }

    /// Lets the run go on to its end without this handle: dropping it then cancels nothing.
    /// Its events are no longer kept; its outcome is in its log folder, if it has one.
    pub fn detach(mut self) {
        self.events.close();
        self.task = None;
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        if self.task.is_some() {
            self.canceller.cancel();
        }
    }
}

/// The run's events as a [`Stream`](futures_core::Stream), as
/// [`next_event`](RunHandle::next_event) gives them.
impl futures_core::Stream for RunHandle {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.events.poll_recv(cx)
    }
}

/// Stops or interrupts one run from anywhere ([`RunHandle::canceller`]): `Clone`, `Send` and
/// `Sync`, and doing nothing once the run has ended.
#[derive(Debug, Clone)]
pub struct Canceller(mpsc::UnboundedSender<InterruptSignal>);

impl Canceller {
    /// [`RunHandle::cancel`].
    pub fn cancel(&self) {
        self.interrupt(InterruptSignal::Cancel);
    }

    /// [`RunHandle::interrupt`].
    pub fn interrupt(&self, signal: InterruptSignal) {
        // The run may have ended already: then there is nothing to interrupt.
        let _ = self.0.send(signal);
    }
}

/// Hands every event to the [`RunHandle`]; a handle that stopped listening costs nothing.
struct ChannelSink(mpsc::UnboundedSender<Event>);

impl EventSink for ChannelSink {
    fn event(&mut self, event: &Event) {
        let _ = self.0.send(event.clone());
    }
}

impl Engine {
    /// Starts the run as a task on the current tokio runtime (multi-thread or not) and returns
    /// its [`RunHandle`]. Interrupts given to [`Engine::interrupts`] still reach the run.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn(mut self) -> RunHandle {
        let (events_tx, events) = mpsc::unbounded_channel();
        self.add_sink(ChannelSink(events_tx));
        let (interrupts, handle_rx) = mpsc::unbounded_channel();
        let mut own = self.replace_interrupts(handle_rx, interrupts.clone());
        let forward = interrupts.clone();
        tokio::spawn(async move {
            // Until either side is gone: the embedder's sender (or the engine's own, dropped by
            // `replace_interrupts`), or the run.
            loop {
                tokio::select! {
                    signal = own.recv() => match signal {
                        Some(signal) => { let _ = forward.send(signal); }
                        None => break,
                    },
                    () = forward.closed() => break,
                }
            }
        });
        RunHandle {
            run_id: self.options.run_id.clone(),
            log_dir: self.options.log_dir.clone(),
            canceller: Canceller(interrupts),
            events,
            task: Some(tokio::spawn(self.run())),
        }
    }
}
