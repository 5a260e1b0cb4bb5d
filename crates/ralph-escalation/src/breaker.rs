//! The circuit breaker: when one task has failed often enough, in the same way, to stop trying.

use ralph_engine::CheckResult;

/// Why the breaker tripped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trip {
    /// `same_error_limit` consecutive failures with this signature.
    SameError {
        /// The streak.
        count: u64,
        /// The signature.
        signature: String,
    },
    /// `convergence.max_attempts` attempts failed.
    MaxAttempts {
        /// Attempts made.
        count: u64,
    },
    /// The agent gave up: `<!-- ralph:state blocked reason="..." -->`.
    Blocked {
        /// Attempts made, this one included.
        count: u64,
        /// The marker's `reason`, if any.
        reason: Option<String>,
    },
}

impl Trip {
    /// The reason as written in `CIRCUIT_TRIPPED`: `same_error`, `max_attempts` or `blocked`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Trip::SameError { .. } => "same_error",
            Trip::MaxAttempts { .. } => "max_attempts",
            Trip::Blocked { .. } => "blocked",
        }
    }

    /// The count reported with it.
    pub fn count(&self) -> u64 {
        match self {
            Trip::SameError { count, .. }
            | Trip::MaxAttempts { count }
            | Trip::Blocked { count, .. } => *count,
        }
    }

    /// One sentence for progress.txt, the story's notes and the terminal, with `failing` (the
    /// last attempt's failing checks) in words: which check failed and the first line of its
    /// output that reads as the error, not only the signature's hash.
    pub fn describe(&self, failing: &[CheckResult]) -> String {
        match self {
            Trip::SameError { count, .. } => {
                let times = match count {
                    1 => "once".to_owned(),
                    n => format!("{n} times in a row"),
                };
                match failed_checks(failing) {
                    Some((checks, line)) => {
                        format!("{checks} failed {times} the same way{}", said(line))
                    }
                    None => format!("the same error {times}"),
                }
            }
            Trip::MaxAttempts { count } => {
                let last = failed_checks(failing)
                    .map(|(checks, line)| format!("; the last: {checks} failed{}", said(line)))
                    .unwrap_or_default();
                format!("{count} failed attempts (convergence.max_attempts){last}")
            }
            Trip::Blocked {
                reason: Some(reason),
                ..
            } => format!("the agent reported it is blocked: {reason}"),
            Trip::Blocked { reason: None, .. } => "the agent reported it is blocked".to_owned(),
        }
    }
}

/// `check \`cargo test\`` (`and N more` when several failed) and the first error line of the
/// first, or `None` when no check failed.
fn failed_checks(failing: &[CheckResult]) -> Option<(String, Option<String>)> {
    let mut failed = failing.iter().filter(|r| !r.passed());
    let first = failed.next()?;
    let more = match failed.count() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some((
        format!("check `{}`{more}", first.command),
        crate::signature::error_line(first),
    ))
}

fn said(line: Option<String>) -> String {
    line.map(|l| format!(": {l}")).unwrap_or_default()
}

/// Failure bookkeeping for the task in progress.
#[derive(Debug, Clone)]
pub struct Breaker {
    same_error_limit: u64,
    max_attempts: u64,
    attempts: u64,
    last: Option<String>,
    streak: u64,
}

impl Breaker {
    /// A breaker tripping after `same_error_limit` equal failures or `max_attempts` failures.
    pub fn new(same_error_limit: u64, max_attempts: u64) -> Self {
        Self {
            same_error_limit: same_error_limit.max(1),
            max_attempts: max_attempts.max(1),
            attempts: 0,
            last: None,
            streak: 0,
        }
    }

    /// The attempts a task is allowed.
    pub fn max_attempts(&self) -> u64 {
        self.max_attempts
    }

    /// Attempts recorded for the current task.
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Records a failed attempt with its signature (`None`: nothing to compare, such as an
    /// attempt without checks). A different signature restarts the streak.
    pub fn failed(&mut self, signature: Option<&str>) -> Option<Trip> {
        self.attempts += 1;
        match signature {
            Some(sig) if self.last.as_deref() == Some(sig) => self.streak += 1,
            Some(sig) => {
                self.last = Some(sig.to_owned());
                self.streak = 1;
            }
            None => {
                self.last = None;
                self.streak = 0;
            }
        }
        if let Some(signature) = signature.filter(|_| self.streak >= self.same_error_limit) {
            return Some(Trip::SameError {
                count: self.streak,
                signature: signature.to_owned(),
            });
        }
        (self.attempts >= self.max_attempts).then_some(Trip::MaxAttempts {
            count: self.attempts,
        })
    }

    /// The agent wrote a `blocked` marker: trip at once.
    pub fn blocked(&mut self, reason: Option<&str>) -> Trip {
        self.attempts += 1;
        Trip::Blocked {
            count: self.attempts,
            reason: reason.map(str::to_owned),
        }
    }

    /// The task is over: the next one starts from nothing.
    pub fn reset(&mut self) {
        self.attempts = 0;
        self.last = None;
        self.streak = 0;
    }
    /// Attempts, the last signature and its streak: what a stopped run saves.
    pub fn counts(&self) -> (u64, Option<&str>, u64) {
        (self.attempts, self.last.as_deref(), self.streak)
    }

    /// Takes up the [`counts`](Self::counts) of a stopped run, under this breaker's limits.
    pub fn restore_counts(&mut self, attempts: u64, last: Option<String>, streak: u64) {
        self.attempts = attempts;
        self.last = last;
        self.streak = streak;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_after_the_limit_of_equal_failures() {
        let mut b = Breaker::new(3, 10);
        assert_eq!(b.failed(Some("a")), None);
        assert_eq!(b.failed(Some("a")), None);
        assert_eq!(
            b.failed(Some("a")),
            Some(Trip::SameError {
                count: 3,
                signature: "a".into()
            })
        );
    }

    #[test]
    fn a_different_error_restarts_the_count() {
        let mut b = Breaker::new(3, 10);
        for sig in ["a", "a", "b", "b", "a", "a", "c"] {
            assert_eq!(b.failed(Some(sig)), None, "{sig}");
        }
        assert_eq!(b.failed(Some("c")), None);
        assert!(matches!(
            b.failed(Some("c")),
            Some(Trip::SameError { count: 3, .. })
        ));
    }

    #[test]
    fn max_attempts_trips_whatever_the_errors() {
        let mut b = Breaker::new(3, 4);
        for sig in ["a", "b", "c"] {
            assert_eq!(b.failed(Some(sig)), None);
        }
        assert_eq!(b.failed(Some("d")), Some(Trip::MaxAttempts { count: 4 }));
    }

    #[test]
    fn restored_counts_trip_as_if_never_stopped() {
        let mut before = Breaker::new(3, 10);
        before.failed(Some("a"));
        before.failed(Some("a"));
        let (attempts, last, streak) = before.counts();
        let mut after = Breaker::new(3, 10);
        after.restore_counts(attempts, last.map(str::to_owned), streak);
        assert_eq!(
            after.failed(Some("a")),
            Some(Trip::SameError {
                count: 3,
                signature: "a".into()
            })
        );
    }

    #[test]
    fn reset_forgets_the_streak() {
        let mut b = Breaker::new(2, 10);
        b.failed(Some("a"));
        b.reset();
        assert_eq!(b.failed(Some("a")), None);
        assert_eq!(b.attempts(), 1);
    }

    fn failed(command: &str, tail: &str) -> CheckResult {
        CheckResult {
            command: command.into(),
            exit_code: Some(101),
            duration_ms: 5,
            tail: Some(tail.into()),
            truncated: false,
            timed_out: false,
        }
    }

    #[test]
    fn a_trip_says_which_check_failed_and_its_error_in_words() {
        let cargo =
            "   Compiling shop v0.1.0\nerror[E0308]: mismatched types\n --> src/lib.rs:3:5\n";
        let same = Trip::SameError {
            count: 3,
            signature: "3f2a9c0d1e2b4a5c".into(),
        };
        assert_eq!(
            same.describe(&[failed("cargo test", cargo)]),
            "check `cargo test` failed 3 times in a row the same way: error[E0308]: mismatched types"
        );
        assert_eq!(
            same.describe(&[failed("cargo test", cargo), failed("npm test", "")]),
            "check `cargo test` and 1 more failed 3 times in a row the same way: \
             error[E0308]: mismatched types"
        );
        assert_eq!(
            Trip::MaxAttempts { count: 5 }.describe(&[failed("sh t.sh", "\n\nnot yet\n")]),
            "5 failed attempts (convergence.max_attempts); the last: check `sh t.sh` failed: \
             not yet"
        );
        assert_eq!(same.describe(&[]), "the same error 3 times in a row");
    }

    #[test]
    fn blocked_trips_at_once_and_counts_the_attempt() {
        let mut b = Breaker::new(3, 10);
        b.failed(Some("a"));
        let trip = b.blocked(Some("needs an API key"));
        assert_eq!(trip.count(), 2);
        assert_eq!(trip.as_str(), "blocked");
        assert!(trip.describe(&[]).contains("needs an API key"));
    }
}
