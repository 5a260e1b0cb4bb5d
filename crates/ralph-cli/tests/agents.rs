//! Agents: Codex, Gemini CLI, opencode, Cursor, Amp and Claude Code's json are read from their
//! own JSON output, chosen from the agent line. A fake agent binary per CLI
//! (`fixtures/<agent>/bin/`) first on PATH prints a fixture stream; markers come from the final
//! answer only, usage reaches `ITERATION_ENDED` and `RUN_ENDED`, and an error the agent reports
//! fails the iteration with its words.

use crate::common;

use std::path::PathBuf;
use std::process::{Output, Stdio};

use common::{Project, code, fixtures};
use serde_json::Value;

/// `ralph ARGS` with `fixtures/DIR/bin` first on PATH and its fake agent printing
/// `fixtures/DIR/FIXTURE`, exiting with `exit`.
fn run_agent(p: &Project, dir: &str, fixture: &str, exit: i32, args: &[&str]) -> Output {
    let bin = fixtures().join(dir).join("bin").canonicalize().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    p.ralph(args)
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .env("FAKE_AGENT_FIXTURE", fixtures().join(dir).join(fixture))
        .env("FAKE_AGENT_EXIT", exit.to_string())
        .env("FAKE_AGENT_ARGS", args_file(p))
        .stdin(Stdio::null())
        .output()
        .expect("ralph runs")
}

fn args_file(p: &Project) -> PathBuf {
    p.path().join("agent-args.txt")
}

/// The one `ITERATION_ENDED` of a `-n 1` run.
fn ended(p: &Project) -> Value {
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 1, "{ended:?}");
    ended[0].clone()
}

/// One project per agent: its agent line, its fixture folder.
const AGENTS: [(&str, &str); 5] = [
    ("codex exec --json --full-auto -", "codex"),
    ("gemini -p --output-format stream-json --yolo", "gemini"),
    ("opencode run --format json", "opencode"),
    (
        "cursor-agent -p --force --output-format stream-json",
        "cursor",
    ),
    ("amp -x --stream-json --dangerously-allow-all", "amp"),
];

#[test]
fn each_agents_final_answer_gives_the_state_and_its_usage_reaches_the_events() {
    for (agent, dir) in AGENTS {
        let p = Project::new(&format!("agent: {agent}"), "Fix the next item.\n");
        let out = run_agent(&p, dir, "tool-use.jsonl", 0, &["run", "-n", "1"]);
        assert_eq!(code(&out), 0, "{dir}: {}", common::stderr(&out));
        let ended = ended(&p);
        assert_eq!(ended["state"], "idle", "{dir}: {ended}");
        assert_eq!(ended["failed"], false, "{dir}");
        let usage = &ended["usage"];
        assert!(
            usage["input_tokens"].as_u64().unwrap() > 0,
            "{dir}: {usage}"
        );
        assert!(
            usage["output_tokens"].as_u64().unwrap() > 0,
            "{dir}: {usage}"
        );
        assert_eq!(
            p.run_ended()["usage"],
            *usage,
            "{dir}: one iteration's total"
        );

        // The display: the assistant's text and tool lines, a failed tool marked, no raw JSON.
        let shown = common::stdout(&out);
        assert!(shown.contains('▸'), "{dir}: {shown}");
        assert!(shown.contains('✗'), "{dir}: {shown}");
        assert!(
            !shown.contains(r#""type":"#),
            "{dir}: raw JSON shown: {shown}"
        );
        assert!(
            shown.contains("tokens in"),
            "{dir}: no token summary: {shown}"
        );
    }
}

#[test]
fn a_marker_quoted_in_tool_output_is_not_the_agents_state() {
    for (agent, dir) in AGENTS {
        let p = Project::new(&format!("agent: {agent}"), "Fix the next item.\n");
        let out = run_agent(&p, dir, "quoted-marker.jsonl", 0, &["run", "-n", "1"]);
        assert_eq!(code(&out), 0, "{dir}: {}", common::stderr(&out));
        assert_eq!(ended(&p)["state"], Value::Null, "{dir}");
    }
}

#[test]
fn a_marker_with_quoted_attributes_in_json_is_read_whole() {
    for (agent, dir) in AGENTS {
        let p = Project::new(&format!("agent: {agent}"), "Fix the next item.\n");
        run_agent(&p, dir, "success.jsonl", 0, &["run", "-n", "1"]);
        let ended = ended(&p);
        assert_eq!(ended["state"], "blocked", "{dir}: {ended}");
        assert_eq!(
            ended["markers"][0]["attrs"][0][0], "reason",
            "{dir}: {ended}"
        );
        let reason = ended["markers"][0]["attrs"][0][1].as_str().unwrap();
        assert!(
            reason.starts_with("need") || reason.starts_with("wait"),
            "{dir}: {reason}"
        );
    }
}

#[test]
fn a_marker_split_across_gemini_deltas_is_found() {
    let p = Project::new("agent: gemini -o stream-json", "Fix the next item.\n");
    run_agent(&p, "gemini", "split-marker.jsonl", 0, &["run", "-n", "1"]);
    assert_eq!(ended(&p)["state"], "idle");
}

#[test]
fn an_error_the_agent_reports_fails_the_iteration_with_its_words() {
    let cases = [
        ("codex", "unexpected status 401 Unauthorized"),
        ("gemini", "Requested entity was not found"),
        ("opencode", "No API key found for provider anthropic"),
        ("cursor", "Authentication required"),
        ("amp", "Out of credits"),
    ];
    for ((agent, dir), (want_dir, words)) in AGENTS.into_iter().zip(cases) {
        assert_eq!(dir, want_dir);
        let p = Project::new(
            &format!("agent: {agent}\nfailure: {{delay: 10ms, max_delay: 10ms}}"),
            "Fix the next item.\n",
        );
        // The agents exit 0 here: the failure is the error they reported.
        let out = run_agent(&p, dir, "error.jsonl", 0, &["run", "-n", "1"]);
        let ended = ended(&p);
        assert_eq!(ended["failed"], true, "{dir}: {ended}");
        let failure = ended["failure"].as_str().unwrap();
        assert!(failure.contains(words), "{dir}: {failure}");
        let shown = common::stdout(&out) + &common::stderr(&out);
        assert!(
            shown.contains(words),
            "{dir}: the terminal shows the reason: {shown}"
        );
    }
}

#[test]
fn warnings_printed_before_the_json_are_shown_and_not_fatal() {
    let p = Project::new("agent: gemini -o stream-json", "Fix the next item.\n");
    let out = run_agent(&p, "gemini", "success.jsonl", 0, &["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(common::stdout(&out).contains("Loaded cached credentials."));
    assert_eq!(ended(&p)["failed"], false);
}

#[test]
fn gemini_exiting_53_at_its_turn_limit_fails_the_iteration() {
    let p = Project::new("agent: gemini -o stream-json", "Fix the next item.\n");
    run_agent(&p, "gemini", "turn-limit.jsonl", 53, &["run", "-n", "1"]);
    let ended = ended(&p);
    assert_eq!(ended["failed"], true, "{ended}");
    let failure = ended["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("exit 53: Reached max session turns"),
        "{failure}"
    );
    assert_eq!(ended["usage"]["tool_calls"], 20);
}

#[test]
fn run_ended_sums_usage_over_iterations_with_decimal_cost() {
    let p = Project::new("agent: opencode run --format json", "Fix the next item.\n");
    let out = run_agent(&p, "opencode", "tool-use.jsonl", 0, &["run", "-n", "3"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let one = &p.events_of("ITERATION_ENDED")[0]["usage"];
    assert_eq!(one["cost_usd"], 0.0301);
    let total = &p.run_ended()["usage"];
    // 3 × 0.0301 as a decimal, not 0.09030000000000001.
    assert_eq!(total["cost_usd"], 0.0903);
    assert_eq!(p.run_ended()["cost_usd"], 0.0903);
    assert_eq!(
        total["input_tokens"].as_u64(),
        one["input_tokens"].as_u64().map(|n| 3 * n)
    );
    assert_eq!(total["num_turns"], 9);
    assert!(common::stdout(&out).contains("$0.09"));
}

#[test]
fn output_forces_an_adapter_for_any_agent_line() {
    let p = Project::new(
        "agent: ./wrapper.sh\noutput: codex-json",
        "Fix the next item.\n",
    );
    std::fs::copy(
        fixtures().join("codex/bin/codex"),
        p.path().join("wrapper.sh"),
    )
    .unwrap();
    run_agent(&p, "codex", "tool-use.jsonl", 0, &["run", "-n", "1"]);
    let ended = ended(&p);
    assert_eq!(ended["state"], "idle");
    assert_eq!(ended["usage"]["num_turns"], 2);
}

#[test]
fn claude_json_output_is_read_with_its_adapter() {
    let p = Project::new(
        "agent: claude -p --output-format json",
        "Fix the next item.\n",
    );
    // The fake claude prints its fixture only for stream-json; a script stands in here.
    std::fs::write(
        p.path().join("claude.json"),
        r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":2100,"num_turns":1,"result":"Done. <!-- ralph:state idle -->","session_id":"j1","total_cost_usd":0.0123}"#,
    )
    .unwrap();
    let bin = p.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::copy(fixtures().join("codex/bin/codex"), bin.join("claude")).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    let out = p
        .ralph(&["run", "-n", "1"])
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .env("FAKE_AGENT_FIXTURE", p.path().join("claude.json"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = ended(&p);
    assert_eq!(ended["state"], "idle");
    assert_eq!(ended["usage"]["cost_usd"], 0.0123);
    assert!(common::stdout(&out).contains("Done."));
}

#[test]
fn dry_run_and_check_name_the_adapter_and_why() {
    for (agent, dir) in AGENTS {
        let p = Project::new(&format!("agent: {agent}"), "Fix the next item.\n");
        for args in [&["run", "--dry-run"][..], &["check"][..]] {
            let out = run_agent(&p, dir, "success.jsonl", 0, args);
            let text = common::stdout(&out) + &common::stderr(&out);
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with("output") || l.contains("output read as"))
                .unwrap_or_else(|| panic!("{dir} {args:?}: no output row in {text}"));
            assert!(
                line.contains("the agent line runs"),
                "{dir} {args:?}: {line}"
            );
        }
    }
    let p = Project::new("agent: ./agent.sh\noutput: opencode-json", "x\n");
    let text = common::stdout(&p.run(&["check"]));
    assert!(
        text.contains("opencode-json (output: opencode-json in RALPH.md)"),
        "{text}"
    );
}

/// `ralph run -n 1` on `agent: claude -p` with the fake `claude` printing
/// `fixtures/claude/FIXTURE`; failing runs back off 10 ms.
fn run_claude(fixture: &str) -> (Project, Output) {
    let p = Project::new(
        "agent: claude -p\nfailure: {delay: 10ms, max_delay: 10ms}",
        "Fix the next item.\n",
    );
    let bin = fixtures().join("claude/bin").canonicalize().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    let out = p
        .ralph(&["run", "-n", "1"])
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .env(
            "FAKE_CLAUDE_FIXTURE",
            fixtures().join("claude").join(fixture),
        )
        .stdin(Stdio::null())
        .output()
        .expect("ralph runs");
    (p, out)
}

#[test]
fn claude_is_error_with_subtype_success_fails_with_its_result_text() {
    let (p, out) = run_claude("is-error.jsonl");
    let ended = ended(&p);
    assert_eq!(ended["failed"], true, "{ended}");
    let failure = ended["failure"].as_str().unwrap();
    assert!(
        failure.contains("Invalid API key · Please run /login"),
        "{failure}"
    );
    assert!(common::stdout(&out).contains("Invalid API key"));
}

#[test]
fn claude_error_max_turns_fails_with_its_errors_shown() {
    let (p, out) = run_claude("max-turns.jsonl");
    let ended = ended(&p);
    assert_eq!(ended["failed"], true, "{ended}");
    let failure = ended["failure"].as_str().unwrap();
    assert!(
        failure.contains("Reached maximum number of turns (2)"),
        "{failure}"
    );
    assert!(common::stdout(&out).contains("Reached maximum number of turns (2)"));
}

#[test]
fn claude_run_without_a_result_event_fails() {
    let (p, _) = run_claude("no-result.jsonl");
    let ended = ended(&p);
    assert_eq!(ended["failed"], true, "{ended}");
    assert!(
        ended["failure"]
            .as_str()
            .unwrap()
            .contains("ended without a final answer"),
        "{ended}"
    );
}

#[test]
fn claude_several_results_are_summed_with_cost_last_per_session() {
    let (p, out) = run_claude("resumed.jsonl");
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = ended(&p);
    let usage = &ended["usage"];
    assert_eq!(usage["num_turns"], 6);
    assert_eq!(usage["duration_ms"], 3500);
    assert_eq!(usage["input_tokens"], 350);
    assert_eq!(usage["output_tokens"], 35);
    // Session one's running total 0.3 (not 0.1 + 0.3) plus session two's 0.2.
    assert_eq!(usage["cost_usd"], 0.5);
    assert_eq!(ended["state"], "idle");
}

#[test]
fn claude_subagents_are_indented_denials_counted_and_an_empty_result_reads_the_last_text() {
    let (p, out) = run_claude("subagent.jsonl");
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = ended(&p);
    // The subagent's blocked marker is not the agent's; its last text's idle marker is.
    assert_eq!(ended["state"], "idle", "{ended}");
    let usage = &ended["usage"];
    assert_eq!(usage["denied_tool_calls"], 1);
    // modelUsage: both models, the subagent's haiku included.
    assert_eq!(usage["input_tokens"], 710);
    assert_eq!(usage["output_tokens"], 95);
    let shown = common::stdout(&out);
    assert!(shown.contains("  │ Reading src/parser.rs."), "{shown}");
    assert!(shown.contains("✗ Bash failed:"), "{shown}");
    assert_eq!(shown.matches("denied permission").count(), 1, "{shown}");
}
