//! GitLab issues beyond one loop through the list: `ralph run --parallel` (each issue landed,
//! then closed with a note naming its landing commit), `ralph run --task IID`, and `ralph tasks
//! --json`, through the real binary against the fake GitLab.

use crate::common;

use common::gitlab_server::{GitlabServer, PROJECT, TOKEN};
use common::{Project, git, git_repo, show};

fn issues_repo(extra: &str) -> Project {
    let p = Project::new(
        &format!("agent: sh agent.sh\ntasks:\n  gitlab: {PROJECT}\n  label: ralph\n{extra}"),
        "ISSUE={{ task.id }}\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        "n=$(sed -n 's/^ISSUE=//p')\necho \"work for $n\" > \"issue-$n.txt\"\necho '<!-- ralph:state done -->'\n",
    )
    .unwrap();
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(p.path());
    p
}

fn run(p: &Project, server: &GitlabServer, args: &[&str]) -> std::process::Output {
    p.ralph(args)
        .env("GITLAB_API_URL", server.url())
        .env("GITLAB_TOKEN", TOKEN)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ralph runs")
}

#[test]
fn issues_run_in_parallel_and_each_closes_with_a_note_naming_its_landing_commit() {
    let server = GitlabServer::start();
    let first = server.open_issue("First", "", &["ralph"]);
    let second = server.open_issue("Second", "", &["ralph"]);
    let p = issues_repo("done_when:\n  - 'ls issue-*.txt'\n");

    let out = run(&p, &server, &["run", "--parallel", "2"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    for n in [first, second] {
        let landed: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| {
                e["type"] == "TASK_LANDED" && e["task_id"].as_str() == Some(&*n.to_string())
            })
            .collect();
        assert_eq!(landed.len(), 1, "{n}: {events:#?}");
        let commit = landed[0]["commit"].as_str().unwrap();
        assert!(show(p.path(), commit, &format!("issue-{n}.txt")).is_some());
        assert!(!server.issue(n).open, "issue {n} closed");
        let notes = server.notes(n);
        assert!(
            notes
                .iter()
                .any(|c| c.body.contains(commit) && c.body.contains("main")),
            "issue {n}'s note names {commit} on main: {notes:#?}"
        );
    }
}

#[test]
fn run_task_takes_an_issue_number_and_passes_it_alone_on_its_branch() {
    let server = GitlabServer::start();
    let first = server.open_issue("First", "", &["ralph"]);
    let second = server.open_issue("Second", "", &["ralph"]);
    let p = issues_repo("");
    let id = second.to_string();

    let out = run(&p, &server, &["run", "--task", &id]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    let branch = format!("ralph/{id}");
    let head = git(p.path(), &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(head.trim(), branch);
    assert!(!server.issue(second).open, "passed and closed");
    assert!(server.issue(first).open, "the other issue is not taken up");
    let notes = server.notes(second);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].body.contains(&branch), "{notes:#?}");

    let unknown = run(&p, &server, &["run", "--task", "999"]);
    assert_eq!(common::code(&unknown), 2, "nothing ran");
    let err = common::stderr(&unknown);
    assert!(err.contains(PROJECT) && err.contains("\"999\""), "{err}");
}

#[test]
fn ralph_tasks_json_names_the_gitlab_source_and_project() {
    let server = GitlabServer::start();
    server.open_issue("Later", "", &["ralph"]);
    let urgent = server.open_issue("Urgent", "", &["ralph", "priority:0"]);
    server.open_issue("Stuck", "", &["ralph", "ralph:blocked"]);
    let p = issues_repo("");

    let out = run(&p, &server, &["tasks", "--json"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(json["source"], "gitlab");
    assert_eq!(json["location"], format!("{PROJECT} (label ralph)"));
    let tasks = json["tasks"].as_array().unwrap();
    let shown: Vec<(&str, &str)> = tasks
        .iter()
        .map(|t| (t["id"].as_str().unwrap(), t["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            (&*urgent.to_string(), "pending"),
            ("1", "pending"),
            ("3", "blocked")
        ]
    );
}

#[test]
fn ralph_plan_says_it_cannot_write_gitlab_issues_and_writes_nothing() {
    let server = GitlabServer::start();
    let p = issues_repo("");

    let out = run(&p, &server, &["plan", "-m", "Build a shop"]);

    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    let err = common::stderr(&out);
    assert!(
        err.contains("cannot write GitLab issues yet") && err.contains(PROJECT),
        "{err}"
    );
    assert!(server.requests().is_empty(), "GitLab was not asked");
}
