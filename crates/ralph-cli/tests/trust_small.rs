//! Trust 0.4, item 17: small things a person saw go wrong, each through the real binary.

use crate::common;

use common::github_server::{GithubServer, REPO, TOKEN};
use common::{Project, code, git, git_repo, stderr, story_repo};

/// The agent deletes the branch ralph runs on (HEAD left unborn): ralph says the branch is gone,
/// names it and the last commit it knows, not "the repository has no commit yet".
#[test]
fn an_agent_deleting_its_branch_is_named_not_called_a_repository_with_no_commit() {
    let p = story_repo("git update-ref -d refs/heads/main\n", &["Only"]);
    let dir = p.path();
    let checkpoint = git(dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let out = p.run(&["run"]);
    let err = stderr(&out);
    assert_ne!(code(&out), 0, "{err}");
    assert!(!err.contains("no commit yet"), "{err}");
    assert!(
        err.contains("refs/heads/main") || err.contains("`main`"),
        "{err}"
    );
    assert!(err.contains(&checkpoint[..12]), "{err}");
    assert!(err.contains("gone"), "{err}");
}

/// `ralph ARGS` against the fake GitHub.
fn run_github(p: &Project, server: &GithubServer, args: &[&str]) -> std::process::Output {
    p.ralph(args)
        .env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ralph runs")
}

/// Issue 1 gets a file of its own; issue 2 needs nothing written.
const FIRST_ONLY_AGENT: &str = r#"n=$(sed -n 's/^ISSUE=//p')
[ "$n" = 1 ] && echo "work for $n" > "issue-$n.txt"
echo '<!-- ralph:state done -->'
"#;

/// Passed issues are closed, so GitHub no longer lists them: the run's end still counts them,
/// and a pass with nothing to commit does not cite the task before it's commit.
#[test]
fn closed_passed_issues_are_counted_and_a_pass_with_nothing_to_commit_cites_no_commit() {
    let server = GithubServer::start();
    let first = server.open_issue("First", "", &["ralph", "priority:1"]);
    let second = server.open_issue("Second", "", &["ralph", "priority:2"]);
    let p = Project::new(
        &format!("agent: sh agent.sh\ntasks:\n  github: {REPO}\n  label: ralph\n"),
        "ISSUE={{ task.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), FIRST_ONLY_AGENT).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);

    let out = run_github(&p, &server, &["run"]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(!server.issue(first).open && !server.issue(second).open);
    let first_sha = git(dir, &["log", "-1", "--format=%h", "--", "issue-1.txt"]);
    let comment = &server.comments(second)[0].body;
    assert!(!comment.contains(first_sha.trim()), "{comment}");
    assert!(comment.contains("no commit"), "{comment}");
    let ended = p.run_ended();
    assert_eq!(ended["stories"]["passed"], 2, "{ended}");
    let said = common::stdout(&out) + &err;
    assert!(said.contains("2 passed"), "{said}");
}

/// The agent saves prd.json in place and leaves it cut (an editor's truncate-and-write caught
/// half way): ralph looks again a few times, then ends the run resumable, naming the file and
/// the parse error; with the file whole again, `ralph run --resume` goes on.
#[test]
fn a_prd_json_cut_by_an_in_place_save_ends_the_run_resumable_naming_the_file() {
    // Once: the resumed run's agent finds the copy and leaves prd.json alone.
    let agent = "[ -e whole.json ] && exit 0\ncp prd.json whole.json\nhead -c 30 whole.json > cut\ncat cut > prd.json\nrm cut\n";
    let p = story_repo(agent, &["Only"]);
    let dir = p.path();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\nwhole.json\n").unwrap();
    common::commit_all(dir, "ignore the copy");
    let out = p.run(&["run"]);
    let err = stderr(&out);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "escalation_failed", "{ended}\n{err}");
    assert!(err.contains("prd.json"), "{err}");
    assert!(err.contains("EOF") || err.contains("end of"), "{err}");
    assert!(err.contains("ralph run --resume"), "{err}");
    let out = p.run(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(status["resumable"], true, "{status}");

    std::fs::copy(dir.join("whole.json"), dir.join("prd.json")).unwrap();
    let out = p.run(&["run", "--resume", "-n", "3"]);
    assert!(
        common::stdout(&out).starts_with("resuming the run"),
        "{}\n{}",
        common::stdout(&out),
        stderr(&out)
    );
}

/// A loop in a subfolder of its repository: a revert covers the whole repository, so a
/// person's edit elsewhere is saved with the attempt and reverted. Said at start, naming the
/// repository; the edit is never lost (it is in the saved attempt).
#[test]
fn a_revert_from_a_subfolder_warns_at_start_that_it_covers_the_whole_repository() {
    let top = tempfile::tempdir().unwrap();
    let top = top.path();
    let folder = top.join("loop");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("RALPH.md"),
        "---\nagent: sh agent.sh\ndone_when:\n  - 'echo \"error: it fails\"; exit 1'\n\
         convergence: {backoff: 10ms, max_backoff: 10ms}\nescalation:\n  same_error_limit: 2\n---\ngo\n",
    )
    .unwrap();
    // The edit outside the folder stands for a person's, made while the loop runs.
    std::fs::write(
        folder.join("agent.sh"),
        "echo \"edit $RALPH_ITERATION\" >> ../notes.txt\n",
    )
    .unwrap();
    std::fs::write(top.join("notes.txt"), "mine\n").unwrap();
    std::fs::write(top.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(top);
    let events = top.join("events.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(&folder)
        .args(["run", "--events"])
        .arg(&events)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    let warned = err
        .lines()
        .find(|l| l.contains("whole repository"))
        .unwrap_or_else(|| panic!("no warning: {err}"));
    let top_named = std::fs::canonicalize(top).unwrap();
    assert!(warned.contains(top_named.to_str().unwrap()), "{warned}");
    let events = std::fs::read_to_string(&events).unwrap();
    let reverted: serde_json::Value = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "REVERTED")
        .expect("reverted");
    let saved = reverted["saved_ref"].as_str().unwrap();
    let kept = common::show(top, saved, "notes.txt").unwrap();
    assert!(String::from_utf8_lossy(&kept).starts_with("mine\nedit 1"));
}
