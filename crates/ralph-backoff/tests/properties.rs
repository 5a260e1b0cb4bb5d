//! Property tests: the invariants the engine relies on hold for any policy, including the extreme
//! and invalid ones a careless embedder could build.

use std::time::Duration;

use proptest::prelude::*;
use ralph_backoff::{IdleDecision, IdlePolicy, IdleStreak, RetryPolicy};

/// Durations from zero to `Duration::MAX`, with ordinary values (up to a day) most of the time.
fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => (0u64..86_400_000).prop_map(Duration::from_millis),
        1 => (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        1 => prop_oneof![Just(Duration::ZERO), Just(Duration::MAX)],
    ]
}

/// Backoffs from the valid range, plus anything an `f64` can hold.
fn backoff() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 1.0f64..8.0,
        1 => prop_oneof![Just(1.0), Just(2.0), Just(3.0), Just(1e300)],
        1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)],
        1 => any::<f64>(),
    ]
}

fn idle_policy() -> impl Strategy<Value = IdlePolicy> {
    (
        duration(),
        backoff(),
        duration(),
        proptest::option::of(duration()),
    )
        .prop_map(|(delay, backoff, max_delay, max)| {
            IdlePolicy::new(delay, backoff, max_delay).with_max(max)
        })
}

/// Iteration counts: small ones, and huge ones where overflow would bite.
fn count() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..200, any::<u64>(), Just(u64::MAX)]
}

fn retry_policy() -> impl Strategy<Value = RetryPolicy> {
    (duration(), duration())
        .prop_map(|(backoff, max_backoff)| RetryPolicy::new(backoff, max_backoff))
}

proptest! {
    #[test]
    fn idle_wait_never_exceeds_cap_nor_falls_below_first_wait(policy in idle_policy(), n in count()) {
        let wait = policy.delay_for(n);
        prop_assert!(wait <= policy.max_delay);
        prop_assert!(wait >= policy.delay.min(policy.max_delay));
    }

    #[test]
    fn idle_waits_never_decrease_with_n(policy in idle_policy(), n in count()) {
        let n = n.min(u64::MAX - 1);
        prop_assert!(policy.delay_for(n) <= policy.delay_for(n + 1));
    }

    #[test]
    fn idle_waits_never_decrease_within_a_streak(
        policy in idle_policy(),
        runs in proptest::collection::vec(duration(), 1..20),
    ) {
        // Only waits and idle runs: `max` would stop the streak, which is tested elsewhere.
        let policy = policy.with_max(None);
        let mut streak = IdleStreak::new();
        let mut now = Duration::ZERO;
        let mut last = Duration::ZERO;
        for run in runs {
            now = now.saturating_add(run);
            match streak.record_idle(&policy, now) {
                IdleDecision::Wait { delay, .. } => {
                    prop_assert!(delay >= last);
                    prop_assert!(delay <= policy.max_delay);
                    last = delay;
                    now = now.saturating_add(delay);
                }
                IdleDecision::Stop { .. } => prop_assert!(false, "stopped without max"),
            }
        }
    }

    #[test]
    fn streak_restarts_after_activity(
        policy in idle_policy(),
        idle_before in 1usize..10,
        start in duration(),
        later in duration(),
    ) {
        let mut streak = IdleStreak::new();
        let mut now = start;
        for _ in 0..idle_before {
            let _ = streak.record_idle(&policy, now);
            now = now.saturating_add(Duration::from_secs(1));
        }
        streak.record_activity();
        prop_assert_eq!(streak.consecutive(), 0);
        prop_assert_eq!(streak.first_idle_end(), None);

        let mut fresh = IdleStreak::new();
        prop_assert_eq!(streak.record_idle(&policy, later), fresh.record_idle(&policy, later));
        prop_assert_eq!(streak.idle_elapsed(later), Duration::ZERO);
    }

    #[test]
    fn streak_decision_matches_the_spec(
        policy in idle_policy(),
        times in proptest::collection::vec(duration(), 1..12),
    ) {
        let mut streak = IdleStreak::new();
        let first = times[0];
        for (i, now) in times.into_iter().enumerate() {
            let consecutive = i as u64 + 1;
            let idle_elapsed = now.saturating_sub(first);
            let delay = policy.delay_for(consecutive);
            let stops = policy
                .max
                .is_some_and(|max| idle_elapsed.checked_add(delay).is_none_or(|end| end > max));
            let expected = if stops {
                IdleDecision::Stop { consecutive, idle_elapsed }
            } else {
                IdleDecision::Wait { delay, consecutive, idle_elapsed }
            };
            prop_assert_eq!(streak.record_idle(&policy, now), expected);
        }
    }

    #[test]
    fn idle_never_panics_for_any_input(
        delay in any::<(u64, u32)>(),
        backoff in any::<f64>(),
        max_delay in any::<(u64, u32)>(),
        max in any::<Option<(u64, u32)>>(),
        n in any::<u64>(),
        now in any::<(u64, u32)>(),
    ) {
        let dur = |(s, ns): (u64, u32)| Duration::new(s, ns % 1_000_000_000);
        let policy = IdlePolicy::new(dur(delay), backoff, dur(max_delay)).with_max(max.map(dur));
        prop_assert!(policy.delay_for(n) <= policy.max_delay);
        let mut streak = IdleStreak::new();
        let _ = streak.record_idle(&policy, Duration::ZERO);
        let _ = streak.record_idle(&policy, dur(now));
    }

    #[test]
    fn retry_waits_are_monotone_and_capped(policy in retry_policy(), attempt in count()) {
        let attempt = attempt.min(u64::MAX - 1);
        let wait = policy.wait_before(attempt);
        prop_assert!(wait <= policy.max_backoff);
        prop_assert!(wait <= policy.wait_before(attempt + 1));
        if attempt <= 1 {
            prop_assert_eq!(wait, Duration::ZERO);
        }
    }

    #[test]
    fn retry_wait_is_exact_below_the_cap(base_ms in 0u64..10_000, attempt in 2u64..20) {
        let policy = RetryPolicy::new(Duration::from_millis(base_ms), Duration::MAX);
        let expected = Duration::from_millis(base_ms << (attempt - 1));
        prop_assert_eq!(policy.wait_before(attempt), expected);
    }
}
