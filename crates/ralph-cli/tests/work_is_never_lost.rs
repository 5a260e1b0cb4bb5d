//! Work is never lost: whatever the agent wrote (ignored files, nested repositories), whatever
//! the user had in progress (`--allow-dirty`), whatever ralph writes for itself, and whenever
//! ralph is stopped (Ctrl+C mid-revert, kill -9 mid-pass), the work is in the tree or in git.
//!
//! Every test runs the real binary in a temporary git repository with an agent that is a small
//! sh script; a slow step is made slow by a `git` wrapper on PATH that sleeps, then runs git.

use crate::common;

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Project, code, git, git_repo, send_signal, show};
use serde_json::Value;

/// The refs under `refs/ralph/attempts/`.
fn attempt_refs(dir: &Path) -> Vec<String> {
    git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/ralph/attempts/",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// A project with RALPH.md, `agent.sh`, prd.json and a tracked file, committed.
pub(crate) fn repo(frontmatter: &str, agent: &str, prd: &str) -> Project {
    let p = Project::new(frontmatter, STORY_BODY);
    std::fs::write(p.path().join("agent.sh"), agent).unwrap();
    std::fs::write(p.path().join("tracked.txt"), "original\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), "ignored.txt\n").unwrap();
    std::fs::write(p.path().join("prd.json"), prd).unwrap();
    git_repo(p.path());
    p
}

pub(crate) fn prd_json(ids: &[&str]) -> String {
    let stories: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            serde_json::json!({
                "id": id,
                "title": format!("Story {id}"),
                "priority": i + 1,
                "passes": false,
                "notes": ""
            })
        })
        .collect();
    let prd = serde_json::json!({"project": "Shop", "userStories": stories});
    serde_json::to_string_pretty(&prd).unwrap() + "\n"
}

fn read_prd(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).expect("prd.json is valid JSON")
}

pub(crate) fn passes(prd: &Value, id: &str) -> Value {
    prd["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap()["passes"]
        .clone()
}

const STORY_BODY: &str = "STORY={{ story.id }}\n";

/// Stories whose check fails (the same way every time) trip the breaker at the first attempt;
/// the others pass.
pub(crate) fn frontmatter(failing: &str) -> String {
    format!(
        "agent: sh agent.sh\ndone_when:\n  - 'case \"$(cat .story 2>/dev/null)\" in {failing}) echo \"error: nope\"; exit 1;; esac'\nconvergence: {{backoff: 1ms, max_backoff: 1ms}}\nescalation:\n  prd: prd.json\n  same_error_limit: 1"
    )
}

/// The start of every agent script: the story's id in `$story` and in `.story` (for the check,
/// which is ignored by nothing, so it is part of the work and reverted too).
pub(crate) const READ_STORY: &str =
    "story=$(sed -n 's/^STORY=//p')\nprintf '%s' \"$story\" > .story\n";

/// The real git program, found on PATH.
fn real_git() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH")
}

/// Puts in `bin` a `git` that runs `script` (sh) first, then the real git (`$GIT`); returns
/// PATH with `bin` first.
pub(crate) fn git_wrapper(bin: &Path, script: &str) -> String {
    let path = bin.join("git");
    let git = real_git();
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nGIT='{}'\n{script}\nexec \"$GIT\" \"$@\"\n",
            git.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A `git` (see [`git_wrapper`]) that, when its arguments include one of `words`, touches
/// `mark` and sleeps `secs` first.
fn slow_git(bin: &Path, words: &[&str], secs: f64, mark: &Path) -> String {
    git_wrapper(
        bin,
        &format!(
            "for a in \"$@\"; do\n  case \"$a\" in {words}) : > '{mark}'; sleep {secs}; break;; esac\ndone",
            words = words.join("|"),
            mark = mark.display(),
        ),
    )
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `ralph run` in `p` as a terminal starts it: the leader of its own process group.
fn spawn_in_own_group(p: &Project, args: &[&str], path_env: &str) -> Child {
    p.ralph(args)
        .env("PATH", path_env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("ralph starts")
}

#[test]
fn ctrl_c_or_sigterm_during_a_revert_lets_the_revert_finish_and_starts_no_new_iteration() {
    for (signal, exit) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let agent = format!("{READ_STORY}echo \"$story work\" > \"work-$story.txt\"\n");
        let p = repo(
            &frontmatter("US-001"),
            &agent,
            &prd_json(&["US-001", "US-002"]),
        );
        let bin = tempfile::tempdir().unwrap();
        let mark = bin.path().join("resetting");
        let path_env = slow_git(bin.path(), &["reset"], 1.0, &mark);

        let mut child = spawn_in_own_group(&p, &["run"], &path_env);
        wait_for_file(&mark);
        // As a terminal's Ctrl+C: the signal to every process in ralph's foreground group.
        send_signal_to_group(child.id(), signal);
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();

        assert_eq!(status.code(), Some(exit), "{signal}: {stderr}");
        assert_eq!(
            common::types(&p.events())
                .iter()
                .filter(|t| *t == "ITERATION_STARTED")
                .count(),
            1,
            "{signal}: {:?}",
            common::types(&p.events())
        );
        let reverted = p.events_of("REVERTED");
        assert_eq!(reverted.len(), 1, "{signal}: the revert finished: {stderr}");
        assert_eq!(p.events_of("STORY_BLOCKED").len(), 1, "{signal}: {stderr}");
        let ended = p.run_ended();
        assert_eq!(ended["reason"], "interrupted");
        assert_eq!(ended["exit_code"], exit);
        assert_eq!(
            passes(&read_prd(&p.path().join("prd.json")), "US-001"),
            "blocked"
        );
        // Reverted, and saved first.
        assert!(!p.path().join("work-US-001.txt").exists());
        let saved = reverted[0]["saved_ref"].as_str().unwrap();
        assert_eq!(
            show(p.path(), saved, "work-US-001.txt").unwrap(),
            b"US-001 work\n"
        );
        assert_eq!(
            git(p.path(), &["status", "--porcelain", "--", "tracked.txt"]),
            ""
        );
    }
}

#[test]
fn ctrl_c_during_a_pass_commit_lets_the_pass_finish_and_starts_no_new_iteration() {
    let agent = format!("{READ_STORY}echo \"$story work\" > \"work-$story.txt\"\n");
    let p = repo(
        &frontmatter("none"),
        &agent,
        &prd_json(&["US-001", "US-002"]),
    );
    let bin = tempfile::tempdir().unwrap();
    let mark = bin.path().join("committing");
    // Nothing fails, so nothing is saved: the one update-ref is the pass's, moving HEAD.
    let path_env = slow_git(bin.path(), &["update-ref"], 1.0, &mark);

    let mut child = spawn_in_own_group(&p, &["run"], &path_env);
    wait_for_file(&mark);
    send_signal_to_group(child.id(), libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(p.events_of("ITERATION_STARTED").len(), 1);
    assert_eq!(p.events_of("STORY_PASSED").len(), 1);
    assert_eq!(p.run_ended()["reason"], "interrupted");
    assert_eq!(
        passes(&read_prd(&p.path().join("prd.json")), "US-001"),
        true
    );
    assert_eq!(
        git(p.path(), &["log", "-1", "--format=%s"]).trim(),
        "ralph: US-001 passes"
    );
    assert_eq!(
        show(p.path(), "HEAD", "work-US-001.txt").unwrap(),
        b"US-001 work\n"
    );
    // The work is committed; only ralph's own events file is left untracked.
    assert_eq!(
        git(p.path(), &["status", "--porcelain"]),
        "?? events.jsonl\n"
    );
}

/// Sends `signal` to every process of group `pgid`.
fn send_signal_to_group(pgid: u32, signal: i32) {
    // SAFETY: kill(2) only sends a signal.
    let rc = unsafe { libc::kill(-(pgid as i32), signal) };
    assert_eq!(rc, 0, "kill(-{pgid}, {signal})");
}

#[test]
fn files_the_agent_wrote_and_ignored_are_saved_before_the_revert_removes_them() {
    let agent = format!(
        r#"{READ_STORY}printf 'secret\000bytes\r\n' > secret.bin
mkdir -p build/deep && printf 'built' > build/deep/out.o
printf 'secret.bin\nbuild/\n' >> .gitignore
"#
    );
    let p = repo(&frontmatter("US-001"), &agent, &prd_json(&["US-001"]));
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let dir = p.path();
    // The revert removed them (the checkpoint's .gitignore does not ignore them)...
    assert!(!dir.join("secret.bin").exists());
    assert!(!dir.join("build").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "ignored.txt\n"
    );
    // ... after saving them, with the agent's .gitignore.
    assert_eq!(
        show(dir, &saved, "secret.bin").unwrap(),
        b"secret\0bytes\r\n"
    );
    assert_eq!(show(dir, &saved, "build/deep/out.o").unwrap(), b"built");
    assert_eq!(
        show(dir, &saved, ".gitignore").unwrap(),
        b"ignored.txt\nsecret.bin\nbuild/\n"
    );
    // The saved commit still sits on the checkpoint, as before.
    let checkpoint = p.events_of("REVERTED")[0]["checkpoint"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        git(dir, &["rev-parse", &format!("{saved}^")]).trim(),
        checkpoint
    );
    // Getting the work back gives the files byte for byte.
    git(
        dir,
        &[
            "restore",
            "--source",
            &saved,
            "--",
            "secret.bin",
            "build/deep/out.o",
        ],
    );
    assert_eq!(
        std::fs::read(dir.join("secret.bin")).unwrap(),
        b"secret\0bytes\r\n"
    );
    assert_eq!(
        std::fs::read(dir.join("build/deep/out.o")).unwrap(),
        b"built"
    );
    // A file ignored before and after is never touched.
    assert_eq!(std::fs::read(dir.join("ignored.txt")).ok(), None);
}

#[test]
fn a_repository_with_submodules_is_refused_before_the_agent_runs() {
    let lib = tempfile::tempdir().unwrap();
    std::fs::write(lib.path().join("lib.txt"), "lib\n").unwrap();
    git_repo(lib.path());
    let agent = format!("{READ_STORY}: > agent-ran\n");
    let p = repo(&frontmatter("US-001"), &agent, &prd_json(&["US-001"]));
    git(
        p.path(),
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.path().to_str().unwrap(),
            "vendor/lib",
        ],
    );
    git(p.path(), &["commit", "-q", "-m", "add a submodule"]);

    let out = p.run(&["run"]);
    assert_eq!(code(&out), 2);
    let err = common::stderr(&out);
    assert!(err.contains("submodules (vendor/lib)"), "{err}");
    assert!(err.contains("revert: false"), "{err}");
    assert!(!p.path().join("agent-ran").exists());
    assert!(p.events().is_empty());
}

#[test]
fn a_repository_the_agent_created_is_saved_file_by_file_and_left_in_place() {
    let agent = format!(
        r#"{READ_STORY}case "$story" in
US-001)
    mkdir inner && cd inner && git init -q && printf 'committed\n' > a.txt && git add a.txt
    git commit -qm "inner history" && printf 'loose\000' > b.bin
    ln -s a.txt link && printf 'echo hi\n' > run.sh && chmod +x run.sh && cd ..
    ;;
US-002)
    mkdir other && cd other && git init -q && printf 'two\n' > c.txt && git add c.txt
    git commit -qm "other history" && cd ..
    echo done > done.txt
    ;;
esac
"#
    );
    let p = repo(
        &frontmatter("US-001"),
        &agent,
        &prd_json(&["US-001", "US-002"]),
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let dir = p.path();
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    // Its files are in the saved commit as files, byte for byte, not as a gitlink.
    assert_eq!(show(dir, &saved, "inner/a.txt").unwrap(), b"committed\n");
    assert_eq!(show(dir, &saved, "inner/b.bin").unwrap(), b"loose\0");
    let saved_tree = git(dir, &["ls-tree", "-r", &saved, "inner/"]);
    assert!(saved_tree.contains("120000 blob"), "{saved_tree}");
    assert!(saved_tree.contains("100755 blob"), "{saved_tree}");
    assert_eq!(show(dir, &saved, "inner/link").unwrap(), b"a.txt");
    // The repository itself, with its history, is still in the tree.
    assert_eq!(
        git(&dir.join("inner"), &["log", "--format=%s"]).trim(),
        "inner history"
    );
    assert_eq!(std::fs::read(dir.join("inner/b.bin")).unwrap(), b"loose\0");

    // US-002 passed: its checkpoint holds its work but no gitlink of either repository.
    assert_eq!(p.events_of("STORY_PASSED")[0]["story_id"], "US-002");
    let tree = git(dir, &["ls-tree", "-r", "HEAD"]);
    assert!(!tree.contains("160000"), "{tree}");
    assert!(show(dir, "HEAD", "done.txt").is_some());
    assert!(show(dir, "HEAD", "other/c.txt").is_none(), "{tree}");
    assert_eq!(
        git(&dir.join("other"), &["log", "--format=%s"]).trim(),
        "other history"
    );
}

#[test]
fn allow_dirty_keeps_the_users_changes_out_of_commits_and_through_reverts() {
    let agent = format!(
        r#"{READ_STORY}echo "$story" > "work-$story.txt"
echo "agent $story" >> tracked.txt
"#
    );
    let p = repo(
        &frontmatter("US-001"),
        &agent,
        &prd_json(&["US-001", "US-002"]),
    );
    let dir = p.path();
    std::fs::write(dir.join("mine.txt"), "committed later\n").unwrap();
    git(dir, &["add", "mine.txt"]);
    std::fs::write(dir.join("notes.md"), "my notes\n").unwrap();
    std::fs::write(dir.join("tracked.txt"), "my edit\n").unwrap();

    let out = p.run(&["run", "--allow-dirty"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(p.events_of("REVERTED").len(), 1);
    assert_eq!(p.events_of("STORY_PASSED")[0]["story_id"], "US-002");

    // The pass commit holds the story's work and none of the user's.
    let pass = git(dir, &["show", "--name-only", "--format=%s", "HEAD"]);
    assert!(pass.starts_with("ralph: US-002 passes"), "{pass}");
    assert!(pass.contains("work-US-002.txt"), "{pass}");
    for path in ["mine.txt", "notes.md", "tracked.txt"] {
        assert!(!pass.contains(path), "{path} committed: {pass}");
    }
    // The user's files are in the tree as they were (the agent's own lines aside), the staged
    // one still staged, after the revert and the pass.
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).unwrap(),
        "my notes\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("mine.txt")).unwrap(),
        "committed later\n"
    );
    assert_eq!(
        git(dir, &["diff", "--cached", "--name-only"]).trim(),
        "mine.txt"
    );
    assert!(
        std::fs::read_to_string(dir.join("tracked.txt"))
            .unwrap()
            .starts_with("my edit\n")
    );
    // ... and saved at start-up.
    let saved = "refs/ralph/attempts/preexisting/1";
    assert_eq!(show(dir, saved, "notes.md").unwrap(), b"my notes\n");
    assert_eq!(show(dir, saved, "tracked.txt").unwrap(), b"my edit\n");
}

#[test]
fn allow_dirty_says_what_it_does_in_the_help_and_the_refusal() {
    let p = repo(&frontmatter("US-001"), "true\n", &prd_json(&["US-001"]));
    std::fs::write(p.path().join("notes.md"), "my notes\n").unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 2);
    let err = common::stderr(&out);
    assert!(
        err.contains("never committing, saving or reverting them"),
        "{err}"
    );
    let help = common::stdout(&p.run(&["run", "--help"]));
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("never commits, saves or reverts"), "{help}");
}

/// The pass-path kill test's agent: per iteration one file, listed in a ledger outside the
/// repository once written; every story passes.
fn passing_ledger_agent(ledger: &Path) -> String {
    format!(
        r#"{READ_STORY}mkdir -p work
f="work/$story-$RALPH_ITERATION.txt"
printf '%s' "$story $RALPH_ITERATION" > "$f"
echo "$f" >> '{ledger}'
"#,
        ledger = ledger.display()
    )
}

#[test]
fn kill_9_during_passes_never_records_a_pass_without_its_commit() {
    let ids: Vec<String> = (1..=8).map(|n| format!("S{n}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let bin = tempfile::tempdir().unwrap();
    // Slow commits (as in a big repository) widen the window between marking prd.json and
    // committing.
    let path_env = slow_git(
        bin.path(),
        &["commit", "commit-tree", "update-ref"],
        0.05,
        &bin.path().join("mark"),
    );
    for round in 0..10u64 {
        let ledger_dir = tempfile::tempdir().unwrap();
        let ledger = ledger_dir.path().join("ledger");
        let p = repo(
            &frontmatter("none"),
            &passing_ledger_agent(&ledger),
            &prd_json(&ids),
        );
        let mut child = p
            .ralph(&["run"])
            .env("PATH", &path_env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100 + round * 97));
        send_signal(child.id(), libc::SIGKILL);
        let _ = child.wait();
        // git and the agent may outlive ralph for a moment: let them finish.
        std::thread::sleep(Duration::from_millis(300));

        let prd = read_prd(&p.path().join("prd.json"));
        let history = git(p.path(), &["log", "--format=%s", "HEAD"]);
        for id in &ids {
            let state = passes(&prd, id);
            assert!(
                state == Value::Bool(true) || state == Value::Bool(false),
                "round {round}: {id}: {state}"
            );
            if state == Value::Bool(true) {
                assert!(
                    history.lines().any(|l| l == format!("ralph: {id} passes")),
                    "round {round}: {id} marked passed without its commit; history:\n{history}"
                );
            }
        }
        let written = std::fs::read_to_string(&ledger).unwrap_or_default();
        let refs = attempt_refs(p.path());
        for path in written.lines() {
            let name = Path::new(path).file_stem().unwrap().to_string_lossy();
            let (story, i) = name.rsplit_once('-').unwrap();
            let expected = format!("{story} {i}").into_bytes();
            let kept = std::fs::read(p.path().join(path)).ok() == Some(expected.clone())
                || std::iter::once("HEAD".to_owned())
                    .chain(refs.iter().cloned())
                    .any(|r| show(p.path(), &r, path) == Some(expected.clone()));
            assert!(kept, "round {round}: {path} is lost");
        }
    }
}

/// `ralph run` from `cwd` with `args`, in the repository at `top`.
fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(cwd)
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ralph runs")
}

/// A repository with the project in `app/`: RALPH.md, agent.sh and prd.json there.
fn app_repo(agent: &str) -> tempfile::TempDir {
    let top = tempfile::tempdir().unwrap();
    let app = top.path().join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("RALPH.md"),
        format!("---\n{}\n---\n{STORY_BODY}", frontmatter("US-001")),
    )
    .unwrap();
    std::fs::write(app.join("agent.sh"), agent).unwrap();
    std::fs::write(app.join("prd.json"), prd_json(&["US-001", "US-002"])).unwrap();
    git_repo(top.path());
    top
}

/// Where a run writes its events and logs: the arguments, and the real paths inside `top`.
struct Placement {
    events_arg: String,
    /// `None`: the default, `.ralph/runs` where ralph runs.
    logs_arg: Option<String>,
    events: PathBuf,
    logs: PathBuf,
}

/// Placement `n` for a repository at `top`, ralph running in `top/app`: relative with `..` into
/// another subfolder, absolute, the defaults in that subfolder, and through a symlinked folder
/// outside the repository (in `outside`) that points into it.
fn placement(n: usize, top: &Path, outside: &Path) -> Placement {
    match n {
        0 => Placement {
            events_arg: "../out/events.jsonl".to_owned(),
            logs_arg: Some("../out/logs".to_owned()),
            events: top.join("out/events.jsonl"),
            logs: top.join("out/logs"),
        },
        1 => Placement {
            events_arg: top.join("abs/deeper/events.jsonl").display().to_string(),
            logs_arg: Some(top.join("abs/logs").display().to_string()),
            events: top.join("abs/deeper/events.jsonl"),
            logs: top.join("abs/logs"),
        },
        2 => Placement {
            events_arg: "events.jsonl".to_owned(),
            logs_arg: None,
            events: top.join("app/events.jsonl"),
            logs: top.join("app/.ralph/runs"),
        },
        _ => {
            std::fs::create_dir_all(top.join("real")).unwrap();
            let link = outside.join(top.file_name().unwrap());
            std::os::unix::fs::symlink(top.join("real"), &link).unwrap();
            Placement {
                events_arg: link.join("events.jsonl").display().to_string(),
                // A folder that does not exist yet, under the link.
                logs_arg: Some(link.join("new/logs").display().to_string()),
                events: top.join("real/events.jsonl"),
                logs: top.join("real/new/logs"),
            }
        }
    }
}

#[test]
fn ralphs_own_files_are_never_committed_nor_reverted_wherever_they_are() {
    let agent = format!("{READ_STORY}echo \"$story\" > \"work-$story.txt\"\n");
    let outside = tempfile::tempdir().unwrap();
    for n in 0..4 {
        let repo = app_repo(&agent);
        let top = repo.path();
        let Placement {
            events_arg,
            logs_arg,
            events,
            logs,
        } = placement(n, top, outside.path());
        std::fs::create_dir_all(events.parent().unwrap()).unwrap();
        let mut args = vec!["--events", events_arg.as_str()];
        if let Some(logs) = &logs_arg {
            args.extend(["--log-dir", logs.as_str()]);
        }
        let out = run_in(&top.join("app"), &args);
        assert_eq!(code(&out), 1, "case {n}: {}", common::stderr(&out));
        let text = std::fs::read_to_string(&events).unwrap_or_else(|e| {
            panic!(
                "case {n}: {}: {e}; {}",
                events.display(),
                common::stderr(&out)
            )
        });
        assert!(text.contains("REVERTED"), "case {n}");
        assert!(text.contains("STORY_PASSED"), "case {n}");
        assert!(text.contains("RUN_ENDED"), "case {n}: written to the end");
        assert_eq!(
            std::fs::read_dir(&logs).unwrap().count(),
            1,
            "case {n}: the run's log folder survived the revert"
        );
        let saved = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["type"] == "REVERTED")
            .unwrap()["saved_ref"]
            .as_str()
            .unwrap()
            .to_owned();
        for rev in ["HEAD", saved.as_str()] {
            let files = git(top, &["ls-tree", "-r", "--name-only", rev]);
            assert!(
                !files.contains("events.jsonl")
                    && !files.contains("logs/")
                    && !files.contains(".ralph"),
                "case {n}: ralph's files in {rev}:\n{files}"
            );
        }
        assert!(
            show(top, "HEAD", "app/work-US-002.txt").is_some(),
            "case {n}"
        );
    }
}

#[test]
fn a_symlinked_prd_json_and_the_file_it_points_to_are_never_reverted() {
    let agent = format!("{READ_STORY}echo \"$story\" > \"work-$story.txt\"\n");
    let p = Project::new(&frontmatter("US-001|US-002"), STORY_BODY);
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::create_dir(dir.join("plan")).unwrap();
    std::fs::write(
        dir.join("plan/prd.json"),
        prd_json(&["US-001", "US-002", "US-003"]),
    )
    .unwrap();
    std::os::unix::fs::symlink("plan/prd.json", dir.join("prd.json")).unwrap();
    git_repo(dir);

    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert!(
        std::fs::symlink_metadata(dir.join("prd.json"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "prd.json is still the user's link"
    );
    // The second revert did not put back the file with US-001 not yet blocked.
    let prd = read_prd(&dir.join("plan/prd.json"));
    assert_eq!(passes(&prd, "US-001"), "blocked");
    assert_eq!(passes(&prd, "US-002"), "blocked");
    assert_eq!(passes(&prd, "US-003"), true);
    assert_eq!(p.events_of("ITERATION_STARTED").len(), 3);
    // The pass commit holds the file with the pass recorded.
    let committed: Value =
        serde_json::from_slice(&show(dir, "HEAD", "plan/prd.json").unwrap()).unwrap();
    assert_eq!(passes(&committed, "US-003"), true);
}

#[test]
fn story_ids_that_make_bad_ref_names_get_valid_distinct_refs() {
    let agent = format!("{READ_STORY}echo \"$story\" > work.txt\n");
    let ids = ["a/b", "a b", "../x", "x.lock"];
    let p = repo(&frontmatter("*"), &agent, &prd_json(&ids));
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let reverted = p.events_of("REVERTED");
    assert_eq!(reverted.len(), ids.len(), "{}", common::stderr(&out));
    let refs: Vec<String> = reverted
        .iter()
        .map(|e| e["saved_ref"].as_str().unwrap().to_owned())
        .collect();
    for (id, r) in ids.iter().zip(&refs) {
        assert_eq!(
            show(p.path(), r, "work.txt").unwrap(),
            format!("{id}\n").into_bytes()
        );
    }
    // One ref folder per story, whatever its id: `a/b` and `a b` are not both `a-b`.
    let folders: std::collections::BTreeSet<&str> =
        refs.iter().map(|r| r.rsplit_once('/').unwrap().0).collect();
    assert_eq!(folders.len(), ids.len(), "{refs:?}");
}

#[test]
fn no_git_identity_is_refused_before_the_agent_runs() {
    let agent = format!("{READ_STORY}: > agent-ran\n");
    let p = repo(&frontmatter("US-001"), &agent, &prd_json(&["US-001"]));
    git(p.path(), &["config", "--unset", "user.name"]);
    git(p.path(), &["config", "--unset", "user.email"]);
    let home = tempfile::tempdir().unwrap();
    let mut cmd = p.ralph(&["run"]);
    cmd.env("HOME", home.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("XDG_CONFIG_HOME")
        // As on a machine whose host name makes no usable email address.
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "user.useConfigOnly")
        .env("GIT_CONFIG_VALUE_0", "true");
    for var in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "EMAIL",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert_eq!(code(&out), 2);
    let err = common::stderr(&out);
    assert!(err.contains("no user identity"), "{err}");
    assert!(err.contains("git config --global user.email"), "{err}");
    assert!(!p.path().join("agent-ran").exists());
    assert!(p.events().is_empty());
}

#[test]
fn commit_signing_that_fails_is_refused_before_the_agent_runs() {
    let agent = format!("{READ_STORY}: > agent-ran\n");
    let p = repo(&frontmatter("US-001"), &agent, &prd_json(&["US-001"]));
    git(p.path(), &["config", "commit.gpgsign", "true"]);
    git(p.path(), &["config", "gpg.program", "false"]);
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 2);
    let err = common::stderr(&out);
    assert!(err.contains("git cannot make a commit here"), "{err}");
    assert!(err.contains("git config commit.gpgsign false"), "{err}");
    assert!(!p.path().join("agent-ran").exists());
    assert!(p.events().is_empty());
}

#[test]
fn a_temporary_index_left_by_a_killed_ralph_is_removed() {
    let p = repo(&frontmatter("US-001"), READ_STORY, &prd_json(&["US-001"]));
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = p.path().join(format!(".git/ralph-save-index-{dead}"));
    let stale_lock = p.path().join(format!(".git/ralph-save-index-{dead}.lock"));
    let alive = p
        .path()
        .join(format!(".git/ralph-save-index-{}", std::process::id()));
    for file in [&stale, &stale_lock, &alive] {
        std::fs::write(file, "DIRC").unwrap();
    }
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert!(!stale.exists() && !stale_lock.exists());
    assert!(alive.exists(), "a running process's index is left alone");
}

#[test]
fn a_saved_ref_another_writer_took_first_is_left_alone_and_the_next_number_used() {
    let agent = format!("{READ_STORY}echo \"$story work\" > work.txt\n");
    let p = repo(&frontmatter("US-001"), &agent, &prd_json(&["US-001"]));
    let checkpoint = git(p.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    // The other writer: right after ralph looks for the first free number, it takes it.
    let bin = tempfile::tempdir().unwrap();
    let path_env = git_wrapper(
        bin.path(),
        &format!(
            "case \" $* \" in *' for-each-ref '*)\n  if [ ! -e '{mark}' ]; then\n    : > '{mark}'\n    \"$GIT\" \"$@\"; rc=$?\n    \"$GIT\" -C '{top}' update-ref refs/ralph/attempts/US-001/1 HEAD\n    exit $rc\n  fi;;\nesac",
            mark = bin.path().join("raced").display(),
            top = p.path().display()
        ),
    );
    let out = p
        .ralph(&["run"])
        .env("PATH", path_env)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert!(bin.path().join("raced").exists(), "the race happened");
    assert_eq!(
        git(p.path(), &["rev-parse", "refs/ralph/attempts/US-001/1"]).trim(),
        checkpoint,
        "the other writer's ref was overwritten"
    );
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(saved, "refs/ralph/attempts/US-001/2");
    assert_eq!(
        show(p.path(), &saved, "work.txt").unwrap(),
        b"US-001 work\n"
    );
}

#[test]
fn a_log_dir_inside_the_repository_is_never_committed_reverted_or_deleted_and_resumes() {
    let agent = format!("{READ_STORY}echo \"$story\" > \"work-$story.txt\"\n");
    for log_dir in [".", "logs"] {
        let p = repo(
            &frontmatter("US-001"),
            &agent,
            &prd_json(&["US-001", "US-002"]),
        );
        let dir = p.path();
        // Iteration 1 trips on US-001 and reverts; the limit stops the run with work left.
        let out = p.run(&["run", "--log-dir", log_dir, "-n", "1"]);
        assert_eq!(code(&out), 1, "{log_dir}: {}", common::stderr(&out));
        let reverted = p.events_of("REVERTED");
        assert_eq!(reverted.len(), 1, "{log_dir}");
        let saved = reverted[0]["saved_ref"].as_str().unwrap().to_owned();
        let run_id = p.run_ended()["run_id"].as_str().unwrap().to_owned();
        let run_dir = dir.join(log_dir).join(&run_id);
        let session = std::fs::read_to_string(run_dir.join("session.json"))
            .unwrap_or_else(|e| panic!("{log_dir}: the session survived the revert: {e}"));
        assert!(session.contains("max_iterations_work_left"), "{log_dir}");

        // Resumed without --log-dir: the run's folder is found through .ralph/current, and
        // US-002's pass commit leaves it out.
        let out = p.run(&["run", "--resume", "-n", "2"]);
        assert_eq!(code(&out), 1, "{log_dir}: {}", common::stderr(&out));
        assert_eq!(p.run_ended()["reason"], "stories_blocked", "{log_dir}");
        let events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
        assert_eq!(events.matches("\"RUN_ENDED\"").count(), 2, "{log_dir}");
        assert!(events.contains("STORY_PASSED"), "{log_dir}");
        assert!(run_dir.join("session.json").is_file(), "{log_dir}");
        for rev in ["HEAD", saved.as_str()] {
            let files = git(dir, &["ls-tree", "-r", "--name-only", rev]);
            assert!(
                !files.contains(&run_id),
                "{log_dir}: the run's folder is in {rev}:\n{files}"
            );
        }
        assert!(show(dir, "HEAD", "work-US-002.txt").is_some(), "{log_dir}");
    }
}
