//! Parallel ralph loops: `ralph run --parallel N`.
//!
//! This crate owns a parallel run: the task list and which task may start
//! ([`tasks`]), one git worktree and branch per task (`.ralph/worktrees/<id>`, `ralph/<id>`),
//! one loop per task (a *lane*: an [`Engine`] with `ralph-escalation`'s story mode restricted to
//! that story, started with [`Engine::spawn`]), the merge queue that lands passed tasks on the
//! base branch one at a time, the run's own events ([`events`]) and its session for `--resume`.
//! `docs/parallel.md` is the user's guide.
//!
//! It must never lose work: a task's branch is only reset after it was stored under
//! `refs/ralph/attempts/<id>/<n>`, a worktree is only removed after its uncommitted work was
//! saved the same way, the base only moves forward (from the commit it was expected at) and
//! only by the merge queue, one step at a time (a landing, or a blocked task's mark), and
//! the main worktree only by a fast-forward under its index's lock, which never overwrites a
//! person's change and is rolled back whole when it fails half-way.
//! The task list (prd.json, a Markdown checklist, GitHub issues: any [`TaskList`]) is marked
//! by the merge queue alone: a lane's loop marks its own one-task list (in its lane folder),
//! a file list's pass mark reaches the base in the same landing as the task's code, never
//! before, and a list outside git hears of a pass only after the base moved.
//! It never prints: everything goes to its [`ParallelSink`]s.

mod abandon;
pub mod events;
mod git;
pub mod land;
mod lane_list;
mod pr_landing;
mod queue;
mod session;
pub mod tasks;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use ralph_engine::interrupts::{Interrupts, Phase, Response};
use ralph_engine::{
    Engine, EngineOptions, Event, FolderClaim, InterruptSignal, RunOutcome, new_run_id,
};
use ralph_escalation::{Escalation, EscalationError, StoryEnd};
use ralph_tasks::{ListedTask, Mark, TaskList};
use tokio::sync::mpsc;

pub use abandon::{Abandoned, AbandonedLane, abandon};
pub use events::{
    Board, FailedCheck, JsonLinesSink, LaneView, ParallelEvent, ParallelEventKind, ParallelRecord,
    ParallelSink, find_run, parse_events, read_events,
};
pub use land::{History, LandConfig};
pub use tasks::{Task, TaskState, startable, tasks_from_list};

use lane_list::{Asking, LaneList, LaneTask};

use git::HalfMade;
use queue::{Change, Merged, Moved, Repo};
pub use session::LaneState;
use session::{JournaledStep, LaneRecord, MergeJournal, PendingAsk, PendingBlock, Session};

/// Why a parallel run cannot start, or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParallelError {
    /// `--parallel` needs what the RALPH.md does not have.
    #[error("{file}: --parallel needs {what}")]
    Unsupported {
        /// The RALPH.md.
        file: PathBuf,
        /// What it lacks.
        what: &'static str,
    },
    /// git could not be started.
    #[error("{}: git could not start: {cause}", .dir.display())]
    GitStart {
        /// Where.
        dir: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// A git command failed.
    #[error("{}: `{command}` failed: {stderr}", .dir.display())]
    Git {
        /// Where it ran.
        dir: PathBuf,
        /// The command.
        command: String,
        /// What git said.
        stderr: String,
    },
    /// The main worktree is not on a branch.
    #[error("{}: HEAD is detached; --parallel lands tasks on the branch the run starts on: check one out", .0.display())]
    Detached(PathBuf),
    /// A file of the run could not be read or written.
    #[error("{}: {cause}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The session or the merge journal is not what this ralph writes.
    #[error("{}: not a parallel run's session: {what}", .path.display())]
    Session {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A merge queue step's task ended without its result (it panicked, or the runtime shut
    /// down): nothing more is done, and `--resume` goes on from the journal.
    #[error("a step of the merge queue was lost: {0}")]
    StepLost(String),
    /// A new parallel run where a stopped one would be taken over: go on with it
    /// ([`ParallelOptions::resume`]) or give it up ([`abandon`]).
    #[error(
        "{}: parallel run {run_id} ({parallel} at a time) was stopped with its worktrees under \
         .ralph/worktrees, which a new run would take over",
        .dir.display()
    )]
    StoppedRun {
        /// The repository.
        dir: PathBuf,
        /// The stopped run.
        run_id: String,
        /// Its lanes at once.
        parallel: usize,
    },
    /// `--resume` with no parallel run to go on with.
    #[error("{}: no stopped parallel run to resume", .0.display())]
    NothingToResume(PathBuf),
    /// [`abandon`] with no stopped parallel run to give up.
    #[error(
        "{}: no stopped parallel run to give up ({} names none)",
        .0.display(),
        session::SESSION_FILE
    )]
    NothingToAbandon(PathBuf),
    /// prd.json could not be read or changed.
    #[error(transparent)]
    Prd(#[from] ralph_tasks::PrdError),
    /// The task list could not be read or marked.
    #[error("the task list: {0}")]
    TaskList(String),
    /// Story mode refused to open in a lane's worktree.
    #[error(transparent)]
    Escalation(#[from] EscalationError),
    /// Escalation's git refused.
    #[error(transparent)]
    EscalationGit(#[from] ralph_escalation::GitError),
    /// A lane's worktree is held by another ralph run started there.
    #[error("{}: {cause}", .worktree.display())]
    LaneHeld {
        /// The lane's folder in its worktree.
        worktree: PathBuf,
        /// The lock that refused.
        cause: ralph_engine::lock::LockError,
    },
}

/// Builds the run's task list with its relative paths taken from the given folder: the one
/// the RALPH.md is in, or a copy of it a mark is applied in.
pub type ListSource = std::sync::Arc<
    dyn Fn(&Path) -> Result<Box<dyn TaskList>, ralph_tasks::TaskListError> + Send + Sync,
>;

/// How to run in parallel.
#[derive(Clone)]
#[non_exhaustive]
pub struct ParallelOptions {
    /// The options every lane starts from (the RALPH.md, its overrides); each lane gets its
    /// own cwd, run id and log folder, and no budget (the run counts them).
    pub engine: EngineOptions,
    /// How many lanes run at once.
    pub parallel: usize,
    /// Go on with the stopped parallel run of this repository.
    pub resume: bool,
    /// Where lanes' run folders go (`.ralph/runs`).
    pub log_root: PathBuf,
    /// The run's id (its events' `run_id`).
    pub run_id: String,
    /// Stop every lane, as a first Ctrl+C would, once the lanes' cost reached this.
    pub max_cost: Option<f64>,
    /// Stop every lane, as a first Ctrl+C would, once the run lasted this long.
    pub max_runtime: Option<Duration>,
    /// The task list (`tasks:` in the RALPH.md); `None`: prd.json from `escalation.prd`.
    pub tasks: Option<ListSource>,
    /// The task list's tasks as the caller read them before the start (a caller that waits
    /// out its service's "not now", a rate limit, reads them first); `None`: the run reads
    /// them as it opens, and a "not now" fails the start.
    pub listed: Option<Vec<ListedTask>>,
    /// What a landing adds to the base's history (the RALPH.md's `land.history`).
    pub history: History,
    /// `land.pr`: each task that passes the queue's checks is pushed and opened as a pull
    /// request through this, instead of landing on the base.
    pub pull_requests: Option<std::sync::Arc<std::sync::Mutex<ralph_escalation::PrLanding>>>,
}

impl std::fmt::Debug for ParallelOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelOptions")
            .field("engine", &self.engine)
            .field("parallel", &self.parallel)
            .field("resume", &self.resume)
            .field("log_root", &self.log_root)
            .field("run_id", &self.run_id)
            .field("max_cost", &self.max_cost)
            .field("max_runtime", &self.max_runtime)
            .field("tasks", &self.tasks.is_some())
            .field("listed", &self.listed.as_ref().map(Vec::len))
            .field("history", &self.history)
            .field("pull_requests", &self.pull_requests.is_some())
            .finish()
    }
}

impl ParallelOptions {
    /// `parallel` lanes of `engine`'s loop, lanes' folders under `.ralph/runs`.
    pub fn new(engine: EngineOptions, parallel: usize) -> Self {
        Self {
            engine,
            parallel: parallel.max(1),
            resume: false,
            log_root: PathBuf::from(".ralph").join("runs"),
            run_id: new_run_id(),
            max_cost: None,
            max_runtime: None,
            tasks: None,
            listed: None,
            history: History::default(),
            pull_requests: None,
        }
    }
}

/// How a parallel run ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ParallelOutcome {
    /// `PARALLEL_ENDED`'s reason.
    pub reason: String,
    /// The exit code a CLI should use.
    pub exit_code: i32,
    /// Whether `--resume` can go on with it.
    pub resumable: bool,
}

/// What lanes tell the run.
enum LaneMessage {
    Prepared(String, Box<Result<Prepared, ParallelError>>),
    Event(String, Box<Event>),
    Ended(String, Box<Result<RunOutcome, ralph_engine::EngineError>>),
    /// What the sweep at a lane's end has to say (what it ended).
    Swept(String, Vec<String>),
    /// The lane's agent asked a person this question; its loop waits for the answer.
    Asked(String, String),
}

/// The merge queue's step under way (a landing or a block): the task and what it gave.
type QueueStep = tokio::task::JoinHandle<(String, Result<Stepped, ParallelError>)>;

/// What a step of the merge queue gave.
enum Stepped {
    /// A landing's end.
    Landing(Landed),
    /// A block's mark: whether the base moved to it (`None`: a list outside git, which the
    /// coordinator tells).
    Block(Option<Moved>),
    /// A lane's question: the list's record of it and whether the base moved to it (`None`:
    /// a list outside git, which the coordinator asks).
    Ask(Option<(ralph_tasks::Asked, Moved)>),
}

/// Where the queue's checks are told to stop now, and whether they were.
#[derive(Clone)]
struct CheckStop {
    signals: std::sync::Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<InterruptSignal>>>,
    stopped: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// What the queue's landing of one task gave.
enum Landed {
    Yes(String),
    /// `land.pr`: the landing commit on the task's branch (the base untouched), pushed, and
    /// its pull request as the forge has it.
    PullRequest {
        commit: String,
        landed: ralph_escalation::PrLanded,
    },
    Conflict {
        files: Vec<String>,
        hunks: String,
        saved: String,
    },
    CheckFailed {
        failed: Vec<ralph_engine::CheckResult>,
        saved: String,
    },
    Refused(String),
    /// A person's uncommitted changes in the main worktree at these paths, which the landing
    /// changes too: it waits in the queue.
    Held(Vec<String>),
    /// Stopped now (a second Ctrl+C) while its checks ran: the journal stays, `--resume`
    /// redoes the merge.
    Interrupted,
}

/// A lane getting ready or whose loop runs.
struct Lane {
    /// Its loop's interrupts; `None` while it gets ready.
    interrupts: Option<mpsc::UnboundedSender<InterruptSignal>>,
    view: LaneView,
    /// Its branch's commit when its loop started or last ended an iteration.
    tip: Option<String>,
}

/// What making a lane ready needs, off the runtime's thread.
struct LaneSpec {
    top: PathBuf,
    worktree: PathBuf,
    branch: String,
    /// The base's commit a new branch starts from.
    base: String,
    /// The base branch's name, recorded as a new branch's upstream: a run on another base
    /// never takes the branch up.
    base_branch: String,
    lane_dir: PathBuf,
    /// The task as the run's list has it, for the lane's own list; `None` keeps the lane's
    /// list as it is (a resumed lane: a pass recorded there stands).
    task: Option<LaneTask>,
    config: ralph_engine::frontmatter::Config,
    opening: ralph_escalation::Options,
    /// The lane's loop: its folder in the worktree, run id and log folder.
    options: EngineOptions,
    /// The parallel run's id, named by the lane's hold on its folder.
    parallel_run_id: String,
}

/// A lane ready to start.
struct Prepared {
    escalation: Escalation,
    config: ralph_engine::frontmatter::Config,
    worktree: PathBuf,
    branch: String,
    options: EngineOptions,
    /// The lane's folder, held as one loop holds its own: a `ralph run` started there while
    /// the lane runs is refused, naming the parallel run, so a landing never removes a folder
    /// another run writes its logs in.
    claim: FolderClaim,
    /// The worktree's repository lock, as one loop's CLI takes it, held with the claim.
    repository_lock: Option<ralph_engine::lock::RunLock>,
}

impl LaneSpec {
    /// The worktree (its branch made from the base, or the branch there is), the lane's own
    /// one-task list (its story mode picks this task and no other, and never writes the run's
    /// list), then story mode opened in the worktree.
    fn prepare(self) -> Result<Prepared, ParallelError> {
        /// Held while a worktree is added or taken back: git does not add two at once safely
        /// (one reads the other's half-made `.git/worktrees/<name>`).
        static ADDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let adding = || {
            ADDING
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let wt = self.worktree.to_string_lossy().into_owned();
        let half_made = git::half_made(&self.worktree)?;
        if half_made == HalfMade::NotRegistered {
            // Killed inside `git worktree add`: nothing of the task's is there yet.
            let _adding = adding();
            let _ = std::fs::remove_dir_all(&self.worktree);
            git::run(&self.top, &["worktree", "prune"])?;
        }
        if !self.worktree.exists() {
            let branch_ref = format!("refs/heads/{}", self.branch);
            let new_branch = git::rev(&self.top, &branch_ref)?.is_none();
            {
                // Only the bookkeeping is serial (no file written): the checkouts, most of
                // the time, run side by side below, each in its own worktree and index.
                let _adding = adding();
                match new_branch {
                    false => git::run(
                        &self.top,
                        &["worktree", "add", "-q", "--no-checkout", &wt, &self.branch],
                    )?,
                    true => git::run(
                        &self.top,
                        &[
                            "worktree",
                            "add",
                            "-q",
                            "--no-checkout",
                            "-b",
                            &self.branch,
                            &wt,
                            &self.base,
                        ],
                    )?,
                };
                if new_branch {
                    // Best effort: a branch without it is taken as any base's, as before.
                    let _ = git::attempt(
                        &self.top,
                        &[
                            "branch",
                            "-q",
                            "--set-upstream-to",
                            &self.base_branch,
                            &self.branch,
                        ],
                    );
                }
            }
            if let Err(err) = git::run(&self.worktree, &["reset", "-q", "--hard", "HEAD"]) {
                // Nothing of a lane that could not start stays: its worktree, and its branch
                // when this made it (it holds no commit of its own yet).
                let _adding = adding();
                let _ = git::attempt(&self.top, &["worktree", "remove", "--force", &wt]);
                if new_branch {
                    let _ = git::attempt(&self.top, &["branch", "-D", &self.branch]);
                }
                return Err(err);
            }
        } else if half_made == HalfMade::NotCheckedOut {
            // Killed between the add and its checkout: the checkout is done now, as it would
            // have been then (no agent ran there, there is nothing to keep).
            git::run(&self.worktree, &["reset", "-q", "--hard", "HEAD"])?;
        }
        let held = |cause| ParallelError::LaneHeld {
            worktree: self.options.cwd.clone(),
            cause,
        };
        // Before story mode opens, which may already save or revert: as one loop does.
        let claim = FolderClaim::take_lane(&self.options, &self.parallel_run_id).map_err(held)?;
        let repository_lock =
            ralph_escalation::lock_repository(&self.options.cwd, &self.config, claim.holder())
                .map_err(held)?;
        if let Some(task) = &self.task {
            std::fs::create_dir_all(&self.lane_dir).map_err(|cause| ParallelError::Io {
                path: self.lane_dir.clone(),
                cause,
            })?;
            let path = self.lane_dir.join(LANE_TASK_FILE);
            task.write(&path)
                .map_err(|cause| ParallelError::Io { path, cause })?;
        }
        let escalation = match Escalation::open(&self.config, self.opening)? {
            Some(escalation) => escalation,
            None => {
                return Err(ParallelError::Unsupported {
                    file: self.lane_dir,
                    what: "a task list (`tasks:` or `escalation.prd`)",
                });
            }
        };
        Ok(Prepared {
            escalation,
            config: self.config,
            worktree: self.worktree,
            branch: self.branch,
            options: self.options,
            claim,
            repository_lock,
        })
    }
}

/// Why the run stops starting lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Interrupted(InterruptSignal),
    MaxCost,
    MaxRuntime,
}

/// The run's state, owned by [`run`]'s loop.
struct Parallel {
    options: ParallelOptions,
    repo: Repo,
    /// Where the lanes' own task files and progress files go (`.ralph/parallel`).
    state_dir: PathBuf,
    /// The RALPH.md's folder relative to the top: a lane's cwd is the same inside its worktree.
    cwd_rel: PathBuf,
    session: Session,
    /// The run's task list, read where the RALPH.md is; a list outside git is marked here.
    list: Box<dyn TaskList>,
    /// Its tasks as last read, for a starting lane's prompt.
    listed: Vec<ListedTask>,
    tasks: Vec<Task>,
    sinks: Vec<Box<dyn ParallelSink>>,
    board: Board,
    lanes: BTreeMap<String, Lane>,
    /// Tasks to start before any new one: returned from the queue, or resumed.
    again: VecDeque<String>,
    /// Task ids resumed as they were (their lane's own list kept).
    resumed: Vec<String>,
    /// Lanes' cost so far, by task.
    costs: BTreeMap<String, f64>,
    lane_tx: mpsc::UnboundedSender<LaneMessage>,
    stop: Option<Stop>,
    stop_now: bool,
    /// The interrupts forwarded to the lanes, ruled on as each lane's loop rules on them.
    interrupts: Interrupts,
    /// When each held landing was last tried; one the queue moved past since is tried again.
    held_tried: BTreeMap<String, Instant>,
    /// Tasks whose branch holds a run's work on another base: this run leaves them alone.
    elsewhere: Vec<String>,
}

/// A parallel run as its session tells it: what `ralph status` shows.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ParallelStatus {
    /// The run's id.
    pub run_id: String,
    /// The base branch.
    pub base: String,
    /// Lanes at once.
    pub parallel: usize,
    /// Whether it ended by itself (otherwise it runs, or `--resume` goes on with it).
    pub ended: bool,
    /// Every lane that started, by task id.
    pub lanes: Vec<LaneStatus>,
    /// The merge queue, next first.
    pub queue: Vec<String>,
}

/// One lane of a [`ParallelStatus`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LaneStatus {
    /// The task.
    pub task_id: String,
    /// Where it stands.
    pub state: LaneState,
    /// Times it came back from the queue.
    pub returns: u64,
    /// Its latest loop's run id.
    pub run_id: Option<String>,
    /// Why the base refused its landing, which `--resume` tries again.
    pub refused: Option<String>,
    /// The paths at which a person's uncommitted change in the main worktree holds its
    /// landing (empty: none).
    pub held: Vec<String>,
    /// The agent's question its loop waits on a person's answer to.
    pub question: Option<String>,
    /// Where a person answers it, once the run put it there.
    pub answer_at: Option<String>,
}

/// The file a repository's parallel runs append their events to
/// (`<top level>/.ralph/parallel/events.jsonl`), when `folder` is in a git repository.
pub fn events_file(folder: &Path) -> Option<PathBuf> {
    let top = git::run(folder, &["rev-parse", "--show-toplevel"]).ok()?;
    Some(Path::new(&top).join(".ralph/parallel/events.jsonl"))
}

/// The parallel run of the repository `folder` is in, if one ever ran there.
pub fn read_status(folder: &Path) -> Result<Option<ParallelStatus>, ParallelError> {
    let Ok(top) = git::run(folder, &["rev-parse", "--show-toplevel"]) else {
        return Ok(None);
    };
    let path = Session::path(Path::new(&top));
    if !path.exists() {
        return Ok(None);
    }
    let session = Session::load(&path)?;
    Ok(Some(ParallelStatus {
        run_id: session.run_id,
        base: session.base,
        parallel: session.parallel,
        ended: session.ended,
        lanes: session
            .lanes
            .into_iter()
            .map(|(task_id, l)| LaneStatus {
                task_id,
                state: l.state,
                returns: l.returns,
                run_id: l.run_id,
                refused: l.refused,
                held: l.held,
                question: l.question,
                answer_at: l.answer_at,
            })
            .collect(),
        queue: session.queue,
    }))
}

/// Runs `options` in parallel to its end; events go to `sinks` and to
/// `.ralph/parallel/events.jsonl`, signals come from `interrupts`. Any tokio runtime will do:
/// the lanes are tasks, the queue's git steps run on the blocking pool.
pub async fn run(
    options: ParallelOptions,
    sinks: Vec<Box<dyn ParallelSink>>,
    mut interrupts: mpsc::UnboundedReceiver<InterruptSignal>,
) -> Result<ParallelOutcome, ParallelError> {
    let (lane_tx, mut lane_rx) = mpsc::unbounded_channel();
    // One watchdog, and so one run token, for every lane and check of the run: a ralph killed
    // between two lanes' loops still has what they left running ended.
    let containment = ralph_process::Containment::start(false);
    let mut this = Parallel::open(options, sinks, lane_tx)?;
    let started = Instant::now();
    let mut step: Option<QueueStep> = None;
    let (check_stop_tx, check_stop) = mpsc::unbounded_channel();
    let check_stop = CheckStop {
        signals: std::sync::Arc::new(tokio::sync::Mutex::new(check_stop)),
        stopped: std::sync::Arc::default(),
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        if this.stop.is_none() {
            this.start_lanes()?;
        }
        // One step at a time moves the base: a block's mark, which is quick, before the next
        // landing.
        if step.is_none() && !this.stop_now {
            if let Some(block) = this.session.blocks.first().cloned() {
                if this.gone(&block.task_id)? {
                    this.forget_block(&block.task_id)?;
                    continue;
                }
                step = Some(this.spawn_block(block));
            } else if let Some(ask) = this.session.asks.first().cloned() {
                step = Some(this.spawn_ask(ask));
            } else if let Some(id) = this.next_landing() {
                if this.gone(&id)? {
                    this.drop_gone(&id)?;
                    continue;
                }
                this.board.merging = Some(id.clone());
                step = Some(this.spawn_landing(id, check_stop.clone())?);
            }
        }
        this.board.waiting = this.waiting();
        let idle = this.lanes.is_empty() && step.is_none();
        if idle
            && ((this.only_held_queued()
                && this.session.blocks.is_empty()
                && this.session.asks.is_empty())
                || this.stop_now)
            && (this.stop.is_some() || this.startable_now().is_empty())
        {
            break;
        }
        tokio::select! {
            Some(message) = lane_rx.recv() => this.lane_message(message)?,
            result = async {
                match step.as_mut() {
                    Some(step) => step.await,
                    None => std::future::pending().await,
                }
            }, if step.is_some() => {
                step = None;
                let (id, result) = result.map_err(|err| ParallelError::StepLost(err.to_string()))?;
                match result? {
                    Stepped::Landing(landed) => this.landed(&id, landed)?,
                    Stepped::Block(moved) => this.block_marked(&id, moved)?,
                    Stepped::Ask(put) => this.ask_put(&id, put)?,
                }
            }
            Some(signal) = interrupts.recv() => {
                this.interrupted(signal);
                if this.stop_now {
                    check_stop.stopped.store(true, std::sync::atomic::Ordering::SeqCst);
                    let _ = check_stop_tx.send(InterruptSignal::Cancel);
                }
            }
            _ = tick.tick() => {
                if this.stop.is_none()
                    && this.options.max_runtime.is_some_and(|max| started.elapsed() >= max)
                {
                    this.stop_lanes(Stop::MaxRuntime);
                }
                for sink in &mut this.sinks {
                    sink.tick(&this.board);
                }
            }
        }
    }
    // Whatever a lane or a queue's check left running, out of the lanes' sweeps' reach.
    if let Some(token) = containment.run_token() {
        let grace = this.options.engine.kill_grace;
        for warning in
            ralph_process::end_carriers(ralph_process::RUN_TOKEN_VAR, &token, grace).await
        {
            this.warn(None, warning);
        }
    }
    this.finish()
}

impl Parallel {
    fn open(
        mut options: ParallelOptions,
        sinks: Vec<Box<dyn ParallelSink>>,
        lane_tx: mpsc::UnboundedSender<LaneMessage>,
    ) -> Result<Self, ParallelError> {
        let config = &options.engine.file.config;
        let file = options.engine.ralph_file.clone();
        let list_at: ListSource = match options.tasks.clone() {
            Some(tasks) => tasks,
            None => {
                let Some(prd) = config.escalation.as_ref().and_then(|e| e.prd.clone()) else {
                    return Err(ParallelError::Unsupported {
                        file,
                        what: "a task list (`tasks:` or `escalation.prd`)",
                    });
                };
                std::sync::Arc::new(move |cwd: &Path| {
                    Ok(Box::new(ralph_tasks::PrdList::new(cwd.join(&prd))) as Box<dyn TaskList>)
                })
            }
        };
        if config.done_when.is_empty() {
            return Err(ParallelError::Unsupported {
                file,
                what: "`done_when` checks: they judge each task in its worktree and again on the merged result",
            });
        }
        let cwd = std::path::absolute(&options.engine.cwd).map_err(|cause| ParallelError::Io {
            path: options.engine.cwd.clone(),
            cause,
        })?;
        let top = PathBuf::from(git::run(&cwd, &["rev-parse", "--show-toplevel"])?);
        let common = git::common_dir(&top)?;
        let cwd_rel = cwd
            .canonicalize()
            .ok()
            .and_then(|c| {
                c.strip_prefix(top.canonicalize().ok()?)
                    .ok()
                    .map(Path::to_path_buf)
            })
            .unwrap_or_default();
        let mut list = list_at(&cwd).map_err(|err| ParallelError::TaskList(err.to_string()))?;
        let top_real = top.canonicalize().unwrap_or_else(|_| top.clone());
        let mut list_rel: Vec<String> = Vec::new();
        for file in list.files() {
            let rel = cwd
                .join(&file)
                .canonicalize()
                .ok()
                .and_then(|p| p.strip_prefix(&top_real).ok().map(Path::to_path_buf))
                .ok_or_else(|| ParallelError::Unsupported {
                    file: options.engine.ralph_file.clone(),
                    what: "a task list inside the repository",
                })?;
            let rel = rel.to_string_lossy().replace('\\', "/");
            if !list_rel.contains(&rel) {
                list_rel.push(rel);
            }
        }
        options.log_root = cwd.join(&options.log_root);
        let state_dir = top.join(".ralph").join("parallel");
        exclude_ralph_folder(&common)?;
        git::remove_stale_indexes(&common);

        let events_path = state_dir.join("events.jsonl");
        std::fs::create_dir_all(&state_dir).map_err(|cause| ParallelError::Io {
            path: state_dir.clone(),
            cause,
        })?;
        let events_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&events_path)
            .map_err(|cause| ParallelError::Io {
                path: events_path.clone(),
                cause,
            })?;
        let mut sinks = sinks;
        sinks.push(Box::new(JsonLinesSink(events_file)));
        let session_path = Session::path(&top);
        let session = if options.resume {
            let session = match session_path.exists() {
                true => Session::load(&session_path)?,
                false => return Err(ParallelError::NothingToResume(top)),
            };
            if session.ended {
                return Err(ParallelError::NothingToResume(top));
            }
            options.run_id = session.run_id.clone();
            session
        } else {
            if let Ok(stopped) = Session::load(&session_path) {
                if !stopped.ended {
                    return Err(ParallelError::StoppedRun {
                        dir: top,
                        run_id: stopped.run_id,
                        parallel: stopped.parallel,
                    });
                }
            }
            let Some(head) = git::head_ref(&top)? else {
                return Err(ParallelError::Detached(top));
            };
            let base = head.trim_start_matches("refs/heads/").to_owned();
            Session::new(options.run_id.clone(), base, options.parallel)
        };
        let listed = match options.listed.take() {
            Some(listed) => listed,
            None => list
                .load()
                .map_err(|err| ParallelError::TaskList(err.to_string()))?,
        };
        let repo = Repo {
            top,
            common,
            base: session.base.clone(),
            list_rel,
            list_at,
            cwd_rel: cwd_rel.clone(),
            scratch: state_dir.join("marking"),
            history: options.history,
        };
        let mut this = Self {
            options,
            repo,
            state_dir,
            cwd_rel,
            session,
            tasks: tasks_from_list(&listed),
            list,
            listed,
            sinks,
            board: Board::default(),
            lanes: BTreeMap::new(),
            again: VecDeque::new(),
            resumed: Vec::new(),
            costs: BTreeMap::new(),
            lane_tx,
            stop: None,
            stop_now: false,
            interrupts: Interrupts::default(),
            held_tried: BTreeMap::new(),
            elsewhere: Vec::new(),
        };
        this.session.parallel = this.options.parallel;
        let base_commit = this.repo.base_commit()?;
        let resumed = this.options.resume;
        this.emit(ParallelEventKind::ParallelStarted {
            base: this.repo.base.clone(),
            base_commit,
            parallel: this.options.parallel,
            tasks: this.tasks.iter().map(|t| t.id.clone()).collect(),
            resumed,
        });
        if resumed {
            this.take_up()?;
        }
        this.save()?;
        Ok(this)
    }

    /// `--resume`: finishes or redoes the merge in flight, cleans the lanes a kill cut short
    /// and lines them up again.
    fn take_up(&mut self) -> Result<(), ParallelError> {
        if let Some(journal) = self.repo.journal().read()? {
            self.take_up_step(journal)?;
        }
        // Landings recorded whose list a kill kept from hearing of them.
        let untold: Vec<String> = self
            .session
            .lanes
            .iter()
            .filter(|(_, l)| l.untold.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        for id in untold {
            self.tell_landed(&id)?;
        }
        // The queue in its order first, then the landings the base refused, then the lanes
        // that stopped (or ran when ralph was killed).
        let refused: Vec<String> = self
            .session
            .lanes
            .iter_mut()
            .filter_map(|(id, l)| l.refused.take().map(|_| id.clone()))
            .collect();
        for id in refused {
            if !self.session.queue.contains(&id) {
                self.session.queue.push(id);
            }
        }
        for lane in self.session.lanes.values_mut() {
            lane.held.clear();
        }
        let stopped: Vec<String> = self
            .session
            .lanes
            .iter()
            .filter(|(_, l)| matches!(l.state, LaneState::Running | LaneState::Stopped))
            .map(|(id, _)| id.clone())
            .collect();
        for id in stopped {
            self.clean_killed_lane(&id)?;
            self.again.push_back(id.clone());
            self.resumed.push(id);
        }
        Ok(())
    }

    /// The queue's step a kill cut short: finished when the base is at the commit it was
    /// moving to, otherwise undone for the queue to do again (a block stays first in line).
    fn take_up_step(&mut self, journal: MergeJournal) -> Result<(), ParallelError> {
        let moved = journal.landing.as_deref() == Some(self.repo.base_commit()?.as_str());
        let change = match &journal.step {
            JournaledStep::Landing { .. } => Change::Mark(Mark::passed(&journal.task_id)),
            JournaledStep::Block { blocked } => {
                Change::Mark(blocked_mark(&journal.task_id, blocked))
            }
            JournaledStep::Ask { asked } => Change::Ask {
                task_id: journal.task_id.clone(),
                question: asked.question.clone(),
            },
        };
        self.repo.finish_fast_forward(&journal, moved)?;
        self.repo
            .put_back_kept(&journal, moved.then_some(&change))?;
        let id = journal.task_id;
        match journal.step {
            JournaledStep::Ask { asked } => {
                if !self.session.asks.iter().any(|a| a.task_id == id) {
                    self.session.asks.insert(
                        0,
                        PendingAsk {
                            task_id: id.clone(),
                            question: asked.question.clone(),
                        },
                    );
                }
                if moved {
                    // Recorded as the queue would have; that clears the journal.
                    return self.ask_put(&id, Some((asked, Moved::Yes)));
                }
            }
            JournaledStep::Block { blocked } => {
                if !self.session.blocks.iter().any(|b| b.task_id == id) {
                    self.session.blocks.insert(
                        0,
                        PendingBlock {
                            task_id: id.clone(),
                            reason: blocked,
                        },
                    );
                }
                self.record(&id).state = LaneState::Blocked;
                if moved {
                    // Recorded as the queue would have; that clears the journal.
                    return self.block_marked(&id, Some(Moved::Yes));
                }
            }
            JournaledStep::Landing { .. } if moved => {
                let commit = journal.landing.unwrap_or_default();
                // Recorded as the queue would have; that clears the journal and tells the list.
                self.session.queue.retain(|q| q != &id);
                return self.record_landing(&id, commit);
            }
            JournaledStep::Landing { branch_before } => {
                let worktree = self.worktree(&id);
                if worktree.exists() {
                    let _ = git::attempt(&worktree, &["merge", "--abort"])?;
                    // A kill mid-rebase (`land.history: rebase`) leaves the worktree in it.
                    let _ = git::attempt(&worktree, &["rebase", "--abort"])?;
                    git::run(&worktree, &["reset", "-q", "--hard", &branch_before])?;
                }
            }
        }
        Ok(self.repo.journal().clear()?)
    }

    /// A lane a kill cut short: its own journal finished (escalation does that as it opens),
    /// then what the kill left uncommitted saved and the worktree put back to its branch.
    fn clean_killed_lane(&mut self, id: &str) -> Result<(), ParallelError> {
        let worktree = self.worktree(id);
        // One a kill left half made is finished as the lane starts: no agent ran there.
        if !worktree.exists() || git::half_made(&worktree)? != HalfMade::No {
            return Ok(());
        }
        let (config, opening) = self.lane_escalation(id, &worktree);
        match Escalation::open(&config, opening) {
            Ok(_) => Ok(()),
            Err(EscalationError::DirtyTree { .. }) => {
                let saved = save_worktree(id, &worktree)?;
                git::run(&worktree, &["reset", "-q", "--hard", "HEAD"])?;
                git::run(&worktree, &["clean", "-q", "-fd"])?;
                if let Some(saved) = saved {
                    self.warn(
                        Some(id),
                        format!("the work its interrupted iteration left is saved under {saved}"),
                    );
                }
                Ok(())
            }
            Err(err) => Err(err.into()),
        }
    }

    fn worktree(&self, id: &str) -> PathBuf {
        worktree_path(&self.repo.top, id)
    }

    fn lane_dir(&self, id: &str) -> PathBuf {
        self.state_dir
            .join("lanes")
            .join(ralph_escalation::git::ref_component(id))
    }

    fn record(&mut self, id: &str) -> &mut LaneRecord {
        self.session
            .lanes
            .entry(id.to_owned())
            .or_insert(LaneRecord {
                state: LaneState::Running,
                returns: 0,
                conflict: None,
                run_id: None,
                untold: None,
                refused: None,
                held: Vec::new(),
                question: None,
                answer_at: None,
            })
    }

    fn save(&self) -> Result<(), ParallelError> {
        self.session.save(&Session::path(&self.repo.top))
    }

    fn emit(&mut self, kind: ParallelEventKind) {
        self.board.queued = self.session.queue.len() as u64;
        self.board.pending = self
            .tasks
            .iter()
            .filter(|t| t.state == TaskState::Pending)
            .count() as u64;
        let event = ParallelEvent {
            ts: SystemTime::now(),
            run_id: self.options.run_id.clone(),
            kind,
        };
        for sink in &mut self.sinks {
            sink.event(&event, &self.board);
        }
    }

    /// What the run's task list calls its tasks, for the text a lane's agent reads.
    fn words(&self) -> ralph_escalation::TaskWords {
        ralph_escalation::TaskWords::of_list(self.list.kind())
    }

    fn warn(&mut self, task_id: Option<&str>, message: String) {
        self.emit(ParallelEventKind::Warning {
            message,
            task_id: task_id.map(str::to_owned),
        });
    }

    /// Tasks that may start now, ignoring the slots.
    fn startable_now(&self) -> Vec<String> {
        let busy = |id: &str| {
            self.session.lanes.contains_key(id) || self.elsewhere.iter().any(|e| e == id)
        };
        let mut ids: Vec<String> = self.again.iter().cloned().collect();
        ids.extend(
            startable(&self.tasks, busy, usize::MAX)
                .into_iter()
                .map(|t| t.id.clone()),
        );
        ids
    }

    fn waiting(&self) -> u64 {
        let busy = |id: &str| {
            self.session.lanes.contains_key(id) || self.elsewhere.iter().any(|e| e == id)
        };
        self.tasks
            .iter()
            .filter(|t| t.state == TaskState::Pending && !busy(&t.id))
            .count() as u64
            + self.again.len() as u64
    }

    fn start_lanes(&mut self) -> Result<(), ParallelError> {
        let mut base = None;
        while self.lanes.len() < self.options.parallel {
            let Some(id) = self.startable_now().into_iter().next() else {
                return Ok(());
            };
            self.again.retain(|a| a != &id);
            if let Some(other) = self.other_base(&id)? {
                self.leave_alone(&id, &other);
                continue;
            }
            // One look at the base and the list for every lane this round starts.
            let commit = match &base {
                Some(commit) => commit,
                None => {
                    match self.list.load() {
                        Ok(listed) => self.listed = listed,
                        // A person is editing it: the last reading serves.
                        Err(err) => self.warn(None, format!("the task list: {err}")),
                    }
                    base.insert(self.repo.base_commit()?)
                }
            };
            let commit = commit.clone();
            let task = match self.listed.iter().find(|t| t.id == id) {
                Some(task) => LaneTask::of(task),
                None => {
                    let title = self.title(&id);
                    LaneTask::of(&ListedTask::new(id.clone(), title))
                }
            };
            self.prepare_lane(&id, commit, task);
        }
        Ok(())
    }

    /// The other base `id`'s existing branch was made from, when a run on another base made
    /// it (kept when that run ended, or that run's lane now): it is not this run's to take
    /// up. A branch this run's session knows, or made before ralph recorded its base, is ours.
    fn other_base(&self, id: &str) -> Result<Option<String>, ParallelError> {
        let branch = git::branch_name(id);
        if self.session.lanes.contains_key(id)
            || git::rev(&self.repo.top, &format!("refs/heads/{branch}"))?.is_none()
        {
            return Ok(None);
        }
        Ok(git::recorded_base(&self.repo.top, &branch)?.filter(|base| *base != self.repo.base))
    }

    /// `id`'s branch holds a run's work on the base `other`: this run leaves the task alone
    /// (never takes up, lands or removes that branch), with a `WARNING` saying how to go on.
    fn leave_alone(&mut self, id: &str, other: &str) {
        self.elsewhere.push(id.to_owned());
        let branch = git::branch_name(id);
        let message = format!(
            "not started: {branch} holds the work of a parallel run on {other}, not on {}; \
             this run leaves it alone. Land it with a run on {other}, or delete the branch \
             (`git branch -D {branch}`) to do the {} here.",
            self.repo.base,
            self.words().one,
        );
        self.warn(Some(id), message);
        self.refresh_board();
    }

    fn title(&self, id: &str) -> String {
        self.tasks
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.title.clone())
            .unwrap_or_default()
    }

    /// The lane's story mode: its own one-task list and progress file, revert on.
    fn lane_escalation(
        &self,
        id: &str,
        worktree: &Path,
    ) -> (ralph_engine::frontmatter::Config, ralph_escalation::Options) {
        let mut config = self.options.engine.file.config.clone();
        let lane_dir = self.lane_dir(id);
        let esc = config.escalation.get_or_insert_with(Default::default);
        esc.prd = None;
        esc.progress = lane_dir.join("progress.txt");
        esc.revert = true;
        let mut opening = ralph_escalation::Options::new(worktree.join(&self.cwd_rel));
        let asking = self.list.can_ask().then(|| Asking {
            run: self.lane_tx.clone(),
            list_at: self.repo.list_at.clone(),
            main_cwd: self.repo.top.join(&self.cwd_rel),
        });
        opening.tasks = Some(Box::new(LaneList::new(
            lane_dir.join(LANE_TASK_FILE),
            self.list.kind().to_owned(),
            self.list.location(),
            asking,
        )));
        (config, opening)
    }

    /// Takes a slot for `id` and makes its worktree, its own list and its story mode off
    /// the runtime's thread (lanes get ready side by side); [`LaneMessage::Prepared`] says when.
    fn prepare_lane(&mut self, id: &str, base: String, task: LaneTask) {
        let lane_dir = self.lane_dir(id);
        let resumed =
            self.resumed.iter().any(|r| r == id) && lane_dir.join(LANE_TASK_FILE).exists();
        self.resumed.retain(|r| r != id);
        let (config, opening) = self.lane_escalation(id, &self.worktree(id));
        let mut options = self.options.engine.clone();
        options.cwd = self.worktree(id).join(&self.cwd_rel);
        options.run_id = new_run_id();
        options.log_dir = Some(self.options.log_root.join(&options.run_id));
        options.resume = None;
        let spec = LaneSpec {
            top: self.repo.top.clone(),
            worktree: self.worktree(id),
            branch: git::branch_name(id),
            base,
            base_branch: self.repo.base.clone(),
            lane_dir,
            // A resumed lane keeps its list: a pass recorded there stands.
            task: (!resumed).then_some(task),
            config,
            opening,
            options,
            parallel_run_id: self.options.run_id.clone(),
        };
        self.lanes.insert(
            id.to_owned(),
            Lane {
                interrupts: None,
                view: LaneView {
                    task_id: id.to_owned(),
                    iteration: 0,
                    state: "starting".to_owned(),
                    started: Instant::now(),
                    cost_usd: self.costs.get(id).copied().unwrap_or(0.0),
                },
                tip: None,
            },
        );
        self.record(id).state = LaneState::Running;
        self.refresh_board();
        let tx = self.lane_tx.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            let prepared = join_blocking(move || spec.prepare()).await;
            let _ = tx.send(LaneMessage::Prepared(id, Box::new(prepared)));
        });
    }

    /// A lane made ready: its loop starts (unless the run is stopping: `--resume` starts it).
    fn lane_prepared(
        &mut self,
        id: &str,
        prepared: Result<Prepared, ParallelError>,
    ) -> Result<(), ParallelError> {
        let Prepared {
            mut escalation,
            config,
            worktree,
            branch,
            mut options,
            claim,
            repository_lock,
        } = match prepared {
            Ok(prepared) => prepared,
            Err(ParallelError::Escalation(err)) => {
                // This task cannot run; the others can.
                self.lanes.remove(id);
                let reason = format!("its worktree could not be opened: {err}");
                return self.block_task(id, &reason);
            }
            Err(err) => return Err(err),
        };
        if self.stop.is_some() {
            self.lanes.remove(id);
            // A task whose loop never ran stays pending, as if never started; one that ran
            // before (sent back by the queue, resumed) keeps its record for `--resume`.
            if self.record(id).run_id.is_none() {
                self.session.lanes.remove(id);
                drop((escalation, claim, repository_lock));
                self.retire(id)?;
            } else {
                self.record(id).state = LaneState::Stopped;
            }
            self.refresh_board();
            return self.save();
        }
        let record = self.record(id).clone();
        options.file.config = config;
        if let Some(conflict) = &record.conflict {
            escalation.set_conflict(conflict.clone());
            if !options.file.body.contains("story.conflict") {
                options.file.body.push_str("\n\n{{ story.conflict }}\n");
            }
        }
        // The run counts the budgets, over every lane.
        options.file.config.max_cost = None;
        options.file.config.max_runtime = None;
        options.overrides.max_cost = None;
        options.overrides.max_runtime = None;
        // The lane's prompt may carry the conflict; RALPH.md edits reach the next lane.
        options.reload = false;
        // A sweep at the end of one lane's iteration would take the other lanes' git for
        // strays (see docs/parallel.md); process groups and the watchdog still apply.
        options.subreaper = false;
        let lane_run_id = options.run_id.clone();
        let (sweep_id, grace) = (lane_run_id.clone(), options.kill_grace);
        let log_dir = options.log_dir.clone().unwrap_or_default();
        let mut engine = Engine::new(options);
        engine.set_task_source(escalation).set_folder_claim(claim);
        let (interrupts, lane_interrupts) = mpsc::unbounded_channel();
        engine.interrupts(lane_interrupts);
        let mut handle = engine.spawn();
        let tx = self.lane_tx.clone();
        let task_id = id.to_owned();
        tokio::spawn(async move {
            while let Some(event) = handle.next_event().await {
                let _ = tx.send(LaneMessage::Event(task_id.clone(), Box::new(event)));
            }
            let ended = handle.wait().await;
            // Lanes have no subreaper sweep: what the lane's processes left running (a daemon
            // out of its group and of ralph's tree) is found by the run id its environment
            // carries, which no other lane's process and none of the coordinator's git has.
            let swept = ralph_process::end_carriers("RALPH_RUN_ID", &sweep_id, grace).await;
            if !swept.is_empty() {
                let _ = tx.send(LaneMessage::Swept(task_id.clone(), swept));
            }
            drop(repository_lock);
            let _ = tx.send(LaneMessage::Ended(task_id, Box::new(ended)));
        });
        let tip = git::rev(&self.repo.top, &format!("refs/heads/{branch}"))?;
        if let Some(lane) = self.lanes.get_mut(id) {
            lane.interrupts = Some(interrupts);
            lane.tip = tip;
        }
        let title = self.title(id);
        let record = self.record(id);
        record.run_id = Some(lane_run_id.clone());
        let returns = record.returns;
        self.save()?;
        self.refresh_board();
        self.emit(ParallelEventKind::LaneStarted {
            task_id: id.to_owned(),
            title,
            branch,
            worktree: worktree.display().to_string(),
            lane_run_id,
            log_dir: log_dir.display().to_string(),
            returns,
        });
        Ok(())
    }

    /// An agent that rewrote its lane's history (`git reset --hard HEAD~1`, `commit --amend`)
    /// left the commits it dropped in the worktree's reflog alone, which goes with the
    /// worktree: the branch's earlier commit, reachable from no ref any more, is saved under
    /// `refs/ralph/attempts/<id>/<n>`. A revert of the lane's own loop saved its commit already.
    fn keep_dropped_commits(&mut self, id: &str) -> Result<(), ParallelError> {
        let branch = format!("refs/heads/{}", git::branch_name(id));
        let Some(tip) = git::rev(&self.repo.top, &branch)? else {
            return Ok(());
        };
        let Some(before) = self
            .lanes
            .get_mut(id)
            .and_then(|lane| lane.tip.replace(tip.clone()))
            .filter(|before| *before != tip)
        else {
            return Ok(());
        };
        let (kept, _) = git::attempt(
            &self.repo.top,
            &["merge-base", "--is-ancestor", &before, &tip],
        )?;
        let reachable = || -> Result<bool, ParallelError> {
            let refs = git::run(
                &self.repo.top,
                &[
                    "for-each-ref",
                    "--count=1",
                    "--format=%(refname)",
                    "--contains",
                    &before,
                ],
            )?;
            Ok(!refs.is_empty())
        };
        if kept || reachable()? {
            return Ok(());
        }
        let saved = queue::save_commit(&self.repo.top, id, &before)?;
        self.warn(
            Some(id),
            format!("its agent rewrote its branch's history: the commits it dropped are saved under {saved}"),
        );
        Ok(())
    }

    fn refresh_board(&mut self) {
        let mut lanes: Vec<LaneView> = self.lanes.values().map(|l| l.view.clone()).collect();
        lanes.sort_by_key(|l| l.started);
        self.board.lanes = lanes;
        // An empty float sum is -0.0, which prints as `-0.00`.
        self.board.cost_usd = self.costs.values().sum::<f64>() + 0.0;
        self.board.waiting = self.waiting();
    }

    fn lane_message(&mut self, message: LaneMessage) -> Result<(), ParallelError> {
        match message {
            LaneMessage::Event(id, event) => {
                let value = serde_json::to_value(&*event).unwrap_or_default();
                let iteration = value["iteration"].as_u64().unwrap_or(0);
                match value["type"].as_str() {
                    Some("ITERATION_STARTED") => {
                        if let Some(lane) = self.lanes.get_mut(&id) {
                            lane.view.iteration = iteration;
                            "running".clone_into(&mut lane.view.state);
                        }
                        // Its loop waits for no answer any more.
                        let record = self.record(&id);
                        if record.question.take().is_some() {
                            record.answer_at = None;
                            self.save()?;
                        }
                        self.refresh_board();
                        self.emit(ParallelEventKind::LaneIterationStarted {
                            task_id: id,
                            iteration,
                        });
                    }
                    Some("ITERATION_ENDED") => {
                        self.keep_dropped_commits(&id)?;
                        let usage = &value["usage"];
                        let cost = usage["cost_usd"].as_f64().filter(|c| *c > 0.0);
                        let tokens = match (
                            usage["input_tokens"].as_u64(),
                            usage["output_tokens"].as_u64(),
                        ) {
                            (None, None) => None,
                            (input, output) => {
                                Some(input.unwrap_or(0).saturating_add(output.unwrap_or(0)))
                            }
                        };
                        let state = value["state"].as_str().map(str::to_owned);
                        if let Some(cost) = cost {
                            *self.costs.entry(id.clone()).or_default() += cost;
                        }
                        self.board.tokens = self.board.tokens.saturating_add(tokens.unwrap_or(0));
                        let total = self.costs.get(&id).copied().unwrap_or(0.0);
                        if let Some(lane) = self.lanes.get_mut(&id) {
                            lane.view.cost_usd = total;
                            state
                                .as_deref()
                                .unwrap_or("ended")
                                .clone_into(&mut lane.view.state);
                        }
                        self.refresh_board();
                        self.emit(ParallelEventKind::LaneIterationEnded {
                            task_id: id,
                            iteration,
                            state,
                            failed: value["failed"].as_bool().unwrap_or(false),
                            cost_usd: cost,
                            tokens,
                        });
                        if self.stop.is_none()
                            && self
                                .options
                                .max_cost
                                .is_some_and(|max| self.board.cost_usd >= max)
                        {
                            self.stop_lanes(Stop::MaxCost);
                        }
                    }
                    Some("RATE_LIMITED") => self.emit(ParallelEventKind::LaneRateLimited {
                        task_id: id,
                        iteration: value["iteration"].as_u64().unwrap_or(iteration),
                        until: value["until"].as_str().unwrap_or_default().to_owned(),
                        wait_ms: value["wait_ms"].as_u64(),
                    }),
                    _ => {}
                }
            }
            LaneMessage::Ended(id, outcome) => self.lane_ended(&id, *outcome)?,
            LaneMessage::Swept(id, warnings) => {
                for warning in warnings {
                    self.warn(Some(&id), warning);
                }
            }
            LaneMessage::Prepared(id, prepared) => self.lane_prepared(&id, *prepared)?,
            LaneMessage::Asked(id, question) => self.asked(&id, question)?,
        }
        Ok(())
    }

    fn lane_ended(
        &mut self,
        id: &str,
        outcome: Result<RunOutcome, ralph_engine::EngineError>,
    ) -> Result<(), ParallelError> {
        let lane = self.lanes.remove(id);
        let (reason, iterations) = match &outcome {
            Ok(outcome) => (outcome.reason.as_str().to_owned(), outcome.iterations),
            Err(err) => (
                format!("error: {err}"),
                lane.as_ref().map_or(0, |l| l.view.iteration),
            ),
        };
        self.refresh_board();
        self.emit(ParallelEventKind::LaneEnded {
            task_id: id.to_owned(),
            reason: reason.clone(),
            iterations,
            cost_usd: self.costs.get(id).copied().unwrap_or(0.0),
        });
        let story_end = outcome
            .as_ref()
            .ok()
            .and_then(|o| StoryEnd::of(&o.reason))
            .or_else(|| self.lane_task_end(id));
        match story_end {
            Some(StoryEnd::StoriesDone) => {
                let record = self.record(id);
                record.state = LaneState::Queued;
                record.conflict = None;
                self.session.queue.push(id.to_owned());
                let position = self.session.queue.len();
                self.save()?;
                self.emit(ParallelEventKind::MergeQueued {
                    task_id: id.to_owned(),
                    position,
                });
            }
            Some(StoryEnd::StoriesBlocked) => {
                let progress = self.lane_dir(id).join("progress.txt");
                // The lane's own reason (its breaker's, the agent's) and saved work, when its
                // list has them.
                let lane = LaneTask::read(&self.lane_dir(id).join(LANE_TASK_FILE)).ok();
                let why = lane
                    .as_ref()
                    .and_then(|t| t.reason.clone())
                    .unwrap_or_else(|| "the circuit breaker tripped".to_owned());
                let mut reason = format!("{why} (details: {}", progress.display());
                if let Some(saved) = lane.and_then(|t| t.saved_ref) {
                    reason.push_str(&format!("; the work is saved as {saved}"));
                }
                reason.push(')');
                self.block_task(id, &reason)?;
            }
            // Interrupted before its task passed, out of iterations, failing: its work stays
            // in its worktree, for `--resume`.
            _ => {
                self.record(id).state = LaneState::Stopped;
                self.save()?;
            }
        }
        Ok(())
    }

    /// How `id`'s task ended in its lane's own list when its loop ended otherwise: a Ctrl+C
    /// (or a budget) that let the iteration finish ends the loop before it reads its list
    /// again, so the iteration's pass or block is found there.
    fn lane_task_end(&self, id: &str) -> Option<StoryEnd> {
        let task = LaneTask::read(&self.lane_dir(id).join(LANE_TASK_FILE)).ok()?;
        match task.state {
            ralph_tasks::TaskState::Passed => Some(StoryEnd::StoriesDone),
            ralph_tasks::TaskState::Blocked => Some(StoryEnd::StoriesBlocked),
            _ => None,
        }
    }

    /// Blocks `id`: its worktree goes now, and the merge queue marks it blocked with `reason`
    /// (its paths made relative to the repository's top) in the task list in its turn (a file
    /// list in a commit on the base, which only the queue moves), then says `TASK_BLOCKED`.
    fn block_task(&mut self, id: &str, reason: &str) -> Result<(), ParallelError> {
        // The reason is committed into the task list: its paths are the repository's, not
        // this machine's.
        let top = format!("{}/", self.repo.top.display());
        let reason = reason.replace(&top, "");
        let reason = reason.as_str();
        self.record(id).state = LaneState::Blocked;
        if let Some(task) = self.tasks.iter_mut().find(|t| t.id == id) {
            task.state = TaskState::Blocked;
        }
        if !self.session.blocks.iter().any(|b| b.task_id == id) {
            self.session.blocks.push(PendingBlock {
                task_id: id.to_owned(),
                reason: reason.to_owned(),
            });
        }
        // Saved first: a kill from here on leaves the block for `--resume` to mark.
        self.save()?;
        self.retire(id)?;
        self.refresh_board();
        Ok(())
    }

    /// Removes `id`'s worktree, its uncommitted work saved first; deletes its branch when its
    /// commits are all on the base, or squashed into it (`land.history: squash`, landed).
    fn retire(&mut self, id: &str) -> Result<(), ParallelError> {
        let worktree = self.worktree(id);
        if worktree.exists() {
            if let Some(saved) = save_worktree(id, &worktree)? {
                self.warn(
                    Some(id),
                    format!("its uncommitted work is saved under {saved}"),
                );
            }
            git::run(
                &self.repo.top,
                &["worktree", "remove", "--force", &worktree.to_string_lossy()],
            )?;
        }
        let branch = format!("refs/heads/{}", git::branch_name(id));
        if let Some(commit) = git::rev(&self.repo.top, &branch)? {
            let base = self.repo.base_commit()?;
            let (merged, _) = git::attempt(
                &self.repo.top,
                &["merge-base", "--is-ancestor", &commit, &base],
            )?;
            let squashed = self.repo.history == History::Squash
                && self
                    .session
                    .lanes
                    .get(id)
                    .is_some_and(|lane| lane.state == LaneState::Landed);
            if merged || squashed {
                git::delete_branch(&self.repo.top, &git::branch_name(id), &commit)?;
            }
        }
        Ok(())
    }

    fn spawn_landing(&mut self, id: String, stop: CheckStop) -> Result<QueueStep, ParallelError> {
        let repo = self.repo.clone();
        if self.held(&id) {
            // Only whether the person's changes still hold it: once they are gone, it is
            // landed as any other (`MERGE_STARTED` and all).
            return Ok(tokio::spawn(async move {
                let task = id.clone();
                let held = join_blocking(move || repo.holding(&task)).await;
                (id, held.map(|held| Stepped::Landing(Landed::Held(held))))
            }));
        }
        let worktree = self.worktree(&id);
        let checks = self.options.engine.file.config.done_when.clone();
        let check_timeout = self.options.engine.file.config.convergence.check_timeout;
        let kill_grace = self.options.engine.kill_grace;
        let env_remove = ralph_engine::withheld_env(&self.options.engine.file.config);
        let cwd = worktree.join(&self.cwd_rel);
        // A person's change in the main worktree at a path the task changes would hold the
        // landing at its end: seen before the merge and the checks, it holds it now.
        let persons = {
            let (repo, id) = (repo.clone(), id.clone());
            move || repo.holding(&id)
        };
        let merge = {
            let (repo, id, worktree) = (repo.clone(), id.clone(), worktree.clone());
            move || repo.merge_base(&id, &worktree)
        };
        let title = self.title(&id);
        let pull_requests = self.options.pull_requests.clone();
        let mut facts = self.pr_facts(&id);
        let pr_title = ralph_escalation::pr_title(&id, Some(&title), self.list.kind() == "github");
        // The event before the step, so readers see the merge start before its end.
        let base_commit = self.repo.base_commit()?;
        let branch_commit = git::run(&worktree, &["rev-parse", "HEAD"])?;
        self.emit(ParallelEventKind::MergeStarted {
            task_id: id.clone(),
            base_commit,
            branch_commit,
        });
        Ok(tokio::spawn(async move {
            let result = async {
                let held = join_blocking(persons).await?;
                if !held.is_empty() {
                    return Ok(Landed::Held(held));
                }
                let (journal, merged) = join_blocking(merge).await?;
                let head = match merged {
                    Merged::Clean { head } => head,
                    Merged::Conflict { files, hunks } => {
                        let (repo, id, worktree) = (repo.clone(), id.clone(), worktree.clone());
                        let saved =
                            join_blocking(move || repo.send_back(&id, &worktree, &journal)).await?;
                        return Ok(Landed::Conflict {
                            files,
                            hunks,
                            saved,
                        });
                    }
                };
                let mut failed = Vec::new();
                let mut passed = Vec::new();
                let mut signals = stop.signals.lock().await;
                for check in &checks {
                    let result = ralph_engine::run_check(
                        check,
                        cwd.clone(),
                        check_timeout,
                        kill_grace,
                        &env_remove,
                        &mut signals,
                    )
                    .await;
                    match result.tail.is_some() {
                        true => failed.push(result),
                        false => passed.push(result),
                    }
                }
                drop(signals);
                if stop.stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    return Ok(Landed::Interrupted);
                }
                if !failed.is_empty() {
                    let (repo, id, worktree) = (repo.clone(), id.clone(), worktree.clone());
                    let saved =
                        join_blocking(move || repo.send_back(&id, &worktree, &journal)).await?;
                    return Ok(Landed::CheckFailed { failed, saved });
                }
                if let Some(pr) = pull_requests {
                    let stopped = stop.stopped.clone();
                    let outcome = join_blocking(move || {
                        facts.checks = passed;
                        let request = pr_landing::PrRequest {
                            worktree: &worktree,
                            title: &title,
                            pr_title,
                            facts,
                        };
                        repo.land_as_pull_request(&journal, &head, request, &pr, &stopped)
                    })
                    .await?;
                    return Ok(match outcome {
                        pr_landing::PrOutcome::Landed { commit, landed } => {
                            Landed::PullRequest { commit, landed }
                        }
                        pr_landing::PrOutcome::Refused(why) => Landed::Refused(why),
                        pr_landing::PrOutcome::Interrupted => Landed::Interrupted,
                    });
                }
                let (landing, moved) =
                    join_blocking(move || repo.land(journal, &head, &title)).await?;
                Ok(match moved {
                    Moved::Yes => Landed::Yes(landing),
                    Moved::Refused(why) => Landed::Refused(why),
                    Moved::Held(files) => Landed::Held(files),
                })
            }
            .await;
            (id, result.map(Stepped::Landing))
        }))
    }

    /// `id`'s agent asked a person: the lane waits (shown in `ralph status`), the merge queue
    /// puts the question where the task lives in its turn.
    fn asked(&mut self, id: &str, question: String) -> Result<(), ParallelError> {
        if let Some(lane) = self.lanes.get_mut(id) {
            "asking".clone_into(&mut lane.view.state);
        }
        let record = self.record(id);
        record.question = Some(question.clone());
        record.answer_at = None;
        self.session.asks.retain(|a| a.task_id != id);
        self.session.asks.push(PendingAsk {
            task_id: id.to_owned(),
            question,
        });
        self.save()?;
        self.refresh_board();
        Ok(())
    }

    /// The queue's step putting `ask`'s question where its task lives (see [`Repo::ask`]).
    fn spawn_ask(&mut self, ask: PendingAsk) -> QueueStep {
        let repo = self.repo.clone();
        tokio::spawn(async move {
            let task_id = ask.task_id.clone();
            let result = join_blocking(move || repo.ask(&ask.task_id, &ask.question)).await;
            (task_id, result.map(Stepped::Ask))
        })
    }

    /// The queue put `id`'s question (`put`: on the base; `None`: a list outside git, asked
    /// now). A base that could not move has the question written in the main worktree as
    /// one loop writes it, where a person answers all the same. The lane's list gets the
    /// list's record of it, through which the lane reads the answer.
    fn ask_put(
        &mut self,
        id: &str,
        put: Option<(ralph_tasks::Asked, Moved)>,
    ) -> Result<(), ParallelError> {
        let Some(at) = self.session.asks.iter().position(|a| a.task_id == id) else {
            return Ok(self.repo.journal().clear()?);
        };
        let ask = self.session.asks.remove(at);
        let asked = match put {
            Some((asked, Moved::Yes)) => Ok(asked),
            Some((_, moved)) => {
                let why = match moved {
                    Moved::Held(files) => format!(
                        "the main worktree holds uncommitted changes to {}",
                        files.join(", ")
                    ),
                    Moved::Refused(why) => why,
                    Moved::Yes => String::new(),
                };
                self.warn(
                    Some(id),
                    format!(
                        "{} on {} could not take the agent's question: {why}; it is written \
                         in the main worktree, uncommitted",
                        self.list.location(),
                        self.repo.base
                    ),
                );
                self.list.ask(id, &ask.question)
            }
            None => self.list.ask(id, &ask.question),
        };
        match asked {
            Ok(asked) => {
                let path = self.lane_dir(id).join(LANE_TASK_FILE);
                let mut task = LaneTask::read(&path)
                    .map_err(|err| ParallelError::TaskList(err.to_string()))?;
                self.record(id).answer_at = Some(asked.at.clone());
                self.emit(ParallelEventKind::LaneAsked {
                    task_id: id.to_owned(),
                    question: asked.question.clone(),
                    at: asked.at.clone(),
                });
                task.asked = Some(asked);
                task.write(&path)
                    .map_err(|cause| ParallelError::Io { path, cause })?;
            }
            Err(err) => self.warn(
                Some(id),
                format!(
                    "the agent asked \"{}\", but {err}; its lane waits for an answer",
                    ask.question
                ),
            ),
        }
        self.save()?;
        self.repo.journal().clear()?;
        self.held_tried.clear();
        Ok(())
    }

    /// The queue's step marking `block`'s task blocked on the base (see [`Repo::block`]).
    fn spawn_block(&mut self, block: PendingBlock) -> QueueStep {
        let repo = self.repo.clone();
        tokio::spawn(async move {
            let mark = blocked_mark(&block.task_id, &block.reason);
            let result = join_blocking(move || repo.block(&mark, &block.reason)).await;
            (block.task_id, result.map(Stepped::Block))
        })
    }

    /// Whether `id` has left the run's task list (a person removed its line on the base, or
    /// closed its issue, while its lane ran): the list as the base has it, or the list outside
    /// git as it says now. As in one loop, a list that cannot be read now says nothing of it.
    fn gone(&mut self, id: &str) -> Result<bool, ParallelError> {
        let listed = match self.repo.list_rel.is_empty() {
            true => self.list.load().ok(),
            false => self.repo.listed_at(&self.repo.base_commit()?).ok(),
        };
        Ok(listed.is_some_and(|tasks| !tasks.iter().any(|t| t.id == id)))
    }

    /// `id` left the run's task list while its lane ran: dropped as one loop drops it, never
    /// landed. Its branch is saved under `refs/ralph/attempts/<id>/<n>` (its worktree's
    /// uncommitted work too), then its worktree and branch go, with a `WARNING`.
    fn drop_gone(&mut self, id: &str) -> Result<(), ParallelError> {
        let branch = format!("refs/heads/{}", git::branch_name(id));
        let tip = git::rev(&self.repo.top, &branch)?;
        let saved = match &tip {
            Some(tip) => Some(queue::save_commit(&self.repo.top, id, tip)?),
            None => None,
        };
        self.session.queue.retain(|q| q != id);
        self.held_tried.remove(id);
        let record = self.record(id);
        record.state = LaneState::Dropped;
        record.held.clear();
        record.refused = None;
        self.tasks.retain(|t| t.id != id);
        // Recorded before anything goes: a kill from here on leaves its branch to the end of
        // the run, which keeps it as any unlanded branch.
        self.save()?;
        self.retire(id)?;
        if let Some(tip) = &tip {
            git::delete_branch(&self.repo.top, &git::branch_name(id), tip)?;
        }
        self.refresh_board();
        let saved = saved.map_or_else(String::new, |saved| {
            format!("; its work is saved under {saved}")
        });
        let message = format!(
            "{}: {} {id} is no longer in the list (closed or removed by a person while it \
             ran), so it is dropped, not landed{saved}",
            self.list.location(),
            self.words().one,
        );
        self.warn(Some(id), message);
        Ok(())
    }

    /// `id`'s block waiting to be marked, when `id` left the run's task list meanwhile: there
    /// is nothing to mark it in, so it is forgotten, with a `WARNING`.
    fn forget_block(&mut self, id: &str) -> Result<(), ParallelError> {
        self.session.blocks.retain(|b| b.task_id != id);
        self.tasks.retain(|t| t.id != id);
        self.save()?;
        let message = format!(
            "{}: {} {id} is no longer in the list (closed or removed by a person), so its \
             block is not marked there",
            self.list.location(),
            self.words().one,
        );
        self.warn(Some(id), message);
        Ok(())
    }

    /// The queue marked `id` blocked (`moved`: on the base; `None`: a list outside git, told
    /// now): the run records it, then the step's journal goes, then `TASK_BLOCKED`.
    fn block_marked(&mut self, id: &str, moved: Option<Moved>) -> Result<(), ParallelError> {
        let Some(at) = self.session.blocks.iter().position(|b| b.task_id == id) else {
            return Ok(self.repo.journal().clear()?);
        };
        let block = self.session.blocks.remove(at);
        // A resumed run read the list before the mark.
        if let Some(task) = self.tasks.iter_mut().find(|t| t.id == id) {
            task.state = TaskState::Blocked;
        }
        let mark = blocked_mark(id, &block.reason);
        let said = match moved {
            Some(Moved::Yes) => Ok(()),
            Some(Moved::Refused(why)) => Err(why),
            Some(Moved::Held(files)) => Err(format!(
                "the main worktree holds uncommitted changes to {}",
                files.join(", ")
            )),
            None => self.list.write_mark(&mark).map_err(|err| err.to_string()),
        };
        if let Err(why) = said {
            self.warn(
                Some(id),
                format!(
                    "{} on {} could not say it is blocked: {why}",
                    self.list.location(),
                    self.repo.base
                ),
            );
        }
        self.save()?;
        self.repo.journal().clear()?;
        self.held_tried.clear();
        self.board.blocked += 1;
        self.emit(ParallelEventKind::TaskBlocked {
            task_id: id.to_owned(),
            reason: block.reason,
        });
        Ok(())
    }

    fn landed(&mut self, id: &str, result: Landed) -> Result<(), ParallelError> {
        self.board.merging = None;
        if let Landed::Interrupted = result {
            // Still first in the queue; the journal has the merge for `--resume`.
            return Ok(());
        }
        if let Landed::Held(files) = result {
            return self.hold(id, files);
        }
        self.session.queue.retain(|q| q != id);
        self.record(id).held.clear();
        self.held_tried.remove(id);
        let limit = self
            .options
            .engine
            .file
            .config
            .escalation
            .as_ref()
            .map_or(3, |e| e.same_error_limit);
        match result {
            Landed::Interrupted | Landed::Held(_) => {}
            Landed::Yes(commit) => self.record_landing(id, commit)?,
            Landed::PullRequest { commit, landed } => {
                self.record_landing(id, commit)?;
                self.pull_request_landed(id, &landed);
            }
            Landed::Refused(why) => {
                // Its work stays on its branch and in its worktree; `--resume` lands it, its
                // task not done again.
                self.record(id).refused = Some(why.clone());
                self.save()?;
                self.repo.journal().clear()?;
                self.warn(
                    Some(id),
                    format!(
                        "not landed, kept on {}: {}\nOnce that is put right, \
                         `ralph run --parallel {} --resume` lands it.",
                        git::branch_name(id),
                        why.trim_end(),
                        self.options.parallel
                    ),
                );
            }
            Landed::Conflict {
                files,
                hunks,
                saved,
            } => {
                let text = format!(
                    "## Your earlier work on this {one} did not merge\n\n\
                     It was done on an older {base}; {base} has moved on, and merging it into \
                     your work conflicts in: {}. Your earlier work is saved as {saved} \
                     (`git show {saved}`); this worktree now starts from the new {base}. Do the \
                     {one} again on it, keeping what {base} changed.\n\n\
                     The conflict (`git diff` of the merge):\n\n```diff\n{hunks}\n```\n",
                    files.join(", "),
                    base = self.repo.base,
                    one = self.words().one,
                );
                self.emit(ParallelEventKind::MergeConflict {
                    task_id: id.to_owned(),
                    files,
                    saved_ref: saved,
                });
                self.send_back(id, text, limit)?;
            }
            Landed::CheckFailed { failed, saved } => {
                let mut text = format!(
                    "## Your earlier work on this {one} failed its checks once merged\n\n\
                     Merged with the newer {base}, these checks failed. Your earlier work is \
                     saved as {saved} (`git show {saved}`); this worktree now starts from the \
                     new {base}. Do the {one} again on it.\n",
                    base = self.repo.base,
                    one = self.words().one,
                );
                for check in &failed {
                    text.push_str(&format!(
                        "\n$ {} ({})\n```\n{}\n```\n",
                        check.command,
                        check.status(),
                        check.tail.as_deref().unwrap_or("").trim_end()
                    ));
                }
                self.emit(ParallelEventKind::MergeCheckFailed {
                    task_id: id.to_owned(),
                    checks: failed
                        .iter()
                        .map(|c| FailedCheck {
                            command: c.command.clone(),
                            exit_code: c.exit_code,
                        })
                        .collect(),
                    saved_ref: saved,
                });
                self.send_back(id, text, limit)?;
            }
        }
        Ok(())
    }

    /// A person's uncommitted changes at `files` hold `id`'s landing: it stays in the queue,
    /// the landings after it go on, and it is tried again once the queue moves or a second
    /// passed; said when the files it waits on change.
    /// No `files`: the person's changes are gone, and the queue lands it in its turn.
    fn hold(&mut self, id: &str, files: Vec<String>) -> Result<(), ParallelError> {
        self.repo.journal().clear()?;
        self.held_tried.insert(id.to_owned(), Instant::now());
        let record = self.record(id);
        if record.held == files {
            return Ok(());
        }
        record.held = files.clone();
        self.save()?;
        if files.is_empty() {
            self.held_tried.remove(id);
            return Ok(());
        }
        self.emit(ParallelEventKind::MergeHeld {
            task_id: id.to_owned(),
            files,
        });
        Ok(())
    }

    fn held(&self, id: &str) -> bool {
        self.session
            .lanes
            .get(id)
            .is_some_and(|l| !l.held.is_empty())
    }

    /// The queue's next landing: the first task not held by a person's changes, else a held
    /// one the queue moved past or not tried for [`HELD_RETRY`].
    fn next_landing(&self) -> Option<String> {
        let due = |id: &String| {
            self.held_tried
                .get(id)
                .is_none_or(|tried| tried.elapsed() >= HELD_RETRY)
        };
        let queue = &self.session.queue;
        queue
            .iter()
            .find(|id| !self.held(id))
            .or_else(|| queue.iter().find(|id| due(id)))
            .cloned()
    }

    /// Whether every task in the queue waits on a person's changes (or none is queued): the
    /// run may end, leaving them to `--resume`.
    fn only_held_queued(&self) -> bool {
        self.session.queue.iter().all(|id| self.held(id))
    }

    /// The base moved to `commit`, which lands `id`: the run records it (the list yet to be
    /// told), then the step's journal goes, then the list is told and `TASK_LANDED` said. A
    /// kill before the record leaves the journal (`--resume` finds the base at `commit`); one
    /// after it leaves the record: either way the task lands once and the list hears once.
    fn record_landing(&mut self, id: &str, commit: String) -> Result<(), ParallelError> {
        let record = self.record(id);
        record.state = LaneState::Landed;
        record.untold = Some(commit.clone());
        if let Some(task) = self.tasks.iter_mut().find(|t| t.id == id) {
            task.state = TaskState::Passed;
        }
        self.save()?;
        self.repo.journal().clear()?;
        self.held_tried.clear();
        self.board.landed += 1;
        self.tell_landed(id)?;
        self.refresh_board();
        self.emit(ParallelEventKind::TaskLanded {
            task_id: id.to_owned(),
            commit,
        });
        Ok(())
    }

    /// A landing the session records and the list has not heard of: the list told, the lane's
    /// worktree and branch gone, then the session saved without it.
    fn tell_landed(&mut self, id: &str) -> Result<(), ParallelError> {
        let Some(commit) = self.record(id).untold.clone() else {
            return Ok(());
        };
        self.report_landed(id, &commit);
        self.retire(id)?;
        self.record(id).untold = None;
        self.save()
    }

    /// The base moved to `commit`, which lands `id`: a list outside git is marked now and
    /// told (GitHub: a comment naming the commit, the issue closed); a file list has its mark
    /// in the commit already. What it cannot do is a warning: the work is on the base.
    fn report_landed(&mut self, id: &str, commit: &str) {
        // With `land.pr` the commit is on the task's own branch, in its pull request.
        let branch = match self.options.pull_requests {
            Some(_) => git::branch_name(id),
            None => self.repo.base.clone(),
        };
        let mark = Mark::Passed {
            story_id: id.to_owned(),
            commit: Some(commit.to_owned()),
            branch: Some(branch),
        };
        let mut told = Ok(());
        if self.repo.list_rel.is_empty() {
            told = self.list.write_mark(&mark);
        }
        let told = told.and_then(|()| self.list.after_landed(&ralph_tasks::Landed::new(&mark)));
        if let Err(err) = told {
            self.warn(
                Some(id),
                format!(
                    "landed as {commit}, but {} could not be told: {err}",
                    self.list.location()
                ),
            );
        }
    }

    /// The task goes back to its loop with `conflict` in its prompt, or, past `limit` returns,
    /// is blocked.
    fn send_back(&mut self, id: &str, conflict: String, limit: u64) -> Result<(), ParallelError> {
        let record = self.record(id);
        record.returns += 1;
        let returns = record.returns;
        if returns >= limit {
            let reason = format!(
                "its work did not land {returns} times (a merge conflict or a check failing on \
                 the merged result); the attempts are under refs/ralph/attempts/{}",
                ralph_escalation::git::ref_component(id)
            );
            return self.block_task(id, &reason);
        }
        record.state = LaneState::Running;
        record.conflict = Some(conflict);
        self.save()?;
        self.again.push_front(id.to_owned());
        Ok(())
    }

    /// Stops every lane after its running iteration, as a first Ctrl+C does.
    fn stop_lanes(&mut self, why: Stop) {
        self.stop = Some(why);
        self.forward(InterruptSignal::Int);
    }

    /// A signal for the run: every lane gets it, and the run stops as their loops do. A first
    /// Ctrl+C lets the running iterations end and the queue land what passed; SIGTERM, SIGHUP
    /// and a second Ctrl+C stop now, leaving the rest to `--resume`.
    fn interrupted(&mut self, signal: InterruptSignal) {
        let first_stop = !matches!(self.stop, Some(Stop::Interrupted(_)));
        let stops_now = self.forward(signal) == Response::StopNow && !self.stop_now;
        // The signal that stopped the run names its end (exit 130, 143, 129).
        if first_stop || stops_now {
            self.stop = Some(Stop::Interrupted(signal));
        }
        self.stop_now |= stops_now;
    }

    /// Sends `signal` to every lane's loop and rules on it as they do: the lanes' processes
    /// run, so the engine's rules for a running iteration are the run's.
    fn forward(&mut self, signal: InterruptSignal) -> Response {
        for tx in self.lanes.values().filter_map(|l| l.interrupts.as_ref()) {
            let _ = tx.send(signal);
        }
        self.interrupts
            .receive(signal, Phase::Running, tokio::time::Instant::now())
    }

    fn finish(mut self) -> Result<ParallelOutcome, ParallelError> {
        let remaining = self
            .tasks
            .iter()
            .filter(|t| t.state == TaskState::Pending)
            .count() as u64;
        // No loop runs now: a lane the queue sent back while the run stopped waits for
        // `--resume` as a stopped one does.
        for record in self.session.lanes.values_mut() {
            if record.state == LaneState::Running {
                record.state = LaneState::Stopped;
            }
        }
        let unfinished = !self.session.blocks.is_empty()
            || !self.startable_now().is_empty()
            || self
                .session
                .lanes
                .values()
                .any(|l| matches!(l.state, LaneState::Stopped | LaneState::Queued));
        let (reason, exit_code) = match self.stop {
            Some(Stop::Interrupted(signal)) => (
                "interrupted".to_owned(),
                ralph_engine::exit_code(&ralph_engine::EndReason::Interrupted, Some(signal)),
            ),
            Some(Stop::MaxCost) => ("max_cost".to_owned(), 1),
            Some(Stop::MaxRuntime) => ("max_runtime".to_owned(), 1),
            None if remaining == 0 && self.board.blocked == 0 => ("stories_done".to_owned(), 0),
            None if remaining == 0 => ("stories_blocked".to_owned(), 1),
            None => ("work_left".to_owned(), 1),
        };
        // A refused or held landing waits for `--resume` (and the person's fix) with its
        // worktree.
        let held: Vec<(String, Vec<String>)> = self
            .session
            .lanes
            .iter()
            .filter(|(_, l)| !l.held.is_empty())
            .map(|(id, l)| (id.clone(), l.held.clone()))
            .collect();
        for (id, files) in &held {
            self.warn(
                Some(id),
                format!(
                    "not landed, kept on {}: the main worktree ({}) holds uncommitted changes \
                     to {}, which the task changes too.\nOnce they are committed or undone, \
                     `ralph run --parallel {} --resume` lands it.",
                    git::branch_name(id),
                    self.repo.top.display(),
                    files.join(", "),
                    self.options.parallel
                ),
            );
        }
        let refused = !held.is_empty() || self.session.lanes.values().any(|l| l.refused.is_some());
        let resumable = (self.stop.is_some() || refused) && unfinished;
        if !resumable {
            // Nothing to go on with: no worktree stays; unlanded work keeps its branch.
            let ids: Vec<String> = self.session.lanes.keys().cloned().collect();
            for id in ids {
                self.retire(&id)?;
            }
            git::run(&self.repo.top, &["worktree", "prune"])?;
            self.session.ended = true;
        }
        self.save()?;
        self.emit(ParallelEventKind::ParallelEnded {
            reason: reason.clone(),
            landed: self.board.landed,
            blocked: self.board.blocked,
            remaining,
            cost_usd: self.costs.values().sum::<f64>() + 0.0,
            exit_code,
        });
        Ok(ParallelOutcome {
            reason,
            exit_code,
            resumable,
        })
    }
}

/// The mark saying `id` is blocked, `reason` its notes and its reason.
fn blocked_mark(id: &str, reason: &str) -> Mark {
    Mark::Blocked {
        story_id: id.to_owned(),
        notes: reason.to_owned(),
        reason: reason.to_owned(),
        saved_ref: None,
    }
}

/// How often a landing held by a person's changes is tried again while the queue stands still.
const HELD_RETRY: Duration = Duration::from_secs(1);

/// Saves `worktree`'s uncommitted work, if any, under `refs/ralph/attempts/<id>/<n>` (a
/// commit on its HEAD, so the branch's commits with it); returns the ref.
fn save_worktree(id: &str, worktree: &Path) -> Result<Option<String>, ParallelError> {
    let escalation_git = ralph_escalation::Git::open(worktree)?;
    if escalation_git
        .dirty_paths(&[])
        .map(|d| d.is_empty())
        .unwrap_or(false)
    {
        return Ok(None);
    }
    let saved = escalation_git.save(
        &format!(
            "refs/ralph/attempts/{}",
            ralph_escalation::git::ref_component(id)
        ),
        &format!("ralph: {id}'s uncommitted work when its worktree was removed"),
        &[],
    )?;
    Ok(Some(saved.refname))
}

/// Task `id`'s worktree in the repository whose main worktree is `top`.
fn worktree_path(top: &Path, id: &str) -> PathBuf {
    top.join(WORKTREES)
        .join(ralph_escalation::git::ref_component(id))
}

/// Where the lanes' worktrees are, under the main worktree's top.
const WORKTREES: &str = ".ralph/worktrees";

/// A lane's own one-task list, in its folder under `.ralph/parallel/lanes`.
const LANE_TASK_FILE: &str = "task.json";

/// Runs a blocking git step off the runtime's threads.
async fn join_blocking<T: Send + 'static>(
    step: impl FnOnce() -> Result<T, ParallelError> + Send + 'static,
) -> Result<T, ParallelError> {
    tokio::task::spawn_blocking(step)
        .await
        .map_err(|err| ParallelError::StepLost(err.to_string()))?
}

/// Adds `/.ralph/` to the repository's `info/exclude` (never to a file of the user's): the
/// worktrees and ralph's files under it are never part of the main worktree's changes.
fn exclude_ralph_folder(common: &Path) -> Result<(), ParallelError> {
    let path = common.join("info").join("exclude");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if text
        .lines()
        .any(|l| matches!(l.trim(), "/.ralph/" | ".ralph/" | ".ralph" | "/.ralph"))
    {
        return Ok(());
    }
    let io = |cause| ParallelError::Io {
        path: path.clone(),
        cause,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut text = text;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# ralph's own files and a parallel run's worktrees\n/.ralph/\n");
    ralph_atomic::write(&path, text.as_bytes()).map_err(io)
}
