//! Cursor's `cursor-agent --output-format stream-json`: Claude-like events, its own tool calls.

use serde_json::{Map, Value};

use super::json;
use super::json_lines::{JsonEvents, JsonRun};
use super::{AdapterOutput, show_text, show_tool};

/// Cursor's `cursor-agent -p --output-format stream-json` (`system`, `user`, `assistant`,
/// `tool_call` started/completed, `result`).
///
/// Shown: the assistant's text and one line per completed tool call (`✗` when its result is
/// not a success). Result text: `result.result` (the final answer). Usage: `result.usage`
/// (camelCase token fields) and `duration_ms`. A result with `is_error`, or no result at all,
/// fails the iteration.
#[derive(Debug, Default)]
pub struct CursorStreamJsonAdapter {
    run: JsonRun,
    saw_result: bool,
}

impl CursorStreamJsonAdapter {
    /// A new adapter for one agent run.
    pub fn new() -> Self {
        Self::default()
    }

    fn tool_call(&mut self, call: &Map<String, Value>, out: &mut dyn AdapterOutput) {
        self.run.count_tool();
        // `{"shellToolCall": {"args": ..., "result": ...}}`, or `{"function": {"name": ...}}`.
        let Some((kind, body)) = call.iter().next() else {
            return;
        };
        let name = match kind.strip_suffix("ToolCall") {
            Some(short) => short.to_owned(),
            None => json::text(body.get("name")).unwrap_or(kind).to_owned(),
        };
        // A result holds `success` (a shell's with its exit code), or `failure`, `error`,
        // `rejected`.
        let result = body.get("result").and_then(Value::as_object);
        let failed = result.is_some_and(|r| match r.get("success") {
            Some(success) => success
                .get("exitCode")
                .and_then(Value::as_i64)
                .is_some_and(|code| code != 0),
            None => true,
        });
        let arg = json::main_argument(body.get("args"));
        show_tool(&name, arg, failed, "", out);
    }

    fn result(&mut self, event: &Map<String, Value>, out: &mut dyn AdapterOutput) {
        self.saw_result = true;
        let result = json::text(event.get("result")).unwrap_or_default();
        self.run.answer.set(result);
        let u = &mut self.run.usage;
        u.duration_ms = json::count(event.get("duration_ms"));
        if let Some(usage) = event.get("usage") {
            json::add_input(
                u,
                json::count(usage.get("inputTokens")),
                json::count(usage.get("cacheReadTokens")),
                json::count(usage.get("cacheWriteTokens")),
            );
            json::add(&mut u.output_tokens, json::count(usage.get("outputTokens")));
        }
        let subtype = json::text(event.get("subtype"));
        let failed = event.get("is_error").and_then(Value::as_bool) == Some(true)
            || subtype.is_some_and(|s| s != "success");
        if failed {
            let words = if result.trim().is_empty() {
                subtype.unwrap_or("error")
            } else {
                result
            };
            self.run.fail(words, out);
        }
    }
}

impl JsonEvents for CursorStreamJsonAdapter {
    const FORMAT: &'static str = "Cursor stream-json";

    fn run(&self) -> &JsonRun {
        &self.run
    }

    fn run_mut(&mut self) -> &mut JsonRun {
        &mut self.run
    }

    fn event(&mut self, kind: &str, event: &Map<String, Value>, out: &mut dyn AdapterOutput) {
        self.run.session(json::text(event.get("session_id")));
        match kind {
            "system" => self.run.usage.model = json::text(event.get("model")).map(str::to_owned),
            "assistant" => {
                let content = event.get("message").and_then(|m| m.get("content"));
                for block in content.and_then(Value::as_array).into_iter().flatten() {
                    if json::text(block.get("type")) == Some("text") {
                        show_text(json::text(block.get("text")).unwrap_or_default(), "", out);
                    }
                }
            }
            "tool_call" if json::text(event.get("subtype")) == Some("completed") => {
                if let Some(call) = event.get("tool_call").and_then(Value::as_object) {
                    self.tool_call(call, out);
                }
            }
            "result" => self.result(event, out),
            _ => {}
        }
    }

    fn missing_final_answer(&self) -> bool {
        !self.saw_result
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, Recorded};
    use super::*;

    fn cursor(name: &str) -> Recorded {
        testing::read_fixture(CursorStreamJsonAdapter::new(), "cursor", name)
    }

    #[test]
    fn a_run_shows_text_and_tool_calls_and_reads_result_usage() {
        let out = cursor("tool-use.jsonl");
        insta::assert_snapshot!(out.shown());
        assert_eq!(out.error, None);
        assert_eq!(out.state().as_deref(), Some("idle"));
        let usage = out.usage.unwrap();
        assert_eq!(usage.input_tokens, Some(5120 + 20480 + 1024));
        assert_eq!(usage.cached_input_tokens, Some(20480));
        assert_eq!(usage.output_tokens, Some(734));
        assert_eq!(usage.duration_ms, Some(18650));
        assert_eq!(usage.tool_calls, Some(2));
        assert_eq!(usage.model.as_deref(), Some("Claude 4.5 Sonnet"));
    }

    #[test]
    fn markers_come_from_the_result_only() {
        assert_eq!(cursor("quoted-marker.jsonl").state(), None);
        assert_eq!(
            cursor("success.jsonl").markers(),
            ["state blocked reason=needs \"staging\""]
        );
    }

    #[test]
    fn an_error_result_fails_the_run() {
        let out = cursor("error.jsonl");
        assert_eq!(
            out.error.as_deref(),
            Some("Authentication required. Run cursor-agent login first.")
        );
    }

    #[test]
    fn a_run_without_a_result_fails() {
        let out = testing::read(
            CursorStreamJsonAdapter::new(),
            [br#"{"type":"system","model":"gpt-5"}"#.as_slice()],
        );
        assert_eq!(
            out.error.as_deref(),
            Some("the agent's run ended without a final answer")
        );
        assert_eq!(
            out.shown(),
            "✗ the agent's run ended without a final answer\n"
        );
        assert_eq!(out.usage.and_then(|u| u.model).as_deref(), Some("gpt-5"));
    }

    #[test]
    fn chunking_at_any_byte_gives_the_same_reading() {
        testing::assert_every_fixture_reads_alike_in_any_chunks(
            CursorStreamJsonAdapter::new,
            "cursor",
        );
    }
}
