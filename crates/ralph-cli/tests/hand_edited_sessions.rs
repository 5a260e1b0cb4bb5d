//! A session file a person edited by hand (Trust 0.4, item 17) is never trusted past what it
//! can mean: a stopped wait resumes for at most the wait it planned, whatever its `until`
//! says, and a `run_id` that is not one (`../elsewhere`) is refused before it names a path.

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{Project, code, fake_agent, send_signal, stderr};
use serde_json::Value;

fn run_dir(p: &Project) -> PathBuf {
    let text = std::fs::read_to_string(p.path().join(".ralph/current")).expect(".ralph/current");
    PathBuf::from(text.trim_end())
}

fn run_events_of(p: &Project, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(run_dir(p).join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == kind)
        .collect()
}

fn wait_for_run_event(p: &Project, kind: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !p.path().join(".ralph/current").exists() || run_events_of(p, kind).len() < count {
        assert!(Instant::now() < deadline, "no {count} x {kind} in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run stopped by Ctrl+C in its third idle wait (20 s), its session left as it wrote it.
fn stopped_in_a_wait() -> Project {
    let agent = fake_agent();
    // Waits of 50ms, 1s, then 20s: the run is stopped in the third.
    let p = Project::new(
        &format!(
            "agent: {agent} --idle-from 1\nidle: {{delay: 50ms, backoff: 20, max_delay: 60s}}"
        ),
        "work\n",
    );
    let child = p.spawn(&["run"]);
    wait_for_run_event(&p, "WAIT_STARTED", 3);
    // A first Ctrl+C skips a wait; a second within a second stops the loop.
    send_signal(child.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(100));
    send_signal(child.id(), libc::SIGINT);
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(130));
    p
}

fn edit_session(p: &Project, edit: impl FnOnce(&mut Value)) {
    let path = run_dir(p).join("session.json");
    let mut session: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut session);
    std::fs::write(&path, serde_json::to_vec_pretty(&session).unwrap()).unwrap();
}

#[test]
fn a_stopped_wait_whose_until_was_moved_to_9999_resumes_for_at_most_its_planned_wait() {
    let p = stopped_in_a_wait();
    edit_session(&p, |s| {
        assert_eq!(s["wait"]["delay_ms"], 20_000, "{s}");
        s["wait"]["until"] = "9999-12-31T00:00:00.000Z".into();
    });
    let child = p.spawn(&["run", "--resume"]);
    wait_for_run_event(&p, "WAIT_STARTED", 4);
    send_signal(child.id(), libc::SIGTERM);
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(143));
    let wait = run_events_of(&p, "WAIT_STARTED").pop().unwrap();
    assert_eq!(wait["iteration"], 3);
    let left = wait["delay_ms"].as_u64().unwrap();
    assert!(left <= 20_000, "the planned 20s at most: {left}ms");
}

#[test]
fn a_run_id_that_is_a_path_is_refused_naming_it() {
    let p = stopped_in_a_wait();
    edit_session(&p, |s| s["run_id"] = "../../elsewhere".into());
    let out = p.run(&["run", "--resume"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("session.json: run_id \"../../elsewhere\" is not a run id"),
        "{said}"
    );
    assert!(!p.path().join("../../elsewhere").exists());
}
