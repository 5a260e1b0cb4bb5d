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
        crate::take_reported(&mut self.usage)
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
mod tests;
