//! When an agent run failed, and why, in words.

use std::time::Duration;

use crate::event::{Termination, exit_status};
use ralph_agents::{RateLimit, strip_escapes};
use ralph_process::ProcessExit;

/// How much of a failed agent run's output is read for its failure line and a rate limit.
pub(super) const FAILURE_TAIL_BYTES: usize = 4096;

/// Longest failure description taken from the agent's own words.
const FAILURE_DETAIL_CHARS: usize = 200;

/// What a finished agent run said about itself, beyond its exit status.
#[derive(Debug, Default)]
pub(super) struct AgentWords {
    /// The error its adapter reported (Claude Code's `is_error`).
    pub(super) reported_error: Option<String>,
    /// The rate limit its adapter says refused it, heeded only if the run failed.
    pub(super) rate_limit: Option<RateLimit>,
    /// The end of its output, both streams in the order written.
    pub(super) tail: String,
    /// Why it could not be started, when it could not.
    pub(super) not_started: Option<String>,
}

/// Why an agent run failed, in words, or `None` when it did not: a non-zero exit, a signal ralph
/// did not send, a timeout, an agent that could not start, or an error its adapter reported. A
/// run ralph stopped (Ctrl+C, PTY silence) did not fail.
pub(super) fn failure_of(
    exit: &ProcessExit,
    words: &AgentWords,
    timeout: Option<Duration>,
) -> Option<String> {
    if let Some(why) = &words.not_started {
        return Some(why.clone());
    }
    let reported = words.reported_error.as_deref().and_then(last_line);
    let status = match (exit.termination, exit.exit_code, exit.signal) {
        (Termination::Interrupted | Termination::IdleTimeout, _, _) => return None,
        (Termination::Timeout, _, _) => format!(
            "timed out after {}",
            humantime::format_duration(timeout.unwrap_or(exit.duration))
        ),
        (_, Some(_), _) if exit.success() => {
            return reported.map(|words| format!("the agent reported an error: {words}"));
        }
        (_, code, signal) => exit_status(code, signal),
    };
    match reported.or_else(|| last_line(&words.tail)) {
        Some(words) => Some(format!("{status}: {words}")),
        None => Some(status),
    }
}

/// The last non-blank line of `text`, without colour escapes (an agent's colours, which
/// `NO_COLOR` and `--no-color` do not always turn off), trimmed, at most
/// [`FAILURE_DETAIL_CHARS`] characters.
fn last_line(text: &str) -> Option<String> {
    let text = strip_escapes(text);
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    let mut words: String = line.chars().take(FAILURE_DETAIL_CHARS).collect();
    if words.len() < line.len() {
        words.push('…');
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(exit_code: Option<i32>, signal: Option<i32>, termination: Termination) -> ProcessExit {
        ProcessExit {
            exit_code,
            signal,
            duration: Duration::from_secs(2),
            termination,
        }
    }

    fn words(reported_error: Option<&str>, tail: &str) -> AgentWords {
        AgentWords {
            reported_error: reported_error.map(str::to_owned),
            rate_limit: None,
            tail: tail.to_owned(),
            not_started: None,
        }
    }

    #[test]
    fn a_clean_exit_is_no_failure() {
        let ok = exit(Some(0), None, Termination::Natural);
        assert_eq!(failure_of(&ok, &words(None, "all done\n"), None), None);
    }

    #[test]
    fn a_non_zero_exit_fails_with_the_last_line_of_output() {
        let failed = exit(Some(1), None, Termination::Natural);
        let said = words(None, "starting\nInvalid API key · Please run /login\n\n");
        assert_eq!(
            failure_of(&failed, &said, None).as_deref(),
            Some("exit 1: Invalid API key · Please run /login")
        );
        assert_eq!(
            failure_of(&failed, &words(None, ""), None).as_deref(),
            Some("exit 1")
        );
    }

    #[test]
    fn the_adapters_error_fails_a_clean_exit_and_explains_a_failed_one() {
        let ok = exit(Some(0), None, Termination::Natural);
        assert_eq!(
            failure_of(&ok, &words(Some("error_max_turns"), "x"), None).as_deref(),
            Some("the agent reported an error: error_max_turns")
        );
        let failed = exit(Some(1), None, Termination::Natural);
        assert_eq!(
            failure_of(&failed, &words(Some("API Error: 500"), "{json}"), None).as_deref(),
            Some("exit 1: API Error: 500")
        );
    }

    #[test]
    fn signals_and_timeouts_fail_but_ralphs_own_stops_do_not() {
        let killed = exit(None, Some(9), Termination::Killed);
        assert_eq!(
            failure_of(&killed, &words(None, ""), None).as_deref(),
            Some("killed by signal 9")
        );
        let timed_out = exit(None, Some(15), Termination::Timeout);
        assert_eq!(
            failure_of(
                &timed_out,
                &words(None, ""),
                Some(Duration::from_secs(1800))
            )
            .as_deref(),
            Some("timed out after 30m")
        );
        for ours in [Termination::Interrupted, Termination::IdleTimeout] {
            let stopped = exit(None, Some(15), ours);
            assert_eq!(
                failure_of(&stopped, &words(None, ""), None),
                None,
                "{ours:?}"
            );
        }
    }

    #[test]
    fn colour_escapes_are_no_part_of_the_words() {
        let failed = exit(Some(1), None, Termination::Natural);
        let said = words(
            None,
            "\x1b[31mError when talking to Gemini API\x1b[0m\n\x1b[2K",
        );
        assert_eq!(
            failure_of(&failed, &said, None).as_deref(),
            Some("exit 1: Error when talking to Gemini API")
        );
        let reported = words(Some("\x1b[1;31m[API Error: quota]\x1b[0m"), "");
        assert_eq!(
            failure_of(&failed, &reported, None).as_deref(),
            Some("exit 1: [API Error: quota]")
        );
    }

    #[test]
    fn long_words_are_cut() {
        let failed = exit(Some(2), None, Termination::Natural);
        let long = "e".repeat(500);
        let failure = failure_of(&failed, &words(None, &long), None).unwrap();
        assert_eq!(
            failure.chars().count(),
            "exit 2: ".len() + FAILURE_DETAIL_CHARS + 1
        );
        assert!(failure.ends_with('…'));
    }
}
