//! Each agent of a run with fallback agents, rebuilt from its events: the iterations it ran,
//! what they cost, and its last rate limit (`ralph report`).

use std::time::SystemTime;

use serde::Serialize;

use crate::event::{Event, EventKind};
use crate::usage::RunCost;

/// One agent of a run: `agent`, or a `fallback` agent that ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AgentUse {
    /// Its command line, as written.
    pub agent: String,
    /// The iterations it ran.
    pub iterations: u64,
    /// What they cost, each of its sessions counted once, when it reported a cost.
    pub cost_usd: Option<f64>,
    /// When its last rate limit resets (RFC 3339), if it was limited.
    pub limited_until: Option<String>,
}

/// Follows the agent that runs through a run's events.
#[derive(Debug, Default)]
pub(super) struct AgentTally {
    agents: Vec<(String, u64, RunCost, Option<SystemTime>)>,
    current: usize,
}

impl AgentTally {
    fn select(&mut self, line: &str) {
        self.current = match self.agents.iter().position(|a| a.0 == line) {
            Some(i) => i,
            None => {
                self.agents
                    .push((line.to_owned(), 0, RunCost::default(), None));
                self.agents.len() - 1
            }
        };
    }

    /// Takes in one event of the run, in order.
    pub(super) fn event(&mut self, event: &Event) {
        match &event.kind {
            // A run, or a resumed part of it, starts with `agent`; `AGENT_SWITCHED` follows
            // when another runs.
            EventKind::RunStarted { agent, .. } => self.select(agent),
            EventKind::AgentSwitched { to, .. } => self.select(to),
            EventKind::IterationStarted { .. } => {
                if let Some(agent) = self.agents.get_mut(self.current) {
                    agent.1 += 1;
                }
            }
            EventKind::IterationEnded {
                usage: Some(usage), ..
            } => {
                if let Some(agent) = self.agents.get_mut(self.current) {
                    agent.2.record(usage);
                }
            }
            EventKind::RateLimited { until, .. } => {
                if let Some(agent) = self.agents.get_mut(self.current) {
                    agent.3 = Some(*until);
                }
            }
            // The engine counts on from each agent's cost so far: a session from before the
            // stop counts afresh.
            EventKind::RunResumed { .. } => {
                for agent in &mut self.agents {
                    agent.2 = RunCost::resumed(agent.2.total());
                }
            }
            _ => {}
        }
    }

    /// The agents, in the order they first ran; empty when only one did.
    pub(super) fn finish(self) -> Vec<AgentUse> {
        if self.agents.len() < 2 {
            return Vec::new();
        }
        self.agents
            .into_iter()
            .map(|(agent, iterations, cost, until)| AgentUse {
                agent,
                iterations,
                cost_usd: cost.total(),
                limited_until: until.map(|t| humantime::format_rfc3339_seconds(t).to_string()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_has_its_iterations_cost_and_limit() {
        let text = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED","agent":"claude -p"}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":1,"termination":"natural","usage":{"cost_usd":0.1}}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"RATE_LIMITED","iteration":1,"until":"2026-01-01T01:00:00Z","wait_ms":0}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"AGENT_SWITCHED","iteration":2,"from":"claude -p","to":"codex exec","why":"rate_limited","until":"2026-01-01T01:00:00Z"}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":2}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":2,"exit_code":0,"termination":"natural","usage":{"cost_usd":0.25}}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":3}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":3,"exit_code":0,"termination":"natural","usage":{"cost_usd":0.5}}
"#;
        let mut tally = AgentTally::default();
        for event in crate::run_folder::parse_events(text.as_bytes()) {
            tally.event(&event);
        }
        let agents = tally.finish();
        assert_eq!(agents.len(), 2);
        assert_eq!((agents[0].iterations, agents[0].cost_usd), (1, Some(0.1)));
        assert_eq!(
            agents[0].limited_until.as_deref(),
            Some("2026-01-01T01:00:00Z")
        );
        assert_eq!(
            (
                agents[1].iterations,
                agents[1].cost_usd,
                &agents[1].limited_until
            ),
            (2, Some(0.75), &None)
        );
    }
}
