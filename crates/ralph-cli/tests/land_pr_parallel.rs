//! `land.pr: github` with `--parallel`: the lanes run at once, the merge queue still merges the
//! base into each task's branch and runs the checks there first, then each passing task's
//! branch is pushed and opened as a pull request; the base stays as it was.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::github_server::{GithubServer, REPO, TOKEN};
use common::{Project, git, git_repo};
use serde_json::Value;

const AGENT: &str = r#"prompt=$(cat)
n=$(printf '%s\n' "$prompt" | sed -n 's/^ISSUE=//p')
echo "work for $n" > "issue-$n.txt"
echo '<!-- ralph:state done -->'
"#;

/// The coordinator's events.
fn parallel_events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join(".ralph/parallel/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn remote_rev(remote: &Path, branch: &str) -> Option<String> {
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

/// A repository whose tasks are the fake GitHub's issues, landing as pull requests pushed to a
/// bare repository of its own (`origin`, holding `main`); the bare repository's path.
fn pr_project() -> (Project, std::path::PathBuf) {
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ntasks:\n  github: {REPO}\n  label: ralph\n  close: false\n\
             done_when:\n  - 'ls issue-*.txt'\nland:\n  pr: github\n"
        ),
        "ISSUE={{ task.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), AGENT).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    let remote = dir.join(".ralph-test-remote.git");
    let made = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(&remote)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(dir.join(".git/info/exclude"), ".ralph-test-remote.git/\n").unwrap();
    git(dir, &["remote", "add", "origin", remote.to_str().unwrap()]);
    git(dir, &["push", "-q", "origin", "main"]);
    (p, remote)
}

fn run(p: &Project, server: &GithubServer, args: &[&str]) -> std::process::Output {
    p.ralph(args)
        .env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn each_passing_lane_is_checked_against_the_base_then_opened_as_a_pull_request() {
    let server = GithubServer::start();
    let first = server.open_issue("First", "", &["ralph"]);
    let second = server.open_issue("Second", "", &["ralph"]);
    let (p, remote) = pr_project();
    let dir = p.path();
    let base = git(dir, &["rev-parse", "main"]).trim().to_owned();

    let out = run(&p, &server, &["run", "--parallel", "2"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        git(dir, &["rev-parse", "main"]).trim(),
        base,
        "the base stays"
    );
    assert_eq!(remote_rev(&remote, "main").as_deref(), Some(base.as_str()));
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 2, "{pulls:#?}");
    let events = parallel_events(dir);
    for n in [first, second] {
        let branch = format!("ralph/{n}");
        let pull = pulls
            .iter()
            .find(|p| p.head == branch)
            .expect("a request per task");
        assert_eq!(pull.base, "main");
        assert!(pull.body.contains(&format!("Closes #{n}")), "{}", pull.body);
        assert!(
            pull.body.contains("`ls issue-*.txt`: passed"),
            "{}",
            pull.body
        );
        let pushed = remote_rev(&remote, &branch).expect("pushed");
        let file = format!("issue-{n}.txt");
        let shown = git(dir, &["show", &format!("{pushed}:{file}")]);
        assert_eq!(shown.trim(), format!("work for {n}"));
        // The queue's merge and checks came first.
        let id = n.to_string();
        let at = |kind: &str| {
            events
                .iter()
                .position(|e| e["type"] == kind && e["task_id"].as_str() == Some(id.as_str()))
        };
        let merged = at("MERGE_STARTED").expect("merged with the base first");
        let opened = at("PR_OPENED").expect("PR_OPENED");
        assert!(merged < opened, "{events:#?}");
        assert_eq!(events[opened]["url"], pull.url());
    }

    let status = common::stdout(&p.ralph(&["status"]).output().unwrap());
    for pull in &pulls {
        assert!(
            status.contains(&format!("pull request: {} (open)", pull.url())),
            "{status}"
        );
    }
    let out = p.ralph(&["report", "-o", "report.html"]).output().unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains(&pulls[0].url()),
        "the report links each request"
    );
}

#[test]
fn a_refused_push_keeps_the_task_on_its_branch_and_a_resume_opens_its_request() {
    let server = GithubServer::start();
    let n = server.open_issue("Protected", "", &["ralph"]);
    let (p, remote) = pr_project();
    let dir = p.path();
    let base = git(dir, &["rev-parse", "main"]).trim().to_owned();
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'protected: no pushes here' >&2\nexit 1\n",
    )
    .unwrap();
    let mut mode = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&hook, mode).unwrap();

    let out = run(&p, &server, &["run", "--parallel", "1"]);

    assert_ne!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(server.pulls().is_empty());
    let events = parallel_events(dir);
    let said: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "WARNING")
        .filter_map(|e| e["message"].as_str())
        .collect();
    let branch = format!("ralph/{n}");
    assert!(
        said.iter().any(|m| m.contains("remote `origin`")
            && m.contains(&format!("branch `{branch}`"))
            && m.contains("protected: no pushes here")),
        "{said:#?}"
    );
    assert_eq!(git(dir, &["rev-parse", "main"]).trim(), base);
    assert_eq!(remote_rev(&remote, &branch), None);

    std::fs::remove_file(&hook).unwrap();
    let out = run(&p, &server, &["run", "--parallel", "1", "--resume"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    assert_eq!(pulls[0].head, branch);
    assert_eq!(pulls[0].title, "Protected");
    assert!(remote_rev(&remote, &branch).is_some());
    assert_eq!(
        git(dir, &["rev-parse", "main"]).trim(),
        base,
        "the base stays"
    );
}
