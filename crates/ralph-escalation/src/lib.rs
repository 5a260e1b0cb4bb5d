//! Escalation for ralph loops: the layered defence against a loop stuck on one problem.
//!
//! This crate owns story mode over a task list (which task is next, its placeholders, marking
//! it passed or blocked): prd.json, a Markdown checklist, or an embedder's own [`TaskList`]
//! (where tasks live is a seam, [`tasks`]; every list gets every guarantee below), the
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
pub mod events;
pub mod forge;
pub mod git;
mod journal;
pub mod lock;
pub mod markdown;
pub mod plan;
pub mod pr_config;
mod pr_task;
pub mod prd;
mod prd_list;
pub mod preflight;
pub mod progress;
pub mod pull_request;
mod resume;
mod retick;
pub mod run_folder;
pub mod signature;
pub mod tasks;
pub mod tasks_config;
mod vocabulary;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ralph_engine::frontmatter::{Config, EscalationConfig};
use ralph_engine::{
    CheckResult, EndReason, IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource,
    TaskWait,
};

pub use breaker::{Breaker, Trip};
pub use events::{
    StoriesSummary, StoryAttempt, StoryEnd, StoryEvent, TASK_BLOCKED_EXIT_CODE, TaskWords,
};
pub use git::{Git, GitError, Saved, switch_to_task_branch, task_branch};
pub use journal::JournalError;
pub use lock::lock_repository;
pub use markdown::MarkdownList;
pub use pr_config::{Forge, PrSettings};
pub use prd::{Mark, Passes, Prd, PrdError, Story};
pub use prd_list::PrdList;
pub use progress::ProgressError;
pub use pull_request::{PrFacts, PrLanded, PrLanding, PrTask, pr_title};
pub use resume::Interrupted;
pub use signature::{Signature, signature};
pub use tasks::{Asked, Landed, ListedTask, TaskList, TaskListError, TaskState};
pub use tasks_config::TasksConfig;
pub use vocabulary::{ASK_STATE, STORY_PLACEHOLDERS, TASK_PLACEHOLDERS, vocabulary};

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
        "--task {id}: the task is one of a task list, and this RALPH.md has none: no `tasks:` section and no `escalation.prd` (`tasks: {{markdown: TODO.md}}`, `tasks: {{prd: prd.json}}`; `ralph init --prd` shows one)"
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
    /// Opens the escalation `config` asks for (`None` without an `escalation` block). Story
    /// mode reads prd.json now; `revert` needs a git repository with a commit, no submodules,
    /// the means to commit (an identity; working signing with `commit.gpgsign`) and a clean
    /// tree (or `allow_dirty`, which saves the changes first). A pass or a revert a killed ralph
    /// left in the repository's journal is finished first; beyond it nothing is changed on error.
    pub fn open(config: &Config, options: Options) -> Result<Option<Self>, EscalationError> {
        Self::open_accepting(config, options, None, Opening::Run)
    }

    /// What [`open`](Self::open) would refuse, found by the same checks, changing nothing: a
    /// step a killed ralph left in the journal is not finished (and, as the run finishes it
    /// before it looks at the tree, the tree is not judged then). What `ralph check` reports.
    pub fn check_open(config: &Config, options: Options) -> Result<(), EscalationError> {
        Self::open_accepting(config, options, None, Opening::Check).map(drop)
    }

    /// [`open`](Self::open), or for a run that goes on, [`resume`](Self::resume): its tree
    /// accepted as `accept` says.
    fn open_accepting(
        config: &Config,
        mut options: Options,
        accept: Option<&resume::Accept>,
        opening: Opening,
    ) -> Result<Option<Self>, EscalationError> {
        let tasks = options.tasks.take();
        let Some(mut this) = Self::preview_with(config, &options.cwd, tasks)? else {
            return Ok(None);
        };
        if Self::settings(config).revert {
            // prd.json and progress.txt as written: a symlink, its target resolved in `this`.
            let written: Vec<PathBuf> = config
                .escalation
                .iter()
                .flat_map(|esc| esc.prd.iter().chain([&esc.progress]))
                .map(|p| options.cwd.join(p))
                .collect();
            this.open_repo(&options, &written, accept, opening)?;
        }
        Ok(Some(this))
    }

    /// The `escalation` settings: as written, or the defaults for a task list given without
    /// an `escalation` block.
    fn settings(config: &Config) -> std::borrow::Cow<'_, EscalationConfig> {
        match &config.escalation {
            Some(esc) => std::borrow::Cow::Borrowed(esc),
            None => std::borrow::Cow::Owned(EscalationConfig::default()),
        }
    }

    /// The escalation `config` asks for, without its repository: it reads prd.json and
    /// changes nothing, ever, as long as no iteration is reported to it. This is what
    /// `--dry-run` uses to show the story iteration 1 would work on.
    pub fn preview(config: &Config, cwd: &Path) -> Result<Option<Self>, EscalationError> {
        Self::preview_with(config, cwd, None)
    }

    /// [`preview`](Self::preview) with the tasks in `tasks` (`None`: prd.json when
    /// `escalation.prd` is set). A list given without an `escalation` block escalates with
    /// its defaults.
    pub fn preview_with(
        config: &Config,
        cwd: &Path,
        tasks: Option<Box<dyn TaskList>>,
    ) -> Result<Option<Self>, EscalationError> {
        if config.escalation.is_none() && tasks.is_none() {
            return Ok(None);
        }
        let esc = Self::settings(config);
        // Paths stay as written when ralph runs where the agent does, so errors name them so.
        let at = |p: &Path| match cwd == Path::new(".") {
            true => p.to_path_buf(),
            false => cwd.join(p),
        };
        // A symlink is followed once, here: files are replaced by renaming a new one over
        // them, which would replace the link itself.
        let mut list = tasks.or_else(|| {
            esc.prd
                .as_deref()
                .map(|p| Box::new(PrdList::new(at(p))) as Box<dyn TaskList>)
        });
        let progress = followed(at(&esc.progress));
        let first = list.as_ref().and_then(|l| l.files().into_iter().next());
        progress::check_path(&progress, first.as_deref(), None)?;
        let (counts, not_now) = match list.as_mut().map(|list| list.load()) {
            Some(Ok(tasks)) => (Some(summary(&tasks)), None),
            // Not now (a rate limit, a 5xx): the first look waits as long as the list asked,
            // in the run, saying why, before it asks again.
            Some(Err(TaskListError::RetryAfter { wait, why })) => {
                (None, Some(TaskWait::new(wait, why)))
            }
            None => (None, None),
            Some(Err(err)) => return Err(err.into()),
        };
        Ok(Some(Self {
            list,
            progress,
            has_checks: !config.done_when.is_empty(),
            repo: None,
            breaker: Breaker::new(esc.same_error_limit, config.convergence.max_attempts),
            current: None,
            counts,
            preexisting: None,
            pending: Vec::new(),
            said: std::collections::BTreeSet::new(),
            unwritten: Vec::new(),
            conflict: String::new(),
            only: None,
            asked: None,
            answered: None,
            not_now,
            only_passed: false,
            passed: std::collections::BTreeMap::new(),
            pull_request: None,
        }))
    }

    fn open_repo(
        &mut self,
        options: &Options,
        written: &[PathBuf],
        resume: Option<&resume::Accept>,
        opening: Opening,
    ) -> Result<(), EscalationError> {
        let git = Git::open(&options.cwd)?;
        git.head()?;
        let folder = std::fs::canonicalize(&options.cwd).unwrap_or_else(|_| options.cwd.clone());
        if opening != Opening::Check && folder != git.top() {
            // Reverting only the folder would keep an attempt's edits elsewhere: said instead.
            self.pending.push(format!(
                "{}: the loop's folder is inside the repository {}; a revert covers the whole \
                 repository: an edit anywhere in it when the breaker trips (yours too) is saved \
                 with the attempt under refs/ralph/attempts/ and reverted",
                folder.display(),
                git.top().display()
            ));
        }
        let submodules = git.submodules()?;
        if !submodules.is_empty() {
            return Err(GitError::Submodules {
                dir: git.top().to_path_buf(),
                paths: submodules,
            }
            .into());
        }
        // Before the first paid run: a commit that fails later would end the run mid-story.
        git.check_can_commit()?;
        if opening == Opening::Check && journal::pending(&git)? {
            return Ok(());
        }
        // A pass or a revert a killed ralph left half done is finished before anything looks
        // at the tree: its work is the story's, not part of a dirty tree or the next attempt.
        let (found, said) = journal::finish(&git, self.list.as_deref_mut())?;
        self.pending.extend(said);
        if found.is_some() && self.list.is_some() {
            self.load()?;
        }
        let checkpoint = git.head()?;
        let branch = git.head_branch()?;
        let rel = |p: &Path| git.relative(&options.cwd, p);
        let mut own: Vec<PathBuf> = std::iter::once(Path::new(".ralph"))
            .chain(options.protect.iter().map(PathBuf::as_path))
            .filter_map(rel)
            .collect();
        let mut keep = own.clone();
        // A symlinked prd.json or progress.txt: the link and the file it points to.
        let files = self.list_files();
        keep.extend(
            files
                .iter()
                .chain([&self.progress])
                .chain(written)
                .filter_map(|p| rel(p)),
        );
        let prd = files.first().and_then(|p| rel(p));
        if let Some(resume) = resume {
            resume.extend_own(&mut own, &mut keep);
        }
        let mut dirty = git.dirty_paths(&keep)?;
        if let Some(resume) = resume.filter(|_| !dirty.is_empty()) {
            if resume.accepts(&git, &keep) {
                // The run's own interrupted attempt: it goes on from this tree.
                dirty.clear();
                self.pending.extend(resume.warning().map(str::to_owned));
            } else if !options.allow_dirty {
                if let Some(refused) = resume.refusal(&git, &keep) {
                    return Err(refused);
                }
            }
        }
        if !dirty.is_empty() {
            if !options.allow_dirty {
                return Err(EscalationError::DirtyTree {
                    dir: git.top().to_path_buf(),
                    paths: dirty,
                });
            }
            let saved = git.save(
                "refs/ralph/attempts/preexisting",
                "ralph: uncommitted changes found at start-up (--allow-dirty)",
                &own,
            )?;
            self.pending.push(format!(
                "uncommitted changes saved under {} (--allow-dirty)",
                saved.refname
            ));
            self.preexisting = Some(saved.refname);
            // The user's own work in progress: never committed, saved or reverted by ralph.
            own.extend(dirty.into_iter().map(PathBuf::from));
            keep.extend(own.iter().cloned());
        }
        self.repo = Some(Repo {
            git,
            cwd: options.cwd.clone(),
            checkpoint,
            branch,
            keep,
            own,
            prd,
            found,
            killed: resume.is_some_and(resume::Accept::killed),
        });
        Ok(())
    }

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
    /// ([`StoryEnd::TaskBlocked`], [`TASK_BLOCKED_EXIT_CODE`]).
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
                exit_code: 1,
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
                exit_code: 1,
                converged: false,
                resumable: true,
            };
        }
        cx.warn(format!("escalation failed: {err}"));
        EndReason::State {
            reason: ESCALATION_FAILED.to_owned(),
            exit_code: 1,
        }
    }

    /// Records `step` on `story` as the step under way, with `revert` (see [`journal`]).
    fn record(&self, step: journal::Step, story: Option<&str>) -> Result<(), EscalationError> {
        let Some(repo) = &self.repo else {
            return Ok(());
        };
        let entry = journal::Journal {
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

    /// Writes the [`unwritten`](Self::unwritten) marks, each into the list as it is now, and
    /// tells the list each one landed. While the list cannot be read or does not parse,
    /// nothing is written: a `WARNING` says so and the marks wait for a later step. While the
    /// list's service says "not now" ([`TaskListError::RetryAfter`]), the marks wait unwritten
    /// and the wait comes back, for the engine to make. A mark whose task a person removed is
    /// dropped.
    fn write_marks(
        &mut self,
        cx: &mut TaskContext<'_>,
    ) -> Result<Option<TaskWait>, EscalationError> {
        let Some(list) = &mut self.list else {
            return Ok(None);
        };
        let mut wrote = false;
        while let Some(mark) = self.unwritten.first() {
            match list.write_mark(mark) {
                Ok(()) => {
                    wrote = true;
                    if let Err(err) = list.after_landed(&Landed::new(mark)) {
                        cx.warn(format!(
                            "{}: \"{mark}\" is written, but: {err}",
                            list.location()
                        ));
                    }
                }
                Err(TaskListError::Unreadable(err)) => {
                    cx.warn(format!(
                        "{err}; ralph writes {} only once it reads and parses again: \
                         \"{mark}\" is kept in the run's session until then",
                        list_name(list.as_ref())
                    ));
                    return Ok(None);
                }
                Err(TaskListError::RetryAfter { wait, why }) => {
                    let why = format!("{why}; \"{mark}\" is written after the wait");
                    return Ok(Some(TaskWait::new(wait, why)));
                }
                Err(TaskListError::NoSuchTask { location, id }) => cx.warn(format!(
                    "{location}: no {} \"{id}\" any more, so \"{mark}\" is not written",
                    TaskWords::of_list(list.kind()).one
                )),
                Err(err) => return Err(err.into()),
            }
            self.unwritten.remove(0);
        }
        // The counts after the marks; with none written the next look reads the list anyway,
        // and a "not now" here is a wait, never a try made and forgotten.
        if wrote {
            match list.load() {
                Ok(tasks) => self.counts = Some(summary(&tasks)),
                Err(TaskListError::RetryAfter { wait, why }) => {
                    return Ok(Some(TaskWait::new(wait, why)));
                }
                Err(_) => {}
            }
        }
        Ok(None)
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
            _ => task.or_else(|| tasks::next(&tasks)),
        };
        let Some(task) = task else {
            // Tasks still to do that none can start wait on a `dependsOn` that cannot pass.
            return Ok(NextTask::End(match tasks::counts(&tasks) {
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

    fn judge(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> Result<TaskDecision, EscalationError> {
        if let Some(current) = &mut self.current {
            current.iterations.push(report.iteration);
        }
        if let Some(ask) = report
            .state
            .filter(|m| m.name == ASK_STATE && self.story_mode())
        {
            let question = ask.attr("question").unwrap_or("").to_owned();
            if question.trim().is_empty() {
                cx.warn(
                    "the agent reported `ask` without a question=\"...\"; nothing is asked"
                        .to_owned(),
                );
            } else {
                self.ask(&question, &report.task.id.clone(), cx);
            }
            return Ok(TaskDecision::Continue);
        }
        let blocked = report
            .state
            .filter(|m| m.name == "blocked")
            .map(|m| m.attr("reason"));
        // Without checks the agent says when a story is done: `done`, or `passes` in prd.json.
        let said_done = !self.has_checks && report.state.is_some_and(|m| m.name == "done");
        let passed = match (report.attempt, self.story_mode()) {
            // The agent's `blocked` wins over checks that pass: it knows what they do not test.
            (_, true) if blocked.is_some() => false,
            (Some(attempt), _) => attempt.converged,
            (None, true) if !self.has_checks => {
                said_done || self.state_of(&report.task.id)? == Some(TaskState::Passed)
            }
            (None, _) => said_done,
        };
        if passed {
            return match (self.story_mode(), said_done) {
                (true, _) => self.pass(cx),
                (false, true) => Ok(TaskDecision::Stop(EndReason::AgentDone)),
                // One task: the engine ends the run as converged.
                (false, false) => Ok(TaskDecision::Continue),
            };
        }
        if let (Some(attempt), Some(current)) = (report.attempt, &mut self.current) {
            current.last_failure = attempt
                .results
                .iter()
                .filter(|r| !r.passed())
                .cloned()
                .collect();
        }
        let trip = match (blocked, report.attempt) {
            (Some(reason), _) => Some(self.breaker.blocked(reason)),
            (None, Some(attempt)) => {
                let sig = signature(attempt.results);
                let trip = self.breaker.failed(sig.as_ref().map(|s| s.hash.as_str()));
                trip.or_else(|| {
                    attempt.exhausted.then(|| Trip::MaxAttempts {
                        count: self.breaker.attempts(),
                    })
                })
            }
            // A story not done after an iteration without checks is a failed attempt.
            (None, None) if self.story_mode() && !self.has_checks => self.breaker.failed(None),
            // A state handler took the iteration (idle): not an attempt.
            (None, None) => None,
        };
        match trip {
            Some(trip) => self.escalate(&trip, cx),
            None => Ok(TaskDecision::Continue),
        }
    }

    fn pass(&mut self, cx: &mut TaskContext<'_>) -> Result<TaskDecision, EscalationError> {
        // A task a person took out of the list meanwhile (closed its issue) is not theirs to
        // receive a commit: its work is saved and dropped instead. A list that cannot be read
        // now says nothing of that: the pass goes on, its mark waiting as any other.
        if let Some(id) = self.current.as_ref().map(|c| c.id.clone()) {
            let gone = match self.list.as_mut().map(|list| list.load()) {
                Some(Ok(tasks)) => !tasks.iter().any(|t| t.id == id),
                None
                | Some(Err(TaskListError::Unreadable(_) | TaskListError::RetryAfter { .. })) => {
                    false
                }
                Some(Err(err)) => return Err(err.into()),
            };
            if self.story_mode() && gone {
                self.drop_gone(cx)?;
                return Ok(TaskDecision::NextTask);
            }
        }
        let Some(current) = self.current.take() else {
            return Ok(TaskDecision::NextTask);
        };
        // A task passed earlier that a stale save undid is ticked again first, so this pass
        // commit holds the list with both marks.
        self.retick(cx)?;
        // The commit (holding prd.json with the story marked) first, then prd.json in the
        // tree: a crash between them leaves the story unmarked, never marked passed without
        // its commit, and the journal has the next start finish the pass.
        self.record(journal::Step::Pass, Some(&current.id))?;
        let mark = Mark::passed(current.id.clone());
        // The commit's list: the file as it is now with the task marked, or as ralph last
        // read it when it does not parse now.
        let marked = match &mut self.list {
            Some(list) => list.marked_files(&mark)?,
            None => Vec::new(),
        };
        // HEAD at the task's start: a pass that commits nothing cites no commit of its own.
        let start = self.repo.as_ref().map(|r| r.checkpoint.clone());
        let checkpoint = match &mut self.repo {
            Some(repo) => {
                let text = marked.first().and_then(|(path, bytes)| {
                    let rel = repo.git.relative(&repo.cwd, path)?;
                    Some((rel, bytes.as_slice()))
                });
                let replace = text
                    .as_ref()
                    .filter(|(rel, _)| Some(rel) == repo.prd.as_ref())
                    .map(|(rel, bytes)| (rel.as_path(), *bytes));
                let head = repo.git.commit_checkpoint(
                    &journal::pass_message(&current.id),
                    &repo.own,
                    replace,
                )?;
                repo.checkpoint = head.clone();
                repo.branch = repo.git.head_branch()?;
                Some(head)
            }
            None => None,
        };
        self.passed.insert(current.id.clone(), checkpoint.clone());
        // The list is read again for the write: a person's edit made meanwhile stays.
        if self.story_mode() {
            self.unwritten.push(Mark::Passed {
                story_id: current.id.clone(),
                commit: checkpoint.clone().filter(|c| Some(c) != start.as_ref()),
                branch: self.repo.as_ref().and_then(|r| r.branch.clone()),
            });
            // Not now: the mark waits in the session, and the next look waits for the list.
            self.not_now = self.write_marks(cx)?;
        }
        self.recorded_done()?;
        self.only_passed |= self.only.as_deref() == Some(current.id.as_str());
        cx.emit(StoryEvent::StoryPassed {
            story_id: current.id,
            attempts: self.breaker.attempts() + 1,
            checkpoint,
        });
        self.breaker.reset();
        Ok(TaskDecision::NextTask)
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

    /// Log, save and revert, block, move on (or, without stories, end the loop).
    fn escalate(
        &mut self,
        trip: &Trip,
        cx: &mut TaskContext<'_>,
    ) -> Result<TaskDecision, EscalationError> {
        let current = self.current.take();
        let story_id = current
            .as_ref()
            .filter(|_| self.story_mode())
            .map(|c| c.id.clone());
        let last_failure = current
            .as_ref()
            .map(|c| c.last_failure.clone())
            .unwrap_or_default();
        let sig = match trip {
            Trip::SameError { signature, .. } => Some(signature.clone()),
            _ => signature(&last_failure).map(|s| s.hash),
        };
        cx.emit(StoryEvent::CircuitTripped {
            story_id: story_id.clone(),
            reason: trip.as_str().to_owned(),
            count: trip.count(),
            signature: sig,
        });
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let what = story_id.as_deref().unwrap_or(MAIN_TASK);
        let why = trip.describe(&last_failure);

        // Save before anything is logged or reverted: the log never names a missing ref, and
        // nothing is reset that is not stored. The saved work is named only once the journal
        // holds the revert (below): a kill in between must not leave an attempt saved while
        // the next start takes up its work in the tree.
        let mut saved = None;
        if let Some(repo) = &self.repo {
            let work = repo.git.save_unnamed(
                &format!("refs/ralph/attempts/{}", git::ref_component(what)),
                &format!("ralph: abandoned attempt at {what} ({why})"),
                &repo.own,
            )?;
            let commits = repo.git.log(&repo.checkpoint, "HEAD")?;
            // ralph's own files (prd.json, progress.txt) are not the agent's work.
            let diffstat = repo
                .git
                .diffstat(&repo.checkpoint, &work.commit, &repo.keep)?;
            saved = Some((work, commits, diffstat));
        }

        let mut entry = String::new();
        let title = current
            .as_ref()
            .filter(|c| !c.title.is_empty())
            .map(|c| format!(" \"{}\"", c.title))
            .unwrap_or_default();
        let _ = writeln!(entry, "## {now} · {what}{title} · circuit breaker tripped");
        let _ = writeln!(entry, "reason: {why}");
        if let Trip::SameError { signature, .. } = trip {
            let _ = writeln!(entry, "signature: {signature}");
        }
        let iterations = current
            .as_ref()
            .map(|c| {
                c.iterations
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let _ = writeln!(
            entry,
            "attempts: {} (iterations {iterations})",
            trip.count().max(self.breaker.attempts())
        );
        if let (Some(repo), Some((Saved { refname, .. }, commits, diffstat))) = (&self.repo, &saved)
        {
            let _ = writeln!(entry, "checkpoint: {}", repo.checkpoint);
            let _ = writeln!(
                entry,
                "abandoned work saved as {refname} (get it back: git checkout {refname})"
            );
            let _ = writeln!(entry, "commits since the checkpoint:");
            push_indented(&mut entry, commits, "(none)");
            let _ = writeln!(entry, "diffstat (checkpoint to abandoned work):");
            push_indented(&mut entry, diffstat, "(no changes)");
        }
        let _ = writeln!(entry, "persistent error:");
        if last_failure.is_empty() {
            let _ = writeln!(entry, "    (no failing checks)");
        }
        for r in &last_failure {
            let _ = writeln!(entry, "  $ {} ({})", r.command, r.status());
            let tail = r.tail.as_deref().unwrap_or("");
            let lines: Vec<&str> = tail.lines().collect();
            let from = lines.len().saturating_sub(PROGRESS_TAIL_LINES);
            push_indented(&mut entry, &lines[from..].join("\n"), "(no output)");
        }
        let progress_name = self.progress.file_name().map_or_else(
            || self.progress.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        // The story's notes, around the entry's line number.
        let notes_before = format!("blocked by ralph at {now}: {why}. Details: {progress_name}:");
        let mut notes_after = match &saved {
            Some((work, _, _)) => format!("; abandoned work: git checkout {}", work.refname),
            None => String::new(),
        };
        // From here on a killed ralph leaves the trip half done: the next start finishes it.
        if let Some((work, _, _)) = &mut saved {
            let step = |work: &Saved, entry: &str, notes_after: &str| journal::Step::Revert {
                saved_ref: work.refname.clone(),
                saved_commit: Some(work.commit.clone()),
                progress: std::path::absolute(&self.progress)
                    .unwrap_or_else(|_| self.progress.clone()),
                entry: entry.to_owned(),
                notes: story_id
                    .as_ref()
                    .map(|_| [notes_before.clone(), notes_after.to_owned()]),
                reason: why.clone(),
            };
            self.record(step(work, &entry, &notes_after), story_id.as_deref())?;
            if let Some(repo) = &self.repo {
                // Another writer took the number meanwhile: the work is saved under the next,
                // and the entry says which.
                let named = repo.git.name_saved(work)?;
                if named.refname != work.refname {
                    entry = entry.replace(&work.refname, &named.refname);
                    notes_after = notes_after.replace(&work.refname, &named.refname);
                    *work = named;
                    self.record(step(work, &entry, &notes_after), story_id.as_deref())?;
                }
            }
        }
        let line = progress::append(&self.progress, &entry)?;

        if let (Some(repo), Some((work, _, _))) = (&self.repo, &saved) {
            repo.git
                .restore(&repo.checkpoint, repo.branch.as_deref(), &repo.keep, work)?;
            cx.emit(StoryEvent::Reverted {
                story_id: story_id.clone(),
                checkpoint: repo.checkpoint.clone(),
                saved_ref: work.refname.clone(),
            });
        }

        let Some(id) = story_id else {
            self.recorded_done()?;
            return Ok(TaskDecision::Stop(StoryEnd::CircuitOpen.reason()));
        };
        let notes = format!("{notes_before}{line}{notes_after}");
        self.unwritten.push(Mark::Blocked {
            story_id: id.clone(),
            notes,
            reason: why.clone(),
            saved_ref: saved.as_ref().map(|(work, _, _)| work.refname.clone()),
        });
        // Not now: the mark waits in the session, and the next look waits for the list.
        self.not_now = self.write_marks(cx)?;
        // The mark and its progress.txt entry are committed, as a parallel run's queue does:
        // left in the tree they would fail the next task's clean-tree check, and its pass
        // commit would sweep them in.
        if let Some(repo) = &mut self.repo {
            repo.checkpoint =
                repo.git
                    .commit_checkpoint(&journal::blocked_message(&id), &repo.own, None)?;
            repo.branch = repo.git.head_branch()?;
        }
        self.recorded_done()?;
        cx.emit(StoryEvent::StoryBlocked {
            story_id: id,
            reason: why,
        });
        self.breaker.reset();
        Ok(TaskDecision::NextTask)
    }
}

impl TaskSource for Escalation {
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

    fn snapshot(&self, ending: bool) -> Option<serde_json::Value> {
        self.state(ending)
    }

    fn restore(&mut self, state: serde_json::Value, cx: &mut TaskContext<'_>) {
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
            Ok(Some(tasks)) => match tasks::counts(&tasks) {
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
    let (passed, blocked, remaining) = tasks::counts(tasks);
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

/// Whether `err` comes of a full disk: an I/O error `ENOSPC` (or a quota's `EDQUOT`) in its
/// chain of causes, or a command saying so in the words the C library gives those (git's
/// `fatal: ...: No space left on device`, which reaches ralph as text).
fn out_of_room(err: &EscalationError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if matches!(io.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
                return true;
            }
        }
        cause = e.source();
    }
    let said = err.to_string();
    said.contains("No space left on device") || said.contains("Disk quota exceeded")
}
