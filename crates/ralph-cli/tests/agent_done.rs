//! The agent can finish the loop: `<!-- ralph:state done -->`, or ralphify's
//! `completion_signal`, ends it (`agent_done`, exit 0) unless `done_when` checks or stories have
//! the say; `max_turns` reaches `claude -p`.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;

use common::{Project, code, fake_agent};
use serde_json::{Value, json};

/// Writes an executable sh script `name` into the project and returns its absolute path.
fn script(p: &Project, name: &str, body: &str) -> String {
    let path = p.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A project whose agent is an `agent.sh` with `body`; `frontmatter` follows the `agent` line.
fn with_agent(body: &str, frontmatter: &str) -> Project {
    let p = Project::new("agent: x", "Do the work.\n");
    let agent = script(&p, "agent.sh", body);
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\nagent: {agent}\n{frontmatter}\n---\nDo the work.\n"),
    )
    .unwrap();
    p
}

fn states(p: &Project) -> Vec<Value> {
    p.events_of("ITERATION_ENDED")
        .iter()
        .map(|e| e["state"].clone())
        .collect()
}

#[test]
fn done_ends_the_loop_as_agent_done_with_exit_0() {
    let p = Project::new(
        &format!("agent: '{} --out working --marker done'", fake_agent()),
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "agent_done");
    assert_eq!(ended["exit_code"], 0);
    assert_eq!(ended["iterations"], 1);
}

#[test]
fn done_with_failing_checks_is_a_failed_attempt_and_the_next_prompt_says_so() {
    // The check passes from iteration 2 on; the agent says done every time.
    let p = Project::new(
        &format!(
            "agent: '{} --save-prompt prompts.txt --marker done'\n\
             done_when:\n  - '[ \"$RALPH_ITERATION\" -ge 2 ] || {{ echo not yet; exit 1; }}'\n\
             convergence: {{backoff: 10ms}}",
            fake_agent()
        ),
        "Do the work.\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "converged");
    let oks: Vec<Value> = p
        .events_of("ATTEMPT_ENDED")
        .iter()
        .map(|a| a["ok"].clone())
        .collect();
    assert_eq!(oks, [json!(false), json!(true)]);
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let second = prompts.split("=== end ===").nth(1).unwrap();
    assert!(
        second.contains(ralph_done_but_failing()),
        "second prompt: {second}"
    );
    assert!(second.contains("not yet"), "second prompt: {second}");
    assert!(
        !prompts
            .split("=== end ===")
            .next()
            .unwrap()
            .contains("You reported")
    );
}

/// The text the engine puts in front of the failures (`ralph_engine::DONE_BUT_FAILING`).
fn ralph_done_but_failing() -> &'static str {
    "You reported `<!-- ralph:state done -->`, but the checks"
}

#[test]
fn done_with_passing_checks_converges() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker done'\ndone_when: ['true']",
            fake_agent()
        ),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    assert_eq!(p.run_ended()["reason"], "converged");
}

#[test]
fn in_story_mode_done_finishes_the_current_story() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker done'\nescalation: {{prd: prd.json, revert: false}}",
            fake_agent()
        ),
        "Work on {{ story.id }}.\n",
    );
    let prd = json!({
        "project": "P",
        "userStories": [
            {"id": "S1", "title": "one", "description": "", "acceptanceCriteria": [],
             "priority": 1, "passes": false, "notes": ""},
            {"id": "S2", "title": "two", "description": "", "acceptanceCriteria": [],
             "priority": 2, "passes": false, "notes": ""}
        ]
    });
    std::fs::write(p.path().join("prd.json"), prd.to_string()).unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "stories_done");
    assert_eq!(ended["iterations"], 2);
    let passed: Vec<Value> = p
        .events_of("STORY_PASSED")
        .iter()
        .map(|e| e["story_id"].clone())
        .collect();
    assert_eq!(passed, [json!("S1"), json!("S2")]);
    let prd: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("prd.json")).unwrap()).unwrap();
    assert_eq!(prd["userStories"][0]["passes"], true);
    assert_eq!(prd["userStories"][1]["passes"], true);
}

#[test]
fn completion_signal_counts_as_done() {
    let p = with_agent(
        "cat >/dev/null\necho 'all stories pass'\necho '<promise>COMPLETE</promise>'\n",
        "completion_signal: COMPLETE",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "agent_done");
    assert_eq!(states(&p), [json!("done")]);
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["markers"],
        json!([{"kind": "state", "name": "done", "attrs": [["source", "completion_signal"]]}])
    );
}

#[test]
fn completion_signal_split_across_writes_is_found() {
    let p = with_agent(
        "cat >/dev/null\nprintf '<promise>COMP'\nsleep 0.05\nprintf 'LETE</promise>\\n'\n",
        "completion_signal: COMPLETE",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    assert_eq!(p.run_ended()["reason"], "agent_done");
}

#[test]
fn the_bare_signal_word_in_prose_does_not_end_the_loop() {
    let p = with_agent(
        "cat >/dev/null\necho 'the work is not COMPLETE yet'\n",
        "completion_signal: COMPLETE\nmax_iterations: 2",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
}

#[test]
fn stop_on_completion_signal_false_ignores_the_signal() {
    let p = with_agent(
        "cat >/dev/null\necho '<promise>COMPLETE</promise>'\n",
        "completion_signal: COMPLETE\nstop_on_completion_signal: false\nmax_iterations: 2",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
    assert_eq!(states(&p), [Value::Null, Value::Null]);
}

/// A fake `claude` that records its arguments and prints a stream-json result with `text`.
fn fake_claude(p: &Project) -> String {
    script(
        p,
        "claude",
        "printf '%s\\n' \"$@\" > args.txt\ncat >/dev/null\n\
         printf '%s\\n' '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done <promise>COMPLETE</promise>\"}'\n",
    )
}

#[test]
fn max_turns_reaches_claude_print_as_its_flag() {
    let p = Project::new("agent: x", "x\n");
    let claude = fake_claude(&p);
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\nagent: {claude} -p\nmax_turns: 7\nmax_iterations: 1\n---\nx\n"),
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let args = std::fs::read_to_string(p.path().join("args.txt")).unwrap();
    let args: Vec<&str> = args.lines().collect();
    let at = args
        .iter()
        .position(|a| *a == "--max-turns")
        .expect("--max-turns passed");
    assert_eq!(args[at + 1], "7");
}

#[test]
fn completion_signal_is_read_from_claudes_final_answer() {
    let p = Project::new("agent: x", "x\n");
    let claude = fake_claude(&p);
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\nagent: {claude} -p\ncompletion_signal: COMPLETE\n---\nx\n"),
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "agent_done");
}

#[test]
fn max_turns_for_another_agent_is_a_warning_in_ralph_check() {
    let p = Project::new("agent: codex exec\nmax_turns: 5\nmax_turns_grace: 2", "x\n");
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(text.contains("max_turns: has no effect"), "{text}");
    assert!(text.contains("max_turns_grace: has no effect"), "{text}");
}
