//! The real opencode (pinned in `.ci/install-agents`) as ralph's agent, against a scripted
//! model server speaking OpenAI chat completions: what it really prints is what ralph reads.

use crate::common;

use common::Project;
use common::model_server::{ModelServer, Reply, Tokens, chat};
use common::real_agents::{AgentEnv, TIMEOUT, event_time};
use serde_json::json;

use std::time::{Duration, UNIX_EPOCH};

const IDLE: &str = "Nothing left to do.\n<!-- ralph:state idle -->";

const TOKENS: Tokens = Tokens {
    input: 1200,
    cached: 300,
    output: 45,
    reasoning: 7,
};

fn project(extra: &str) -> Project {
    Project::new(
        &format!("agent: opencode run --format json -m mock/test-model\n{TIMEOUT}\n{extra}"),
        "Do the work.\n",
    )
}

#[test]
fn an_idle_answer_after_a_tool_call_ends_the_run_with_the_usage_and_cost_opencode_counted() {
    let server = ModelServer::start(vec![
        chat::tool_call(
            "bash",
            json!({"command": "echo '<!-- ralph:state done -->'",
                   "description": "Print a marker"}),
            TOKENS,
        ),
        chat::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::opencode(&server);
    let p = project("max_iterations: 1");
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle", "{:#?}", p.events());
    let usage = &ended["usage"];
    assert_eq!(usage["input_tokens"], 2 * 1200);
    assert_eq!(usage["cached_input_tokens"], 2 * 300);
    assert_eq!(usage["tool_calls"], 1);
    // opencode prices the tokens from its config: $1 per million in, $2 out, $0.5 cached.
    let transcript = AgentEnv::transcript(&p, 1);
    let costs: f64 = transcript
        .iter()
        .filter_map(|e| e["part"]["cost"].as_f64())
        .sum();
    let cost = usage["cost_usd"].as_f64().unwrap();
    assert!(
        cost > 0.0 && (cost - costs).abs() < 1e-12,
        "{cost} vs {costs}"
    );
}

#[test]
fn an_invalid_key_fails_with_opencodes_words() {
    let server = ModelServer::start(vec![Reply::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided: test-key.",
                          "type": "invalid_request_error", "code": "invalid_api_key"}}),
    )]);
    let env = AgentEnv::opencode(&server);
    let p = project("max_iterations: 1");
    env.run(&p, &["run"]);
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "{:#?}", p.events());
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(failure.contains("API key"), "{failure}");
}

/// A 429 opencode gives up on (after its own retries, each waiting the `retry-after`) is a
/// rate limit until the reset its last response named, counted from the error.
#[test]
fn a_rate_limit_waits_for_the_reset_opencodes_last_response_named() {
    let server = ModelServer::start(vec![
        Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached for requests", "type": "requests",
                              "code": "rate_limit_exceeded"}}),
        )
        .header("retry-after", "1")
        .header("x-ratelimit-reset-requests", "10m0s"),
    ]);
    let env = AgentEnv::opencode(&server);
    let p = project("max_iterations: 1");
    env.run(&p, &["run"]);
    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(limited.len(), 1, "{:#?}", p.events());
    assert!(p.events_of("ITERATION_FAILED").is_empty());
    let error = AgentEnv::transcript(&p, 1)
        .into_iter()
        .find(|e| e["type"] == "error")
        .expect("opencode reported the error");
    let at = error["timestamp"].as_u64().unwrap();
    let until = UNIX_EPOCH + Duration::from_millis(at) + Duration::from_secs(600);
    let expected = event_time(until);
    // The events write milliseconds; `event_time` whole seconds.
    let until = limited[0]["until"].as_str().unwrap();
    assert_eq!(until[..19], expected[..19], "{until}");
}

/// `--continue` goes on with the session, and opencode reports each run's own cost.
#[test]
fn a_continued_session_counts_each_runs_own_cost() {
    let server = ModelServer::start(vec![chat::text("Working.", TOKENS)]);
    let env = AgentEnv::opencode(&server);
    let p = Project::new(
        &format!(
            "agent: opencode run --format json -m mock/test-model --continue\n{TIMEOUT}\n\
             max_iterations: 3\ndelay: 1ms"
        ),
        "Do the work.\n",
    );
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 3);
    let mut sum = 0.0;
    for iteration in &ended {
        assert_eq!(
            iteration["usage"]["session_id"],
            ended[0]["usage"]["session_id"]
        );
        assert_eq!(iteration["usage"]["input_tokens"], 1200, "{iteration}");
        sum += iteration["usage"]["cost_usd"].as_f64().unwrap();
    }
    let run_cost = p.run_ended()["cost_usd"].as_f64().unwrap();
    assert!(
        run_cost > 0.0 && (run_cost - sum).abs() < 1e-12,
        "{run_cost} vs {sum}"
    );
    // The session really went on: the last request carries the first two answers.
    let calls = server.model_calls();
    let main: Vec<usize> = calls
        .iter()
        .filter(|r| !r.body.contains("You are a title generator"))
        .map(|r| r.json()["messages"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(main.last(), Some(&6), "{main:?}");
}
