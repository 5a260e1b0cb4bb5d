//! opencode's `opencode run --format json`: one part event per line.

use serde_json::{Map, Value};

use super::json;
use super::json_lines::{JsonEvents, JsonRun};
use super::{AdapterOutput, Answer, add_cost, show_text, show_tool};

/// opencode's `opencode run --format json` (`step_start`, `text`, `tool_use`, `step_finish`,
/// `error`, each with its `part`).
///
/// Shown: the text parts and one line per tool call (`✗` when its state is `error`). Result
/// text: the text parts of the last step that has any (the final answer). Usage: every
/// `step_finish`'s `cost` and `tokens`, summed; a step is a turn. An `error` event fails the
/// iteration with opencode's words.
#[derive(Debug, Default)]
pub struct OpencodeJsonAdapter {
    /// The text of the last step that had any is its answer.
    run: JsonRun,
    /// The text parts of the step under way.
    step: Answer,
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
            "step_finish" => self.step_finish(part),
            "error" => {
                let message = json::error_message(event.get("error"));
                self.run.fail(message.as_deref().unwrap_or("error"), out);
            }
            _ => {}
        }
    }

    fn end(&mut self, _out: &mut dyn AdapterOutput) {
        self.end_step();
    }
}

#[cfg(test)]
mod tests {
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
