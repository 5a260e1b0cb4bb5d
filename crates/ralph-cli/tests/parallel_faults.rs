//! `ralph run --parallel N` against what a hostile tester does: a second ralph started in a
//! lane's worktree, a kill while a lane's worktree is half made, leftovers of a kill, a lane's
//! agent that rewrites its history or leaves daemons behind. Nothing is lost, nothing is left.

use crate::common;

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

/// Whether `pid` is a live process (a zombie waiting for its reaper is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        state != Some('Z')
    })
}

/// The pid `<marks>/<name>` holds, once written.
fn pid_in(marks: &Path, name: &str) -> i32 {
    let path = marks.join(name);
    wait_for_file(&path);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Ok(pid) = std::fs::read_to_string(&path).unwrap().trim().parse() {
            return pid;
        }
        assert!(std::time::Instant::now() < deadline, "{name} never written");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Kills what a failed test left running.
struct Cleanup(Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for &pid in &self.0 {
            common::kill_if_running(pid as u32);
        }
    }
}

/// Starts a daemon in a session of its own (`<marks>/<story>.daemon`) and one out of a double
/// fork (`<marks>/<story>.fork`), both running for a minute, then waits for their pids.
const DAEMONS: &str = "setsid sh -c \"echo \\$\\$ > $m/$story.daemon; exec sleep 60\" </dev/null >/dev/null 2>&1 &\n\
     (sh -c \"echo \\$\\$ > $m/$story.fork; exec sleep 60\" </dev/null >/dev/null 2>&1 &)\n\
     while [ ! -s $m/$story.daemon ] || [ ! -s $m/$story.fork ]; do sleep 0.01; done\n";

#[cfg(target_os = "linux")]
#[test]
fn daemons_a_lanes_agent_starts_end_with_its_lane_and_never_with_another() {
    let marks = tempfile::tempdir().unwrap();
    // US-002 runs on until US-001's lane is over and says whether US-001's daemon and its own
    // were still running then.
    let agent = format!(
        "{READ_PROMPT}m={m}\n{DAEMONS}\
         if [ \"$story\" = US-002 ]; then\n\
           while [ ! -s $m/US-001.daemon ]; do sleep 0.01; done\n\
           i=0; while kill -0 $(cat $m/US-001.daemon) 2>/dev/null && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done\n\
           kill -0 $(cat $m/US-001.daemon) 2>/dev/null && echo alive > $m/US-001.seen || echo gone > $m/US-001.seen\n\
           kill -0 $(cat $m/US-002.daemon) 2>/dev/null && echo alive > $m/US-002.seen || echo gone > $m/US-002.seen\n\
         fi\n\
         echo ok > \"$story.txt\"\n",
        m = marks.path().display()
    );
    let p = repo(&agent, CHECK, &["US-001", "US-002"], &[]);
    let out = p.run(&["run", "--parallel", "2"]);
    let pids: Vec<i32> = [
        "US-001.daemon",
        "US-001.fork",
        "US-002.daemon",
        "US-002.fork",
    ]
    .iter()
    .map(|name| pid_in(marks.path(), name))
    .collect();
    let _cleanup = Cleanup(pids.clone());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let seen = |name: &str| std::fs::read_to_string(marks.path().join(name)).unwrap();
    assert_eq!(
        seen("US-001.seen"),
        "gone\n",
        "US-001's daemon ended with its lane"
    );
    assert_eq!(
        seen("US-002.seen"),
        "alive\n",
        "not with another lane's end"
    );
    for pid in pids {
        assert!(!alive(pid), "{pid} outlived the run");
    }
    nothing_left_behind(p.path());
}

#[cfg(target_os = "linux")]
#[test]
fn daemons_of_an_ended_lane_and_a_running_lanes_agent_end_when_ralph_is_killed() {
    let marks = tempfile::tempdir().unwrap();
    // US-001 leaves daemons and passes; US-002's agent then runs until ralph is killed.
    let agent = format!(
        "{READ_PROMPT}m={m}\n\
         if [ \"$story\" = US-002 ]; then echo $$ > $m/agent; exec sleep 60; fi\n\
         {DAEMONS}echo ok > \"$story.txt\"\n",
        m = marks.path().display()
    );
    let p = repo(&agent, CHECK, &["US-001", "US-002"], &[]);
    let mut ralph = p.spawn(&["run", "--parallel", "1"]);
    let pids: Vec<i32> = ["US-001.daemon", "US-001.fork", "agent"]
        .iter()
        .map(|name| pid_in(marks.path(), name))
        .collect();
    let _cleanup = Cleanup(pids.clone());
    common::send_signal(ralph.id(), libc::SIGKILL);
    ralph.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while pids.iter().any(|&pid| alive(pid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for pid in pids {
        assert!(!alive(pid), "{pid} outlived ralph");
    }
}

#[test]
fn a_depends_on_of_one_id_not_in_a_list_is_waited_for() {
    let agent = format!("{READ_PROMPT}sleep 0.3\necho ok > \"$story.txt\"\n");
    let p = repo(&agent, CHECK, &["US-001", "US-002"], &[]);
    let dir = p.path();
    let prd = std::fs::read_to_string(dir.join("prd.json")).unwrap();
    let mut prd: serde_json::Value = serde_json::from_str(&prd).unwrap();
    prd["userStories"][1]["dependsOn"] = "US-001".into();
    std::fs::write(dir.join("prd.json"), prd.to_string()).unwrap();
    common::commit_all(dir, "US-002 depends on US-001");

    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = p.events();
    let at = |kind: &str, id: &str| {
        events
            .iter()
            .position(|e| e["type"] == kind && e["task_id"] == id)
            .unwrap_or_else(|| panic!("no {kind} of {id}: {events:#?}"))
    };
    assert!(
        at("TASK_LANDED", "US-001") < at("LANE_STARTED", "US-002"),
        "US-002 started after US-001 landed: {events:#?}"
    );
    nothing_left_behind(dir);
}

#[test]
fn commits_a_lanes_agent_drops_by_rewriting_its_history_are_saved_under_a_ref() {
    let marks = tempfile::tempdir().unwrap();
    // First iteration: a commit of its own, and no work, so the check fails. Second: that
    // commit thrown away with `git reset --hard`, and the work done.
    let agent = format!(
        "{READ_PROMPT}m={m}\n\
         if [ ! -e $m/drafted ]; then\n\
           git rev-parse HEAD > $m/drafted\n\
           echo draft > draft.txt; git add draft.txt; git -c user.name=a -c user.email=a@b commit -qm draft\n\
         else\n\
           git reset -q --hard \"$(cat $m/drafted)\"\n\
           echo ok > \"$story.txt\"\n\
         fi\n",
        m = marks.path().display()
    );
    let p = repo(&agent, CHECK, &["US-001"], &[]);
    let dir = p.path();
    let out = p.run(&["run", "--parallel", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(passes(dir, "HEAD", "US-001"), true);
    nothing_left_behind(dir);
    let saved = git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/ralph/attempts/US-001/",
        ],
    );
    assert!(
        saved
            .lines()
            .any(|r| show(dir, r, "draft.txt").is_some_and(|d| d == b"draft\n")),
        "the dropped commit is kept: {saved:?}"
    );
    let warnings = p.events_of("WARNING");
    assert!(
        warnings.iter().any(|w| w["message"]
            .as_str()
            .is_some_and(|m| m.contains("rewrote its branch's history"))),
        "{warnings:#?}"
    );
}
