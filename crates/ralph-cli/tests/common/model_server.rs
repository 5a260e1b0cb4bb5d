//! A scripted model server for the real-agent tests: a small HTTP/1.1 server on 127.0.0.1 that
//! answers each model request with the next reply of its script, in the wire format of the API
//! the agent speaks (Anthropic Messages, OpenAI Responses, OpenAI chat completions, Gemini), and
//! records every request. Standard library only: one thread per connection, one response per
//! connection (`connection: close`), which every agent's HTTP client handles.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One HTTP response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// A JSON body with `status`.
    pub fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    /// A server-sent event stream: each `(event name, data)` in order (no name: data only).
    pub fn sse(events: &[(Option<&str>, Value)]) -> Self {
        let mut body = String::new();
        for (name, data) in events {
            if let Some(name) = name {
                body.push_str(&format!("event: {name}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into_bytes(),
        }
    }

    /// The same reply with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// Whether this is a call to a model (not a probe, a model list or a token count).
    pub fn is_model_call(&self) -> bool {
        let path = self.path.split('?').next().unwrap_or_default();
        self.method == "POST"
            && (path.ends_with("/messages")
                || path.ends_with("/responses")
                || path.ends_with("/chat/completions")
                || path.ends_with(":generateContent")
                || path.ends_with(":streamGenerateContent"))
    }
}

#[derive(Default)]
struct Script {
    /// Replies to model calls, in order; the last one is repeated once the others are used.
    replies: VecDeque<Reply>,
    last: Option<Reply>,
    requests: Vec<Request>,
}

/// The server; it stops answering when dropped (its thread lingers on `accept` until the test
/// process ends, which costs nothing).
pub struct ModelServer {
    port: u16,
    script: Arc<Mutex<Script>>,
}

impl ModelServer {
    /// A server on a free port of 127.0.0.1 answering model calls with `replies`, in order.
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            ..Script::default()
        }));
        let shared = Arc::clone(&script);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(stream, &script);
                });
            }
        });
        Self { port, script }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every model call so far.
    pub fn model_calls(&self) -> Vec<Request> {
        let script = self.script.lock().unwrap();
        script
            .requests
            .iter()
            .filter(|r| r.is_model_call())
            .cloned()
            .collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.script.lock().unwrap().requests.clone()
    }
}

fn serve(stream: TcpStream, script: &Mutex<Script>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = header("content-length").and_then(|v| v.parse().ok()) {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    let request = Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let reply = {
        let mut script = script.lock().unwrap();
        let reply = if request.body.contains("You are a title generator") {
            // opencode names its session with a call of its own, in no fixed order.
            chat::text("Test session", Tokens::NONE)
        } else if request.is_model_call() {
            let next = script.replies.pop_front().or_else(|| script.last.clone());
            script.last.clone_from(&next);
            next.unwrap_or_else(|| Reply::json(500, &json!({"error": "no reply scripted"})))
        } else if request.method == "GET" && request.path.contains("/models") {
            Reply::json(200, &json!({"object": "list", "data": [], "models": []}))
        } else {
            Reply::json(200, &json!({}))
        };
        script.requests.push(request);
        reply
    };
    let mut stream = stream;
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        reason(reply.status),
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Token counts a reply reports.
#[derive(Debug, Clone, Copy)]
pub struct Tokens {
    pub input: u64,
    pub cached: u64,
    pub output: u64,
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
