//! Any policy, any streak: waits never exceed the cap, never shrink within a streak, never panic.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use ralph_backoff::{IdleDecision, IdlePolicy, IdleStreak, RetryPolicy};

fuzz_target!(|input: (u64, u64, f64, u64, Option<u64>, Vec<u16>)| {
    let (delay, max_delay, backoff, retry_base, max, steps) = input;
    let policy = IdlePolicy {
        delay: Duration::from_millis(delay),
        backoff,
        max_delay: Duration::from_millis(max_delay),
        max: max.map(Duration::from_millis),
    };
    let mut streak = IdleStreak::new();
    let mut now = Duration::ZERO;
    let mut last = Duration::ZERO;
    for step in steps {
        now = now.saturating_add(Duration::from_millis(u64::from(step)));
        match streak.record_idle(&policy, now) {
            IdleDecision::Wait { delay, .. } => {
                assert!(delay <= policy.max_delay);
                assert!(delay >= last);
                last = delay;
            }
            IdleDecision::Stop { .. } => break,
        }
    }
    let retry = RetryPolicy {
        backoff: Duration::from_millis(retry_base),
        max_backoff: Duration::from_millis(max_delay),
    };
    let mut previous = Duration::ZERO;
    for attempt in 0..70 {
        let wait = retry.wait_before(attempt);
        assert!(wait <= retry.max_backoff);
        assert!(wait >= previous || attempt <= 1);
        previous = wait;
    }
});
