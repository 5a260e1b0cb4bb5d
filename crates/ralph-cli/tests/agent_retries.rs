//! Issue 35, item 6: an agent retrying without end is seen. The real opencode, on a model
//! whose every stream ends before it finishes, asks again at once, without end and without a
//! word (335 requests in 2.5 minutes, shown as 0 tokens and $0): each such step is an
//! `AGENT_RETRYING`, the retries count toward the failure policy (past
//! `failure.max_consecutive` the agent is stopped, a failed run), and the terminal,
//! `ralph status` and the report say the agent is retrying.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Project;
use common::model_server::{ModelServer, Reply};
use common::real_agents::AgentEnv;
use serde_json::json;

/// A chat completions stream that ends before its finish: one chunk of text, no
/// `finish_reason`, no `[DONE]`.
fn unfinished_stream() -> Reply {
    Reply::sse(&[(
        None,
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
               "model": "test-model",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Working"},
                            "finish_reason": null}]}),
    )])
}

fn project(max_consecutive: u64) -> Project {
    Project::new(
        &format!(
            "agent: opencode run --format json -m mock/test-model\ntimeout: 3m\n\
             max_iterations: 1\nfailure: {{delay: 1ms, max_consecutive: {max_consecutive}}}"
        ),
        "Do the work.\n",
    )
}

#[test]
fn opencode_retrying_without_end_is_stopped_past_the_failure_policy_and_reported() {
    let server = ModelServer::start(vec![unfinished_stream()]);
    let env = AgentEnv::opencode(&server);
    let p = project(3);
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let retries = p.events_of("AGENT_RETRYING");
    assert!(retries.len() >= 4, "{:#?}", p.events());
    assert_eq!(
        retries[0]["reason"],
        "the model's stream ended before it finished"
    );
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["termination"], "retry_limit", "{ended:#}");
    let failure = ended["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("the agent retried ")
            && failure.contains("without end (last: the model's stream ended before it finished (")
            && failure.ends_with("more than failure.max_consecutive (3), so ralph stopped it"),
        "{failure}"
    );
    assert_eq!(p.events_of("ITERATION_FAILED").len(), 1);
    // The terminal said so as it happened.
    let shown = common::stdout(&out);
    assert!(
        shown.contains("agent retrying: the model's stream ended before it finished (1)"),
        "{shown}"
    );
    // And the report says it beside the iteration's outcome.
    let report = p.run(&["report", "-o", "-"]);
    assert_eq!(common::code(&report), 0, "{}", common::stderr(&report));
    let html = common::stdout(&report);
    assert!(
        html.contains(&format!(
            "agent retrying ↻ {} retries, last: ",
            retries.len()
        )),
        "{html}"
    );
}

#[test]
fn ralph_status_says_the_agent_is_retrying_while_it_does() {
    let server = ModelServer::start(vec![unfinished_stream()]);
    let env = AgentEnv::opencode(&server);
    let p = project(1_000_000);
    let mut ralph = p
        .ralph(&["run"])
        .envs(env.vars.iter().map(|(n, v)| (n, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ralph starts");
    let status = |json: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ralph"));
        command.arg("status").current_dir(p.path());
        if json {
            command.arg("--json");
        }
        let out = command.output().expect("ralph status runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    let text = loop {
        let text = status(false);
        if text.contains("the agent is retrying") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let json: serde_json::Value = serde_json::from_str(&status(true)).unwrap_or_default();
    // SAFETY: kill(2) only sends a signal, to a child not yet reaped.
    unsafe { libc::kill(ralph.id() as i32, libc::SIGTERM) };
    let _ = ralph.wait();
    assert!(
        text.contains(
            "state: working on iteration 1; the agent is retrying: the model's stream ended \
             before it finished ("
        ),
        "{text}"
    );
    let retrying = &json["agent_retrying"];
    assert!(retrying["retries"].as_u64() >= Some(1), "{json:#}");
    assert!(
        retrying["last"]
            .as_str()
            .is_some_and(|last| last.starts_with("the model's stream ended before it finished")),
        "{json:#}"
    );
}
