//! Convergence: `done_when` checks decide success, not the agent's exit code.
//!
//! This module keeps the attempt bookkeeping (attempt count, flakes, the failures fed back into
//! the next prompt); the engine runs the checks through the `process` module and asks it what
//! comes next.

use std::fmt::Write as _;
use std::time::Duration;

use ralph_frontmatter::ConvergenceConfig;

use crate::event::{CheckResult, Outcome};
use crate::session::AttemptsState;

/// Bytes of a failing check's output that are kept.
pub(crate) const TAIL_BYTES: usize = 4096;

/// What the engine does after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every check passed.
    Converged,
    /// The last allowed attempt failed.
    Exhausted,
    /// Wait this long, then try again.
    Retry(Duration),
}

/// Attempt bookkeeping for one loop (or one story).
#[derive(Debug, Clone)]
pub(crate) struct Attempts {
    config: ConvergenceConfig,
    attempt: u64,
    failed_before: bool,
    flake_retries: u64,
    /// The failures of the last attempt, rendered for the next prompt.
    feedback: Option<String>,
    /// The wait before the attempt about to run.
    pending_backoff: Option<Duration>,
}

impl Attempts {
    pub(crate) fn new(config: ConvergenceConfig) -> Self {
        Self {
            config,
            attempt: 0,
            failed_before: false,
            flake_retries: 0,
            feedback: None,
            pending_backoff: None,
        }
    }

    /// The number the next attempt will carry.
    pub(crate) fn next_attempt(&self) -> u64 {
        self.attempt + 1
    }

    /// The wait that preceded the attempt about to be recorded.
    pub(crate) fn backoff_before_next(&self) -> Option<Duration> {
        self.pending_backoff
    }

    /// Records an attempt's results and decides what comes next.
    pub(crate) fn record(&mut self, results: &[CheckResult]) -> Verdict {
        self.attempt += 1;
        self.pending_backoff = None;
        if results.iter().all(CheckResult::passed) {
            if self.failed_before {
                self.flake_retries += 1;
            }
            self.feedback = None;
            return Verdict::Converged;
        }
        self.failed_before = true;
        self.feedback = self.config.feedback.then(|| feedback(results));
        if self.attempt >= self.config.max_attempts {
            return Verdict::Exhausted;
        }
        let wait = self.config.retry.wait_before(self.attempt + 1);
        self.pending_backoff = Some(wait);
        Verdict::Retry(wait)
    }

    /// What failed on the last attempt, for `{{ ralph.failures }}` or the appended section.
    pub(crate) fn feedback(&self) -> Option<&str> {
        self.feedback.as_deref()
    }

    /// Puts `text` before the last attempt's feedback, when there is feedback to give.
    pub(crate) fn prefix_feedback(&mut self, text: &str) {
        if let Some(feedback) = &mut self.feedback {
            feedback.insert_str(0, &format!("{text}\n\n"));
        }
    }

    pub(crate) fn flake_retries(&self) -> u64 {
        self.flake_retries
    }

    /// The run's outcome so far.
    pub(crate) fn outcome(&self, converged: bool) -> Outcome {
        match (converged, self.flake_retries) {
            (false, _) => Outcome::Failed,
            (true, 0) => Outcome::Clean,
            (true, _) => Outcome::CleanWithFlake,
        }
    }

    pub(crate) fn max_attempts(&self) -> u64 {
        self.config.max_attempts
    }

    /// The bookkeeping, for the session file.
    pub(crate) fn snapshot(&self) -> AttemptsState {
        AttemptsState::new(
            self.attempt,
            self.failed_before,
            self.flake_retries,
            self.feedback.clone(),
            self.pending_backoff.map(crate::state::millis),
        )
    }

    /// Attempts taken up where a stopped run left them, under `config`.
    pub(crate) fn resumed(config: ConvergenceConfig, state: &AttemptsState) -> Self {
        Self {
            config,
            attempt: state.attempt,
            failed_before: state.failed_before,
            flake_retries: state.flake_retries,
            feedback: state.feedback.clone(),
            pending_backoff: state.pending_backoff_ms.map(Duration::from_millis),
        }
    }
}

/// The failing checks with their tails, as markdown.
fn feedback(results: &[CheckResult]) -> String {
    let mut text = String::from("## Checks that failed on the last attempt\n");
    for r in results.iter().filter(|r| !r.passed()) {
        let _ = write!(text, "\n### `{}` ({})\n\n", r.command, r.status());
        let tail = r.tail.as_deref().unwrap_or("").trim_end();
        if r.truncated {
            text.push_str("(output cut to its last 4096 bytes)\n");
        }
        // A fence longer than any backtick run in the tail, so the tail cannot close it.
        let longest = tail.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        let _ = write!(text, "{fence}\n{tail}\n{fence}\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(command: &str, exit_code: i32, tail: &str) -> CheckResult {
        CheckResult {
            command: command.into(),
            exit_code: Some(exit_code),
            duration_ms: 1,
            tail: (exit_code != 0).then(|| tail.into()),
            truncated: false,
            timed_out: false,
        }
    }

    fn config(max_attempts: u64) -> ConvergenceConfig {
        ConvergenceConfig {
            max_attempts,
            ..ConvergenceConfig::default()
        }
    }

    #[test]
    fn first_attempt_success_is_clean() {
        let mut a = Attempts::new(config(6));
        assert_eq!(a.record(&[result("true", 0, "")]), Verdict::Converged);
        assert_eq!(a.outcome(true), Outcome::Clean);
        assert_eq!(a.flake_retries(), 0);
    }

    #[test]
    fn success_after_a_failure_is_a_flake() {
        let mut a = Attempts::new(config(6));
        assert_eq!(
            a.record(&[result("t", 1, "boom")]),
            Verdict::Retry(Duration::from_secs(2))
        );
        assert_eq!(a.backoff_before_next(), Some(Duration::from_secs(2)));
        assert_eq!(a.record(&[result("t", 0, "")]), Verdict::Converged);
        assert_eq!(a.outcome(true), Outcome::CleanWithFlake);
        assert_eq!(a.flake_retries(), 1);
    }

    #[test]
    fn retry_waits_follow_the_policy() {
        let mut a = Attempts::new(config(7));
        let waits: Vec<_> = (0..6)
            .map(|_| match a.record(&[result("t", 1, "")]) {
                Verdict::Retry(d) => d.as_secs(),
                Verdict::Exhausted => 0,
                Verdict::Converged => unreachable!(),
            })
            .collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 60]);
        assert_eq!(a.record(&[result("t", 1, "")]), Verdict::Exhausted);
    }

    #[test]
    fn the_last_attempt_failing_exhausts() {
        let mut a = Attempts::new(config(1));
        assert_eq!(a.record(&[result("t", 1, "x")]), Verdict::Exhausted);
        assert_eq!(a.outcome(false), Outcome::Failed);
    }

    #[test]
    fn feedback_lists_only_failing_checks_with_their_tails() {
        let mut a = Attempts::new(config(3));
        a.record(&[
            result("cargo build", 0, ""),
            result("cargo test", 101, "test parser ... FAILED"),
        ]);
        insta::assert_snapshot!(a.feedback().unwrap());
    }

    #[test]
    fn feedback_off_gives_none() {
        let mut a = Attempts::new(ConvergenceConfig {
            feedback: false,
            ..config(3)
        });
        a.record(&[result("t", 1, "x")]);
        assert_eq!(a.feedback(), None);
    }
}
