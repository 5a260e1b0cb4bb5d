//! How a run ends: its reason, and the exit code ralph gives it, in one place.

use serde::{Deserialize, Serialize};

use crate::process::InterruptSignal;

/// ralph's exit codes, each written once: every place that decides one (the engine's endings,
/// story mode's, a parallel run's, the CLI's refusals) names it from here.
pub mod exit {
    /// A normal end: the loop stopped by itself (a limit, convergence, every task done).
    pub const OK: i32 = 0;
    /// A failure while running: the agent failing, a budget reached, checks still failing,
    /// tasks blocked or work left.
    pub const FAILURE: i32 = 1;
    /// Bad usage or configuration, or a refusal before anything ran (a second loop in the
    /// folder, an invalid RALPH.md).
    pub const USAGE: i32 = 2;
    /// `ralph run --task ID`: the task is blocked. Told apart from a failure of the loop
    /// ([`FAILURE`]) and from bad usage ([`USAGE`]), so a CI job or a Kubernetes Job can tell
    /// "this task needs a person" from "this run broke".
    pub const TASK_BLOCKED: i32 = 3;
    /// Stopped by SIGHUP (128 + 1): ralph's terminal went away.
    pub const SIGHUP: i32 = 129;
    /// Stopped by SIGINT (128 + 2): Ctrl+C.
    pub const SIGINT: i32 = 130;
    /// Stopped by SIGTERM (128 + 15).
    pub const SIGTERM: i32 = 143;
}

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
    /// The embedder cancelled the run (`ralph_engine::RunHandle::cancel`): no signal involved,
    /// exit code 1 (work may be left), resumable.
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
    pub(crate) fn read(reason: String) -> Self {
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

/// The exit code for an ending: [`exit::OK`] a normal end, [`exit::FAILURE`] a failure,
/// [`exit::SIGINT`], [`exit::SIGTERM`] or [`exit::SIGHUP`] for the signal that stopped it.
///
/// This is the one place that maps endings to exit codes.
pub fn exit_code(reason: &EndReason, signal: Option<InterruptSignal>) -> i32 {
    match (reason, signal) {
        (EndReason::Interrupted, Some(InterruptSignal::Term)) => exit::SIGTERM,
        (EndReason::Interrupted, Some(InterruptSignal::Hup)) => exit::SIGHUP,
        (EndReason::Interrupted, _) => exit::SIGINT,
        (
            EndReason::AgentFailed
            | EndReason::MaxAttemptsReached
            | EndReason::PtyIdleTimeout
            | EndReason::Cancelled,
            _,
        ) => exit::FAILURE,
        (EndReason::Task { exit_code, .. }, _) => *exit_code,
        (
            EndReason::AgentFailing
            | EndReason::MaxCost
            | EndReason::MaxRuntime
            | EndReason::MaxIterationsLastFailed,
            _,
        ) => exit::FAILURE,
        (EndReason::State { exit_code, .. } | EndReason::Other { exit_code, .. }, _) => *exit_code,
        (EndReason::AgentDone, _) => exit::OK,
        (EndReason::MaxIterations | EndReason::IdleLimit | EndReason::Converged, _) => exit::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine's own name for `reason`, or `None` for a reason a task source or a state
    /// brings. No wildcard: a new ending must be sorted here (and listed in ralph-engine's
    /// `every_ending_of_the_engine_is_a_name_states_cannot_take`).
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
    fn every_own_ending_reads_back_as_the_engines_by_its_name() {
        let own = [
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
            EndReason::MaxIterationsLastFailed,
        ];
        for reason in &own {
            let name = own_reason(reason).expect("the engine's own ending");
            assert!(
                own_reason(&EndReason::read(name.to_owned())).is_some(),
                "{name}"
            );
        }
        assert_eq!(own_reason(&EndReason::read("review".to_owned())), None);
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
