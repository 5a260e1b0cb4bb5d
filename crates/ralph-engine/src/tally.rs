//! The loop's counts, kept once: [`Tally`].

use std::time::Duration;

use ralph_agents::{SessionTokens, Usage};
use serde::{Deserialize, Serialize};

/// What a run has counted so far: its iterations, its idle ones and their time, the failure
/// streak, and what the agents reported spending. The loop updates these in one place as it
/// goes; `RUN_ENDED` reports them, and the session file ([`Session`](crate::session::Session))
/// writes them flat, so a resumed run takes them up exactly as they were.
///
/// ```
/// use ralph_engine::session::Tally;
///
/// let mut tally = Tally::default();
/// tally.iteration = 3;
/// tally.consecutive_failures = 2;
/// let json = serde_json::to_value(&tally).unwrap();
/// assert_eq!(json["iteration"], 3);
/// assert_eq!(json["consecutive_failures"], 2);
/// assert_eq!(serde_json::from_value::<Tally>(json).unwrap(), tally);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "TallyRecord", into = "TallyRecord")]
#[non_exhaustive]
pub struct Tally {
    /// The last iteration started; a resumed run goes on with the next.
    pub iteration: u64,
    /// Idle iterations so far.
    pub idle_iterations: u64,
    /// Time spent in idle waits so far.
    pub idle_time: Duration,
    /// Failed agent runs in a row (the failure streak).
    pub consecutive_failures: u64,
    /// The last agent run failed: a `max_iterations` ending after it is a failure.
    pub last_failed: bool,
    /// The agents' reported usage summed over the run, `None` until one reports any. Its
    /// `cost_usd` is the run's cost, each agent session counted once
    /// ([`RunCost`](ralph_agents::RunCost)).
    pub usage: Option<Usage>,
    /// The last agent session's token running totals (Codex's thread), so the first agent run
    /// after a resume that goes on with it counts only what it added.
    pub agent_session_tokens: SessionTokens,
}

impl Tally {
    /// The run's cost so far, when an agent reported one.
    #[must_use]
    pub fn cost_usd(&self) -> Option<f64> {
        self.usage.as_ref().and_then(|u| u.cost_usd)
    }

    /// The agents' reported turns so far.
    #[must_use]
    pub fn num_turns(&self) -> Option<u64> {
        self.usage.as_ref().and_then(|u| u.num_turns)
    }

    /// Adds one agent run's `usage`; `run_cost` is the run's cost with it counted.
    pub(crate) fn add_usage(&mut self, usage: &Usage, run_cost: Option<f64>) {
        let total = self.usage.get_or_insert_with(Usage::default);
        total.add(usage);
        total.cost_usd = run_cost;
    }
}

/// The session file's flat keys for a [`Tally`], as every version of the file has them.
#[derive(Serialize, Deserialize)]
struct TallyRecord {
    iteration: u64,
    idle_iterations: u64,
    idle_ms: u64,
    cost_usd: Option<f64>,
    num_turns: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cached_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "SessionTokens::is_empty")]
    agent_session_tokens: SessionTokens,
    consecutive_failures: u64,
    last_failed: bool,
}

impl From<TallyRecord> for Tally {
    fn from(record: TallyRecord) -> Self {
        let mut usage = Usage::default();
        usage.cost_usd = record.cost_usd;
        usage.num_turns = record.num_turns;
        usage.input_tokens = record.input_tokens;
        usage.output_tokens = record.output_tokens;
        usage.cached_input_tokens = record.cached_input_tokens;
        usage.reasoning_tokens = record.reasoning_tokens;
        Self {
            iteration: record.iteration,
            idle_iterations: record.idle_iterations,
            idle_time: Duration::from_millis(record.idle_ms),
            consecutive_failures: record.consecutive_failures,
            last_failed: record.last_failed,
            usage: (usage != Usage::default()).then_some(usage),
            agent_session_tokens: record.agent_session_tokens,
        }
    }
}

impl From<Tally> for TallyRecord {
    fn from(tally: Tally) -> Self {
        let usage = tally.usage.unwrap_or_default();
        Self {
            iteration: tally.iteration,
            idle_iterations: tally.idle_iterations,
            idle_ms: crate::state::millis(tally.idle_time),
            cost_usd: usage.cost_usd,
            num_turns: usage.num_turns,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            reasoning_tokens: usage.reasoning_tokens,
            agent_session_tokens: tally.agent_session_tokens,
            consecutive_failures: tally.consecutive_failures,
            last_failed: tally.last_failed,
        }
    }
}
