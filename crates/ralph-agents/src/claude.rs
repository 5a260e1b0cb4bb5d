//! Claude Code's `--output-format stream-json` and `json`, and Amp's `--stream-json`, which
//! writes the same events.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;

use super::json::{self, NotJson};
use super::json_lines::no_final_answer;
use super::{
    AdapterOutput, AgentRetry, Answer, Lines, MAX_TOOL_NAMES, OutputAdapter, RateLimit, ReadsLines,
    StderrTail, ToolNames, Usage, add_cost, error_words, rate_limit_with_reset, show_text,
    show_tool,
};
use crate::Stream;

/// Sessions whose running cost is remembered (one per `--resume`d conversation in a run).
const MAX_SESSIONS: usize = 256;

/// How a subagent's lines are indented.
const SUBAGENT_INDENT: &str = "  │ ";

/// Which agent writes the events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Flavour {
    /// Claude Code's stream-json: every event, the final answer in the `result` event.
    #[default]
    StreamJson,
    /// Claude Code's json: one `result` object (or, with `--verbose`, a list of every event).
    Json,
    /// Amp's stream-json: Claude Code's events, with usage on each assistant message only.
    Amp,
}

/// Claude Code's `--output-format stream-json` (with `--verbose`): one JSON event per line;
/// also its `--output-format json` ([`json`](Self::json)) and Amp's `--stream-json`
/// ([`amp`](Self::amp)).
///
/// Shown: the assistant's text blocks (a subagent's indented), one line per tool call
/// (`▸ Bash cargo test`, `✗` when its result is an error), a line when the run ends in error
/// and one summarising denied tool calls. Result text: the `result` field of the `result`
/// event, the agent's final answer (the last top-level assistant text when it is empty), so a
/// marker quoted in a tool result is never taken as the agent's. A line that is not JSON is
/// shown as text and logged; standard error is shown as is. Memory is bounded by
/// [`MAX_JSON_LINE`](super::MAX_JSON_LINE) and [`MAX_RESULT_TEXT`](super::MAX_RESULT_TEXT).
#[derive(Debug, Default)]
pub struct ClaudeStreamJsonAdapter {
    pub(super) flavour: Flavour,
    lines: Lines,
    /// The last result event's text.
    result: Answer,
    /// The last top-level assistant text block: the answer when `result` is empty or missing.
    last_text: Answer,
    /// Whether a `result` event came.
    saw_result: bool,
    /// Figures summed over every result event (cost aside).
    usage: Usage,
    /// The last reported cost of each session: a session's cost is its running total.
    costs: Vec<(String, f64)>,
    /// Amp: tokens summed over assistant messages, and the last message counted.
    message_tokens: Usage,
    last_message_id: Option<String>,
    /// Recent tool calls' names.
    tool_names: ToolNames,
    /// Names of tools denied permission, once each, for one summary line.
    denied: Vec<String>,
    not_json: NotJson,
    /// The last result event's error, if it reported one.
    error: Option<String>,
    /// When the limit a `rate_limit_event` said was reached resets, to the second.
    rate_limit_reset: Option<SystemTime>,
    /// The end of standard error: the reason of a run that died before its result.
    stderr: StderrTail,
}

impl ClaudeStreamJsonAdapter {
    /// A new adapter for one run of Claude Code's stream-json.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new adapter for one run of Claude Code's `--output-format json`: the final answer is
    /// shown too, as no assistant event shows it.
    pub fn json() -> Self {
        Self {
            flavour: Flavour::Json,
            ..Self::default()
        }
    }

    /// Bytes this adapter holds on to right now (buffer capacities included): what a long
    /// stream costs in memory, at most about [`MAX_JSON_LINE`](super::MAX_JSON_LINE) + twice
    /// [`MAX_RESULT_TEXT`](super::MAX_RESULT_TEXT).
    pub fn retained_bytes(&self) -> usize {
        self.lines.retained_bytes() + self.result.capacity() + self.last_text.capacity()
    }

    fn name(&self) -> &'static str {
        match self.flavour {
            Flavour::Amp => "Amp stream-json",
            Flavour::Json => "Claude Code json",
            Flavour::StreamJson => "stream-json",
        }
    }

    fn event(&mut self, event: ClaudeEvent, out: &mut dyn AdapterOutput) {
        if let Some(id) = &event.session_id {
            if self.usage.session_id.as_ref() != Some(id) {
                self.usage.session_id = Some(id.clone());
            }
        }
        if event.model.as_deref().is_some_and(is_real_model) {
            self.usage.model.clone_from(&event.model);
        }
        let indent = if event.parent_tool_use_id.is_some() {
            SUBAGENT_INDENT
        } else {
            ""
        };
        match event.kind.as_str() {
            "assistant" => {
                let Some(message) = event.message else {
                    return;
                };
                match message.model.as_deref() {
                    Some(model) if is_real_model(model) => {
                        self.usage.model.clone_from(&message.model);
                    }
                    // Claude Code's own copy of an API error (`API Error: 429 ...`): the
                    // result's error repeats it, and the loop's failure line shows it once.
                    Some(_) => return,
                    None => {}
                }
                if self.flavour == Flavour::Amp {
                    self.count_message(message.id.as_deref(), message.usage.as_ref());
                }
                for block in message.content {
                    self.block(block, indent, out);
                }
            }
            "user" => {
                let blocks = event.message.map(|m| m.content).unwrap_or_default();
                for block in blocks {
                    self.tool_result(block, indent, out);
                }
            }
            "result" if event.parent_tool_use_id.is_none() => self.result_event(event, out),
            "rate_limit_event" => self.rate_limit_event(event.rate_limit_info.as_ref()),
            "system" if event.subtype.as_deref() == Some("api_retry") => {
                out.retrying(api_retry(&event));
            }
            // `system` (init, hooks) and anything newer.
            _ => {}
        }
    }

    fn block(&mut self, block: ContentBlock, indent: &str, out: &mut dyn AdapterOutput) {
        match block.kind.as_deref().unwrap_or_default() {
            "text" => {
                let text = block.text.unwrap_or_default();
                show_text(&text, indent, out);
                if indent.is_empty() && !text.trim().is_empty() {
                    self.last_text.set(&text);
                }
            }
            "tool_use" => {
                json::add(&mut self.usage.tool_calls, Some(1));
                let name = block.name.unwrap_or_else(|| "tool".to_owned());
                let arg = block.input.and_then(ToolInput::main_argument);
                show_tool(&name, arg.as_deref(), false, indent, out);
                if let Some(id) = block.id {
                    self.tool_names.remember(id, name);
                }
            }
            // Thinking and anything newer: not shown.
            _ => {}
        }
    }

    /// A tool result: shown only when it is an error, as `✗ NAME failed: first line`.
    fn tool_result(&mut self, block: ContentBlock, indent: &str, out: &mut dyn AdapterOutput) {
        if block.kind.as_deref() != Some("tool_result") || block.is_error != Some(true) {
            return;
        }
        let name = block
            .tool_use_id
            .as_deref()
            .map_or("tool", |id| self.tool_names.name_of(id));
        let why = block.content.unwrap_or_default();
        show_tool(&format!("{name} failed:"), Some(&why), true, indent, out);
    }

    /// Amp: adds one assistant message's tokens (once per message id).
    fn count_message(&mut self, id: Option<&str>, usage: Option<&TokenUsage>) {
        if id.is_some() && id == self.last_message_id.as_deref() {
            return;
        }
        self.last_message_id = id.map(str::to_owned);
        if let Some(tokens) = usage {
            self.message_tokens.add(&tokens.to_usage());
        }
    }

    /// A `rate_limit_event`: a limit `rejected` (reached) and when it resets, in Unix seconds,
    /// where the error's words round the reset down to the minute.
    fn rate_limit_event(&mut self, info: Option<&Value>) {
        let Some(info) = info else { return };
        if json::text(info.get("status")) != Some("rejected") {
            return;
        }
        self.rate_limit_reset = info
            .get("resetsAt")
            .and_then(Value::as_u64)
            .map(|seconds| UNIX_EPOCH + Duration::from_secs(seconds));
    }

    fn result_event(&mut self, event: ClaudeEvent, out: &mut dyn AdapterOutput) {
        self.saw_result = true;
        let subtype = event.subtype.as_deref().unwrap_or("success");
        let failed = event.is_error == Some(true) || subtype != "success";
        let result = event.result.unwrap_or_default();
        if failed {
            // `errors[]` (error_max_turns, error_during_execution), Amp's `error`, the result
            // text (`is_error` with success: not logged in, a bad model), or the subtype.
            let errors = event
                .errors
                .as_ref()
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|e| json::error_message(Some(e)))
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .filter(|s| !s.trim().is_empty())
                .or_else(|| json::error_message(event.error.as_ref()))
                .or_else(|| (!result.trim().is_empty()).then(|| result.clone()));
            // The agent's own words are the failure; the subtype only when it gave none. Not
            // shown here: the loop's failure line says it, once.
            self.error = Some(error_words(errors.as_deref().unwrap_or(subtype)));
        } else {
            self.error = None;
            if self.flavour == Flavour::Json {
                show_text(&result, "", out);
            }
        }
        json::add(&mut self.usage.num_turns, event.num_turns);
        json::add(&mut self.usage.duration_ms, event.duration_ms);
        let tokens = match event.model_usage.as_ref().and_then(Value::as_object) {
            // Every model and subagent, as the cost covers them.
            Some(models) if !models.is_empty() => {
                let mut sum = Usage::default();
                for model in models.values() {
                    json::add_input(
                        &mut sum,
                        json::count(model.get("inputTokens")),
                        json::count(model.get("cacheReadInputTokens")),
                        json::count(model.get("cacheCreationInputTokens")),
                    );
                    json::add(
                        &mut sum.output_tokens,
                        json::count(model.get("outputTokens")),
                    );
                }
                Some(sum)
            }
            _ => event.usage.as_ref().map(TokenUsage::to_usage),
        };
        if let Some(tokens) = tokens {
            json::add(&mut self.usage.input_tokens, tokens.input_tokens);
            json::add(
                &mut self.usage.cached_input_tokens,
                tokens.cached_input_tokens,
            );
            json::add(&mut self.usage.output_tokens, tokens.output_tokens);
        }
        if let Some(cost) = event.total_cost_usd.or(event.cost_usd) {
            let session = event.session_id.unwrap_or_default();
            match self.costs.iter().position(|(s, _)| *s == session) {
                Some(i) => self.costs[i].1 = cost,
                None if self.costs.len() < MAX_SESSIONS => self.costs.push((session, cost)),
                None => {}
            }
        }
        if let Some(Value::Array(denials)) = event
            .permission_denials
            .as_ref()
            .filter(|d| d.as_array().is_some_and(|list| !list.is_empty()))
        {
            json::add(
                &mut self.usage.denied_tool_calls,
                Some(denials.len() as u64),
            );
            for denial in denials {
                let name = json::text(denial.get("tool_name")).unwrap_or("tool");
                if !self.denied.iter().any(|d| d == name) && self.denied.len() < MAX_TOOL_NAMES {
                    self.denied.push(name.to_owned());
                }
            }
        }
        self.result.set(&result);
    }
}

impl ReadsLines for ClaudeStreamJsonAdapter {
    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
    }

    fn line(&mut self, line: &[u8], out: &mut dyn AdapterOutput) {
        let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
        if trimmed.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // `--output-format json --verbose` writes every event in one list.
        if trimmed.trim_ascii_start().starts_with(b"[") {
            if let Ok(events) = serde_json::from_slice::<Vec<Value>>(trimmed) {
                for event in events {
                    if let Ok(event) = serde_json::from_value::<ClaudeEvent>(event) {
                        self.event(event, out);
                    }
                }
                return;
            }
        }
        match serde_json::from_slice::<ClaudeEvent>(trimmed) {
            Ok(event) => self.event(event, out),
            // Valid JSON of a shape this adapter does not know (a newer event, say): nothing to
            // show, and no reason to flood the terminal with it.
            Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_ok() => {
                tracing::debug!("stream-json: skipped an event of an unknown shape");
            }
            Err(_) => {
                let name = self.name();
                json::object(trimmed, name, &mut self.not_json, out);
            }
        }
    }
}

impl OutputAdapter for ClaudeStreamJsonAdapter {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        if stream == Stream::Stderr {
            self.stderr.push(bytes);
        }
        self.feed_lines(stream, bytes, out);
    }

    fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage> {
        self.finish_lines(out);
        self.not_json.summarise(self.name(), out);
        if !self.denied.is_empty() {
            let n = self.usage.denied_tool_calls.unwrap_or(0);
            let s = if n == 1 { "" } else { "s" };
            out.show(
                Stream::Stdout,
                format!(
                    "⚠ {n} tool call{s} denied permission: {}\n",
                    self.denied.join(", ")
                )
                .as_bytes(),
            );
        }
        if !self.saw_result {
            self.error = Some(no_final_answer(self.stderr.last_line(), out));
        }
        // An empty or missing final answer: the last thing the agent said stands in for it.
        if self.result.is_empty() {
            self.last_text.hand_over(out);
        } else {
            self.result.hand_over(out);
        }
        for (_, cost) in &self.costs {
            self.usage.cost_usd = Some(add_cost(self.usage.cost_usd.unwrap_or(0.0), *cost));
        }
        // Each run's own cost: Claude Code 2.1 reports what this invocation cost, also when it
        // goes on with a session (`claude -p --continue`, `--resume`), so costs add up.
        if self.flavour == Flavour::Amp && self.usage.input_tokens.is_none() {
            self.usage.input_tokens = self.message_tokens.input_tokens;
            self.usage.cached_input_tokens = self.message_tokens.cached_input_tokens;
            self.usage.output_tokens = self.message_tokens.output_tokens;
        }
        self.usage.take_reported()
    }

    fn reported_error(&self) -> Option<String> {
        self.error.clone()
    }

    fn rate_limit(&self, output_tail: &str, now: SystemTime) -> Option<RateLimit> {
        rate_limit_with_reset(
            self.error.as_deref(),
            self.rate_limit_reset,
            output_tail,
            now,
        )
    }
}

/// A `system` `api_retry` event: the status and error of the request Claude Code retries,
/// which retry it is and the wait before it.
fn api_retry(event: &ClaudeEvent) -> AgentRetry {
    let reason = [
        event.error_status.map(|status| status.to_string()),
        json::error_message(event.error.as_ref()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    AgentRetry {
        reason: if reason.is_empty() {
            "error".to_owned()
        } else {
            reason
        },
        attempt: event.attempt,
        max_attempts: event.max_retries,
        delay_ms: event.retry_delay_ms.map(|ms| ms.ceil() as u64),
    }
}

/// Whether `model` names a model: Claude Code names the messages it makes up itself (an API
/// error's) `<synthetic>`.
fn is_real_model(model: &str) -> bool {
    model != "<synthetic>"
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
    #[serde(default, deserialize_with = "string_or_none")]
    model: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    parent_tool_use_id: Option<String>,
    #[serde(default, deserialize_with = "object_or_none")]
    usage: Option<TokenUsage>,
    #[serde(default, rename = "modelUsage")]
    model_usage: Option<Value>,
    #[serde(default)]
    errors: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    permission_denials: Option<Value>,
    #[serde(default)]
    rate_limit_info: Option<Value>,
    /// `api_retry`: the HTTP status, which retry, of how many, after how long.
    #[serde(default, deserialize_with = "u64_or_none")]
    error_status: Option<u64>,
    #[serde(default, deserialize_with = "u64_or_none")]
    attempt: Option<u64>,
    #[serde(default, deserialize_with = "u64_or_none")]
    max_retries: Option<u64>,
    #[serde(default, deserialize_with = "f64_or_none")]
    retry_delay_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct ClaudeMessage {
    #[serde(default, deserialize_with = "string_or_none")]
    id: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    model: Option<String>,
    #[serde(default, deserialize_with = "content_blocks")]
    content: Vec<ContentBlock>,
    #[serde(default, deserialize_with = "object_or_none")]
    usage: Option<TokenUsage>,
}

#[derive(Debug, Deserialize)]
struct ContentBlock {
    #[serde(rename = "type", default, deserialize_with = "string_or_none")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    text: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    id: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    name: Option<String>,
    #[serde(default, deserialize_with = "object_or_none")]
    input: Option<ToolInput>,
    #[serde(default, deserialize_with = "string_or_none")]
    tool_use_id: Option<String>,
    #[serde(default, deserialize_with = "bool_or_none")]
    is_error: Option<bool>,
    #[serde(default, deserialize_with = "string_or_none")]
    content: Option<String>,
}

/// The arguments of Claude Code's tools that say what a call is about.
#[derive(Debug, Deserialize)]
struct ToolInput {
    #[serde(default, deserialize_with = "string_or_none")]
    command: Option<String>,
    /// Amp's Bash.
    #[serde(default, deserialize_with = "string_or_none")]
    cmd: Option<String>,
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
            .or(self.cmd)
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

impl TokenUsage {
    /// In ralph's shape: input counts the cache reads and writes too.
    fn to_usage(&self) -> Usage {
        let mut usage = Usage::default();
        json::add_input(
            &mut usage,
            self.input_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        );
        usage.output_tokens = self.output_tokens;
        usage
    }
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
                id: None,
                name: None,
                input: None,
                tool_use_id: None,
                is_error: None,
                content: None,
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

#[cfg(test)]
mod tests {
    use super::super::lines::KEPT_LINE_CAPACITY;
    use super::super::testing::{self, Recorded};
    use super::super::{MAX_JSON_LINE, MAX_RESULT_TEXT};
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        testing::fixture("claude", name)
    }

    /// Feeds `pieces` to a fresh stream-json adapter, in order, then finishes it.
    fn read<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> Recorded {
        testing::read(ClaudeStreamJsonAdapter::new(), pieces)
    }

    /// Claude Code 2.1.197 on a subscription limit (recorded): the reset to the second from
    /// its `rate_limit_event`, its words as the error, not "ended with success", and the
    /// model asked for rather than `<synthetic>`.
    #[test]
    fn a_subscription_limit_gives_its_reset_to_the_second() {
        let mut adapter = ClaudeStreamJsonAdapter::new();
        let mut out = Recorded::default();
        adapter.feed(Stream::Stdout, &fixture("rate-limit.jsonl"), &mut out);
        let usage = adapter.finish(&mut out).unwrap();
        let limit = adapter
            .rate_limit("", ten_minutes_before_the_reset())
            .unwrap();
        assert_eq!(
            limit.reset,
            Some(UNIX_EPOCH + Duration::from_secs(1_795_730_377))
        );

        assert_eq!(
            adapter.reported_error().as_deref(),
            Some("You've hit your session limit · resets 9:59pm (UTC)")
        );
        // Claude Code's made-up assistant message and its result both carry the words: the
        // adapter shows neither, the loop's failure line shows them once.
        assert_eq!(out.shown(), "");
        assert_eq!(usage.model.as_deref(), Some("claude-test-model"));
    }

    /// 21:49:37 UTC, ten minutes before the recorded limit resets.
    fn ten_minutes_before_the_reset() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_795_730_377 - 600)
    }

    /// A limit Claude Code was allowed past (`allowed`, `allowed_warning`) gives no reset to
    /// the second: the reset is its words', to the minute (9:59pm, so 22:00:00).
    #[test]
    fn only_a_rejected_limit_has_a_reset() {
        let raw = String::from_utf8(fixture("rate-limit.jsonl"))
            .unwrap()
            .replace(r#""status":"rejected""#, r#""status":"allowed_warning""#);
        let mut adapter = ClaudeStreamJsonAdapter::new();
        let mut out = Recorded::default();
        adapter.feed(Stream::Stdout, raw.as_bytes(), &mut out);
        adapter.finish(&mut out);
        let limit = adapter
            .rate_limit("", ten_minutes_before_the_reset())
            .unwrap();
        assert_eq!(
            limit.reset,
            Some(UNIX_EPOCH + Duration::from_secs(1_795_730_400))
        );
    }

    /// Claude Code 2.1.197 retrying a 529 (recorded): its `api_retry` line is a retry.
    #[test]
    fn an_api_retry_line_is_a_retry() {
        let out = read([fixture("api-retry.jsonl").as_slice()]);
        assert_eq!(
            out.retries,
            [AgentRetry {
                reason: "529 overloaded".into(),
                attempt: Some(1),
                max_attempts: Some(1),
                delay_ms: Some(590),
            }]
        );
        assert_eq!(out.error, None);
        assert_eq!(out.state().as_deref(), Some("idle"));
    }

    /// Claude Code 2.1.197 with a key the API refuses (recorded).
    #[test]
    fn an_api_error_reads_as_an_error() {
        let out = read([fixture("api-error.jsonl").as_slice()]);
        assert_eq!(
            out.error.as_deref(),
            Some("Invalid API key · Fix external API key")
        );
        assert!(!out.shown().contains("Invalid API key"), "{}", out.shown());
    }

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
                input_tokens: Some(28 + 10240 + 88420),
                output_tokens: Some(1532),
                cached_input_tokens: Some(88420),
                model: Some("claude-sonnet-4-5-20250929".into()),
                tool_calls: out.usage.as_ref().and_then(|u| u.tool_calls),
                ..Usage::default()
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
                tool_calls: Some(1),
                ..Usage::default()
            })
        );
    }

    #[test]
    fn chunking_at_any_byte_gives_the_same_reading() {
        testing::assert_every_fixture_reads_alike_in_any_chunks(
            ClaudeStreamJsonAdapter::new,
            "claude",
        );
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
        assert!(out.result.is_empty());
        assert_eq!(out.usage, None);
        // Nothing on standard output: no final answer.
        assert!(adapter.reported_error().is_some());
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
        // The cap, and the last assistant text kept in case the result is empty.
        assert!(most <= MAX_JSON_LINE + 1024, "held {most} bytes");
        assert!(adapter.retained_bytes() <= KEPT_LINE_CAPACITY);
        assert!(out.shown >= 20 * 1024 * 1024);
        assert_eq!(usage.and_then(|u| u.num_turns), Some(2));
        // About 1 s in a debug build; the bound only catches work that grows with the stream.
        assert!(elapsed.as_secs() < 60, "took {elapsed:?}");
    }

    /// Reads JSON Lines given as one string per line.
    fn lines(lines: &[&str]) -> Recorded {
        read([lines.join("\n").as_bytes()])
    }

    #[test]
    fn is_error_with_subtype_success_fails_with_its_result_text() {
        let out = lines(&[
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"s"}"#,
        ]);
        assert_eq!(
            out.error.as_deref(),
            Some("Invalid API key · Please run /login")
        );
        assert_eq!(out.shown(), "");
    }

    #[test]
    fn error_subtypes_fail_with_their_errors_shown() {
        let out = lines(&[
            r#"{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":11,"errors":["Reached maximum number of turns (10)"]}"#,
        ]);
        assert_eq!(
            out.error.as_deref(),
            Some("Reached maximum number of turns (10)")
        );
        assert_eq!(out.shown(), "");
        assert_eq!(out.usage.unwrap().num_turns, Some(11));
    }

    #[test]
    fn several_results_sum_turns_duration_and_tokens_and_cost_is_last_per_session() {
        let out = lines(&[
            r#"{"type":"result","subtype":"success","result":"one","session_id":"a","num_turns":2,"duration_ms":100,"total_cost_usd":0.1,"usage":{"input_tokens":10,"output_tokens":5}}"#,
            r#"{"type":"result","subtype":"success","result":"two","session_id":"a","num_turns":3,"duration_ms":200,"total_cost_usd":0.25,"usage":{"input_tokens":20,"output_tokens":7}}"#,
            r#"{"type":"result","subtype":"success","result":"three","session_id":"b","num_turns":1,"duration_ms":50,"total_cost_usd":0.05,"usage":{"input_tokens":1,"output_tokens":1}}"#,
        ]);
        let usage = out.usage.clone().unwrap();
        assert_eq!(usage.num_turns, Some(6));
        assert_eq!(usage.duration_ms, Some(350));
        assert_eq!(usage.input_tokens, Some(31));
        assert_eq!(usage.output_tokens, Some(13));
        // Session a's running total (0.25) plus session b's, in decimal.
        assert_eq!(usage.cost_usd, Some(0.3));
        assert_eq!(out.result(), "three");
    }

    #[test]
    fn tokens_come_from_model_usage_across_every_model() {
        let out = lines(&[
            r#"{"type":"result","subtype":"success","result":"ok","total_cost_usd":0.0412,"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":100},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":3,"outputTokens":9,"cacheReadInputTokens":100,"cacheCreationInputTokens":20,"costUSD":0.04},"claude-haiku-4-5":{"inputTokens":400,"outputTokens":50,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0012}}}"#,
        ]);
        let usage = out.usage.clone().unwrap();
        assert_eq!(usage.input_tokens, Some(3 + 100 + 20 + 400));
        assert_eq!(usage.cached_input_tokens, Some(100));
        assert_eq!(usage.output_tokens, Some(59));
        assert_eq!(usage.cost_usd, Some(0.0412));
    }

    #[test]
    fn a_run_without_a_result_event_fails_and_reads_its_last_text() {
        let out = lines(&[
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Working on it. <!-- ralph:state idle -->"}]}}"#,
        ]);
        assert_eq!(
            out.error.as_deref(),
            Some("the agent's run ended without a final answer")
        );
        assert_eq!(out.state().as_deref(), Some("idle"));
    }

    #[test]
    fn an_empty_result_reads_markers_from_the_last_assistant_text() {
        let out = lines(&[
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"First thoughts."}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"All done.\n<!-- ralph:state idle -->"}]}}"#,
            r#"{"type":"assistant","parent_tool_use_id":"toolu_9","message":{"content":[{"type":"text","text":"subagent: <!-- ralph:state blocked -->"}]}}"#,
            r#"{"type":"result","subtype":"success","result":""}"#,
        ]);
        assert_eq!(out.error, None);
        assert_eq!(out.state().as_deref(), Some("idle"));
    }

    #[test]
    fn a_subagents_text_and_tool_calls_are_shown_indented() {
        let out = lines(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Task","input":{"description":"Explore the parser"}}]}}"#,
            r#"{"type":"assistant","parent_tool_use_id":"toolu_1","message":{"content":[{"type":"text","text":"Looking at src/parser.rs.\nIt has two entry points."},{"type":"tool_use","id":"toolu_2","name":"Grep","input":{"pattern":"fn parse"}}]}}"#,
            r#"{"type":"result","subtype":"success","result":"done"}"#,
        ]);
        assert_eq!(
            out.shown(),
            "▸ Task Explore the parser\n  │ Looking at src/parser.rs.\n  │ It has two entry points.\n  │ ▸ Grep fn parse\n"
        );
        assert_eq!(out.usage.unwrap().tool_calls, Some(2));
    }

    #[test]
    fn denied_tool_calls_are_counted_and_summarised_once() {
        let out = lines(&[
            r#"{"type":"result","subtype":"success","result":"I could not run the tests.","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"cargo test"}},{"tool_name":"Bash","tool_use_id":"t2","tool_input":{"command":"rm -rf target"}},{"tool_name":"Write","tool_use_id":"t3","tool_input":{}}]}"#,
        ]);
        assert_eq!(out.usage.clone().unwrap().denied_tool_calls, Some(3));
        let shown = out.shown();
        assert_eq!(shown.matches("denied permission").count(), 1, "{shown}");
        assert!(
            shown.contains("3 tool calls denied permission: Bash, Write"),
            "{shown}"
        );
    }

    #[test]
    fn a_failed_tool_result_is_shown_with_the_tools_name() {
        let out = lines(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cargo test"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"error: could not compile `parser`"}]}}"#,
            r#"{"type":"result","subtype":"success","result":"done"}"#,
        ]);
        assert_eq!(
            out.shown(),
            "▸ Bash cargo test\n✗ Bash failed: error: could not compile `parser`\n"
        );
    }

    #[test]
    fn claude_json_is_one_result_shown_and_read() {
        let raw = br#"{"type":"result","subtype":"success","is_error":false,"duration_ms":2100,"num_turns":1,"result":"Done.\n<!-- ralph:state blocked reason=\"needs \\\"prod\\\"\" -->","session_id":"j1","total_cost_usd":0.0123}"#;
        let out = testing::read(ClaudeStreamJsonAdapter::json(), [raw.as_slice()]);
        assert_eq!(out.markers(), ["state blocked reason=needs \"prod\""]);
        assert!(out.shown().starts_with("Done."), "{}", out.shown());
        assert_eq!(out.usage.unwrap().cost_usd, Some(0.0123));
        // With --verbose, claude's json is the list of every event.
        let list = br#"[{"type":"system","subtype":"init","session_id":"j2"},{"type":"result","subtype":"success","result":"<!-- ralph:state idle -->","session_id":"j2"}]"#;
        let out = testing::read(ClaudeStreamJsonAdapter::json(), [list.as_slice()]);
        assert_eq!(out.state().as_deref(), Some("idle"));
    }
}
