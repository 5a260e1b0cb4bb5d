//! opencode's `opencode run --format json`: one part event per line.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::json;
use super::json_lines::{JsonEvents, JsonRun, error_in};
use super::{AdapterOutput, AgentRetry, Answer, add_cost, show_text, show_tool};

/// opencode's `opencode run --format json` (`step_start`, `text`, `tool_use`, `step_finish`,
/// `error`, each with its `part`).
///
/// Shown: the text parts and one line per tool call (`✗` when its state is `error`). Result
/// text: the text parts of the last step that has any (the final answer). Usage: every
/// `step_finish`'s `cost` and `tokens`, summed; a step is a turn. An `error` event fails the
/// iteration with opencode's words. A step that ends with reason `unknown` (the model's
/// stream ended before it finished, which opencode asks again for at once) is a retry.
#[derive(Debug, Default)]
pub struct OpencodeJsonAdapter {
    /// The text of the last step that had any is its answer.
    run: JsonRun,
    /// The text parts of the step under way.
    step: Answer,
    /// Steps in a row whose model stream ended before it finished.
    cut_steps: u64,
}

impl OpencodeJsonAdapter {
    /// A new adapter for one agent run.
    pub fn new() -> Self {
        Self::default()
    }

    /// The step under way ended: its text, if any, is the answer so far.
    fn end_step(&mut self) {
        if !self.step.is_empty() {
            self.run.answer = std::mem::take(&mut self.step);
        }
        self.step = Answer::default();
    }

    fn step_finish(&mut self, part: &Value) {
        self.end_step();
        let u = &mut self.run.usage;
        json::add(&mut u.num_turns, Some(1));
        if let Some(cost) = json::amount(part.get("cost")) {
            u.cost_usd = Some(add_cost(u.cost_usd.unwrap_or(0.0), cost));
        }
        let Some(tokens) = part.get("tokens") else {
            return;
        };
        let cache = tokens.get("cache");
        // opencode's `input` leaves the cache out; ralph's input counts it.
        json::add_input(
            u,
            json::count(tokens.get("input")),
            json::count(cache.and_then(|c| c.get("read"))),
            json::count(cache.and_then(|c| c.get("write"))),
        );
        let reasoning = json::count(tokens.get("reasoning"));
        for n in [json::count(tokens.get("output")), reasoning] {
            json::add(&mut u.output_tokens, n);
        }
        json::add(&mut u.reasoning_tokens, reasoning);
    }
}

impl JsonEvents for OpencodeJsonAdapter {
    const FORMAT: &'static str = "opencode json";

    fn run(&self) -> &JsonRun {
        &self.run
    }

    fn run_mut(&mut self) -> &mut JsonRun {
        &mut self.run
    }

    fn event(&mut self, kind: &str, event: &Map<String, Value>, out: &mut dyn AdapterOutput) {
        self.run.session(json::text(event.get("sessionID")));
        let part = event.get("part").unwrap_or(&Value::Null);
        match kind {
            "step_start" => self.end_step(),
            "text" => {
                let text = json::text(part.get("text")).unwrap_or_default();
                show_text(text, "", out);
                self.step.push(text);
            }
            "tool_use" => {
                self.run.count_tool();
                let name = json::text(part.get("tool")).unwrap_or("tool");
                let state = part.get("state");
                let failed = json::text(state.and_then(|s| s.get("status"))) == Some("error");
                let arg = json::main_argument(state.and_then(|s| s.get("input")))
                    .or(json::text(state.and_then(|s| s.get("title"))));
                show_tool(name, arg, failed, "", out);
            }
            "step_finish" => {
                // A stream cut before its finish ends the step with reason `unknown`, and
                // opencode asks again at once, without end and without a word: a retry.
                if json::text(part.get("reason")) == Some("unknown") {
                    self.cut_steps += 1;
                    out.retrying(AgentRetry {
                        reason: "the model's stream ended before it finished".to_owned(),
                        attempt: Some(self.cut_steps),
                        ..AgentRetry::default()
                    });
                } else {
                    self.cut_steps = 0;
                }
                self.step_finish(part);
            }
            "error" => {
                self.run.fail(&error_in(event, &["error"]), out);
                self.run.rate_limit_reset = rate_limit_reset(event);
            }
            _ => {}
        }
    }

    fn end(&mut self, _out: &mut dyn AdapterOutput) {
        self.end_step();
    }
}

/// An `error` event for an HTTP 429 (`error.data.statusCode`), after opencode's own retries
/// (each waiting the `retry-after`): the latest reset its response headers give, `retry-after`
/// (seconds) or OpenAI's `x-ratelimit-reset-requests` / `-tokens` (`1s`, `6m0s`), counted
/// from the event's `timestamp` (Unix milliseconds).
fn rate_limit_reset(event: &Map<String, Value>) -> Option<SystemTime> {
    let data = event.get("error")?.get("data")?;
    if json::count(data.get("statusCode")) != Some(429) {
        return None;
    }
    let headers = data.get("responseHeaders")?;
    let retry_after = json::count(headers.get("retry-after")).map(Duration::from_secs);
    let resets = ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .iter()
        .filter_map(|name| json::text(headers.get(*name)).and_then(go_duration));
    let wait = retry_after.into_iter().chain(resets).max()?;
    let at = json::count(event.get("timestamp"))?;
    Some(UNIX_EPOCH + Duration::from_millis(at) + wait)
}

/// A duration as OpenAI's rate limit headers write it: `20ms`, `1s`, `6m0s`, `1h2m3.5s`.
fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    let mut total = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (seconds, unit) = [("ms", 0.001), ("h", 3600.0), ("m", 60.0), ("s", 1.0)]
            .into_iter()
            .find(|(unit, _)| rest.starts_with(unit))
            .map(|(unit, scale)| (value * scale, unit.len()))?;
        total += seconds;
        rest = &rest[unit..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    /// opencode 1.18 on a stream cut on every request (recorded): each step it ends with
    /// reason `unknown` is a retry, counted from 1.
    #[test]
    fn a_step_whose_stream_was_cut_is_a_retry() {
        let read =
            testing::read_fixture(OpencodeJsonAdapter::new(), "opencode", "cut-stream.jsonl");
        let attempts: Vec<Option<u64>> = read.retries.iter().map(|r| r.attempt).collect();
        assert_eq!(attempts, [Some(1), Some(2)]);
        assert_eq!(
            read.retries[0].reason,
            "the model's stream ended before it finished"
        );
        let none = opencode("tool-use.jsonl");
        assert!(none.retries.is_empty());
    }

    #[test]
    fn openai_reset_headers_read_as_durations() {
        use super::go_duration;
        assert_eq!(go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(
            go_duration("1h2m3.5s"),
            Some(Duration::from_millis(3_723_500))
        );
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("soon"), None);
    }

    use super::super::testing::{self, Recorded};
    use super::*;

    fn opencode(name: &str) -> Recorded {
        testing::read_fixture(OpencodeJsonAdapter::new(), "opencode", name)
    }

    #[test]
    fn a_run_shows_text_and_tool_calls_and_sums_every_step() {
        let out = opencode("tool-use.jsonl");
        insta::assert_snapshot!(out.shown());
        assert_eq!(out.error, None);
        assert_eq!(out.state().as_deref(), Some("idle"));
        let usage = out.usage.unwrap();
        assert_eq!(usage.cost_usd, Some(0.0301));
        assert_eq!(usage.num_turns, Some(3));
        assert_eq!(
            usage.input_tokens,
            Some(9 + 11 + 14 + 11264 + 13312 + 13824 + 512)
        );
        assert_eq!(usage.cached_input_tokens, Some(11264 + 13312 + 13824));
        assert_eq!(usage.output_tokens, Some(96 + 64 + 158));
        assert_eq!(usage.tool_calls, Some(2));
        assert_eq!(
            usage.session_id.as_deref(),
            Some("ses_494719016ffe85dkDMj0FPRbHK")
        );
    }

    #[test]
    fn only_the_last_steps_text_is_the_answer() {
        let out = opencode("quoted-marker.jsonl");
        assert_eq!(out.state(), None);
        assert_eq!(
            opencode("success.jsonl").markers(),
            ["state blocked reason=waiting on \"review\""]
        );
    }

    #[test]
    fn an_error_event_fails_the_run() {
        let out = opencode("error.jsonl");
        assert_eq!(
            out.error.as_deref(),
            Some("No API key found for provider anthropic")
        );
    }

    #[test]
    fn chunking_at_any_byte_gives_the_same_reading() {
        testing::assert_every_fixture_reads_alike_in_any_chunks(
            OpencodeJsonAdapter::new,
            "opencode",
        );
    }
}
