//! GitHub issues as story mode's task list: [`GithubList`] implements escalation's
//! [`TaskList`], so issues get every story-mode guarantee (the breaker, the revert that saves
//! first, blocking with a reason, resume) and a person can answer the agent's question in the
//! issue itself.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ralph_backoff::{FailureDecision, FailurePolicy, FailureStreak};
use ralph_escalation::{Asked, ListedTask, Mark, TaskList, TaskListError, TaskState};
use serde_json::{Value, json};

use crate::issues::{self, Author, BLOCKED_LABEL, DONE_LABEL};
use crate::{Client, Error, Issue, IssueState};

/// Failures in a row (network errors, 5xx answers) that lists share
/// ([`GithubList::sharing_failures`]).
pub type SharedFailures = Arc<Mutex<FailureStreak>>;

/// The open issues of a repository (with a label, when given) as tasks. A task's id is its
/// issue's number; its placeholders are `{{ task.id }}` (the number), `{{ task.title }}`,
/// `{{ task.body }}`, `{{ task.url }}` and `{{ task.comments }}` (read for the task about
/// to run only: one request per iteration, not one per issue).
///
/// It never waits itself: a rate limit and a network error or a 5xx come back as
/// [`TaskListError::RetryAfter`], for escalation to have the engine wait.
#[derive(Debug)]
pub struct GithubList {
    client: Client,
    label: Option<String>,
    close: bool,
    /// The run's `failure:` backoff, for network errors and 5xx answers.
    failure: FailurePolicy,
    /// Network errors and 5xx answers in a row: shared by the lists a run makes of one
    /// repository ([`GithubList::sharing_failures`]).
    failures: SharedFailures,
    /// The longest rate-limit wait (`rate_limit.max_wait`).
    max_wait: Duration,
    /// The issues as last read, by number.
    seen: BTreeMap<u64, Issue>,
    /// Issues passed in this run, with their titles: passed whatever GitHub says until it is
    /// told, and still listed (as passed) once closed, so the run's counts include them.
    passed: BTreeMap<u64, String>,
    /// Who ralph's comments are by: asked of GitHub once, the first time a comment is read.
    ralph: Option<Author>,
    /// Looks for an answer so far: every [`ISSUE_EVERY`]th also reads the issue itself.
    answer_looks: u64,
}

/// While ralph waits for an answer, one look in this many also reads the issue, to see it
/// closed (or its label taken off): a second request at every look would double what a wait
/// costs of the hourly rate limit.
const ISSUE_EVERY: u64 = 3;

impl GithubList {
    /// The open issues `client` reads, only those labelled `label` when given; a passed issue
    /// is closed when `close`, else kept open with the `ralph:done` label. A network error or
    /// a 5xx asks for the wait `failure` gives (the run's `failure:`), and ends the run at
    /// `failure.max_consecutive` in a row; a rate limit asks for a wait until its reset, at
    /// most `max_wait` (the run's `rate_limit.max_wait`).
    #[must_use]
    pub fn new(
        client: Client,
        label: Option<String>,
        close: bool,
        failure: FailurePolicy,
        max_wait: Duration,
    ) -> Self {
        Self {
            client,
            label,
            close,
            failure,
            failures: Arc::default(),
            max_wait,
            seen: BTreeMap::new(),
            passed: BTreeMap::new(),
            ralph: None,
            answer_looks: 0,
        }
    }

    /// Who ralph's comments are by: the token's login, asked once (`GET /user`). A token that
    /// may not read its user (403, 404: a GitHub App's) writes as an app: any app's signed
    /// comment is taken for ralph's until ralph posts one of its own.
    fn ralph(&mut self) -> Result<Author, TaskListError> {
        if let Some(ralph) = &self.ralph {
            return Ok(ralph.clone());
        }
        let ralph = match self.client.login() {
            Ok(login) => Author::Login(login),
            Err(Error::Status {
                status: 403 | 404, ..
            }) => Author::AnyApp,
            Err(err) => return Err(list_error(err)),
        };
        Ok(self.ralph.insert(ralph).clone())
    }

    /// `body` posted on issue `n`; its author is ralph's login from now on, when it was not
    /// known.
    fn post(&mut self, n: u64, body: &str) -> Result<crate::Comment, TaskListError> {
        let posted = self.client.post_comment(n, body).map_err(list_error)?;
        if matches!(self.ralph, None | Some(Author::AnyApp)) && !posted.author.is_empty() {
            self.ralph = Some(Author::Login(posted.author.clone()));
        }
        Ok(posted)
    }

    /// The same list counting its failures in a row in `failures`, with the other lists of the
    /// run: a run's start makes more than one (`--task` checks the task, then opens the run),
    /// and each try is one more of the run's, its wait the backoff's next.
    #[must_use]
    pub fn sharing_failures(mut self, failures: SharedFailures) -> Self {
        self.failures = failures;
        self
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
        self.post(n, &body)?;
        if self.close {
            self.client.close_issue(n).map_err(list_error)
        } else {
            self.client.add_label(n, DONE_LABEL).map_err(list_error)
        }
    }
}

impl GithubList {
    /// What `outcome` means to escalation. A rate limit is a wait until its reset (at most
    /// `max_wait`); a network error or a 5xx is a wait from the run's `failure:` backoff, and
    /// at `failure.max_consecutive` in a row the list cannot be read now (a mark waits in the
    /// session, no task is marked for it, and the next look ends the run). Every other error
    /// ends the run, saying why.
    fn settle<T>(&mut self, outcome: Result<T, TaskListError>) -> Result<T, TaskListError> {
        let err = match outcome {
            Ok(value) => {
                self.streak().record_success();
                return Ok(value);
            }
            Err(TaskListError::Failed(err)) => err,
            Err(other) => return Err(other),
        };
        let err = match err.downcast::<Error>() {
            Ok(err) => *err,
            Err(other) => return Err(TaskListError::Failed(other)),
        };
        let failure = self.failure;
        Err(waits(err, &mut self.streak(), &failure, self.max_wait))
    }
}

/// A client error as escalation takes it. A rate limit is a wait until its reset (at most
/// `max_wait`); a network error or a 5xx is a wait from the run's `failure:` backoff, counted
/// in `streak`, and at `failure.max_consecutive` in a row the service cannot be read now; an
/// interrupt is a short wait; every other error ends the run, saying why.
pub(crate) fn waits(
    err: Error,
    streak: &mut FailureStreak,
    failure: &FailurePolicy,
    max_wait: Duration,
) -> TaskListError {
    match err {
        Error::RateLimited { wait, .. } => {
            let wait = wait.min(max_wait);
            TaskListError::RetryAfter {
                wait,
                why: format!("{err}; asking again in {}", seconds(wait)),
            }
        }
        Error::Unreachable { .. } => match streak.record_failure(failure) {
            FailureDecision::Wait { delay, consecutive } => TaskListError::RetryAfter {
                wait: delay,
                why: format!(
                    "{err}; try {} of {} in {}",
                    consecutive + 1,
                    failure.max_consecutive.max(1),
                    seconds(delay)
                ),
            },
            FailureDecision::Stop { consecutive } => {
                TaskListError::Unreadable(Box::new(Unreachable {
                    err,
                    tries: consecutive,
                }))
            }
        },
        // A wait like any other, for the interrupt to be answered as during a wait: a
        // Ctrl+C looks again at once, a second stops the run, a SIGTERM stops it.
        Error::Interrupted { .. } => TaskListError::RetryAfter {
            wait: AFTER_INTERRUPT,
            why: format!("{err}; asking again in {}", seconds(AFTER_INTERRUPT)),
        },
        other => TaskListError::Failed(Box::new(other)),
    }
}

/// The wait after a request given up at an interrupt.
const AFTER_INTERRUPT: Duration = Duration::from_secs(1);

impl GithubList {
    fn streak(&self) -> std::sync::MutexGuard<'_, FailureStreak> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// GitHub unreachable through every try `failure.max_consecutive` allows.
#[derive(Debug, thiserror::Error)]
#[error("{err}, {tries} times in a row (failure.max_consecutive)")]
struct Unreachable {
    err: Error,
    tries: u64,
}

/// A wait in words: `2s`, `250ms`.
fn seconds(wait: Duration) -> String {
    humantime::format_duration(wait).to_string()
}

/// Every client error as [`TaskListError::Failed`], for [`GithubList::settle`] to sort.
fn list_error(err: Error) -> TaskListError {
    TaskListError::Failed(Box::new(err))
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

impl GithubList {
    /// The open issues as tasks, by one try at each request.
    fn read_tasks(&mut self) -> Result<Vec<ListedTask>, TaskListError> {
        let issues = issues::run_order(
            self.client
                .open_issues(self.label.as_deref())
                .map_err(list_error)?,
        );
        let next = issues
            .iter()
            .find(|i| state(i) == TaskState::Pending && !self.passed.contains_key(&i.number))
            .map(|i| i.number);
        let comments = match next {
            Some(n) => {
                let ralph = self.ralph()?;
                let comments = self.client.comments(n).map_err(list_error)?;
                issues::render_comments(&comments, &ralph)
            }
            None => String::new(),
        };
        self.seen = issues.iter().map(|i| (i.number, i.clone())).collect();
        // Passed in this run and closed since: GitHub lists them no more, the run still counts them.
        let closed: Vec<ListedTask> = self
            .passed
            .iter()
            .filter(|(n, _)| !self.seen.contains_key(n))
            .enumerate()
            .map(|(i, (n, title))| {
                let mut task = ListedTask::new(n.to_string(), title.clone());
                task.priority = (issues.len() + i) as f64;
                task.state = TaskState::Passed;
                task
            })
            .collect();
        let open = issues.iter().enumerate().map(|(order, issue)| {
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
            task.state = if self.passed.contains_key(&issue.number) {
                TaskState::Passed
            } else {
                state(issue)
            };
            task
        });
        Ok(open.chain(closed).collect())
    }

    /// `mark` written on its issue, by one try at each request.
    fn write(&mut self, mark: &Mark) -> Result<(), TaskListError> {
        match mark {
            Mark::Passed {
                story_id,
                commit,
                branch,
            } => {
                let n = number(story_id)?;
                // Passed for this run from now on, even while GitHub cannot be told: the mark
                // waits in the session, and the task is not taken up again meanwhile.
                let title = self.seen.get(&n).map(|i| i.title.clone());
                self.passed
                    .entry(n)
                    .or_insert_with(|| title.unwrap_or_default());
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
                self.post(n, &body)?;
                self.client.add_label(n, BLOCKED_LABEL).map_err(list_error)
            }
            _ => Ok(()),
        }
    }

    /// The question posted on the task's issue.
    fn put_question(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let n = number(task_id)?;
        let posted = self.post(n, &issues::question_comment(question))?;
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

    /// The answer after the question, if any. An issue a person closed (or took the run's
    /// label off) meanwhile is a task no longer in the list, dropped as at any other time; a
    /// question comment a person deleted ends the wait.
    fn read_answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let n = number(&asked.task_id)?;
        let Some(question) = asked.token.get("comment").and_then(Value::as_u64) else {
            return Ok(None);
        };
        if self.answer_looks % ISSUE_EVERY == 0 {
            let issue = self.client.issue(n).map_err(list_error)?;
            let labelled = self
                .label
                .as_ref()
                .is_none_or(|label| issue.labels.contains(label));
            if issue.state == IssueState::Closed || !labelled {
                return Err(TaskListError::NoSuchTask {
                    location: self.location(),
                    id: asked.task_id.clone(),
                });
            }
        }
        self.answer_looks += 1;
        let ralph = self.ralph()?;
        let comments = self.client.comments(n).map_err(list_error)?;
        if !comments.iter().any(|c| c.id == question) {
            return Err(TaskListError::NoSuchQuestion {
                at: asked.at.clone(),
                question: asked.question.clone(),
            });
        }
        Ok(issues::answer_after(&comments, question, &ralph))
    }
}
