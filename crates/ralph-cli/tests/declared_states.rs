//! States declared in RALPH.md (`states`): a hook with the marker's attributes, then stop,
//! continue or wait; STATE_HANDLED; located errors; unknown states warned about once.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;

use common::{Project, code};
use serde_json::{Value, json};

/// A project whose agent is an `agent.sh` printing `marker` (a whole `<!-- ... -->` line), with
/// `frontmatter` after the `agent` line.
fn project(marker: &str, frontmatter: &str) -> Project {
    let p = Project::new("agent: x", "x\n");
    let agent = p.path().join("agent.sh");
    std::fs::write(
        &agent,
        format!("#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n{marker}\nEOF\n"),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\nagent: {}\n{frontmatter}\n---\nx\n", agent.display()),
    )
    .unwrap();
    p
}

#[test]
fn a_stop_state_runs_its_hook_with_quoted_attributes_and_exits_with_its_code() {
    let p = project(
        r#"<!-- ralph:state review pr="12; touch pwned" -->"#,
        "args: [who]\nstates:\n  review:\n    run: printf '%s\\n' {{ state.pr }} \"{{ state.pr }}\" {{ args.who }} > hook.out\n    \
         then: stop\n    exit_code: 3",
    );
    let out = p.run(&["run", ".", "--who", "a b"]);
    assert_eq!(code(&out), 3, "{}", common::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(p.path().join("hook.out")).unwrap(),
        "12; touch pwned\n12; touch pwned\na b\n"
    );
    assert!(
        !p.path().join("pwned").exists(),
        "an attribute ran as shell code"
    );
    let handled = p.events_of("STATE_HANDLED");
    assert_eq!(handled.len(), 1);
    assert_eq!(handled[0]["iteration"], 1);
    assert_eq!(handled[0]["state"], "review");
    assert_eq!(handled[0]["then"], "stop");
    assert_eq!(handled[0]["hook_exit_code"], 0);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "review");
    assert_eq!(ended["exit_code"], 3);
}

#[test]
fn a_wait_state_waits_before_the_next_iteration() {
    let p = project(
        "<!-- ralph:state review -->",
        "max_iterations: 2\nstates:\n  review:\n    then: wait\n    wait: 50ms",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    let waits = p.events_of("WAIT_STARTED");
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0]["reason"], "state");
    assert_eq!(waits[0]["delay_ms"], 50);
    let handled = p.events_of("STATE_HANDLED");
    assert_eq!(handled.len(), 2);
    assert_eq!(handled[0]["then"], "wait");
    assert_eq!(handled[0]["hook_exit_code"], Value::Null);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
}

#[test]
fn a_continue_state_reports_a_failing_hook_and_goes_on() {
    let p = project(
        "<!-- ralph:state noted -->",
        "max_iterations: 2\nstates:\n  noted:\n    run: echo oops; exit 4",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0);
    let exits: Vec<Value> = p
        .events_of("STATE_HANDLED")
        .iter()
        .map(|e| e["hook_exit_code"].clone())
        .collect();
    assert_eq!(exits, [json!(4), json!(4)]);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
    assert!(
        common::stderr(&out).contains("oops"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn an_unknown_state_is_warned_about_once_per_run() {
    let p = project("<!-- ralph:state mystery -->", "max_iterations: 3");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0);
    let stderr = common::stderr(&out);
    assert_eq!(
        stderr
            .matches("state `mystery`, which nothing handles")
            .count(),
        1,
        "{stderr}"
    );
    assert!(p.events_of("STATE_HANDLED").is_empty());
}

#[test]
fn an_unknown_state_is_a_warning_event_once_per_run() {
    let p = project("<!-- ralph:state mystery -->", "max_iterations: 3");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0);
    let warnings = p.events_of("WARNING");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = warnings[0]["message"].as_str().unwrap_or_default();
    assert!(
        message
            .starts_with("iteration 1: the agent reported state `mystery`, which nothing handles"),
        "{message}"
    );
}

#[test]
fn a_declared_state_is_not_warned_about() {
    let p = project(
        "<!-- ralph:state review -->",
        "max_iterations: 1\nstates:\n  review:",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0);
    assert!(!common::stderr(&out).contains("nothing handles"));
    assert_eq!(p.events_of("STATE_HANDLED")[0]["then"], "continue");
}

#[test]
fn check_locates_a_misspelt_then_with_a_suggestion() {
    let p = Project::new("agent: x\nstates:\n  review:\n    then: wiat", "x\n");
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 2);
    let text = common::stderr(&out);
    assert!(
        text.contains(
            r#"RALPH.md:5:11: states.review.then: expected "stop" or "continue" or "wait" or "hold", got "wiat"; did you mean "wait"?"#
        ),
        "{text}"
    );
}

#[test]
fn built_in_states_cannot_be_redefined() {
    let p = Project::new("agent: x\nstates:\n  done:\n    then: continue", "x\n");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 2);
    assert!(
        common::stderr(&out)
            .contains("RALPH.md:4:3: states.done: `done` is built in and cannot be redefined"),
        "{}",
        common::stderr(&out)
    );
    assert!(p.events().is_empty(), "nothing ran");
}

#[test]
fn a_state_named_like_a_built_in_ending_is_refused_before_anything_runs() {
    let p = Project::new(
        "agent: x\nstates:\n  max_cost:\n    then: stop\n    exit_code: 7",
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 2);
    let text = common::stderr(&out);
    assert!(
        text.contains(
            "RALPH.md:4:3: states.max_cost: `max_cost` is a reason ralph gives for ending a run \
             (RUN_ENDED)"
        ),
        "{text}"
    );
    assert!(p.events().is_empty(), "nothing ran");
}

#[test]
fn a_state_named_like_a_story_ending_is_refused_as_ralph_knows_story_modes_words() {
    // Story mode's endings are its own words, which `ralph` registers with the parser.
    let p = Project::new("agent: x\nstates:\n  stories_done:\n    then: stop", "x\n");
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 2);
    let text = common::stderr(&out);
    assert!(
        text.contains(
            "RALPH.md:4:3: states.stories_done: `stories_done` is a reason ralph gives for ending \
             a run (RUN_ENDED), and a stop in this state would read as that ending; pick another \
             name (reserved: max_iterations, idle_limit, interrupted, cancelled, agent_failed, \
             agent_failing, agent_done, converged, max_attempts_reached, pty_idle_timeout, \
             max_cost, max_runtime, stories_done, stories_blocked, circuit_open, \
             max_iterations_work_left, work_left, task_passed, task_blocked, escalation_failed, \
             plan_written, plan_shown, plan_invalid)"
        ),
        "{text}"
    );
}

#[test]
fn check_summarises_declared_states() {
    let p = Project::new(
        "agent: x\nstates:\n  review:\n    run: echo hi\n    then: wait\n    wait: 30m\n  \
         shipped:\n    then: stop\n    exit_code: 3",
        "x\n",
    );
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(
        common::stdout(&out)
            .contains("states          review (hook, then wait 30m), shipped (stop (exit 3))"),
        "{}",
        common::stdout(&out)
    );
}

#[test]
fn a_hook_past_its_timeout_is_killed_with_its_process_group() {
    let p = project(
        "<!-- ralph:state review -->",
        "states:\n  review:\n    run: sleep 31.4159 & sleep 31.4159\n    timeout: 200ms\n    \
         then: stop\n    exit_code: 5",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 5, "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("timed out"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(
        p.events_of("STATE_HANDLED")[0]["hook_exit_code"],
        Value::Null
    );
    assert!(
        !common::process_running("sleep 31.4159"),
        "the hook's processes outlived it"
    );
}
