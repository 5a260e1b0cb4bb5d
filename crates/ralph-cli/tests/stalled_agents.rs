//! Issue 35, item 5: a stalled agent never hangs a loop for ever. Every agent run has a
//! no-output limit (`idle_timeout`, 10 minutes unless set, `0` for none); the real gemini-cli
//! and opencode, whose model stops mid-stream, are stopped by it with no `timeout` set, and
//! the run goes on as after any failure.

use crate::common;

use std::time::Duration;

use common::Project;
use common::http_server::Ending;
use common::model_server::Tokens;
use common::model_server::{ModelServer, Reply, chat};
use common::real_agents::AgentEnv;
use serde_json::json;

const TOKENS: Tokens = Tokens {
    input: 1200,
    cached: 300,
    output: 45,
    reasoning: 7,
};

/// Long enough for a CLI to start on a loaded machine and print nothing meanwhile (opencode
/// prints nothing before the model's first answer); the test is over when it has passed.
const SILENCE: &str = "idle_timeout: 5s";

/// Far past `SILENCE`: a run still going then hangs.
const HANG: Duration = Duration::from_secs(120);

fn project(agent: &str) -> Project {
    Project::new(
        &format!("agent: {agent}\n{SILENCE}\nmax_iterations: 1"),
        "Do the work.\n",
    )
}

/// The one agent run of `p` failed for its silence.
fn assert_stopped_for_silence(p: &Project, code: i32) {
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 1, "{:#?}", p.events());
    assert_eq!(ended[0]["termination"], "idle_timeout", "{:#?}", ended[0]);
    assert_eq!(ended[0]["failed"], true);
    assert_eq!(
        ended[0]["failure"],
        "printed nothing for 5s (idle_timeout), so ralph stopped it"
    );
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "counted by the failure policy");
    assert_eq!(code, 1);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
}

#[test]
fn opencode_on_a_model_that_stops_mid_stream_is_stopped_by_the_no_output_limit() {
    let server = ModelServer::start(vec![
        chat::text("Working on it, slowly", TOKENS).after_first_event(Ending::Stall(0)),
    ]);
    let env = AgentEnv::opencode(&server);
    let p = project("opencode run --format json -m mock/test-model");
    let code = env.run_within(&p, &["run"], HANG);
    assert_stopped_for_silence(&p, code);
}

#[test]
fn gemini_on_a_model_that_stops_mid_stream_is_stopped_by_the_no_output_limit() {
    let part = |text: &str, finish: Option<&str>| {
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                               "finishReason": finish, "index": 0}],
               "modelVersion": "gemini-test"})
    };
    let stream = Reply::sse(&[
        (None, part("Working on it", None)),
        (None, part(" and done.", Some("STOP"))),
    ]);
    let server = ModelServer::start(vec![stream.after_first_event(Ending::Stall(0))]);
    let env = AgentEnv::gemini(&server, 1);
    let p = project("gemini -o stream-json --yolo -m gemini-test");
    let code = env.run_within(&p, &["run"], HANG);
    assert_stopped_for_silence(&p, code);
}

/// `ralph check` says the limit: the default, the file's, or off.
#[test]
fn check_shows_the_no_output_limit() {
    let shown = |frontmatter: &str| {
        let p = Project::new(&format!("agent: cat\n{frontmatter}"), "x\n");
        let out = p.run(&["check"]);
        assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
        common::stdout(&out)
            .lines()
            .find(|l| l.trim_start().starts_with("idle_timeout"))
            .unwrap_or_else(|| panic!("no idle_timeout row: {}", common::stdout(&out)))
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(shown(""), "10m without output ends the agent (the default)");
    assert_eq!(
        shown("pty: {}"),
        "30s without output ends the agent (the default)"
    );
    assert_eq!(
        shown("idle_timeout: 90s"),
        "1m 30s without output ends the agent"
    );
    assert_eq!(
        shown("pty: {idle_timeout: 45s}"),
        "45s without output ends the agent"
    );
    assert_eq!(
        shown("idle_timeout: 0"),
        "off (an agent may print nothing for ever)"
    );
}

/// A piped agent that goes silent is stopped and counted as a failure; the loop goes on.
#[test]
fn a_silent_piped_agent_fails_its_iteration_and_the_loop_goes_on() {
    let p = Project::new(
        "agent: sh -c 'echo started; sleep 30'\nidle_timeout: 300ms\nmax_iterations: 2\n\
         failure: {delay: 1ms}",
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 2, "{:#?}", p.events());
    for e in &ended {
        assert_eq!(e["termination"], "idle_timeout");
        assert_eq!(
            e["failure"],
            "printed nothing for 300ms (idle_timeout), so ralph stopped it"
        );
    }
    assert_eq!(p.events_of("ITERATION_FAILED").len(), 2);
}
