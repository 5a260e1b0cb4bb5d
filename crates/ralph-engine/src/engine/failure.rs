//! When an agent run failed, and why, in words.

use std::time::{Duration, SystemTime};

use super::supervise::AgentRetries;
use crate::event::{FailureKind, Termination, exit_status};
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
    /// Its own retries (`AGENT_RETRYING`).
    pub(super) retries: AgentRetries,
    /// The end of its answer: the adapter's result text on standard output.
    pub(super) answer: String,
}

/// The limits a run's agent ran under, for the words of the one it ran into.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Limits {
    /// `timeout`.
    pub(super) timeout: Option<Duration>,
    /// `idle_timeout`, when silence fails a run (on pipes; on a terminal it is how an agent's
    /// turn ends).
    pub(super) silence: Option<Duration>,
}

/// Why an agent run failed. Its [`Display`](std::fmt::Display) is the words `ITERATION_ENDED`
/// and `ITERATION_FAILED` write as `failure`; [`kind`](Self::kind) is their `failure_kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The agent could not be started, and why.
    NotStarted(String),
    /// It exited non-zero, or a signal ralph did not send ended it; with the words it left.
    Exited {
        /// Its exit code; `None` when a signal ended it.
        exit_code: Option<i32>,
        /// The signal that ended it.
        signal: Option<i32>,
        /// The error its adapter reported, or else the last line of its output that reads as
        /// words.
        words: Option<String>,
    },
    /// It ran past `timeout`, and ralph stopped it.
    Timeout {
        /// The limit it ran into.
        after: Duration,
        /// The error its adapter reported, if any.
        words: Option<String>,
    },
    /// It printed nothing for `idle_timeout` (on pipes), and ralph stopped it.
    Silent {
        /// The silence it kept.
        silence: Duration,
        /// The error its adapter reported, if any.
        words: Option<String>,
    },
    /// It retried more often than `failure.max_consecutive` allows, and ralph stopped it.
    RetryLimit {
        /// Its retries.
        retries: u64,
        /// The most `failure.max_consecutive` allows.
        limit: u64,
        /// Its last retry, in words.
        last: String,
    },
    /// It exited 0, but its adapter reported an error (an API error, a usage limit).
    ReportedError(String),
    /// It said it is rate-limited, with no reset time to wait for, or one already past.
    RateLimited {
        /// The reset it gave, already past; `None` when it gave none.
        reset: Option<SystemTime>,
        /// How the run itself failed.
        cause: Box<Failure>,
    },
}

impl Failure {
    /// What kind of failure it is, as `failure_kind` names it.
    pub fn kind(&self) -> FailureKind {
        match self {
            Failure::NotStarted(_) => FailureKind::NotStarted,
            Failure::Exited {
                exit_code: Some(_), ..
            } => FailureKind::ExitStatus,
            Failure::Exited { .. } => FailureKind::Signal,
            Failure::Timeout { .. } => FailureKind::Timeout,
            Failure::Silent { .. } => FailureKind::IdleTimeout,
            Failure::RetryLimit { .. } => FailureKind::RetryLimit,
            Failure::ReportedError(_) => FailureKind::ReportedError,
            Failure::RateLimited { .. } => FailureKind::RateLimited,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `STATUS: WORDS`, or the status alone.
        let with_words = |f: &mut std::fmt::Formatter<'_>, words: &Option<String>| match words {
            Some(words) => write!(f, ": {words}"),
            None => Ok(()),
        };
        match self {
            Failure::NotStarted(why) => f.write_str(why),
            Failure::Exited {
                exit_code,
                signal,
                words,
            } => {
                f.write_str(&exit_status(*exit_code, *signal))?;
                with_words(f, words)
            }
            Failure::Timeout { after, words } => {
                write!(f, "timed out after {}", humantime::format_duration(*after))?;
                with_words(f, words)
            }
            Failure::Silent { silence, words } => {
                write!(
                    f,
                    "printed nothing for {} (idle_timeout), so ralph stopped it",
                    humantime::format_duration(*silence)
                )?;
                with_words(f, words)
            }
            Failure::RetryLimit {
                retries,
                limit,
                last,
            } => write!(
                f,
                "the agent retried {retries} times without end (last: {last}), more than \
                 failure.max_consecutive ({limit}), so ralph stopped it"
            ),
            Failure::ReportedError(words) => write!(f, "the agent reported an error: {words}"),
            Failure::RateLimited {
                reset: Some(reset),
                cause,
            } => write!(
                f,
                "rate-limited, the reset it gave ({}) has passed ({cause})",
                humantime::format_rfc3339_seconds(*reset)
            ),
            Failure::RateLimited { reset: None, cause } => {
                write!(f, "rate-limited, no reset time given ({cause})")
            }
        }
    }
}

/// Why an agent run failed, or `None` when it did not: a non-zero exit, a signal ralph did not
/// send, a timeout, silence past `idle_timeout` (on pipes), an agent that could not start, or
/// an error its adapter reported. A run ralph stopped (Ctrl+C, PTY silence) did not fail.
///
/// The words after the status are the adapter's (the error the agent reported); without them,
/// the last line of the agent's output that reads as words ([`last_words`]), unless ralph
/// stopped the agent (a timeout or silence: its last line then says nothing of why).
pub(super) fn failure_of(
    exit: &ProcessExit,
    words: &AgentWords,
    limits: Limits,
) -> Option<Failure> {
    if let Some(why) = &words.not_started {
        return Some(Failure::NotStarted(why.clone()));
    }
    let reported = words.reported_error.as_deref().and_then(last_words);
    match (exit.termination, exit.exit_code, exit.signal) {
        (Termination::Interrupted, _, _) => None,
        (Termination::IdleTimeout, _, _) => limits.silence.map(|silence| Failure::Silent {
            silence,
            words: reported,
        }),
        (Termination::RetryLimit, _, _) => {
            let retries = &words.retries;
            Some(Failure::RetryLimit {
                retries: retries.count,
                limit: retries.limit,
                last: (retries.last.as_deref())
                    .unwrap_or("no reason given")
                    .to_owned(),
            })
        }
        (Termination::Timeout, _, _) => Some(Failure::Timeout {
            after: limits.timeout.unwrap_or(exit.duration),
            words: reported,
        }),
        (_, Some(_), _) if exit.success() => reported.map(Failure::ReportedError),
        (_, exit_code, signal) => Some(Failure::Exited {
            exit_code,
            signal,
            words: reported.or_else(|| last_words(&words.tail)),
        }),
    }
}

/// The last line of `text` that reads as words, trimmed, at most [`FAILURE_DETAIL_CHARS`]
/// characters: terminal escapes (an agent's colours, which `NO_COLOR` does not always turn
/// off, a PTY's charset switches) and other control characters left out, a line redrawn with
/// `\r` read as its last drawing, and a JSON line (an agent's event, which its adapter reads)
/// skipped.
fn last_words(text: &str) -> Option<String> {
    let text = strip_escapes(text);
    let line = text
        .lines()
        .rev()
        .map(|line| {
            line.rsplit('\r')
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
        })
        .map(|line| {
            line.chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .filter(|c| !c.is_control())
                .collect::<String>()
        })
        .map(|line| line.trim().to_owned())
        .find(|line| line.chars().any(char::is_alphanumeric) && !is_json(line))?;
    let mut words: String = line.chars().take(FAILURE_DETAIL_CHARS).collect();
    if words.len() < line.len() {
        words.push('…');
    }
    Some(words)
}

/// Whether `line` is a JSON object or array: an agent's event, not its words.
fn is_json(line: &str) -> bool {
    (line.starts_with('{') || line.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of the failure `failure_of` finds, if any: what the events write.
    fn words_of(exit: &ProcessExit, words: &AgentWords, limits: Limits) -> Option<String> {
        failure_of(exit, words, limits).map(|failure| failure.to_string())
    }

    const NONE: Limits = Limits {
        timeout: None,
        silence: None,
    };

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
            retries: AgentRetries::default(),
            answer: String::new(),
        }
    }

    #[test]
    fn a_clean_exit_is_no_failure() {
        let ok = exit(Some(0), None, Termination::Natural);
        assert_eq!(words_of(&ok, &words(None, "all done\n"), NONE), None);
    }

    #[test]
    fn a_non_zero_exit_fails_with_the_last_line_of_output() {
        let failed = exit(Some(1), None, Termination::Natural);
        let said = words(None, "starting\nInvalid API key · Please run /login\n\n");
        assert_eq!(
            words_of(&failed, &said, NONE).as_deref(),
            Some("exit 1: Invalid API key · Please run /login")
        );
        assert_eq!(
            words_of(&failed, &words(None, ""), NONE).as_deref(),
            Some("exit 1")
        );
    }

    #[test]
    fn the_adapters_error_fails_a_clean_exit_and_explains_a_failed_one() {
        let ok = exit(Some(0), None, Termination::Natural);
        assert_eq!(
            words_of(&ok, &words(Some("error_max_turns"), "x"), NONE).as_deref(),
            Some("the agent reported an error: error_max_turns")
        );
        let failed = exit(Some(1), None, Termination::Natural);
        assert_eq!(
            words_of(&failed, &words(Some("API Error: 500"), "{json}"), NONE).as_deref(),
            Some("exit 1: API Error: 500")
        );
    }

    #[test]
    fn signals_and_timeouts_fail_but_ralphs_own_stops_do_not() {
        let killed = exit(None, Some(9), Termination::Killed);
        assert_eq!(
            words_of(&killed, &words(None, ""), NONE).as_deref(),
            Some("killed by signal 9")
        );
        let timed_out = exit(None, Some(15), Termination::Timeout);
        assert_eq!(
            words_of(
                &timed_out,
                &words(None, ""),
                Limits {
                    timeout: Some(Duration::from_secs(1800)),
                    silence: None,
                }
            )
            .as_deref(),
            Some("timed out after 30m")
        );
        for ours in [Termination::Interrupted, Termination::IdleTimeout] {
            let stopped = exit(None, Some(15), ours);
            assert_eq!(words_of(&stopped, &words(None, ""), NONE), None, "{ours:?}");
        }
    }

    #[test]
    fn silence_fails_a_piped_run_and_a_timeout_keeps_only_the_adapters_words() {
        let silent = exit(None, Some(15), Termination::IdleTimeout);
        let piped = Limits {
            timeout: None,
            silence: Some(Duration::from_secs(600)),
        };
        let event = r#"{"type":"item.completed","item":{"type":"agent_message"}}"#;
        assert_eq!(
            words_of(&silent, &words(None, event), piped).as_deref(),
            Some("printed nothing for 10m (idle_timeout), so ralph stopped it")
        );
        let timed_out = exit(None, Some(15), Termination::Timeout);
        let said = words(None, "Working on it\n");
        assert_eq!(
            words_of(&timed_out, &said, NONE).as_deref(),
            Some("timed out after 2s")
        );
        let said = words(Some("stream disconnected"), "x");
        assert_eq!(
            words_of(&timed_out, &said, NONE).as_deref(),
            Some("timed out after 2s: stream disconnected")
        );
    }

    #[test]
    fn json_lines_and_terminal_residue_are_never_the_words() {
        let failed = exit(Some(1), None, Termination::Natural);
        let event = r#"{"type":"step_finish","part":{"reason":"unknown"}}"#;
        let said = words(None, &format!("Error: connection reset\n{event}\n"));
        assert_eq!(
            words_of(&failed, &said, NONE).as_deref(),
            Some("exit 1: Error: connection reset")
        );
        // `tput sgr0` on a terminal: a charset switch, colours off, shift-in.
        let said = words(None, "fatal: no model\r\n\x1b(B\x1b[m\x0f\r\n");
        assert_eq!(
            words_of(&failed, &said, NONE).as_deref(),
            Some("exit 1: fatal: no model")
        );
        let said = words(None, "50%\r75%\rdone badly\r\n");
        assert_eq!(
            words_of(&failed, &said, NONE).as_deref(),
            Some("exit 1: done badly")
        );
        assert_eq!(
            words_of(&failed, &words(None, "\x1b(B\x0f\n{}\n"), NONE).as_deref(),
            Some("exit 1")
        );
    }

    #[test]
    fn colour_escapes_are_no_part_of_the_words() {
        let failed = exit(Some(1), None, Termination::Natural);
        let said = words(
            None,
            "\x1b[31mError when talking to Gemini API\x1b[0m\n\x1b[2K",
        );
        assert_eq!(
            words_of(&failed, &said, NONE).as_deref(),
            Some("exit 1: Error when talking to Gemini API")
        );
        let reported = words(Some("\x1b[1;31m[API Error: quota]\x1b[0m"), "");
        assert_eq!(
            words_of(&failed, &reported, NONE).as_deref(),
            Some("exit 1: [API Error: quota]")
        );
    }

    #[test]
    fn long_words_are_cut() {
        let failed = exit(Some(2), None, Termination::Natural);
        let long = "e".repeat(500);
        let failure = words_of(&failed, &words(None, &long), NONE).unwrap();
        assert_eq!(
            failure.chars().count(),
            "exit 2: ".len() + FAILURE_DETAIL_CHARS + 1
        );
        assert!(failure.ends_with('…'));
    }
}
