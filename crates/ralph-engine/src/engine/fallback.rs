//! Which agent runs an iteration (`fallback`), said as an event when it changes.

use std::time::SystemTime;

use ralph_agents::SessionTokens;

use super::Run;
use crate::event::EventKind;

impl Run {
    /// Picks the agent of `iteration` ([`Roster::choose`](crate::fallback::Roster::choose));
    /// a change is `AGENT_SWITCHED`. The new agent starts afresh: the token totals of the
    /// other agent's session are not its own.
    pub(super) fn choose_agent(&mut self, iteration: u64) {
        let Some(switch) = self.agents.choose(SystemTime::now()) else {
            return;
        };
        self.tally.agent_session_tokens = SessionTokens::default();
        self.emit(EventKind::AgentSwitched {
            iteration,
            from: switch.from,
            to: switch.to,
            why: switch.why,
            until: switch.until,
        });
    }
}
