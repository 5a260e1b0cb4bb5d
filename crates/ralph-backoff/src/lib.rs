//! Pure timing policies for ralph loops: how long to wait after an idle iteration and before a
//! retry attempt.
//!
//! This crate never reads a clock, never sleeps and does no I/O: callers pass the current time in
//! as a [`Duration`] since any fixed origin, so every decision is exact and testable.

use std::time::Duration;

/// How long an idle agent waits before it is run again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdlePolicy {
    /// Wait after the first idle iteration of a streak.
    pub delay: Duration,
    /// Multiplier applied for each further consecutive idle iteration (finite, >= 1.0).
    pub backoff: f64,
    /// Cap on any single wait.
    pub max_delay: Duration,
    /// Stop the loop once a streak's idle time would pass this; `None` never stops.
    pub max: Option<Duration>,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        Self {
            delay: Duration::from_secs(30),
            backoff: 2.0,
            max_delay: Duration::from_secs(300),
            max: None,
        }
    }
}

impl IdlePolicy {
    /// The wait after the `n`-th consecutive idle iteration: `min(delay * backoff^(n-1), max_delay)`.
    pub fn delay_for(&self, n: u64) -> Duration {
        let _ = n;
        self.delay
    }
}

/// What to do after an idle iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleDecision {
    /// Wait this long, then run the next iteration.
    Wait {
        /// The wait.
        delay: Duration,
        /// Consecutive idle iterations so far, this one included.
        consecutive: u64,
        /// Idle time of the streak so far.
        idle_elapsed: Duration,
    },
    /// The next wait would take the streak past `max`: stop the loop.
    Stop {
        /// Consecutive idle iterations so far, this one included.
        consecutive: u64,
        /// Idle time of the streak so far.
        idle_elapsed: Duration,
    },
}

/// The state of one streak of consecutive idle iterations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdleStreak {
    consecutive: u64,
    first_idle_end: Option<Duration>,
}

impl IdleStreak {
    /// A streak with no idle iteration yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an idle iteration that ended at `now` and decides what comes next.
    pub fn record_idle(&mut self, policy: &IdlePolicy, now: Duration) -> IdleDecision {
        self.consecutive += 1;
        let first = *self.first_idle_end.get_or_insert(now);
        IdleDecision::Wait {
            delay: policy.delay_for(self.consecutive),
            consecutive: self.consecutive,
            idle_elapsed: now.saturating_sub(first),
        }
    }

    /// Records a non-idle iteration: the streak restarts.
    pub fn record_activity(&mut self) {
        *self = Self::default();
    }

    /// Consecutive idle iterations in the current streak.
    pub fn consecutive(&self) -> u64 {
        self.consecutive
    }
}

/// Capped exponential backoff between convergence attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Base wait: attempt `i >= 2` waits `backoff * 2^(i-1)`.
    pub backoff: Duration,
    /// Cap on any single wait.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt` (1-based); attempt 1 never waits.
    pub fn wait_before(&self, attempt: u64) -> Duration {
        let _ = attempt;
        Duration::ZERO
    }
}
