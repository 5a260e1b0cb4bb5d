//! `ralph status` and `ralph runs` tell what is going on (Trust 0.4, item 17): a run that holds
//! the folder but has not written its session yet is "starting", never the previous run nor
//! "session.json: cannot read"; a lock file naming a process that holds no lock (its pid
//! reused since the run was killed) is no running run.

use crate::common;

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{Project, code, stderr};
use serde_json::{Value, json};

/// A finished run in the folder: the one `.ralph/current` names.
fn finished() -> Project {
    let p = Project::new("agent: echo hi\nmax_iterations: 1", "x\n");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    p
}

/// `flock(1)` holding the folder's lock, as a starting run does, with `run_id` written in it as
/// that run writes its name.
fn hold_the_folder(p: &Project, run_id: &str) -> Child {
    let lock = p.path().join(".ralph/lock");
    let child = Command::new("flock")
        .arg(&lock)
        .args(["sleep", "60"])
        .spawn()
        .expect("flock(1) runs");
    wait_until_locked(&lock);
    write_holder(p, child.id(), run_id);
    child
}

fn write_holder(p: &Project, pid: u32, run_id: &str) {
    let holder = json!({"pid": pid, "started": "2026-12-02T01:00:00Z", "run_id": run_id,
                        "folder": p.path()});
    std::fs::write(p.path().join(".ralph/lock"), holder.to_string()).unwrap();
}

fn wait_until_locked(lock: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let held = Command::new("flock")
            .args(["-n", "-s"])
            .arg(lock)
            .arg("true")
            .status()
            .unwrap();
        if !held.success() {
            return;
        }
        assert!(Instant::now() < deadline, "flock(1) never took the lock");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn status(p: &Project, args: &[&str]) -> String {
    let out = p.run(&[&["status"], args].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    common::stdout(&out)
}

#[test]
fn a_run_holding_the_folder_before_its_session_exists_is_starting() {
    let p = finished();
    let mut holder = hold_the_folder(&p, "20261202T010000000-aaaa");
    // Before it names its folder in `.ralph/current`: not the previous run.
    let shown = status(&p, &[]);
    assert!(
        shown.starts_with("run 20261202T010000000-aaaa\n"),
        "{shown}"
    );
    assert!(shown.contains("state: starting"), "{shown}");
    // After: its folder has no session yet, which is no error.
    let dir = p.path().join(".ralph/runs/20261202T010000000-aaaa");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        p.path().join(".ralph/current"),
        format!("{}\n", dir.display()),
    )
    .unwrap();
    let json: Value = serde_json::from_str(&status(&p, &["--json"])).unwrap();
    assert_eq!(json["state"], "starting", "{json}");
    assert_eq!(json["run_id"], "20261202T010000000-aaaa");
    assert_eq!(json["pid"], holder.id());
    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn a_lock_naming_a_live_pid_that_holds_no_lock_is_no_running_run() {
    // A run killed with SIGKILL mid-iteration: no RUN_ENDED, its name left in the lock file.
    let p = Project::new("agent: sleep 60\nmax_iterations: 1", "x\n");
    let mut run = p.spawn(&["run"]);
    p.wait_for("ITERATION_STARTED", 1);
    run.kill().unwrap();
    run.wait().unwrap();
    let run_id = p.events()[0]["run_id"].as_str().unwrap().to_owned();
    // The killed run's name left in the lock file, its pid taken by another process since:
    // this test's own, alive and holding no lock.
    write_holder(&p, std::process::id(), &run_id);
    let listed: Vec<Value> =
        serde_json::from_str(&common::stdout(&p.run(&["runs", "--json"]))).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_ne!(listed[0]["status"], "running", "{listed:?}");
    assert!(
        listed[0].get("pid").is_none_or(Value::is_null),
        "{listed:?}"
    );
    let shown = status(&p, &[]);
    assert!(!shown.contains("running"), "{shown}");
}
