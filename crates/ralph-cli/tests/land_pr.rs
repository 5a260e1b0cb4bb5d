//! `land.pr: github`: a `--task` that passes is pushed as `ralph/<id>` to a remote (a local bare
//! repository here) and opened as a pull request on the project's fake GitHub; the base stays
//! as it was, a re-run or a resumed run updates the one request, a request a person closed is
//! reported and left closed, a refused push is an error naming the remote and the branch, and
//! the token is never shown.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use common::github_server::{Fault, GithubServer, REPO, TOKEN};
use common::http_server::{HttpServer, Reply, Request};
use common::{Project, git, git_repo};

/// The agent: a file for the issue, then `done`; the check passes once the file is there.
const AGENT: &str = r#"prompt=$(cat)
n=$(printf '%s\n' "$prompt" | sed -n 's/^ISSUE=//p')
echo "work for $n" > "issue-$n.txt"
echo '<!-- ralph:state done -->'
"#;

/// A repository whose tasks are the fake GitHub's issues labelled `ralph` (kept open with
/// `ralph:done` when they pass: the request's `Closes #N` closes them), landing as pull
/// requests pushed to `remote` (a bare repository holding `main`). `extra` goes into `land`.
fn pr_repo(remote_url: &str, extra: &str) -> Project {
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ntasks:\n  github: {REPO}\n  label: ralph\n  close: false\n\
             done_when:\n  - 'ls issue-*.txt'\nland:\n  pr: github\n{extra}"
        ),
        "ISSUE={{ task.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), AGENT).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    git(dir, &["remote", "add", "origin", remote_url]);
    p
}

/// A bare repository to push to, beside the project, holding the project's `main`.
fn bare_remote(p: &Project) -> PathBuf {
    let remote = p.path().join(".ralph-test-remote.git");
    let out = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(&remote)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(
        p.path().join(".git/info/exclude"),
        ".ralph-test-remote.git/\n",
    )
    .unwrap();
    git(p.path(), &["push", "-q", "origin", "main"]);
    remote
}

/// A project whose `origin` is a bare repository of its own (inside it, excluded from git).
fn project(extra: &str) -> (Project, PathBuf) {
    let p = pr_repo("to be set", extra);
    let remote = p.path().join(".ralph-test-remote.git");
    git(
        p.path(),
        &["remote", "set-url", "origin", remote.to_str().unwrap()],
    );
    bare_remote(&p);
    (p, remote)
}

fn ralph(p: &Project, server: &GithubServer, args: &[&str]) -> Command {
    let mut cmd = p.ralph(args);
    cmd.env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .stdin(Stdio::null());
    cmd
}

fn run(p: &Project, server: &GithubServer, args: &[&str]) -> Output {
    ralph(p, server, args).output().expect("ralph runs")
}

fn rev(dir: &Path, name: &str) -> String {
    git(dir, &["rev-parse", name]).trim().to_owned()
}

/// The commit `branch` is at in the bare repository `remote`, if it has it.
pub(crate) fn remote_rev(remote: &Path, branch: &str) -> Option<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args(["rev-parse", "--verify", "-q", branch])
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Every file under `dir`, read as text where it is.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
            {
                found.push(path);
            }
        }
    }
    found
}

/// The bare repository `remote` refuses every push from now on, saying
/// `protected: no pushes here`, as a protected-branch rule might.
pub(crate) fn refuse_every_push(remote: &Path) {
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'protected: no pushes here' >&2\nexit 1\n",
    )
    .unwrap();
    let mut mode = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&hook, mode).unwrap();
}

#[test]
fn a_passing_task_is_pushed_and_opened_once_and_the_base_stays_as_it_was() {
    let server = GithubServer::start();
    let n = server.open_issue("Add the widget", "", &["ralph"]);
    let (p, remote) = project("");
    let base = rev(p.path(), "main");

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    assert_eq!(rev(p.path(), "main"), base, "the local base is untouched");
    assert_eq!(remote_rev(&remote, "main").as_deref(), Some(base.as_str()));
    let branch = format!("ralph/{n}");
    assert_eq!(
        remote_rev(&remote, &branch),
        Some(rev(p.path(), &branch)),
        "the task's branch is pushed as it is"
    );
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let pull = &pulls[0];
    assert_eq!(
        (pull.head.as_str(), pull.base.as_str()),
        (branch.as_str(), "main")
    );
    assert_eq!(pull.title, "Add the widget");
    assert!(!pull.draft);
    for said in [
        "in 1 iteration",
        "`ls issue-*.txt`: passed",
        &format!("Closes #{n}"),
    ] {
        assert!(pull.body.contains(said), "{said:?} in {}", pull.body);
    }
    let opened = p.events_of("PR_OPENED");
    assert_eq!(opened.len(), 1, "{:#?}", p.events());
    assert_eq!(opened[0]["url"], pull.url());
    assert_eq!(opened[0]["state"], "open");
    assert_eq!(opened[0]["story_id"], n.to_string());
    assert_eq!(opened[0]["base"], "main");

    // Again: the open request is found by its branch and updated, not opened twice.
    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    assert_eq!(pulls[0].edits, 1);
    let updated = p.events_of("PR_UPDATED");
    assert_eq!(updated.len(), 1, "{:#?}", p.events());
    assert_eq!(updated[0]["number"], pull.number);
    assert_eq!(rev(p.path(), "main"), base);
}

#[test]
fn a_rate_limit_is_waited_out_and_a_resumed_run_opens_the_request_once() {
    let server = GithubServer::start();
    let n = server.open_issue("Slow forge", "", &["ralph"]);
    let (p, remote) = project("  draft: true\n");
    server.fail_next("POST /repos/acme/widgets/pulls", Fault::RateLimitReset(600));

    let child = ralph(&p, &server, &["run", "--task", &n.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.wait_for("WAIT_STARTED", 1);
    let wait = &p.events_of("WAIT_STARTED")[0];
    assert!(
        wait["why"].as_str().unwrap().contains("rate limit"),
        "{wait:#?}"
    );
    assert!(server.pulls().is_empty());
    // SIGTERM stops the run in its wait (a first Ctrl+C would only cut the wait short).
    common::send_signal(child.id(), libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        p.run_ended()["reason"],
        "interrupted",
        "{}",
        common::stderr(&out)
    );
    assert!(server.pulls().is_empty());

    let out = run(&p, &server, &["run", "--resume"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    assert!(pulls[0].draft, "land.draft");
    assert_eq!(p.events_of("PR_OPENED").len(), 1, "{:#?}", p.events());
    let branch = format!("ralph/{n}");
    assert_eq!(remote_rev(&remote, &branch), Some(rev(p.path(), &branch)));
}

#[test]
fn a_request_a_person_closed_is_reported_and_left_closed_with_nothing_pushed() {
    let server = GithubServer::start();
    let n = server.open_issue("Turned down", "", &["ralph"]);
    let (p, remote) = project("");
    let out = run(&p, &server, &["run", "--task", &n.to_string()]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let number = server.pulls()[0].number;
    server.close_pull(number, false);
    let branch = format!("ralph/{n}");
    let pushed = remote_rev(&remote, &branch);
    // A new commit on the task's branch, which must not reach the remote.
    std::fs::write(p.path().join("more.txt"), "more\n").unwrap();
    git(p.path(), &["add", "more.txt"]);
    git(p.path(), &["commit", "-qm", "more"]);

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 1, "not reopened, no new one: {pulls:#?}");
    assert_eq!(pulls[0].state, "closed");
    assert_eq!(remote_rev(&remote, &branch), pushed, "nothing pushed");
    let closed = p.events_of("PR_CLOSED");
    assert_eq!(closed.len(), 1, "{:#?}", p.events());
    assert_eq!(closed[0]["state"], "closed");
    let warned = p.events_of("WARNING").iter().any(|w| {
        w["message"]
            .as_str()
            .unwrap()
            .contains("closed without being merged")
    });
    assert!(warned, "{:#?}", p.events_of("WARNING"));
}

#[test]
fn a_refused_push_is_an_error_naming_the_remote_and_the_branch_and_opens_nothing() {
    let server = GithubServer::start();
    let n = server.open_issue("Protected", "", &["ralph"]);
    let (p, remote) = project("");
    refuse_every_push(&remote);
    let base = rev(p.path(), "main");

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_ne!(common::code(&out), 0, "{}", common::stderr(&out));
    let said = format!("{}{:#?}", common::stderr(&out), p.events());
    assert!(
        said.contains("remote `origin`") && said.contains(&format!("branch `ralph/{n}`")),
        "{said}"
    );
    assert!(said.contains("protected: no pushes here"), "{said}");
    assert!(server.pulls().is_empty());
    assert_eq!(remote_rev(&remote, &format!("ralph/{n}")), None);
    assert_eq!(rev(p.path(), "main"), base);
}

#[test]
fn the_token_goes_to_an_https_remote_in_a_header_and_is_never_shown_nor_written() {
    let server = GithubServer::start();
    let n = server.open_issue("Over HTTP", "", &["ralph"]);
    // A git remote over HTTP that records what it is sent and refuses it.
    let seen: Arc<Mutex<Vec<Request>>> = Arc::default();
    let record = Arc::clone(&seen);
    let git_server = HttpServer::start(move |_, request| {
        record.lock().unwrap().push(request);
        Some(Reply::json(
            403,
            &serde_json::json!({"message": "Permission denied"}),
        ))
    });
    let url = format!("{}/acme/widgets.git", git_server.url());
    let p = pr_repo(&url, "");

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_ne!(common::code(&out), 0, "{}", common::stderr(&out));
    let said = common::stderr(&out);
    assert!(said.contains("remote `origin`"), "{said}");
    let requests = seen.lock().unwrap().clone();
    assert!(!requests.is_empty(), "git asked the remote");
    // x-access-token:<TOKEN>, base64.
    let credentials = format!("x-access-token:{TOKEN}");
    let expected = format!("Basic {}", base64(credentials.as_bytes()));
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some(expected.as_str())),
        "{requests:#?}"
    );
    assert!(!common::stdout(&out).contains(TOKEN));
    assert!(!said.contains(TOKEN));
    let holding = files_holding(p.path(), TOKEN);
    assert!(holding.is_empty(), "the token is written in {holding:?}");
    assert!(!git(p.path(), &["remote", "get-url", "origin"]).contains(TOKEN));
}

/// Standard base64, for the header the test expects.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            match i <= chunk.len() {
                true => out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char),
                false => out.push('='),
            }
        }
    }
    out
}

#[test]
fn land_pr_is_checked_at_load_naming_the_key_and_what_is_allowed() {
    let p = Project::new(
        "agent: sh agent.sh\nland:\n  pr: bitbucket\n  draft: maybe\n",
        "x\n",
    );
    let out = p.run(&["check"]);
    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    let said = common::stderr(&out);
    assert!(
        said.contains("land.pr: expected one of `github`, `gitlab`, got \"bitbucket\""),
        "{said}"
    );
    assert!(
        said.contains("land.draft: expected `true` or `false`"),
        "{said}"
    );
}

#[test]
fn land_pr_gitlab_without_a_gitlab_token_is_refused_before_anything_runs() {
    let server = GithubServer::start();
    let n = server.open_issue("On GitLab", "", &["ralph"]);
    let (p, _remote) = project("  repo: group/project\n");
    let text = std::fs::read_to_string(p.path().join("RALPH.md"))
        .unwrap()
        .replace("pr: github", "pr: gitlab");
    std::fs::write(p.path().join("RALPH.md"), text).unwrap();
    git(p.path(), &["commit", "-qam", "gitlab"]);

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("land.pr: gitlab")
            && common::stderr(&out).contains("GITLAB_TOKEN"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(
        git(p.path(), &["branch", "--show-current"]).trim(),
        "main",
        "nothing ran"
    );
}

#[test]
fn status_and_report_show_the_tasks_pull_request() {
    let server = GithubServer::start();
    let n = server.open_issue("Shown", "", &["ralph"]);
    let (p, _remote) = project("");
    let out = run(&p, &server, &["run", "--task", &n.to_string()]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let url = server.pulls()[0].url();

    let text = common::stdout(&p.run(&["status"]));
    assert!(
        text.contains(&format!("pull request for task {n}: {url} (open)")),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&common::stdout(&p.run(&["status", "--json"]))).unwrap();
    assert_eq!(json["pull_requests"][0]["url"], url, "{json:#}");
    assert_eq!(json["pull_requests"][0]["state"], "open");
    assert_eq!(json["pull_requests"][0]["task_id"], n.to_string());

    let out = p.run(&["report", "-o", "report.html"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let html = std::fs::read_to_string(p.path().join("report.html")).unwrap();
    assert!(
        html.contains(&format!("<a href=\"{url}\">")),
        "the report links it"
    );
}

#[test]
fn with_close_true_the_issue_closes_at_the_pass_and_its_request_keeps_its_title() {
    let server = GithubServer::start();
    let n = server.open_issue("Closed at the pass", "", &["ralph"]);
    let (p, _remote) = project("");
    let text = std::fs::read_to_string(p.path().join("RALPH.md"))
        .unwrap()
        .replace("close: false", "close: true");
    std::fs::write(p.path().join("RALPH.md"), text).unwrap();
    git(p.path(), &["commit", "-qam", "close issues"]);

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(!server.issue(n).open, "closed at the pass");
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    assert_eq!(pulls[0].title, "Closed at the pass");
    assert!(pulls[0].body.contains(&format!("Closes #{n}")));
}

#[test]
fn a_plain_run_with_land_pr_is_warned_and_opens_nothing() {
    let server = GithubServer::start();
    server.open_issue("Plain", "", &["ralph"]);
    let (p, remote) = project("");

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let warned = p.events_of("WARNING").iter().any(|w| {
        w["message"]
            .as_str()
            .unwrap()
            .contains("only `ralph run --task ID` and `ralph run --parallel N`")
    });
    assert!(warned, "{:#?}", p.events());
    assert!(server.pulls().is_empty());
    assert_eq!(remote_rev(&remote, "ralph/1"), None, "nothing pushed");
}

#[test]
fn a_5xx_or_a_dropped_connection_is_waited_out_with_the_failure_backoff_then_the_request_opens() {
    let server = GithubServer::start();
    let n = server.open_issue("Flaky forge", "", &["ralph"]);
    let (p, _remote) = project("");
    let text = std::fs::read_to_string(p.path().join("RALPH.md"))
        .unwrap()
        .replace(
            "land:\n",
            "failure:\n  delay: 10ms\n  max_delay: 40ms\n  max_consecutive: 10\nland:\n",
        );
    std::fs::write(p.path().join("RALPH.md"), text).unwrap();
    git(p.path(), &["commit", "-qam", "fast failure backoff"]);
    server.fail_next("GET /repos/acme/widgets/pulls", Fault::Status(502));
    server.fail_next("POST /repos/acme/widgets/pulls", Fault::Hangup);

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let waits: Vec<String> = p
        .events_of("WAIT_STARTED")
        .iter()
        .map(|w| format!("{} {}", w["reason"], w["why"]))
        .collect();
    assert_eq!(waits.len(), 2, "{waits:#?}");
    assert!(
        waits.iter().all(|w| w.starts_with("\"task\"")),
        "{waits:#?}"
    );
    assert!(waits[0].contains("502"), "{waits:#?}");
    assert_eq!(server.pulls().len(), 1, "opened once");
    assert_eq!(p.events_of("PR_OPENED").len(), 1);
}

#[test]
fn a_task_that_passes_on_its_last_allowed_iteration_still_lands() {
    let server = GithubServer::start();
    let n = server.open_issue("Just in time", "", &["ralph"]);
    let (p, _remote) = project("");

    let out = run(&p, &server, &["run", "--task", &n.to_string(), "-n", "1"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    assert_eq!(server.pulls().len(), 1, "{:#?}", p.events());
    assert_eq!(p.events_of("PR_OPENED").len(), 1);
}
