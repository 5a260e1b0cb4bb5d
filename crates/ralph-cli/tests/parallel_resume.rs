//! One run, one name: a stopped parallel run is taken up by a plain `ralph run --resume` as it
//! ran, every message names the command that goes on with it, and `ralph run --abandon` gives
//! it up with every lane's work saved under `refs/ralph/attempts/`.

use crate::common;

use std::path::Path;

use common::{Project, git, show};
use serde_json::Value;

/// A lane's agent: its task is its worktree's name; its first iteration sleeps long enough
/// to be stopped in (a marker under `slept` says it did). US-002's agent commits its file on
/// its branch; every other leaves its file uncommitted. The check always fails: no task lands.
fn agent(slept: &Path) -> String {
    format!(
        "story=$(basename \"$(pwd -P)\")\n\
         [ -e {slept}/$story ] || {{ touch {slept}/$story; sleep 1; }}\n\
         echo \"work of $story\" > \"$story.txt\"\n\
         if [ \"$story\" = US-002 ]; then git add US-002.txt; git commit -qm 'agent: US-002'; fi\n",
        slept = slept.display()
    )
}

/// A two-task run, `--parallel 2`, stopped by a first Ctrl+C while both lanes run their first
/// iteration; returns its run id and what it printed.
fn stopped_run(p: &Project) -> (String, String) {
    let child = p.spawn(&["run", "--parallel", "2"]);
    p.wait_for("LANE_ITERATION_STARTED", 2);
    common::send_signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(common::code(&out), 130, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(
        events.last().unwrap()["reason"],
        "interrupted",
        "{events:#?}"
    );
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    (run_id, common::stdout(&out))
}

/// The project and the folder its agents mark their first iteration in.
fn two_tasks() -> (Project, tempfile::TempDir) {
    let slept = tempfile::tempdir().unwrap();
    let p = common::story_repo(&agent(slept.path()), &["one", "two"]);
    (p, slept)
}

fn parallel_started(p: &Project) -> Value {
    let started = p.events_of("PARALLEL_STARTED");
    assert_eq!(started.len(), 1, "{:#?}", p.events());
    started.into_iter().next().unwrap()
}

#[test]
fn a_plain_resume_goes_on_with_a_stopped_parallel_run_as_many_at_a_time_as_it_ran() {
    let (p, _slept) = two_tasks();
    let (run_id, printed) = stopped_run(&p);
    assert!(
        printed.contains("go on where it stopped: ralph run --parallel 2 --resume\n"),
        "the last lines say how to go on: {printed}"
    );
    assert!(printed.contains(": ralph run --abandon\n"), "{printed}");

    let out = p.run(&["run", "--resume", "-n", "1"]);
    assert_ne!(common::code(&out), 2, "{}", common::stderr(&out));
    let started = parallel_started(&p);
    assert_eq!(started["resumed"], true);
    assert_eq!(started["parallel"], 2);
    assert_eq!(started["run_id"], run_id.as_str());
    assert_eq!(p.events_of("LANE_STARTED").len(), 2, "{:#?}", p.events());
}

#[test]
fn a_resume_given_parallel_m_goes_on_m_at_a_time() {
    let (p, _slept) = two_tasks();
    let (run_id, _) = stopped_run(&p);
    let out = p.run(&["run", "--parallel", "1", "--resume", "-n", "1"]);
    assert_ne!(common::code(&out), 2, "{}", common::stderr(&out));
    let started = parallel_started(&p);
    assert_eq!(
        (started["resumed"].as_bool(), started["parallel"].as_u64()),
        (Some(true), Some(1))
    );
    assert_eq!(started["run_id"], run_id.as_str());
}

#[test]
fn a_resume_naming_the_parallel_run_goes_on_with_it() {
    let (p, _slept) = two_tasks();
    let (run_id, _) = stopped_run(&p);
    let out = p.run(&["run", "--resume", &run_id, "-n", "1"]);
    assert_ne!(common::code(&out), 2, "{}", common::stderr(&out));
    let started = parallel_started(&p);
    assert_eq!(
        (started["resumed"].as_bool(), started["parallel"].as_u64()),
        (Some(true), Some(2))
    );
}

#[test]
fn a_new_run_beside_a_stopped_one_is_refused_naming_the_commands_that_go_on() {
    let (p, _slept) = two_tasks();
    let (run_id, _) = stopped_run(&p);
    let out = p.run(&["run", "--parallel", "3"]);
    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    let stderr = common::stderr(&out);
    assert!(stderr.contains(&run_id), "{stderr}");
    assert!(
        stderr.contains("`ralph run --parallel 2 --resume`"),
        "the real command, with the run's own N: {stderr}"
    );
    assert!(stderr.contains("`ralph run --abandon`"), "{stderr}");
    assert!(!stderr.contains("--parallel N"), "{stderr}");
}

/// The refs saved under `refs/ralph/attempts/<id>/`.
fn attempts(dir: &Path, id: &str) -> Vec<String> {
    git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/ralph/attempts/{id}/"),
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

#[test]
fn abandon_saves_every_lanes_work_under_attempts_removes_the_run_and_lets_a_new_one_start() {
    let (p, _slept) = two_tasks();
    let (run_id, _) = stopped_run(&p);
    let dir = p.path();
    assert!(dir.join(".ralph/worktrees/US-001/US-001.txt").exists());
    assert!(show(dir, "ralph/US-002", "US-002.txt").is_some());

    let out = p.run(&["run", "--abandon"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let said = common::stdout(&out);
    assert!(said.contains(&run_id), "{said}");
    for id in ["US-001", "US-002"] {
        let saved = attempts(dir, id);
        assert_eq!(saved.len(), 1, "{id}'s work saved once: {saved:?}");
        assert_eq!(
            show(dir, &saved[0], &format!("{id}.txt")).as_deref(),
            Some(format!("work of {id}\n").as_bytes()),
            "{id}'s work in {}",
            saved[0]
        );
        assert!(
            said.contains(&format!("{id}: its work saved under {}", saved[0])),
            "says what it saved where: {said}"
        );
    }
    // Nothing of the run is left but the saved refs.
    let worktrees = git(dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert_eq!(git(dir, &["branch", "--list", "ralph/*"]), "");
    assert!(!dir.join(".ralph/parallel/session.json").exists());
    assert_eq!(
        git(dir, &["status", "--porcelain"]),
        "",
        "the main worktree untouched"
    );

    let out = p.run(&["run", "--parallel", "2", "-n", "1"]);
    assert_ne!(common::code(&out), 2, "{}", common::stderr(&out));
    let started = parallel_started(&p);
    assert_eq!(started["resumed"], false);
    assert_ne!(started["run_id"], run_id.as_str());
}

#[test]
fn abandon_with_no_stopped_parallel_run_says_there_is_none() {
    let (p, _slept) = two_tasks();
    let out = p.run(&["run", "--abandon"]);
    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("no stopped parallel run to give up"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn abandon_is_refused_while_the_run_still_runs() {
    let (p, _slept) = two_tasks();
    let child = p.spawn(&["run", "--parallel", "2"]);
    p.wait_for("LANE_ITERATION_STARTED", 1);
    let out = p.run(&["run", "--abandon"]);
    common::send_signal(child.id(), libc::SIGTERM);
    let run = child.wait_with_output().unwrap();
    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("already working"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(common::code(&run), 143, "{}", common::stderr(&run));
    assert!(
        p.path().join(".ralph/parallel/session.json").exists(),
        "the running run kept its session"
    );
}

#[test]
fn abandon_after_a_kill_mid_merge_undoes_the_merge_and_saves_the_branch() {
    let marks = tempfile::tempdir().unwrap();
    let merging = marks.path().join("merging");
    let p = common::story_repo(
        "story=$(basename \"$(pwd -P)\")\necho ok > \"$story.txt\"\n",
        &["one"],
    );
    let dir = p.path();
    // The lane's check passes; the queue's (no RALPH_ITERATION: it is no iteration's) hangs.
    std::fs::write(
        dir.join("check.sh"),
        format!(
            "[ -e US-001.txt ] || exit 1\n\
             if [ -z \"$RALPH_ITERATION\" ]; then touch {merging}; sleep 30.71; fi\n",
            merging = merging.display()
        ),
    )
    .unwrap();
    let ralph_md = std::fs::read_to_string(dir.join("RALPH.md")).unwrap();
    let ralph_md = ralph_md.replace("  - 'echo \"error: it fails\"; exit 1'", "  - sh check.sh");
    std::fs::write(dir.join("RALPH.md"), ralph_md).unwrap();
    common::commit_all(dir, "a check that hangs on the merged result");
    let mut child = p.spawn(&["run", "--parallel", "1"]);
    while !merging.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let journal = dir
        .join(git(dir, &["rev-parse", "--git-common-dir"]).trim())
        .join("ralph-merge-journal.json");
    assert!(journal.exists(), "killed with a merge in flight");

    let out = p.run(&["run", "--abandon"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let saved = attempts(dir, "US-001");
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(
        show(dir, &saved[0], "US-001.txt").as_deref(),
        Some(&b"ok\n"[..])
    );
    assert!(show(dir, "main", "US-001.txt").is_none(), "nothing landed");
    assert!(!journal.exists());
    assert_eq!(git(dir, &["branch", "--list", "ralph/*"]), "");
    assert!(!dir.join(".ralph/parallel/session.json").exists());
    assert!(
        !common::process_running("sleep 30.71"),
        "the killed run took its check along"
    );
}
