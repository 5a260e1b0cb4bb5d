//! Holding the loop in a state: a handler that waits on the world (a review approved, a
//! deployment finished, a file written) without running the agent again.
//!
//! A handler answers [`StateDecision::Hold`](crate::StateDecision::Hold): no agent runs, nothing
//! is spent, and the engine asks the handler again ([`StateHandler::poll_hold`]) every
//! [`StateHold::poll`], counting down between asks, until it releases the loop (the next
//! iteration runs) or stops it. An answer may come at once or from a future, so an API call
//! never blocks a worker thread.
//!
//! [`StateHandler::poll_hold`]: crate::StateHandler::poll_hold

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::outcome::EndReason;

/// How a handler holds the loop ([`StateDecision::Hold`](crate::StateDecision::Hold)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateHold {
    /// How long between asks: the engine waits this long, at least 10 ms (a countdown,
    /// `WAIT_STARTED` reason `state` once per hold), then asks
    /// [`poll_hold`](crate::StateHandler::poll_hold).
    pub poll: Duration,
    /// What the loop waits for, in words (`WAIT_STARTED`'s `why`, `ralph status`).
    pub why: String,
}

impl StateHold {
    /// Ask again every `poll`; `why` says what for.
    pub fn new(poll: Duration, why: impl Into<String>) -> Self {
        Self {
            poll,
            why: why.into(),
        }
    }
}

/// What a holding handler says when asked again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldVerdict {
    /// Still waiting: ask again after another `poll`.
    Hold,
    /// What it waited for happened: the next iteration runs the agent.
    Release,
    /// End the loop.
    Stop(EndReason),
}

/// A handler's answer to [`poll_hold`](crate::StateHandler::poll_hold): now, or once a
/// future completes (an HTTP request, say). The engine awaits the future on the run's own task;
/// an interrupt that stops the loop drops it.
#[non_exhaustive]
pub enum HoldAnswer {
    /// Decided now.
    Now(HoldVerdict),
    /// Decided when the future completes.
    Later(Pin<Box<dyn Future<Output = HoldVerdict> + Send>>),
}

impl HoldAnswer {
    /// The answer `check` gives when it completes.
    ///
    /// ```
    /// use ralph_engine::{HoldAnswer, HoldVerdict};
    ///
    /// let answer = HoldAnswer::later(async { HoldVerdict::Release });
    /// assert!(matches!(answer, HoldAnswer::Later(_)));
    /// ```
    pub fn later(check: impl Future<Output = HoldVerdict> + Send + 'static) -> Self {
        Self::Later(Box::pin(check))
    }
}

impl std::fmt::Debug for HoldAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Now(verdict) => f.debug_tuple("Now").field(verdict).finish(),
            Self::Later(_) => f.write_str("Later(..)"),
        }
    }
}

impl From<HoldVerdict> for HoldAnswer {
    fn from(verdict: HoldVerdict) -> Self {
        Self::Now(verdict)
    }
}
