//! `ralph status [RUN_ID] [-C DIR] [--json]`: a run of the folder (its last by default), while
//! it runs (from its session file and the lock file's holder, never the lock) and after it
//! ended or was killed.

use crate::common;

use std::time::{Duration, Instant};

use common::{Project, code, kill_if_running, send_signal, stdout, wait_for_pid};
use serde_json::Value;

/// Iteration 1 works until the file `go` exists, then reports idle; iteration 2 hangs.
const AGENT: &str = r#"cat >/dev/null
echo $$ > agent.pid
while [ ! -e go ]; do sleep 0.02; done
if [ "$RALPH_ITERATION" = 1 ]; then echo '<!-- ralph:state idle -->'; exit 0; fi
exec sleep 60
"#;

fn project() -> Project {
    let p = Project::new(
        "agent: sh agent.sh\nidle: {delay: 30s, max_delay: 30s}",
        "work\n",
    );
    std::fs::write(p.path().join("agent.sh"), AGENT).unwrap();
    p
}

fn status(p: &Project) -> Value {
    let out = p.run(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("one JSON object")
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn status_json_follows_a_run_while_it_works_waits_and_after_it_ends() {
    let p = project();
    let mut child = p.spawn(&["run"]);
    until("the agent starts", || p.path().join("agent.pid").exists());
    // The session file is written off the loop's thread: it may lag a moment.
    until("the session names iteration 1", || {
        status(&p)["iterations"] == 1
    });
    let working = status(&p);
    assert_eq!(working["running"], true);
    assert_eq!(working["pid"], child.id());
    assert_eq!(working["state"], "working");
    assert_eq!(working["iterations"], 1);
    assert_eq!(working["reason"], Value::Null);
    assert_eq!(working["exit_code"], Value::Null);
    let run_id = working["run_id"].as_str().unwrap().to_owned();
    let log_dir = working["log_dir"].as_str().unwrap().to_owned();
    assert!(
        log_dir.ends_with(&format!(".ralph/runs/{run_id}")),
        "{log_dir}"
    );
    assert!(
        std::path::Path::new(&log_dir)
            .join("session.json")
            .is_file()
    );

    std::fs::write(p.path().join("go"), "").unwrap();
    until("the idle wait", || status(&p)["state"] == "idle");
    let idle = status(&p);
    assert_eq!(idle["running"], true);
    assert_eq!(idle["state"], "idle");
    assert_eq!(idle["consecutive_idle"], 1);
    assert!(idle["waiting_until"].is_string(), "{idle}");
    assert_eq!(idle["cost_usd"], Value::Null);

    send_signal(child.id(), libc::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    let ended = status(&p);
    assert_eq!(ended["run_id"], run_id.as_str());
    assert_eq!(ended["running"], false);
    assert_eq!(ended["state"], "ended");
    assert_eq!(ended["reason"], "interrupted");
    assert_eq!(ended["exit_code"], 143);
    assert_eq!(ended["iterations"], 1);
    assert_eq!(ended["resumable"], true);
    assert_eq!(ended["log_dir"], log_dir.as_str());

    let text = stdout(&p.run(&["status"]));
    assert!(text.contains(&format!("run {run_id}")), "{text}");
    assert!(text.contains("ended: interrupted, exit 143"), "{text}");
    assert!(text.contains("ralph run --resume"), "{text}");
}

#[test]
fn status_after_kill_9_says_the_run_stopped_without_a_word() {
    let p = project();
    let mut child = p.spawn(&["run"]);
    let agent = wait_for_pid(&p.path().join("agent.pid"));
    until("the session names iteration 1", || {
        status(&p)["iterations"] == 1
    });
    send_signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    kill_if_running(agent);

    let stopped = status(&p);
    assert_eq!(stopped["running"], false);
    assert_eq!(stopped["state"], "stopped");
    assert_eq!(stopped["reason"], Value::Null);
    assert_eq!(stopped["iterations"], 1);
    assert_eq!(stopped["resumable"], true);
}

#[test]
fn status_where_no_run_started_says_so() {
    let p = Project::new("agent: cat", "work\n");
    let out = p.run(&["status"]);
    assert_eq!(code(&out), 2);
    assert!(
        common::stderr(&out).contains("no ralph run has started in this folder"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn a_lock_file_naming_a_live_pid_without_the_lock_is_no_running_run() {
    // What a reboot leaves: the killed run's name in .ralph/lock, its pid taken by another
    // process (here, this test), and no one holding the lock.
    let p = Project::new(&format!("agent: {} --out hi", common::fake_agent()), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    let run_id = status(&p)["run_id"].as_str().unwrap().to_owned();
    let holder = serde_json::json!({
        "pid": std::process::id(),
        "started": "2026-11-23T08:00:00Z",
        "run_id": run_id,
        "folder": p.path(),
    });
    std::fs::write(p.path().join(".ralph/lock"), holder.to_string()).unwrap();
    let after = status(&p);
    assert_eq!(after["running"], false);
    assert_eq!(after["state"], "ended");
}

#[test]
fn status_finds_a_run_as_soon_as_its_header_is_printed() {
    let p = project();
    let mut child = p.spawn(&["run"]);
    let mut header = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut header,
    )
    .unwrap();
    assert!(header.contains("ralph"), "{header}");
    let out = p.run(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let started: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(started["running"], true);
    assert_eq!(started["pid"], child.id());
    // SIGTERM: ralph stops its agent and ends.
    send_signal(child.id(), libc::SIGTERM);
    child.wait().unwrap();
}

#[test]
fn a_story_run_that_ended_names_no_story_in_progress() {
    // Each story is done at once.
    let p = common::story_repo(
        "cat >/dev/null\necho '<!-- ralph:state done -->'\n",
        &["a", "b"],
    );
    let ralph_md =
        "---\nagent: sh agent.sh\nescalation:\n  prd: prd.json\n---\nSTORY={{ story.id }}\n";
    std::fs::write(p.path().join("RALPH.md"), ralph_md).unwrap();
    common::git(p.path(), &["commit", "-qam", "no checks"]);
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_done");
    let ended = status(&p);
    assert_eq!(ended["state"], "ended");
    assert_eq!(ended["story"], Value::Null, "{ended}");
    assert_eq!(ended["attempt"], Value::Null, "{ended}");
    assert_eq!(ended["stories"]["passed"], 2);
    let text = stdout(&p.run(&["status"]));
    assert!(!text.contains("story:"), "{text}");
    assert!(text.contains("stories: 2 passed"), "{text}");
}

#[test]
fn status_shows_the_run_it_is_given_by_id_from_the_folder_it_is_given() {
    let p = Project::new(&format!("agent: {} --out hi", common::fake_agent()), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    let first = status(&p)["run_id"].as_str().unwrap().to_owned();
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    assert_ne!(
        status(&p)["run_id"],
        first.as_str(),
        "the last run by default"
    );

    // By id, or a unique prefix of it: the first run, with its own ending.
    let prefix = &first[..first.len() - 2];
    for id in [first.as_str(), prefix] {
        let out = p.run(&["status", id, "--json"]);
        assert_eq!(code(&out), 0, "{}", common::stderr(&out));
        let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(shown["run_id"], first.as_str());
        assert_eq!(shown["iterations"], 1);
    }
    // From another folder: -C.
    let parent = p.path().parent().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(parent)
        .args(["status", "--json", "-C"])
        .arg(p.path())
        .arg(&first)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["run_id"], first.as_str());

    let out = p.run(&["status", "no-such-run"]);
    assert_eq!(code(&out), 2);
    // A folder where a run id goes: said how to name it.
    std::fs::create_dir(p.path().join("sub")).unwrap();
    let out = p.run(&["status", "sub"]);
    assert_eq!(code(&out), 2);
    assert!(
        common::stderr(&out).contains("ralph status -C sub"),
        "{}",
        common::stderr(&out)
    );
}

/// A run a program drives through the library, holding its folder with
/// `Engine::claim_folder`, is the folder's running run for `ralph status` and `ralph runs`, and
/// `ralph run` there is refused, as beside a `ralph run`.
#[test]
fn a_library_run_that_claims_its_folder_is_running_for_status_and_runs() {
    use ralph_engine::{Engine, EngineOptions};
    let p = Project::new("agent: sleep 60", "work\n");
    let text = std::fs::read_to_string(p.path().join("RALPH.md")).unwrap();
    let parsed = ralph_frontmatter::parse("RALPH.md", &text).unwrap();
    let mut options = EngineOptions::new(p.path().join("RALPH.md"), parsed.file);
    options.cwd = p.path().to_path_buf();
    // Other tests of this process start processes (git) meanwhile: not the run's to end.
    options.subreaper = false;
    let log_dir = p.path().join(".ralph/runs").join(&options.run_id);
    options.log_dir = Some(log_dir.clone());
    let run_id = options.run_id.clone();
    let mut engine = Engine::new(options);
    engine.claim_folder().expect("the folder is free");
    let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
    let run = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let handle = engine.spawn();
            let _ = tokio::task::spawn_blocking(move || cancelled.recv()).await;
            handle.cancel();
            handle.wait().await.unwrap()
        })
    });
    until("the library run's agent starts", || {
        std::fs::read_to_string(log_dir.join("events.jsonl"))
            .is_ok_and(|events| events.contains("ITERATION_STARTED"))
    });

    let now = status(&p);
    assert_eq!(now["run_id"], run_id.as_str(), "{now}");
    assert_eq!(now["running"], true, "{now}");
    let out = p.run(&["runs", "--json"]);
    let runs: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(runs[0]["status"], "running", "{runs}");
    let second = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&second), 2, "{}", common::stderr(&second));
    assert!(common::stderr(&second).contains(&run_id));

    cancel.send(()).unwrap();
    let outcome = run.join().unwrap();
    assert_eq!(outcome.reason.as_str(), "cancelled");
    assert_eq!(status(&p)["running"], false);
}
