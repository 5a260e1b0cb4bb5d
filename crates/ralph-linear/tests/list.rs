//! `LinearList`, escalation's task list over a Linear team's issues, against the project's fake
//! Linear.

use ralph_test_support::linear_server;

use std::time::Duration;

use linear_server::{Fault, KEY, LinearServer, TEAM};
use ralph_backoff::FailurePolicy;
use ralph_linear::{Client, LinearList, Secret};
use ralph_tasks::{Mark, TaskList, TaskListError, TaskState};

const MS: Duration = Duration::from_millis(1);

/// A run's `failure:` of 10 ms doubling up to 40 ms, 3 in a row at most.
fn failure() -> FailurePolicy {
    FailurePolicy::new(10 * MS, 2.0, 40 * MS, 3)
}

fn list(server: &LinearServer, max_wait: Duration) -> LinearList {
    let client = Client::new(server.url(), Secret::new(KEY));
    LinearList::new(client, TEAM, Some("ralph".into()), failure(), max_wait)
}

fn retry_after(err: TaskListError) -> (Duration, String) {
    match err {
        TaskListError::RetryAfter { wait, why } => (wait, why),
        other => panic!("expected RetryAfter, got {other:?}"),
    }
}

#[test]
fn tasks_are_the_labelled_todo_issues_by_priority_with_their_placeholders() {
    let server = LinearServer::start();
    let low = server.open_issue("Low", "low body", &["ralph"], 4);
    let high = server.open_issue("High", "high body", &["ralph"], 2);
    let stuck = server.open_issue("Stuck", "", &["ralph", "ralph:blocked"], 1);
    let started = server.open_issue("Started", "", &["ralph"], 1);
    server.move_issue(&started, "In Progress");
    server.comment_as(&high, "a-person", "mind the tests");
    let mut list = list(&server, Duration::from_secs(3600));

    let tasks = list.load().unwrap();

    let ids: Vec<(&str, TaskState)> = tasks.iter().map(|t| (t.id.as_str(), t.state)).collect();
    assert_eq!(
        ids,
        [
            (stuck.as_str(), TaskState::Blocked),
            (high.as_str(), TaskState::Pending),
            (low.as_str(), TaskState::Pending)
        ]
    );
    let high_task = &tasks[1];
    assert_eq!(high_task.placeholders["task.body"], "high body");
    assert!(
        high_task.placeholders["task.comments"].contains("a-person (")
            && high_task.placeholders["task.comments"].contains("mind the tests"),
        "{:?}",
        high_task.placeholders
    );
    assert_eq!(
        tasks[2].placeholders["task.comments"], "",
        "read for the next task only"
    );
    assert_eq!(list.location(), "Linear team ENG (label ralph)");
}

#[test]
fn a_rate_limit_is_a_wait_capped_by_max_wait() {
    let server = LinearServer::start();
    server.fail_next("Issues", Fault::RateLimited(600_000));
    let mut list = list(&server, 50 * MS);

    let (wait, why) = retry_after(list.load().unwrap_err());

    assert_eq!(wait, 50 * MS);
    assert!(
        why.contains("Linear rate limit") && why.contains("asking again in 50ms"),
        "{why}"
    );
    assert!(list.load().is_ok(), "then Linear answers");
}

#[test]
fn answers_5xx_in_a_row_are_the_backoffs_waits_then_the_list_is_unreadable() {
    let server = LinearServer::start();
    server.fail_later("Viewer", 0, 3, Fault::Status(503));
    let mut list = list(&server, Duration::from_secs(3600));

    let waits: Vec<Duration> = (0..2)
        .map(|_| retry_after(list.load().unwrap_err()).0)
        .collect();
    let third = list.load().unwrap_err();

    assert_eq!(waits, [10 * MS, 20 * MS]);
    assert!(
        matches!(&third, TaskListError::Unreadable(err) if err.to_string().contains("3 times in a row")),
        "{third:?}"
    );
}

#[test]
fn a_pass_comments_and_moves_to_the_first_completed_state_once() {
    let server = LinearServer::start();
    let n = server.open_issue("Task", "", &["ralph"], 0);
    let mut list = list(&server, Duration::from_secs(3600));
    list.load().unwrap();
    let mark: Mark = serde_json::from_value(serde_json::json!({
        "mark": "passed", "story_id": n, "commit": "abc1234", "branch": "refs/heads/main",
    }))
    .unwrap();

    list.write_mark(&mark).unwrap();
    list.write_mark(&mark).unwrap();

    assert_eq!(server.state_of(&n), "Done");
    let comments = server.comments(&n);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(
        comments[0]
            .body
            .contains("commit `abc1234` on branch `main`, and moves it to Done"),
        "{comments:#?}"
    );
    let tasks = list.load().unwrap();
    assert_eq!(tasks.len(), 1, "still counted once moved: {tasks:?}");
    assert_eq!(tasks[0].state, TaskState::Passed);
}

#[test]
fn a_question_on_an_issue_a_person_moved_meanwhile_is_no_such_task() {
    let server = LinearServer::start();
    let n = server.open_issue("Task", "", &["ralph"], 0);
    let mut list = list(&server, Duration::from_secs(3600));
    list.load().unwrap();
    let asked = list.ask(&n, "Which one?").unwrap();
    assert_eq!(asked.at, "https://linear.app/acme/issue/eng-1");
    assert_eq!(list.answer(&asked).unwrap(), None);

    server.move_issue(&n, "In Progress");
    // The issue itself is read at one look in three.
    let err = (0..3).find_map(|_| list.answer(&asked).err()).unwrap();

    assert!(matches!(err, TaskListError::NoSuchTask { .. }), "{err:?}");
}

#[test]
fn a_mark_tried_again_after_linear_failed_to_move_or_label_is_commented_once() {
    let server = LinearServer::start();
    let done = server.open_issue("Passes", "", &["ralph"], 0);
    let stuck = server.open_issue("Blocks", "", &["ralph"], 0);
    server.fail_next("IssueMove", Fault::Status(500));
    server.fail_next("IssueAddLabel", Fault::Status(502));
    let mut list = list(&server, Duration::from_secs(3600));
    list.load().unwrap();
    let pass: Mark = serde_json::from_value(serde_json::json!({
        "mark": "passed", "story_id": done, "commit": "abc1234",
    }))
    .unwrap();
    let block: Mark = serde_json::from_value(serde_json::json!({
        "mark": "blocked", "story_id": stuck, "notes": "", "reason": "same error 3 times",
    }))
    .unwrap();

    for mark in [&pass, &block] {
        retry_after(list.write_mark(mark).unwrap_err());
        list.write_mark(mark).unwrap();
    }

    assert_eq!(server.state_of(&done), "Done");
    assert!(
        server
            .issue(&stuck)
            .labels
            .contains(&"ralph:blocked".to_owned())
    );
    for issue in [&done, &stuck] {
        assert_eq!(
            server.comments(issue).len(),
            1,
            "{:#?}",
            server.comments(issue)
        );
    }
}

#[test]
fn a_block_uses_the_blocked_label_the_workspace_has_and_makes_none() {
    let server = LinearServer::start();
    // Another team's label of the same name is not this team's to use.
    server.make_label("ralph:blocked", Some(linear_server::OTHER_TEAM));
    server.make_label("ralph:blocked", None);
    let n = server.open_issue("Blocks", "", &["ralph"], 0);
    let mut list = list(&server, Duration::from_secs(3600));
    list.load().unwrap();
    let block: Mark = serde_json::from_value(serde_json::json!({
        "mark": "blocked", "story_id": n, "notes": "", "reason": "needs a person",
    }))
    .unwrap();

    list.write_mark(&block).unwrap();

    assert!(
        server
            .issue(&n)
            .labels
            .contains(&"ralph:blocked".to_owned())
    );
    assert!(!server.operations().iter().any(|o| o == "LabelCreate"));
    let added = server
        .asked()
        .into_iter()
        .find(|a| a.operation == "IssueAddLabel")
        .unwrap();
    let workspace = server
        .labels()
        .into_iter()
        .find(|l| l.name == "ralph:blocked" && l.team.is_none())
        .unwrap();
    assert_eq!(added.variables["labelId"], workspace.id.as_str());
}

#[test]
fn a_team_without_a_completed_state_is_an_error_at_the_start() {
    let server = LinearServer::start();
    server.open_issue("Task", "", &["ralph"], 0);
    server.drop_completed_states();
    let mut list = list(&server, Duration::from_secs(3600));

    let err = list.load().unwrap_err();

    assert!(matches!(err, TaskListError::Failed(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Linear team ENG has no workflow state of type `completed` for a passed issue; add one \
         in the team's settings (Workflow)"
    );
    assert!(
        !server.operations().iter().any(|o| o == "Issues"),
        "no task read"
    );
}
