//! opencode's `opencode run --format json`: one part event per line.

use serde_json::Value;

use super::json::{self, NotJson};
use super::{
    AdapterOutput, Answer, Lines, OutputAdapter, ReadsLines, Usage, add_cost, error_words,
    show_text, show_tool,
};
use crate::event::Stream;

/// opencode's `opencode run --format json` (`step_start`, `text`, `tool_use`, `step_finish`,
/// `error`, each with its `part`).
///
/// Shown: the text parts and one line per tool call (`✗` when its state is `error`). Result
/// text: the text parts of the last step that has any (the final answer). Usage: every
/// `step_finish`'s `cost` and `tokens`, summed; a step is a turn. An `error` event fails the
/// iteration with opencode's words.
#[derive(Debug, Default)]
pub struct OpencodeJsonAdapter {
    lines: Lines,
    /// The text parts of the step under way.
    step: Answer,
    /// The text of the last step that had any.
    answer: Answer,
    usage: Usage,
    not_json: NotJson,
    error: Option<String>,
}

impl OpencodeJsonAdapter {
    /// A new adapter for one agent run.
    pub fn new() -> Self {
        Self::default()
    }

    /// The step under way ended: its text, if any, is the answer so far.
    fn end_step(&mut self) {
        if !self.step.is_empty() {
            self.answer = std::mem::take(&mut self.step);
        }
        self.step = Answer::default();
    }

    fn step_finish(&mut self, part: &Value) {
        self.end_step();
        let u = &mut self.usage;
        json::add(&mut u.num_turns, Some(1));
        if let Some(cost) = json::amount(part.get("cost")) {
            u.cost_usd = Some(add_cost(u.cost_usd.unwrap_or(0.0), cost));
        }
        let Some(tokens) = part.get("tokens") else {
            return;
        };
        let cache = tokens.get("cache");
        let read = json::count(cache.and_then(|c| c.get("read")));
        let written = json::count(cache.and_then(|c| c.get("write")));
        // opencode's `input` leaves the cache out; ralph's input counts it.
        for n in [json::count(tokens.get("input")), read, written] {
            json::add(&mut u.input_tokens, n);
        }
        json::add(&mut u.cached_input_tokens, read);
        let reasoning = json::count(tokens.get("reasoning"));
        for n in [json::count(tokens.get("output")), reasoning] {
            json::add(&mut u.output_tokens, n);
        }
        json::add(&mut u.reasoning_tokens, reasoning);
    }
}

impl ReadsLines for OpencodeJsonAdapter {
    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
    }

    fn line(&mut self, line: &[u8], out: &mut dyn AdapterOutput) {
        let Some(event) = json::object(line, "opencode json", &mut self.not_json, out) else {
            return;
        };
        if let Some(session) = json::text(event.get("sessionID")) {
            if self.usage.session_id.as_deref() != Some(session) {
                self.usage.session_id = Some(session.to_owned());
            }
        }
        let part = event.get("part").cloned().unwrap_or(Value::Null);
        match json::text(event.get("type")).unwrap_or_default() {
            "step_start" => self.end_step(),
            "text" => {
                let text = json::text(part.get("text")).unwrap_or_default();
                show_text(text, "", out);
                self.step.push(text);
            }
            "tool_use" => {
                json::add(&mut self.usage.tool_calls, Some(1));
                let name = json::text(part.get("tool")).unwrap_or("tool");
                let state = part.get("state");
                let failed = json::text(state.and_then(|s| s.get("status"))) == Some("error");
                let arg = json::main_argument(state.and_then(|s| s.get("input")))
                    .or(json::text(state.and_then(|s| s.get("title"))));
                show_tool(name, arg, failed, "", out);
            }
            "step_finish" => self.step_finish(&part),
            "error" => {
                let words = error_words(
                    json::error_message(event.get("error"))
                        .as_deref()
                        .unwrap_or("error"),
                );
                out.show(
                    Stream::Stdout,
                    format!("✗ the agent's run ended with an error: {words}\n").as_bytes(),
                );
                self.error = Some(words);
            }
            _ => {}
        }
    }
}

impl OutputAdapter for OpencodeJsonAdapter {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        self.feed_lines(stream, bytes, out);
    }

    fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage> {
        self.finish_lines(out);
        self.end_step();
        self.not_json.summarise("opencode json", out);
        self.answer.hand_over(out);
        self.usage.take_reported()
    }

    fn reported_error(&self) -> Option<String> {
        self.error.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Recorded, assert_chunking_does_not_matter, fixture, read};
    use super::*;

    fn opencode(name: &str) -> Recorded {
        read(
            OpencodeJsonAdapter::new(),
            [fixture("opencode", name).as_slice()],
        )
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
        for name in [
            "success.jsonl",
            "tool-use.jsonl",
            "error.jsonl",
            "quoted-marker.jsonl",
        ] {
            assert_chunking_does_not_matter(
                OpencodeJsonAdapter::new,
                &fixture("opencode", name),
                name,
            );
        }
    }
}
