//! `GithubList`, escalation's task list over GitHub issues, against the project's fake GitHub.

use ralph_test_support::github_server;

use std::time::Duration;

use github_server::{Fault, GithubServer, REPO, TOKEN};
use ralph_backoff::FailurePolicy;
use ralph_github::{Client, GithubList, Token};
use ralph_tasks::{Mark, TaskList, TaskListError, TaskState};

const MS: Duration = Duration::from_millis(1);

/// A run's `failure:` of 10 ms doubling up to 40 ms, 3 in a row at most.
fn failure() -> FailurePolicy {
    FailurePolicy::new(10 * MS, 2.0, 40 * MS, 3)
}

fn list(server: &GithubServer, label: Option<&str>, close: bool) -> GithubList {
    let client = Client::new(server.url(), Token::new(TOKEN), REPO.parse().unwrap());
    GithubList::new(
        client,
        label.map(str::to_owned),
        close,
        failure(),
        Duration::from_secs(3600),
    )
}

/// The wait a "not now" asks for, and why.
fn retry_after(err: TaskListError) -> (Duration, String) {
    match err {
        TaskListError::RetryAfter { wait, why } => (wait, why),
        other => panic!("expected RetryAfter, got {other:?}"),
    }
}

fn passed(id: u64, commit: &str, branch: Option<&str>) -> Mark {
    serde_json::from_value(serde_json::json!({
        "mark": "passed", "story_id": id.to_string(), "commit": commit, "branch": branch,
    }))
    .unwrap()
}

fn blocked(id: u64, reason: &str, saved_ref: &str) -> Mark {
    serde_json::from_value(serde_json::json!({
        "mark": "blocked", "story_id": id.to_string(), "notes": "", "reason": reason,
        "saved_ref": saved_ref,
    }))
    .unwrap()
}

#[test]
fn tasks_are_the_labelled_open_issues_by_priority_then_age_with_their_placeholders() {
    let server = GithubServer::start();
    let old = server.open_issue("Old", "old body", &["ralph"]);
    server.open_issue("Other", "", &["not-ralph"]);
    let urgent = server.open_issue("Urgent", "urgent body", &["ralph", "priority:1"]);
    let stuck = server.open_issue("Stuck", "", &["ralph", "ralph:blocked"]);
    server.comment_as(urgent, "a-person", "mind the tests");
    let mut list = list(&server, Some("ralph"), true);

    let tasks = list.load().unwrap();

    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [urgent.to_string(), old.to_string(), stuck.to_string()]
    );
    let states: Vec<TaskState> = tasks.iter().map(|t| t.state).collect();
    assert_eq!(
        states,
        [TaskState::Pending, TaskState::Pending, TaskState::Blocked]
    );
    let first = &tasks[0].placeholders;
    assert_eq!(first["task.title"], "Urgent");
    assert_eq!(first["task.body"], "urgent body");
    assert_eq!(
        first["task.url"],
        format!("https://github.com/{REPO}/issues/{urgent}")
    );
    assert!(first["task.comments"].contains("a-person"), "{first:?}");
    assert!(
        first["task.comments"].contains("mind the tests"),
        "{first:?}"
    );
    let comment_reads = server
        .requests()
        .iter()
        .filter(|r| r.path.contains("/comments"))
        .count();
    assert_eq!(comment_reads, 1, "only the next task's comments are read");
    assert_eq!(list.kind(), "github");
    assert!(list.files().is_empty());
}

#[test]
fn a_pass_comments_with_commit_and_branch_and_closes_once() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), true);
    let mark = passed(n, "abc1234", Some("main"));

    list.write_mark(&mark).unwrap();
    list.write_mark(&mark).unwrap();

    assert!(!server.issue(n).open);
    let comments = server.comments(n);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].body.contains("abc1234") && comments[0].body.contains("`main`"));
}

#[test]
fn close_false_labels_a_passed_issue_done_and_leaves_it_open() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &[]);
    let mut list = list(&server, None, false);
    list.write_mark(&passed(n, "abc1234", None)).unwrap();

    let issue = server.issue(n);
    assert!(issue.open);
    assert_eq!(issue.labels, ["ralph:done"]);
    assert_eq!(list.load().unwrap()[0].state, TaskState::Passed);
}

#[test]
fn a_pass_github_did_not_hear_of_is_still_passed_for_the_run() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    let other = server.open_issue("Other", "", &["ralph"]);
    server.fail_next("GET /repos", Fault::Status(502));
    let mut list = list(&server, Some("ralph"), true);

    let err = list
        .write_mark(&passed(n, "abc1234", Some("main")))
        .unwrap_err();
    let tasks = list.load().unwrap();

    assert!(matches!(err, TaskListError::RetryAfter { .. }), "{err:?}");
    assert!(server.issue(n).open, "GitHub was not told");
    let states: Vec<(String, TaskState)> = tasks.iter().map(|t| (t.id.clone(), t.state)).collect();
    assert_eq!(
        states,
        [
            (n.to_string(), TaskState::Passed),
            (other.to_string(), TaskState::Pending)
        ]
    );
    list.write_mark(&passed(n, "abc1234", Some("main")))
        .unwrap();
    assert!(!server.issue(n).open, "told once GitHub answers");
}

#[test]
fn a_block_labels_the_issue_and_says_why_and_where_the_work_is_once() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), true);
    let mark = blocked(n, "same error 3 times", "refs/ralph/attempts/1/1");

    list.write_mark(&mark).unwrap();
    list.write_mark(&mark).unwrap();

    let issue = server.issue(n);
    assert!(issue.open);
    assert!(issue.labels.contains(&"ralph:blocked".to_owned()));
    let comments = server.comments(n);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].body.contains("same error 3 times"));
    assert!(comments[0].body.contains("refs/ralph/attempts/1/1"));
}

#[test]
fn a_question_is_a_comment_and_the_answer_is_the_next_comment_not_ralphs() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), true);
    list.load().unwrap();

    let asked = list.ask(&n.to_string(), "Postgres or SQLite?").unwrap();

    assert_eq!(asked.at, format!("https://github.com/{REPO}/issues/{n}"));
    assert!(server.comments(n)[0].body.contains("Postgres or SQLite?"));
    assert_eq!(list.answer(&asked).unwrap(), None);
    server.comment_as(n, "a-person", "Postgres");
    assert_eq!(list.answer(&asked).unwrap().as_deref(), Some("Postgres"));
}

#[test]
fn github_out_of_reach_asks_for_the_runs_failure_backoff_then_is_unreadable_and_marks_nothing() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    for _ in 0..3 {
        server.fail_next("GET /repos", Fault::Status(503));
    }
    let mut list = list(&server, Some("ralph"), true);
    let mark = blocked(n, "why", "refs/x");

    let (first, why) = retry_after(list.write_mark(&mark).unwrap_err());
    let (second, _) = retry_after(list.write_mark(&mark).unwrap_err());
    let third = list.write_mark(&mark).unwrap_err();

    assert_eq!([first, second], [10 * MS, 20 * MS]);
    assert!(why.contains("503") && why.contains("try 2 of 3"), "{why}");
    assert!(matches!(third, TaskListError::Unreadable(_)), "{third:?}");
    assert!(third.to_string().contains("3 times in a row"), "{third}");
    assert!(server.comments(n).is_empty());
    assert!(!server.issue(n).labels.contains(&"ralph:blocked".to_owned()));
    list.write_mark(&mark).unwrap();
    assert_eq!(server.comments(n).len(), 1, "written once GitHub answers");
}

#[test]
fn a_rate_limit_asks_for_a_wait_until_its_reset_at_most_max_wait() {
    let server = GithubServer::start();
    server.open_issue("Task", "", &[]);
    server.fail_next("GET /repos", Fault::RetryAfter(7));
    server.fail_next("GET /repos", Fault::RateLimitReset(3000));
    let client = Client::new(server.url(), Token::new(TOKEN), REPO.parse().unwrap());
    let mut list = GithubList::new(client, None, true, failure(), Duration::from_secs(60));

    let (wait, why) = retry_after(list.load().unwrap_err());
    let (capped, _) = retry_after(list.load().unwrap_err());

    assert_eq!(wait, Duration::from_secs(7));
    assert!(why.contains("rate limit") && why.contains("429"), "{why}");
    assert_eq!(capped, Duration::from_secs(60), "rate_limit.max_wait");
    assert_eq!(list.load().unwrap().len(), 1);
}

#[test]
fn a_refused_token_ends_the_run() {
    let server = GithubServer::start();
    let client = Client::new(server.url(), Token::new("wrong"), REPO.parse().unwrap());
    let mut list = GithubList::new(client, None, true, failure(), Duration::from_secs(60));

    let err = list.load().unwrap_err();

    assert!(matches!(err, TaskListError::Failed(_)), "{err:?}");
    assert!(err.to_string().contains("401"), "{err}");
}
