//! Process handling: no orphans, no deadlocks, flat memory.

use crate::common;

use std::time::{Duration, Instant};

use common::{Project, code, fake_agent};

#[test]
fn a_grandchild_holding_stdout_does_not_hang_the_loop() {
    let marker = "27.1828";
    let p = Project::new(
        &format!("agent: '{} --grandchild {marker} --out done'", fake_agent()),
        "x\n",
    );
    let started = Instant::now();
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        !common::process_running(&format!("sleep {marker}")),
        "grandchild left behind"
    );
}

#[test]
fn a_prompt_larger_than_the_pipe_never_deadlocks_an_agent_that_does_not_read() {
    let body = "y".repeat(10 * 1024 * 1024);
    let p = Project::new(&format!("agent: '{} --bytes 200000'", fake_agent()), &body);
    let out = p.run(&["run", "-n", "1", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.events_of("ITERATION_ENDED")[0]["exit_code"], 0);
}

#[test]
fn an_agent_killed_by_a_signal_is_reported() {
    let p = Project::new(
        &format!("agent: '{} --kill-self KILL'", fake_agent()),
        "x\n",
    );
    // Killed by a signal ralph did not send: a failed run, the last before max_iterations.
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["signal"], 9);
    assert_eq!(ended["exit_code"], serde_json::Value::Null);
    assert_eq!(ended["termination"], "killed");
    assert_eq!(ended["failed"], true);
    assert_eq!(ended["failure"], "killed by signal 9");
}

#[test]
fn markers_split_across_reads_are_found_and_the_last_state_wins() {
    let p = Project::new(
        &format!(
            "agent: '{} --bytes 100000 --marker working --bytes 70000 --marker idle --out tail'",
            fake_agent()
        ),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "1", "--quiet"])), 0);
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle");
    let names: Vec<_> = ended["markers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["working", "idle"]);
}

#[test]
fn agent_output_streams_to_the_terminal_and_the_log() {
    let p = Project::new(
        &format!("agent: '{} --out to-stdout --err to-stderr'", fake_agent()),
        "x\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0);
    let shown = common::stdout(&out);
    assert!(
        shown.contains("to-stdout") && shown.contains("to-stderr"),
        "{shown}"
    );
    let log = p.events_of("ITERATION_ENDED")[0]["log_file"]
        .as_str()
        .unwrap()
        .to_owned();
    let log = std::fs::read_to_string(p.path().join(log)).unwrap();
    assert!(
        log.contains("to-stdout") && log.contains("to-stderr"),
        "{log}"
    );
}
