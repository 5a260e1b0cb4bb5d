//! Ctrl+C in `ralph run --parallel N`: a first one lets the running iterations finish and lands
//! the tasks that passed before ralph exits, leaving the others for `--resume`; a second one
//! stops at once without landing; either way nothing is lost and `ralph status` tells each lane
//! as it is.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::parallel::{
    READ_PROMPT, landed_with_its_passes, nothing_left_behind, passes, repo, wait_for_file,
};
use serde_json::Value;

/// An agent that says it started (`<marks>/<story>.started`), then waits for `<marks>/release`
/// before it does its story; `fails_once`'s first run does nothing, so its check fails once.
fn held_agent(marks: &Path, fails_once: &str) -> String {
    format!(
        "{READ_PROMPT}touch {m}/$story.started\n\
         while [ ! -e {m}/release ]; do sleep 0.01; done\n\
         if [ \"$story\" = {fails_once} ] && [ ! -e {m}/$story.tried ]; then touch {m}/$story.tried; exit 0; fi\n\
         echo ok > \"$story.txt\"\n",
        m = marks.display()
    )
}

/// Starts `ralph run --parallel 2` and, once US-001's and US-002's agents run, presses Ctrl+C
/// and lets the agents finish; returns what ralph said.
fn ctrl_c_while_two_lanes_run(p: &common::Project, marks: &Path) -> std::process::Output {
    let child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&marks.join("US-001.started"));
    wait_for_file(&marks.join("US-002.started"));
    common::send_signal(child.id(), libc::SIGINT);
    // Time for ralph to pass the Ctrl+C on to the lanes while their agents still run.
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(marks.join("release"), "").unwrap();
    child.wait_with_output().unwrap()
}

/// Every lane's state in `ralph status --json`, by task id, and the run's state.
fn status(p: &common::Project) -> (String, Vec<(String, String)>) {
    let out = p.run(&["status", "--json"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let status: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let lanes = status["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let field = |k: &str| l[k].as_str().unwrap().to_owned();
            (field("task_id"), field("state"))
        })
        .collect();
    (status["state"].as_str().unwrap().to_owned(), lanes)
}

fn lane_started(events: &[Value], id: &str) -> bool {
    events
        .iter()
        .any(|e| e["type"] == "LANE_STARTED" && e["task_id"] == id)
}

const IDS: [&str; 4] = ["US-001", "US-002", "US-003", "US-004"];

#[test]
fn a_first_ctrl_c_lands_the_lanes_that_pass_and_leaves_the_rest_to_resume() {
    let marks = tempfile::tempdir().unwrap();
    let p = repo(
        &held_agent(marks.path(), "US-002"),
        "ls US-*.txt >/dev/null 2>&1\n",
        &IDS,
        &[],
    );
    let out = ctrl_c_while_two_lanes_run(&p, marks.path());
    assert_eq!(common::code(&out), 130, "{}", common::stderr(&out));

    let dir = p.path();
    let events = p.events();
    landed_with_its_passes(dir, &events, "US-001", "US-001.txt");
    assert!(dir.join("US-001.txt").exists(), "in the main worktree");
    for id in ["US-002", "US-003", "US-004"] {
        assert_eq!(passes(dir, "main", id), false, "{id}");
    }
    assert!(
        !lane_started(&events, "US-003") && !lane_started(&events, "US-004"),
        "no lane starts after a Ctrl+C: {events:#?}"
    );
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "PARALLEL_ENDED");
    assert_eq!(ended["reason"], "interrupted");
    assert_eq!(ended["landed"], 1);
    let terminal = common::stdout(&out);
    for step in [
        "US-001 story US-001 passed; merge queue",
        "US-001 story US-001 landed",
        "1 landed",
    ] {
        assert!(
            terminal.contains(step),
            "{step:?} on the terminal: {terminal}"
        );
    }

    let (state, lanes) = status(&p);
    assert_eq!(state, "stopped");
    assert_eq!(
        lanes,
        [
            ("US-001".to_owned(), "landed".to_owned()),
            ("US-002".to_owned(), "stopped".to_owned())
        ],
        "the tasks not started have no lane"
    );

    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert!(!lane_started(&events, "US-001"), "landed once: {events:#?}");
    for id in ["US-002", "US-003", "US-004"] {
        landed_with_its_passes(dir, &events, id, &format!("{id}.txt"));
    }
    nothing_left_behind(dir);
}

#[test]
fn a_run_interrupted_after_its_lanes_landed_resumes_with_the_tasks_not_started() {
    let marks = tempfile::tempdir().unwrap();
    let p = repo(
        &held_agent(marks.path(), "none"),
        "ls US-*.txt >/dev/null 2>&1\n",
        &IDS[..3],
        &[],
    );
    let out = ctrl_c_while_two_lanes_run(&p, marks.path());
    assert_eq!(common::code(&out), 130, "{}", common::stderr(&out));
    let ended = p.events().pop().unwrap();
    assert_eq!(
        (ended["landed"].as_u64(), ended["remaining"].as_u64()),
        (Some(2), Some(1))
    );
    let (state, lanes) = status(&p);
    assert_eq!(state, "stopped", "left to --resume: {lanes:?}");

    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    landed_with_its_passes(p.path(), &p.events(), "US-003", "US-003.txt");
    nothing_left_behind(p.path());
}

#[test]
fn a_second_ctrl_c_during_the_landings_stops_at_once_and_resume_lands_them_without_redoing_them() {
    let marks = tempfile::tempdir().unwrap();
    let hold = marks.path().join("hold");
    let merging = marks.path().join("merging");
    std::fs::write(&hold, "").unwrap();
    // The merge queue's check (no RALPH_ITERATION: it is no iteration's) hangs while `hold` is
    // there.
    let check = format!(
        "ls US-*.txt >/dev/null 2>&1 || exit 1\n\
         if [ -z \"$RALPH_ITERATION\" ] && [ -e {hold} ]; then touch {merging}; sleep 71.3; fi\n",
        hold = hold.display(),
        merging = merging.display()
    );
    let agent = format!(
        "{READ_PROMPT}touch {m}/$story.started\n\
         while [ ! -e {m}/release ]; do sleep 0.01; done\n\
         echo ok > \"$story.txt\"\n",
        m = marks.path().display()
    );
    let p = repo(&agent, &check, &IDS[..2], &[]);
    let mut child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&marks.path().join("US-001.started"));
    wait_for_file(&marks.path().join("US-002.started"));
    common::send_signal(child.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(marks.path().join("release"), "").unwrap();
    wait_for_file(&merging);
    common::send_signal(child.id(), libc::SIGINT);
    // The queue's check sleeps 71 s: an exit well before means it was not waited for.
    let deadline = Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            common::kill_if_running(child.id());
            panic!("a second Ctrl+C did not stop the landing at once");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(130));
    assert!(!common::process_running("sleep 71.3"), "no check left");
    let events = p.events();
    assert!(
        events.iter().all(|e| e["type"] != "TASK_LANDED"),
        "{events:#?}"
    );
    assert_eq!(events.last().unwrap()["reason"], "interrupted");
    let dir = p.path();
    for id in IDS[..2].iter() {
        assert_eq!(passes(dir, "main", id), false, "{id}");
    }
    let (state, lanes) = status(&p);
    assert_eq!(state, "stopped");
    assert!(
        lanes.iter().all(|(_, state)| state == "queued"),
        "both passed and wait to land: {lanes:?}"
    );

    std::fs::remove_file(&hold).unwrap();
    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert!(
        events.iter().all(|e| e["type"] != "LANE_ITERATION_STARTED"),
        "their work was kept, not done again: {events:#?}"
    );
    for id in IDS[..2].iter() {
        landed_with_its_passes(dir, &events, id, &format!("{id}.txt"));
    }
    nothing_left_behind(dir);
}

#[test]
fn the_lanes_of_a_killed_run_show_as_stopped_not_running() {
    let marks = tempfile::tempdir().unwrap();
    let p = repo(
        &held_agent(marks.path(), "none"),
        "ls US-*.txt >/dev/null 2>&1\n",
        &IDS[..2],
        &[],
    );
    let mut child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&marks.path().join("US-001.started"));
    wait_for_file(&marks.path().join("US-002.started"));
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::write(marks.path().join("release"), "").unwrap();
    let (state, lanes) = status(&p);
    assert_eq!(state, "stopped");
    assert_eq!(lanes.len(), 2, "{lanes:?}");
    assert!(
        lanes.iter().all(|(_, state)| state == "stopped"),
        "{lanes:?}"
    );
}
