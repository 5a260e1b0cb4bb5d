//! Fallback agents (`fallback`): which agent runs the next iteration, and how long the loop
//! waits when the one that ran is rate-limited. Decided from the limits and a `now` the caller
//! gives, so every case is tested here without a clock.

use std::time::{Duration, SystemTime};

use ralph_agents::{RunCost, Usage};
use ralph_frontmatter::Config;

use crate::event::SwitchReason;
use ralph_events::session::AgentRecord;

/// The agent for the next iteration changed ([`Roster::choose`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Switch {
    /// The command line of the agent that ran until now.
    pub(crate) from: String,
    /// The command line of the agent that runs now.
    pub(crate) to: String,
    pub(crate) why: SwitchReason,
    /// When `from`'s limit resets, when it is limited.
    pub(crate) until: Option<SystemTime>,
}

#[derive(Debug, Clone)]
struct Slot {
    line: String,
    argv: Vec<String>,
    limited_until: Option<SystemTime>,
    /// Its own cost, each of its sessions counted once: a session never goes on across agents.
    cost: RunCost,
}

/// The agent and its fallbacks, in order, with their limits and costs.
#[derive(Debug, Clone)]
pub(crate) struct Roster {
    slots: Vec<Slot>,
    /// The agent that runs (ran) the current iteration: an index into `slots`.
    current: usize,
    fallback_after: Duration,
}

impl Roster {
    pub(crate) fn new(config: &Config) -> Self {
        let primary = (config.agent.clone(), config.agent_argv.clone());
        let fallbacks = config
            .fallback
            .iter()
            .map(|f| (f.line.clone(), f.argv.clone()));
        Self {
            slots: std::iter::once(primary)
                .chain(fallbacks)
                .map(|(line, argv)| Slot {
                    line,
                    argv,
                    limited_until: None,
                    cost: RunCost::default(),
                })
                .collect(),
            current: 0,
            fallback_after: config.fallback_after,
        }
    }

    /// Whether there are fallback agents at all.
    pub(crate) fn has_fallbacks(&self) -> bool {
        self.slots.len() > 1
    }

    /// Whether the agent of the file's `agent` runs (not a fallback).
    pub(crate) fn is_primary(&self) -> bool {
        self.current == 0
    }

    /// The words of the agent that runs.
    pub(crate) fn argv(&self) -> &[String] {
        &self.slots[self.current].argv
    }

    /// Picks the agent for the next iteration: an agent earlier in the list (`agent` first)
    /// whose limit is no longer in force; else the one that ran, unless it is limited with
    /// its reset further than `fallback_after` away at `now`; else the first agent not
    /// limited; when every one is, the one whose limit resets first. Returns the switch when
    /// it is another agent than the last one.
    pub(crate) fn choose(&mut self, now: SystemTime) -> Option<Switch> {
        let next = self.pick(now);
        if next == self.current {
            return None;
        }
        let from = &self.slots[self.current];
        let until = from.limited_until.filter(|until| *until > now);
        let switch = Switch {
            from: from.line.clone(),
            to: self.slots[next].line.clone(),
            why: match until {
                Some(_) => SwitchReason::RateLimited,
                None => SwitchReason::LimitReset,
            },
            until,
        };
        self.current = next;
        Some(switch)
    }

    /// The command line of the agent [`choose`](Self::choose) would pick at `now`, when it is
    /// another than the last one.
    pub(crate) fn next_other(&self, now: SystemTime) -> Option<&str> {
        let next = self.pick(now);
        (next != self.current).then(|| self.slots[next].line.as_str())
    }

    /// The index of the agent [`choose`](Self::choose) picks at `now`.
    fn pick(&self, now: SystemTime) -> usize {
        let limit = |s: &Slot| s.limited_until.filter(|until| *until > now);
        let free = |s: &Slot| limit(s).is_none();
        let current = &self.slots[self.current];
        let waited_for = limit(current).is_none_or(|until| {
            until.duration_since(now).unwrap_or_default() <= self.fallback_after
        });
        match self.slots.iter().position(free) {
            Some(earlier) if earlier < self.current => earlier,
            _ if waited_for => self.current,
            Some(first) => first,
            None => (0..self.slots.len())
                .min_by_key(|&i| self.slots[i].limited_until)
                .unwrap_or(self.current),
        }
    }

    /// The agent that ran is rate-limited until `until`: the wait before the next iteration,
    /// zero when another agent can run it at once. A reset no further than `fallback_after`
    /// away is waited for; otherwise the first agent not limited runs, and when every agent is
    /// limited, the loop waits for the first reset.
    pub(crate) fn limited(&mut self, until: SystemTime, now: SystemTime) -> Duration {
        self.slots[self.current].limited_until = Some(until);
        let left = |until: SystemTime| until.duration_since(now).unwrap_or_default();
        if !self.has_fallbacks() || left(until) <= self.fallback_after {
            return left(until);
        }
        self.slots
            .iter()
            .map(|s| s.limited_until.map_or(Duration::ZERO, left))
            .min()
            .unwrap_or_default()
    }

    /// Takes the agent lines of an edited RALPH.md (`reload`): limits and costs stay with
    /// their command lines, and the agent that ran stays when the file still has it.
    pub(crate) fn reload(&mut self, config: &Config) {
        let records = self.records();
        let current = self.slots[self.current].line.clone();
        let mut edited = Self::new(config);
        edited.restore(&records);
        edited.current = (edited.slots.iter())
            .position(|s| s.line == current)
            .unwrap_or(0);
        *self = edited;
    }

    /// Counts an agent run's usage to the agent that ran.
    pub(crate) fn record(&mut self, usage: &Usage) {
        self.slots[self.current].cost.record(usage);
    }

    /// Each agent's limit and cost, for the session.
    pub(crate) fn records(&self) -> Vec<AgentRecord> {
        self.slots
            .iter()
            .map(|s| AgentRecord::new(s.line.clone(), s.limited_until, s.cost.total()))
            .collect()
    }

    /// Takes up the limits and costs a stopped run kept, by command line: an agent no longer
    /// in the file is forgotten, a new one starts afresh. The agent that runs is chosen again.
    pub(crate) fn restore(&mut self, records: &[AgentRecord]) {
        for slot in &mut self.slots {
            if let Some(record) = records.iter().find(|r| r.agent == slot.line) {
                slot.limited_until = record.limited_until;
                slot.cost = RunCost::resumed(record.cost_usd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);
    const HOUR: Duration = Duration::from_secs(3600);

    fn roster(fallbacks: &[&str]) -> Roster {
        let mut text = "---\nagent: claude -p\nfallback_after: 10m\n".to_owned();
        if !fallbacks.is_empty() {
            text.push_str(&format!("fallback: {fallbacks:?}\n"));
        }
        text.push_str("---\n");
        let config = ralph_frontmatter::parse("RALPH.md", &text)
            .unwrap()
            .file
            .config;
        Roster::new(&config)
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    #[test]
    fn without_fallbacks_a_limit_is_waited_for_whole() {
        let mut r = roster(&[]);
        assert_eq!(r.limited(now() + 5 * HOUR, now()), 5 * HOUR);
        assert_eq!(r.choose(now()), None);
    }

    #[test]
    fn a_reset_within_fallback_after_is_waited_for_by_the_same_agent() {
        let mut r = roster(&["codex exec"]);
        assert_eq!(r.limited(now() + 10 * MINUTE, now()), 10 * MINUTE);
        assert_eq!(r.choose(now() + 10 * MINUTE), None);
        assert!(r.is_primary());
    }

    #[test]
    fn a_far_reset_runs_the_first_fallback_at_once_and_the_agent_after_its_reset() {
        let mut r = roster(&["codex exec", "gemini"]);
        let reset = now() + HOUR;
        assert_eq!(r.limited(reset, now()), Duration::ZERO);
        assert_eq!(r.next_other(now()), Some("codex exec"));
        let away = r.choose(now()).unwrap();
        assert_eq!(
            away,
            Switch {
                from: "claude -p".into(),
                to: "codex exec".into(),
                why: SwitchReason::RateLimited,
                until: Some(reset),
            }
        );
        assert_eq!(r.argv(), ["codex", "exec"]);
        // Still limited: the fallback goes on.
        assert_eq!(r.choose(now() + 30 * MINUTE), None);
        let back = r.choose(reset).unwrap();
        assert_eq!(
            (back.to.as_str(), back.why, back.until),
            ("claude -p", SwitchReason::LimitReset, None)
        );
        assert!(r.is_primary());
    }

    #[test]
    fn a_limited_fallback_hands_over_to_the_next_one_not_limited() {
        let mut r = roster(&["codex exec", "gemini"]);
        r.limited(now() + 5 * HOUR, now());
        r.choose(now());
        assert_eq!(r.limited(now() + 2 * HOUR, now()), Duration::ZERO);
        let switch = r.choose(now()).unwrap();
        assert_eq!(
            (switch.from.as_str(), switch.to.as_str()),
            ("codex exec", "gemini")
        );
    }

    #[test]
    fn when_every_agent_is_limited_the_loop_waits_for_the_first_reset_and_runs_that_agent() {
        let mut r = roster(&["codex exec"]);
        r.limited(now() + 5 * HOUR, now());
        r.choose(now());
        assert_eq!(r.limited(now() + 2 * HOUR, now()), 2 * HOUR);
        // Waited the whole way: the fallback is free again, the agent is not.
        assert_eq!(r.choose(now() + 2 * HOUR), None);
        // Cut short (`rate_limit.max_wait`): both still limited, the fallback resets first.
        let mut r = roster(&["codex exec"]);
        r.limited(now() + HOUR, now());
        r.choose(now());
        r.limited(now() + 5 * HOUR, now());
        let switch = r.choose(now() + MINUTE).unwrap();
        assert_eq!(switch.to, "claude -p");
        assert_eq!(switch.why, SwitchReason::RateLimited);
    }

    #[test]
    fn an_edited_list_keeps_each_agents_limit_and_the_agent_that_runs() {
        let mut r = roster(&["codex exec"]);
        r.limited(now() + HOUR, now());
        r.choose(now());
        // The file now lists gemini first: codex still runs, the agent is still limited.
        let edited = ralph_frontmatter::parse(
            "RALPH.md",
            "---\nagent: claude -p\nfallback: [gemini, codex exec]\n---\n",
        )
        .unwrap()
        .file
        .config;
        r.reload(&edited);
        assert_eq!(r.argv(), ["codex", "exec"]);
        assert_eq!(r.records()[0].limited_until, Some(now() + HOUR));
        // Its limit passed, the agent runs again.
        assert_eq!(r.choose(now() + HOUR).unwrap().to, "claude -p");
        // A fallback removed from the file while it ran: the agent runs next.
        r.limited(now() + 2 * HOUR, now());
        r.choose(now());
        let gone = ralph_frontmatter::parse("RALPH.md", "---\nagent: claude -p\n---\n")
            .unwrap()
            .file
            .config;
        r.reload(&gone);
        assert!(r.is_primary() && !r.has_fallbacks());
    }

    #[test]
    fn costs_are_kept_per_agent_and_limits_come_back_on_resume_by_command_line() {
        let mut r = roster(&["codex exec"]);
        let mut usage = Usage::default();
        usage.cost_usd = Some(0.5);
        r.record(&usage);
        r.limited(now() + HOUR, now());
        r.choose(now());
        usage.cost_usd = Some(0.25);
        r.record(&usage);
        let records = r.records();
        assert_eq!(records[0].cost_usd, Some(0.5));
        assert_eq!(records[0].limited_until, Some(now() + HOUR));
        assert_eq!(records[1].cost_usd, Some(0.25));

        let text = serde_json::to_string(&records).unwrap();
        let read: Vec<AgentRecord> = serde_json::from_str(&text).unwrap();
        assert_eq!(read, records);

        let mut resumed = roster(&["codex exec", "gemini"]);
        resumed.restore(&read);
        assert!(resumed.is_primary());
        assert_eq!(resumed.choose(now()).unwrap().to, "codex exec");
        assert_eq!(resumed.records()[1].cost_usd, Some(0.25));
        assert_eq!(resumed.records()[2].cost_usd, None);
    }
}
