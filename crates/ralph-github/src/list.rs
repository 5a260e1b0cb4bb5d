//! GitHub issues as story mode's task list: [`GithubList`] implements ralph-tasks'
//! [`TaskList`], so issues get every story-mode guarantee (the breaker, the revert that saves
//! first, blocking with a reason, resume) and a person can answer the agent's question in the
//! issue itself.

use std::collections::BTreeMap;
use std::time::Duration;

use ralph_backoff::FailurePolicy;
use ralph_rest::{SharedFailures, Waits, issue_tasks};
use ralph_tasks::{Asked, ListedTask, Mark, TaskList, TaskListError};
use serde_json::{Value, json};

use crate::issues::{self, Author, BLOCKED_LABEL, DONE_LABEL};
use crate::{Client, Error, Issue, IssueState};

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
    /// The run's `failure:` backoff for network errors and 5xx answers, their count in a row
    /// (shared by the lists a run makes of one repository,
    /// [`GithubList::sharing_failures`]), the longest rate-limit wait (`rate_limit.max_wait`).
    waits: Waits,
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
            waits: Waits::new(failure, max_wait),
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
        self.waits.share_failures(failures);
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
    /// What `outcome` means to escalation: see [`Waits::settle`].
    fn settle<T>(&mut self, outcome: Result<T, TaskListError>) -> Result<T, TaskListError> {
        self.waits.settle::<T, Error>(outcome)
    }
}

/// Every client error as [`TaskListError::Failed`], for [`GithubList::settle`] to sort.
fn list_error(err: Error) -> TaskListError {
    TaskListError::Failed(Box::new(err))
}

fn number(task_id: &str) -> Result<u64, TaskListError> {
    issue_tasks::issue_number(task_id, "GitHub")
}

impl issue_tasks::TaskIssue for Issue {
    fn number(&self) -> u64 {
        self.number
    }
    fn title(&self) -> &str {
        &self.title
    }
    fn body(&self) -> &str {
        &self.body
    }
    fn url(&self) -> &str {
        &self.url
    }
    fn is_closed(&self) -> bool {
        self.state == IssueState::Closed
    }
    fn labels(&self) -> &[String] {
        &self.labels
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
        let next = issue_tasks::next_to_run(&issues, &self.passed);
        let comments = match next {
            Some(n) => {
                let ralph = self.ralph()?;
                let comments = self.client.comments(n).map_err(list_error)?;
                issues::render_comments(&comments, &ralph)
            }
            None => String::new(),
        };
        self.seen = issues.iter().map(|i| (i.number, i.clone())).collect();
        Ok(issue_tasks::listed_tasks(
            &issues,
            next,
            &comments,
            &self.passed,
        ))
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
