//! A Linear team's issues as story mode's task list: [`LinearList`] implements ralph-tasks'
//! [`TaskList`], so issues get every story-mode guarantee (the breaker, the revert that saves
//! first, blocking with a reason, resume) and a person can answer the agent's question in the
//! issue itself.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ralph_backoff::FailurePolicy;
use ralph_rest::{SharedFailures, Waits};
use ralph_tasks::{Asked, ListedTask, Mark, TaskList, TaskListError, TaskState};
use serde_json::{Value, json};

use crate::words::{self, BLOCKED_LABEL};
use crate::{Client, Comment, Error, Issue, Team, User, WorkflowState};

/// The workflow-state type of the issues that are tasks.
const UNSTARTED: &str = "unstarted";

/// While ralph waits for an answer, one look in this many also reads the issue, to see it
/// moved out of its unstarted state (or its label taken off) by a person.
const ISSUE_EVERY: u64 = 3;

/// What the list learns of Linear once, at its first request: who the key is (a bad key is
/// said there, at the start), the team, the state a passed issue moves to.
#[derive(Debug, Clone)]
struct Setting {
    ralph: User,
    team: Team,
    done: WorkflowState,
}

/// A Linear team's issues in an `unstarted` state (Todo), with a label when given, as tasks.
/// A task's id is its issue's identifier (`ENG-12`); its placeholders are `{{ task.id }}`,
/// `{{ task.title }}`, `{{ task.body }}` (the description), `{{ task.url }}` and
/// `{{ task.comments }}` (read for the task about to run only).
///
/// A pass comments and moves the issue to the team's first `completed` state; a block
/// comments and adds the `ralph:blocked` label (created in the team when missing). An issue a
/// person moves out of its unstarted state, or cancels, leaves the list.
///
/// It never waits itself: a rate limit and a network error or a 5xx come back as
/// [`TaskListError::RetryAfter`], for escalation to have the engine wait.
#[derive(Debug)]
pub struct LinearList {
    client: Client,
    /// The team's key, as `tasks.linear` gives it.
    team_key: String,
    label: Option<String>,
    /// What Linear's errors mean to the run: the `failure:` backoff for network errors and
    /// 5xx answers (counted in a row with the run's other lists), a rate limit's wait capped
    /// by `rate_limit.max_wait`.
    waits: Waits,
    setting: Option<Setting>,
    /// The `ralph:blocked` label's id, once found or made.
    blocked_label: Option<String>,
    /// The issues as last read, by identifier.
    seen: BTreeMap<String, Issue>,
    /// Issues passed in this run, with their titles: passed whatever Linear says until it is
    /// told, and still listed (as passed) once moved to done, so the run's counts include them.
    passed: BTreeMap<String, String>,
    /// Looks for an answer so far: every [`ISSUE_EVERY`]th also reads the issue itself.
    answer_looks: u64,
    /// The marks whose comment is posted, by `Mark`'s words (`ENG-1 passes`): a mark tried
    /// again after Linear failed to move or label the issue is not commented twice.
    commented: BTreeSet<String>,
}

impl LinearList {
    /// The unstarted issues of the team whose key is `team`, only those labelled `label` when
    /// given. A network error or a 5xx asks for the wait `failure` gives (the run's
    /// `failure:`), and ends the run at `failure.max_consecutive` in a row; a rate limit asks
    /// for a wait until its reset, at most `max_wait` (the run's `rate_limit.max_wait`).
    #[must_use]
    pub fn new(
        client: Client,
        team: impl Into<String>,
        label: Option<String>,
        failure: FailurePolicy,
        max_wait: Duration,
    ) -> Self {
        Self {
            client,
            team_key: team.into(),
            label,
            waits: Waits::new(failure, max_wait),
            setting: None,
            blocked_label: None,
            seen: BTreeMap::new(),
            passed: BTreeMap::new(),
            answer_looks: 0,
            commented: BTreeSet::new(),
        }
    }

    /// The same list counting its failures in a row in `failures`, with the other lists of the
    /// run: a run's start makes more than one (`--task` checks the task, then opens the run).
    #[must_use]
    pub fn sharing_failures(mut self, failures: SharedFailures) -> Self {
        self.waits.share_failures(failures);
        self
    }

    /// The key's account, the team and its done state: asked of Linear once.
    fn setting(&mut self) -> Result<Setting, TaskListError> {
        if let Some(setting) = &self.setting {
            return Ok(setting.clone());
        }
        let ralph = self.client.viewer().map_err(list_error)?;
        let team = self.client.team(&self.team_key).map_err(list_error)?;
        let states = self.client.states(&team.id).map_err(list_error)?;
        let done = states
            .into_iter()
            .filter(|s| s.kind == "completed")
            .min_by(|a, b| a.position.total_cmp(&b.position))
            .ok_or_else(|| {
                list_error(Error::NoDoneState {
                    team: team.key.clone(),
                })
            })?;
        Ok(self.setting.insert(Setting { ralph, team, done }).clone())
    }

    /// `body` posted on the issue.
    fn post(&mut self, issue_id: &str, body: &str) -> Result<Comment, TaskListError> {
        self.client.post_comment(issue_id, body).map_err(list_error)
    }

    /// `body` posted on the issue for `mark`, unless this run posted it already.
    fn post_once(&mut self, mark: &Mark, issue_id: &str, body: &str) -> Result<(), TaskListError> {
        let key = mark.to_string();
        if !self.commented.contains(&key) {
            self.post(issue_id, body)?;
            self.commented.insert(key);
        }
        Ok(())
    }

    /// The `ralph:blocked` label's id: the team's (or the workspace's), made in the team when
    /// there is none.
    fn blocked_label(&mut self, team_id: &str) -> Result<String, TaskListError> {
        if let Some(id) = &self.blocked_label {
            return Ok(id.clone());
        }
        let label = match self
            .client
            .label(team_id, BLOCKED_LABEL)
            .map_err(list_error)?
        {
            Some(label) => label,
            None => self
                .client
                .create_label(team_id, BLOCKED_LABEL)
                .map_err(list_error)?,
        };
        Ok(self.blocked_label.insert(label.id).clone())
    }

    /// A pass on the issue: a comment naming the commit and the branch, then moved to the
    /// team's done state; nothing when a person already finished or cancelled it.
    fn report_pass(
        &mut self,
        mark: &Mark,
        identifier: &str,
        commit: Option<&str>,
        branch: Option<&str>,
    ) -> Result<(), TaskListError> {
        let setting = self.setting()?;
        let issue = self.client.issue(identifier).map_err(list_error)?;
        if matches!(issue.state.kind.as_str(), "completed" | "canceled") {
            return Ok(());
        }
        let body = words::passed_comment(commit, branch, &setting.done.name);
        self.post_once(mark, &issue.id, &body)?;
        self.client
            .move_issue(&issue.id, &setting.done.id)
            .map_err(list_error)
    }

    /// What `outcome` means to escalation: see [`Waits::settle`].
    fn settle<T>(&mut self, outcome: Result<T, TaskListError>) -> Result<T, TaskListError> {
        self.waits.settle::<T, Error>(outcome)
    }
}

/// Every client error as [`TaskListError::Failed`], for [`LinearList::settle`] to sort.
fn list_error(err: Error) -> TaskListError {
    TaskListError::Failed(Box::new(err))
}

fn state(issue: &Issue) -> TaskState {
    if issue.labels.iter().any(|l| l == BLOCKED_LABEL) {
        TaskState::Blocked
    } else {
        TaskState::Pending
    }
}

impl TaskList for LinearList {
    fn kind(&self) -> &str {
        "linear"
    }

    fn location(&self) -> String {
        match &self.label {
            Some(label) => format!("Linear team {} (label {label})", self.team_key),
            None => format!("Linear team {}", self.team_key),
        }
    }

    fn files(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    fn load(&mut self) -> Result<Vec<ListedTask>, TaskListError> {
        let outcome = self.read_tasks();
        self.settle(outcome)
    }

    fn write_mark(&mut self, mark: &Mark) -> Result<(), TaskListError> {
        let outcome = self.write(mark);
        self.settle(outcome)
    }

    fn can_ask(&self) -> bool {
        true
    }

    fn ask(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let outcome = self.put_question(task_id, question);
        self.settle(outcome)
    }

    fn answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let outcome = self.read_answer(asked);
        self.settle(outcome)
    }
}

impl LinearList {
    /// The unstarted issues as tasks, by one try at each request.
    fn read_tasks(&mut self) -> Result<Vec<ListedTask>, TaskListError> {
        let setting = self.setting()?;
        let issues = words::run_order(
            self.client
                .unstarted_issues(&setting.team.id, self.label.as_deref())
                .map_err(list_error)?,
        );
        let next = issues
            .iter()
            .find(|i| state(i) == TaskState::Pending && !self.passed.contains_key(&i.identifier))
            .map(|i| i.id.clone());
        let comments = match &next {
            Some(id) => {
                let comments = self.client.comments(id).map_err(list_error)?;
                words::render_comments(&comments, &setting.ralph.id)
            }
            None => String::new(),
        };
        self.seen = issues
            .iter()
            .map(|i| (i.identifier.clone(), i.clone()))
            .collect();
        // Passed in this run and moved to done since: Linear lists them no more, the run still
        // counts them.
        let done: Vec<ListedTask> = self
            .passed
            .iter()
            .filter(|(id, _)| !self.seen.contains_key(*id))
            .enumerate()
            .map(|(i, (id, title))| {
                let mut task = ListedTask::new(id.clone(), title.clone());
                task.priority = (issues.len() + i) as f64;
                task.state = TaskState::Passed;
                task
            })
            .collect();
        let listed = issues.iter().enumerate().map(|(order, issue)| {
            let mut task = ListedTask::new(issue.identifier.clone(), issue.title.clone());
            let mut put = |name: &str, value: String| {
                task.placeholders.insert(format!("task.{name}"), value);
            };
            put("id", issue.identifier.clone());
            put("title", issue.title.clone());
            put("body", issue.description.clone());
            put("url", issue.url.clone());
            put(
                "comments",
                if next.as_ref() == Some(&issue.id) {
                    comments.clone()
                } else {
                    String::new()
                },
            );
            // Already in run order: the list's order is the priority.
            task.priority = order as f64;
            task.state = if self.passed.contains_key(&issue.identifier) {
                TaskState::Passed
            } else {
                state(issue)
            };
            task
        });
        Ok(listed.chain(done).collect())
    }

    /// `mark` written on its issue, by one try at each request.
    fn write(&mut self, mark: &Mark) -> Result<(), TaskListError> {
        match mark {
            Mark::Passed {
                story_id,
                commit,
                branch,
            } => {
                // Passed for this run from now on, even while Linear cannot be told: the mark
                // waits in the session, and the task is not taken up again meanwhile.
                let title = self.seen.get(story_id).map(|i| i.title.clone());
                self.passed
                    .entry(story_id.clone())
                    .or_insert_with(|| title.unwrap_or_default());
                self.report_pass(mark, story_id, commit.as_deref(), branch.as_deref())
            }
            Mark::Blocked {
                story_id,
                reason,
                saved_ref,
                ..
            } => {
                let setting = self.setting()?;
                let issue = self.client.issue(story_id).map_err(list_error)?;
                if issue.labels.iter().any(|l| l == BLOCKED_LABEL) {
                    return Ok(());
                }
                let label = self.blocked_label(&setting.team.id)?;
                let body = words::blocked_comment(reason, saved_ref.as_deref());
                self.post_once(mark, &issue.id, &body)?;
                self.client.add_label(&issue.id, &label).map_err(list_error)
            }
            _ => Ok(()),
        }
    }

    /// The question posted on the task's issue.
    fn put_question(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let issue = match self.seen.get(task_id) {
            Some(issue) => issue.clone(),
            None => self.client.issue(task_id).map_err(list_error)?,
        };
        let posted = self.post(&issue.id, &words::question_comment(question))?;
        Ok(Asked::new(
            task_id,
            question,
            issue.url,
            json!({ "issue": issue.id, "comment": posted.id }),
        ))
    }

    /// The answer after the question, if any. An issue a person moved out of its unstarted
    /// state (or took the run's label off) meanwhile is a task no longer in the list; a
    /// question comment a person deleted ends the wait.
    fn read_answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let (Some(issue_id), Some(question)) = (
            asked.token.get("issue").and_then(Value::as_str),
            asked.token.get("comment").and_then(Value::as_str),
        ) else {
            return Ok(None);
        };
        let setting = self.setting()?;
        if self.answer_looks % ISSUE_EVERY == 0 {
            let issue = self.client.issue(issue_id).map_err(list_error)?;
            let labelled = self
                .label
                .as_ref()
                .is_none_or(|label| issue.labels.contains(label));
            if issue.state.kind != UNSTARTED || !labelled {
                return Err(TaskListError::NoSuchTask {
                    location: self.location(),
                    id: asked.task_id.clone(),
                });
            }
        }
        self.answer_looks += 1;
        let comments = self.client.comments(issue_id).map_err(list_error)?;
        if !comments.iter().any(|c| c.id == question) {
            return Err(TaskListError::NoSuchQuestion {
                at: asked.at.clone(),
                question: asked.question.clone(),
            });
        }
        Ok(words::answer_after(&comments, question, &setting.ralph.id))
    }
}
