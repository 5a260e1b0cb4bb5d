//! The real Codex (pinned in `.ci/install-agents`) as ralph's agent, against a scripted model
//! server speaking the OpenAI Responses API: what it really prints is what ralph reads.

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::Project;
use common::model_server::{ModelServer, Reply, Tokens, responses};
use common::real_agents::{AgentEnv, TIMEOUT};
use serde_json::json;

const IDLE: &str = "Nothing left to do.\n<!-- ralph:state idle -->";

const TOKENS: Tokens = Tokens {
    input: 1200,
    cached: 300,
    output: 45,
    reasoning: 7,
};

/// A project in a git repository (Codex wants one) running `codex exec --json ARGS`.
fn project(args: &str, extra: &str) -> Project {
    let p = Project::new(
        &format!("agent: codex exec --json --skip-git-repo-check {args}\n{TIMEOUT}\n{extra}"),
        "Do the work.\n",
    );
    common::git(p.path(), &["init", "-q"]);
    p
}

#[test]
fn an_idle_answer_after_a_command_ends_the_run_with_the_usage_the_server_sent() {
    let server = ModelServer::start(vec![
        responses::shell("echo '<!-- ralph:state done -->'", TOKENS),
        responses::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::codex(&server, 0);
    let p = project("", "max_iterations: 1");
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle", "{:#?}", p.events());
    assert_eq!(ended["failed"], false);
    let usage = &ended["usage"];
    // Codex sums the thread's requests: two of them.
    assert_eq!(usage["input_tokens"], 2 * 1200);
    assert_eq!(usage["cached_input_tokens"], 2 * 300);
    assert_eq!(usage["output_tokens"], 2 * 45);
    assert_eq!(usage["reasoning_tokens"], 2 * 7);
    assert_eq!(usage["tool_calls"], 1, "{:#?}", AgentEnv::transcript(&p, 1));
    assert!(
        common::stdout(&out).contains("▸ shell"),
        "{}",
        common::stdout(&out)
    );
}

/// Issue 24, item 4: `codex exec resume` reports the thread's running total; each iteration
/// counts what it added.
#[test]
fn a_resumed_thread_counts_each_runs_own_tokens() {
    let server = ModelServer::start(vec![responses::text("Working.", TOKENS)]);
    let env = AgentEnv::codex(&server, 0);
    let p = project("resume --last", "max_iterations: 3\ndelay: 1ms");
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
        assert_eq!(iteration["usage"]["output_tokens"], 45, "{iteration}");
    }
    let usage = &p.run_ended()["usage"];
    assert_eq!(usage["input_tokens"], 3 * 1200);
    assert_eq!(usage["cached_input_tokens"], 3 * 300);
    assert_eq!(usage["reasoning_tokens"], 3 * 7);
}

/// Trust 0.4, item 7: a run stopped and resumed goes on counting each agent run's own tokens:
/// the first iteration after `--resume`, in the same Codex thread, counts what it added, not
/// the whole thread again; the cached and reasoning tokens from before the stop stay in the
/// run's usage.
#[test]
fn a_resumed_run_in_the_same_thread_counts_each_runs_own_tokens() {
    let server = ModelServer::start(vec![responses::text("Working.", TOKENS)]);
    let env = AgentEnv::codex(&server, 0);
    let p = project("resume --last", "max_iterations: 2\ndelay: 1ms");
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let thread = p.events_of("ITERATION_ENDED")[0]["usage"]["session_id"].clone();
    // The events file holds the resumed part's events.
    let out = env.run(&p, &["run", "--resume", "-n", "3"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 1, "{:#?}", p.events());
    let third = &ended[0];
    assert_eq!(third["iteration"], 3);
    assert_eq!(third["usage"]["session_id"], thread);
    assert_eq!(third["usage"]["input_tokens"], 1200, "{third}");
    assert_eq!(third["usage"]["output_tokens"], 45, "{third}");
    let usage = &p.run_ended()["usage"];
    assert_eq!(usage["input_tokens"], 3 * 1200, "{usage}");
    assert_eq!(usage["cached_input_tokens"], 3 * 300, "{usage}");
    assert_eq!(usage["reasoning_tokens"], 3 * 7, "{usage}");
}

/// Issue 24, item 3: Codex's usage limit is a rate limit, with the reset it names.
#[test]
fn a_usage_limit_waits_for_the_time_codex_names() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let reset = now + 3600 + 37;
    let server = ModelServer::start(vec![Reply::json(
        429,
        &json!({"error": {"type": "usage_limit_reached",
                          "message": "The usage limit has been reached", "plan_type": "plus",
                          "resets_at": reset, "resets_in_seconds": reset - now}}),
    )]);
    let env = AgentEnv::codex(&server, 0);
    let p = project("", "max_iterations: 1");
    // Codex and ralph read the clock time in the same zone.
    let out = env.run(&p, &["run"]);
    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(
        limited.len(),
        1,
        "{}\n{:#?}",
        common::stdout(&out),
        p.events()
    );
    assert!(p.events_of("ITERATION_FAILED").is_empty());
    // The words name the minute: the reset is within it, and ralph waits for its end.
    let until = limited[0]["until"].as_str().unwrap();
    let minute = UNIX_EPOCH + Duration::from_secs(reset / 60 * 60 + 60);
    assert_eq!(until, common::real_agents::event_time(minute));
}

/// Issue 24, item 6: Codex retrying a dropped stream is no error, and the run that recovers
/// does not fail.
#[test]
fn a_reconnect_codex_recovers_from_is_not_an_error() {
    let dropped = Reply::sse(&[(
        Some("response.created"),
        json!({"type": "response.created", "response": {"id": "resp_dropped"}}),
    )]);
    let server = ModelServer::start(vec![dropped, responses::text(IDLE, TOKENS)]);
    let env = AgentEnv::codex(&server, 1);
    let p = project("", "max_iterations: 1");
    let out = env.run(&p, &["run"]);
    let shown = common::stdout(&out);
    assert!(shown.contains("↻ agent retrying:"), "{shown}");
    assert!(!shown.contains("ended with an error"), "{shown}");
    // Issue 24, item 8: the retry is an event.
    let retrying = p.events_of("AGENT_RETRYING");
    assert_eq!(retrying.len(), 1, "{:#?}", p.events());
    assert_eq!(retrying[0]["attempt"], 1);
    assert_eq!(retrying[0]["max_attempts"], 1);
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["failed"], false, "{ended}");
    assert_eq!(ended["state"], "idle");
}

/// A failure Codex gives up on fails the iteration with its words.
#[test]
fn an_invalid_key_fails_with_codexs_words() {
    let server = ModelServer::start(vec![Reply::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided: test-key.",
                          "type": "invalid_request_error", "code": "invalid_api_key"}}),
    )]);
    let env = AgentEnv::codex(&server, 0);
    let p = project("", "max_iterations: 1");
    env.run(&p, &["run"]);
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "{:#?}", p.events());
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(
        failure.contains("401") || failure.contains("API key"),
        "{failure}"
    );
    assert!(p.events_of("RATE_LIMITED").is_empty());
}
