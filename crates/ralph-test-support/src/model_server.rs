//! A scripted model server for the real-agent tests: a small HTTP/1.1 server on 127.0.0.1 that
//! answers each model request with the next reply of its script, in the wire format of the API
//! the agent speaks (Anthropic Messages, OpenAI Responses, OpenAI chat completions, Gemini), and
//! records every request. The HTTP itself is `http_server`'s.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::http_server::HttpServer;
pub use crate::http_server::{Reply, Request};

/// Whether `request` calls a model (not a probe, a model list or a token count).
fn is_model_call(request: &Request) -> bool {
    let path = request.path.split('?').next().unwrap_or_default();
    request.method == "POST"
        && (path.ends_with("/messages")
            || path.ends_with("/responses")
            || path.ends_with("/chat/completions")
            || path.ends_with(":generateContent")
            || path.ends_with(":streamGenerateContent"))
}

#[derive(Default)]
struct Script {
    /// Replies to model calls, in order; the last one is repeated once the others are used.
    replies: VecDeque<Reply>,
    last: Option<Reply>,
    requests: Vec<Request>,
}

impl Script {
    fn answer(&mut self, request: Request) -> Reply {
        let reply = if request.body.contains("You are a title generator") {
            // opencode names its session with a call of its own, in no fixed order.
            chat::text("Test session", Tokens::NONE)
        } else if is_model_call(&request) {
            let next = self.replies.pop_front().or_else(|| self.last.clone());
            self.last.clone_from(&next);
            next.unwrap_or_else(|| Reply::json(500, &json!({"error": "no reply scripted"})))
        } else if request.method == "GET" && request.path.contains("/models") {
            Reply::json(200, &json!({"object": "list", "data": [], "models": []}))
        } else {
            Reply::json(200, &json!({}))
        };
        self.requests.push(request);
        reply
    }
}

/// The server; it stops listening when dropped.
pub struct ModelServer {
    http: HttpServer,
    script: Arc<Mutex<Script>>,
}

impl ModelServer {
    /// A server on a free port of 127.0.0.1 answering model calls with `replies`, in order.
    pub fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            ..Script::default()
        }));
        let shared = Arc::clone(&script);
        let http =
            HttpServer::start(move |_, request| Some(shared.lock().unwrap().answer(request)));
        Self { http, script }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.http.url()
    }

    /// Every model call so far.
    pub fn model_calls(&self) -> Vec<Request> {
        let script = self.script.lock().unwrap();
        script
            .requests
            .iter()
            .filter(|r| is_model_call(r))
            .cloned()
            .collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.script.lock().unwrap().requests.clone()
    }
}

/// Token counts a reply reports.
#[derive(Debug, Clone, Copy)]
pub struct Tokens {
    /// Input tokens, as each API reports them (`input_tokens`, `prompt_tokens`).
    pub input: u64,
    /// Input tokens read from the cache, as each API reports them.
    pub cached: u64,
    /// Output tokens.
    pub output: u64,
    /// Of the output, reasoning tokens.
    pub reasoning: u64,
}

impl Tokens {
    /// No tokens.
    pub const NONE: Tokens = Tokens {
        input: 0,
        cached: 0,
        output: 0,
        reasoning: 0,
    };
}

/// Anthropic Messages API replies (Claude Code).
pub mod anthropic {
    use super::*;

    fn message(content: &[Value], stop_reason: &str, tokens: Tokens) -> Reply {
        let mut events = vec![(
            Some("message_start"),
            json!({"type": "message_start", "message": {
                "id": "msg_test", "type": "message", "role": "assistant",
                "model": "claude-test-model", "content": [], "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": tokens.input, "cache_read_input_tokens": tokens.cached,
                          "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
        )];
        for (index, block) in content.iter().enumerate() {
            let (start, delta) = if block["type"] == "text" {
                (
                    json!({"type": "text", "text": ""}),
                    json!({"type": "text_delta", "text": block["text"]}),
                )
            } else {
                (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                    json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
                )
            };
            events.push((
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            events.push((
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
            events.push((
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        events.push((
            Some("message_delta"),
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": tokens.output}}),
        ));
        events.push((Some("message_stop"), json!({"type": "message_stop"})));
        Reply::sse(&events)
    }

    /// A text answer.
    pub fn text(text: &str, tokens: Tokens) -> Reply {
        message(&[json!({"type": "text", "text": text})], "end_turn", tokens)
    }

    /// One tool call.
    pub fn tool_use(name: &str, input: Value, tokens: Tokens) -> Reply {
        message(
            &[json!({"type": "tool_use", "id": "toolu_test1", "name": name, "input": input})],
            "tool_use",
            tokens,
        )
    }

    /// An error in the API's shape.
    pub fn error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::json(
            status,
            &json!({"type": "error", "error": {"type": kind, "message": message}}),
        )
    }
}

/// OpenAI Responses API replies (Codex).
pub mod responses {
    use super::*;

    fn response(id: &str, output: Vec<Value>, tokens: Tokens) -> Reply {
        let mut events = vec![(
            Some("response.created"),
            json!({"type": "response.created", "response": {"id": id}}),
        )];
        for item in &output {
            events.push((
                Some("response.output_item.done"),
                json!({"type": "response.output_item.done", "item": item}),
            ));
        }
        events.push((
            Some("response.completed"),
            json!({"type": "response.completed", "response": {
            "id": id,
            "usage": {
                "input_tokens": tokens.input,
                "input_tokens_details": {"cached_tokens": tokens.cached},
                "output_tokens": tokens.output,
                "output_tokens_details": {"reasoning_tokens": tokens.reasoning},
                "total_tokens": tokens.input + tokens.output,
            }}}),
        ));
        Reply::sse(&events)
    }

    /// A text answer.
    pub fn text(text: &str, tokens: Tokens) -> Reply {
        response(
            "resp_text",
            vec![
                json!({"type": "message", "role": "assistant", "id": "msg_1",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}),
            ],
            tokens,
        )
    }

    /// One shell command call (Codex 0.171's `exec_command` tool).
    pub fn shell(command: &str, tokens: Tokens) -> Reply {
        response(
            "resp_tool",
            vec![
                json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                        "name": "exec_command",
                        "arguments": json!({"cmd": command}).to_string()}),
            ],
            tokens,
        )
    }
}

/// OpenAI chat completions replies (opencode).
pub mod chat {
    use super::*;

    fn chunk(delta: Value, finish: Option<&str>) -> (Option<&'static str>, Value) {
        (
            None,
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                   "model": "test-model",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    }

    fn usage(tokens: Tokens) -> (Option<&'static str>, Value) {
        (
            None,
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                   "model": "test-model", "choices": [],
                   "usage": {"prompt_tokens": tokens.input, "completion_tokens": tokens.output,
                             "total_tokens": tokens.input + tokens.output,
                             "prompt_tokens_details": {"cached_tokens": tokens.cached},
                             "completion_tokens_details": {"reasoning_tokens": tokens.reasoning}}}),
        )
    }

    fn done(mut reply: Reply) -> Reply {
        reply.body.extend_from_slice(b"data: [DONE]\n\n");
        reply
    }

    /// A text answer.
    pub fn text(text: &str, tokens: Tokens) -> Reply {
        done(Reply::sse(&[
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": text}), None),
            chunk(json!({}), Some("stop")),
            usage(tokens),
        ]))
    }

    /// One tool call.
    pub fn tool_call(name: &str, arguments: Value, tokens: Tokens) -> Reply {
        done(Reply::sse(&[
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
            usage(tokens),
        ]))
    }
}

/// Gemini API replies (gemini-cli).
pub mod gemini {
    use super::*;

    fn usage(tokens: Tokens) -> Value {
        json!({"promptTokenCount": tokens.input, "candidatesTokenCount": tokens.output,
               "thoughtsTokenCount": tokens.reasoning, "cachedContentTokenCount": tokens.cached,
               "totalTokenCount": tokens.input + tokens.output + tokens.reasoning})
    }

    /// A text answer (streamed, `alt=sse`).
    pub fn text(text: &str, tokens: Tokens) -> Reply {
        Reply::sse(&[(
            None,
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                   "finishReason": "STOP", "index": 0}],
                   "usageMetadata": usage(tokens), "modelVersion": "gemini-test"}),
        )])
    }

    /// One tool call (streamed).
    pub fn tool_call(name: &str, args: Value, tokens: Tokens) -> Reply {
        Reply::sse(&[(
            None,
            json!({"candidates": [{"content": {"role": "model",
                                               "parts": [{"functionCall": {"name": name, "args": args}}]},
                                   "finishReason": "STOP", "index": 0}],
                   "usageMetadata": usage(tokens), "modelVersion": "gemini-test"}),
        )])
    }

    /// An error in the API's shape (`RESOURCE_EXHAUSTED` with a `RetryInfo`, say).
    pub fn error(status: u16, code: &str, message: &str, details: Value) -> Reply {
        Reply::json(
            status,
            &json!({"error": {"code": status, "message": message, "status": code,
                              "details": details}}),
        )
    }
}
