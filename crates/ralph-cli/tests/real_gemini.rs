//! The real gemini-cli (pinned in `.ci/install-agents`) as ralph's agent, against a scripted
//! model server speaking the Gemini API: what it really prints is what ralph reads.

use crate::common;

use common::Project;
use common::model_server::{ModelServer, Tokens, gemini};
use common::real_agents::{AgentEnv, TIMEOUT};
use serde_json::json;

const IDLE: &str = "Nothing left to do.\n<!-- ralph:state idle -->";

const TOKENS: Tokens = Tokens {
    input: 1200,
    cached: 300,
    output: 45,
    reasoning: 7,
};

/// `gemini -o stream-json` with a model of its own (no routing call before the real one).
fn project(extra: &str) -> Project {
    Project::new(
        &format!("agent: gemini -o stream-json --yolo -m gemini-test\n{TIMEOUT}\n{extra}"),
        "Do the work.\n",
    )
}

/// Issue 24, item 9: the thinking tokens are part of the output, as ralph's usage says.
#[test]
fn an_idle_answer_ends_the_run_with_the_usage_the_server_sent() {
    let server = ModelServer::start(vec![gemini::text(IDLE, TOKENS)]);
    let env = AgentEnv::gemini(&server, 1);
    let p = project("max_iterations: 1");
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle", "{:#?}", p.events());
    let usage = &ended["usage"];
    assert_eq!(usage["input_tokens"], 1200);
    assert_eq!(usage["cached_input_tokens"], 300);
    assert_eq!(usage["output_tokens"], 45 + 7);
    assert_eq!(usage["reasoning_tokens"], 7);
    assert_eq!(usage["model"], "gemini-test");
}

/// Issue 24, item 5: Gemini's quota 429 is a rate limit with the retry time it gives.
#[test]
fn a_quota_error_is_a_rate_limit_with_the_retry_time_gemini_gives() {
    let server = ModelServer::start(vec![gemini::error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details. For more \
         information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. \
         Please retry in 2.5s.",
        json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2.5s"}]),
    )]);
    let env = AgentEnv::gemini(&server, 1);
    let p = project("max_iterations: 1");
    env.run(&p, &["run"]);
    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(limited.len(), 1, "{:#?}", p.events());
    assert!(p.events_of("ITERATION_FAILED").is_empty());
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["failed"], false);
}

/// A failure gemini-cli gives up on fails the iteration with its words, no colour escapes.
#[test]
fn a_server_error_fails_with_geminis_words() {
    let server = ModelServer::start(vec![gemini::error(
        500,
        "INTERNAL",
        "An internal error has occurred.",
        json!([]),
    )]);
    let env = AgentEnv::gemini(&server, 1);
    let p = project("max_iterations: 1");
    env.run(&p, &["run"]);
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "{:#?}", p.events());
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(failure.contains("internal error"), "{failure}");
    assert!(!failure.contains('\u{1b}'), "{failure:?}");
}

/// Issue 24, item 8: while gemini-cli retries on its own (minutes, by default), ralph says so.
#[test]
fn gemini_retrying_on_its_own_is_an_event() {
    let server = ModelServer::start(vec![
        gemini::error(
            500,
            "INTERNAL",
            "An internal error has occurred.",
            json!([]),
        ),
        gemini::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::gemini(&server, 2);
    let p = project("max_iterations: 1");
    env.run(&p, &["run"]);
    let retrying = p.events_of("AGENT_RETRYING");
    assert_eq!(retrying.len(), 1, "{:#?}", p.events());
    assert_eq!(retrying[0]["reason"], "500");
    assert_eq!(retrying[0]["attempt"], 1);
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle");
    assert_eq!(ended["failed"], false);
}

/// `--resume latest` goes on with the session, and gemini-cli reports each run's own tokens.
#[test]
fn a_resumed_session_counts_each_runs_own_tokens() {
    let server = ModelServer::start(vec![gemini::text("Working.", TOKENS)]);
    let env = AgentEnv::gemini(&server, 1);
    let p = Project::new(
        &format!(
            "agent: gemini -o stream-json --yolo -m gemini-test --resume latest\n{TIMEOUT}\n\
             max_iterations: 3\ndelay: 1ms"
        ),
        "Do the work.\n",
    );
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 3);
    for iteration in &ended {
        assert_eq!(
            iteration["usage"]["session_id"],
            ended[0]["usage"]["session_id"]
        );
        assert_eq!(iteration["usage"]["input_tokens"], 1200, "{iteration}");
    }
    assert_eq!(p.run_ended()["usage"]["input_tokens"], 3 * 1200);
    // The session really went on: each request carries the conversation so far.
    let turns: Vec<usize> = server
        .model_calls()
        .iter()
        .map(|r| r.json()["contents"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(turns, [1, 3, 5]);
}

/// A tool call is shown with its command; the marker its output quotes is not the agent's.
#[test]
fn an_idle_answer_after_a_tool_call_is_idle() {
    let server = ModelServer::start(vec![
        gemini::tool_call(
            "run_shell_command",
            json!({"command": "echo '<!-- ralph:state done -->'"}),
            TOKENS,
        ),
        gemini::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::gemini(&server, 1);
    let p = project("max_iterations: 1");
    let out = env.run(&p, &["run"]);
    let shown = common::stdout(&out);
    assert!(shown.contains("▸ run_shell_command echo"), "{shown}");
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle", "{:#?}", p.events());
    assert_eq!(ended["usage"]["tool_calls"], 1);
    assert_eq!(ended["usage"]["input_tokens"], 2 * 1200);
}
