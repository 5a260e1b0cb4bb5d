//! Agent adapters for ralph: what an agent's raw output means.
//!
//! An [`OutputAdapter`] turns the bytes an agent prints into three things: what to show, the
//! result text (the only text scanned for markers) and, at the end, [`Usage`] figures, the
//! error the agent reported and the rate limit that stopped it. The raw output itself still
//! goes to the iteration log, whatever the adapter.
//!
//! Built in: [`TextAdapter`] (output shown as is, all of it result text), and one adapter per
//! agent JSON format, each reading only the agent's final answer for markers: Claude Code's
//! stream-json and json ([`ClaudeStreamJsonAdapter`]), Codex's `exec --json`
//! ([`CodexJsonAdapter`]), Gemini CLI's stream-json ([`GeminiStreamJsonAdapter`]), opencode's
//! `run --format json` ([`OpencodeJsonAdapter`]), Cursor's stream-json
//! ([`CursorStreamJsonAdapter`]) and Amp's `--stream-json` ([`ClaudeStreamJsonAdapter::amp`]).
//! [`choose_output`] is how ralph picks between them; an embedder adds its own through
//! ralph-engine's `Engine::set_adapter`.
//!
//! This crate only reads bytes it is given: it never spawns a process, never prints (what it
//! has to say goes to the [`AdapterOutput`] it is handed) and reads no clock (a reset written
//! as a clock time is resolved against a time passed in). The one thing it reads beyond those
//! bytes is the system's time zone database, for a reset written in a named zone.

mod amp;
mod choose;
mod claude;
mod codex;
mod cursor;
mod gemini;
mod json;
mod json_lines;
mod lines;
mod opencode;
pub mod rate_limit;
mod text;

use std::collections::VecDeque;
use std::time::SystemTime;

pub use choose::{OutputChoice, choose_output};
pub use claude::ClaudeStreamJsonAdapter;
pub use codex::CodexJsonAdapter;
pub use cursor::CursorStreamJsonAdapter;
pub use gemini::GeminiStreamJsonAdapter;
pub use lines::{Lines, Piece, ReadsLines, overlong_warning};
pub use opencode::OpencodeJsonAdapter;
pub use rate_limit::RateLimit;
pub use text::TextAdapter;
// The wire types an adapter reports in: ralph-events owns them (events carry them); kept here
// as the adapters' own API.
pub(crate) use ralph_events::add_cost;
pub use ralph_events::{RunCost, SessionTokens, Stream, Usage, describe_retry};

/// Longest JSON line an adapter buffers to parse (16 MiB). A longer line is shown as text, in
/// pieces as it arrives, and never parsed: memory stays bounded whatever the agent prints.
/// Agents write one event per line; only a tool result quoting a huge file comes near this.
pub const MAX_JSON_LINE: usize = 16 * 1024 * 1024;

/// How much of an agent's final answer is kept (the last 1 MiB). Markers belong at the end of
/// the final answer, so the tail is the part that matters.
pub const MAX_RESULT_TEXT: usize = 1024 * 1024;

/// How much of an agent's error text is kept for [`OutputAdapter::reported_error`].
const MAX_ERROR_TEXT: usize = 4096;

/// How much of a tool call's main argument is shown.
const TOOL_ARG_CHARS: usize = 120;

/// Tool calls whose name is remembered, to name the one a failed result belongs to.
const MAX_TOOL_NAMES: usize = 64;

/// Receives what an adapter makes of the agent's output.
pub trait AdapterOutput {
    /// Bytes to show the user, in order.
    fn show(&mut self, stream: Stream, bytes: &[u8]);

    /// Part of the agent's result text; markers are looked for here and nowhere else.
    fn result_text(&mut self, stream: Stream, bytes: &[u8]);

    /// Something about the output the user should hear (lines that are not the expected
    /// JSON, say). The engine's output emits it as a `WARNING` event; the default, for an
    /// output of an embedder's own, logs it with `tracing`.
    fn warn(&mut self, message: String) {
        tracing::warn!("{message}");
    }

    /// The agent is retrying a request on its own. The engine's output emits it as an
    /// `AGENT_RETRYING` event; the default, for an output of an embedder's own, logs it.
    fn retrying(&mut self, retry: AgentRetry) {
        tracing::info!("agent retrying: {}", retry.describe());
    }
}

/// An agent retrying a request on its own, as its adapter read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentRetry {
    /// Why, in the agent's words (`529 overloaded_error`).
    pub reason: String,
    /// Which retry this is, from 1, when the agent says.
    pub attempt: Option<u64>,
    /// How many retries it makes at most, when the agent says.
    pub max_attempts: Option<u64>,
    /// How long it waits before this retry, when the agent says.
    pub delay_ms: Option<u64>,
}

impl AgentRetry {
    /// A retry for `reason`, the rest unknown.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            ..Self::default()
        }
    }

    /// `529 overloaded_error (3/10)`: the reason and the attempt, as the status line shows it.
    pub fn describe(&self) -> String {
        describe_retry(&self.reason, self.attempt, self.max_attempts)
    }
}

/// Reads one agent run's output. A fresh adapter is made for every agent run.
pub trait OutputAdapter: Send {
    /// A chunk of raw output, in arrival order; chunks split lines and characters anywhere.
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput);

    /// The agent's pipes are closed: hand over anything held back and report usage, if the
    /// agent reported any.
    fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage>;

    /// After [`finish`](Self::finish): the error the agent reported about its own run (Claude
    /// Code's `is_error`, Codex's `turn.failed`, ...), in its words. A run with an error counts
    /// as failed, whatever its exit code.
    fn reported_error(&self) -> Option<String> {
        None
    }

    /// After [`finish`](Self::finish), for a run that failed (a non-zero exit, a reported
    /// error): the rate limit that refused it, if the agent said so, with its reset when the
    /// agent gave one. The engine waits a limit with a reset out (at most
    /// `rate_limit.max_wait`) and backs off from one without as from a failure; it asks about
    /// failed runs only, so an agent that merely talks about rate limits while it works is
    /// never taken for a limited one.
    ///
    /// `output_tail` is the end of the agent's raw output, both streams in the order written;
    /// `now` is the moment a reset written as a clock time is the next one after. The default
    /// reads the agent's words, its [`reported_error`](Self::reported_error) or else
    /// `output_tail`, for the forms [`rate_limit::detect`] knows (Claude Code's, Codex's and
    /// Gemini CLI's messages, HTTP 429, ...). An adapter whose agent reports a limit in its
    /// own stream says so itself (Claude Code's `rate_limit_event`, opencode's 429 headers).
    fn rate_limit(&self, output_tail: &str, now: SystemTime) -> Option<RateLimit> {
        let error = self.reported_error();
        rate_limit::detect(error.as_deref().unwrap_or(output_tail), now)
    }
}

/// The rate limit of a failed run whose agent may have given the reset in its stream, to the
/// second (`stream_reset`): that reset stands for the one its words give (to the minute), and
/// makes the run a rate-limited one whatever those words are.
fn rate_limit_with_reset(
    error: Option<&str>,
    stream_reset: Option<SystemTime>,
    output_tail: &str,
    now: SystemTime,
) -> Option<RateLimit> {
    match stream_reset {
        Some(reset) => Some(RateLimit::resets_at(reset)),
        None => rate_limit::detect(error.unwrap_or(output_tail), now),
    }
}

/// What an adapter hands over at `finish`: the figures gathered in `usage`, which is left
/// empty, or `None` when the agent reported none.
pub(crate) fn take_reported(usage: &mut Usage) -> Option<Usage> {
    let usage = std::mem::take(usage);
    (usage != Usage::default()).then_some(usage)
}

/// The agent's final answer, at most [`MAX_RESULT_TEXT`] bytes (its end).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Answer(String);

impl Answer {
    /// Replaces the answer.
    pub(crate) fn set(&mut self, text: &str) {
        self.0.clear();
        self.push(text);
    }

    /// Appends to the answer (a streamed delta), keeping its end.
    pub(crate) fn push(&mut self, text: &str) {
        if text.len() >= MAX_RESULT_TEXT {
            self.0.clear();
            let mut start = text.len() - MAX_RESULT_TEXT;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            self.0.push_str(&text[start..]);
            return;
        }
        if self.0.len() + text.len() > MAX_RESULT_TEXT {
            let mut start = self.0.len() + text.len() - MAX_RESULT_TEXT;
            while !self.0.is_char_boundary(start) {
                start += 1;
            }
            self.0.drain(..start);
        }
        self.0.push_str(text);
    }

    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// Hands the answer over as result text (once, at the end of the run).
    pub(crate) fn hand_over(&mut self, out: &mut dyn AdapterOutput) {
        let text = std::mem::take(&mut self.0);
        if !text.is_empty() {
            out.result_text(Stream::Stdout, text.as_bytes());
        }
    }
}

/// The names of the last [`MAX_TOOL_NAMES`] tool calls, by call id: a failed result names its
/// call only by id.
#[derive(Debug, Default)]
pub(crate) struct ToolNames(VecDeque<(String, String)>);

impl ToolNames {
    /// Remembers that call `id` is of tool `name`.
    pub(crate) fn remember(&mut self, id: String, name: String) {
        if self.0.len() == MAX_TOOL_NAMES {
            self.0.pop_front();
        }
        self.0.push_back((id, name));
    }

    /// The tool of call `id`, `tool` when it is not remembered.
    pub(crate) fn name_of(&self, id: &str) -> &str {
        self.0
            .iter()
            .rev()
            .find(|(known, _)| known == id)
            .map_or("tool", |(_, name)| name.as_str())
    }
}

/// An error's words, without terminal colour escapes, trimmed and cut to their last
/// [`MAX_ERROR_TEXT`] bytes.
pub(crate) fn error_words(text: &str) -> String {
    let mut text = strip_escapes(text).trim().to_owned();
    keep_tail(&mut text, MAX_ERROR_TEXT);
    text
}

/// `text` without terminal escape sequences (`ESC [ ... letter`, `ESC ] ... BEL`, a charset
/// switch `ESC ( B`, and a lone `ESC x`) nor other control characters (shift-in, backspace,
/// bell, ...; newlines, carriage returns and tabs are kept): an agent's colours, which
/// `NO_COLOR` does not always turn off, and a terminal's housekeeping are no part of its words.
pub fn strip_escapes(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            if !c.is_control() || matches!(c, '\n' | '\r' | '\t') {
                plain.push(c);
            }
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                // An OSC sequence, ended by BEL or ESC \.
                for c in chars.by_ref() {
                    if c == '\u{7}' || c == '\\' {
                        break;
                    }
                }
            }
            Some(' '..='/') => {
                // Intermediate bytes, then a final one: `ESC ( B`, the charset `tput sgr0`
                // switches back to.
                for c in chars.by_ref() {
                    if !(' '..='/').contains(&c) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    plain
}

/// How much of an agent's standard error a [`StderrTail`] keeps.
const STDERR_TAIL_BYTES: usize = 2048;

/// The end of an agent's standard error: why a run that died before its first JSON event
/// died (`claude -p --output-format stream-json` without `--verbose`, say).
#[derive(Debug, Default)]
pub(crate) struct StderrTail(Vec<u8>);

impl StderrTail {
    /// More standard error.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
        if self.0.len() > 2 * STDERR_TAIL_BYTES {
            self.0.drain(..self.0.len() - STDERR_TAIL_BYTES);
        }
    }

    /// The last line that is not blank, without colour escapes.
    pub(crate) fn last_line(&self) -> Option<String> {
        let text = strip_escapes(&String::from_utf8_lossy(&self.0));
        text.lines()
            .rev()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .map(|line| one_line(line, MAX_ERROR_TEXT))
    }
}

/// Shows a text block: its lines, the trailing blank ones dropped, each after `indent`.
pub(crate) fn show_text(text: &str, indent: &str, out: &mut dyn AdapterOutput) {
    let text = text.trim_end();
    if text.is_empty() {
        return;
    }
    if indent.is_empty() {
        out.show(Stream::Stdout, text.as_bytes());
        out.show(Stream::Stdout, b"\n");
        return;
    }
    for line in text.lines() {
        out.show(Stream::Stdout, format!("{indent}{line}\n").as_bytes());
    }
}

/// Shows one line for a tool call: `▸ NAME ARG`, with `✗` when it failed.
pub(crate) fn show_tool(
    name: &str,
    arg: Option<&str>,
    failed: bool,
    indent: &str,
    out: &mut dyn AdapterOutput,
) {
    let mark = if failed { "✗" } else { "▸" };
    let line = match arg.map(|a| one_line(a, TOOL_ARG_CHARS)) {
        Some(arg) if !arg.is_empty() => format!("{indent}{mark} {name} {arg}\n"),
        _ => format!("{indent}{mark} {name}\n"),
    };
    out.show(Stream::Stdout, line.as_bytes());
}

/// The first line of `text`, at most `max` characters, with `…` when cut.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let first = text.trim().lines().next().unwrap_or_default();
    let mut shown: String = first.chars().take(max).collect();
    if shown.len() < text.trim().len() {
        shown.push('…');
    }
    shown
}

/// Keeps the last `max` bytes of `text`, cut at a character boundary.
pub(crate) fn keep_tail(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.drain(..start);
    text.shrink_to_fit();
}

#[cfg(test)]
pub(crate) mod testing {
    //! What the adapters' unit tests share: a recording output and the fixtures.

    use std::path::PathBuf;

    use super::*;

    /// Everything an adapter handed over, per stream.
    #[derive(Debug, Default, PartialEq)]
    pub(crate) struct Recorded {
        pub(crate) shown: Vec<u8>,
        pub(crate) shown_stderr: Vec<u8>,
        pub(crate) result: Vec<u8>,
        pub(crate) usage: Option<Usage>,
        pub(crate) error: Option<String>,
        pub(crate) warnings: Vec<String>,
        pub(crate) retries: Vec<AgentRetry>,
    }

    impl AdapterOutput for Recorded {
        fn show(&mut self, stream: Stream, bytes: &[u8]) {
            match stream {
                Stream::Stdout => self.shown.extend_from_slice(bytes),
                Stream::Stderr => self.shown_stderr.extend_from_slice(bytes),
            }
        }

        fn result_text(&mut self, stream: Stream, bytes: &[u8]) {
            assert_eq!(stream, Stream::Stdout, "results come from stdout");
            self.result.extend_from_slice(bytes);
        }

        fn warn(&mut self, message: String) {
            self.warnings.push(message);
        }

        fn retrying(&mut self, retry: AgentRetry) {
            self.retries.push(retry);
        }
    }

    impl Recorded {
        pub(crate) fn shown(&self) -> String {
            String::from_utf8(self.shown.clone()).expect("shown text is UTF-8")
        }

        pub(crate) fn result(&self) -> String {
            String::from_utf8(self.result.clone()).expect("result text is UTF-8")
        }

        /// The state the engine would report: the last state marker of the result text.
        pub(crate) fn state(&self) -> Option<String> {
            let findings = ralph_marker::scan(&self.result);
            ralph_marker::last_state(&findings).map(|m| m.name.clone())
        }

        /// Every marker of the result text, as `KIND NAME key=value...`.
        pub(crate) fn markers(&self) -> Vec<String> {
            ralph_marker::scan(&self.result)
                .into_iter()
                .filter_map(|f| match f {
                    ralph_marker::Finding::Marker(m) => Some(format!(
                        "{} {}{}",
                        m.kind,
                        m.name,
                        m.attrs
                            .iter()
                            .map(|(k, v)| format!(" {k}={v}"))
                            .collect::<String>()
                    )),
                    ralph_marker::Finding::Diagnostic(_) => None,
                })
                .collect()
        }
    }

    /// `fixtures/AGENT/NAME`.
    pub(crate) fn fixture(agent: &str, name: &str) -> Vec<u8> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(agent)
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Feeds `pieces` to `adapter` on stdout, in order, then finishes it.
    pub(crate) fn read<'a>(
        mut adapter: impl OutputAdapter,
        pieces: impl IntoIterator<Item = &'a [u8]>,
    ) -> Recorded {
        let mut out = Recorded::default();
        for piece in pieces {
            adapter.feed(Stream::Stdout, piece, &mut out);
        }
        out.usage = adapter.finish(&mut out);
        out.error = adapter.reported_error();
        out
    }

    /// Reads `fixtures/AGENT/NAME` whole with `adapter`.
    pub(crate) fn read_fixture(adapter: impl OutputAdapter, agent: &str, name: &str) -> Recorded {
        read(adapter, [fixture(agent, name).as_slice()])
    }

    /// The rate limit `adapter` reports at `now` once it has read `fixtures/AGENT/NAME` whole
    /// (the run's output ending in `exit 1`).
    pub(crate) fn rate_limit_after(
        mut adapter: impl OutputAdapter,
        agent: &str,
        name: &str,
        now: SystemTime,
    ) -> Option<RateLimit> {
        let mut out = Recorded::default();
        adapter.feed(Stream::Stdout, &fixture(agent, name), &mut out);
        adapter.finish(&mut out);
        adapter.rate_limit("exit 1", now)
    }

    /// Reads `raw` whole, cut in two at every byte, and in small chunks: every reading must
    /// be the same.
    pub(crate) fn assert_chunking_does_not_matter<A: OutputAdapter>(
        make: impl Fn() -> A,
        raw: &[u8],
        what: &str,
    ) {
        let whole = read(make(), [raw]);
        for cut in 0..=raw.len() {
            let (a, b) = raw.split_at(cut);
            assert_eq!(read(make(), [a, b]), whole, "{what} cut at byte {cut}");
        }
        assert_eq!(read(make(), raw.chunks(1)), whole, "{what} byte by byte");
        assert_eq!(
            read(make(), raw.chunks(7)),
            whole,
            "{what} in 7-byte chunks"
        );
    }

    /// [`assert_chunking_does_not_matter`] for every `fixtures/AGENT/*.jsonl`.
    pub(crate) fn assert_every_fixture_reads_alike_in_any_chunks<A: OutputAdapter>(
        make: impl Fn() -> A,
        agent: &str,
    ) {
        let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(agent);
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
            .map(|entry| {
                entry
                    .expect("a fixture")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.ends_with(".jsonl"))
            .collect();
        names.sort();
        assert!(names.len() >= 4, "{agent}: only {names:?}");
        for name in names {
            assert_chunking_does_not_matter(&make, &fixture(agent, &name), &name);
        }
    }

    /// The last state marker anywhere in `fixtures/AGENT/NAME`, as a plain text scan of the
    /// raw stream would find it.
    pub(crate) fn raw_state(agent: &str, name: &str) -> Option<String> {
        let findings = ralph_marker::scan(&fixture(agent, name));
        ralph_marker::last_state(&findings).map(|m| m.name.clone())
    }

    #[test]
    fn lines_hold_at_most_the_cap_and_hand_a_longer_line_over_raw() {
        let mut lines = Lines::default();
        let (mut whole, mut raw, mut most, mut overlong) = (Vec::new(), 0, 0, 0);
        let mut long = vec![b'x'; MAX_JSON_LINE + 100];
        long.extend_from_slice(b"\n{\"a\":1}\n");
        for chunk in long.chunks(64 * 1024) {
            lines.feed(chunk, &mut |piece| match piece {
                Piece::Line(line) => whole.push(line.to_vec()),
                Piece::Raw(bytes) => raw += bytes.len(),
                Piece::Overlong => overlong += 1,
            });
            most = most.max(lines.retained_bytes());
        }
        assert!(most <= MAX_JSON_LINE, "held {most}");
        assert_eq!(raw, MAX_JSON_LINE + 101);
        assert_eq!(overlong, 1, "announced once");
        assert_eq!(whole, [b"{\"a\":1}".to_vec()]);
        assert!(lines.retained_bytes() <= crate::lines::KEPT_LINE_CAPACITY);
    }

    #[test]
    fn every_json_adapter_reads_on_after_a_line_past_the_cap() {
        use ralph_frontmatter::OutputFormat::*;
        for (format, agent, fixture_name) in [
            (ClaudeStreamJson, "claude", "idle.jsonl"),
            (CodexJson, "codex", "tool-use.jsonl"),
            (GeminiStreamJson, "gemini", "tool-use.jsonl"),
            (OpencodeJson, "opencode", "tool-use.jsonl"),
            (CursorStreamJson, "cursor", "tool-use.jsonl"),
            (AmpStreamJson, "amp", "tool-use.jsonl"),
        ] {
            let choice = choose::choose_output(&[], Some(format));
            let mut adapter = choice.adapter();
            let mut out = Recorded::default();
            let mut long = br#"{"type":"tool_result","output":""#.to_vec();
            long.resize(MAX_JSON_LINE + 1000, b'y');
            long.extend_from_slice(b"\"}\n");
            let tail = fixture(agent, fixture_name);
            for chunk in long.chunks(64 * 1024).chain(tail.chunks(64 * 1024)) {
                adapter.feed(Stream::Stdout, chunk, &mut out);
            }
            out.usage = adapter.finish(&mut out);
            assert_eq!(out.state().as_deref(), Some("idle"), "{agent}");
            assert!(out.usage.is_some(), "{agent}");
            assert_eq!(out.warnings, [overlong_warning()], "{agent}");
        }
    }

    #[test]
    fn the_answer_keeps_its_last_mebibyte_at_a_character_boundary() {
        let mut answer = Answer::default();
        answer.push(&"é".repeat(MAX_RESULT_TEXT / 2 + 10));
        answer.push("<!-- ralph:state idle -->");
        assert!(answer.as_str().len() <= MAX_RESULT_TEXT);
        assert!(answer.as_str().ends_with("<!-- ralph:state idle -->"));
        answer.set(&"x".repeat(MAX_RESULT_TEXT + 5));
        assert_eq!(answer.as_str().len(), MAX_RESULT_TEXT);
    }
}
