//! The README's first command: the bundled demo runs without any agent installed, works, then
//! goes idle. Its waits (1s, 2s, 4s, then the idle limit) are checked to the millisecond on a
//! controllable clock in `ralph-engine/tests/demo.rs`; here the real binary runs it up to its
//! first idle iteration, which ends before any wait.

use crate::common;

use std::process::Command;

#[test]
fn the_bundled_demo_runs_its_agent_and_goes_idle_once_the_tasks_are_done() {
    let events = tempfile::NamedTempFile::new().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ralph"))
        .args(["run", "fixtures/demo", "--no-color", "-n", "3", "--events"])
        .arg(events.path())
        .arg("--log-dir")
        .arg(logs.path())
        .current_dir(common::fixtures().join(".."))
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let stdout = common::stdout(&out);
    assert!(stdout.contains("Task 1 done."), "{stdout}");
    assert!(stdout.contains("Task 2 done."), "{stdout}");

    let events: Vec<serde_json::Value> = std::fs::read_to_string(events.path())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let started = &events[0];
    assert_eq!(started["type"], "RUN_STARTED");
    assert_eq!(started["idle"]["delay_ms"], 1_000);
    assert_eq!(started["idle"]["max_ms"], 8_000);
    let idle: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "ITERATION_IDLE")
        .collect();
    assert_eq!(idle.len(), 1, "{events:?}");
    assert_eq!(idle[0]["iteration"], 3);
    assert_eq!(idle[0]["next_delay_ms"], 1_000);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ENDED");
    assert_eq!(last["reason"], "max_iterations");
}
