//! GitHub issues as story mode's task list: [`GithubList`] implements escalation's
//! [`TaskList`], so issues get every story-mode guarantee (the breaker, the revert that saves
//! first, blocking with a reason, resume) and a person can answer the agent's question in the
//! issue itself.

use std::collections::{BTreeMap, BTreeSet};

use ralph_escalation::{Asked, ListedTask, Mark, TaskList, TaskListError, TaskState};
use serde_json::{Value, json};

use crate::issues::{self, BLOCKED_LABEL, DONE_LABEL};
use crate::{Client, Error, Issue, IssueState};

/// The open issues of a repository (with a label, when given) as tasks. A task's id is its
/// issue's number; its placeholders are `{{ task.id }}` (the number), `{{ task.title }}`,
/// `{{ task.body }}`, `{{ task.url }}` and `{{ task.comments }}` (read for the task about
/// to run only: one request per iteration, not one per issue).
#[derive(Debug)]
pub struct GithubList {
    client: Client,
    label: Option<String>,
    close: bool,
    /// The issues as last read, by number.
    seen: BTreeMap<u64, Issue>,
    /// Issues passed in this run: passed whatever GitHub says until it is told.
    passed: BTreeSet<u64>,
}

impl GithubList {
    /// The open issues `client` reads, only those labelled `label` when given; a passed issue
    /// is closed when `close`, else kept open with the `ralph:done` label.
    #[must_use]
    pub fn new(client: Client, label: Option<String>, close: bool) -> Self {
        Self {
            client,
            label,
            close,
            seen: BTreeMap::new(),
            passed: BTreeSet::new(),
        }
    }

    /// A pass on the issue: a comment naming the commit and the branch, then closed (or
    /// labelled `ralph:done`); nothing when it already is.
    fn report_pass(
        &mut self,
        n: u64,
        commit: Option<&str>,
        branch: Option<&str>,
    ) -> Result<(), TaskListError> {
        let issue = self.client.issue(n).map_err(list_error)?;
        let done = if self.close {
            issue.state == IssueState::Closed
        } else {
            issue.labels.iter().any(|l| l == DONE_LABEL)
        };
        if done {
            return Ok(());
        }
        let commits: Vec<&str> = commit.into_iter().collect();
        let body = issues::passed_comment(&commits, branch);
        self.client.post_comment(n, &body).map_err(list_error)?;
        if self.close {
            self.client.close_issue(n).map_err(list_error)
        } else {
            self.client.add_label(n, DONE_LABEL).map_err(list_error)
        }
    }
}

/// A network that stays down is a list that cannot be read now: a mark waits and is written
/// later, and no task is marked for it. Every other error ends the run, saying why.
fn list_error(err: Error) -> TaskListError {
    match err {
        Error::Unreachable { .. } => TaskListError::Unreadable(Box::new(err)),
        other => TaskListError::Failed(Box::new(other)),
    }
}

fn number(task_id: &str) -> Result<u64, TaskListError> {
    task_id.parse().map_err(|_| TaskListError::NoSuchTask {
        location: "GitHub".to_owned(),
        id: task_id.to_owned(),
    })
}

fn state(issue: &Issue) -> TaskState {
    let has = |label: &str| issue.labels.iter().any(|l| l == label);
    if issue.state == IssueState::Closed || has(DONE_LABEL) {
        TaskState::Passed
    } else if has(BLOCKED_LABEL) {
        TaskState::Blocked
    } else {
        TaskState::Pending
    }
}

impl TaskList for GithubList {
    fn kind(&self) -> &str {
        "github"
    }

    fn location(&self) -> String {
        match &self.label {
            Some(label) => format!("{} (label {label})", self.client.repo()),
            None => self.client.repo().to_string(),
        }
    }

    fn files(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    fn load(&mut self) -> Result<Vec<ListedTask>, TaskListError> {
        let issues = issues::run_order(
            self.client
                .open_issues(self.label.as_deref())
                .map_err(list_error)?,
        );
        let next = issues
            .iter()
            .find(|i| state(i) == TaskState::Pending && !self.passed.contains(&i.number))
            .map(|i| i.number);
        let comments = match next {
            Some(n) => issues::render_comments(&self.client.comments(n).map_err(list_error)?),
            None => String::new(),
        };
        self.seen = issues.iter().map(|i| (i.number, i.clone())).collect();
        Ok(issues
            .iter()
            .enumerate()
            .map(|(order, issue)| {
                let mut task = ListedTask::new(issue.number.to_string(), issue.title.clone());
                let mut put = |name: &str, value: String| {
                    task.placeholders.insert(format!("task.{name}"), value);
                };
                put("title", issue.title.clone());
                put("body", issue.body.clone());
                put("url", issue.url.clone());
                put("id", issue.number.to_string());
                put(
                    "comments",
                    if Some(issue.number) == next {
                        comments.clone()
                    } else {
                        String::new()
                    },
                );
                // Already in run order: the list's order is the priority.
                task.priority = order as f64;
                task.state = if self.passed.contains(&issue.number) {
                    TaskState::Passed
                } else {
                    state(issue)
                };
                task
            })
            .collect())
    }

    fn write_mark(&mut self, mark: &Mark) -> Result<(), TaskListError> {
        match mark {
            Mark::Passed {
                story_id,
                commit,
                branch,
            } => {
                let n = number(story_id)?;
                // Passed for this run from now on, even while GitHub cannot be told: the mark
                // waits in the session, and the task is not taken up again meanwhile.
                self.passed.insert(n);
                self.report_pass(n, commit.as_deref(), branch.as_deref())
            }
            Mark::Blocked {
                story_id,
                reason,
                saved_ref,
                ..
            } => {
                let n = number(story_id)?;
                let issue = self.client.issue(n).map_err(list_error)?;
                if issue.labels.iter().any(|l| l == BLOCKED_LABEL) {
                    return Ok(());
                }
                let body = issues::blocked_comment(reason, saved_ref.as_deref());
                self.client.post_comment(n, &body).map_err(list_error)?;
                self.client.add_label(n, BLOCKED_LABEL).map_err(list_error)
            }
            _ => Ok(()),
        }
    }

    /// The client's waits (rate limits, retries) since the last call, in words.
    fn take_warnings(&mut self) -> Vec<String> {
        self.client
            .take_notices()
            .into_iter()
            .map(|n| n.to_string())
            .collect()
    }

    fn ask(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let n = number(task_id)?;
        let posted = self
            .client
            .post_comment(n, &issues::question_comment(question))
            .map_err(list_error)?;
        let at = self
            .seen
            .get(&n)
            .map_or_else(|| posted.url.clone(), |i| i.url.clone());
        Ok(Asked::new(
            task_id,
            question,
            at,
            json!({ "comment": posted.id }),
        ))
    }

    fn answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let n = number(&asked.task_id)?;
        let Some(question) = asked.token.get("comment").and_then(Value::as_u64) else {
            return Ok(None);
        };
        let comments = self.client.comments(n).map_err(list_error)?;
        Ok(issues::answer_after(&comments, question))
    }
}
