//! `land.pr: gitlab`: a `--task` that passes is pushed as `ralph/<id>` to a remote (a local
//! bare repository here) and opened as a merge request on the fake GitLab, into the branch it
//! started from; the base stays as it was, a re-run updates the one request, a refused push is
//! an error naming the remote and the branch, and a request a person closed is reported and
//! left closed.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::gitlab_server::{GitlabServer, PROJECT, TOKEN};
use common::{Project, git, git_repo};

use crate::land_pr::{refuse_every_push, remote_rev};

/// The agent: a file for the issue, then `done`; the check passes once the file is there.
const AGENT: &str = r#"prompt=$(cat)
n=$(printf '%s\n' "$prompt" | sed -n 's/^ISSUE=//p')
echo "work for $n" > "issue-$n.txt"
echo '<!-- ralph:state done -->'
"#;

/// A repository whose tasks are the fake GitLab's issues labelled `ralph` (kept open when they
/// pass: the request's `Closes #N` closes them), landing as merge requests pushed to `origin`,
/// a bare repository of its own holding `main`.
fn project() -> (Project, PathBuf) {
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ntasks:\n  gitlab: {PROJECT}\n  label: ralph\n  close: false\n\
             done_when:\n  - 'ls issue-*.txt'\nland:\n  pr: gitlab\n"
        ),
        "ISSUE={{ task.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), AGENT).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    let remote = dir.join(".ralph-test-remote.git");
    let out = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(&remote)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(dir.join(".git/info/exclude"), ".ralph-test-remote.git/\n").unwrap();
    git(dir, &["remote", "add", "origin", remote.to_str().unwrap()]);
    git(dir, &["push", "-q", "origin", "main"]);
    (p, remote)
}

fn run(p: &Project, server: &GitlabServer, args: &[&str]) -> Output {
    p.ralph(args)
        .env("GITLAB_API_URL", server.url())
        .env("GITLAB_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .output()
        .expect("ralph runs")
}

fn rev(dir: &Path, name: &str) -> String {
    git(dir, &["rev-parse", name]).trim().to_owned()
}

#[test]
fn a_passing_task_is_pushed_and_opened_as_one_merge_request_and_the_base_stays_as_it_was() {
    let server = GitlabServer::start();
    let n = server.open_issue("Add the widget", "", &["ralph"]);
    let (p, remote) = project();
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
    let requests = server.merge_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let request = &requests[0];
    assert_eq!(
        (
            request.source_branch.as_str(),
            request.target_branch.as_str()
        ),
        (branch.as_str(), "main")
    );
    assert_eq!(request.title, "Add the widget");
    for said in [
        "in 1 iteration",
        "`ls issue-*.txt`: passed",
        &format!("Closes #{n}"),
    ] {
        assert!(
            request.description.contains(said),
            "{said:?} in {}",
            request.description
        );
    }
    let opened = p.events_of("PR_OPENED");
    assert_eq!(opened.len(), 1, "{:#?}", p.events());
    assert_eq!(opened[0]["number"], request.iid);
    assert_eq!(opened[0]["state"], "open");
    assert!(
        opened[0]["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/-/merge_requests/{}", request.iid)),
        "{:#?}",
        opened[0]
    );
    let shown = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(!shown.contains(TOKEN), "the token is never shown: {shown}");

    // Again: the open request is found by its branch and updated, not opened twice.
    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(server.merge_requests().len(), 1);
    assert_eq!(p.events_of("PR_UPDATED").len(), 1, "{:#?}", p.events());
    assert_eq!(rev(p.path(), "main"), base);
}

#[test]
fn a_merge_request_a_person_closed_is_reported_and_left_closed() {
    let server = GitlabServer::start();
    let n = server.open_issue("Turned down", "", &["ralph"]);
    let (p, _remote) = project();
    let branch = format!("ralph/{n}");
    server.add_merge_request(&branch, "main", "Turned down", "closed");

    let out = run(&p, &server, &["run", "--task", &n.to_string()]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let requests = server.merge_requests();
    assert_eq!(
        requests.len(),
        1,
        "not reopened, no second one: {requests:#?}"
    );
    assert_eq!(requests[0].state, "closed");
    assert_eq!(p.events_of("PR_CLOSED").len(), 1, "{:#?}", p.events());
    assert!(p.events_of("PR_OPENED").is_empty());
}

#[test]
fn a_refused_push_is_an_error_naming_the_remote_and_the_branch_and_opens_nothing() {
    let server = GitlabServer::start();
    let n = server.open_issue("Protected", "", &["ralph"]);
    let (p, remote) = project();
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
    assert!(server.merge_requests().is_empty());
    assert_eq!(remote_rev(&remote, &format!("ralph/{n}")), None);
    assert_eq!(rev(p.path(), "main"), base);
}
