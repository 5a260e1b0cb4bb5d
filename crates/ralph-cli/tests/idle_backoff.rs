//! Idle handling: waits that grow, cap, reset on activity, and the idle limit.

use crate::common;

use common::{Project, code, fake_agent};

/// An agent that reports idle on the iterations listed in `idle` and works on the others.
fn scripted_agent(idle: &[u64]) -> String {
    let cases: Vec<String> = idle.iter().map(u64::to_string).collect();
    format!(
        "agent: sh -c 'case \" {} \" in *\" $RALPH_ITERATION \"*) echo \"<!-- ralph:state idle -->\";; *) echo working;; esac'",
        cases.join(" ")
    )
}

fn delays(p: &Project) -> Vec<serde_json::Value> {
    p.events_of("ITERATION_IDLE")
        .iter()
        .map(|e| e["next_delay_ms"].clone())
        .collect()
}

#[test]
fn idle_wait_doubles_until_the_cap_then_the_limit_stops() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker idle'\nidle: {{delay: 50ms, backoff: 2, max_delay: 200ms, max: 500ms}}",
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run", "-n", "20"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        delays(&p),
        [
            serde_json::json!(50),
            serde_json::json!(100),
            serde_json::json!(200),
            serde_json::Value::Null
        ]
    );
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "idle_limit");
    assert_eq!(ended["exit_code"], 0);
    assert_eq!(ended["idle_iterations"], 4);
    assert!(common::stdout(&out).contains("idle limit reached"));
}

#[test]
fn idle_events_count_the_streak() {
    let p = Project::new(
        &format!(
            "{}\nidle: {{delay: 10ms, max_delay: 40ms}}",
            scripted_agent(&[1, 2, 3])
        ),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "3"])), 0);
    let idle = p.events_of("ITERATION_IDLE");
    let counts: Vec<_> = idle
        .iter()
        .map(|e| e["consecutive_idle"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [1, 2, 3]);
    assert_eq!(idle[0]["idle_elapsed_ms"], 0);
    assert!(
        idle[2]["idle_elapsed_ms"].as_u64().unwrap() >= 30,
        "{:?}",
        idle[2]
    );
}

#[test]
fn idle_wait_resets_after_activity() {
    let p = Project::new(
        &format!(
            "{}\nidle: {{delay: 20ms, backoff: 3, max_delay: 1s}}",
            scripted_agent(&[1, 2, 4])
        ),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "5"])), 0);
    assert_eq!(
        delays(&p),
        [
            serde_json::json!(20),
            serde_json::json!(60),
            serde_json::json!(20)
        ]
    );
    let counts: Vec<_> = p
        .events_of("ITERATION_IDLE")
        .iter()
        .map(|e| e["consecutive_idle"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [1, 2, 1]);
}

#[test]
fn without_an_idle_block_the_marker_is_only_reported() {
    let p = Project::new(&format!("agent: '{} --marker idle'", fake_agent()), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "3"])), 0);
    assert!(p.events_of("ITERATION_IDLE").is_empty());
    assert!(p.events_of("WAIT_STARTED").is_empty());
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 3);
    assert_eq!(ended[0]["state"], "idle");
    assert_eq!(ended[0]["markers"][0]["name"], "idle");
    assert_eq!(p.run_ended()["reason"], "max_iterations");
    // Counted with or without an `idle` block (docs/events.md).
    assert_eq!(p.run_ended()["idle_iterations"], 3);
}

#[test]
fn commands_run_on_idle_iterations_too() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker idle'\nidle: {{delay: 10ms}}\ncommands:\n  - name: tick\n    run: echo tick",
            fake_agent()
        ),
        "{{ commands.tick }}\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "3"])), 0);
    assert_eq!(p.events_of("COMMAND_FINISHED").len(), 3);
}

#[test]
fn without_a_terminal_each_wait_is_one_plain_line() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker idle'\nidle: {{delay: 1100ms}}",
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run", "-n", "2", "--no-color"]);
    assert_eq!(code(&out), 0);
    let stdout = common::stdout(&out);
    let waits: Vec<_> = stdout
        .lines()
        .filter(|l| l.contains("before the next run"))
        .collect();
    assert_eq!(
        waits,
        ["idle ×1 — waiting 1.1s before the next run"],
        "{stdout}"
    );
    assert!(!stdout.contains('\r'));
}
