//! State handlers: what the loop does when an iteration ends in a given state.
//!
//! The agent names its state with a marker (`<!-- ralph:state NAME -->`); the registry maps that
//! name to a [`StateHandler`]. `idle` is built in as an ordinary handler ([`IdleHandler`]); an
//! embedder registers its own the same way, without touching the engine.

use std::collections::BTreeMap;
use std::time::Duration;

use ralph_backoff::{IdleDecision, IdlePolicy, IdleStreak};
use ralph_marker::Marker;

use crate::event::EventKind;
use crate::outcome::EndReason;

/// What the loop does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateDecision {
    /// Run the next iteration as usual.
    Continue,
    /// Wait this long before the next iteration (Ctrl+C skips the wait).
    Wait(Duration),
    /// End the loop.
    Stop(EndReason),
}

/// What a handler sees of the iteration that ended in its state.
pub struct StateContext<'a> {
    /// The iteration number.
    pub iteration: u64,
    /// The state marker, with its attributes.
    pub marker: &'a Marker,
    /// Time since the run started, from the engine's clock.
    pub elapsed: Duration,
    events: &'a mut Vec<EventKind>,
}

impl<'a> StateContext<'a> {
    pub(crate) fn new(
        iteration: u64,
        marker: &'a Marker,
        elapsed: Duration,
        events: &'a mut Vec<EventKind>,
    ) -> Self {
        Self {
            iteration,
            marker,
            elapsed,
            events,
        }
    }

    /// Emits an event after the iteration's `ITERATION_ENDED`.
    pub fn emit(&mut self, event: EventKind) {
        self.events.push(event);
    }
}

/// Decides what happens after an iteration that ends in one state.
pub trait StateHandler: Send {
    /// The iteration ended in this handler's state.
    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision;

    /// The iteration ended in another state, or none: a streak of this state is over.
    fn on_other_state(&mut self) {}
}

/// The state handlers of a run, by state name.
#[derive(Default)]
pub struct StateHandlers {
    handlers: BTreeMap<String, Box<dyn StateHandler>>,
}

impl StateHandlers {
    /// No handlers: every state is reported and the loop goes on.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` for state `name` (lowercase), replacing any previous one.
    pub fn register(&mut self, name: impl Into<String>, handler: impl StateHandler + 'static) {
        self.handlers
            .insert(name.into().to_ascii_lowercase(), Box::new(handler));
    }

    /// Whether a handler is registered for `name`.
    pub fn handles(&self, name: &str) -> bool {
        self.handlers.contains_key(name)
    }

    /// Routes an iteration's state to its handler and tells every other handler its streak ended.
    pub(crate) fn decide(
        &mut self,
        iteration: u64,
        state: Option<&Marker>,
        elapsed: Duration,
        events: &mut Vec<EventKind>,
    ) -> StateDecision {
        let mut decision = StateDecision::Continue;
        for (name, handler) in &mut self.handlers {
            match state {
                Some(marker) if &marker.name == name => {
                    let mut cx = StateContext::new(iteration, marker, elapsed, events);
                    decision = handler.on_state(&mut cx);
                }
                _ => handler.on_other_state(),
            }
        }
        decision
    }
}

/// The built-in `idle` handler: waits that grow with each consecutive idle iteration, reset on
/// activity, and a stop once the streak's idle time would pass `idle.max`.
#[derive(Debug, Clone)]
pub struct IdleHandler {
    policy: IdlePolicy,
    streak: IdleStreak,
}

impl IdleHandler {
    /// A handler following `policy`.
    pub fn new(policy: IdlePolicy) -> Self {
        Self {
            policy,
            streak: IdleStreak::new(),
        }
    }
}

impl StateHandler for IdleHandler {
    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        let decision = self.streak.record_idle(&self.policy, cx.elapsed);
        let (consecutive, idle_elapsed, next) = match decision {
            IdleDecision::Wait {
                delay,
                consecutive,
                idle_elapsed,
            } => (consecutive, idle_elapsed, Some(delay)),
            IdleDecision::Stop {
                consecutive,
                idle_elapsed,
            } => (consecutive, idle_elapsed, None),
        };
        cx.emit(EventKind::IterationIdle {
            iteration: cx.iteration,
            consecutive_idle: consecutive,
            idle_elapsed_ms: millis(idle_elapsed),
            next_delay_ms: next.map(millis),
        });
        match next {
            Some(delay) => StateDecision::Wait(delay),
            None => StateDecision::Stop(EndReason::IdleLimit),
        }
    }

    fn on_other_state(&mut self) {
        self.streak.record_activity();
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
