//! `ralph run --parallel N` against what a hostile tester does: a second ralph started in a
//! lane's worktree, a kill while a lane's worktree is half made, leftovers of a kill, a lane's
//! agent that rewrites its history or leaves daemons behind. Nothing is lost, nothing is left.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::parallel::{READ_PROMPT, nothing_left_behind, passes, repo, wait_for_file};
use common::{When, code, git, killing_git, show, stderr};

/// An agent that says it started (`<marks>/<story>.started`), waits for `<marks>/release`
/// (10 s at most), then does its story.
fn held_agent(marks: &Path) -> String {
    format!(
        "{READ_PROMPT}touch {m}/$story.started\n\
         i=0; while [ ! -e {m}/release ] && [ $i -lt 1000 ]; do i=$((i+1)); sleep 0.01; done\n\
         echo ok > \"$story.txt\"\n",
        m = marks.display()
    )
}

const CHECK: &str = "ls US-*.txt >/dev/null 2>&1\n";

#[test]
fn a_ralph_run_started_in_a_running_lanes_worktree_is_refused_naming_the_parallel_run() {
    let marks = tempfile::tempdir().unwrap();
    let p = repo(&held_agent(marks.path()), CHECK, &["US-001"], &[]);
    let dir = p.path();
    let parallel = p.spawn(&["run", "--parallel", "1"]);
    wait_for_file(&marks.path().join("US-001.started"));
    let parallel_id = p.events_of("PARALLEL_STARTED")[0]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let worktree = dir.join(".ralph/worktrees/US-001");
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(&worktree)
        .args(["run", "--max-iterations", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    std::fs::write(marks.path().join("release"), "").unwrap();
    let out = parallel.wait_with_output().unwrap();

    assert_eq!(code(&second), 2, "{}", stderr(&second));
    assert!(
        stderr(&second).contains(&format!("a lane of parallel run {parallel_id}")),
        "{}",
        stderr(&second)
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(passes(dir, "HEAD", "US-001"), true);
    nothing_left_behind(dir);
}

#[test]
fn a_lane_killed_before_its_worktree_was_checked_out_is_made_again_and_its_task_runs() {
    // Right after `git worktree add --no-checkout`, and as its checkout starts.
    for (word, when) in [("worktree", When::After), ("reset", When::Before)] {
        let case = format!("{word} {when:?}");
        let agent = format!("{READ_PROMPT}echo ok > \"$story.txt\"\n");
        let p = repo(&agent, CHECK, &["US-001"], &[]);
        let dir = p.path();
        let bin = tempfile::tempdir().unwrap();
        let path_env = killing_git(bin.path(), word, 1, when);
        std::fs::write(bin.path().join("armed"), "").unwrap();
        let out = p
            .ralph(&["run", "--parallel", "1"])
            .env("PATH", &path_env)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            bin.path().join("killed").exists() && out.status.code().is_none(),
            "{case}: killed making the worktree: {}",
            stderr(&out)
        );
        assert!(dir.join(".ralph/worktrees/US-001").exists(), "{case}");

        let out = p.run(&["run", "--parallel", "1", "--resume"]);
        assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
        assert_eq!(passes(dir, "HEAD", "US-001"), true, "{case}");
        assert!(
            show(dir, "HEAD", "US-001.txt").is_some(),
            "{case}: its agent ran"
        );
        let history = git(dir, &["log", "--format=%s", "main"]);
        assert!(!history.contains("blocked"), "{case}: {history}");
        nothing_left_behind(dir);
    }
}

#[test]
fn temporary_indexes_a_killed_run_left_are_removed_at_the_next_start_and_a_live_runs_kept() {
    let agent = format!("{READ_PROMPT}echo ok > \"$story.txt\"\n");
    let p = repo(&agent, CHECK, &["US-001"], &[]);
    let dir = p.path();
    // A process that is gone, as a killed ralph is; and one that runs (this test).
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let stale = dir.join(format!(".git/ralph-parallel-index-{}-0", gone.id()));
    let stale_lock = dir.join(format!(".git/ralph-parallel-index-{}-1.lock", gone.id()));
    let live = dir.join(format!(
        ".git/ralph-parallel-index-{}-0",
        std::process::id()
    ));
    for file in [&stale, &stale_lock, &live] {
        std::fs::write(file, "index").unwrap();
    }

    let out = p.run(&["run", "--parallel", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stale.exists() && !stale_lock.exists());
    assert!(live.exists(), "a running process's index is its own");
    nothing_left_behind(dir);
}
