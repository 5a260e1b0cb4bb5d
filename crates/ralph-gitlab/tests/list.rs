//! `GitlabList`, escalation's task list over GitLab issues, against the project's fake GitLab.

use ralph_test_support::gitlab_server;

use std::time::Duration;

use gitlab_server::{Fault, GitlabServer, PROJECT, TOKEN, USERNAME};
use ralph_backoff::FailurePolicy;
use ralph_gitlab::{Client, GitlabList, Token};
use ralph_tasks::{Mark, TaskList, TaskListError, TaskState};

const MS: Duration = Duration::from_millis(1);

/// A run's `failure:` of 10 ms doubling up to 40 ms, 3 in a row at most.
fn failure() -> FailurePolicy {
    FailurePolicy::new(10 * MS, 2.0, 40 * MS, 3)
}

fn list(server: &GitlabServer, label: Option<&str>, close: bool) -> GitlabList {
    let client = Client::new(server.url(), Token::new(TOKEN), PROJECT.parse().unwrap());
    GitlabList::new(
        client,
        label.map(str::to_owned),
        close,
        failure(),
        Duration::from_secs(3600),
    )
}

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
    let server = GitlabServer::start();
    let old = server.open_issue("Old", "old body", &["ralph"]);
    server.open_issue("Other", "", &["not-ralph"]);
    let urgent = server.open_issue("Urgent", "urgent body", &["ralph", "priority:1"]);
    let stuck = server.open_issue("Stuck", "", &["ralph", "ralph:blocked"]);
    server.note_as(urgent, "a-person", "mind the tests");
    server.close(old);
    server.open_issue("Reopened later", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), true);

    let tasks = list.load().unwrap();

    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [urgent.to_string(), stuck.to_string(), "5".to_owned()]);
    let states: Vec<TaskState> = tasks.iter().map(|t| t.state).collect();
    assert_eq!(
        states,
        [TaskState::Pending, TaskState::Blocked, TaskState::Pending]
    );
    let first = &tasks[0].placeholders;
    assert_eq!(first["task.title"], "Urgent");
    assert_eq!(first["task.body"], "urgent body");
    assert_eq!(first["task.id"], urgent.to_string());
    assert_eq!(
        first["task.url"],
        format!("https://gitlab.example/{PROJECT}/-/issues/{urgent}")
    );
    assert!(
        first["task.comments"].starts_with("a-person (")
            && first["task.comments"].ends_with("mind the tests"),
        "{first:?}"
    );
    assert_eq!(list.kind(), "gitlab");
    assert_eq!(list.location(), format!("{PROJECT} (label ralph)"));
}

#[test]
fn a_pass_is_a_note_naming_commit_and_branch_then_closed_once() {
    let server = GitlabServer::start();
    let n = server.open_issue("Do it", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), true);
    list.load().unwrap();

    list.write_mark(&passed(n, "abc1234", Some("refs/heads/main")))
        .unwrap();
    list.write_mark(&passed(n, "abc1234", Some("refs/heads/main")))
        .unwrap();

    assert!(!server.issue(n).open);
    let notes = server.notes(n);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(
        notes[0].body.contains("commit abc1234 on branch `main`"),
        "{notes:#?}"
    );
    let tasks = list.load().unwrap();
    assert_eq!(tasks.len(), 1, "a task passed in this run is still counted");
    assert_eq!(tasks[0].state, TaskState::Passed);
}

#[test]
fn close_false_labels_a_pass_and_a_block_gets_its_label_and_reason() {
    let server = GitlabServer::start();
    let done = server.open_issue("Keep open", "", &["ralph"]);
    let stuck = server.open_issue("Needs a key", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), false);
    list.load().unwrap();

    list.write_mark(&passed(done, "abc", None)).unwrap();
    list.write_mark(&blocked(
        stuck,
        "needs an API key",
        "refs/ralph/attempts/2/1",
    ))
    .unwrap();

    let kept = server.issue(done);
    assert!(
        kept.open && kept.labels.contains(&"ralph:done".to_owned()),
        "{kept:?}"
    );
    let stuck_issue = server.issue(stuck);
    assert!(stuck_issue.open && stuck_issue.labels.contains(&"ralph:blocked".to_owned()));
    let notes = server.notes(stuck);
    assert!(
        notes[0].body.contains("needs an API key")
            && notes[0].body.contains("refs/ralph/attempts/2/1"),
        "{notes:#?}"
    );
    let states: Vec<TaskState> = list.load().unwrap().iter().map(|t| t.state).collect();
    assert_eq!(states, [TaskState::Passed, TaskState::Blocked]);
}

#[test]
fn a_rate_limit_is_a_wait_until_its_reset_and_5xx_in_a_row_end_at_max_consecutive() {
    let server = GitlabServer::start();
    server.open_issue("Do it", "", &[]);
    server.fail_next("GET /api/v4/projects", Fault::RetryAfter(30));
    server.fail_later("GET /api/v4/projects", 0, 3, Fault::Status(500));
    let mut list = list(&server, None, true);

    let (limit, why) = retry_after(list.load().unwrap_err());
    assert_eq!(limit, Duration::from_secs(30));
    assert!(
        why.contains("GitLab rate limit") && why.contains("asking again in 30s"),
        "{why}"
    );
    let (first, why) = retry_after(list.load().unwrap_err());
    let (second, _) = retry_after(list.load().unwrap_err());
    assert_eq!((first, second), (10 * MS, 20 * MS));
    assert!(
        why.contains("HTTP 500") && why.contains("try 2 of 3"),
        "{why}"
    );
    let end = list.load().unwrap_err();
    assert!(
        matches!(&end, TaskListError::Unreadable(e) if e.to_string().contains("3 times in a row")),
        "{end:?}"
    );
    assert_eq!(list.load().unwrap().len(), 1, "GitLab answers again");
}

#[test]
fn a_question_is_a_note_and_a_persons_reply_is_the_answer_not_gitlabs_own_notes() {
    let server = GitlabServer::start();
    let n = server.open_issue("Pick one", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), true);
    list.load().unwrap();

    let asked = list.ask(&n.to_string(), "Which database?").unwrap();
    assert_eq!(list.answer(&asked).unwrap(), None);
    list.write_mark(&blocked(n, "waiting", "refs/x")).unwrap();
    assert_eq!(
        list.answer(&asked).unwrap(),
        None,
        "ralph's and GitLab's notes are no answer"
    );
    server.note_as(n, "a-person", "Postgres, please");

    assert_eq!(
        list.answer(&asked).unwrap().as_deref(),
        Some("Postgres, please")
    );
    let question = &server.notes(n)[0];
    assert_eq!(question.author, USERNAME);
    assert!(question.body.contains("**ralph asks:** Which database?"));
    assert_eq!(
        asked.at,
        format!(
            "https://gitlab.example/{PROJECT}/-/issues/{n}#note_{}",
            question.id
        )
    );
}

#[test]
fn an_issue_a_person_closes_while_ralph_waits_for_its_answer_is_no_task_any_more() {
    let server = GitlabServer::start();
    let n = server.open_issue("Pick one", "", &["ralph"]);
    let mut list = list(&server, Some("ralph"), true);
    list.load().unwrap();
    let asked = list.ask(&n.to_string(), "Which?").unwrap();

    server.close(n);

    let err = list.answer(&asked).unwrap_err();
    assert!(
        matches!(&err, TaskListError::NoSuchTask { id, .. } if *id == n.to_string()),
        "{err:?}"
    );
}
