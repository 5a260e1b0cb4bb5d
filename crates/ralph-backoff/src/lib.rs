//! Pure timing policies for ralph loops: how long to wait after an idle iteration
//! ([`IdlePolicy`], tracked across a streak by [`IdleStreak`]), before a retry attempt
//! ([`RetryPolicy`]) and after a failed run ([`FailurePolicy`], tracked by [`FailureStreak`]).
//!
//! This crate never reads a clock, never sleeps, does no I/O, has no async and no dependencies:
//! callers pass the current time in as a [`Duration`] since any fixed origin, so every decision is
//! exact and testable. It never panics and never overflows either, whatever the inputs: every
//! product saturates at its cap, because the policies may be built by an embedder that skipped
//! frontmatter validation.
//!
//! A short idle streak, stopped by `max`:
//!
//! ```
//! use std::time::Duration;
//! use ralph_backoff::{IdleDecision, IdlePolicy, IdleStreak};
//!
//! let secs = Duration::from_secs;
//! let policy = IdlePolicy::new(secs(30), 2.0, secs(300)).with_max(Some(secs(120)));
//! let mut streak = IdleStreak::new();
//!
//! // The first idle iteration ends at t=10s: the streak's idle time starts there.
//! assert_eq!(
//!     streak.record_idle(&policy, secs(10)),
//!     IdleDecision::Wait { delay: secs(30), consecutive: 1, idle_elapsed: secs(0) },
//! );
//! // After the 30s wait the agent runs for 5s and is idle again: the wait doubles.
//! assert_eq!(
//!     streak.record_idle(&policy, secs(45)),
//!     IdleDecision::Wait { delay: secs(60), consecutive: 2, idle_elapsed: secs(35) },
//! );
//! // Idle for 100s; waiting another 120s would pass `max` (120s): stop.
//! assert_eq!(
//!     streak.record_idle(&policy, secs(110)),
//!     IdleDecision::Stop { consecutive: 3, idle_elapsed: secs(100) },
//! );
//!
//! // Had the agent done something instead, the streak would start over.
//! streak.record_activity();
//! assert_eq!(streak.consecutive(), 0);
//! assert_eq!(
//!     streak.record_idle(&policy, secs(500)),
//!     IdleDecision::Wait { delay: secs(30), consecutive: 1, idle_elapsed: secs(0) },
//! );
//! ```

use std::time::Duration;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Largest integral backoff whose multiplications are done exactly in integers. Every integer up
/// to 2^53 is an exact `f64`, so the conversion to `u128` is lossless; beyond it the `f64` path is
/// just as exact in practice, and such a factor reaches any cap in one or two steps anyway.
const MAX_EXACT_FACTOR: f64 = 9_007_199_254_740_992.0;

/// How long an idle agent waits before it is run again.
///
/// The wait after the `n`-th consecutive idle iteration is `min(delay * backoff^(n-1), max_delay)`;
/// see [`IdlePolicy::delay_for`]. A streak of idle iterations stops the loop once its idle time
/// plus the next wait would pass `max`; see [`IdleStreak::record_idle`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct IdlePolicy {
    /// Wait after the first idle iteration of a streak.
    pub delay: Duration,
    /// Multiplier applied for each further consecutive idle iteration (finite, >= 1.0).
    ///
    /// Validation upstream rejects other values, but this type does not rely on it: NaN and
    /// anything below 1.0 (including negative values and `-inf`) act as 1.0, a constant wait,
    /// so waits never shrink within a streak; `+inf` jumps straight to `max_delay` from the
    /// second idle iteration on.
    pub backoff: f64,
    /// Cap on any single wait.
    pub max_delay: Duration,
    /// Stop the loop once a streak's idle time would pass this; `None` never stops.
    pub max: Option<Duration>,
}

impl Default for IdlePolicy {
    /// 30s, doubling up to 5 minutes, never stopping.
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
    /// Waits of `delay`, multiplied by `backoff` for each further idle iteration, capped at
    /// `max_delay`, never stopping the loop (see [`with_max`](Self::with_max)).
    #[must_use]
    pub fn new(delay: Duration, backoff: f64, max_delay: Duration) -> Self {
        Self {
            delay,
            backoff,
            max_delay,
            max: None,
        }
    }

    /// The same policy, stopping a streak once its idle time would pass `max`.
    #[must_use]
    pub fn with_max(self, max: Option<Duration>) -> Self {
        Self { max, ..self }
    }

    /// The wait after the `n`-th consecutive idle iteration: `min(delay * backoff^(n-1), max_delay)`.
    ///
    /// `n` counts from 1; `n = 0` is treated as 1. Integral backoffs (1.0, 2.0, 3.0, ...) are
    /// computed exactly in integer nanoseconds; fractional ones in `f64`, rounded to the nearest
    /// nanosecond and compared with the cap before any conversion, so the result never exceeds
    /// `max_delay` nor falls below `min(delay, max_delay)`, and never decreases as `n` grows.
    /// See [`IdlePolicy::backoff`] for non-finite and sub-1.0 backoffs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ralph_backoff::IdlePolicy;
    ///
    /// let policy = IdlePolicy::default(); // 30s, x2, capped at 300s
    /// let waits: Vec<u64> = (1..=6).map(|n| policy.delay_for(n).as_secs()).collect();
    /// assert_eq!(waits, [30, 60, 120, 240, 300, 300]);
    /// assert_eq!(policy.delay_for(u64::MAX), Duration::from_secs(300));
    /// ```
    #[must_use]
    pub fn delay_for(&self, n: u64) -> Duration {
        let steps = n.saturating_sub(1);
        let backoff = effective_backoff(self.backoff);
        if steps == 0 || backoff <= 1.0 {
            return self.delay.min(self.max_delay);
        }
        if backoff.fract() == 0.0 && backoff <= MAX_EXACT_FACTOR {
            // Lossless: `backoff` is an integer no larger than 2^53.
            scale_exact(self.delay, backoff as u128, steps, self.max_delay)
        } else {
            scale_approx(self.delay, backoff, steps, self.max_delay)
        }
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
///
/// The streak's idle time runs from the end of its first idle iteration, so it is zero at that
/// iteration and then includes both the waits and the later (idle) runs of the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdleStreak {
    consecutive: u64,
    first_idle_end: Option<Duration>,
}

impl IdleStreak {
    /// A streak with no idle iteration yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an idle iteration that ended at `now` and decides what comes next.
    ///
    /// The decision is [`IdleDecision::Stop`] when `idle_elapsed + delay_for(consecutive)` would
    /// be greater than `policy.max` (a sum beyond [`Duration::MAX`] counts as greater), and
    /// [`IdleDecision::Wait`] otherwise, always when `max` is `None`. A `now` earlier than the
    /// streak's start (a clock that went backwards) counts as no idle time rather than panicking.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ralph_backoff::{IdleDecision, IdlePolicy, IdleStreak};
    ///
    /// let policy = IdlePolicy::default().with_max(Some(Duration::from_secs(60)));
    /// let mut streak = IdleStreak::new();
    /// assert!(matches!(streak.record_idle(&policy, Duration::ZERO), IdleDecision::Wait { .. }));
    /// // 30s idle plus a 60s wait would pass the 60s budget.
    /// assert_eq!(
    ///     streak.record_idle(&policy, Duration::from_secs(30)),
    ///     IdleDecision::Stop { consecutive: 2, idle_elapsed: Duration::from_secs(30) },
    /// );
    /// ```
    #[must_use]
    pub fn record_idle(&mut self, policy: &IdlePolicy, now: Duration) -> IdleDecision {
        self.consecutive = self.consecutive.saturating_add(1);
        let first = *self.first_idle_end.get_or_insert(now);
        let idle_elapsed = now.saturating_sub(first);
        let delay = policy.delay_for(self.consecutive);
        let passes_max = policy.max.is_some_and(|max| {
            idle_elapsed
                .checked_add(delay)
                .is_none_or(|after_wait| after_wait > max)
        });
        if passes_max {
            IdleDecision::Stop {
                consecutive: self.consecutive,
                idle_elapsed,
            }
        } else {
            IdleDecision::Wait {
                delay,
                consecutive: self.consecutive,
                idle_elapsed,
            }
        }
    }

    /// A streak taken up again where a stopped run left it: `consecutive` idle iterations, the
    /// first of which ended at `first_idle_end` (on the run's own clock, as passed to
    /// [`record_idle`](Self::record_idle)).
    #[must_use]
    pub fn resumed(consecutive: u64, first_idle_end: Option<Duration>) -> Self {
        match consecutive {
            0 => Self::default(),
            _ => Self {
                consecutive,
                first_idle_end,
            },
        }
    }

    /// Records a non-idle iteration: the streak restarts, with no idle iteration and no idle time.
    pub fn record_activity(&mut self) {
        *self = Self::default();
    }

    /// Consecutive idle iterations in the current streak.
    #[must_use]
    pub fn consecutive(&self) -> u64 {
        self.consecutive
    }

    /// When the streak's first idle iteration ended, or `None` if there is no streak.
    #[must_use]
    pub fn first_idle_end(&self) -> Option<Duration> {
        self.first_idle_end
    }

    /// Idle time of the streak at `now`: zero with no streak or when `now` precedes its start.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ralph_backoff::{IdlePolicy, IdleStreak};
    ///
    /// let mut streak = IdleStreak::new();
    /// assert_eq!(streak.idle_elapsed(Duration::from_secs(5)), Duration::ZERO);
    /// let _ = streak.record_idle(&IdlePolicy::default(), Duration::from_secs(5));
    /// assert_eq!(streak.idle_elapsed(Duration::from_secs(20)), Duration::from_secs(15));
    /// ```
    #[must_use]
    pub fn idle_elapsed(&self, now: Duration) -> Duration {
        self.first_idle_end
            .map_or(Duration::ZERO, |first| now.saturating_sub(first))
    }
}

/// Capped exponential backoff between convergence attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Base wait: attempt `i >= 2` waits `backoff * 2^(i-1)`.
    pub backoff: Duration,
    /// Cap on any single wait.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 1s base, capped at 60s: attempts wait 0, 2, 4, 8, 16, 32, 60, 60, ... seconds.
    fn default() -> Self {
        Self {
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Attempts wait `backoff * 2^(i-1)`, capped at `max_backoff`.
    #[must_use]
    pub fn new(backoff: Duration, max_backoff: Duration) -> Self {
        Self {
            backoff,
            max_backoff,
        }
    }

    /// The wait before attempt `attempt` (1-based): `min(backoff * 2^(attempt-1), max_backoff)`;
    /// attempts 1 and 0 never wait. Computed exactly in integer nanoseconds, saturating at the cap.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ralph_backoff::RetryPolicy;
    ///
    /// let policy = RetryPolicy::default();
    /// let waits: Vec<u64> = (1..=8).map(|i| policy.wait_before(i).as_secs()).collect();
    /// assert_eq!(waits, [0, 2, 4, 8, 16, 32, 60, 60]);
    /// assert_eq!(policy.wait_before(u64::MAX), Duration::from_secs(60));
    /// ```
    #[must_use]
    pub fn wait_before(&self, attempt: u64) -> Duration {
        if attempt < 2 {
            return Duration::ZERO;
        }
        scale_exact(self.backoff, 2, attempt - 1, self.max_backoff)
    }
}

/// How a failing agent backs off: the wait before the run after the `n`-th consecutive failure
/// is `min(delay * backoff^(n-1), max_delay)`, the idle formula ([`IdlePolicy::delay_for`]), and
/// the loop ends at `max_consecutive` failures in a row.
///
/// It has no `Default`: the defaults live in the frontmatter's field table, in one place.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct FailurePolicy {
    /// Wait after the first failure of a streak.
    pub delay: Duration,
    /// Multiplier for each further consecutive failure (see [`IdlePolicy::backoff`]).
    pub backoff: f64,
    /// Cap on any single wait.
    pub max_delay: Duration,
    /// Consecutive failures that end the loop (0 acts as 1).
    pub max_consecutive: u64,
}

impl FailurePolicy {
    /// Waits of `delay`, multiplied by `backoff` for each further failure in a row, capped at
    /// `max_delay`; the loop ends at `max_consecutive` failures in a row.
    #[must_use]
    pub fn new(delay: Duration, backoff: f64, max_delay: Duration, max_consecutive: u64) -> Self {
        Self {
            delay,
            backoff,
            max_delay,
            max_consecutive,
        }
    }

    /// The wait after the `n`-th consecutive failure: `min(delay * backoff^(n-1), max_delay)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ralph_backoff::FailurePolicy;
    ///
    /// let secs = Duration::from_secs;
    /// let policy = FailurePolicy::new(secs(5), 2.0, secs(60), 10);
    /// let waits: Vec<u64> = (1..=6).map(|n| policy.delay_for(n).as_secs()).collect();
    /// assert_eq!(waits, [5, 10, 20, 40, 60, 60]);
    /// ```
    #[must_use]
    pub fn delay_for(&self, n: u64) -> Duration {
        IdlePolicy::new(self.delay, self.backoff, self.max_delay).delay_for(n)
    }
}

/// Decides what follows a failed agent run: the failure seam, as a state handler is the idle
/// one. [`FailurePolicy`] (RALPH.md's `failure`) is the built-in; an embedder plugs another
/// into the engine (a wait from its own quota, a stop on its own rule).
///
/// ```
/// use std::time::Duration;
/// use ralph_backoff::{FailureBackoff, FailureDecision};
///
/// /// A minute after each failure, never giving up.
/// struct EveryMinute;
///
/// impl FailureBackoff for EveryMinute {
///     fn after_failure(&mut self, consecutive: u64) -> FailureDecision {
///         FailureDecision::Wait { delay: Duration::from_secs(60), consecutive }
///     }
/// }
/// assert!(matches!(EveryMinute.after_failure(99), FailureDecision::Wait { .. }));
/// ```
pub trait FailureBackoff: Send {
    /// The `consecutive`-th failed run in a row (from 1) just ended: wait, or end the loop.
    fn after_failure(&mut self, consecutive: u64) -> FailureDecision;
}

impl FailureBackoff for FailurePolicy {
    /// [`delay_for`](FailurePolicy::delay_for) the streak; a stop at `max_consecutive`.
    fn after_failure(&mut self, consecutive: u64) -> FailureDecision {
        if consecutive >= self.max_consecutive.max(1) {
            FailureDecision::Stop { consecutive }
        } else {
            FailureDecision::Wait {
                delay: self.delay_for(consecutive),
                consecutive,
            }
        }
    }
}

/// What to do after a failed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureDecision {
    /// Wait this long, then run again.
    Wait {
        /// The wait.
        delay: Duration,
        /// Consecutive failures so far, this one included.
        consecutive: u64,
    },
    /// `max_consecutive` failures in a row: end the loop.
    Stop {
        /// Consecutive failures so far, this one included.
        consecutive: u64,
    },
}

/// A streak of consecutive failed runs.
///
/// ```
/// use std::time::Duration;
/// use ralph_backoff::{FailureDecision, FailurePolicy, FailureStreak};
///
/// let secs = Duration::from_secs;
/// let policy = FailurePolicy::new(secs(5), 2.0, secs(300), 3);
/// let mut streak = FailureStreak::new();
/// assert_eq!(streak.record_failure(&policy), FailureDecision::Wait { delay: secs(5), consecutive: 1 });
/// assert_eq!(streak.record_failure(&policy), FailureDecision::Wait { delay: secs(10), consecutive: 2 });
/// assert_eq!(streak.record_failure(&policy), FailureDecision::Stop { consecutive: 3 });
/// streak.record_success();
/// assert_eq!(streak.record_failure(&policy), FailureDecision::Wait { delay: secs(5), consecutive: 1 });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureStreak {
    consecutive: u64,
}

impl FailureStreak {
    /// A streak with no failure yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A streak taken up again where a stopped run left it, at `consecutive` failures.
    #[must_use]
    pub fn resumed(consecutive: u64) -> Self {
        Self { consecutive }
    }

    /// Records a failed run and decides what comes next.
    #[must_use]
    pub fn record_failure(&mut self, policy: &FailurePolicy) -> FailureDecision {
        let mut policy = *policy;
        self.record_failure_by(&mut policy)
    }

    /// Records a failed run; `backoff` decides what comes next.
    #[must_use]
    pub fn record_failure_by(&mut self, backoff: &mut dyn FailureBackoff) -> FailureDecision {
        self.consecutive = self.consecutive.saturating_add(1);
        backoff.after_failure(self.consecutive)
    }

    /// Records a run that did not fail: the streak starts over.
    pub fn record_success(&mut self) {
        self.consecutive = 0;
    }

    /// Consecutive failures in the current streak.
    #[must_use]
    pub fn consecutive(&self) -> u64 {
        self.consecutive
    }
}

/// NaN and values below 1.0 would make waits shrink or meaningless; they act as a constant wait.
fn effective_backoff(backoff: f64) -> f64 {
    if backoff.is_nan() || backoff < 1.0 {
        1.0
    } else {
        backoff
    }
}

/// `min(base * factor^steps, cap)` in integer nanoseconds, exact and saturating.
fn scale_exact(base: Duration, factor: u128, steps: u64, cap: Duration) -> Duration {
    let cap_ns = cap.as_nanos();
    let mut ns = base.as_nanos();
    if ns == 0 || factor <= 1 {
        return base.min(cap);
    }
    // Stops as soon as the cap is reached: with ns >= 1 and factor >= 2 that takes at most ~95
    // steps (Duration::MAX is below 2^95 ns), so a huge `steps` costs nothing.
    for _ in 0..steps {
        if ns >= cap_ns {
            break;
        }
        ns = ns.saturating_mul(factor);
    }
    duration_from_nanos(ns.min(cap_ns))
}

/// `min(base * factor^steps, cap)` for a fractional (or huge, or infinite) `factor > 1`, in `f64`.
fn scale_approx(base: Duration, factor: f64, steps: u64, cap: Duration) -> Duration {
    let cap_ns = cap.as_nanos();
    let base_ns = base.as_nanos();
    if base_ns == 0 || base_ns >= cap_ns {
        return base.min(cap);
    }
    // `steps as f64` may round for huge counts, but monotonically, and such counts give an
    // infinite power for any factor > 1 anyway.
    //
    // `powf` comes from the platform's libm, which promises an error below one ulp but not
    // monotonicity in the exponent: with a factor within a few ulps of 1.0, one step moves the
    // true power by about one ulp, so a rounding error could put step s below step s-1. Two steps
    // move it by at least two ulps, more than two such errors, so the larger of the last two
    // powers never decreases as `steps` grows, whichever libm is linked.
    let power = factor
        .powf(steps as f64)
        .max(factor.powf(steps.saturating_sub(1) as f64));
    let scaled = base_ns as f64 * power;
    // Compared before converting, so an infinite product never reaches the cast. A NaN is
    // impossible with base > 0 and factor > 1, but cheap to send to the cap rather than to zero.
    if scaled.is_nan() || scaled >= cap_ns as f64 {
        return cap;
    }
    // The clamp keeps the result within [base, cap] even where `base_ns as f64` lost precision
    // (bases above 2^53 ns, about 104 days) or the rounding went past the cap.
    let ns = (scaled.round() as u128).clamp(base_ns, cap_ns);
    duration_from_nanos(ns)
}

/// Callers only pass values up to some `Duration::as_nanos`, so this never saturates in practice;
/// saturating keeps it panic-free by construction (`Duration::new` panics on seconds overflow).
fn duration_from_nanos(ns: u128) -> Duration {
    let subsec = (ns % NANOS_PER_SEC) as u32;
    u64::try_from(ns / NANOS_PER_SEC).map_or(Duration::MAX, |secs| Duration::new(secs, subsec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn policy(delay: u64, backoff: f64, max_delay: u64, max: Option<u64>) -> IdlePolicy {
        IdlePolicy {
            delay: secs(delay),
            backoff,
            max_delay: secs(max_delay),
            max: max.map(secs),
        }
    }

    #[test]
    fn failure_waits_follow_the_idle_formula_and_stop_at_max_consecutive() {
        let failure = FailurePolicy {
            delay: secs(5),
            backoff: 1.5,
            max_delay: secs(300),
            max_consecutive: 10,
        };
        let idle = policy(5, 1.5, 300, None);
        let mut streak = FailureStreak::new();
        for n in 1..10 {
            assert_eq!(failure.delay_for(n), idle.delay_for(n), "n {n}");
            assert_eq!(
                streak.record_failure(&failure),
                FailureDecision::Wait {
                    delay: idle.delay_for(n),
                    consecutive: n
                }
            );
        }
        assert_eq!(
            streak.record_failure(&failure),
            FailureDecision::Stop { consecutive: 10 }
        );
    }

    #[test]
    fn a_max_consecutive_of_zero_stops_at_the_first_failure() {
        let failure = FailurePolicy {
            delay: secs(5),
            backoff: 2.0,
            max_delay: secs(300),
            max_consecutive: 0,
        };
        assert_eq!(
            FailureStreak::new().record_failure(&failure),
            FailureDecision::Stop { consecutive: 1 }
        );
    }

    #[test]
    fn idle_wait_doubles_until_cap() {
        let policy = IdlePolicy::default();
        let waits: Vec<Duration> = (1..=7).map(|n| policy.delay_for(n)).collect();
        assert_eq!(
            waits,
            [30, 60, 120, 240, 300, 300, 300].map(secs),
            "30s * 2^(n-1), exact, capped at 300s"
        );
    }

    #[test]
    fn idle_wait_is_exact_for_ordinary_values() {
        assert_eq!(policy(30, 2.0, 1000, None).delay_for(4), secs(240));
        assert_eq!(
            policy(30, 1.5, 1000, None).delay_for(3),
            Duration::from_millis(67_500)
        );
        assert_eq!(policy(10, 3.0, 1000, None).delay_for(4), secs(270));
        assert_eq!(
            IdlePolicy {
                delay: Duration::from_millis(100),
                ..policy(0, 1.1, 1000, None)
            }
            .delay_for(3),
            Duration::from_millis(121)
        );
    }

    #[test]
    fn first_idle_wait_is_delay_and_n_zero_counts_as_first() {
        let policy = IdlePolicy::default();
        assert_eq!(policy.delay_for(0), secs(30));
        assert_eq!(policy.delay_for(1), secs(30));
    }

    #[test]
    fn delay_above_cap_is_capped_from_the_first_wait() {
        assert_eq!(policy(600, 2.0, 300, None).delay_for(1), secs(300));
    }

    #[test]
    fn backoff_below_one_or_nan_keeps_the_wait_constant() {
        for backoff in [1.0, 0.5, 0.0, -3.0, f64::NEG_INFINITY, f64::NAN] {
            let policy = policy(30, backoff, 300, None);
            for n in [1, 2, 10, u64::MAX] {
                assert_eq!(policy.delay_for(n), secs(30), "backoff {backoff}, n {n}");
            }
        }
    }

    #[test]
    fn infinite_backoff_jumps_to_the_cap() {
        let policy = policy(30, f64::INFINITY, 300, None);
        assert_eq!(policy.delay_for(1), secs(30));
        assert_eq!(policy.delay_for(2), secs(300));
        assert_eq!(policy.delay_for(u64::MAX), secs(300));
    }

    #[test]
    fn extreme_inputs_give_the_cap() {
        let century = secs(100 * 365 * 24 * 3600);
        let cases = [
            (policy(30, 2.0, 300, None), 1_000_000_000, secs(300)),
            (policy(30, 1e300, 300, None), 2, secs(300)),
            (policy(30, 1.000_000_1, 300, None), u64::MAX, secs(300)),
            (
                IdlePolicy {
                    delay: century,
                    backoff: 2.0,
                    max_delay: Duration::MAX,
                    max: None,
                },
                u64::MAX,
                Duration::MAX,
            ),
            (
                IdlePolicy {
                    delay: Duration::MAX,
                    backoff: 1.5,
                    max_delay: Duration::MAX,
                    max: None,
                },
                3,
                Duration::MAX,
            ),
        ];
        for (policy, n, expected) in cases {
            assert_eq!(policy.delay_for(n), expected, "{policy:?} n={n}");
        }
    }

    #[test]
    fn waits_never_decrease_for_backoffs_just_above_one() {
        // The hardest case for monotonicity: each step grows the power by about one ulp.
        for ulps in 1..=8 {
            let backoff = f64::from_bits(1.0f64.to_bits() + ulps);
            for delay in [Duration::from_nanos(999), secs(30), secs(3_153_600_000)] {
                let policy = IdlePolicy {
                    delay,
                    backoff,
                    max_delay: Duration::MAX,
                    max: None,
                };
                for start in [1, 1 << 20, 1 << 40, 1 << 53, 1 << 60] {
                    let waits: Vec<Duration> =
                        (start..start + 300).map(|n| policy.delay_for(n)).collect();
                    assert!(
                        waits.windows(2).all(|w| w[0] <= w[1]),
                        "backoff 1+{ulps}ulp, {delay:?}, from n={start}"
                    );
                }
            }
        }
    }

    #[test]
    fn zero_delay_never_waits() {
        let policy = policy(0, f64::INFINITY, 300, None);
        assert_eq!(policy.delay_for(5), Duration::ZERO);
    }

    #[test]
    fn idle_streak_reports_consecutive_and_idle_time() {
        let policy = IdlePolicy::default();
        let mut streak = IdleStreak::new();
        assert_eq!(
            streak.record_idle(&policy, secs(100)),
            IdleDecision::Wait {
                delay: secs(30),
                consecutive: 1,
                idle_elapsed: secs(0)
            }
        );
        assert_eq!(
            streak.record_idle(&policy, secs(140)),
            IdleDecision::Wait {
                delay: secs(60),
                consecutive: 2,
                idle_elapsed: secs(40)
            }
        );
        assert_eq!(streak.consecutive(), 2);
        assert_eq!(streak.first_idle_end(), Some(secs(100)));
        assert_eq!(streak.idle_elapsed(secs(150)), secs(50));
    }

    #[test]
    fn activity_resets_streak() {
        let policy = IdlePolicy::default();
        let mut streak = IdleStreak::new();
        for t in [0, 40, 110] {
            let _ = streak.record_idle(&policy, secs(t));
        }
        streak.record_activity();
        assert_eq!(streak, IdleStreak::new());
        assert_eq!(streak.idle_elapsed(secs(1000)), Duration::ZERO);
        assert_eq!(
            streak.record_idle(&policy, secs(1000)),
            IdleDecision::Wait {
                delay: secs(30),
                consecutive: 1,
                idle_elapsed: secs(0)
            }
        );
    }

    #[test]
    fn stops_when_next_wait_passes_max() {
        let policy = policy(30, 2.0, 300, Some(100));
        let mut streak = IdleStreak::new();
        // 0 + 30 <= 100: wait.
        assert!(matches!(
            streak.record_idle(&policy, secs(0)),
            IdleDecision::Wait { .. }
        ));
        // 40 + 60 == 100: exactly reaching max is still allowed.
        assert_eq!(
            streak.record_idle(&policy, secs(40)),
            IdleDecision::Wait {
                delay: secs(60),
                consecutive: 2,
                idle_elapsed: secs(40)
            }
        );
        // 101 + 120 > 100: stop.
        assert_eq!(
            streak.record_idle(&policy, secs(101)),
            IdleDecision::Stop {
                consecutive: 3,
                idle_elapsed: secs(101)
            }
        );
    }

    #[test]
    fn stops_at_first_idle_when_delay_alone_passes_max() {
        let mut streak = IdleStreak::new();
        assert_eq!(
            streak.record_idle(&policy(30, 2.0, 300, Some(10)), secs(7)),
            IdleDecision::Stop {
                consecutive: 1,
                idle_elapsed: secs(0)
            }
        );
    }

    #[test]
    fn never_stops_without_max() {
        let policy = policy(30, 2.0, 300, None);
        let mut streak = IdleStreak::new();
        let _ = streak.record_idle(&policy, Duration::ZERO);
        assert_eq!(
            streak.record_idle(&policy, Duration::MAX),
            IdleDecision::Wait {
                delay: secs(60),
                consecutive: 2,
                idle_elapsed: Duration::MAX
            }
        );
    }

    #[test]
    fn idle_time_past_duration_max_stops_instead_of_overflowing() {
        let policy = IdlePolicy {
            max: Some(Duration::MAX),
            ..IdlePolicy::default()
        };
        let mut streak = IdleStreak::new();
        let _ = streak.record_idle(&policy, Duration::ZERO);
        assert_eq!(
            streak.record_idle(&policy, Duration::MAX),
            IdleDecision::Stop {
                consecutive: 2,
                idle_elapsed: Duration::MAX
            }
        );
    }

    #[test]
    fn clock_going_backwards_counts_as_no_idle_time() {
        let mut streak = IdleStreak::new();
        let _ = streak.record_idle(&IdlePolicy::default(), secs(100));
        assert_eq!(
            streak.record_idle(&IdlePolicy::default(), secs(50)),
            IdleDecision::Wait {
                delay: secs(60),
                consecutive: 2,
                idle_elapsed: Duration::ZERO
            }
        );
    }

    #[test]
    fn retry_waits_with_defaults() {
        let policy = RetryPolicy::default();
        let waits: Vec<Duration> = (0..=9).map(|i| policy.wait_before(i)).collect();
        assert_eq!(waits, [0, 0, 2, 4, 8, 16, 32, 60, 60, 60].map(secs));
    }

    #[test]
    fn retry_saturates_at_the_cap() {
        let policy = RetryPolicy {
            backoff: Duration::MAX,
            max_backoff: Duration::MAX,
        };
        assert_eq!(policy.wait_before(2), Duration::MAX);
        assert_eq!(policy.wait_before(u64::MAX), Duration::MAX);
        assert_eq!(RetryPolicy::default().wait_before(u64::MAX), secs(60));
        let zero = RetryPolicy {
            backoff: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert_eq!(zero.wait_before(u64::MAX), Duration::ZERO);
    }
}
