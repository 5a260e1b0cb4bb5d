//! The skeleton of an adapter for an agent that writes one JSON object per line: splitting
//! lines, parsing them leniently, keeping the final answer, the usage and the error, and
//! handing them over at the end. A format ([`JsonEvents`]) says only what its events mean.

use std::time::SystemTime;

use serde_json::{Map, Value};

use super::json::{self, NotJson};
use super::{
    AdapterOutput, Answer, CodexJsonAdapter, CursorStreamJsonAdapter, GeminiStreamJsonAdapter,
    Lines, OpencodeJsonAdapter, OutputAdapter, RateLimit, ReadsLines, StderrTail, Usage,
    error_words, rate_limit_with_reset,
};
use crate::Stream;

/// How many distinct errors a run remembers having shown.
const REMEMBERED_ERRORS: usize = 16;

/// What every JSON Lines adapter keeps, whatever its format.
#[derive(Debug, Default)]
pub(crate) struct JsonRun {
    lines: Lines,
    /// The end of standard error, the reason of a run with no final answer.
    stderr: StderrTail,
    not_json: NotJson,
    /// The agent's final answer: handed over as result text at the end, the only text scanned
    /// for markers.
    pub(crate) answer: Answer,
    /// The figures the agent reported, handed over at the end if there are any.
    pub(crate) usage: Usage,
    /// The error the agent reported about its run, in its words.
    pub(crate) error: Option<String>,
    /// When the rate limit the agent's stream reported resets.
    pub(crate) rate_limit_reset: Option<SystemTime>,
    /// The errors shown so far, the first [`REMEMBERED_ERRORS`]: formats that say an error
    /// twice (Codex's `error` then `turn.failed`, Gemini's `error` then its `result`) get one
    /// line.
    shown_errors: Vec<String>,
}

impl JsonRun {
    /// The agent reported an error that fails its run: shown (unless this run showed the same
    /// words already), and kept as the run's error.
    pub(crate) fn fail(&mut self, message: &str, out: &mut dyn AdapterOutput) {
        let words = error_words(message);
        if !self.shown_errors.contains(&words) {
            out.show(
                Stream::Stdout,
                format!("✗ the agent's run ended with an error: {words}\n").as_bytes(),
            );
            // Bounded, as everything an adapter keeps: an agent that reports error after error
            // has the later ones shown every time.
            if self.shown_errors.len() < REMEMBERED_ERRORS {
                self.shown_errors.push(words.clone());
            }
        }
        self.error = Some(words);
    }

    /// One more tool call.
    pub(crate) fn count_tool(&mut self) {
        json::add(&mut self.usage.tool_calls, Some(1));
    }

    /// The session id an event names, if it names one: the latest is kept.
    pub(crate) fn session(&mut self, id: Option<&str>) {
        if let Some(id) = id {
            if self.usage.session_id.as_deref() != Some(id) {
                self.usage.session_id = Some(id.to_owned());
            }
        }
    }
}

/// One agent's JSON Lines format: what its events mean. Listed in `output_adapters!`, a type
/// implementing it is an [`OutputAdapter`]: standard error is shown as is; each line of
/// standard output that is a JSON object is handed to [`event`](Self::event) with its `type`,
/// one that is not JSON is shown as text (with a warning); at the end, [`JsonRun::answer`] is
/// the result text, [`JsonRun::usage`] the usage and [`JsonRun::error`] the reported error.
pub(crate) trait JsonEvents: Send {
    /// The format's name, as warnings say it (`codex exec --json`).
    const FORMAT: &'static str;

    /// What the skeleton keeps for this adapter.
    fn run(&self) -> &JsonRun;

    /// What the skeleton keeps for this adapter, to change.
    fn run_mut(&mut self) -> &mut JsonRun;

    /// One event: one line of standard output that is a JSON object, and its `type` (empty
    /// when it has none).
    fn event(&mut self, kind: &str, event: &Map<String, Value>, out: &mut dyn AdapterOutput);

    /// The output ended: close what is still open (a step, a streamed line). Called before
    /// the warning that sums up the lines that were not JSON.
    fn end(&mut self, _out: &mut dyn AdapterOutput) {}

    /// Whether the run ended without the event that carries the final answer, for a format
    /// that always writes one: such a run failed.
    fn missing_final_answer(&self) -> bool {
        false
    }

    /// Standard error is about to be shown: a format that streams its answer without newlines
    /// ends the line first, so the two do not run together; one whose agent reports its
    /// retries there reads them.
    fn before_stderr(&mut self, _bytes: &[u8], _out: &mut dyn AdapterOutput) {}
}

impl<F: JsonEvents> ReadsLines for F {
    fn lines(&mut self) -> &mut Lines {
        &mut self.run_mut().lines
    }

    fn line(&mut self, line: &[u8], out: &mut dyn AdapterOutput) {
        if let Some(event) = json::object(line, F::FORMAT, &mut self.run_mut().not_json, out) {
            let kind = json::text(event.get("type")).unwrap_or_default();
            self.event(kind, &event, out);
        }
    }
}

/// The skeleton's `finish`: the last line, the format's end, the warning about lines that
/// were not JSON, a missing final answer, then the answer and the usage handed over.
fn finish<F: JsonEvents>(adapter: &mut F, out: &mut dyn AdapterOutput) -> Option<Usage> {
    adapter.finish_lines(out);
    adapter.end(out);
    adapter.run().not_json.summarise(F::FORMAT, out);
    if adapter.missing_final_answer() {
        let stderr = adapter.run().stderr.last_line();
        adapter.run_mut().error = Some(no_final_answer(stderr, out));
    }
    let run = adapter.run_mut();
    run.answer.hand_over(out);
    crate::take_reported(&mut run.usage)
}

/// Makes each [`JsonEvents`] adapter an [`OutputAdapter`] through the skeleton. Written out per
/// adapter rather than as one blanket impl, so the public docs list each adapter by name.
macro_rules! output_adapters {
    ($($adapter:ty),* $(,)?) => {$(
        impl OutputAdapter for $adapter {
            fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
                if stream == Stream::Stderr {
                    self.run_mut().stderr.push(bytes);
                    self.before_stderr(bytes, out);
                }
                self.feed_lines(stream, bytes, out);
            }

            fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage> {
                finish(self, out)
            }

            fn reported_error(&self) -> Option<String> {
                self.run().error.clone()
            }

            fn rate_limit(&self, output_tail: &str, now: SystemTime) -> Option<RateLimit> {
                let run = self.run();
                rate_limit_with_reset(run.error.as_deref(), run.rate_limit_reset, output_tail, now)
            }
        }
    )*};
}

output_adapters!(
    CodexJsonAdapter,
    CursorStreamJsonAdapter,
    GeminiStreamJsonAdapter,
    OpencodeJsonAdapter,
);

/// The words of an error event that carries none.
pub(crate) const UNSAID_ERROR: &str = "an error the agent did not describe";

/// The words of the error an agent's event reports: the message in the first of `fields` that
/// carries one (a string, or an object with a `message`), [`UNSAID_ERROR`] when none does.
pub(crate) fn error_in(event: &Map<String, Value>, fields: &[&str]) -> String {
    fields
        .iter()
        .find_map(|field| json::error_message(event.get(*field)))
        .unwrap_or_else(|| UNSAID_ERROR.to_owned())
}

/// Shows that the run ended without its final answer and gives the error that says so.
pub(crate) fn no_final_answer(stderr: Option<String>, out: &mut dyn AdapterOutput) -> String {
    const WORDS: &str = "the agent's run ended without a final answer";
    out.show(Stream::Stdout, format!("✗ {WORDS}\n").as_bytes());
    match stderr {
        Some(line) => format!("{WORDS}: {line}"),
        None => WORDS.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{self, Recorded};
    use super::*;

    /// The error events of Codex (`turn.failed`, `error`) and Gemini CLI (`error`, `result`),
    /// each read from the fields its adapter names.
    #[test]
    fn an_error_is_read_from_the_first_field_that_carries_one() {
        let read = |event: Value, fields: &[&str]| {
            error_in(event.as_object().expect("an event is an object"), fields)
        };
        // Codex's `turn.failed`: an object with a `message`.
        assert_eq!(
            read(
                json!({"type": "turn.failed", "error": {"message": "401 Unauthorized"}}),
                &["error"]
            ),
            "401 Unauthorized"
        );
        // Codex's `error`: a `message` string, or only an `error`.
        assert_eq!(
            read(
                json!({"type": "error", "message": "Reconnecting... 1/5"}),
                &["message", "error"]
            ),
            "Reconnecting... 1/5"
        );
        assert_eq!(
            read(
                json!({"type": "error", "error": {"message": "quota"}}),
                &["message", "error"]
            ),
            "quota"
        );
        // Gemini CLI's `error` and its failed `result`.
        assert_eq!(
            read(
                json!({"type": "error", "severity": "error", "message": "[API Error: gone]"}),
                &["message"]
            ),
            "[API Error: gone]"
        );
        assert_eq!(
            read(
                json!({"type": "result", "status": "error",
                       "error": {"type": "FatalTurnLimitedError", "message": "turn limit"}}),
                &["error"]
            ),
            "turn limit"
        );
        // An error that says nothing more.
        assert_eq!(
            read(json!({"type": "turn.failed", "error": {}}), &["error"]),
            UNSAID_ERROR
        );
        assert_eq!(
            read(json!({"type": "error"}), &["message", "error"]),
            UNSAID_ERROR
        );
    }

    /// Codex says its error twice (`error`, then `turn.failed`), Gemini CLI too (`error`, then
    /// its `result`): each run shows it once (recorded fixtures).
    #[test]
    fn an_error_said_twice_is_shown_once() {
        let shown = [
            testing::read_fixture(CodexJsonAdapter::new(), "codex", "error.jsonl").shown(),
            testing::read_fixture(GeminiStreamJsonAdapter::new(), "gemini", "error.jsonl").shown(),
        ];
        for shown in shown {
            assert_eq!(
                shown
                    .matches("✗ the agent's run ended with an error")
                    .count(),
                1,
                "{shown}"
            );
        }
    }

    #[test]
    fn an_error_is_shown_once_per_run_and_a_different_one_still_shows() {
        let mut run = JsonRun::default();
        let mut out = Recorded::default();
        run.fail("401 Unauthorized", &mut out);
        run.fail("401 Unauthorized", &mut out);
        run.fail("quota exceeded", &mut out);
        run.fail("401 Unauthorized", &mut out);
        assert_eq!(
            out.shown(),
            "✗ the agent's run ended with an error: 401 Unauthorized\n\
             ✗ the agent's run ended with an error: quota exceeded\n"
        );
        assert_eq!(run.error.as_deref(), Some("401 Unauthorized"));
    }

    #[test]
    fn an_agent_reporting_error_after_error_is_remembered_within_bounds() {
        let mut run = JsonRun::default();
        let mut out = Recorded::default();
        for n in 0..1_000 {
            run.fail(&format!("error {n}"), &mut out);
        }
        assert_eq!(run.shown_errors.len(), REMEMBERED_ERRORS);
        assert_eq!(
            out.shown().lines().count(),
            1_000,
            "each distinct error is shown"
        );
        assert_eq!(run.error.as_deref(), Some("error 999"));
    }
}
