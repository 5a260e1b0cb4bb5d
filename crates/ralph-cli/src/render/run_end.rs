//! The summary line of `RUN_ENDED`: why the run ended, told from the typed reason, then the
//! stories, the iterations, what the agents spent and the exit code.

use std::borrow::Cow;

use ralph_engine::{EndReason, EventKind, Outcome, Usage};
use ralph_escalation::{StoriesSummary, StoryEnd, TaskWords};

use super::{Style, compact, human_ms};

/// The summary line, for a `RUN_ENDED` (`None` for any other event).
pub(super) fn run_ended_line(style: Style, ended: &EventKind) -> Option<String> {
    let EventKind::RunEnded {
        reason,
        iterations,
        idle_iterations,
        idle_ms,
        exit_code,
        outcome,
        flake_retries,
        cost_usd,
        num_turns,
        task,
        usage,
    } = ended
    else {
        return None;
    };
    // The run's own record of its list, else what the renderer was told.
    let words = match task.contains_key(TaskWords::FIELD) {
        true => TaskWords::from_fields(task),
        false => style.words,
    };
    let why = end_sentence(reason, *outcome, *flake_retries, words);
    let stories = StoriesSummary::from_fields(task)
        .map(|s| {
            format!(
                " · {}: {} passed, {} blocked, {} left",
                words.many, s.passed, s.blocked, s.remaining
            )
        })
        .unwrap_or_default();
    let spent = spent(usage.as_ref(), *cost_usd, *num_turns);
    let color = if *exit_code == 0 { "1;32" } else { "1;31" };
    Some(format!(
        "{} {why}{stories} · {iterations} iteration{} ({idle_iterations} idle) · idle {}{spent} · exit {exit_code}",
        style.paint(color, "■ done:"),
        if *iterations == 1 { "" } else { "s" },
        human_ms(*idle_ms),
    ))
}

/// Why the run ended, in words. A reason of a declared state or a task source is its own name;
/// escalation's are told in words too (with the task list's `words`); a reason this renderer
/// does not know yet, its wire string.
pub(crate) fn end_sentence(
    reason: &EndReason,
    outcome: Option<Outcome>,
    flake_retries: Option<u64>,
    words: TaskWords,
) -> Cow<'_, str> {
    Cow::Borrowed(match reason {
        EndReason::MaxIterations => "reached max_iterations",
        EndReason::MaxIterationsLastFailed => "reached max_iterations; the last run failed",
        EndReason::IdleLimit => "idle limit reached (idle.max): the agent has nothing to do",
        EndReason::Interrupted => "interrupted",
        EndReason::Cancelled => "cancelled by the program running the loop",
        // --stop-on-error, or an agent that could not start (its error follows).
        EndReason::AgentFailed => "the agent failed",
        EndReason::AgentFailing => "the agent kept failing (failure.max_consecutive runs in a row)",
        EndReason::MaxCost => "max_cost reached: the agents' cost hit the budget",
        EndReason::MaxRuntime => "max_runtime reached",
        EndReason::PtyIdleTimeout => "the agent printed nothing for idle_timeout (a safety stop)",
        EndReason::Converged => match (outcome, flake_retries) {
            (Some(Outcome::CleanWithFlake), Some(n)) => {
                return Cow::Owned(format!(
                    "converged: every check passes, after a failed attempt (flake_retries {n})"
                ));
            }
            _ => "converged: every check passes",
        },
        EndReason::MaxAttemptsReached => "not converged: max_attempts reached",
        EndReason::AgentDone => "the agent reported done",
        EndReason::Task { .. } => {
            return StoryEnd::of(reason)
                .and_then(|end| story_end_sentence(end, words))
                .map_or(Cow::Borrowed(reason.as_str()), Cow::Owned);
        }
        EndReason::State { reason, .. } => reason,
        // A reason the engine added after this renderer was written.
        _ => reason.as_str(),
    })
}

/// Escalation's endings, in words (`None` for one added after this renderer was written).
pub(crate) fn story_end_sentence(end: StoryEnd, words: TaskWords) -> Option<String> {
    let one = words.one;
    Some(
        match end {
            StoryEnd::StoriesDone => return Some(format!("every {one} passes")),
            StoryEnd::StoriesBlocked => {
                return Some(format!("no {one} left to do; some are blocked"));
            }
            StoryEnd::CircuitOpen => "circuit breaker open: the work was logged and reverted",
            StoryEnd::MaxIterationsWorkLeft => "reached max_iterations",
            StoryEnd::WorkLeft => {
                return Some(format!(
                    "{} are left that cannot start: they depend on one blocked or not in the list",
                    words.many
                ));
            }
            StoryEnd::TaskPassed => "the task passes",
            StoryEnd::TaskBlocked => "the task is blocked",
            _ => return None,
        }
        .into(),
    )
}

/// ` · 98.7k tokens in (88.4k cached), 1.5k out · $0.30 · 13 turns`: only agents whose adapter
/// reports them (Claude's stream-json) have these.
fn spent(usage: Option<&Usage>, cost_usd: Option<f64>, num_turns: Option<u64>) -> String {
    let mut spent = usage.map(tokens).unwrap_or_default();
    if let Some(cost) = cost_usd {
        spent.push_str(&format!(" · ${cost:.2}"));
    }
    if let Some(turns) = num_turns {
        let s = if turns == 1 { "" } else { "s" };
        spent.push_str(&format!(" · {turns} turn{s}"));
    }
    spent
}

/// ` · 98.7k tokens in (88.4k cached), 1.5k out`, or nothing when no tokens were reported.
fn tokens(usage: &Usage) -> String {
    let (Some(input), Some(output)) = (usage.input_tokens, usage.output_tokens) else {
        return String::new();
    };
    let cached = match usage.cached_input_tokens {
        Some(c) if c > 0 => format!(" ({} cached)", compact(c)),
        _ => String::new(),
    };
    format!(
        " · {} tokens in{cached}, {} out",
        compact(input),
        compact(output)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentence(reason: &EndReason) -> String {
        end_sentence(reason, None, None, TaskWords::STORY).into_owned()
    }

    #[test]
    fn each_engine_reason_has_its_sentence() {
        let cases = [
            (EndReason::MaxIterations, "reached max_iterations"),
            (
                EndReason::MaxIterationsLastFailed,
                "reached max_iterations; the last run failed",
            ),
            (
                EndReason::IdleLimit,
                "idle limit reached (idle.max): the agent has nothing to do",
            ),
            (EndReason::Interrupted, "interrupted"),
            (
                EndReason::Cancelled,
                "cancelled by the program running the loop",
            ),
            (EndReason::AgentFailed, "the agent failed"),
            (
                EndReason::AgentFailing,
                "the agent kept failing (failure.max_consecutive runs in a row)",
            ),
            (
                EndReason::MaxCost,
                "max_cost reached: the agents' cost hit the budget",
            ),
            (EndReason::MaxRuntime, "max_runtime reached"),
            (
                EndReason::PtyIdleTimeout,
                "the agent printed nothing for idle_timeout (a safety stop)",
            ),
            (EndReason::Converged, "converged: every check passes"),
            (
                EndReason::MaxAttemptsReached,
                "not converged: max_attempts reached",
            ),
            (EndReason::AgentDone, "the agent reported done"),
        ];
        for (reason, want) in cases {
            assert_eq!(sentence(&reason), want, "{reason:?}");
        }
    }

    #[test]
    fn convergence_after_a_flake_says_how_many_attempts_failed_first() {
        let flaky = end_sentence(
            &EndReason::Converged,
            Some(Outcome::CleanWithFlake),
            Some(2),
            TaskWords::STORY,
        );
        assert_eq!(
            flaky,
            "converged: every check passes, after a failed attempt (flake_retries 2)"
        );
        let clean = end_sentence(
            &EndReason::Converged,
            Some(Outcome::Clean),
            Some(0),
            TaskWords::STORY,
        );
        assert_eq!(clean, "converged: every check passes");
    }

    #[test]
    fn each_story_ending_has_its_sentence() {
        let cases = [
            (StoryEnd::StoriesDone, "every story passes"),
            (
                StoryEnd::StoriesBlocked,
                "no story left to do; some are blocked",
            ),
            (
                StoryEnd::CircuitOpen,
                "circuit breaker open: the work was logged and reverted",
            ),
            (StoryEnd::MaxIterationsWorkLeft, "reached max_iterations"),
            (
                StoryEnd::WorkLeft,
                "stories are left that cannot start: they depend on one blocked or not in the list",
            ),
            (StoryEnd::TaskPassed, "the task passes"),
            (StoryEnd::TaskBlocked, "the task is blocked"),
        ];
        for (end, want) in cases {
            assert_eq!(sentence(&end.reason()), want, "{end:?}");
        }
        // A list of tasks (a Markdown checklist, GitHub issues) says "task".
        let done = StoryEnd::StoriesDone.reason();
        assert_eq!(
            end_sentence(&done, None, None, TaskWords::TASK),
            "every task passes"
        );
    }

    #[test]
    fn a_task_reason_escalation_does_not_know_is_its_wire_string() {
        let closed = EndReason::Task {
            reason: "issues_closed".into(),
            exit_code: 0,
            converged: true,
            resumable: false,
        };
        assert_eq!(sentence(&closed), "issues_closed");
        // Another source's reason is its own even where it spells an engine reason.
        let own = EndReason::Task {
            reason: "max_iterations".into(),
            exit_code: 1,
            converged: false,
            resumable: true,
        };
        assert_eq!(sentence(&own), "max_iterations");
    }

    #[test]
    fn a_declared_state_ends_the_run_under_its_own_name_even_one_spelling_an_engine_reason() {
        let stop = EndReason::State {
            reason: "max_cost".into(),
            exit_code: 3,
        };
        assert_eq!(sentence(&stop), "max_cost");
        let handler = EndReason::State {
            reason: "converged".into(),
            exit_code: 0,
        };
        assert_eq!(sentence(&handler), "converged");
    }

    #[test]
    fn the_agents_spending_lists_tokens_cost_and_turns_that_were_reported() {
        let mut usage = Usage::default();
        usage.input_tokens = Some(98_700);
        usage.output_tokens = Some(1_500);
        usage.cached_input_tokens = Some(88_400);
        assert_eq!(
            spent(Some(&usage), Some(0.3018), Some(13)),
            " · 98.7k tokens in (88.4k cached), 1.5k out · $0.30 · 13 turns"
        );
        assert_eq!(spent(None, None, Some(1)), " · 1 turn");
        assert_eq!(spent(None, None, None), "");
    }
}
