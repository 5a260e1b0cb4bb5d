//! How a run ends: [`RunOutcome`], and when a budget ends it ([`budget_spent`]). The ending's
//! reason and its exit code are wire types (`ralph_events::EndReason`,
//! `ralph_events::exit_code`).

pub use ralph_events::{EndReason, InterruptSignal, exit_code};

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn every_ending_of_the_engine_is_a_name_states_cannot_take() {
        use ralph_frontmatter::schema::BUILT_IN_END_REASONS;
        // ralph-events' own test keeps this list whole (`own_reason`, with no wildcard).
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
            assert!(BUILT_IN_END_REASONS.contains(&reason.as_str()), "{reason}");
        }
    }
}
