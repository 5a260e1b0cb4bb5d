//! What an agent run cost and used, as its adapter reported it, and the one rule for adding
//! a run's cost up from its iterations.

use serde::{Deserialize, Serialize};

/// `REASON (N/MAX)`, `REASON (N)` or `REASON`: how a retry reads, wherever it is shown.
pub fn describe_retry(reason: &str, attempt: Option<u64>, max_attempts: Option<u64>) -> String {
    match (attempt, max_attempts) {
        (Some(n), Some(max)) => format!("{reason} ({n}/{max})"),
        (Some(n), None) => format!("{reason} ({n})"),
        _ => reason.to_owned(),
    }
}

/// What an agent run cost, as the agent reported it, in one shape for every adapter. Every
/// figure is optional: an agent reports what it knows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
#[non_exhaustive]
pub struct Usage {
    /// Cost in US dollars, with the agent's own digits (Claude Code's `total_cost_usd`,
    /// opencode's summed `cost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Input tokens, those read from a cache included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens, reasoning included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The part of `input_tokens` read from the prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// The part of `output_tokens` spent reasoning, when the agent says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Conversation turns the agent took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    /// The agent's own measure of its run time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The agent's session (thread) id, to resume or inspect the conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model, as the agent names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tool calls the agent made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Tool calls that were denied permission (Claude Code's `permission_denials`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denied_tool_calls: Option<u64>,
    /// `cost_usd` is the agent session's running total: a run counts a session that goes on
    /// over several iterations once, with its last figure ([`RunCost`]). No built-in adapter
    /// sets it any more (Claude Code 2.1 reports each invocation's own cost, also with
    /// `--continue`); it is read back from the events of runs that earlier versions of ralph
    /// wrote, and an embedder's adapter may set it. On the wire only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cost_is_session_total: bool,
    /// The token counts are the agent session's running totals (Codex reports its thread's
    /// tokens so far at each turn, also after `codex exec resume`): the engine turns them into
    /// this run's own share before anyone sees them. Never on the wire.
    #[serde(skip)]
    pub tokens_are_session_total: bool,
}

impl Usage {
    /// Adds `other` to these figures (a run's total): counts and cost summed, the cost as a
    /// decimal so the agents' digits survive; the session and model are the latest known.
    pub fn add(&mut self, other: &Usage) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0).saturating_add(b));
            }
        }
        if let Some(cost) = other.cost_usd {
            self.cost_usd = Some(add_cost(self.cost_usd.unwrap_or(0.0), cost));
        }
        sum(&mut self.input_tokens, other.input_tokens);
        sum(&mut self.output_tokens, other.output_tokens);
        sum(&mut self.cached_input_tokens, other.cached_input_tokens);
        sum(&mut self.reasoning_tokens, other.reasoning_tokens);
        sum(&mut self.num_turns, other.num_turns);
        sum(&mut self.duration_ms, other.duration_ms);
        sum(&mut self.tool_calls, other.tool_calls);
        sum(&mut self.denied_tool_calls, other.denied_tool_calls);
        if other.session_id.is_some() {
            self.session_id.clone_from(&other.session_id);
        }
        if other.model.is_some() {
            self.model.clone_from(&other.model);
        }
    }
}

/// Turns token counts reported as a session's running totals
/// ([`Usage::tokens_are_session_total`]) into each agent run's own share: a run that goes on
/// with the session of the run before it counts only what it added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionTokens {
    /// The last session and its running totals.
    last: Option<(String, Usage)>,
}

impl SessionTokens {
    /// Whether no session's totals are known yet.
    pub fn is_empty(&self) -> bool {
        self.last.is_none()
    }

    /// `usage` with running totals made this run's own share; other usage as it is.
    pub fn own_share(&mut self, mut usage: Usage) -> Usage {
        if !usage.tokens_are_session_total {
            return usage;
        }
        usage.tokens_are_session_total = false;
        let Some(session) = usage.session_id.clone() else {
            return usage;
        };
        let totals = usage.clone();
        if let Some((last_session, last)) = &self.last {
            if *last_session == session {
                let less = |now: &mut Option<u64>, before: Option<u64>| {
                    if let (Some(now), Some(before)) = (now.as_mut(), before) {
                        // A smaller total is a new count (a compacted thread): kept whole.
                        if *now >= before {
                            *now -= before;
                        }
                    }
                };
                less(&mut usage.input_tokens, last.input_tokens);
                less(&mut usage.cached_input_tokens, last.cached_input_tokens);
                less(&mut usage.output_tokens, last.output_tokens);
                less(&mut usage.reasoning_tokens, last.reasoning_tokens);
            }
        }
        self.last = Some((session, totals));
        usage
    }
}

/// A run's cost from its agent runs' usage, in order: the one rule for the engine
/// (`RUN_ENDED.cost_usd`, `max_cost`) and for every reader that rebuilds a run's cost from its
/// `ITERATION_ENDED` events (`ralph runs`, the report, the status line). Where an agent's
/// reported cost is its session's running total ([`Usage::cost_is_session_total`]), an agent
/// line that goes on with the same session (`claude -p --continue`, `--resume`) reports the
/// whole session's cost again each iteration: iterations in one session count once, with the
/// last figure. Every other cost (another session, no session id, an agent that reports each
/// run's own) adds up.
///
/// ```
/// use ralph_events::{RunCost, Usage};
///
/// let mut cost = RunCost::default();
/// for text in [
///     r#"{"cost_usd":0.1,"session_id":"s1","cost_is_session_total":true}"#,
///     r#"{"cost_usd":0.25,"session_id":"s1","cost_is_session_total":true}"#,
/// ] {
///     cost.record(&serde_json::from_str::<Usage>(text).unwrap());
/// }
/// assert_eq!(cost.total(), Some(0.25));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunCost {
    /// The cost of every session before the current one.
    before: Option<f64>,
    /// The current session and its latest running total.
    current: Option<(Option<String>, f64)>,
}

impl RunCost {
    /// A run's cost resumed from `total`, what it had cost when it stopped
    /// (`RUN_RESUMED`): a session from before the stop counts afresh.
    pub fn resumed(total: Option<f64>) -> Self {
        Self {
            before: total,
            current: None,
        }
    }

    /// Takes in one agent run's usage (an `ITERATION_ENDED`'s `usage`). A cost below zero, or
    /// not a number, is no cost: the engine never writes one, and a run's total only grows.
    pub fn record(&mut self, usage: &Usage) {
        let Some(cost) = usage.cost_usd.filter(|c| *c >= 0.0) else {
            return;
        };
        match &mut self.current {
            Some((Some(session), total))
                if usage.cost_is_session_total && usage.session_id.as_ref() == Some(&*session) =>
            {
                *total = cost;
            }
            current => {
                if let Some((_, total)) = current.take() {
                    self.before = Some(add_cost(self.before.unwrap_or(0.0), total));
                }
                let session = usage
                    .session_id
                    .clone()
                    .filter(|_| usage.cost_is_session_total);
                *current = Some((session, cost));
            }
        }
    }

    /// The run's cost so far, `None` when no agent run reported one.
    pub fn total(&self) -> Option<f64> {
        match (self.before, &self.current) {
            (before, Some((_, current))) => Some(add_cost(before.unwrap_or(0.0), *current)),
            (before, None) => before,
        }
    }
}

/// Decimal places a cost keeps when summed (far below a cent's millionth).
const COST_SCALE: u32 = 15;

/// `a + b` in decimal: each figure is read back from its shortest printed form (the digits the
/// agent wrote, for any cost of up to 15 significant digits), summed as an integer of
/// 10^-15 dollars and printed back, so `0.1 + 0.2` is `0.3`, not `0.30000000000000004`.
pub fn add_cost(a: f64, b: f64) -> f64 {
    match (to_fixed(a), to_fixed(b)) {
        (Some(a), Some(b)) => {
            let sum = a.saturating_add(b);
            let scale = 10i128.pow(COST_SCALE);
            let sign = if sum < 0 { "-" } else { "" };
            let text = format!(
                "{sign}{}.{:0width$}",
                (sum / scale).abs(),
                (sum % scale).abs(),
                width = COST_SCALE as usize
            );
            text.parse().unwrap_or(a as f64 + b as f64)
        }
        _ => a + b,
    }
}

/// `x` as an integer of 10^-[`COST_SCALE`], from its shortest decimal form.
fn to_fixed(x: f64) -> Option<i128> {
    if !x.is_finite() || x.abs() > 1e15 {
        return None;
    }
    // Rust prints the shortest decimal that reads back as `x`, never in exponent form.
    let text = x.to_string();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.as_str()),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mut fraction: String = fraction.chars().take(COST_SCALE as usize).collect();
    while fraction.len() < COST_SCALE as usize {
        fraction.push('0');
    }
    let value =
        whole.parse::<i128>().ok()? * 10i128.pow(COST_SCALE) + fraction.parse::<i128>().ok()?;
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_that_goes_on_counts_once_with_its_last_running_total() {
        let run = |costs: &[(Option<&str>, f64)]| {
            let mut cost = RunCost::default();
            for (session, usd) in costs {
                cost.record(&Usage {
                    cost_usd: Some(*usd),
                    session_id: session.map(str::to_owned),
                    cost_is_session_total: true,
                    ..Usage::default()
                });
            }
            cost.total()
        };
        assert_eq!(run(&[]), None);
        // A cost below zero (an event file ralph did not write) is no cost.
        assert_eq!(
            run(&[(None, 0.5), (None, -100.0), (None, f64::NAN)]),
            Some(0.5)
        );
        // `--continue`: each iteration reports the session's total so far.
        assert_eq!(
            run(&[(Some("s1"), 0.1), (Some("s1"), 0.25), (Some("s1"), 0.4)]),
            Some(0.4)
        );
        // A new session each iteration, or none: each run's cost adds up.
        assert_eq!(run(&[(Some("a"), 0.1), (Some("b"), 0.2)]), Some(0.3));
        assert_eq!(run(&[(None, 0.1), (None, 0.2)]), Some(0.3));
        assert_eq!(
            run(&[
                (Some("a"), 0.1),
                (Some("a"), 0.15),
                (Some("b"), 0.2),
                (None, 0.05)
            ]),
            Some(0.4)
        );
    }

    #[test]
    fn a_reader_of_the_events_counts_the_cost_as_the_engine_does() {
        let usages = [("s1", 0.1), ("s1", 0.25), ("s1", 0.4), ("s2", 0.05)].map(|(s, usd)| Usage {
            cost_usd: Some(usd),
            session_id: Some(s.to_owned()),
            cost_is_session_total: true,
            ..Usage::default()
        });
        let mut engine = RunCost::default();
        let mut reader = RunCost::default();
        for usage in &usages {
            engine.record(usage);
            let wire = serde_json::to_value(usage).unwrap();
            assert_eq!(wire["cost_is_session_total"], true);
            reader.record(&serde_json::from_value(wire).unwrap());
            assert_eq!(reader.total(), engine.total());
        }
        assert_eq!(reader.total(), Some(0.45));
        // Not a running total: left off the wire, read back as false.
        let own = Usage {
            cost_usd: Some(0.1),
            ..Usage::default()
        };
        let wire = serde_json::to_value(&own).unwrap();
        assert_eq!(wire, serde_json::json!({"cost_usd": 0.1}));
        assert_eq!(serde_json::from_value::<Usage>(wire).unwrap(), own);
    }

    #[test]
    fn costs_add_as_decimals() {
        assert_eq!(add_cost(0.1, 0.2), 0.3);
        assert_eq!(add_cost(0.1873245, 0.1873245).to_string(), "0.374649");
        assert_eq!(add_cost(0.0, 0.0214), 0.0214);
        let mut total = Usage::default();
        for _ in 0..10 {
            total.add(&Usage {
                cost_usd: Some(0.01),
                input_tokens: Some(3),
                ..Usage::default()
            });
        }
        assert_eq!(total.cost_usd, Some(0.1));
        assert_eq!(total.input_tokens, Some(30));
        assert_eq!(total.output_tokens, None);
    }
}
