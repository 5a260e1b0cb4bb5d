//! What the loop does after an iteration, decided from facts alone (no clock, no I/O, no
//! state), so each way an iteration ends or waits is tested here. The engine gathers the facts
//! in three places: the iteration's own ending, the agent run's failure or rate limit, then
//! the run's limits.

use std::time::Duration;

use ralph_backoff::FailureDecision;

use super::Next;
use crate::convergence::Verdict;
use crate::event::WaitReason;
use crate::outcome::EndReason;
use crate::state::StateDecision;
#[cfg(test)]
use crate::state::StateWait;

/// How an iteration ended, for [`iteration_step`].
#[derive(Debug, Clone)]
pub(super) struct IterationFacts {
    /// The `done_when` attempt's verdict; `None` when no checks ran.
    pub(super) verdict: Option<Verdict>,
    /// What the state handlers decided.
    pub(super) decision: StateDecision,
    /// A stop-now interrupt came during the iteration.
    pub(super) stop_now: bool,
    /// `stop_on_error` is set.
    pub(super) stop_on_error: bool,
    /// The agent run failed.
    pub(super) failed: bool,
}

/// What comes after an iteration, from its checks' verdict and its state's decision.
pub(super) fn iteration_step(facts: IterationFacts) -> Next {
    match (facts.verdict, facts.decision) {
        (_, StateDecision::Stop(reason)) => Next::Stop(reason),
        (Some(Verdict::Converged), _) => Next::Stop(EndReason::Converged),
        (Some(Verdict::Exhausted), _) => Next::Stop(EndReason::MaxAttemptsReached),
        (_, _) if facts.stop_now => Next::Stop(EndReason::Interrupted),
        // With done_when the checks judge the work; the agent's exit code is only logged.
        // Silence ending an interactive iteration is its normal end, not a failure. A state
        // the agent reported (idle, say) does not make a failed run a success: no wait.
        (None, StateDecision::Continue | StateDecision::Wait(_) | StateDecision::Hold(_))
            if facts.stop_on_error && facts.failed =>
        {
            Next::Stop(EndReason::AgentFailed)
        }
        (Some(Verdict::Retry(wait)), _) => Next::Wait(wait, WaitReason::Retry),
        // The handler says what its wait is: `idle`'s are idle waits, its streak the countdown's.
        (None, StateDecision::Wait(wait)) => Next::Wait(wait.delay, wait.reason),
        // The run holds before the next iteration (`Run::holding`): from here, it goes on.
        (None, StateDecision::Continue | StateDecision::Hold(_)) => Next::Continue,
    }
}

/// How the last agent run went, for [`agent_step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AgentFacts {
    /// It did not fail.
    Succeeded,
    /// It is rate-limited: wait this long (until the reset, at most `rate_limit.max_wait`).
    RateLimited(Duration),
    /// It is rate-limited, and another agent (`fallback`) runs the next iteration.
    Switching,
    /// It failed, and the failure streak decided this.
    Failed(FailureDecision),
}

/// Folds the last agent run's failure or rate limit into `next`: a rate limit waits for its
/// reset, a failure backs off (at least `delay`) or ends the loop. An ending stands.
pub(super) fn agent_step(next: Next, agent: AgentFacts, delay: Duration) -> Next {
    match (next, agent) {
        (Next::Stop(reason), _) => Next::Stop(reason),
        (_, AgentFacts::RateLimited(wait)) => Next::Wait(wait, WaitReason::RateLimit),
        // No work was done: the next agent runs after the usual delay, whatever the state.
        (_, AgentFacts::Switching) => Next::Continue,
        (next, AgentFacts::Succeeded) => next,
        (_, AgentFacts::Failed(FailureDecision::Stop { .. })) => {
            Next::Stop(EndReason::AgentFailing)
        }
        // A wait the iteration asked for (a convergence retry, say) is kept when longer.
        (Next::Wait(other, _), AgentFacts::Failed(FailureDecision::Wait { delay, .. })) => {
            Next::Wait(delay.max(other), WaitReason::Failure)
        }
        (Next::Continue, AgentFacts::Failed(FailureDecision::Wait { delay: backoff, .. })) => {
            Next::Wait(backoff.max(delay), WaitReason::Failure)
        }
    }
}

/// The run's limits after an iteration, for [`limit_step`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Limits {
    /// A Ctrl+C asked to stop after the iteration.
    pub(super) stop_requested: bool,
    /// The iteration was the last `max_iterations` allows.
    pub(super) last_iteration: bool,
    /// A budget (`max_cost`, `max_runtime`) is spent.
    pub(super) budget_spent: Option<EndReason>,
}

/// `next`, unless a limit ends the loop. An ending the iteration reached (converged, say)
/// stands even when a Ctrl+C asked to stop after it.
pub(super) fn limit_step(next: Next, limits: Limits) -> Next {
    match next {
        Next::Stop(reason) => Next::Stop(reason),
        _ if limits.stop_requested => Next::Stop(EndReason::Interrupted),
        _ if limits.last_iteration => Next::Stop(EndReason::MaxIterations),
        next => match limits.budget_spent {
            Some(reason) => Next::Stop(reason),
            None => next,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// An iteration that ran no checks, did not fail and reported no state.
    fn plain() -> IterationFacts {
        IterationFacts {
            verdict: None,
            decision: StateDecision::Continue,
            stop_now: false,
            stop_on_error: false,
            failed: false,
        }
    }

    #[test]
    fn a_plain_iteration_continues() {
        assert_eq!(iteration_step(plain()), Next::Continue);
    }

    #[test]
    fn a_state_that_stops_ends_the_loop_even_when_the_checks_passed() {
        let facts = IterationFacts {
            verdict: Some(Verdict::Converged),
            decision: StateDecision::Stop(EndReason::AgentDone),
            ..plain()
        };
        assert_eq!(iteration_step(facts), Next::Stop(EndReason::AgentDone));
    }

    #[test]
    fn passing_checks_end_the_loop_as_converged() {
        let facts = IterationFacts {
            verdict: Some(Verdict::Converged),
            stop_now: true,
            ..plain()
        };
        assert_eq!(iteration_step(facts), Next::Stop(EndReason::Converged));
    }

    #[test]
    fn the_last_failed_attempt_ends_the_loop() {
        let facts = IterationFacts {
            verdict: Some(Verdict::Exhausted),
            ..plain()
        };
        assert_eq!(
            iteration_step(facts),
            Next::Stop(EndReason::MaxAttemptsReached)
        );
    }

    #[test]
    fn a_stop_now_interrupt_ends_the_loop_before_a_retry() {
        let facts = IterationFacts {
            verdict: Some(Verdict::Retry(SECOND)),
            stop_now: true,
            ..plain()
        };
        assert_eq!(iteration_step(facts), Next::Stop(EndReason::Interrupted));
    }

    #[test]
    fn stop_on_error_ends_the_loop_on_a_failed_run_even_in_a_waiting_state() {
        let facts = IterationFacts {
            decision: StateDecision::Wait(StateWait::new(SECOND).reason(WaitReason::Idle)),
            stop_on_error: true,
            failed: true,
            ..plain()
        };
        assert_eq!(iteration_step(facts), Next::Stop(EndReason::AgentFailed));
    }

    #[test]
    fn with_checks_a_failed_run_is_judged_by_them_not_by_stop_on_error() {
        let facts = IterationFacts {
            verdict: Some(Verdict::Retry(SECOND)),
            stop_on_error: true,
            failed: true,
            ..plain()
        };
        assert_eq!(iteration_step(facts), Next::Wait(SECOND, WaitReason::Retry));
    }

    #[test]
    fn a_wait_is_what_its_handler_calls_it() {
        let idle = IterationFacts {
            decision: StateDecision::Wait(StateWait::new(SECOND).reason(WaitReason::Idle)),
            ..plain()
        };
        assert_eq!(iteration_step(idle), Next::Wait(SECOND, WaitReason::Idle));
        let other = IterationFacts {
            decision: StateDecision::wait(SECOND),
            ..plain()
        };
        assert_eq!(iteration_step(other), Next::Wait(SECOND, WaitReason::State));
    }

    fn failed(delay: Duration) -> AgentFacts {
        AgentFacts::Failed(FailureDecision::Wait {
            delay,
            consecutive: 1,
        })
    }

    #[test]
    fn a_rate_limit_waits_for_its_reset_but_an_ending_stands() {
        let limited = AgentFacts::RateLimited(5 * SECOND);
        assert_eq!(
            agent_step(Next::Continue, limited, SECOND),
            Next::Wait(5 * SECOND, WaitReason::RateLimit)
        );
        assert_eq!(
            agent_step(Next::Wait(SECOND, WaitReason::Idle), limited, SECOND),
            Next::Wait(5 * SECOND, WaitReason::RateLimit)
        );
        let stop = Next::Stop(EndReason::Converged);
        assert_eq!(agent_step(stop.clone(), limited, SECOND), stop);
    }

    #[test]
    fn a_rate_limit_another_agent_takes_over_continues_but_an_ending_stands() {
        let idle = Next::Wait(5 * SECOND, WaitReason::Idle);
        assert_eq!(
            agent_step(idle, AgentFacts::Switching, SECOND),
            Next::Continue
        );
        let stop = Next::Stop(EndReason::AgentDone);
        assert_eq!(
            agent_step(stop.clone(), AgentFacts::Switching, SECOND),
            stop
        );
    }

    #[test]
    fn a_run_that_did_not_fail_keeps_what_the_iteration_decided() {
        let wait = Next::Wait(SECOND, WaitReason::Idle);
        assert_eq!(
            agent_step(wait.clone(), AgentFacts::Succeeded, SECOND),
            wait
        );
    }

    #[test]
    fn a_failure_backs_off_at_least_the_delay() {
        assert_eq!(
            agent_step(Next::Continue, failed(2 * SECOND), 3 * SECOND),
            Next::Wait(3 * SECOND, WaitReason::Failure)
        );
        assert_eq!(
            agent_step(Next::Continue, failed(4 * SECOND), 3 * SECOND),
            Next::Wait(4 * SECOND, WaitReason::Failure)
        );
    }

    #[test]
    fn a_failure_keeps_a_longer_wait_the_iteration_asked_for() {
        let retry = Next::Wait(9 * SECOND, WaitReason::Retry);
        assert_eq!(
            agent_step(retry, failed(2 * SECOND), 20 * SECOND),
            Next::Wait(9 * SECOND, WaitReason::Failure)
        );
    }

    #[test]
    fn too_many_failures_in_a_row_end_the_loop_unless_it_already_ends() {
        let stop = AgentFacts::Failed(FailureDecision::Stop { consecutive: 3 });
        assert_eq!(
            agent_step(Next::Continue, stop, SECOND),
            Next::Stop(EndReason::AgentFailing)
        );
        let converged = Next::Stop(EndReason::Converged);
        assert_eq!(agent_step(converged.clone(), stop, SECOND), converged);
    }

    const NO_LIMIT: Limits = Limits {
        stop_requested: false,
        last_iteration: false,
        budget_spent: None,
    };

    #[test]
    fn within_the_limits_the_step_stands() {
        let wait = Next::Wait(SECOND, WaitReason::Delay);
        assert_eq!(limit_step(wait.clone(), NO_LIMIT), wait);
    }

    #[test]
    fn a_ctrl_c_after_the_iteration_stops_but_an_ending_reached_stands() {
        let limits = Limits {
            stop_requested: true,
            last_iteration: true,
            ..NO_LIMIT
        };
        assert_eq!(
            limit_step(Next::Continue, limits.clone()),
            Next::Stop(EndReason::Interrupted)
        );
        let converged = Next::Stop(EndReason::Converged);
        assert_eq!(limit_step(converged.clone(), limits), converged);
    }

    #[test]
    fn the_last_allowed_iteration_ends_the_loop_with_no_wait() {
        let limits = Limits {
            last_iteration: true,
            budget_spent: Some(EndReason::MaxCost),
            ..NO_LIMIT
        };
        assert_eq!(
            limit_step(Next::Wait(SECOND, WaitReason::Failure), limits),
            Next::Stop(EndReason::MaxIterations)
        );
    }

    #[test]
    fn a_spent_budget_ends_the_loop() {
        let limits = Limits {
            budget_spent: Some(EndReason::MaxRuntime),
            ..NO_LIMIT
        };
        assert_eq!(
            limit_step(Next::Continue, limits),
            Next::Stop(EndReason::MaxRuntime)
        );
    }
}
