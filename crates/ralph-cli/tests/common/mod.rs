//! What driving the `ralph` binary takes: a temporary project with a RALPH.md, the real `ralph`
//! binary, and the run's events read back from JSON Lines. The fake servers and the git helpers
//! every crate's tests share are `ralph-test-support`'s, re-exported here under the names the
//! modules use.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use ralph_test_support::git::{
    HeldGit, When, commit_all, git, git_repo, killing_git, real_git, show,
};
pub use ralph_test_support::{
    github_server, gitlab_server, http_server, linear_server, model_server,
};

/// The repository's `fixtures/` folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// The fake agent script, as an absolute path usable in `agent:`.
pub fn fake_agent() -> String {
    fixtures()
        .join("agents/fake-agent")
        .canonicalize()
        .expect("fixtures/agents/fake-agent exists")
        .display()
        .to_string()
}

/// A temporary project folder holding one RALPH.md.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// A project whose RALPH.md has `frontmatter` (without the `---` lines) and `body`.
    pub fn new(frontmatter: &str, body: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("RALPH.md"),
            format!("---\n{frontmatter}\n---\n{body}"),
        )
        .unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn events_path(&self) -> PathBuf {
        self.path().join("events.jsonl")
    }

    /// `ralph ARGS` in the project folder, with events written to `events.jsonl`.
    pub fn ralph(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ralph"));
        cmd.current_dir(self.path()).env_remove("NO_COLOR");
        if args.first() == Some(&"run") {
            cmd.arg("run")
                .arg("--events")
                .arg(self.events_path())
                .args(&args[1..]);
        } else {
            cmd.args(args);
        }
        cmd
    }

    /// Runs `ralph ARGS` to the end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.ralph(args)
            .stdin(Stdio::null())
            .output()
            .expect("ralph runs")
    }

    /// Starts `ralph ARGS` in the background.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.ralph(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ralph starts")
    }

    /// Every event written so far.
    pub fn events(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.events_path()).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).expect("each events line is whole JSON"))
            .collect()
    }

    /// Events of one type.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    /// Waits until `count` events of `kind` were written.
    pub fn wait_for(&self, kind: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.events_of(kind).len() < count {
            assert!(
                Instant::now() < deadline,
                "no {count}×{kind} within 20s; events: {:#?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The `RUN_ENDED` event.
    pub fn run_ended(&self) -> Value {
        let ended = self.events_of("RUN_ENDED");
        assert_eq!(
            ended.len(),
            1,
            "one RUN_ENDED; events: {:#?}",
            self.events()
        );
        ended.into_iter().next().unwrap()
    }
}

/// The event types in order.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// Sends `signal` to process `pid`.
pub fn send_signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) only sends a signal.
    let rc = unsafe { libc::kill(pid as i32, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal})");
}

/// The pid a fake agent wrote to `path` (`echo $$ > path`), once the write is complete: the
/// file exists, empty, between the shell's open and its write.
pub fn wait_for_pid(path: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held a pid",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends SIGKILL to `pid` unless it has already gone: after ralph is killed its watchdog ends
/// the agent too, and may be first.
pub fn kill_if_running(pid: u32) {
    // SAFETY: kill(2) only sends a signal.
    let rc = unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let gone = std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    assert!(rc == 0 || gone, "kill({pid}, SIGKILL)");
}

/// Whether a process whose command line contains `needle` is still running a second from now.
/// A process ralph killed as it exited may not have been scheduled to die yet on a loaded
/// machine; one that is still there after a second was left behind.
pub fn process_running(needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(1);
    while process_matching(needle) {
        if Instant::now() >= deadline {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Whether any process's command line contains `needle` now.
fn process_matching(needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let cmdline = String::from_utf8_lossy(&c).replace('\0', " ");
            cmdline.contains(needle) && !cmdline.contains("cmdline")
        })
    })
}

/// Makes a FIFO at `path` and starts a thread reading it to its end: what a `mkfifo out;
/// cat out &` would see.
pub fn fifo_with_reader(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    let path = path.to_path_buf();
    std::thread::spawn(move || std::fs::read(path).unwrap())
}

/// Whether `path` is a FIFO (not followed if it is a link).
pub fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// The exit code, or a panic with the output when it ended by a signal.
pub fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or_else(|| {
        panic!(
            "ralph ended by a signal; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A project with RALPH.md, `agent.sh` and TODO.md committed in a fresh repository; the
/// agent's prompts go to the ignored `prompts/`.
pub fn todo_repo(frontmatter: &str, body: &str, agent: &str, todo: &str) -> Project {
    let p = Project::new(frontmatter, body);
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join("TODO.md"), todo).unwrap();
    std::fs::write(dir.join(".gitignore"), "prompts/\nevents.jsonl\n").unwrap();
    git_repo(dir);
    p
}

/// Story mode: a git repository whose prd.json holds one story per title (`US-001`, `US-002`,
/// ... in priority order, none passed), whose one check always fails the same way
/// (`error: it fails`), with `agent` as `agent.sh`, all committed. The prompt is
/// `STORY={{ story.id }}`.
pub fn story_repo(agent: &str, titles: &[&str]) -> Project {
    let stories: Vec<Value> = titles
        .iter()
        .enumerate()
        .map(|(i, title)| {
            serde_json::json!({
                "id": format!("US-{:03}", i + 1), "title": title, "description": "Do it",
                "acceptanceCriteria": ["ok"], "priority": i + 1, "passes": false, "notes": ""
            })
        })
        .collect();
    let prd = serde_json::json!({"project": "Shop", "userStories": stories});
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - 'echo \"error: it fails\"; exit 1'\n\
         convergence: {max_attempts: 5, backoff: 10ms, max_backoff: 10ms}\n\
         failure: {delay: 10ms, max_delay: 10ms}\n\
         escalation:\n  prd: prd.json\n  same_error_limit: 3",
        "STORY={{ story.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(
        dir.join("prd.json"),
        serde_json::to_string_pretty(&prd).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    p
}

/// `ralph run ARGS` on a terminal of its own (24x100, `NO_COLOR` unset unless `env` sets it),
/// with `env` added; returns everything it wrote there and its exit code.
pub fn run_on_terminal(p: &Project, args: &[&str], env: &[(&str, &str)]) -> (String, i32) {
    run_on_terminal_of(p, 100, args, env)
}

/// [`run_on_terminal`] on a terminal `columns` wide.
pub fn run_on_terminal_of(
    p: &Project,
    columns: u16,
    args: &[&str],
    env: &[(&str, &str)],
) -> (String, i32) {
    use std::io::Read;
    use std::sync::{Arc, Mutex};

    let (pty, pts) = pty_process::blocking::open().expect("a pty");
    pty.resize(pty_process::Size::new(24, columns)).unwrap();
    let mut command = pty_process::blocking::Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(p.path())
        .env_remove("NO_COLOR")
        .arg("run")
        .arg("--events")
        .arg(p.events_path())
        .args(args);
    for (k, v) in env {
        command = command.env(k, v);
    }
    let mut child = command.spawn(pts).expect("ralph starts");
    let screen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&screen);
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // EIO once ralph and everything it started have closed the terminal.
        while let Ok(n @ 1..) = (&pty).read(&mut buf) {
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "ralph did not end");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = reader.join();
    let text = String::from_utf8_lossy(&screen.lock().unwrap()).into_owned();
    (text, status.code().unwrap_or(-1))
}

pub mod parallel;
pub mod real_agents;
