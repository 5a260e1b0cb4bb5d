//! Budgets: `max_cost` (from the cost the agents report) and `max_runtime` end the run with
//! exit 1, from RALPH.md or from `--max-cost` / `--max-runtime`.

use crate::common;

use std::time::{Duration, Instant};

use common::{Project, code, fake_agent};

/// A project whose agent reports, Claude-style, a run costing `cost` US dollars.
fn costly(cost: &str, frontmatter: &str) -> Project {
    let result = format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"total_cost_usd":{cost},"result":"done"}}"#
    );
    let p = Project::new(
        &format!("agent: sh agent.sh\noutput: claude-stream-json\n{frontmatter}"),
        "x\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        format!("cat >/dev/null\nprintf '%s\\n' '{result}'\n"),
    )
    .unwrap();
    p
}

#[test]
fn no_iteration_starts_once_the_cost_reached_max_cost() {
    let p = costly("0.75", "max_cost: 2.00\nmax_iterations: 10");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "max_cost");
    // $0.75, $1.50, then $2.25: the third run passed the budget, no fourth starts.
    assert_eq!(ended["iterations"], 3);
    assert_eq!(ended["cost_usd"], 2.25);
    assert_eq!(p.events_of("RUN_STARTED")[0]["max_cost_usd"], 2.0);
}

#[test]
fn max_cost_on_the_command_line_overrides_the_file() {
    let p = costly("0.75", "max_cost: 100\nmax_iterations: 10");
    assert_eq!(code(&p.run(&["run", "--max-cost", "1"])), 1);
    let ended = p.run_ended();
    assert_eq!(
        (&ended["reason"], &ended["iterations"]),
        (&"max_cost".into(), &2.into())
    );
}

#[test]
fn a_bad_max_cost_flag_is_a_usage_error() {
    let p = costly("0.75", "");
    let out = p.run(&["run", "--max-cost", "lots"]);
    assert_eq!(code(&out), 2);
    assert!(
        common::stderr(&out).contains("expected a number >= 0.0 (US dollars), got \"lots\""),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn max_runtime_cuts_a_wait_short_and_ends_the_run() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker idle'\nidle: {{delay: 30s}}\nmax_runtime: 400ms",
            fake_agent()
        ),
        "x\n",
    );
    let started = Instant::now();
    let out = p.run(&["run"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the 30s wait was cut"
    );
    assert_eq!(code(&out), 1);
    let ended = p.run_ended();
    assert_eq!(
        (&ended["reason"], &ended["iterations"]),
        (&"max_runtime".into(), &1.into())
    );
    let wait = p.events_of("WAIT_STARTED")[0]["delay_ms"].as_u64().unwrap();
    assert!(
        wait <= 400,
        "the wait announced is the part within max_runtime: {wait}"
    );
    assert_eq!(p.events_of("RUN_STARTED")[0]["max_runtime_ms"], 400);
}

#[test]
fn a_running_agent_finishes_past_max_runtime_and_nothing_starts_after() {
    let p = Project::new(
        &format!("agent: '{} --sleep 0.5 --out done'", fake_agent()),
        "x\n",
    );
    let out = p.run(&["run", "--max-runtime", "200ms"]);
    assert_eq!(code(&out), 1);
    let runs = p.events_of("ITERATION_ENDED");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["exit_code"], 0, "the agent was not stopped");
    assert_eq!(p.run_ended()["reason"], "max_runtime");
}

#[test]
fn check_warns_when_max_cost_can_never_be_reached() {
    let p = Project::new(
        &format!("agent: '{} --out x'\nmax_cost: 5", fake_agent()),
        "x\n",
    );
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 0);
    assert!(
        common::stderr(&out).contains(
            "RALPH.md:3:1: max_cost: the agent's output is read as text, which reports no cost: \
             max_cost can never be reached (use `output: claude-stream-json`"
        ),
        "{}",
        common::stderr(&out)
    );
    // An agent read as stream-json reports its cost: no warning.
    let read = costly("0.1", "max_cost: 5");
    assert!(!common::stderr(&read.run(&["check"])).contains("max_cost"));
}

#[test]
fn a_negative_cost_is_not_counted_so_max_cost_still_ends_the_run() {
    let result = |cost: &str| {
        format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"total_cost_usd":{cost},"result":"done"}}"#
        )
    };
    let p = Project::new(
        "agent: sh agent.sh\noutput: claude-stream-json\nmax_cost: 2.00\nmax_iterations: 10",
        "x\n",
    );
    // The first run says it cost -$100, which would leave $102 to spend; the others $0.75.
    std::fs::write(
        p.path().join("agent.sh"),
        format!(
            "cat >/dev/null\nif [ \"$RALPH_ITERATION\" = 1 ]; then printf '%s\\n' '{}'; else printf '%s\\n' '{}'; fi\n",
            result("-100"),
            result("0.75")
        ),
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "max_cost");
    assert_eq!(ended["iterations"], 4);
    assert_eq!(ended["cost_usd"], 2.25);
    let first = &p.events_of("ITERATION_ENDED")[0];
    assert!(first["usage"].get("cost_usd").is_none(), "{first}");
    let warnings = p.events_of("WARNING");
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("-100")),
        "{warnings:?}"
    );
}
