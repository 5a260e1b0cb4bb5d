//! [`RunHandle`]: a run started as its own task, cancelled and watched from anywhere.
//!
//! The loop itself is [`Engine::run`], a `Send` future; [`Engine::spawn`] starts it on the
//! current tokio runtime and hands back what a program running many loops needs of each: its
//! events as they happen, a way to cancel it, and its outcome.

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::engine::{Engine, EngineError};
use crate::event::{Event, EventSink};
use crate::outcome::{InterruptSignal, RunOutcome};

/// A run started by [`Engine::spawn`].
///
/// Events are kept for [`next_event`](RunHandle::next_event) until read; a program that does
/// not want them calls [`wait`](RunHandle::wait) at once, which drops them as they come.
#[derive(Debug)]
pub struct RunHandle {
    interrupts: mpsc::UnboundedSender<InterruptSignal>,
    events: mpsc::UnboundedReceiver<Event>,
    task: JoinHandle<Result<RunOutcome, EngineError>>,
}

impl RunHandle {
    /// Ends the run as soon as it can: the running agent, command or check is stopped as
    /// SIGTERM would stop it, a wait is cut short, and the run ends with `RUN_ENDED` reason
    /// `cancelled` ([`EndReason::Cancelled`](crate::EndReason::Cancelled), exit code 1). Does
    /// nothing once the run has ended.
    pub fn cancel(&self) {
        self.interrupt(InterruptSignal::Cancel);
    }

    /// Hands the run an interrupt, as the `ralph` binary does with its own SIGINT (a first
    /// Ctrl+C lets the iteration finish), SIGTERM and SIGHUP.
    pub fn interrupt(&self, signal: InterruptSignal) {
        // The run may have ended already: then there is nothing to interrupt.
        let _ = self.interrupts.send(signal);
    }

    /// The run's next event, in the order its sinks get them; `None` once the run has ended
    /// and every event has been taken.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// Waits for the run to end and returns its outcome. A panic inside the run is resumed
    /// here, in the caller.
    pub async fn wait(self) -> Result<RunOutcome, EngineError> {
        let Self { events, task, .. } = self;
        drop(events);
        match task.await {
            Ok(outcome) => outcome,
            Err(err) => match err.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // The task is never aborted: only the runtime shutting down cancels it.
                Err(err) => panic!("the run's task was cancelled by its runtime: {err}"),
            },
        }
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
            interrupts,
            events,
            task: tokio::spawn(self.run()),
        }
    }
}
