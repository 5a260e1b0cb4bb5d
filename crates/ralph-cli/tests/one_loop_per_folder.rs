//! One loop per folder, and one escalating loop per git repository: a second `ralph run` is
//! refused (exit 2) naming the first, and a lock never outlives the run that held it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{code, send_signal, stderr};

/// A temporary folder tree: `events/` outside the repository, `repo/` a git repository whose
/// subfolders hold RALPH.md files.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let tree = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(tree.repo()).unwrap();
        std::fs::create_dir_all(tree.dir.path().join("events")).unwrap();
        tree
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// Writes `repo/<folder>/RALPH.md` with `frontmatter`.
    fn ralph_md(&self, folder: &str, frontmatter: &str) {
        let dir = self.repo().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("RALPH.md"),
            format!("---\n{frontmatter}\n---\nWork.\n"),
        )
        .unwrap();
    }

    fn events(&self, name: &str) -> PathBuf {
        self.dir.path().join("events").join(format!("{name}.jsonl"))
    }

    /// `ralph run ARGS` in `repo/<folder>`, events to `events/<folder>.jsonl`.
    fn ralph(&self, folder: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ralph"));
        cmd.current_dir(self.repo().join(folder))
            .arg("run")
            .arg("--events")
            .arg(self.events(folder))
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, folder: &str, args: &[&str]) -> Output {
        self.ralph(folder, args).output().unwrap()
    }

    /// Starts a run in `folder` and waits until its agent runs.
    fn start(&self, folder: &str) -> Child {
        let child = self
            .ralph(folder, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_agent(&self.events(folder));
        child
    }
}

fn wait_for_agent(events: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(events).is_ok_and(|t| t.contains("\"ITERATION_STARTED\"")) {
        assert!(Instant::now() < deadline, "the agent never started");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An agent that works for `secs` seconds, once.
fn slow(secs: f64) -> String {
    format!("agent: sleep {secs}\nmax_iterations: 1")
}

fn assert_refused(out: &Output, first: &Child, what: &str) {
    let err = stderr(out);
    assert_eq!(code(out), 2, "{err}");
    assert!(err.contains(what), "names {what:?}: {err}");
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    assert!(err.contains("started 20"), "names the start time: {err}");
}

#[test]
fn a_second_run_in_the_same_folder_is_refused_naming_the_first() {
    let tree = Tree::new();
    tree.ralph_md("a", &slow(1.5));
    let mut first = tree.start("a");

    let out = tree.run("a", &["--events", "/dev/null"]);
    assert_refused(&out, &first, "this folder");
    assert!(
        !std::fs::read_to_string(tree.events("a"))
            .unwrap()
            .contains("RUN_ENDED"),
        "the first run goes on"
    );

    assert!(first.wait().unwrap().success(), "the first run ends well");
    let again = tree.run("a", &[]);
    assert_eq!(
        code(&again),
        0,
        "the lock went with the run: {}",
        stderr(&again)
    );
}

#[test]
fn a_run_killed_with_sigkill_leaves_no_lock_behind() {
    let tree = Tree::new();
    tree.ralph_md("a", &slow(0.3));
    let mut first = tree.start("a");
    send_signal(first.id(), libc::SIGKILL);
    first.wait().unwrap();

    // The agent, still running, must not hold the lock: ralph's lock file is close-on-exec.
    let out = tree.run("a", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn dry_run_and_check_take_no_lock() {
    let tree = Tree::new();
    tree.ralph_md("a", &slow(1.0));
    let mut first = tree.start("a");

    let dry = tree.run("a", &["--dry-run"]);
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    let check = Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(tree.repo().join("a"))
        .arg("check")
        .output()
        .unwrap();
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    assert!(first.wait().unwrap().success());
}

#[test]
fn a_story_run_holds_the_whole_repository() {
    let tree = Tree::new();
    tree.ralph_md(
        "stories",
        &format!("{}\nescalation:\n  prd: prd.json", slow(1.5)),
    );
    std::fs::write(
        tree.repo().join("stories/prd.json"),
        r#"{"userStories": [{"id": "US-001", "title": "One", "priority": 1, "passes": false}]}"#,
    )
    .unwrap();
    tree.ralph_md(
        "other-stories",
        &format!("{}\nescalation:\n  prd: prd.json", slow(0.1)),
    );
    std::fs::copy(
        tree.repo().join("stories/prd.json"),
        tree.repo().join("other-stories/prd.json"),
    )
    .unwrap();
    tree.ralph_md("plain", &slow(0.1));
    common::git_repo(&tree.repo());

    let mut first = tree.start("stories");
    for folder in ["other-stories", "plain"] {
        let out = tree.run(folder, &[]);
        assert_refused(&out, &first, "the git repository at");
        assert!(
            !tree.events(folder).exists(),
            "{folder}: refused before anything ran"
        );
    }
    assert!(first.wait().unwrap().code().is_some());
}

#[test]
fn plain_runs_share_a_repository_but_a_story_run_waits_for_them() {
    let tree = Tree::new();
    tree.ralph_md("a", &slow(1.5));
    tree.ralph_md("b", &slow(0.1));
    tree.ralph_md(
        "stories",
        &format!("{}\nescalation:\n  prd: prd.json", slow(0.1)),
    );
    std::fs::write(
        tree.repo().join("stories/prd.json"),
        r#"{"userStories": [{"id": "US-001", "title": "One", "priority": 1, "passes": false}]}"#,
    )
    .unwrap();
    common::git_repo(&tree.repo());

    let mut first = tree.start("a");
    let b = tree.run("b", &[]);
    assert_eq!(
        code(&b),
        0,
        "two plain loops in two folders: {}",
        stderr(&b)
    );

    let stories = tree.run("stories", &[]);
    let err = stderr(&stories);
    assert_eq!(code(&stories), 2, "{err}");
    assert!(err.contains("the git repository at"), "{err}");
    assert!(first.wait().unwrap().success());
}

#[test]
fn deleting_ralph_folder_during_a_run_lets_no_second_loop_start() {
    let tree = Tree::new();
    tree.ralph_md("a", &slow(30.0));
    let mut first = tree.start("a");
    // The run may be writing there meanwhile (a folder not empty yet): as `rm -rf` again would.
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(err) = std::fs::remove_dir_all(tree.repo().join("a/.ralph")) {
        assert!(Instant::now() < deadline, "cannot delete .ralph: {err}");
        std::thread::sleep(Duration::from_millis(10));
    }

    let out = tree.run("a", &["--events", "/dev/null"]);
    let err = stderr(&out);
    send_signal(first.id(), libc::SIGTERM);
    first.wait().unwrap();
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("this folder"), "{err}");
}

/// The run id `RUN_STARTED` names in the events file `events`.
fn run_id(events: &Path) -> String {
    let text = std::fs::read_to_string(events).unwrap();
    let started = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "RUN_STARTED")
        .expect("RUN_STARTED");
    started["run_id"].as_str().unwrap().to_owned()
}

#[test]
fn a_run_still_going_is_not_resumed_from_another_folder() {
    let tree = Tree::new();
    tree.ralph_md("a", &slow(30.0));
    tree.ralph_md("b", &slow(30.0));
    let mut first = tree.start("a");
    let id = run_id(&tree.events("a"));
    let runs = tree.repo().join("a/.ralph/runs");
    let runs = runs.to_str().unwrap();

    let elsewhere = tree.run("b", &["--resume", &id, "--log-dir", runs]);
    // A session from before its folder was recorded: the run's own lock still holds it.
    let session_path = tree
        .repo()
        .join("a/.ralph/runs")
        .join(&id)
        .join("session.json");
    let mut session: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&session_path).unwrap()).unwrap();
    session.as_object_mut().unwrap().remove("folder");
    std::fs::write(&session_path, serde_json::to_vec(&session).unwrap()).unwrap();
    let unnamed = tree.run("b", &["--resume", &id, "--log-dir", runs]);
    let events = std::fs::read_to_string(tree.events("a")).unwrap();
    send_signal(first.id(), libc::SIGTERM);
    first.wait().unwrap();

    assert_eq!(code(&elsewhere), 2, "{}", stderr(&elsewhere));
    assert!(
        stderr(&elsewhere).contains("not this folder"),
        "{}",
        stderr(&elsewhere)
    );
    assert_eq!(code(&unnamed), 2, "{}", stderr(&unnamed));
    assert!(
        stderr(&unnamed).contains(&format!("run {id}")),
        "{}",
        stderr(&unnamed)
    );
    assert!(!events.contains("RUN_RESUMED"), "{events}");
    assert!(!tree.events("b").exists(), "refused before anything ran");
}

#[test]
fn a_stopped_run_is_resumed_only_from_its_own_folder() {
    let tree = Tree::new();
    tree.ralph_md("a", "agent: 'true'\nmax_iterations: 1");
    tree.ralph_md("b", "agent: 'true'\nmax_iterations: 1");
    let out = tree.run("a", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = run_id(&tree.events("a"));
    let runs = tree.repo().join("a/.ralph/runs");

    let out = tree.run(
        "b",
        &[
            "--resume",
            &id,
            "--log-dir",
            runs.to_str().unwrap(),
            "-n",
            "2",
        ],
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    let home = std::fs::canonicalize(tree.repo().join("a")).unwrap();
    assert!(
        err.contains(&home.display().to_string()),
        "names its folder: {err}"
    );

    let out = tree.run("a", &["--resume", &id, "-n", "2"]);
    assert_eq!(code(&out), 0, "at home it goes on: {}", stderr(&out));
}
