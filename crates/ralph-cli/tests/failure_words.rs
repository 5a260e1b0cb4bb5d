//! Issue 35, item 4: a failure says why in words. Never a raw JSON event line (a stalled Codex
//! run stopped by its `timeout`), never a terminal's escape residue (a PTY agent's last
//! `tput sgr0`), never a bare "error" (a gemini-cli stream cut short): the adapter gives the
//! words, and the end of the output, cleaned, is only the last fallback.

use crate::common;

use std::time::Duration;

use common::http_server::Ending;
use common::model_server::{ModelServer, Reply, Tokens, responses};
use common::real_agents::AgentEnv;
use common::{Project, fake_agent};
use serde_json::json;

const TOKENS: Tokens = Tokens {
    input: 1200,
    cached: 300,
    output: 45,
    reasoning: 7,
};

/// Far past any limit below: a run still going then hangs.
const HANG: Duration = Duration::from_secs(120);

fn failure(p: &Project) -> String {
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "{:#?}", p.events());
    failed[0]["failure"].as_str().unwrap().to_owned()
}

/// Codex prints its events (`thread.started`, `turn.started`, ...) and then waits on a model
/// that stopped mid-stream until `timeout` stops it: the words are the timeout's, not its
/// last event.
#[test]
fn a_codex_run_stopped_by_its_timeout_says_so_without_a_json_line() {
    let server = ModelServer::start(vec![
        responses::text("Working on it", TOKENS).after_first_event(Ending::Stall(0)),
    ]);
    let env = AgentEnv::codex(&server, 0);
    let p = Project::new(
        "agent: codex exec --json --skip-git-repo-check\ntimeout: 8s\nidle_timeout: 0\n\
         max_iterations: 1",
        "Do the work.\n",
    );
    common::git(p.path(), &["init", "-q"]);
    env.run_within(&p, &["run"], HANG);
    let transcript = AgentEnv::transcript(&p, 1);
    assert!(!transcript.is_empty(), "Codex printed its events");
    assert_eq!(failure(&p), "timed out after 8s");
}

/// A Gemini API stream event: `text`, and the finish reason when it is the last.
fn gemini_part(text: &str, finish: Option<&str>) -> serde_json::Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                           "finishReason": finish, "index": 0}],
           "modelVersion": "gemini-test"})
}

/// gemini-cli against `stream`: the words its failed run gets.
fn gemini_failure(stream: Reply) -> String {
    let server = ModelServer::start(vec![stream]);
    let env = AgentEnv::gemini(&server, 1);
    let p = Project::new(
        "agent: gemini -o stream-json --yolo -m gemini-test\ntimeout: 3m\nmax_iterations: 1",
        "Do the work.\n",
    );
    env.run_within(&p, &["run"], HANG);
    failure(&p)
}

/// gemini-cli on a stream that ends before its finish: its `error` event's words, not the
/// bare failed `result` after it (which read "error").
#[test]
fn an_unfinished_gemini_stream_fails_with_geminis_words() {
    let stream = Reply::sse(&[(None, gemini_part("Working on it", None))]);
    assert_eq!(
        gemini_failure(stream),
        "the agent reported an error: Model stream ended without a finish reason."
    );
}

/// gemini-cli on a stream cut mid-body: its words for the cut.
#[test]
fn a_cut_gemini_stream_fails_with_geminis_words() {
    let stream = Reply::sse(&[
        (None, gemini_part("Working on it", None)),
        (None, gemini_part(" and done.", Some("STOP"))),
    ]);
    assert_eq!(
        gemini_failure(stream.after_first_event(Ending::Cut(0))),
        "exit 1: [API Error: terminated]"
    );
}

/// A PTY agent's last bytes are a terminal's housekeeping (`tput sgr0`: a charset switch,
/// colours off, shift-in): the words are the line before.
#[test]
fn a_pty_agents_escape_residue_is_not_its_words() {
    let p = Project::new(
        &format!(
            "agent: '{} --out \"fatal: the model is gone\" --printf \"\\033(B\\033[m\\017\\n\" --exit 1'\n\
             pty: {{}}\nmax_iterations: 1",
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(failure(&p), "exit 1: fatal: the model is gone");
}

/// A piped agent whose last line is a JSON event (an adapter-less wrapper, say): the words
/// are the last line that reads as words.
#[test]
fn a_json_line_is_never_the_words() {
    let p = Project::new(
        &format!(
            "agent: '{} --err \"Error: connection reset by peer\" --out \"{{\\\"type\\\":\\\"step_finish\\\"}}\" --exit 2'\n\
             max_iterations: 1",
            fake_agent()
        ),
        "x\n",
    );
    p.run(&["run"]);
    assert_eq!(failure(&p), "exit 2: Error: connection reset by peer");
}
