//! Agent adapters: what an agent's raw output means.
//!
//! An [`OutputAdapter`] turns the bytes an agent prints into three things: what to show (handed
//! to the sinks' [`EventSink::output`](crate::EventSink::output)), the result text (the only
//! text scanned for markers) and, at the end, [`Usage`] figures. The raw output itself still
//! goes to the iteration log, whatever the adapter.
//!
//! Two adapters are built in: [`TextAdapter`] (output shown as is, all of it result text) and
//! [`ClaudeStreamJsonAdapter`] (Claude Code's `--output-format stream-json`). An embedder adds
//! its own with [`Engine::set_adapter`](crate::Engine::set_adapter); [`choose_output`] is how
//! ralph picks between the built-ins.

use std::path::Path;

use ralph_frontmatter::OutputFormat;
use serde::{Deserialize, Serialize};

use crate::event::Stream;

/// Longest stream-json line the Claude adapter buffers to parse (16 MiB). A longer line is
/// shown as text, in pieces as it arrives, and never parsed: memory stays bounded whatever the
/// agent prints. Claude Code writes one event per line; only a tool result quoting a huge file
/// comes near this.
pub const MAX_JSON_LINE: usize = 16 * 1024 * 1024;

/// How much of the Claude result text is kept (the last 1 MiB). Markers belong at the end of
/// the final answer, so the tail is the part that matters.
pub const MAX_RESULT_TEXT: usize = 1024 * 1024;

/// A line buffer grown past this is given back after the line is handled, so one long line
/// does not hold memory for the rest of the run.
const KEPT_LINE_CAPACITY: usize = 64 * 1024;

/// How much of a result event's error text is kept for [`OutputAdapter::reported_error`].
const MAX_ERROR_TEXT: usize = 4096;

/// How much of a tool call's main argument is shown.
const TOOL_ARG_CHARS: usize = 120;

/// Receives what an adapter makes of the agent's output.
pub trait AdapterOutput {
    /// Bytes to show the user, in order.
    fn show(&mut self, stream: Stream, bytes: &[u8]);

    /// Part of the agent's result text; markers are looked for here and nowhere else.
    fn result_text(&mut self, stream: Stream, bytes: &[u8]);
}

/// Reads one agent run's output. A fresh adapter is made for every agent run.
pub trait OutputAdapter: Send {
    /// A chunk of raw output, in arrival order; chunks split lines and characters anywhere.
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput);

    /// The agent's pipes are closed: hand over anything held back and report usage, if the
    /// agent reported any.
    fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage>;

    /// After [`finish`](Self::finish): the error the agent reported about its own run (Claude
    /// Code's `is_error`), in its words. A run with an error counts as failed, whatever its exit
    /// code, and its words are where a rate limit and its reset time are looked for.
    fn reported_error(&self) -> Option<String> {
        None
    }
}

/// What an agent run cost, as the agent reported it. Every figure is optional: an agent reports
/// what it knows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Cost in US dollars (Claude Code's `total_cost_usd`, or the older `cost_usd`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Conversation turns the agent took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    /// The agent's own measure of its run time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The agent's session id (to resume or inspect the conversation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Input tokens, cache reads and writes not included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
}

/// Plain text: everything is shown as is and everything is result text, on both streams.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextAdapter;

impl OutputAdapter for TextAdapter {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        out.result_text(stream, bytes);
        out.show(stream, bytes);
    }

    fn finish(&mut self, _out: &mut dyn AdapterOutput) -> Option<Usage> {
        None
    }
}

/// Claude Code's `--output-format stream-json` (with `--verbose`): one JSON event per line.
///
/// Shown: one line per assistant text block and per tool call (`▸ Bash cargo test`), and a line
/// when the run ends in error. Result text: the `result` field of the `result` event, the
/// agent's final answer, so a marker quoted in a tool result (the agent reading RALPH.md, say)
/// is never taken as the agent's. A line that is not JSON is shown as text and logged; standard
/// error is shown as is. Memory is bounded by [`MAX_JSON_LINE`] and [`MAX_RESULT_TEXT`].
#[derive(Debug, Default)]
pub struct ClaudeStreamJsonAdapter {
    /// The current line of standard output, until its newline arrives.
    line: Vec<u8>,
    /// The current line passed [`MAX_JSON_LINE`]: the rest of it is shown as it comes.
    overlong: bool,
    /// The last result event's text, at most [`MAX_RESULT_TEXT`] bytes.
    result: Option<String>,
    /// Figures from the `result` event and the session id from any event.
    usage: Option<Usage>,
    /// Lines that were not JSON, for one summary warning.
    invalid_lines: u64,
    /// The last result event's error, if it reported one: its text, or its subtype.
    error: Option<String>,
}

impl ClaudeStreamJsonAdapter {
    /// A new adapter for one agent run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes this adapter holds on to right now (buffer capacities included): what a long
    /// stream costs in memory, at most about [`MAX_JSON_LINE`] + [`MAX_RESULT_TEXT`].
    pub fn retained_bytes(&self) -> usize {
        self.line.capacity() + self.result.as_ref().map_or(0, String::capacity)
    }

    /// One whole line, without its newline.
    fn line(&mut self, line: &[u8], out: &mut dyn AdapterOutput) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<ClaudeEvent>(line) {
            Ok(event) => self.event(event, out),
            // Valid JSON of a shape this adapter does not know (a newer event, say): nothing to
            // show, and no reason to flood the terminal with it.
            Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() => {
                tracing::debug!("stream-json: skipped an event of an unknown shape");
            }
            Err(err) => {
                self.invalid_lines += 1;
                if self.invalid_lines == 1 {
                    tracing::warn!(
                        "the agent printed a line that is not stream-json ({err}); shown as text"
                    );
                }
                out.show(Stream::Stdout, line);
                out.show(Stream::Stdout, b"\n");
            }
        }
    }

    fn event(&mut self, event: ClaudeEvent, out: &mut dyn AdapterOutput) {
        if let Some(id) = &event.session_id {
            let usage = self.usage.get_or_insert_with(Usage::default);
            if usage.session_id.as_ref() != Some(id) {
                usage.session_id = Some(id.clone());
            }
        }
        match event.kind.as_str() {
            "assistant" => {
                let blocks = event.message.map(|m| m.content).unwrap_or_default();
                for block in blocks {
                    show_block(block, out);
                }
            }
            "result" => self.result_event(event, out),
            // `system` (init, hooks), `user` (tool results: never shown, never result text) and
            // anything newer.
            _ => {}
        }
    }

    fn result_event(&mut self, event: ClaudeEvent, out: &mut dyn AdapterOutput) {
        let failed = event.is_error == Some(true)
            || event.subtype.as_deref().is_some_and(|s| s != "success");
        if failed {
            let what = event.subtype.as_deref().unwrap_or("error");
            out.show(
                Stream::Stdout,
                format!("✗ the agent's run ended with {what}\n").as_bytes(),
            );
        }
        self.error = failed.then(|| {
            let text = event.result.as_deref().map(str::trim).unwrap_or_default();
            let text = if text.is_empty() {
                event.subtype.as_deref().unwrap_or("error")
            } else {
                text
            };
            // The error's words are short; a long answer keeps only its end, where it gave up.
            let mut text = text.to_owned();
            keep_tail(&mut text, MAX_ERROR_TEXT);
            text
        });
        let usage = self.usage.get_or_insert_with(Usage::default);
        usage.cost_usd = event.total_cost_usd.or(event.cost_usd);
        usage.num_turns = event.num_turns;
        usage.duration_ms = event.duration_ms;
        if let Some(tokens) = event.usage {
            usage.input_tokens = tokens.input_tokens;
            usage.output_tokens = tokens.output_tokens;
            usage.cache_creation_input_tokens = tokens.cache_creation_input_tokens;
            usage.cache_read_input_tokens = tokens.cache_read_input_tokens;
        }
        if let Some(mut text) = event.result {
            keep_tail(&mut text, MAX_RESULT_TEXT);
            self.result = Some(text);
        }
    }

    /// The line grew past [`MAX_JSON_LINE`]: show what was held and go on showing.
    fn overflow(&mut self, more: &[u8], out: &mut dyn AdapterOutput) {
        tracing::warn!(
            "the agent printed a line longer than {} MiB; shown as text, not parsed",
            MAX_JSON_LINE / (1024 * 1024)
        );
        out.show(Stream::Stdout, &self.line);
        out.show(Stream::Stdout, more);
        self.clear_line();
    }

    /// Appends to the current line. The buffer grows by doubling but never past
    /// [`MAX_JSON_LINE`], which default `Vec` growth would overshoot up to twice.
    fn hold(&mut self, bytes: &[u8]) {
        let needed = self.line.len() + bytes.len();
        if needed > self.line.capacity() {
            let grown = needed.max(self.line.capacity() * 2).min(MAX_JSON_LINE);
            self.line.reserve_exact(grown - self.line.len());
        }
        self.line.extend_from_slice(bytes);
    }

    fn clear_line(&mut self) {
        self.line.clear();
        if self.line.capacity() > KEPT_LINE_CAPACITY {
            self.line.shrink_to(KEPT_LINE_CAPACITY);
        }
    }
}

impl OutputAdapter for ClaudeStreamJsonAdapter {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        if stream == Stream::Stderr {
            out.show(stream, bytes);
            return;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let newline = memchr::memchr(b'\n', rest);
            if self.overlong {
                let end = newline.map_or(rest.len(), |i| i + 1);
                out.show(Stream::Stdout, &rest[..end]);
                self.overlong = newline.is_none();
                rest = &rest[end..];
                continue;
            }
            let Some(i) = newline else {
                if self.line.len() + rest.len() > MAX_JSON_LINE {
                    self.overflow(rest, out);
                    self.overlong = true;
                } else {
                    self.hold(rest);
                }
                return;
            };
            let (piece, after) = (&rest[..i], &rest[i + 1..]);
            if self.line.len() + piece.len() > MAX_JSON_LINE {
                self.overflow(&rest[..=i], out);
            } else if self.line.is_empty() {
                // The whole line is in this chunk: parse it where it is, no copy.
                self.line(piece, out);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(piece);
                self.line(&line, out);
                self.line = line;
                self.clear_line();
            }
            rest = after;
        }
    }

    fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage> {
        if self.overlong {
            out.show(Stream::Stdout, b"\n");
            self.overlong = false;
        } else if !self.line.is_empty() {
            // Output that ended without a newline: a truncated event, or a last one whole.
            let line = std::mem::take(&mut self.line);
            self.line(&line, out);
        }
        if self.invalid_lines > 1 {
            tracing::warn!(
                "{} lines of the agent's output were not stream-json",
                self.invalid_lines
            );
        }
        if let Some(text) = self.result.take() {
            out.result_text(Stream::Stdout, text.as_bytes());
        }
        self.usage.take()
    }

    fn reported_error(&self) -> Option<String> {
        self.error.clone()
    }
}

/// The adapter ralph uses for an agent command line, and words it adds to that command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChoice {
    /// Which built-in adapter reads the output.
    pub format: OutputFormat,
    /// Appended to the agent's command line (`--output-format stream-json --verbose` for a
    /// `claude -p` that chose no format).
    pub extra_args: Vec<String>,
}

impl OutputChoice {
    /// A fresh adapter for one agent run.
    pub fn adapter(&self) -> Box<dyn OutputAdapter> {
        match self.format {
            OutputFormat::Text => Box::new(TextAdapter),
            OutputFormat::ClaudeStreamJson => Box::new(ClaudeStreamJsonAdapter::new()),
        }
    }
}

/// Picks the adapter for `argv` (the agent command line, split) and the frontmatter's `output`.
///
/// `output: text` is text, always. Otherwise, a `claude` run with `-p`/`--print` and no
/// `--output-format` gets `--output-format stream-json --verbose` (Claude Code requires
/// `--verbose` with stream-json in print mode) and the stream-json adapter, as ralphify does. A
/// `claude` that asks for stream-json itself is read as stream-json; `output:
/// claude-stream-json` forces that adapter for any agent.
pub fn choose_output(argv: &[String], configured: Option<OutputFormat>) -> OutputChoice {
    let text = OutputChoice {
        format: OutputFormat::Text,
        extra_args: Vec::new(),
    };
    if configured == Some(OutputFormat::Text) {
        return text;
    }
    let is_claude = argv
        .first()
        .and_then(|program| Path::new(program).file_name())
        .is_some_and(|name| name == "claude");
    let args = argv.get(1..).unwrap_or_default();
    let prints = args.iter().any(|a| a == "-p" || a == "--print");
    let format_flag = args.iter().enumerate().find_map(|(i, a)| {
        if a == "--output-format" {
            Some(args.get(i + 1).map_or("", String::as_str))
        } else {
            a.strip_prefix("--output-format=")
        }
    });
    let mut extra_args = Vec::new();
    if is_claude && prints && format_flag.is_none() {
        extra_args.extend(["--output-format".to_owned(), "stream-json".to_owned()]);
        if !args.iter().any(|a| a == "--verbose") {
            extra_args.push("--verbose".to_owned());
        }
    }
    let stream_json = configured == Some(OutputFormat::ClaudeStreamJson)
        || !extra_args.is_empty()
        || (is_claude && format_flag == Some("stream-json"));
    if !stream_json {
        return text;
    }
    OutputChoice {
        format: OutputFormat::ClaudeStreamJson,
        extra_args,
    }
}

/// One line of Claude Code's stream-json. Only the fields ralph reads; the rest (tool results'
/// content, say) is skipped by the parser without being kept.
///
/// Every field but `type` is read leniently: a value of an unexpected type (a figure written as
/// a string or with a fraction, a message whose content is a plain string) is read as well as
/// it can be or dropped, never makes the event unreadable: a `result` event skipped for its
/// `duration_ms` would lose the final answer, and its state marker with it.
#[derive(Debug, Deserialize)]
struct ClaudeEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, deserialize_with = "string_or_none")]
    subtype: Option<String>,
    #[serde(default, deserialize_with = "object_or_none")]
    message: Option<ClaudeMessage>,
    #[serde(default, deserialize_with = "string_or_none")]
    result: Option<String>,
    #[serde(default, deserialize_with = "bool_or_none")]
    is_error: Option<bool>,
    #[serde(default, deserialize_with = "f64_or_none")]
    total_cost_usd: Option<f64>,
    #[serde(default, deserialize_with = "f64_or_none")]
    cost_usd: Option<f64>,
    #[serde(default, deserialize_with = "u64_or_none")]
    num_turns: Option<u64>,
    #[serde(default, deserialize_with = "u64_or_none")]
    duration_ms: Option<u64>,
    #[serde(default, deserialize_with = "string_or_none")]
    session_id: Option<String>,
    #[serde(default, deserialize_with = "object_or_none")]
    usage: Option<TokenUsage>,
}

#[derive(Debug, Deserialize)]
struct ClaudeMessage {
    #[serde(default, deserialize_with = "content_blocks")]
    content: Vec<ContentBlock>,
}

#[derive(Debug, Deserialize)]
struct ContentBlock {
    #[serde(rename = "type", default, deserialize_with = "string_or_none")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    text: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    name: Option<String>,
    #[serde(default, deserialize_with = "object_or_none")]
    input: Option<ToolInput>,
}

/// The arguments of Claude Code's tools that say what a call is about.
#[derive(Debug, Deserialize)]
struct ToolInput {
    #[serde(default, deserialize_with = "string_or_none")]
    command: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    file_path: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    notebook_path: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    pattern: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    path: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    url: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    query: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    description: Option<String>,
}

impl ToolInput {
    fn main_argument(self) -> Option<String> {
        self.command
            .or(self.file_path)
            .or(self.notebook_path)
            .or(self.pattern)
            .or(self.url)
            .or(self.query)
            .or(self.path)
            .or(self.description)
    }
}

#[derive(Debug, Deserialize)]
struct TokenUsage {
    #[serde(default, deserialize_with = "u64_or_none")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "u64_or_none")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "u64_or_none")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "u64_or_none")]
    cache_read_input_tokens: Option<u64>,
}

/// Any JSON value, with the scalars kept and lists and objects skipped (not kept).
enum Loose {
    Text(String),
    Number(f64),
    Unsigned(u64),
    Flag(bool),
    Other,
}

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Loose;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Loose, E> {
                Ok(Loose::Flag(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
                Ok(Loose::Unsigned(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Loose, E> {
                Ok(Loose::Number(v as f64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Loose, E> {
                Ok(Loose::Number(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
                Ok(Loose::Text(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Loose, E> {
                Ok(Loose::Text(v))
            }
            fn visit_unit<E>(self) -> Result<Loose, E> {
                Ok(Loose::Other)
            }
            fn visit_none<E>(self) -> Result<Loose, E> {
                Ok(Loose::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Loose, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Loose::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Loose, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Loose::Other)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A string, or `None` for any other JSON value: an MCP tool's `path` may be a list, and that
/// must not make the whole event unreadable.
fn string_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Loose::deserialize(d)? {
        Loose::Text(s) => Some(s),
        _ => None,
    })
}

/// `true` or `false` (also written as a string), else `None`.
fn bool_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Loose::deserialize(d)? {
        Loose::Flag(b) => Some(b),
        Loose::Text(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// A finite number (also written as a string), else `None`.
fn f64_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let n = match Loose::deserialize(d)? {
        Loose::Unsigned(n) => n as f64,
        Loose::Number(n) => n,
        Loose::Text(s) => s.trim().parse().ok().unwrap_or(f64::NAN),
        _ => f64::NAN,
    };
    Ok(n.is_finite().then_some(n))
}

/// A count: a whole number, a number with a fraction (rounded) or either written as a string;
/// `None` for anything else, negative numbers included.
fn u64_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n = match Loose::deserialize(d)? {
        Loose::Unsigned(n) => return Ok(Some(n)),
        Loose::Text(s) => match s.trim().parse::<u64>() {
            Ok(n) => return Ok(Some(n)),
            Err(_) => s.trim().parse().ok().unwrap_or(f64::NAN),
        },
        Loose::Number(n) => n,
        _ => f64::NAN,
    };
    // `as` saturates; the bound keeps a float past u64 out rather than pinned at the top.
    Ok((n.is_finite() && n >= 0.0 && n < u64::MAX as f64).then(|| n.round() as u64))
}

/// A JSON object read as `T` (whose fields are all lenient), or `None` for any other value.
fn object_or_none<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Visitor<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_str<E>(self, _: &str) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Option<T>, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    d.deserialize_any(Visitor(std::marker::PhantomData))
}

/// A message's content: a list of blocks (an entry that is not an object is skipped), or a
/// plain string, which is one text block.
fn content_blocks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ContentBlock>, D::Error> {
    /// One entry of the list.
    struct Entry(Option<ContentBlock>);
    impl<'de> Deserialize<'de> for Entry {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            object_or_none(d).map(Entry)
        }
    }
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Vec<ContentBlock>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of content blocks or a string")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<ContentBlock>, A::Error> {
            let mut blocks = Vec::new();
            while let Some(Entry(block)) = seq.next_element()? {
                blocks.extend(block);
            }
            Ok(blocks)
        }
        fn visit_str<E>(self, v: &str) -> Result<Vec<ContentBlock>, E> {
            Ok(vec![ContentBlock {
                kind: Some("text".to_owned()),
                text: Some(v.to_owned()),
                name: None,
                input: None,
            }])
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Vec<ContentBlock>, A::Error> {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            Ok(Vec::new())
        }
        fn visit_bool<E>(self, _: bool) -> Result<Vec<ContentBlock>, E> {
            Ok(Vec::new())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Vec<ContentBlock>, E> {
            Ok(Vec::new())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Vec<ContentBlock>, E> {
            Ok(Vec::new())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Vec<ContentBlock>, E> {
            Ok(Vec::new())
        }
        fn visit_unit<E>(self) -> Result<Vec<ContentBlock>, E> {
            Ok(Vec::new())
        }
    }
    d.deserialize_any(Visitor)
}

fn show_block(block: ContentBlock, out: &mut dyn AdapterOutput) {
    match block.kind.as_deref().unwrap_or_default() {
        "text" => {
            let text = block.text.unwrap_or_default();
            let text = text.trim_end();
            if !text.is_empty() {
                out.show(Stream::Stdout, text.as_bytes());
                out.show(Stream::Stdout, b"\n");
            }
        }
        "tool_use" => {
            let name = block.name.as_deref().unwrap_or("tool");
            let line = match block.input.and_then(ToolInput::main_argument) {
                Some(arg) => format!("▸ {name} {}\n", one_line(&arg, TOOL_ARG_CHARS)),
                None => format!("▸ {name}\n"),
            };
            out.show(Stream::Stdout, line.as_bytes());
        }
        // Thinking and anything newer: not shown.
        _ => {}
    }
}

/// The first line of `text`, at most `max` characters, with `…` when cut.
fn one_line(text: &str, max: usize) -> String {
    let first = text.trim().lines().next().unwrap_or_default();
    let mut shown: String = first.chars().take(max).collect();
    if shown.len() < text.trim().len() {
        shown.push('…');
    }
    shown
}

/// Keeps the last `max` bytes of `text`, cut at a character boundary.
fn keep_tail(text: &mut String, max: usize) {
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
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Everything an adapter handed over, per stream.
    #[derive(Debug, Default, PartialEq)]
    struct Recorded {
        shown: Vec<u8>,
        shown_stderr: Vec<u8>,
        result: Vec<u8>,
        usage: Option<Usage>,
    }

    impl AdapterOutput for Recorded {
        fn show(&mut self, stream: Stream, bytes: &[u8]) {
            match stream {
                Stream::Stdout => self.shown.extend_from_slice(bytes),
                Stream::Stderr => self.shown_stderr.extend_from_slice(bytes),
            }
        }

        fn result_text(&mut self, stream: Stream, bytes: &[u8]) {
            assert_eq!(
                stream,
                Stream::Stdout,
                "stream-json results come from stdout"
            );
            self.result.extend_from_slice(bytes);
        }
    }

    impl Recorded {
        fn shown(&self) -> String {
            String::from_utf8(self.shown.clone()).expect("shown text is UTF-8")
        }

        /// The state the engine would report: the last state marker of the result text.
        fn state(&self) -> Option<String> {
            let findings = ralph_marker::scan(&self.result);
            ralph_marker::last_state(&findings).map(|m| m.name.clone())
        }
    }

    fn fixture(name: &str) -> Vec<u8> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/claude")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Feeds `pieces` to a fresh stream-json adapter, in order, then finishes it.
    fn read<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> Recorded {
        let mut adapter = ClaudeStreamJsonAdapter::new();
        let mut out = Recorded::default();
        for piece in pieces {
            adapter.feed(Stream::Stdout, piece, &mut out);
        }
        out.usage = adapter.finish(&mut out);
        out
    }

    const FIXTURES: [&str; 4] = [
        "normal.jsonl",
        "quoted-idle.jsonl",
        "idle.jsonl",
        "truncated.jsonl",
    ];

    #[test]
    fn a_normal_run_shows_text_and_tool_calls_and_reports_usage() {
        let out = read([fixture("normal.jsonl").as_slice()]);
        insta::assert_snapshot!(out.shown());
        assert_eq!(
            String::from_utf8(out.result.clone()).unwrap(),
            "The parser now rejects a trailing comma in `args`; all 42 parser tests pass."
        );
        assert_eq!(out.state(), None);
        assert_eq!(
            out.usage,
            Some(Usage {
                cost_usd: Some(0.1873245),
                num_turns: Some(7),
                duration_ms: Some(48213),
                session_id: Some("7c1e2f4a-9b3d-4e8f-a6c2-51d0b8e9f3a7".into()),
                input_tokens: Some(28),
                output_tokens: Some(1532),
                cache_creation_input_tokens: Some(10240),
                cache_read_input_tokens: Some(88420),
            })
        );
    }

    #[test]
    fn an_idle_marker_quoted_in_a_tool_result_is_not_the_agents_state() {
        let raw = fixture("quoted-idle.jsonl");
        // The raw stream does hold the marker: a text scan would have found it.
        let raw_state = ralph_marker::scan(&raw);
        assert!(ralph_marker::last_state(&raw_state).is_some_and(|m| m.name == "idle"));
        let out = read([raw.as_slice()]);
        assert_eq!(out.state(), None);
        assert!(!out.shown().contains("<!-- ralph:state"), "{}", out.shown());
        assert_eq!(out.usage.and_then(|u| u.num_turns), Some(4));
    }

    #[test]
    fn an_idle_final_answer_is_the_idle_state() {
        let out = read([fixture("idle.jsonl").as_slice()]);
        assert_eq!(out.state().as_deref(), Some("idle"));
        assert_eq!(out.usage.and_then(|u| u.cost_usd), Some(0.0214));
    }

    #[test]
    fn lines_that_are_not_json_are_shown_as_text_and_the_run_still_reads() {
        let out = read([fixture("truncated.jsonl").as_slice()]);
        let shown = out.shown();
        insta::assert_snapshot!(shown);
        assert!(shown.contains("npm WARN config production"));
        // The line cut off mid-way and the unfinished last line are shown as they came.
        assert!(shown.contains(r#"{"type":"assistant","message":{"model":"claude-sonnet"#));
        assert_eq!(out.state().as_deref(), Some("idle"));
        assert_eq!(out.usage.and_then(|u| u.num_turns), Some(3));
    }

    #[test]
    fn a_result_event_with_figures_of_odd_types_keeps_its_final_answer() {
        // Figures as strings, with fractions, negative or null; a usage that is not an object;
        // an assistant message whose content is a plain string; a tool call whose input is not
        // an object; a block that is not an object.
        let raw = concat!(
            r#"{"type":"assistant","message":{"content":"Plain answer."},"session_id":7}"#,
            "\n",
            r#"{"type":"assistant","message":{"content":[3,{"type":"tool_use","name":"Bash","input":"ls"}]}}"#,
            "\n",
            r#"{"type":"result","subtype":"success","is_error":"false","duration_ms":1234.6,"#,
            r#""num_turns":"3","total_cost_usd":"0.25","cost_usd":null,"session_id":"s1","#,
            r#""usage":{"input_tokens":-4,"output_tokens":"12","cache_read_input_tokens":[1]},"#,
            r#""result":"Nothing left.\n<!-- ralph:state idle -->"}"#,
            "\n",
            r#"{"type":"result","result":"later","usage":"none","num_turns":{"n":1}}"#,
            "\n",
        );
        let out = read([raw.as_bytes()]);
        assert_eq!(out.shown(), "Plain answer.\n▸ Bash\n");
        assert_eq!(String::from_utf8(out.result.clone()).unwrap(), "later");
        let first = read([raw
            .lines()
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
            .as_bytes()]);
        assert_eq!(first.state().as_deref(), Some("idle"));
        assert_eq!(
            first.usage,
            Some(Usage {
                cost_usd: Some(0.25),
                num_turns: Some(3),
                duration_ms: Some(1235),
                session_id: Some("s1".into()),
                output_tokens: Some(12),
                ..Usage::default()
            })
        );
    }

    #[test]
    fn chunking_at_any_byte_gives_the_same_reading() {
        for name in FIXTURES {
            let raw = fixture(name);
            let whole = read([raw.as_slice()]);
            for cut in 0..=raw.len() {
                let (a, b) = raw.split_at(cut);
                assert_eq!(read([a, b]), whole, "{name} cut at byte {cut}");
            }
            assert_eq!(read(raw.chunks(1)), whole, "{name} byte by byte");
            assert_eq!(read(raw.chunks(7)), whole, "{name} in 7-byte chunks");
        }
    }

    #[test]
    fn standard_error_is_shown_as_is_and_never_result_text() {
        let mut adapter = ClaudeStreamJsonAdapter::new();
        let mut out = Recorded::default();
        adapter.feed(
            Stream::Stderr,
            b"<!-- ralph:state idle -->\nnot json\n",
            &mut out,
        );
        out.usage = adapter.finish(&mut out);
        assert_eq!(out.shown_stderr, b"<!-- ralph:state idle -->\nnot json\n");
        assert_eq!(
            out,
            Recorded {
                shown_stderr: out.shown_stderr.clone(),
                ..Recorded::default()
            }
        );
    }

    #[test]
    fn a_line_past_the_cap_is_shown_in_pieces_and_the_next_line_parses() {
        let mut long =
            br#"{"type":"user","message":{"content":[{"type":"tool_result","content":""#.to_vec();
        long.resize(MAX_JSON_LINE + 1000, b'x');
        long.extend_from_slice(b"\"}]}}\n");
        let tail = fixture("idle.jsonl");
        let mut adapter = ClaudeStreamJsonAdapter::new();
        let mut out = Recorded::default();
        for chunk in long.chunks(64 * 1024).chain(tail.chunks(64 * 1024)) {
            adapter.feed(Stream::Stdout, chunk, &mut out);
            assert!(adapter.retained_bytes() <= MAX_JSON_LINE + 64 * 1024);
        }
        out.usage = adapter.finish(&mut out);
        assert_eq!(&out.shown[..long.len()], long.as_slice());
        assert_eq!(out.state().as_deref(), Some("idle"));
        assert!(adapter.retained_bytes() <= KEPT_LINE_CAPACITY);
    }

    #[test]
    fn the_result_text_keeps_its_last_mebibyte() {
        let mut text = "é".repeat(MAX_RESULT_TEXT);
        text.push_str("\n<!-- ralph:state idle -->");
        let line = serde_json::json!({"type": "result", "subtype": "success", "result": text});
        let mut raw = serde_json::to_vec(&line).unwrap();
        raw.push(b'\n');
        let out = read([raw.as_slice()]);
        assert!(out.result.len() <= MAX_RESULT_TEXT);
        assert!(String::from_utf8(out.result.clone()).is_ok());
        assert_eq!(out.state().as_deref(), Some("idle"));
    }

    /// Counts what it is handed without keeping it.
    #[derive(Default)]
    struct Counted {
        shown: u64,
        result: u64,
    }

    impl AdapterOutput for Counted {
        fn show(&mut self, _stream: Stream, bytes: &[u8]) {
            self.shown += bytes.len() as u64;
        }

        fn result_text(&mut self, _stream: Stream, bytes: &[u8]) {
            self.result += bytes.len() as u64;
        }
    }

    #[test]
    fn a_100_mb_stream_keeps_memory_flat() {
        // Realistic lines: tool results quoting 8 KiB files, tool calls and text, repeated;
        // then one 20 MB tool result past the line cap; then the idle fixture's result.
        let quoted = "fn main() { println!(\"<!-- ralph:state idle -->\"); }\n".repeat(160);
        let mut block = Vec::new();
        for i in 0..8 {
            let events = [
                serde_json::json!({"type": "assistant", "message": {"content": [
                    {"type": "text", "text": format!("Step {i}: reading the next file.")},
                    {"type": "tool_use", "id": "toolu_1", "name": "Read",
                     "input": {"file_path": format!("/src/file{i}.rs")}}]}}),
                serde_json::json!({"type": "user", "message": {"content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": quoted}]}}),
            ];
            for event in events {
                serde_json::to_writer(&mut block, &event).unwrap();
                block.push(b'\n');
            }
        }
        let mut stream = Vec::with_capacity(100 * 1024 * 1024);
        while stream.len() < 80 * 1024 * 1024 {
            stream.extend_from_slice(&block);
        }
        stream.extend_from_slice(
            br#"{"type":"user","message":{"content":[{"type":"tool_result","content":""#,
        );
        stream.resize(stream.len() + 20 * 1024 * 1024, b'y');
        stream.extend_from_slice(b"\"}]}}\n");
        stream.extend_from_slice(&fixture("idle.jsonl"));

        let started = std::time::Instant::now();
        let mut adapter = ClaudeStreamJsonAdapter::new();
        let mut out = Counted::default();
        let (mut most, mut most_on_short_lines) = (0, 0);
        for (i, chunk) in stream.chunks(64 * 1024).enumerate() {
            adapter.feed(Stream::Stdout, chunk, &mut out);
            most = most.max(adapter.retained_bytes());
            if i * 64 * 1024 < 80 * 1024 * 1024 {
                most_on_short_lines = most;
            }
        }
        let usage = adapter.finish(&mut out);
        let elapsed = started.elapsed();

        // Only the current line is ever held, never the stream: one short line's worth while
        // lines are short, the cap while the long one arrives, and little again after it.
        assert!(
            most_on_short_lines <= 2 * KEPT_LINE_CAPACITY,
            "held {most_on_short_lines} bytes"
        );
        assert!(most <= MAX_JSON_LINE, "held {most} bytes");
        assert!(adapter.retained_bytes() <= KEPT_LINE_CAPACITY);
        assert!(out.shown >= 20 * 1024 * 1024);
        assert_eq!(usage.and_then(|u| u.num_turns), Some(2));
        // About 1 s in a debug build; the bound only catches work that grows with the stream.
        assert!(elapsed.as_secs() < 60, "took {elapsed:?}");
    }

    #[test]
    fn the_text_adapter_shows_and_scans_everything_on_both_streams() {
        struct Both(Vec<(Stream, bool, Vec<u8>)>);
        impl AdapterOutput for Both {
            fn show(&mut self, stream: Stream, bytes: &[u8]) {
                self.0.push((stream, true, bytes.to_vec()));
            }
            fn result_text(&mut self, stream: Stream, bytes: &[u8]) {
                self.0.push((stream, false, bytes.to_vec()));
            }
        }
        let mut out = Both(Vec::new());
        let mut adapter = TextAdapter;
        adapter.feed(Stream::Stdout, b"a", &mut out);
        adapter.feed(Stream::Stderr, b"b", &mut out);
        assert_eq!(adapter.finish(&mut out), None);
        assert_eq!(
            out.0,
            vec![
                (Stream::Stdout, false, b"a".to_vec()),
                (Stream::Stdout, true, b"a".to_vec()),
                (Stream::Stderr, false, b"b".to_vec()),
                (Stream::Stderr, true, b"b".to_vec()),
            ]
        );
    }

    fn argv(line: &str) -> Vec<String> {
        shlex::split(line).unwrap()
    }

    fn choice(line: &str, configured: Option<OutputFormat>) -> (OutputFormat, String) {
        let c = choose_output(&argv(line), configured);
        (c.format, c.extra_args.join(" "))
    }

    #[test]
    fn claude_in_print_mode_without_a_format_gets_stream_json() {
        use OutputFormat::{ClaudeStreamJson as Json, Text};
        let added = "--output-format stream-json --verbose".to_owned();
        let cases = [
            ("claude -p", None, (Json, added.clone())),
            (
                "/usr/local/bin/claude --print --model opus",
                None,
                (Json, added.clone()),
            ),
            (
                "claude -p --verbose",
                None,
                (Json, "--output-format stream-json".to_owned()),
            ),
            (
                "claude -p --dangerously-skip-permissions",
                Some(Json),
                (Json, added.clone()),
            ),
            // `output: text` turns detection off.
            ("claude -p", Some(Text), (Text, String::new())),
            // The user chose a format: theirs stands.
            (
                "claude -p --output-format json",
                None,
                (Text, String::new()),
            ),
            (
                "claude -p --output-format=text",
                None,
                (Text, String::new()),
            ),
            (
                "claude -p --output-format stream-json --verbose",
                None,
                (Json, String::new()),
            ),
            // Not print mode, or not claude.
            ("claude", None, (Text, String::new())),
            ("claude-wrapper -p", None, (Text, String::new())),
            ("./agent.sh -p", None, (Text, String::new())),
            ("codex exec -p", None, (Text, String::new())),
            ("./agent.sh", Some(Json), (Json, String::new())),
        ];
        for (line, configured, want) in cases {
            assert_eq!(choice(line, configured), want, "{line} with {configured:?}");
        }
        assert_eq!(choose_output(&[], None).format, Text);
    }
}
