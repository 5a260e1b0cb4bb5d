//! The README's first command: the bundled demo runs without any agent installed, shows idle
//! backoff, and ends by the idle limit in under 20 seconds.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn the_bundled_demo_ends_by_idle_limit_in_under_20_seconds() {
    let events = tempfile::NamedTempFile::new().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_ralph"))
        .args(["run", "fixtures/demo", "--no-color", "--events"])
        .arg(events.path())
        .arg("--log-dir")
        .arg(logs.path())
        .current_dir(common::fixtures().join(".."))
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let stdout = common::stdout(&out);
    assert!(stdout.contains("Task 1 done."), "{stdout}");
    assert!(
        stdout.contains("idle ×3 — waiting 4s before the next run"),
        "{stdout}"
    );
    assert!(stdout.contains("idle limit reached"), "{stdout}");
    let text = std::fs::read_to_string(events.path()).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "RUN_ENDED");
    assert_eq!(last["reason"], "idle_limit");
    assert_eq!(last["idle_iterations"], 4);
}
