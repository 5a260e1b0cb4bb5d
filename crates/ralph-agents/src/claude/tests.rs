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
    // Built field by field: `Usage` is ralph-events' and non-exhaustive.
    let mut want = Usage::default();
    want.cost_usd = Some(0.1873245);
    want.num_turns = Some(7);
    want.duration_ms = Some(48213);
    want.session_id = Some("7c1e2f4a-9b3d-4e8f-a6c2-51d0b8e9f3a7".into());
    want.input_tokens = Some(28 + 10240 + 88420);
    want.output_tokens = Some(1532);
    want.cached_input_tokens = Some(88420);
    want.model = Some("claude-sonnet-4-5-20250929".into());
    want.tool_calls = out.usage.as_ref().and_then(|u| u.tool_calls);
    assert_eq!(out.usage, Some(want));
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
    // Built field by field: `Usage` is ralph-events' and non-exhaustive.
    let mut want = Usage::default();
    want.cost_usd = Some(0.25);
    want.num_turns = Some(3);
    want.duration_ms = Some(1235);
    want.session_id = Some("s1".into());
    want.output_tokens = Some(12);
    want.tool_calls = Some(1);
    assert_eq!(first.usage, Some(want));
}

#[test]
fn chunking_at_any_byte_gives_the_same_reading() {
    testing::assert_every_fixture_reads_alike_in_any_chunks(ClaudeStreamJsonAdapter::new, "claude");
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
