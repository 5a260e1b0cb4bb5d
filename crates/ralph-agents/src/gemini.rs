//! Gemini CLI's `--output-format stream-json`: one event per line, the answer in deltas.

use serde_json::{Map, Value};

use super::json;
use super::json_lines::{JsonEvents, JsonRun, error_in};
use super::{
    AdapterOutput, AgentRetry, Lines, Piece, ToolNames, one_line, show_text, show_tool,
    strip_escapes,
};

/// Longest retry reason taken from Gemini CLI's standard error.
const RETRY_REASON_CHARS: usize = 120;
use crate::Stream;

/// Gemini CLI's `--output-format stream-json` (`init`, `message`, `tool_use`, `tool_result`,
/// `error`, `result`).
///
/// Shown: the assistant's message deltas as they stream, one line per tool call and one per
/// failed tool result, warnings. Result text: the assistant's deltas joined, so a marker split
/// across deltas is whole. Usage: `result.stats` (tokens per model, summed; duration; tool
/// calls). An `error` event of severity `error` or a `result` with status `error` fails the
/// iteration with Gemini's words; its turn limit ends it with exit code 53, a failure too.
#[derive(Debug, Default)]
pub struct GeminiStreamJsonAdapter {
    run: JsonRun,
    tool_names: ToolNames,
    /// Standard error, in lines: where Gemini CLI says it retries.
    stderr_lines: Lines,
    /// A failed attempt read there, until Gemini says it retries it.
    retry: Option<AgentRetry>,
    /// The last thing shown was a delta without its newline.
    mid_line: bool,
}

impl GeminiStreamJsonAdapter {
    /// A new adapter for one agent run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends a line of streamed text before a line of ralph's own.
    /// One line of standard error, where Gemini CLI reports its retries: `Attempt 1 failed
    /// with status 500. Retrying with backoff... ERROR` or `Attempt 1 failed: MESSAGE` and,
    /// lines later, `... Retrying after 5778ms...`; `... Max attempts reached` is no retry.
    fn retry_line(&mut self, line: &str, out: &mut dyn AdapterOutput) {
        let line = strip_escapes(line);
        if let Some(rest) = line.strip_prefix("Attempt ") {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            let attempt = rest[..digits].parse().ok();
            let after = rest[digits..].trim_start();
            let reason = match after.strip_prefix("failed with status ") {
                Some(status) => status.chars().take_while(char::is_ascii_digit).collect(),
                None => after
                    .strip_prefix("failed:")
                    .unwrap_or(after)
                    .trim()
                    .to_owned(),
            };
            self.retry = Some(AgentRetry {
                reason: one_line(&reason, RETRY_REASON_CHARS),
                attempt,
                ..AgentRetry::default()
            });
        }
        if line.contains("Max attempts reached") {
            self.retry = None;
        } else if let Some((_, after)) = line.split_once("Retrying") {
            if let Some(mut retry) = self.retry.take() {
                retry.delay_ms = after
                    .trim_start()
                    .strip_prefix("after ")
                    .and_then(|ms| ms.split("ms").next())
                    .and_then(|ms| ms.trim().parse().ok());
                out.retrying(retry);
            }
        }
    }

    fn end_line(&mut self, out: &mut dyn AdapterOutput) {
        if self.mid_line {
            out.show(Stream::Stdout, b"\n");
            self.mid_line = false;
        }
    }

    fn fail(&mut self, message: &str, out: &mut dyn AdapterOutput) {
        self.end_line(out);
        self.run.fail(message, out);
    }

    fn stats(&mut self, stats: &Value) {
        let u = &mut self.run.usage;
        u.duration_ms = json::count(stats.get("duration_ms"));
        u.tool_calls = json::count(stats.get("tool_calls"));
        let models = stats.get("models").and_then(Value::as_object);
        let per_model: Vec<&Value> = match models {
            Some(models) if !models.is_empty() => models.values().collect(),
            _ => vec![stats],
        };
        for model in per_model {
            json::add(&mut u.input_tokens, json::count(model.get("input_tokens")));
            json::add(
                &mut u.output_tokens,
                json::count(model.get("output_tokens")),
            );
            json::add(&mut u.cached_input_tokens, json::count(model.get("cached")));
            // Gemini CLI leaves the thinking tokens out of `output_tokens` but counts them in
            // `total_tokens`: what is left of the total is reasoning, part of the output.
            let reasoning = match (
                json::count(model.get("total_tokens")),
                json::count(model.get("input_tokens")),
                json::count(model.get("output_tokens")),
            ) {
                (Some(total), Some(input), Some(output)) => total.saturating_sub(input + output),
                _ => 0,
            };
            if reasoning > 0 {
                json::add(&mut u.output_tokens, Some(reasoning));
                json::add(&mut u.reasoning_tokens, Some(reasoning));
            }
        }
        if let Some(models) = models {
            if models.len() == 1 {
                u.model = models.keys().next().cloned();
            }
        }
    }
}

impl JsonEvents for GeminiStreamJsonAdapter {
    const FORMAT: &'static str = "Gemini stream-json";

    fn run(&self) -> &JsonRun {
        &self.run
    }

    fn run_mut(&mut self) -> &mut JsonRun {
        &mut self.run
    }

    fn before_stderr(&mut self, bytes: &[u8], out: &mut dyn AdapterOutput) {
        self.end_line(out);
        let mut lines = std::mem::take(&mut self.stderr_lines);
        lines.feed(bytes, &mut |piece| {
            if let Piece::Line(line) = piece {
                self.retry_line(&String::from_utf8_lossy(line), out);
            }
        });
        self.stderr_lines = lines;
    }

    fn event(&mut self, kind: &str, event: &Map<String, Value>, out: &mut dyn AdapterOutput) {
        match kind {
            "init" => {
                let u = &mut self.run.usage;
                u.session_id = json::text(event.get("session_id")).map(str::to_owned);
                u.model = json::text(event.get("model")).map(str::to_owned);
            }
            "message" if json::text(event.get("role")) == Some("assistant") => {
                let text = json::text(event.get("content")).unwrap_or_default();
                out.show(Stream::Stdout, text.as_bytes());
                self.mid_line = !text.is_empty() && !text.ends_with('\n');
                self.run.answer.push(text);
            }
            "tool_use" => {
                self.end_line(out);
                let name = json::text(event.get("tool_name"))
                    .unwrap_or("tool")
                    .to_owned();
                let arg = json::main_argument(event.get("parameters"));
                show_tool(&name, arg, false, "", out);
                if let Some(id) = json::text(event.get("tool_id")) {
                    self.tool_names.remember(id.to_owned(), name);
                }
            }
            "tool_result" if json::text(event.get("status")) == Some("error") => {
                self.end_line(out);
                let id = json::text(event.get("tool_id")).unwrap_or_default();
                let name = self.tool_names.name_of(id);
                let why = json::error_message(event.get("error"));
                show_tool(&format!("{name} failed:"), why.as_deref(), true, "", out);
            }
            "error" if json::text(event.get("severity")) == Some("warning") => {
                self.end_line(out);
                let message = json::error_message(event.get("message")).unwrap_or_default();
                show_text(&format!("⚠ {message}"), "", out);
            }
            "error" => self.fail(&error_in(event, &["message"]), out),
            "result" => {
                if let Some(stats) = event.get("stats") {
                    self.stats(stats);
                }
                // A result that fails without words (a cut stream) follows the `error` event
                // that has them: those stay the run's.
                let failed = json::text(event.get("status")) == Some("error");
                if failed && (event.get("error").is_some() || self.run.error.is_none()) {
                    self.fail(&error_in(event, &["error"]), out);
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, out: &mut dyn AdapterOutput) {
        self.end_line(out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, Recorded};
    use super::*;
    use crate::OutputAdapter;

    fn gemini(name: &str) -> Recorded {
        testing::read_fixture(GeminiStreamJsonAdapter::new(), "gemini", name)
    }

    /// gemini-cli 0.61 (recorded): the thinking tokens, left out of `output_tokens` but in
    /// `total_tokens`, are counted in the output.
    #[test]
    fn thinking_tokens_count_in_the_output() {
        let usage = gemini("thinking.jsonl").usage.unwrap();
        assert_eq!(usage.input_tokens, Some(1200));
        assert_eq!(usage.output_tokens, Some(45 + 7));
        assert_eq!(usage.reasoning_tokens, Some(7));
    }

    /// Gemini's quota 429 is the adapter's rate limit, with the wait Gemini asks for.
    #[test]
    fn a_quota_error_is_a_rate_limit_with_the_wait_gemini_asks_for() {
        let now = std::time::SystemTime::now();
        let adapter = GeminiStreamJsonAdapter::new();
        let limit = testing::rate_limit_after(adapter, "gemini", "quota.jsonl", now).unwrap();
        assert_eq!(
            limit.reset,
            Some(now + std::time::Duration::from_millis(2500))
        );
    }

    /// gemini-cli 0.61 on a quota 429 (recorded): its words, with the wait it asks for.
    #[test]
    fn a_quota_error_fails_with_geminis_words() {
        let error = gemini("quota.jsonl").error.unwrap();
        assert!(error.contains("You exceeded your current quota"), "{error}");
        assert!(error.contains("Please retry in 2.5s."), "{error}");
    }

    /// gemini-cli 0.61 on a cut stream (recorded): its `error` event's words, not the bare
    /// failed `result` after it.
    #[test]
    fn a_cut_stream_fails_with_the_words_of_its_error_event() {
        let error = gemini("cut-stream.jsonl").error;
        assert_eq!(
            error.as_deref(),
            Some("Model stream ended without a finish reason.")
        );
    }

    /// Issue 24, item 6: a delta without its newline is ended before standard error is shown.
    #[test]
    fn standard_error_starts_on_a_line_of_its_own() {
        let mut adapter = GeminiStreamJsonAdapter::new();
        let mut out = Recorded::default();
        adapter.feed(
            Stream::Stdout,
            br#"{"type":"message","role":"assistant","content":"Working","delta":true}
"#,
            &mut out,
        );
        adapter.feed(Stream::Stderr, b"Ripgrep is not available.\n", &mut out);
        assert_eq!(out.shown(), "Working\n");
        assert_eq!(out.shown_stderr, b"Ripgrep is not available.\n");
    }

    /// Issue 24, item 8: Gemini CLI's retries, from its standard error (gemini-cli 0.61).
    #[test]
    fn retries_on_standard_error_are_reported() {
        let mut adapter = GeminiStreamJsonAdapter::new();
        let mut out = Recorded::default();
        let stderr = "Attempt 1 failed with status 500. Retrying with backoff... _ApiError: {}\n\
            \x20   at throwErrorIfNotOK (file:///bundle/chunk.js:1:2)\n\
            Attempt 2 failed: You exceeded your current quota. Please retry in 2.5s.\n\
            Suggested retry after 2.5s.. Retrying after 5778ms...\n\
            Attempt 3 failed: You exceeded your current quota.\n\
            Suggested retry after 2.5s.. Max attempts reached\n";
        for chunk in stderr.as_bytes().chunks(7) {
            adapter.feed(Stream::Stderr, chunk, &mut out);
        }
        adapter.finish(&mut out);
        assert_eq!(
            out.retries,
            [
                AgentRetry {
                    reason: "500".into(),
                    attempt: Some(1),
                    max_attempts: None,
                    delay_ms: None,
                },
                AgentRetry {
                    reason: "You exceeded your current quota. Please retry in 2.5s.".into(),
                    attempt: Some(2),
                    max_attempts: None,
                    delay_ms: Some(5778),
                },
            ]
        );
    }

    #[test]
    fn a_run_shows_deltas_and_tool_calls_and_reads_result_stats() {
        let out = gemini("tool-use.jsonl");
        insta::assert_snapshot!(out.shown());
        assert_eq!(out.error, None);
        let usage = out.usage.unwrap();
        assert_eq!(
            usage.session_id.as_deref(),
            Some("c4b3f0e2-7d1a-4f5e-9a8b-2e6d1c0f3a94")
        );
        assert_eq!(usage.input_tokens, Some(18234 + 1204));
        assert_eq!(usage.output_tokens, Some(412 + 38));
        assert_eq!(usage.cached_input_tokens, Some(12288));
        assert_eq!(usage.duration_ms, Some(21877));
        assert_eq!(usage.tool_calls, Some(2));
    }

    #[test]
    fn a_marker_split_across_deltas_is_found() {
        let out = gemini("split-marker.jsonl");
        assert_eq!(out.state().as_deref(), Some("idle"));
        assert_eq!(testing::raw_state("gemini", "split-marker.jsonl"), None);
    }

    #[test]
    fn a_marker_quoted_in_a_tool_result_is_not_the_agents() {
        let out = gemini("quoted-marker.jsonl");
        assert_eq!(out.state(), None);
    }

    #[test]
    fn an_error_fails_the_run_and_warnings_do_not() {
        let out = gemini("error.jsonl");
        assert_eq!(
            out.error.as_deref(),
            Some("[API Error: Requested entity was not found. (model gemini-9-pro)]")
        );
        assert!(out.shown().contains("⚠ Loop detected"), "{}", out.shown());
        assert_eq!(gemini("success.jsonl").error, None);
        assert_eq!(
            gemini("success.jsonl").markers(),
            ["state blocked reason=needs \"prod\" access"]
        );
    }

    #[test]
    fn chunking_at_any_byte_gives_the_same_reading() {
        testing::assert_every_fixture_reads_alike_in_any_chunks(
            GeminiStreamJsonAdapter::new,
            "gemini",
        );
    }
}
