//! A parallel run's id works everywhere a run id does: `ralph runs` lists it as one row with
//! its lanes' loops under it (running while it runs, never `killed`), `ralph logs <id>` shows
//! every lane and `-f` follows them all, `ralph status <id>` and `ralph report <id>` find it.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Project, git_repo};
use serde_json::Value;

/// A checklist of `tasks` in a git repository; each lane's agent says `working on <task>`,
/// waits while `hold` exists, then writes its task's file, which the check looks for.
fn checklist_repo(tasks: &[&str], hold: &Path) -> Project {
    let agent = format!(
        "task=$(grep -o 'TASK=[a-z0-9-]*' | cut -d= -f2)\n\
         echo \"working on $task\"\n\
         while [ -e {hold} ]; do sleep 0.02; done  # parallel-run-id-ok\n\
         echo done > \"$task.txt\"\necho \"finished $task\"\n",
        hold = hold.display()
    );
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - ls *.txt\n\
         tasks: {markdown: TODO.md}\n\
         failure: {delay: 10ms, max_delay: 10ms}\n\
         convergence: {max_attempts: 2, backoff: 10ms, max_backoff: 10ms}",
        "TASK={{ task.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    let list: String = tasks.iter().map(|t| format!("- [ ] {t}\n")).collect();
    std::fs::write(dir.join("TODO.md"), list).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    p
}

/// The parallel run's id, from its first event.
fn parallel_id(p: &Project) -> String {
    p.wait_for("PARALLEL_STARTED", 1);
    p.events_of("PARALLEL_STARTED")[0]["run_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `ralph ARGS` in the project, to its end: its stdout; it must exit 0.
fn ralph_ok(p: &Project, args: &[&str]) -> String {
    let out = p.run(args);
    assert_eq!(common::code(&out), 0, "{args:?}: {}", common::stderr(&out));
    common::stdout(&out)
}

#[test]
fn a_parallel_run_is_one_row_of_ralph_runs_with_its_lanes_running_under_it() {
    let hold = tempfile::NamedTempFile::new().unwrap();
    let p = checklist_repo(&["alpha", "beta"], hold.path());
    let run = p.spawn(&["run", "--parallel", "2"]);
    let id = parallel_id(&p);
    // Both lanes are in their first iteration, held.
    let started = Instant::now();
    while p.events_of("LANE_ITERATION_STARTED").len().lt(&2) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:#?}",
            p.events()
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    let running: Vec<Value> = serde_json::from_str(&ralph_ok(&p, &["runs", "--json"])).unwrap();
    let row = running
        .iter()
        .find(|r| r["run_id"] == id.as_str())
        .expect("the parallel run is listed");
    assert_eq!(row["kind"], "parallel");
    assert_eq!(row["status"], "running");
    assert_eq!(row["lanes"].as_array().unwrap().len(), 2, "{row:#}");
    let lanes: Vec<&Value> = running
        .iter()
        .filter(|r| r["parallel_run_id"] == id.as_str())
        .collect();
    assert_eq!(lanes.len(), 2, "{running:#?}");
    for lane in &lanes {
        assert_eq!(
            lane["status"], "running",
            "a running lane is not killed: {lane:#}"
        );
    }

    std::fs::remove_file(hold.path()).unwrap();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));

    let table = ralph_ok(&p, &["runs"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].contains("TASKS") && !lines[0].contains("STORIES"),
        "{table}"
    );
    assert!(
        lines[1].starts_with(&format!("{id} (parallel 2)")),
        "{table}"
    );
    assert!(lines[1].contains("2/2 landed"), "{table}");
    // Its two lanes' loops are under it, and nowhere else.
    assert_eq!(lines.len(), 4, "{table}");
    for lane in &lines[2..] {
        assert!(lane.starts_with("  └ "), "{table}");
        assert!(lane.contains("alpha") || lane.contains("beta"), "{table}");
    }
}

#[test]
fn logs_of_a_parallel_run_show_and_follow_every_lane() {
    let hold = tempfile::NamedTempFile::new().unwrap();
    let p = checklist_repo(&["alpha", "beta"], hold.path());
    let run = p.spawn(&["run", "--parallel", "2"]);
    let id = parallel_id(&p);
    while p.events_of("LANE_STARTED").len() < 2 {
        std::thread::sleep(Duration::from_millis(10));
    }
    // `-f` by the parallel run's id, started while both lanes are held.
    let follow = p
        .ralph(&["logs", &id, "-f"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_file(hold.path()).unwrap();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    // It ends by itself once the run has ended, with what each lane wrote last.
    let followed = follow.wait_with_output().unwrap();
    assert_eq!(followed.status.code(), Some(0));
    let followed = String::from_utf8_lossy(&followed.stdout).into_owned();
    for task in ["alpha", "beta"] {
        let line = |text: &str| {
            followed
                .lines()
                .any(|l| l.starts_with(&format!("[{task}")) && l.contains(text))
        };
        assert!(line(&format!("working on {task}")), "{followed}");
        assert!(line(&format!("finished {task}")), "{followed}");
    }

    let printed = ralph_ok(&p, &["logs", &id]);
    for task in ["alpha", "beta"] {
        assert!(printed.contains(&format!("##### task {task}")), "{printed}");
        assert!(printed.contains(&format!("finished {task}")), "{printed}");
    }

    // status and report take the id too, or its start.
    let status = ralph_ok(&p, &["status", &id[..12], "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["run_id"], id.as_str());
    assert_eq!(status["state"], "ended");
    let report = p.path().join("report.html");
    ralph_ok(&p, &["report", &id, "-o", report.to_str().unwrap()]);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("alpha") && html.contains("beta"));
    // Each lane is labelled by its number and title, with its last checks and its logs.
    assert!(
        html.contains(">1. alpha<title>") && html.contains(">2. beta<title>"),
        "{html}"
    );
    assert_eq!(
        html.matches("<span class=\"pass\">✓</span> <code>ls *.txt</code>")
            .count(),
        2,
        "{html}"
    );
    let lanes = p.path().canonicalize().unwrap().join(".ralph/runs");
    assert!(
        html.contains(&format!("<a href=\"file://{}/", lanes.display())),
        "{html}"
    );
}
