//! Codex's `codex exec --json`: one thread event per line.

use serde_json::{Map, Value};

use super::json;
use super::json_lines::{JsonEvents, JsonRun, error_in};
use super::{AdapterOutput, AgentRetry, show_text, show_tool};

/// Codex's `codex exec --json` (JSON Lines of thread events, as its `exec_events.rs` defines).
///
/// Shown: each `agent_message`, one line per command, file change, MCP tool call and web
/// search (`✗` when it failed), and Codex's errors. Result text: the last `agent_message`
/// (the final answer). Usage: the last `turn.completed.usage`, the thread's running total
/// (marked so, for the engine to count each run's own share); the session is the `thread_id`. An error (`turn.failed`, `error`) fails the iteration with Codex's words.
#[derive(Debug, Default)]
pub struct CodexJsonAdapter {
    run: JsonRun,
}

impl CodexJsonAdapter {
    /// A new adapter for one agent run.
    pub fn new() -> Self {
        Self::default()
    }

    fn item(&mut self, item: &Map<String, Value>, out: &mut dyn AdapterOutput) {
        let status = json::text(item.get("status"));
        let failed = status == Some("failed")
            || item
                .get("exit_code")
                .and_then(Value::as_i64)
                .is_some_and(|code| code != 0);
        match json::text(item.get("type")).unwrap_or_default() {
            "agent_message" => {
                let text = json::text(item.get("text")).unwrap_or_default();
                show_text(text, "", out);
                self.run.answer.set(text);
            }
            "command_execution" => {
                self.run.count_tool();
                let command = json::text(item.get("command"));
                show_tool("shell", command, failed, "", out);
            }
            "file_change" => {
                self.run.count_tool();
                let paths = item
                    .get("changes")
                    .and_then(Value::as_array)
                    .map(|changes| {
                        changes
                            .iter()
                            .filter_map(|c| json::text(c.get("path")))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                show_tool("edit", Some(&paths), failed, "", out);
            }
            "mcp_tool_call" => {
                self.run.count_tool();
                let name = match (json::text(item.get("server")), json::text(item.get("tool"))) {
                    (Some(server), Some(tool)) => format!("{server}.{tool}"),
                    (_, Some(tool)) => tool.to_owned(),
                    _ => "mcp".to_owned(),
                };
                show_tool(&name, None, failed, "", out);
            }
            "web_search" => {
                self.run.count_tool();
                show_tool("web_search", json::text(item.get("query")), false, "", out);
            }
            // A non-fatal error Codex reports as an item: shown, not a failure.
            "error" => {
                let message = json::text(item.get("message")).unwrap_or("error");
                show_text(&format!("⚠ {message}"), "", out);
            }
            // Reasoning, todo lists and anything newer.
            _ => {}
        }
    }
}

impl JsonEvents for CodexJsonAdapter {
    const FORMAT: &'static str = "codex exec --json";

    fn run(&self) -> &JsonRun {
        &self.run
    }

    fn run_mut(&mut self) -> &mut JsonRun {
        &mut self.run
    }

    fn event(&mut self, kind: &str, event: &Map<String, Value>, out: &mut dyn AdapterOutput) {
        match kind {
            "thread.started" => {
                self.run.usage.session_id = json::text(event.get("thread_id")).map(str::to_owned);
            }
            // Only a completed item is whole: its status, exit code and text are final.
            "item.completed" => {
                if let Some(item) = event.get("item").and_then(Value::as_object) {
                    self.item(item, out);
                }
            }
            "turn.completed" => {
                // A turn that completes recovered from any error reported before it (a
                // dropped stream Codex retried).
                self.run.error = None;
                let u = &mut self.run.usage;
                // Each turn's usage is the thread's total so far, also after `codex exec
                // resume`: the last one counts, and the engine takes only what this run added.
                u.tokens_are_session_total = true;
                json::add(&mut u.num_turns, Some(1));
                if let Some(usage) = event.get("usage") {
                    u.input_tokens = json::count(usage.get("input_tokens"));
                    u.cached_input_tokens = json::count(usage.get("cached_input_tokens"));
                    u.output_tokens = json::count(usage.get("output_tokens"));
                    u.reasoning_tokens = json::count(usage.get("reasoning_output_tokens"));
                }
            }
            "turn.failed" => {
                json::add(&mut self.run.usage.num_turns, Some(1));
                self.run.fail(&error_in(event, &["error"]), out);
            }
            "error" => {
                let message = error_in(event, &["message", "error"]);
                // `Reconnecting... 1/5 (stream disconnected ...)`: Codex retrying on its own,
                // not an end; a retry that fails for good ends with `turn.failed`.
                if let Some(retry) = reconnecting(&message) {
                    out.retrying(retry);
                } else {
                    self.run.fail(&message, out);
                }
            }
            _ => {}
        }
    }
}

/// `Reconnecting... 2/5 (stream disconnected before completion: ...)`: Codex retrying a
/// dropped stream, which retry of how many, and why.
fn reconnecting(message: &str) -> Option<AgentRetry> {
    let rest = message.strip_prefix("Reconnecting...")?.trim_start();
    let (count, why) = rest.split_once(' ').unwrap_or((rest, ""));
    let (attempt, max) = count.split_once('/').unwrap_or((count, ""));
    let why = why.trim().trim_start_matches('(').trim_end_matches(')');
    Some(AgentRetry {
        reason: if why.is_empty() {
            "reconnecting".to_owned()
        } else {
            why.to_owned()
        },
        attempt: attempt.parse().ok(),
        max_attempts: max.parse().ok(),
        delay_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, Recorded};
    use super::*;

    fn codex(name: &str) -> Recorded {
        testing::read_fixture(CodexJsonAdapter::new(), "codex", name)
    }

    #[test]
    fn a_run_shows_messages_and_tool_calls_and_keeps_the_threads_running_total() {
        let out = codex("tool-use.jsonl");
        insta::assert_snapshot!(out.shown());
        assert_eq!(out.error, None);
        assert_eq!(out.state().as_deref(), Some("idle"));
        let usage = out.usage.unwrap();
        assert_eq!(
            usage.session_id.as_deref(),
            Some("0199a213-81c0-7800-8aa1-bbab2a035a53")
        );
        // Each `turn.completed` has the thread's total so far: the last one is the total.
        assert!(usage.tokens_are_session_total);
        assert_eq!(usage.input_tokens, Some(24763 + 8120));
        assert_eq!(usage.cached_input_tokens, Some(24448 + 7936));
        assert_eq!(usage.output_tokens, Some(122 + 310));
        assert_eq!(usage.reasoning_tokens, Some(64 + 128));
        assert_eq!(usage.num_turns, Some(2));
        assert_eq!(usage.tool_calls, Some(3));
    }

    /// Codex 0.171 on a usage limit (recorded): its words, with the time to try again.
    #[test]
    fn a_usage_limit_fails_with_codexs_words() {
        let out = codex("usage-limit.jsonl");
        let error = out.error.unwrap();
        assert!(error.starts_with("You’ve hit your usage limit."), "{error}");
        assert!(error.ends_with("try again at 9:58 PM."), "{error}");
    }

    /// Codex's usage limit is the adapter's rate limit, read from Codex's own error (not the
    /// output's tail), with the next 9:58 PM as its reset. "Now" is today's noon, local time:
    /// the real clock would make the test depend on the hour it runs at (in the hour after
    /// 9:58 PM the time is taken as just passed).
    #[test]
    fn a_usage_limit_is_a_rate_limit_with_the_time_codex_names() {
        let noon = jiff::Zoned::now()
            .date()
            .to_datetime(jiff::civil::time(12, 0, 0, 0))
            .to_zoned(jiff::tz::TimeZone::system())
            .unwrap();
        let now = std::time::SystemTime::from(noon.timestamp());
        let limit =
            testing::rate_limit_after(CodexJsonAdapter::new(), "codex", "usage-limit.jsonl", now)
                .unwrap();
        let reset = limit.reset.unwrap().duration_since(now).unwrap();
        // 9:58 PM is written to the minute: the limit may last to its end.
        assert_eq!(reset, std::time::Duration::from_secs(9 * 3600 + 59 * 60));
    }

    /// Codex 0.171 reconnecting a dropped stream (recorded): a retry, not the run's error.
    #[test]
    fn a_reconnect_is_a_retry_not_an_error() {
        let out = codex("reconnect.jsonl");
        assert_eq!(out.error, None);
        assert_eq!(out.state().as_deref(), Some("idle"));
        assert!(
            !out.shown().contains("ended with an error"),
            "{}",
            out.shown()
        );
        assert_eq!(
            out.retries,
            [AgentRetry {
                reason: "stream disconnected before completion: stream closed before \
                         response.completed"
                    .into(),
                attempt: Some(1),
                max_attempts: Some(1),
                delay_ms: None,
            }]
        );
    }

    /// Codex 0.171 after `codex exec resume` (recorded): the thread's running total.
    #[test]
    fn a_resumed_thread_reports_its_running_total() {
        let usage = codex("resumed.jsonl").usage.unwrap();
        assert!(usage.tokens_are_session_total);
        assert_eq!(usage.input_tokens, Some(2400));
        assert_eq!(usage.output_tokens, Some(90));
    }

    #[test]
    fn a_marker_quoted_in_command_output_is_not_the_agents() {
        assert!(testing::raw_state("codex", "quoted-marker.jsonl").is_some());
        let out = codex("quoted-marker.jsonl");
        assert_eq!(out.state(), None);
        assert!(out.error.is_none());
    }

    #[test]
    fn a_marker_with_quoted_attributes_in_the_final_message_is_read_whole() {
        let out = codex("success.jsonl");
        assert_eq!(out.markers(), ["state blocked reason=needs the API key"]);
        assert_eq!(out.usage.unwrap().num_turns, Some(1));
    }

    #[test]
    fn a_failed_turn_fails_the_run_with_codexs_words() {
        let out = codex("error.jsonl");
        assert_eq!(
            out.error.as_deref(),
            Some("unexpected status 401 Unauthorized: Missing bearer authentication in header")
        );
        assert!(out.shown().contains("npm warn"), "{}", out.shown());
    }

    #[test]
    fn chunking_at_any_byte_gives_the_same_reading() {
        testing::assert_every_fixture_reads_alike_in_any_chunks(CodexJsonAdapter::new, "codex");
    }
}
