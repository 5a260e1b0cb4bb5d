//! The [`TaskList`] seam: the trait, the types it speaks in and the run order every list's
//! tasks follow.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The names story mode fills in under `{{ story.* }}`, from prd.json.
pub const STORY_PLACEHOLDERS: &[&str] = &[
    "id",
    "title",
    "description",
    "acceptance_criteria",
    "json",
    "conflict",
];

/// The names every task list fills in under `{{ task.* }}`: `question` and `answer` once a
/// person answered the agent's question; `url` and `comments` for lists that have them
/// (GitHub issues).
pub const TASK_PLACEHOLDERS: &[&str] = &[
    "id", "title", "body", "question", "answer", "url", "comments",
];

/// How often a list is asked for a person's answer, unless it says otherwise.
pub const ANSWER_POLL: Duration = Duration::from_secs(2);

/// Where a task stands in its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskState {
    /// Still to do.
    Pending,
    /// Done.
    Passed,
    /// Given up on, with a reason; skipped until a person clears it.
    Blocked,
}

impl TaskState {
    /// The state's name, as `ralph tasks --json` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Passed => "passed",
            Self::Blocked => "blocked",
        }
    }
}

/// One task of a list, as the list says it is now.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ListedTask {
    /// Its id, stable while the task is unchanged (a story id, a checklist line's hash, an
    /// issue number). Names its saved attempts: `refs/ralph/attempts/<id>/<n>`.
    pub id: String,
    /// Its title, one line.
    pub title: String,
    /// Its prompt placeholders by `namespace.name` (`task.body`, `story.title`).
    pub placeholders: BTreeMap<String, String>,
    /// Lower runs first; ties keep the list's order.
    pub priority: f64,
    /// Ids of tasks that must pass first.
    pub depends_on: Vec<String>,
    /// Where it stands.
    pub state: TaskState,
}

impl ListedTask {
    /// A pending task of priority 0 with no placeholders and no dependencies.
    pub fn new(id: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            placeholders: BTreeMap::new(),
            priority: 0.0,
            depends_on: Vec::new(),
            state: TaskState::Pending,
        }
    }
}

/// ralph's one change to a task, kept until it is in the list: applied to the list as it is
/// when written ([`TaskList::write_mark`]), never to an older reading, and applying it twice
/// changes nothing more than once. Kept in the run's session while the list cannot take it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mark", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Mark {
    /// The task passed.
    Passed {
        /// The task (named `story_id` in sessions since 0.2).
        story_id: String,
        /// The pass commit, once made (`None` in the text the commit itself holds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
        /// The branch the pass commit is on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch: Option<String>,
    },
    /// The task is blocked.
    Blocked {
        /// The task.
        story_id: String,
        /// The whole note prd.json adds to the story's notes: when, why, where the
        /// progress.txt entry is, how to get the abandoned work back.
        notes: String,
        /// Why, in a few words (`same error 3 times`, the agent's own reason).
        #[serde(default)]
        reason: String,
        /// The ref the abandoned work was saved under, when it was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        saved_ref: Option<String>,
    },
}

impl Mark {
    /// Task `id` passed; its commit not made yet.
    pub fn passed(id: impl Into<String>) -> Self {
        Mark::Passed {
            story_id: id.into(),
            commit: None,
            branch: None,
        }
    }

    /// The task it marks.
    pub fn story_id(&self) -> &str {
        match self {
            Mark::Passed { story_id, .. } | Mark::Blocked { story_id, .. } => story_id,
        }
    }
}

impl std::fmt::Display for Mark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mark::Passed { story_id, .. } => write!(f, "{story_id} passes"),
            Mark::Blocked { story_id, .. } => write!(f, "{story_id} blocked"),
        }
    }
}

/// A mark that landed: written into the list (a pass after its commit).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Landed<'a> {
    /// The mark; a pass names its commit and branch when there is a repository.
    pub mark: &'a Mark,
}

impl<'a> Landed<'a> {
    /// `mark` landed.
    pub fn new(mark: &'a Mark) -> Self {
        Self { mark }
    }
}

/// A question put to a person where a task lives, waiting for the answer. Kept in the run's
/// session, so a stopped run resumes waiting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Asked {
    /// The task.
    pub task_id: String,
    /// The question as the agent put it.
    pub question: String,
    /// Where a person answers, as people read it: `TODO.md:12`, an issue's URL.
    pub at: String,
    /// The list's own record of where it asked (a comment id, the question's text); opaque
    /// to escalation.
    #[serde(default)]
    pub token: serde_json::Value,
}

impl Asked {
    /// A question on `task_id`, answered `at`, with the list's own `token`.
    pub fn new(
        task_id: impl Into<String>,
        question: impl Into<String>,
        at: impl Into<String>,
        token: serde_json::Value,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            question: question.into(),
            at: at.into(),
            token,
        }
    }
}

/// Why a list could not do what escalation asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskListError {
    /// The list cannot be read or does not parse now (a person is editing it). A mark waits
    /// in the session and is written at a later step; a `WARNING` says so.
    #[error("{0}")]
    Unreadable(Box<dyn std::error::Error + Send + Sync>),
    /// The task is gone from the list (a person removed it): its mark is dropped.
    #[error("{location}: no task \"{id}\" any more")]
    NoSuchTask {
        /// The list, as people read it.
        location: String,
        /// The task.
        id: String,
    },
    /// Not now: the list's service asks for a wait (a rate limit until its reset, a network
    /// error or a 5xx retried with the run's `failure:` backoff). Escalation has the engine
    /// wait `wait` (a `WAIT_STARTED` saying `why`, a countdown a Ctrl+C ends, resumable) and
    /// asks again; a mark waits unwritten meanwhile, and no task is marked for it.
    #[error("{why}")]
    RetryAfter {
        /// How long to wait before asking again.
        wait: Duration,
        /// Why, in words people read: the service's error and what follows the wait.
        why: String,
    },
    /// The question [`TaskList::answer`] looks for is gone (a person deleted it): the wait
    /// for its answer ends, with a `WARNING`, and the task goes on without one.
    #[error("{at}: the question \"{question}\" is no longer there")]
    NoSuchQuestion {
        /// Where it was asked, as people read it.
        at: String,
        /// The question.
        question: String,
    },
    /// The list cannot ask a person ([`TaskList::ask`]).
    #[error("{location}: {kind} tasks cannot put a question to a person")]
    CannotAsk {
        /// The list's kind.
        kind: String,
        /// The list, as people read it.
        location: String,
    },
    /// Anything else: the run ends, saying why.
    #[error("{0}")]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// Where story mode's tasks live. Escalation asks it for the tasks before every iteration,
/// picks the next in run order ([`run_order`]), and changes a task only through a [`Mark`].
///
/// A list in files names them in [`files`](Self::files): they are ralph's own, left out of the
/// dirty-tree check and never reverted, and the pass commit holds them with the task marked
/// ([`marked_files`](Self::marked_files)). A list outside git (an issue tracker) names none and
/// reports in [`after_landed`](Self::after_landed).
pub trait TaskList: Send + std::fmt::Debug {
    /// The list's kind, as `tasks:` names it: `prd`, `markdown`, `github`.
    fn kind(&self) -> &str;

    /// The list as people read it (a path, `owner/repo`), for messages.
    fn location(&self) -> String;

    /// The files the list lives in, as given (relative to the agent's folder) or absolute.
    fn files(&self) -> Vec<PathBuf>;

    /// The tasks as the list says now, in the list's order.
    fn load(&mut self) -> Result<Vec<ListedTask>, TaskListError>;

    /// What the last [`load`](Self::load) found that a person should know, in words (a
    /// checklist's title on two items): escalation says each once per run as a `WARNING`.
    /// None, the default.
    fn load_warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// The contents the pass commit holds for each of [`files`](Self::files): the file as it
    /// is now with `mark` applied (as last read when it does not parse now). Empty, the
    /// default: nothing of the list is in git.
    fn marked_files(&mut self, mark: &Mark) -> Result<Vec<(PathBuf, Vec<u8>)>, TaskListError> {
        let _ = mark;
        Ok(Vec::new())
    }

    /// Writes `mark` into the list as it is now: read again just before, the one change
    /// applied, every other byte (and a person's edit made meanwhile) kept. Nothing is
    /// written when the list already says so.
    fn write_mark(&mut self, mark: &Mark) -> Result<(), TaskListError>;

    /// A mark landed: a list outside git reports it (a comment naming the commit and branch,
    /// the issue closed). Called once per mark, after [`write_mark`](Self::write_mark).
    fn after_landed(&mut self, landed: &Landed<'_>) -> Result<(), TaskListError> {
        let _ = landed;
        Ok(())
    }

    /// Whether [`ask`](Self::ask) can put a question to a person (false, the default: it
    /// answers [`TaskListError::CannotAsk`]). A parallel run's lane, which asks through the
    /// run, says so before the run's list is asked.
    fn can_ask(&self) -> bool {
        false
    }

    /// Puts the agent's `question` on task `task_id` to a person, where the task lives.
    /// The default: this list cannot ([`TaskListError::CannotAsk`]).
    fn ask(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let _ = (task_id, question);
        Err(TaskListError::CannotAsk {
            kind: self.kind().to_owned(),
            location: self.location(),
        })
    }

    /// The answer to `asked`, once a person gave one; [`TaskListError::NoSuchQuestion`] when
    /// a person deleted the question, [`TaskListError::NoSuchTask`] when the task left the list
    /// (an issue closed).
    fn answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let _ = asked;
        Ok(None)
    }

    /// How long to wait between two looks for an answer.
    fn answer_poll(&self) -> Duration {
        ANSWER_POLL
    }
}

/// The pending tasks of `tasks` in the order they run: by priority (lower first), ties in
/// the list's order; a task whose dependencies have not all passed waits for them (a
/// dependency blocked or missing keeps it waiting for good).
pub fn run_order(tasks: &[ListedTask]) -> Vec<&ListedTask> {
    let state: BTreeMap<&str, TaskState> = tasks.iter().map(|t| (t.id.as_str(), t.state)).collect();
    let mut pending: Vec<&ListedTask> = tasks
        .iter()
        .filter(|t| t.state == TaskState::Pending)
        .collect();
    pending.sort_by(|a, b| a.priority.total_cmp(&b.priority));
    // Dependencies among the pending ones: a task comes after those it depends on.
    let mut ordered: Vec<&ListedTask> = Vec::with_capacity(pending.len());
    let mut placed: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    loop {
        let ready = pending.iter().position(|t| {
            t.depends_on.iter().all(|d| {
                placed.contains(d.as_str()) || state.get(d.as_str()) == Some(&TaskState::Passed)
            })
        });
        let Some(i) = ready else { break };
        let task = pending.remove(i);
        placed.insert(task.id.as_str());
        ordered.push(task);
    }
    ordered
}

/// The next task to work on: the first in [`run_order`] whose dependencies all passed.
pub fn next(tasks: &[ListedTask]) -> Option<&ListedTask> {
    let passed = |id: &str| {
        tasks
            .iter()
            .any(|t| t.id == id && t.state == TaskState::Passed)
    };
    run_order(tasks)
        .into_iter()
        .find(|t| t.depends_on.iter().all(|d| passed(d)))
}

/// Counts of passed, blocked and pending tasks.
pub fn counts(tasks: &[ListedTask]) -> (u64, u64, u64) {
    let count = |s: TaskState| tasks.iter().filter(|t| t.state == s).count() as u64;
    (
        count(TaskState::Passed),
        count(TaskState::Blocked),
        count(TaskState::Pending),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, priority: f64, deps: &[&str], state: TaskState) -> ListedTask {
        let mut t = ListedTask::new(id, id);
        t.priority = priority;
        t.depends_on = deps.iter().map(|d| (*d).to_owned()).collect();
        t.state = state;
        t
    }

    #[test]
    fn run_order_is_priority_then_list_order_with_dependencies_first() {
        let tasks = [
            task("a", 2.0, &[], TaskState::Pending),
            task("b", 1.0, &["c"], TaskState::Pending),
            task("c", 3.0, &[], TaskState::Pending),
            task("d", 1.0, &[], TaskState::Passed),
            task("e", 2.0, &["d"], TaskState::Pending),
            task("f", 0.0, &["x"], TaskState::Pending),
        ];
        let order: Vec<&str> = run_order(&tasks).iter().map(|t| t.id.as_str()).collect();
        assert_eq!(order, ["a", "e", "c", "b"]);
        assert_eq!(next(&tasks).map(|t| t.id.as_str()), Some("a"));
    }
}
