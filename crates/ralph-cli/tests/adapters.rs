//! Agent adapters: `claude -p` is read as Claude Code's stream-json, markers come from the
//! agent's final answer only, and usage reaches the events and the summary. A fake `claude`
//! (`fixtures/claude/bin/claude`) first on PATH prints recorded-style stream-json.

use crate::common;

use std::path::PathBuf;
use std::process::{Output, Stdio};

use common::{Project, code, fixtures};

/// `ralph run ARGS` with the fake `claude` first on PATH, printing `fixtures/claude/FIXTURE`
/// and writing the arguments it got to `claude-args.txt` in the project.
fn run_claude(p: &Project, fixture: &str, args: &[&str]) -> Output {
    let bin = fixtures().join("claude/bin").canonicalize().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    p.ralph(args)
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .env(
            "FAKE_CLAUDE_FIXTURE",
            fixtures().join("claude").join(fixture),
        )
        .env("FAKE_CLAUDE_ARGS", claude_args_file(p))
        .stdin(Stdio::null())
        .output()
        .expect("ralph runs")
}

fn claude_args_file(p: &Project) -> PathBuf {
    p.path().join("claude-args.txt")
}

/// The arguments the fake `claude` was last run with.
fn claude_args(p: &Project) -> Vec<String> {
    std::fs::read_to_string(claude_args_file(p))
        .expect("the fake claude ran")
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn claude_print_mode_is_read_as_stream_json_with_usage_in_events_and_summary() {
    let p = Project::new("agent: claude -p", "Fix the next item in TODO.md.\n");
    let out = run_claude(&p, "normal.jsonl", &["run", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        claude_args(&p),
        ["-p", "--output-format", "stream-json", "--verbose"]
    );

    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 2);
    assert_eq!(ended[0]["state"], serde_json::Value::Null);
    let usage = &ended[0]["usage"];
    assert_eq!(usage["cost_usd"], 0.1873245);
    assert_eq!(usage["num_turns"], 7);
    assert_eq!(usage["duration_ms"], 48213);
    assert_eq!(usage["session_id"], "7c1e2f4a-9b3d-4e8f-a6c2-51d0b8e9f3a7");
    // Input counts cache reads and writes too, as every adapter reports it.
    assert_eq!(usage["input_tokens"], 28 + 10240 + 88420);
    assert_eq!(usage["output_tokens"], 1532);
    assert_eq!(usage["cached_input_tokens"], 88420);

    // Totals over both iterations.
    let run_ended = p.run_ended();
    assert_eq!(run_ended["num_turns"], 14);
    // Both iterations replay one recorded session: each invocation reports its own cost, so
    // both count (as Claude Code 2.1 does with `claude -p --continue`: `real_claude.rs`).
    assert_eq!(run_ended["cost_usd"], 0.374649);

    let shown = common::stdout(&out);
    assert!(
        shown.contains("▸ Read /home/dev/project/TODO.md"),
        "{shown}"
    );
    assert!(shown.contains("▸ Bash cargo test -p parser"), "{shown}");
    assert!(
        !shown.contains(r#""type":"system""#),
        "raw JSON shown: {shown}"
    );
    assert!(shown.contains("· $0.37 · 14 turns · exit 0"), "{shown}");

    // The iteration log keeps the raw stream.
    let log = ended[0]["log_file"].as_str().unwrap();
    let log = std::fs::read_to_string(p.path().join(log)).unwrap();
    assert!(log.contains(r#"{"type":"system","subtype":"init""#));
}

#[test]
fn an_idle_marker_quoted_in_a_tool_result_does_not_make_the_iteration_idle() {
    let p = Project::new(
        "agent: claude -p\nidle: {delay: 10ms}",
        "Fix the next item in TODO.md.\n",
    );
    let out = run_claude(&p, "quoted-idle.jsonl", &["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], serde_json::Value::Null);
    assert_eq!(ended["markers"], serde_json::json!([]));
    assert_eq!(p.run_ended()["idle_iterations"], 0);
}

#[test]
fn an_idle_final_answer_makes_the_iteration_idle() {
    let p = Project::new(
        "agent: claude -p\nidle: {delay: 10ms}",
        "Fix the next item in TODO.md.\n",
    );
    let out = run_claude(&p, "idle.jsonl", &["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.events_of("ITERATION_ENDED")[0]["state"], "idle");
    assert_eq!(p.run_ended()["idle_iterations"], 1);
}

#[test]
fn broken_lines_are_shown_as_text_and_the_final_answer_still_counts() {
    let p = Project::new("agent: claude -p", "Go.\n");
    let out = run_claude(&p, "truncated.jsonl", &["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(common::stdout(&out).contains("npm WARN config production"));
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle");
    assert_eq!(ended["usage"]["num_turns"], 3);
}

#[test]
fn output_text_turns_claude_detection_off() {
    let p = Project::new("agent: claude -p\noutput: text", "Go.\n");
    let out = run_claude(&p, "normal.jsonl", &["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(claude_args(&p), ["-p"]);
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert!(ended.get("usage").is_none(), "{ended}");
    let run_ended = p.run_ended();
    assert!(run_ended.get("cost_usd").is_none() && run_ended.get("num_turns").is_none());
    assert!(common::stdout(&out).contains("A plain-text answer from claude -p."));
}

#[test]
fn a_claude_that_chose_its_own_format_is_run_as_written() {
    let p = Project::new(
        "agent: claude -p --output-format stream-json --verbose",
        "Go.\n",
    );
    let out = run_claude(&p, "idle.jsonl", &["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        claude_args(&p),
        ["-p", "--output-format", "stream-json", "--verbose"]
    );
    assert_eq!(p.events_of("ITERATION_ENDED")[0]["state"], "idle");
}
