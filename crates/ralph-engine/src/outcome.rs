//! How a run ends: its reason and exit code, computed from the loop's state in one place.

pub use ralph_process::InterruptSignal;
use serde::{Deserialize, Serialize};

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndReason {
    /// `max_iterations` iterations ran.
    MaxIterations,
    /// The idle streak would have passed `idle.max`.
    IdleLimit,
    /// The user stopped the loop (Ctrl+C or SIGTERM).
    Interrupted,
    /// The embedder cancelled the run ([`RunHandle::cancel`](crate::RunHandle::cancel)): no
    /// signal involved, exit code 1 (work may be left), resumable.
    Cancelled,
    /// The agent failed or timed out and `--stop-on-error` was given.
    AgentFailed,
    /// Every `done_when` check passed.
    Converged,
    /// `convergence.max_attempts` attempts ran and the checks still fail.
    MaxAttemptsReached,
    /// PTY autonomous mode: the agent printed nothing for `idle_timeout`, a safety stop.
    PtyIdleTimeout,
    /// The task source ended the run for a reason of its own (ralph-escalation:
    /// `stories_done`, `stories_blocked`, `circuit_open`, `max_iterations_work_left`).
    Task {
        /// The reason as it appears in `RUN_ENDED`.
        reason: String,
        /// The exit code (unless a signal interrupted the run).
        exit_code: i32,
        /// Whether the work is done, as convergence would have it: `RUN_ENDED`'s `outcome` is
        /// `clean` or `clean_with_flake`, not `failed`.
        converged: bool,
        /// Whether `ralph run --resume` makes sense after it (work is left).
        resumable: bool,
    },
    /// The agent reported `<!-- ralph:state done -->` (or its `completion_signal`) and no
    /// `done_when` check or task source had a say.
    AgentDone,
    /// `failure.max_consecutive` agent runs failed in a row.
    AgentFailing,
    /// The agents' reported cost reached `max_cost`.
    MaxCost,
    /// The run lasted `max_runtime`.
    MaxRuntime,
    /// `max_iterations` iterations ran and the last one failed. Reported as `max_iterations`,
    /// but a failure: the agent was failing when the loop ended.
    MaxIterationsLastFailed,
    /// A state handler stopped the loop with its own reason and exit code: a state declared in
    /// RALPH.md (`states`, `then: stop`, reason the state's name) or an embedder's handler.
    State {
        /// The reason as it appears in `RUN_ENDED`.
        reason: String,
        /// The exit code (unless a signal interrupted the run); anything but 0 is a failure.
        exit_code: i32,
    },
    /// Read back from an events file: an ending the engine does not name itself, a task
    /// source's, a declared state's (the events do not say which) or a later version's. The
    /// engine never ends a run with it.
    Other {
        /// The reason as it appears in `RUN_ENDED`.
        reason: String,
        /// `RUN_ENDED`'s exit code.
        exit_code: i32,
    },
}

impl EndReason {
    /// The reason as written in events: `max_iterations`, `idle_limit`, ...
    pub fn as_str(&self) -> &str {
        match self {
            EndReason::MaxIterations => "max_iterations",
            EndReason::Task { reason, .. } => reason,
            EndReason::IdleLimit => "idle_limit",
            EndReason::Interrupted => "interrupted",
            EndReason::Cancelled => "cancelled",
            EndReason::AgentFailed => "agent_failed",
            EndReason::Converged => "converged",
            EndReason::MaxAttemptsReached => "max_attempts_reached",
            EndReason::PtyIdleTimeout => "pty_idle_timeout",
            EndReason::AgentFailing => "agent_failing",
            EndReason::MaxCost => "max_cost",
            EndReason::MaxRuntime => "max_runtime",
            EndReason::MaxIterationsLastFailed => "max_iterations",
            EndReason::State { reason, .. } | EndReason::Other { reason, .. } => reason,
            EndReason::AgentDone => "agent_done",
        }
    }

    /// The ending `RUN_ENDED` names `reason`: the engine's own ending by that name, else
    /// [`EndReason::Other`] with exit code 0 until the event's is known.
    fn read(reason: String) -> Self {
        const OWN: [EndReason; 12] = [
            EndReason::MaxIterations,
            EndReason::IdleLimit,
            EndReason::Interrupted,
            EndReason::Cancelled,
            EndReason::AgentFailed,
            EndReason::Converged,
            EndReason::MaxAttemptsReached,
            EndReason::PtyIdleTimeout,
            EndReason::AgentDone,
            EndReason::AgentFailing,
            EndReason::MaxCost,
            EndReason::MaxRuntime,
        ];
        OWN.into_iter()
            .find(|own| own.as_str() == reason)
            .unwrap_or(EndReason::Other {
                reason,
                exit_code: 0,
            })
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EndReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EndReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(EndReason::read)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for EndReason {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EndReason".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Open: a task source or a declared state brings reasons of its own.
        schemars::json_schema!({
            "type": "string",
            "description": "Why the run ended: `max_iterations`, `converged`, ..., a declared \
                            state's name, or a task source's own reason (docs/events.md)."
        })
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunOutcome {
    /// Why it ended.
    pub reason: EndReason,
    /// The exit code a CLI should use.
    pub exit_code: i32,
    /// Iterations run.
    pub iterations: u64,
    /// Idle iterations among them.
    pub idle_iterations: u64,
    /// Total time spent in idle waits.
    pub idle_time: std::time::Duration,
    /// The run's id (a resumed run keeps its own).
    pub run_id: String,
    /// The run's log folder, if it wrote logs.
    pub log_dir: Option<std::path::PathBuf>,
    /// The tokens the agents reported over the whole run, if any did (`RUN_ENDED`'s `usage`).
    pub usage: Option<ralph_agents::Usage>,
    /// What the agents reported spending, in US dollars, each agent session counted once;
    /// `None` when none reported a cost.
    pub cost_usd: Option<f64>,
    /// Whether the run may go on ([`EngineOptions::resume`](crate::EngineOptions::resume)):
    /// it was stopped (interrupted, cancelled, a limit reached, work left), not ended by itself.
    pub resumable: bool,
}

/// The budget that is spent, if one is: the cost reported so far reached `max_cost` (no cost
/// reported reaches none), or the run lasted `max_runtime`.
///
/// The one budget rule: a loop's, and a parallel run's over all its lanes.
pub fn budget_spent(
    max_cost: Option<f64>,
    cost: Option<f64>,
    max_runtime: Option<std::time::Duration>,
    elapsed: std::time::Duration,
) -> Option<EndReason> {
    if let (Some(max), Some(cost)) = (max_cost, cost) {
        if cost >= max {
            return Some(EndReason::MaxCost);
        }
    }
    match max_runtime {
        Some(max) if elapsed >= max => Some(EndReason::MaxRuntime),
        _ => None,
    }
}

/// The exit code for an ending: 0 a normal end, 1 a failure, 130 SIGINT, 143 SIGTERM, 129
/// SIGHUP.
///
/// This is the one place that maps endings to exit codes.
pub fn exit_code(reason: &EndReason, signal: Option<InterruptSignal>) -> i32 {
    match (reason, signal) {
        (EndReason::Interrupted, Some(InterruptSignal::Term)) => 143,
        (EndReason::Interrupted, Some(InterruptSignal::Hup)) => 129,
        (EndReason::Interrupted, _) => 130,
        (
            EndReason::AgentFailed
            | EndReason::MaxAttemptsReached
            | EndReason::PtyIdleTimeout
            | EndReason::Cancelled,
            _,
        ) => 1,
        (EndReason::Task { exit_code, .. }, _) => *exit_code,
        (
            EndReason::AgentFailing
            | EndReason::MaxCost
            | EndReason::MaxRuntime
            | EndReason::MaxIterationsLastFailed,
            _,
        ) => 1,
        (EndReason::State { exit_code, .. } | EndReason::Other { exit_code, .. }, _) => *exit_code,
        (EndReason::AgentDone, _) => 0,
        (EndReason::MaxIterations | EndReason::IdleLimit | EndReason::Converged, _) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine's own name for `reason`, or `None` for a reason a task source or a state
    /// brings. No wildcard: a new ending must be sorted here.
    fn own_reason(reason: &EndReason) -> Option<&str> {
        match reason {
            EndReason::Task { .. } | EndReason::State { .. } | EndReason::Other { .. } => None,
            EndReason::MaxIterations
            | EndReason::IdleLimit
            | EndReason::Interrupted
            | EndReason::Cancelled
            | EndReason::AgentFailed
            | EndReason::Converged
            | EndReason::MaxAttemptsReached
            | EndReason::PtyIdleTimeout
            | EndReason::AgentDone
            | EndReason::AgentFailing
            | EndReason::MaxCost
            | EndReason::MaxRuntime
            | EndReason::MaxIterationsLastFailed => Some(reason.as_str()),
        }
    }

    #[test]
    fn every_ending_of_the_engine_is_a_name_states_cannot_take() {
        use ralph_frontmatter::schema::BUILT_IN_END_REASONS;
        let own = [
            EndReason::MaxIterations,
            EndReason::IdleLimit,
            EndReason::Interrupted,
            EndReason::AgentFailed,
            EndReason::Converged,
            EndReason::MaxAttemptsReached,
            EndReason::PtyIdleTimeout,
            EndReason::AgentDone,
            EndReason::AgentFailing,
            EndReason::MaxCost,
            EndReason::MaxRuntime,
            EndReason::MaxIterationsLastFailed,
        ];
        for reason in &own {
            let name = own_reason(reason).expect("the engine's own ending");
            assert!(BUILT_IN_END_REASONS.contains(&name), "{name}");
        }
    }

    #[test]
    fn max_iterations_is_a_normal_end() {
        assert_eq!(exit_code(&EndReason::MaxIterations, None), 0);
    }

    #[test]
    fn idle_limit_is_a_normal_end() {
        assert_eq!(exit_code(&EndReason::IdleLimit, None), 0);
    }

    #[test]
    fn interrupted_by_ctrl_c_exits_130() {
        assert_eq!(
            exit_code(&EndReason::Interrupted, Some(InterruptSignal::Int)),
            130
        );
    }

    #[test]
    fn interrupted_by_sigterm_exits_143() {
        assert_eq!(
            exit_code(&EndReason::Interrupted, Some(InterruptSignal::Term)),
            143
        );
    }

    #[test]
    fn interrupted_by_sighup_exits_129() {
        assert_eq!(
            exit_code(&EndReason::Interrupted, Some(InterruptSignal::Hup)),
            129
        );
    }

    #[test]
    fn agent_failed_exits_1() {
        assert_eq!(exit_code(&EndReason::AgentFailed, None), 1);
    }

    #[test]
    fn converged_is_a_normal_end() {
        assert_eq!(exit_code(&EndReason::Converged, None), 0);
    }

    #[test]
    fn max_attempts_reached_exits_1() {
        assert_eq!(exit_code(&EndReason::MaxAttemptsReached, None), 1);
    }

    #[test]
    fn pty_idle_timeout_is_a_safety_stop_exiting_1() {
        assert_eq!(exit_code(&EndReason::PtyIdleTimeout, None), 1);
        assert_eq!(EndReason::PtyIdleTimeout.as_str(), "pty_idle_timeout");
    }

    #[test]
    fn a_task_source_ending_exits_with_its_own_code_unless_interrupted() {
        let end = EndReason::Task {
            reason: "issues_closed".into(),
            exit_code: 3,
            converged: true,
            resumable: false,
        };
        assert_eq!(exit_code(&end, None), 3);
        assert_eq!(end.as_str(), "issues_closed");
    }

    #[test]
    fn agent_failing_exits_1() {
        assert_eq!(exit_code(&EndReason::AgentFailing, None), 1);
        assert_eq!(EndReason::AgentFailing.as_str(), "agent_failing");
    }

    #[test]
    fn max_cost_exits_1() {
        assert_eq!(exit_code(&EndReason::MaxCost, None), 1);
        assert_eq!(EndReason::MaxCost.as_str(), "max_cost");
    }

    #[test]
    fn a_budget_is_spent_once_the_cost_reaches_it_or_the_time_runs_out() {
        use std::time::Duration;
        let minute = Duration::from_secs(60);
        assert_eq!(budget_spent(Some(1.0), Some(0.99), None, minute), None);
        assert_eq!(
            budget_spent(Some(1.0), Some(1.0), Some(minute), minute),
            Some(EndReason::MaxCost)
        );
        // No cost reported reaches no cost budget.
        assert_eq!(budget_spent(Some(0.0), None, None, minute), None);
        assert_eq!(
            budget_spent(None, Some(5.0), Some(minute), minute),
            Some(EndReason::MaxRuntime)
        );
        assert_eq!(budget_spent(None, None, Some(minute), minute / 2), None);
    }

    #[test]
    fn max_runtime_exits_1() {
        assert_eq!(exit_code(&EndReason::MaxRuntime, None), 1);
        assert_eq!(EndReason::MaxRuntime.as_str(), "max_runtime");
    }

    #[test]
    fn max_iterations_ending_on_a_failed_run_is_reported_as_max_iterations_and_exits_1() {
        assert_eq!(exit_code(&EndReason::MaxIterationsLastFailed, None), 1);
        assert_eq!(
            EndReason::MaxIterationsLastFailed.as_str(),
            "max_iterations"
        );
    }

    #[test]
    fn agent_done_is_a_normal_end() {
        assert_eq!(exit_code(&EndReason::AgentDone, None), 0);
        assert_eq!(EndReason::AgentDone.as_str(), "agent_done");
    }

    #[test]
    fn a_state_stop_exits_with_its_own_exit_code_and_names_its_reason() {
        let stop = |exit_code| EndReason::State {
            reason: "review".into(),
            exit_code,
        };
        assert_eq!(exit_code(&stop(0), None), 0);
        assert_eq!(exit_code(&stop(3), None), 3);
        assert_eq!(exit_code(&stop(255), None), 255);
        assert_eq!(stop(3).as_str(), "review");
        // A signal still wins.
        assert_eq!(
            exit_code(&EndReason::Interrupted, Some(InterruptSignal::Term)),
            143
        );
    }
}
