//! Escalation for ralph loops: the layered defence against a loop stuck on one problem.
//!
//! This crate owns prd.json story mode (which story is next, its placeholders, marking it
//! passed or blocked), the same-error circuit breaker (error [`signature`](mod@signature)s and the
//! [`Breaker`]), and the escalation that follows a trip: a progress.txt entry, a git revert to
//! the last checkpoint that first saves everything under `refs/ralph/attempts/<story>/<n>`, the
//! story blocked, the next one started. It plugs into the engine as a
//! [`ralph_engine::TaskSource`]; the engine knows nothing of git or prd.json.
//!
//! It must never destroy user work: nothing is reset before it is stored under a ref, ignored
//! files are never touched, nor are `.ralph/`, prd.json, progress.txt and the paths the embedder
//! protects, and every file it writes is replaced atomically. A pass or a revert is recorded in a
//! journal before it starts (`<git dir>/ralph-journal.json`), and the next start, resumed or not,
//! finishes one a kill cut short before it looks at the tree. All git commands go through
//! [`git`], the one module here that starts processes.

pub mod breaker;
pub mod events;
pub mod git;
mod journal;
pub mod lock;
pub mod prd;
pub mod preflight;
pub mod progress;
mod resume;
pub mod run_folder;
pub mod signature;
mod vocabulary;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ralph_engine::frontmatter::Config;
use ralph_engine::{
    CheckResult, EndReason, IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource,
};

pub use breaker::{Breaker, Trip};
pub use events::{StoriesSummary, StoryAttempt, StoryEnd, StoryEvent, TASK_BLOCKED_EXIT_CODE};
pub use git::{Git, GitError, Saved, switch_to_task_branch, task_branch};
pub use journal::JournalError;
pub use lock::lock_repository;
pub use prd::{Mark, Passes, Prd, PrdError, Story};
pub use progress::ProgressError;
pub use resume::Interrupted;
pub use signature::{Signature, signature};
pub use vocabulary::{STORY_PLACEHOLDERS, vocabulary};

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
    /// Git refused, or this is no place for a revert.
    #[error(transparent)]
    Git(#[from] GitError),
    /// progress.txt could not be written.
    #[error(transparent)]
    Progress(#[from] ProgressError),
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
    /// `ralph run --task ID` without stories: the RALPH.md has no `escalation.prd`.
    #[error(
        "--task {id}: the task is a story of a prd.json, and this RALPH.md has no `escalation.prd` (story mode: `ralph init --prd` shows one)"
    )]
    NotStoryMode {
        /// The id asked for.
        id: String,
    },
    /// `ralph run --task ID` with an id prd.json does not have.
    #[error(
        "{}: no story \"{id}\" (--task); its stories are: {}",
        .prd.display(),
        if .ids.is_empty() { "none".to_owned() } else { .ids.join(", ") }
    )]
    NoSuchTask {
        /// The prd.json.
        prd: PathBuf,
        /// The id asked for.
        id: String,
        /// The ids prd.json has, in its order.
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
#[derive(Debug, Clone)]
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
}

impl Options {
    /// Opening in `cwd`: a dirty tree refused, only ralph's own paths protected.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            allow_dirty: false,
            protect: Vec::new(),
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
    /// prd.json (the file a symlink points to) relative to the top folder, when inside it: a
    /// pass commit holds it with the story marked.
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
    prd: Option<PathBuf>,
    /// prd.json's last parse, reused while its bytes stay the same.
    prd_cache: prd::Cache,
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
    /// ralph's marks not yet in prd.json, oldest first: the file did not parse when they were
    /// made. Kept in the session and written at the next step that finds it readable.
    unwritten: Vec<Mark>,
    /// `ralph run --task ID`: the one story worked on; the run ends when it passes or is
    /// blocked.
    only: Option<String>,
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
        options: Options,
        accept: Option<&resume::Accept>,
        opening: Opening,
    ) -> Result<Option<Self>, EscalationError> {
        let Some(mut this) = Self::preview(config, &options.cwd)? else {
            return Ok(None);
        };
        if config.escalation.as_ref().is_some_and(|esc| esc.revert) {
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

    /// The escalation `config` asks for, without its repository: it reads prd.json and
    /// changes nothing, ever, as long as no iteration is reported to it. This is what
    /// `--dry-run` uses to show the story iteration 1 would work on.
    pub fn preview(config: &Config, cwd: &Path) -> Result<Option<Self>, EscalationError> {
        let Some(esc) = &config.escalation else {
            return Ok(None);
        };
        // Paths stay as written when ralph runs where the agent does, so errors name them so.
        let at = |p: &Path| match cwd == Path::new(".") {
            true => p.to_path_buf(),
            false => cwd.join(p),
        };
        // A symlink is followed once, here: files are replaced by renaming a new one over
        // them, which would replace the link itself.
        let prd = esc.prd.as_deref().map(at).map(followed);
        let progress = followed(at(&esc.progress));
        progress::check_path(&progress, prd.as_deref(), None)?;
        let mut prd_cache = prd::Cache::default();
        let counts = match &prd {
            Some(path) => Some(summary(&prd_cache.load(path)?)),
            None => None,
        };
        Ok(Some(Self {
            prd,
            prd_cache,
            progress,
            has_checks: !config.done_when.is_empty(),
            repo: None,
            breaker: Breaker::new(esc.same_error_limit, config.convergence.max_attempts),
            current: None,
            counts,
            preexisting: None,
            pending: Vec::new(),
            unwritten: Vec::new(),
            only: None,
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
        let (found, said) = journal::finish(&git)?;
        self.pending.extend(said);
        if found.is_some() && self.prd.is_some() {
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
        keep.extend(
            self.prd
                .iter()
                .chain([&self.progress])
                .chain(written)
                .filter_map(|p| rel(p)),
        );
        let prd = self.prd.as_deref().and_then(rel);
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

    /// `ralph run --task ID`: work on story `id` alone, whatever its priority, and end the run
    /// when it passes ([`StoryEnd::TaskPassed`], exit 0) or is blocked
    /// ([`StoryEnd::TaskBlocked`], [`TASK_BLOCKED_EXIT_CODE`]).
    /// Refused without stories, or when prd.json has no story `id` (the error lists the ids
    /// it has).
    pub fn only_story(&mut self, id: &str) -> Result<(), EscalationError> {
        let not_story_mode = || EscalationError::NotStoryMode { id: id.to_owned() };
        let path = self.prd.clone().ok_or_else(not_story_mode)?;
        let prd = self.load()?.ok_or_else(not_story_mode)?;
        if prd.story(id).is_none() {
            return Err(EscalationError::NoSuchTask {
                prd: path,
                id: id.to_owned(),
                ids: prd.stories().iter().map(|s| s.id.clone()).collect(),
            });
        }
        self.only = Some(id.to_owned());
        Ok(())
    }

    /// Whether stories come from a prd.json.
    pub fn story_mode(&self) -> bool {
        self.prd.is_some()
    }

    /// Says why as a `WARNING` event, so every sink sees it.
    fn failed_in(err: &EscalationError, cx: &mut TaskContext<'_>) -> EndReason {
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
                .prd
                .as_deref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
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

    fn load(&mut self) -> Result<Option<Prd>, EscalationError> {
        let Some(path) = &self.prd else {
            return Ok(None);
        };
        let prd = self.prd_cache.load(path)?;
        self.counts = Some(summary(&prd));
        Ok(Some(prd))
    }

    /// Writes the [`unwritten`](Self::unwritten) marks, each into prd.json as it is now. While
    /// the file cannot be read or does not parse, nothing is written: a `WARNING` says so and
    /// the marks wait for a later step. A mark whose story a person removed is dropped.
    fn write_marks(&mut self, cx: &mut TaskContext<'_>) -> Result<(), EscalationError> {
        let Some(path) = &self.prd else {
            return Ok(());
        };
        while let Some(mark) = self.unwritten.first() {
            match self.prd_cache.write_mark(path, mark) {
                Ok(prd) => self.counts = Some(summary(&prd)),
                Err(err @ (PrdError::Read { .. } | PrdError::Malformed { .. })) => {
                    cx.warn(format!(
                        "{err}; ralph writes prd.json only once it reads and parses again: \
                         \"{mark}\" is kept in the run's session until then"
                    ));
                    return Ok(());
                }
                Err(PrdError::NoSuchStory { path, id }) => cx.warn(format!(
                    "{}: no story \"{id}\" any more, so \"{mark}\" is not written",
                    path.display()
                )),
                Err(err) => return Err(err.into()),
            }
            self.unwritten.remove(0);
        }
        Ok(())
    }

    fn pick(&mut self) -> Result<NextTask, EscalationError> {
        let Some(prd) = self.load()? else {
            // One task; its attempts are still recorded for the progress.txt entry.
            let current = self.current.get_or_insert_with(|| Current {
                id: MAIN_TASK.to_owned(),
                title: String::new(),
                iterations: Vec::new(),
                last_failure: Vec::new(),
            });
            return Ok(NextTask::Work(Task::new(current.id.clone())));
        };
        // With checks, the checks judge the story, not a `passes` the agent set itself.
        let keep_on = |s: &&Story| match self.has_checks {
            true => s.passes != Passes::Blocked,
            false => s.passes == Passes::No,
        };
        let story = self
            .current
            .as_ref()
            .and_then(|c| prd.story(&c.id))
            .filter(keep_on);
        let story = match &self.only {
            // `--task`: that story whatever its priority, until it passes or is blocked.
            Some(only) if story.is_none_or(|s| s.id != *only) => match prd.story(only) {
                Some(s) if s.passes == Passes::Yes => {
                    return Ok(NextTask::End(StoryEnd::TaskPassed.reason()));
                }
                Some(s) if s.passes == Passes::Blocked => {
                    return Ok(NextTask::End(StoryEnd::TaskBlocked.reason()));
                }
                Some(s) => Some(s),
                None => {
                    return Err(EscalationError::NoSuchTask {
                        prd: self.prd.clone().unwrap_or_default(),
                        id: only.clone(),
                        ids: prd.stories().iter().map(|s| s.id.clone()).collect(),
                    });
                }
            },
            _ => story.or_else(|| prd.current()),
        };
        let Some(story) = story else {
            let (_, blocked, _) = prd.counts();
            return Ok(NextTask::End(if blocked > 0 {
                StoryEnd::StoriesBlocked.reason()
            } else {
                StoryEnd::StoriesDone.reason()
            }));
        };
        if self.current.as_ref().is_none_or(|c| c.id != story.id) {
            self.breaker.reset();
            self.current = Some(Current {
                id: story.id.clone(),
                title: story.title.clone(),
                iterations: Vec::new(),
                last_failure: Vec::new(),
            });
        }
        let mut task = Task::new(story.id.clone());
        task.placeholders = story_placeholders(story);
        Ok(NextTask::Work(task))
    }

    /// Without checks, the story in progress found marked passed before its next iteration (a
    /// person marked it while the run was stopped) is passed now, its work committed as its
    /// own: otherwise the next story would start on it, and a revert file it as that story's.
    fn pass_if_marked(&mut self, cx: &mut TaskContext<'_>) -> Result<(), EscalationError> {
        let Some(current) = self.current.as_ref().filter(|_| !self.has_checks) else {
            return Ok(());
        };
        let id = current.id.clone();
        let marked = self
            .load()?
            .and_then(|prd| prd.story(&id).map(|s| s.passes == Passes::Yes))
            .unwrap_or(false);
        if marked {
            self.pass(cx)?;
        }
        Ok(())
    }

    fn judge(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> Result<TaskDecision, EscalationError> {
        if let Some(current) = &mut self.current {
            current.iterations.push(report.iteration);
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
                said_done
                    || self
                        .load()?
                        .and_then(|prd| prd.story(&report.task.id).map(|s| s.passes == Passes::Yes))
                        .unwrap_or(false)
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
        let Some(current) = self.current.take() else {
            return Ok(TaskDecision::NextTask);
        };
        // The commit (holding prd.json with the story marked) first, then prd.json in the
        // tree: a crash between them leaves the story unmarked, never marked passed without
        // its commit, and the journal has the next start finish the pass.
        self.record(journal::Step::Pass, Some(&current.id))?;
        let mark = Mark::Passed {
            story_id: current.id.clone(),
        };
        // The commit's prd.json: the file as it is now, or as ralph last read it when it does
        // not parse now.
        let mut marked = match &self.prd {
            Some(path) => match self.prd_cache.load(path) {
                Ok(prd) => Some(prd),
                Err(err) => Some(self.prd_cache.last_good().cloned().ok_or(err)?),
            },
            None => None,
        };
        if let Some(prd) = &mut marked {
            mark.apply(prd)?;
            self.counts = Some(summary(prd));
        }
        let checkpoint = match &mut self.repo {
            Some(repo) => {
                let text = marked.as_ref().map(Prd::to_text);
                let replace = repo.prd.as_deref().zip(text.as_deref().map(str::as_bytes));
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
        // prd.json is read again for the write: a person's edit made meanwhile stays.
        if self.story_mode() {
            self.unwritten.push(mark);
            self.write_marks(cx)?;
        }
        self.recorded_done()?;
        cx.emit(StoryEvent::StoryPassed {
            story_id: current.id,
            attempts: self.breaker.attempts() + 1,
            checkpoint,
        });
        self.breaker.reset();
        Ok(TaskDecision::NextTask)
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

        // Save before anything is logged or reverted: the log never names a missing ref, and
        // nothing is reset that is not stored.
        let mut saved = None;
        if let Some(repo) = &self.repo {
            let work = repo.git.save(
                &format!("refs/ralph/attempts/{}", git::ref_component(what)),
                &format!("ralph: abandoned attempt at {what} ({})", trip.describe()),
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
        let _ = writeln!(entry, "reason: {}", trip.describe());
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
        let notes_before = format!(
            "blocked by ralph at {now}: {}. Details: {progress_name}:",
            trip.describe()
        );
        let notes_after = match &saved {
            Some((work, _, _)) => format!("; abandoned work: git checkout {}", work.refname),
            None => String::new(),
        };
        // From here on a killed ralph leaves the trip half done: the next start finishes it.
        if let Some((work, _, _)) = &saved {
            self.record(
                journal::Step::Revert {
                    saved_ref: work.refname.clone(),
                    progress: std::path::absolute(&self.progress)
                        .unwrap_or_else(|_| self.progress.clone()),
                    entry: entry.clone(),
                    notes: story_id
                        .as_ref()
                        .map(|_| [notes_before.clone(), notes_after.clone()]),
                },
                story_id.as_deref(),
            )?;
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
        });
        self.write_marks(cx)?;
        self.recorded_done()?;
        cx.emit(StoryEvent::StoryBlocked {
            story_id: id,
            reason: trip.describe(),
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

    fn next_task(&mut self, cx: &mut TaskContext<'_>) -> NextTask {
        self.say_pending(cx);
        if let Err(err) = self.pass_if_marked(cx) {
            return NextTask::End(Self::failed_in(&err, cx));
        }
        let mut next = self
            .write_marks(cx)
            .and_then(|()| self.pick())
            .unwrap_or_else(|err| NextTask::End(Self::failed_in(&err, cx)));
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

    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        match self.judge(report, cx).and_then(|decision| {
            self.recorded_done()?;
            Ok(decision)
        }) {
            Ok(decision) => decision,
            Err(err) => TaskDecision::Stop(Self::failed_in(&err, cx)),
        }
    }

    fn limit_reached(&mut self, cx: &mut TaskContext<'_>) -> EndReason {
        self.say_pending(cx);
        if let Err(err) = self.write_marks(cx) {
            return Self::failed_in(&err, cx);
        }
        match self.load() {
            Ok(Some(prd)) if self.only.is_some() => {
                match self
                    .only
                    .as_deref()
                    .and_then(|id| prd.story(id))
                    .map(|s| s.passes)
                {
                    Some(Passes::Yes) => StoryEnd::TaskPassed.reason(),
                    Some(Passes::Blocked) => StoryEnd::TaskBlocked.reason(),
                    _ => StoryEnd::MaxIterationsWorkLeft.reason(),
                }
            }
            Ok(Some(prd)) => match prd.counts() {
                (_, _, remaining) if remaining > 0 => StoryEnd::MaxIterationsWorkLeft.reason(),
                (_, blocked, _) if blocked > 0 => StoryEnd::StoriesBlocked.reason(),
                _ => StoryEnd::StoriesDone.reason(),
            },
            Ok(None) => EndReason::MaxIterations,
            Err(err) => Self::failed_in(&err, cx),
        }
    }

    fn summary(&self) -> serde_json::Map<String, serde_json::Value> {
        self.counts.map(StoriesSummary::fields).unwrap_or_default()
    }

    fn snapshot(&self, ending: bool) -> Option<serde_json::Value> {
        self.state(ending)
    }

    fn restore(&mut self, state: serde_json::Value, cx: &mut TaskContext<'_>) {
        self.say_pending(cx);
        self.take_up(state, cx);
    }
}

/// The `{{ story.* }}` values of `story`, one for each name validation knows
/// ([`STORY_PLACEHOLDERS`]).
fn story_placeholders(story: &prd::Story) -> BTreeMap<String, String> {
    STORY_PLACEHOLDERS
        .iter()
        .filter_map(|name| {
            let value = match *name {
                "id" => story.id.clone(),
                "title" => story.title.clone(),
                "description" => story.description.clone(),
                "acceptance_criteria" => story
                    .acceptance_criteria
                    .iter()
                    .map(|c| format!("- {c}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                "json" => story.json.clone(),
                _ => return None,
            };
            Some((format!("story.{name}"), value))
        })
        .collect()
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

/// The file `path` names, through a symlink (the link's target), or `path` itself.
fn followed(path: PathBuf) -> PathBuf {
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(&path).unwrap_or(path),
        _ => path,
    }
}

fn summary(prd: &Prd) -> StoriesSummary {
    let (passed, blocked, remaining) = prd.counts();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `{{ story.* }}` name validation accepts gets a value in story mode.
    #[test]
    fn every_story_placeholder_validation_knows_gets_a_value() {
        let story = prd::Story {
            id: "US-1".to_owned(),
            title: "Cart".to_owned(),
            description: "A cart".to_owned(),
            acceptance_criteria: vec!["a".to_owned(), "b".to_owned()],
            priority: 1.0,
            passes: prd::Passes::No,
            json: "{}".to_owned(),
        };
        let values = story_placeholders(&story);
        let names: Vec<&str> = values
            .keys()
            .map(|k| k.strip_prefix("story.").unwrap())
            .collect();
        let mut expected = STORY_PLACEHOLDERS.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected);
        assert_eq!(values["story.acceptance_criteria"], "- a\n- b");
    }
}
