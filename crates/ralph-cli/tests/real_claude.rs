//! The real Claude Code (pinned in `.ci/install-agents`) as ralph's agent, against a scripted
//! model server: what it really prints is what ralph reads.

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::Project;
use common::model_server::{ModelServer, Tokens, anthropic};
use common::real_agents::{AgentEnv, TIMEOUT, event_time};
use serde_json::{Value, json};

const IDLE: &str = "Nothing left to do.\n<!-- ralph:state idle -->";

const TOKENS: Tokens = Tokens {
    input: 1200,
    cached: 300,
    output: 45,
    reasoning: 0,
};

fn project(agent: &str, extra: &str) -> Project {
    Project::new(
        &format!("agent: {agent}\n{TIMEOUT}\n{extra}"),
        "Do the work.\n",
    )
}

/// Claude Code's `result` event in iteration `n`'s log.
fn result_event(p: &Project, n: u64) -> Value {
    AgentEnv::transcript(p, n)
        .into_iter()
        .find(|e| e["type"] == "result")
        .expect("Claude Code wrote its result")
}

#[test]
fn an_idle_answer_after_a_tool_call_ends_the_run_with_the_usage_the_server_sent() {
    let server = ModelServer::start(vec![
        anthropic::tool_use(
            "Bash",
            json!({"command": "echo '<!-- ralph:state done -->'"}),
            TOKENS,
        ),
        anthropic::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::claude(&server, 0);
    let p = project("claude -p --allowedTools Bash", "max_iterations: 1");
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(
        common::stdout(&out).contains("▸ Bash echo"),
        "{}",
        common::stdout(&out)
    );
    let ended = &p.events_of("ITERATION_ENDED")[0];
    // The marker the tool printed is quoted in a tool result: not the agent's.
    assert_eq!(ended["state"], "idle");
    let usage = &ended["usage"];
    assert_eq!(usage["input_tokens"], 2 * (1200 + 300));
    assert_eq!(usage["cached_input_tokens"], 2 * 300);
    assert_eq!(usage["output_tokens"], 2 * 45);
    assert_eq!(usage["tool_calls"], 1);
    assert_eq!(usage["model"], "claude-test-model");
    assert_eq!(usage["cost_usd"], result_event(&p, 1)["total_cost_usd"]);
    assert_eq!(server.model_calls().len(), 2);
}

/// Issue 24, item 2: Claude Code 2.1 reports each invocation's own cost, also when it goes on
/// with the session: three runs of one session cost three times one.
#[test]
fn a_continued_session_counts_each_runs_own_cost() {
    let server = ModelServer::start(vec![anthropic::text("Working on it.", TOKENS)]);
    let env = AgentEnv::claude(&server, 0);
    let p = project(
        "claude -p --continue --allowedTools Bash",
        "max_iterations: 3\ndelay: 1ms",
    );
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 3);
    let session = &ended[0]["usage"]["session_id"];
    let mut sum = 0.0;
    for (n, iteration) in ended.iter().enumerate() {
        assert_eq!(&iteration["usage"]["session_id"], session, "one session");
        let own = result_event(&p, n as u64 + 1)["total_cost_usd"]
            .as_f64()
            .unwrap();
        let cost = iteration["usage"]["cost_usd"].as_f64().unwrap();
        assert!((cost - own).abs() < 1e-12, "{cost} vs {own}");
        sum += own;
    }
    let run_cost = p.run_ended()["cost_usd"].as_f64().unwrap();
    assert!((run_cost - sum).abs() < 1e-12, "{run_cost} vs {sum}");
    // The session really went on: the third request carries the first two answers.
    let calls = server.model_calls();
    let messages = calls.last().unwrap().json()["messages"]
        .as_array()
        .unwrap()
        .len();
    assert!(messages >= 5, "{messages} messages");
}

/// Issue 24, item 1: a subscription limit's reset is taken to the second from Claude Code's
/// `rate_limit_event`, not from its words (rounded down to the minute). Item 9: the failed run
/// names no `<synthetic>` model; item 6: its error does not read "ended with success".
#[test]
fn a_subscription_limit_waits_until_the_reset_claude_reported_to_the_second() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Not on a minute: the words say 21:31, the reset is 21:31:37 (say).
    let reset = (now / 60 + 61) * 60 + 37;
    let limited = anthropic::error(
        429,
        "rate_limit_error",
        "This request would exceed your account's rate limit. Please try again later.",
    )
    .header("anthropic-ratelimit-unified-status", "rejected")
    .header("anthropic-ratelimit-unified-reset", &reset.to_string())
    .header(
        "anthropic-ratelimit-unified-representative-claim",
        "five_hour",
    )
    .header("anthropic-ratelimit-unified-5h-status", "rejected")
    .header("anthropic-ratelimit-unified-5h-reset", &reset.to_string())
    .header("anthropic-ratelimit-unified-5h-utilization", "1.0")
    .header("retry-after", &(reset - now).to_string());
    let server = ModelServer::start(vec![limited]);
    let mut env = AgentEnv::claude(&server, 0);
    env.vars.retain(|(name, _)| name != "ANTHROPIC_API_KEY");
    env.vars
        .push(("CLAUDE_CODE_OAUTH_TOKEN".into(), "sk-ant-oat01-test".into()));
    let p = project("claude -p --allowedTools Bash", "max_iterations: 1");
    let out = env.run(&p, &["run"]);
    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(limited.len(), 1, "{:#?}", p.events());
    let until = UNIX_EPOCH + Duration::from_secs(reset);
    assert_eq!(limited[0]["until"], event_time(until));
    let ended = &p.events_of("ITERATION_ENDED")[0];
    // The model asked for, not the `<synthetic>` of Claude Code's made-up error message.
    assert_eq!(ended["usage"]["model"], "claude-test-model", "{ended}");
    let shown = common::stdout(&out);
    assert!(shown.contains("hit your session limit"), "{shown}");
    assert!(!shown.contains("ended with success"), "{shown}");
}

/// Issue 24, item 6: an API error reads as an error, with Claude Code's words.
#[test]
fn an_invalid_key_fails_with_claudes_words() {
    let server = ModelServer::start(vec![anthropic::error(
        401,
        "authentication_error",
        "invalid x-api-key",
    )]);
    let env = AgentEnv::claude(&server, 0);
    let p = project("claude -p --allowedTools Bash", "max_iterations: 1");
    let out = env.run(&p, &["run"]);
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "{:#?}", p.events());
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(failure.contains("API key"), "{failure}");
    assert!(p.events_of("RATE_LIMITED").is_empty());
    let shown = common::stdout(&out);
    // Once, in the loop's failure line: not also as Claude Code's made-up assistant message
    // and the adapter's own line (Trust 0.4, item 8).
    assert_eq!(shown.matches("Invalid API key").count(), 1, "{shown}");
    assert!(shown.contains("✗ failed ×1:"), "{shown}");
    assert!(!shown.contains("ended with success"), "{shown}");
}

/// Issue 24, item 7: a Claude Code that stops before its first JSON line (stream-json without
/// `--verbose`) fails with the reason it gave on standard error.
#[test]
fn a_claude_that_dies_before_its_json_fails_with_its_reason() {
    let server = ModelServer::start(vec![anthropic::text(IDLE, TOKENS)]);
    let env = AgentEnv::claude(&server, 0);
    let p = project(
        "claude -p --output-format stream-json --allowedTools Bash",
        "max_iterations: 1",
    );
    env.run(&p, &["run"]);
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "{:#?}", p.events());
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(failure.contains("--verbose"), "{failure}");
}

/// Issue 24, item 8: while Claude Code retries on its own (`api_retry`), ralph says so: an
/// `AGENT_RETRYING` event and a line, not silence.
#[test]
fn claude_retrying_on_its_own_is_an_event() {
    let server = ModelServer::start(vec![
        anthropic::error(529, "overloaded_error", "Overloaded"),
        anthropic::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::claude(&server, 1);
    let p = project("claude -p --allowedTools Bash", "max_iterations: 1");
    let out = env.run(&p, &["run"]);
    let retrying = p.events_of("AGENT_RETRYING");
    assert_eq!(retrying.len(), 1, "{:#?}", p.events());
    let reason = retrying[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("529"), "{reason}");
    assert_eq!(retrying[0]["attempt"], 1);
    assert_eq!(retrying[0]["max_attempts"], 1);
    assert!(retrying[0]["delay_ms"].as_u64().is_some());
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle");
    assert_eq!(ended["failed"], false);
    let shown = common::stdout(&out);
    assert!(shown.contains("↻ agent retrying: 529"), "{shown}");
}
