//! Escalation for ralph loops: the layered defence against a loop stuck on one problem.
//!
//! This crate owns story mode over a task list (which task is next, its placeholders, marking
//! it passed or blocked): prd.json, a Markdown checklist, or an embedder's own [`TaskList`]
//! (where tasks live is a seam, `ralph-tasks`; every list gets every guarantee below), the
//! same-error circuit breaker (error [`signature`](mod@signature)s and the
//! [`Breaker`]), and the escalation that follows a trip: a progress.txt entry, a git revert to
//! the last checkpoint that first saves everything under `refs/ralph/attempts/<story>/<n>`, the
//! story blocked, the next one started. It plugs into the engine as a
//! [`ralph_engine::TaskSource`]; the engine knows nothing of git or prd.json.
//!
//! It must never destroy user work: nothing is reset before it is stored under a ref, ignored
//! files are never touched, nor are `.ralph/`, the task list's files, progress.txt and the paths the embedder
//! protects, and every file it writes is replaced atomically. A pass or a revert is recorded in a
//! journal before it starts (`<git dir>/ralph-journal.json`), and the next start, resumed or not,
//! finishes one a kill cut short before it looks at the tree. All git commands go through
//! [`git`], the one module here that starts processes.

pub mod breaker;
mod escalate;

pub mod events;
pub mod git;
mod journal;
mod journal_file;
pub mod lock;
mod opening;
mod passing;
pub mod plan;
pub mod pr_config;
mod pr_task;
pub mod preflight;
pub mod progress;
pub mod pull_request;
mod resume;
mod retick;
pub mod run_folder;
pub mod signature;
pub mod tasks_config;
mod vocabulary;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use escalate::out_of_room;

use ralph_engine::{
    CheckResult, EndReason, IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource,
    TaskWait,
};
use ralph_tasks::{Asked, ListedTask, Mark, PrdError, TaskList, TaskListError, TaskState};

pub use breaker::{Breaker, Trip};
pub use events::{StoriesSummary, StoryAttempt, StoryEnd, StoryEvent, TaskWords};
pub use git::{Git, GitError, Saved, switch_to_task_branch, task_branch};
pub use journal_file::{Journal, JournalError};
pub use lock::lock_repository;
pub use pr_config::{Forge, PrSettings};
pub use progress::ProgressError;
pub use pull_request::{PrFacts, PrLanded, PrLanding, PrTask, pr_title};
pub use resume::{EscalationState, Interrupted};
pub use signature::{Signature, signature};
pub use tasks_config::TasksConfig;
pub use vocabulary::{ASK_STATE, vocabulary};

/// `max_iterations` in story mode when neither the file nor the command line sets one: the
/// loop's last safety net.
pub const STORY_MODE_MAX_ITERATIONS: u64 = 10;

/// The `RUN_ENDED` reason when escalation itself fails mid-run (git or a file refused).
pub const ESCALATION_FAILED: &str = "escalation_failed";

/// The task id without prd.json: the loop's one task, and the folder its abandoned attempts are
/// saved under (`refs/ralph/attempts/main/<n>`).
const MAIN_TASK: &str = "main";

/// How many lines of a failing check's tail go into a progress.txt entry.
const PROGRESS_TAIL_LINES: usize = 60;

/// Why escalation cannot start, or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EscalationError {
    /// prd.json is missing or malformed.
    #[error(transparent)]
    Prd(#[from] PrdError),
    /// The task list cannot be read, or refused a change.
    #[error(transparent)]
    Tasks(TaskListError),
    /// Git refused, or this is no place for a revert.
    #[error(transparent)]
    Git(#[from] GitError),
    /// progress.txt could not be written.
    #[error(transparent)]
    Progress(#[from] ProgressError),
    /// `land.pr`: the task's branch could not be pushed, or its base is not known.
    #[error(transparent)]
    Push(git::PushError),
    /// `escalation.progress` leads to the prd.json or into `.git`.
    #[error(transparent)]
    ProgressPath(#[from] progress::PathConflict),
    /// The record of the step under way could not be read or written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A resumed run's tree changed while it was stopped, beyond its own interrupted attempt and
    /// ralph's story files, without `--allow-dirty`.
    #[error("{}", changed_while_stopped(.dir, .moved.as_ref(), .paths))]
    ChangedWhileStopped {
        /// The repository.
        dir: PathBuf,
        /// HEAD where the run left it and where it is now, when it moved.
        moved: Option<[String; 2]>,
        /// The paths that differ from the tree the run left.
        paths: Vec<String>,
    },
    /// `revert: true` on a tree with uncommitted changes, without `--allow-dirty`.
    #[error(
        "{}: uncommitted changes ({}); escalation.revert would remove them. Commit or stash them, or pass --allow-dirty: ralph then saves them under refs/ralph/attempts/preexisting/<n> and leaves those paths to you, never committing, saving or reverting them",
        .dir.display(),
        .paths.join(", ")
    )]
    DirtyTree {
        /// The repository.
        dir: PathBuf,
        /// The changed or untracked paths.
        paths: Vec<String>,
    },
    /// `ralph run --task ID` without a task list: the RALPH.md has no `tasks:` nor
    /// `escalation.prd`.
    #[error(
        "--task {id}: the task is one of a task list, and this RALPH.md has none: no `tasks:` section and no `escalation.prd` (`tasks: {{markdown: TODO.md}}`, `tasks: {{prd: prd.json}}`)"
    )]
    NotStoryMode {
        /// The id asked for.
        id: String,
    },
    /// `ralph run --task ID` with an id the task list does not have.
    #[error(
        "{list}: no task \"{id}\" (--task); its tasks are: {}",
        if .ids.is_empty() { "none".to_owned() } else { .ids.join(", ") }
    )]
    NoSuchTask {
        /// The task list (prd.json, TODO.md, owner/repo).
        list: String,
        /// The id asked for.
        id: String,
        /// The ids the list has, in its order.
        ids: Vec<String>,
    },
}

/// Whether an escalation is opened for a run, or only to see what a run's opening would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    Run,
    Check,
}

/// How to open an escalation.
#[derive(Debug)]
#[non_exhaustive]
pub struct Options {
    /// The agent's working folder; relative `prd`, `progress` and `protect` paths start here.
    pub cwd: PathBuf,
    /// With `revert`, save uncommitted changes under `refs/ralph/attempts/preexisting/<n>`
    /// instead of refusing to start; the paths they are on are then never committed, saved as
    /// an attempt or reverted.
    pub allow_dirty: bool,
    /// More paths a revert must leave alone (the events file, a custom log folder); `.ralph/`,
    /// prd.json and progress.txt always are.
    pub protect: Vec<PathBuf>,
    /// Where the tasks live. `None`: prd.json when `escalation.prd` is set, else the loop's
    /// one task. The list's paths are taken from `cwd` when relative.
    pub tasks: Option<Box<dyn TaskList>>,
}

impl Options {
    /// Opening in `cwd`: a dirty tree refused, only ralph's own paths protected.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            allow_dirty: false,
            protect: Vec::new(),
            tasks: None,
        }
    }
}

/// The repository side: where to go back to and what to leave alone.
#[derive(Debug)]
struct Repo {
    git: Git,
    /// The last known-good commit.
    checkpoint: String,
    /// The branch HEAD was on at the checkpoint (`None`: detached); a revert resets this one.
    branch: Option<String>,
    /// Paths (relative to the top folder) a revert never touches.
    keep: Vec<PathBuf>,
    /// Paths left out of saved work and checkpoint commits (ralph's logs and events, and with
    /// `--allow-dirty` the paths that were dirty at start-up).
    own: Vec<PathBuf>,
    /// The agent's folder, where the list's relative paths start.
    cwd: PathBuf,
    /// The task list's first file (prd.json, the file a symlink points to) relative to the top
    /// folder, when inside it: a pass commit holds it with the task marked.
    prd: Option<PathBuf>,
    /// The step a stopped ralph left in the journal, finished (or found) at opening.
    found: Option<journal::Found>,
    /// A resumed run that ended without a word (killed): its last step may be behind the
    /// repository.
    killed: bool,
}

/// The story in progress.
#[derive(Debug, Clone)]
struct Current {
    id: String,
    title: String,
    iterations: Vec<u64>,
    /// The failing checks of its last failed attempt.
    last_failure: Vec<CheckResult>,
}

/// Escalation as a [`TaskSource`]: stories, breaker, revert.
#[derive(Debug)]
pub struct Escalation {
    /// Where the tasks live; `None`: the loop's one task.
    list: Option<Box<dyn TaskList>>,
    progress: PathBuf,
    has_checks: bool,
    repo: Option<Repo>,
    breaker: Breaker,
    current: Option<Current>,
    counts: Option<StoriesSummary>,
    preexisting: Option<String>,
    /// Warnings from before the run started (opening the repository), said as `WARNING`
    /// events at the first [`TaskContext`] the engine hands over.
    pending: Vec<String>,
    /// The list's load warnings already said in this run: each is said once.
    said: std::collections::BTreeSet<String>,
    /// ralph's marks not yet in the task list, oldest first: the list did not parse when they
    /// were made. Kept in the session and written at the next step that finds it readable.
    unwritten: Vec<Mark>,
    /// `{{ story.conflict }}`: why the story's earlier work did not land (a parallel run's
    /// merge conflict or failing check on the merged result); empty otherwise.
    conflict: String,
    /// `ralph run --task ID`: the one task worked on; the run ends when it passes or is
    /// blocked.
    only: Option<String>,
    /// The agent's question waiting for a person's answer, kept in the session.
    asked: Option<Asked>,
    /// A question and its answer, for the next iteration's prompt (`{{ task.question }}`,
    /// `{{ task.answer }}`), kept in the session.
    answered: Option<[String; 2]>,
    /// The list said "not now" as a mark was written after an iteration: the next look waits
    /// this first, then writes the mark.
    not_now: Option<TaskWait>,
    /// The `--task` task passed in this run: a list that drops passed tasks (a closed issue
    /// is no longer an open one) ends the run as passed, not as a task it does not have.
    only_passed: bool,
    /// The tasks this run passed, with their pass commits, kept in the session: one a stale
    /// save shows undone again is marked again, not done again ([`retick`](Self::retick)).
    passed: std::collections::BTreeMap<String, Option<String>>,
    /// `land.pr`: a `--task` that passes is landed as a pull request ([`pr_task`]).
    pull_request: Option<pr_task::PrTaskLanding>,
}

impl Escalation {
    /// With `--allow-dirty`: the ref the uncommitted changes were saved under at start-up.
    pub fn preexisting_ref(&self) -> Option<&str> {
        self.preexisting.as_deref()
    }

    /// Sets `{{ story.conflict }}`: what kept the story's earlier work from landing (the files
    /// and hunks of a merge conflict, a check that failed on the merged result), for the agent's
    /// next attempt. Empty by default.
    pub fn set_conflict(&mut self, text: impl Into<String>) -> &mut Self {
        self.conflict = text.into();
        self
    }

    /// `ralph run --task ID`: work on task `id` alone, whatever its priority, and end the run
    /// when it passes ([`StoryEnd::TaskPassed`], exit 0) or is blocked
    /// ([`StoryEnd::TaskBlocked`], `ralph_events::exit::TASK_BLOCKED`).
    /// Refused without a task list, or when the list has no task `id` (the error lists the ids
    /// it has).
    pub fn only_story(&mut self, id: &str) -> Result<(), EscalationError> {
        // The list said "not now" as it opened: its wait comes first, for the caller to make.
        if let Some(wait) = self.not_now.take() {
            return Err(TaskListError::RetryAfter {
                wait: wait.poll,
                why: wait.why,
            }
            .into());
        }
        let tasks = self
            .load()?
            .ok_or_else(|| EscalationError::NotStoryMode { id: id.to_owned() })?;
        if !tasks.iter().any(|t| t.id == id) {
            return Err(self.no_such_task(id, &tasks));
        }
        self.only = Some(id.to_owned());
        Ok(())
    }

    /// `--task id` names no task of the list.
    fn no_such_task(&self, id: &str, tasks: &[ListedTask]) -> EscalationError {
        EscalationError::NoSuchTask {
            list: self.list.as_ref().map(|l| l.location()).unwrap_or_default(),
            id: id.to_owned(),
            ids: tasks.iter().map(|t| t.id.clone()).collect(),
        }
    }

    /// Whether stories come from a prd.json.
    pub fn story_mode(&self) -> bool {
        self.list.is_some()
    }

    /// The task list's files (none without one), as the list names them.
    fn list_files(&self) -> Vec<PathBuf> {
        self.list.as_ref().map(|l| l.files()).unwrap_or_default()
    }

    /// What people read for this run's tasks: the task list's words (`None` without a list:
    /// one task, the RALPH.md's own).
    pub fn task_words(&self) -> Option<TaskWords> {
        self.list.as_ref().map(|l| TaskWords::of_list(l.kind()))
    }

    /// The task list, when there is one: what `ralph tasks` lists.
    pub fn task_list(&mut self) -> Option<&mut (dyn TaskList + 'static)> {
        self.list.as_deref_mut()
    }

    /// Says why as a `WARNING` event, so every sink sees it.
    fn failed_in(err: &EscalationError, cx: &mut TaskContext<'_>) -> EndReason {
        // prd.json cut or broken (an in-place save caught half way, read again a few times):
        // a person can mend it, and the run goes on from where it was.
        if let EscalationError::Prd(PrdError::Malformed { .. } | PrdError::KeepsChanging { .. }) =
            err
        {
            cx.warn(format!(
                "escalation failed: {err}; once prd.json parses, `ralph run --resume` goes on"
            ));
            return EndReason::Task {
                reason: ESCALATION_FAILED.to_owned(),
                exit_code: ralph_events::exit::FAILURE,
                converged: false,
                resumable: true,
            };
        }
        // A full disk (a save, the journal, git's index or objects could not be written):
        // nothing the run decided, and the work is still in the tree; once there is room, the
        // run goes on from where it was rather than only with `--allow-dirty`.
        if out_of_room(err) {
            cx.warn(format!(
                "escalation failed: {err}; the disk is full: once there is room, `ralph run \
                 --resume` goes on"
            ));
            return EndReason::Task {
                reason: ESCALATION_FAILED.to_owned(),
                exit_code: ralph_events::exit::FAILURE,
                converged: false,
                resumable: true,
            };
        }
        cx.warn(format!("escalation failed: {err}"));
        EndReason::State {
            reason: ESCALATION_FAILED.to_owned(),
            exit_code: ralph_events::exit::FAILURE,
        }
    }

    /// Records `step` on `story` as the step under way, with `revert` (see [`journal`]).
    fn record(&self, step: journal::Step, story: Option<&str>) -> Result<(), EscalationError> {
        let Some(repo) = &self.repo else {
            return Ok(());
        };
        let entry = journal::Entry {
            step,
            story: story.map(str::to_owned),
            head: repo.git.head()?,
            checkpoint: repo.checkpoint.clone(),
            branch: repo.branch.clone(),
            own: repo.own.clone(),
            keep: repo.keep.clone(),
            prd: self
                .list_files()
                .first()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            prd_in_repo: repo.prd.clone(),
        };
        Ok(journal::write(&repo.git, &entry)?)
    }

    /// The step [`record`](Self::record)ed is done.
    fn recorded_done(&self) -> Result<(), EscalationError> {
        match &self.repo {
            Some(repo) => Ok(journal::clear(&repo.git)?),
            None => Ok(()),
        }
    }

    /// Says the warnings found before the run started, once.
    fn say_pending(&mut self, cx: &mut TaskContext<'_>) {
        for warning in self.pending.drain(..) {
            cx.warn(warning);
        }
    }

    /// The tasks as the list says now (`None` without a list), counted for the summary.
    fn load(&mut self) -> Result<Option<Vec<ListedTask>>, EscalationError> {
        let Some(list) = &mut self.list else {
            return Ok(None);
        };
        let tasks = list.load()?;
        for warning in list.load_warnings() {
            if self.said.insert(warning.clone()) {
                self.pending.push(warning);
            }
        }
        self.counts = Some(summary(&tasks));
        Ok(Some(tasks))
    }

    /// The state the list gives task `id` now (`None`: no list, or no such task).
    fn state_of(&mut self, id: &str) -> Result<Option<TaskState>, EscalationError> {
        Ok(self
            .load()?
            .and_then(|tasks| tasks.into_iter().find(|t| t.id == id).map(|t| t.state)))
    }

    fn pick(&mut self, cx: &mut TaskContext<'_>) -> Result<NextTask, EscalationError> {
        let mut tasks = self.load()?;
        let gone = |tasks: &[ListedTask], id: &str| !tasks.iter().any(|t| t.id == id);
        if let (Some(listed), Some(current)) = (&tasks, &self.current) {
            if self.story_mode() && gone(listed, &current.id) {
                self.drop_gone(cx)?;
                tasks = self.load()?;
            }
        }
        let Some(tasks) = tasks else {
            // One task; its attempts are still recorded for the progress.txt entry.
            let current = self.current.get_or_insert_with(|| Current {
                id: MAIN_TASK.to_owned(),
                title: String::new(),
                iterations: Vec::new(),
                last_failure: Vec::new(),
            });
            return Ok(NextTask::Work(Task::new(current.id.clone())));
        };
        // With checks, the checks judge the task, not a pass the agent marked itself.
        let keep_on = |t: &&ListedTask| match self.has_checks {
            true => t.state != TaskState::Blocked,
            false => t.state == TaskState::Pending,
        };
        let task = self
            .current
            .as_ref()
            .and_then(|c| tasks.iter().find(|t| t.id == c.id))
            .filter(keep_on);
        let task = match &self.only {
            // `--task`: that task whatever its priority, until it passes or is blocked.
            Some(only) if task.is_none_or(|t| t.id != *only) => {
                match tasks.iter().find(|t| t.id == *only) {
                    Some(t) if t.state == TaskState::Passed => {
                        return Ok(NextTask::End(StoryEnd::TaskPassed.reason()));
                    }
                    Some(t) if t.state == TaskState::Blocked => {
                        return Ok(NextTask::End(StoryEnd::TaskBlocked.reason()));
                    }
                    Some(t) => Some(t),
                    None if self.only_passed => {
                        return Ok(NextTask::End(StoryEnd::TaskPassed.reason()));
                    }
                    None => return Err(self.no_such_task(only, &tasks)),
                }
            }
            _ => task.or_else(|| ralph_tasks::next(&tasks)),
        };
        let Some(task) = task else {
            // Tasks still to do that none can start wait on a `dependsOn` that cannot pass.
            return Ok(NextTask::End(match ralph_tasks::counts(&tasks) {
                (_, _, remaining) if remaining > 0 => StoryEnd::WorkLeft.reason(),
                (_, blocked, _) if blocked > 0 => StoryEnd::StoriesBlocked.reason(),
                _ => StoryEnd::StoriesDone.reason(),
            }));
        };
        if self.current.as_ref().is_none_or(|c| c.id != task.id) {
            self.breaker.reset();
            self.answered = None;
            self.current = Some(Current {
                id: task.id.clone(),
                title: task.title.clone(),
                iterations: Vec::new(),
                last_failure: Vec::new(),
            });
        }
        let mut work = Task::new(task.id.clone());
        work.placeholders = task.placeholders.clone();
        if let Some([question, answer]) = &self.answered {
            work.placeholders
                .insert("task.question".to_owned(), question.clone());
            work.placeholders
                .insert("task.answer".to_owned(), answer.clone());
        }
        // A parallel run's word on why the earlier work did not land; empty otherwise.
        work.placeholders
            .insert("story.conflict".to_owned(), self.conflict.clone());
        Ok(NextTask::Work(work))
    }

    /// Without checks, the task in progress found marked passed before its next iteration (a
    /// person marked it while the run was stopped) is passed now, its work committed as its
    /// own: otherwise the next task would start on it, and a revert file it as that task's.
    fn pass_if_marked(&mut self, cx: &mut TaskContext<'_>) -> Result<(), EscalationError> {
        let Some(current) = self.current.as_ref().filter(|_| !self.has_checks) else {
            return Ok(());
        };
        let id = current.id.clone();
        if self.state_of(&id)? == Some(TaskState::Passed) {
            self.pass(cx)?;
        }
        Ok(())
    }

    /// While the agent's question waits for a person: the wait, or `None` once answered
    /// (the question and answer go into the next prompt) or when nothing is asked.
    fn wait_for_answer(
        &mut self,
        cx: &mut TaskContext<'_>,
    ) -> Result<Option<TaskWait>, EscalationError> {
        let (Some(asked), Some(list)) = (&self.asked, &mut self.list) else {
            return Ok(None);
        };
        // An issue's address is a page the answer goes on; a file is a place it goes in.
        let on = if asked.at.contains("://") { "on" } else { "in" };
        let why = format!("waiting for an answer {on} {}", asked.at);
        match list.answer(asked) {
            Ok(Some(answer)) => {
                self.answered = Some([asked.question.clone(), answer]);
                self.asked = None;
                Ok(None)
            }
            Ok(None) => Ok(Some(TaskWait::new(list.answer_poll(), why))),
            // A person is editing the list: look again later.
            Err(TaskListError::Unreadable(_)) => Ok(Some(TaskWait::new(list.answer_poll(), why))),
            Err(TaskListError::NoSuchTask { location, id }) => {
                cx.warn(format!(
                    "{location}: no task \"{id}\" any more, so its question is not waited for"
                ));
                self.asked = None;
                Ok(None)
            }
            Err(err @ TaskListError::NoSuchQuestion { .. }) => {
                cx.warn(format!(
                    "{err} (a person removed it), so the wait for its answer ends: the task \
                     goes on without one"
                ));
                self.asked = None;
                Ok(None)
            }
            Err(err) => Err(err.into()),
        }
    }

    /// The agent asked a person (`ask` with a `question`): the list puts the question where
    /// the task lives, and the next iteration waits for the answer. Not an attempt.
    fn ask(&mut self, question: &str, task: &str, cx: &mut TaskContext<'_>) {
        let Some(list) = &mut self.list else {
            return;
        };
        match list.ask(task, question) {
            Ok(asked) => self.asked = Some(asked),
            Err(err) => cx.warn(format!(
                "the agent asked \"{question}\", but {err}; the loop goes on without an answer"
            )),
        }
    }

    /// The task in progress left its list while it ran (a person closed its issue, removed
    /// its line): its work is saved under `refs/ralph/attempts/<id>/<n>` and the tree goes
    /// back to the checkpoint, as a revert does, with a progress.txt entry and a `WARNING`;
    /// nothing is written to the list, and the loop goes on with the next task.
    fn drop_gone(&mut self, cx: &mut TaskContext<'_>) -> Result<(), EscalationError> {
        let Some(current) = self.current.take() else {
            return Ok(());
        };
        self.breaker.reset();
        let location = self.list.as_ref().map(|l| l.location()).unwrap_or_default();
        let gone = format!(
            "{location}: task {} is no longer in the list (closed or removed by a person while \
             it ran), so it is dropped",
            current.id
        );
        let Some(repo) = &self.repo else {
            cx.warn(format!("{gone}; its work stays in the folder"));
            return Ok(());
        };
        // Named after the journal entry: a kill in between leaves no saved work unjournaled.
        let work = repo.git.save_unnamed(
            &format!("refs/ralph/attempts/{}", git::ref_component(&current.id)),
            &format!(
                "ralph: work on {} saved as the task left {location}",
                current.id
            ),
            &repo.own,
        )?;
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let mut entry = format!(
            "## {now} · {} · dropped: no longer in {location}\nabandoned work saved as {} \
             (get it back: git checkout {})\n",
            current.id, work.refname, work.refname
        );
        let step = |work: &Saved, entry: &str| journal::Step::Revert {
            saved_ref: work.refname.clone(),
            saved_commit: Some(work.commit.clone()),
            progress: std::path::absolute(&self.progress).unwrap_or_else(|_| self.progress.clone()),
            entry: entry.to_owned(),
            notes: None,
            reason: "no longer in the list".to_owned(),
        };
        self.record(step(&work, &entry), Some(&current.id))?;
        let Some(repo) = &self.repo else {
            return Ok(());
        };
        let mut work = work;
        let named = repo.git.name_saved(&work)?;
        if named.refname != work.refname {
            // Another writer took the number meanwhile: the entry names the next.
            entry = entry.replace(&work.refname, &named.refname);
            work = named;
            self.record(step(&work, &entry), Some(&current.id))?;
        }
        progress::append(&self.progress, &entry)?;
        repo.git
            .restore(&repo.checkpoint, repo.branch.as_deref(), &repo.keep, &work)?;
        cx.warn(format!(
            "{gone}; its work is saved under {} and reverted",
            work.refname
        ));
        cx.emit(StoryEvent::Reverted {
            story_id: Some(current.id),
            checkpoint: repo.checkpoint.clone(),
            saved_ref: work.refname,
        });
        self.recorded_done()
    }

    /// The next task, or why none ([`TaskSource::next_task`]). A list that says "not now"
    /// ([`TaskListError::RetryAfter`]) is a wait the engine makes, then the look again.
    fn choose_next(&mut self, cx: &mut TaskContext<'_>) -> NextTask {
        self.say_pending(cx);
        let not_now = |err: EscalationError, cx: &mut TaskContext<'_>| match err {
            EscalationError::Tasks(TaskListError::RetryAfter { wait, why }) => {
                NextTask::Wait(TaskWait::new(wait, why))
            }
            err => NextTask::End(Self::failed_in(&err, cx)),
        };
        if let Some(wait) = self.not_now.take() {
            return NextTask::Wait(wait);
        }
        match self.wait_for_answer(cx) {
            Ok(Some(wait)) => return NextTask::Wait(wait),
            Ok(None) => {}
            Err(err) => return not_now(err, cx),
        }
        if let Err(err) = self.pass_if_marked(cx) {
            return not_now(err, cx);
        }
        if let Err(err) = self.retick(cx) {
            return not_now(err, cx);
        }
        let mut next = match self.write_marks(cx) {
            Ok(Some(wait)) => NextTask::Wait(wait),
            Ok(None) => self.pick(cx).unwrap_or_else(|err| not_now(err, cx)),
            Err(err) => not_now(err, cx),
        };
        // What the list's look found (a title on two items), said before the task starts.
        self.say_pending(cx);
        if let NextTask::Work(task) = &next {
            // Recorded so that a ralph killed during it is understood: without checks the
            // agent's own `passes: true` passes the story (the next start commits the pass),
            // and commits on top of where it began are its agent's.
            let step = journal::Step::Attempt {
                agent_marks: self.story_mode() && !self.has_checks,
            };
            let story = Some(task.id.as_str()).filter(|_| self.story_mode());
            if let Err(err) = self.record(step, story) {
                return NextTask::End(Self::failed_in(&err, cx));
            }
        }
        // Every iteration on a story is an attempt on it; the breaker counts the failed ones.
        if let (NextTask::Work(task), Some(current)) = (&mut next, &self.current) {
            if self.story_mode() {
                let attempt = self.breaker.attempts() + 1;
                task.fields
                    .extend(StoryAttempt::new(current.id.clone(), attempt).fields());
                cx.emit(StoryEvent::StoryStarted {
                    story_id: current.id.clone(),
                    title: current.title.clone(),
                    attempt: self.breaker.attempts() + 1,
                    max_attempts: self.breaker.max_attempts(),
                });
            }
        }
        next
    }

    /// What follows an iteration ([`TaskSource::iteration_ended`]). A list that says "not
    /// now" while the iteration is judged leaves the judging to the next look, which waits.
    fn decide(&mut self, report: &IterationReport<'_>, cx: &mut TaskContext<'_>) -> TaskDecision {
        match self.judge(report, cx).and_then(|decision| {
            self.recorded_done()?;
            Ok(decision)
        }) {
            Ok(decision) => decision,
            Err(EscalationError::Tasks(TaskListError::RetryAfter { why, .. })) => {
                cx.warn(format!(
                    "{why}; the task's state is read again before the next iteration"
                ));
                TaskDecision::Continue
            }
            Err(err) => TaskDecision::Stop(Self::failed_in(&err, cx)),
        }
    }
}

impl TaskSource for Escalation {
    type State = EscalationState;

    /// Story mode stops after [`STORY_MODE_MAX_ITERATIONS`] unless told otherwise.
    fn default_max_iterations(&self) -> Option<u64> {
        self.story_mode().then_some(STORY_MODE_MAX_ITERATIONS)
    }

    fn handles_state(&self, name: &str) -> bool {
        name == ASK_STATE && self.story_mode()
    }

    fn next_task(&mut self, cx: &mut TaskContext<'_>) -> NextTask {
        let next = self.choose_next(cx);
        self.land_before_passing(next, cx)
    }

    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        self.record_for_pull_request(report);
        self.decide(report, cx)
    }

    fn limit_reached(&mut self, cx: &mut TaskContext<'_>) -> EndReason {
        let reason = self.limit_reason(cx);
        self.land_at_limit(reason, cx)
    }

    fn summary(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut fields = self.counts.map(StoriesSummary::fields).unwrap_or_default();
        // Which list, so what reads the run back calls its tasks as the list does.
        if let (false, Some(list)) = (fields.is_empty(), &self.list) {
            fields.insert(TaskWords::FIELD.to_owned(), list.kind().into());
        }
        fields
    }

    fn snapshot(&self, ending: bool) -> Option<EscalationState> {
        Some(self.state(ending))
    }

    fn restore(&mut self, state: EscalationState, cx: &mut TaskContext<'_>) {
        self.say_pending(cx);
        self.take_up(state, cx);
    }
}

impl Escalation {
    /// Why the run ends at its iteration limit ([`TaskSource::limit_reached`]), before a
    /// `--task` that passed lands as a pull request.
    fn limit_reason(&mut self, cx: &mut TaskContext<'_>) -> EndReason {
        self.say_pending(cx);
        match self.write_marks(cx) {
            Ok(None) => {}
            // The run ends here: the marks stay in its session for the next run to write.
            Ok(Some(wait)) => cx.warn(format!(
                "{}; the run ends first, so it is kept in the run's session",
                wait.why
            )),
            Err(err) => return Self::failed_in(&err, cx),
        }
        match self.load() {
            Ok(Some(tasks)) if self.only.is_some() => {
                match self
                    .only
                    .as_deref()
                    .and_then(|id| tasks.iter().find(|t| t.id == id))
                    .map(|t| t.state)
                {
                    Some(TaskState::Passed) => StoryEnd::TaskPassed.reason(),
                    None if self.only_passed => StoryEnd::TaskPassed.reason(),
                    Some(TaskState::Blocked) => StoryEnd::TaskBlocked.reason(),
                    _ => StoryEnd::MaxIterationsWorkLeft.reason(),
                }
            }
            Ok(Some(tasks)) => match ralph_tasks::counts(&tasks) {
                (_, _, remaining) if remaining > 0 => StoryEnd::MaxIterationsWorkLeft.reason(),
                (_, blocked, _) if blocked > 0 => StoryEnd::StoriesBlocked.reason(),
                _ => StoryEnd::StoriesDone.reason(),
            },
            Ok(None) => EndReason::MaxIterations,
            Err(err) => Self::failed_in(&err, cx),
        }
    }
}

/// [`EscalationError::ChangedWhileStopped`]'s words.
fn changed_while_stopped(dir: &Path, moved: Option<&[String; 2]>, paths: &[String]) -> String {
    let mut what = Vec::new();
    if let Some([left, now]) = moved {
        what.push(format!(
            "HEAD moved from {} to {}",
            journal::short(left),
            journal::short(now)
        ));
    }
    if !paths.is_empty() {
        what.push(format!("uncommitted changes to {}", paths.join(", ")));
    }
    format!(
        "{}: the tree changed while the run was stopped ({}), and ralph cannot tell that from \
         its interrupted attempt's work, which a revert would remove. Put it back as the run left \
         it and resume again (commit your changes on another branch, or stash them: git stash \
         push -- <paths>); or start afresh with `ralph run --allow-dirty`, which saves every \
         uncommitted change, the attempt's work included, under \
         refs/ralph/attempts/preexisting/<n> and leaves those paths to you",
        dir.display(),
        what.join("; ")
    )
}

/// How a list is named in a message that it waits: `prd.json` for stories.
fn list_name(list: &dyn TaskList) -> String {
    match list.kind() {
        "prd" => "prd.json".to_owned(),
        _ => list.location(),
    }
}

impl From<TaskListError> for EscalationError {
    /// prd.json's own errors stay [`EscalationError::Prd`], located as before.
    fn from(err: TaskListError) -> Self {
        match err {
            TaskListError::Unreadable(inner) | TaskListError::Failed(inner)
                if inner.is::<PrdError>() =>
            {
                match inner.downcast::<PrdError>() {
                    Ok(prd) => Self::Prd(*prd),
                    Err(other) => Self::Tasks(TaskListError::Failed(other)),
                }
            }
            other => Self::Tasks(other),
        }
    }
}

/// The file `path` names, through a symlink (the link's target), or `path` itself.
pub(crate) fn followed(path: PathBuf) -> PathBuf {
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(&path).unwrap_or(path),
        _ => path,
    }
}

fn summary(tasks: &[ListedTask]) -> StoriesSummary {
    let (passed, blocked, remaining) = ralph_tasks::counts(tasks);
    StoriesSummary {
        passed,
        blocked,
        remaining,
    }
}

fn push_indented(out: &mut String, text: &str, empty: &str) {
    let text = text.trim_end();
    if text.is_empty() {
        let _ = writeln!(out, "    {empty}");
    }
    for line in text.lines() {
        let _ = writeln!(out, "    {line}");
    }
}
