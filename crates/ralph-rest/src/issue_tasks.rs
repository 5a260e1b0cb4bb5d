//! Issues as a task list's tasks, the same on every forge: an issue's state by its labels, the
//! listed tasks with their placeholders (passed ones the forge lists no more kept, so a run
//! counts them), and a task id read as an issue's number.

use std::collections::BTreeMap;

use ralph_tasks::{ListedTask, TaskListError, TaskState};

use crate::words::{BLOCKED_LABEL, DONE_LABEL};

/// An issue as a task list reads it, whatever the forge.
pub trait TaskIssue {
    /// Its number in the repository or project.
    fn number(&self) -> u64;
    /// Its title.
    fn title(&self) -> &str;
    /// Its text.
    fn body(&self) -> &str;
    /// Its page on the forge.
    fn url(&self) -> &str;
    /// Whether it is closed.
    fn is_closed(&self) -> bool;
    /// Its labels.
    fn labels(&self) -> &[String];
}

/// The issue's task state: closed or `ralph:done` is passed, `ralph:blocked` blocked.
pub fn issue_state(issue: &impl TaskIssue) -> TaskState {
    let has = |label: &str| issue.labels().iter().any(|l| l == label);
    if issue.is_closed() || has(DONE_LABEL) {
        TaskState::Passed
    } else if has(BLOCKED_LABEL) {
        TaskState::Blocked
    } else {
        TaskState::Pending
    }
}

/// The first issue of `issues` (in run order) still to do: pending, and not passed in this run.
pub fn next_to_run<I: TaskIssue>(issues: &[I], passed: &BTreeMap<u64, String>) -> Option<u64> {
    issues
        .iter()
        .find(|i| issue_state(*i) == TaskState::Pending && !passed.contains_key(&i.number()))
        .map(TaskIssue::number)
}

/// `issues` (in run order) as tasks: their placeholders (`task.id`, `task.title`, `task.body`,
/// `task.url`, and `task.comments`, `comments` for issue `next` only), the list's order as the
/// priority, passed when `passed` in this run; then the issues passed in this run that the forge
/// lists no more (closed since), as passed, so the run's counts include them.
pub fn listed_tasks<I: TaskIssue>(
    issues: &[I],
    next: Option<u64>,
    comments: &str,
    passed: &BTreeMap<u64, String>,
) -> Vec<ListedTask> {
    let open = issues.iter().enumerate().map(|(order, issue)| {
        let n = issue.number();
        let mut task = ListedTask::new(n.to_string(), issue.title());
        let mut put = |name: &str, value: &str| {
            task.placeholders
                .insert(format!("task.{name}"), value.to_owned());
        };
        put("title", issue.title());
        put("body", issue.body());
        put("url", issue.url());
        put("id", &n.to_string());
        put("comments", if Some(n) == next { comments } else { "" });
        // Already in run order: the list's order is the priority.
        task.priority = order as f64;
        task.state = match passed.contains_key(&n) {
            true => TaskState::Passed,
            false => issue_state(issue),
        };
        task
    });
    let closed = passed
        .iter()
        .filter(|(n, _)| !issues.iter().any(|i| i.number() == **n))
        .enumerate()
        .map(|(i, (n, title))| {
            let mut task = ListedTask::new(n.to_string(), title.clone());
            task.priority = (issues.len() + i) as f64;
            task.state = TaskState::Passed;
            task
        });
    open.chain(closed).collect()
}

/// A task id as an issue's number; `forge` (`GitHub`, `GitLab`) names where it was looked for.
///
/// # Errors
/// [`TaskListError::NoSuchTask`] when it is not a number.
pub fn issue_number(task_id: &str, forge: &str) -> Result<u64, TaskListError> {
    task_id.parse().map_err(|_| TaskListError::NoSuchTask {
        location: forge.to_owned(),
        id: task_id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        number: u64,
        closed: bool,
        labels: Vec<String>,
    }

    impl TaskIssue for Fake {
        fn number(&self) -> u64 {
            self.number
        }
        fn title(&self) -> &str {
            "t"
        }
        fn body(&self) -> &str {
            "b"
        }
        fn url(&self) -> &str {
            "u"
        }
        fn is_closed(&self) -> bool {
            self.closed
        }
        fn labels(&self) -> &[String] {
            &self.labels
        }
    }

    fn fake(number: u64, closed: bool, labels: &[&str]) -> Fake {
        Fake {
            number,
            closed,
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        }
    }

    #[test]
    fn the_next_task_gets_the_comments_and_passed_ones_closed_since_are_kept() {
        let issues = [
            fake(3, false, &["ralph:blocked"]),
            fake(4, false, &[]),
            fake(5, false, &[]),
            fake(6, false, &["ralph:done"]),
        ];
        let passed = BTreeMap::from([(4, "four".to_owned()), (9, "nine".to_owned())]);
        let next = next_to_run(&issues, &passed);
        assert_eq!(next, Some(5));
        let tasks = listed_tasks(&issues, next, "c", &passed);
        let shown: Vec<(&str, TaskState, &str)> = tasks
            .iter()
            .map(|t| {
                let comments = t
                    .placeholders
                    .get("task.comments")
                    .map_or("-", String::as_str);
                (t.id.as_str(), t.state, comments)
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("3", TaskState::Blocked, ""),
                ("4", TaskState::Passed, ""),
                ("5", TaskState::Pending, "c"),
                ("6", TaskState::Passed, ""),
                ("9", TaskState::Passed, "-"),
            ]
        );
        assert_eq!(
            issue_state(&fake(1, true, &["ralph:blocked"])),
            TaskState::Passed
        );
        assert!(matches!(
            issue_number("x", "GitLab"),
            Err(TaskListError::NoSuchTask { location, .. }) if location == "GitLab"
        ));
    }
}
