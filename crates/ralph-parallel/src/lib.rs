//! Parallel ralph loops: `ralph run --parallel N`.
//!
//! This crate owns a parallel run: the task list and which task may start
//! ([`tasks`]), one git worktree and branch per task (`.ralph/worktrees/<id>`, `ralph/<id>`),
//! one loop per task (a *lane*: an [`Engine`](ralph_engine::Engine) with `ralph-escalation`'s
//! story mode restricted to that story, started with
//! [`Engine::spawn`](ralph_engine::Engine::spawn)), the merge queue that lands passed tasks on the
//! base branch one at a time, the run's own events ([`events`]) and its session for `--resume`.
//! `docs/parallel.md` is the user's guide. The run's decisions (which task starts, what the
//! queue does next, what a landing's result, a signal or a spent budget means, how the run
//! ends) are a state machine without I/O, `coordinator`; the rest of the crate does its orders.
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
mod coordinator;
pub mod events;
mod git;
pub mod land;
mod lane;
mod lane_list;
mod pr_landing;
mod queue;
mod resume;
mod session;
mod steps;
pub mod tasks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use ralph_engine::{EndReason, EngineOptions, InterruptSignal, new_run_id};
use ralph_escalation::EscalationError;
use ralph_tasks::{ListedTask, Mark, TaskList};
use tokio::sync::mpsc;

pub use abandon::{Abandoned, AbandonedLane, abandon};
pub use events::{
    Board, FailedCheck, JsonLinesSink, LaneView, ParallelEvent, ParallelEventKind, ParallelRecord,
    ParallelSink, find_run, parse_events, read_events,
};
pub use land::{History, LandConfig};
pub use tasks::{Task, TaskState, startable, tasks_from_list};

use coordinator::{Coordinator, Effect, Ending, Input, Limits};
use lane::{Lane, LaneMessage};
use queue::Repo;
pub use ralph_events::parallel::{LaneState, LaneStatus, ParallelStatus};
use session::Session;
use steps::{CheckStop, QueueStep};

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
        cause: ralph_engine::LockError,
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
    /// `PARALLEL_ENDED`'s reason: `stories_done`, `stories_blocked` and `work_left`
    /// ([`StoryEnd`](ralph_escalation::StoryEnd)`::reason`), or the engine's `interrupted`,
    /// `max_cost`, `max_runtime`.
    pub reason: EndReason,
    /// The exit code a CLI should use.
    pub exit_code: i32,
    /// Whether `--resume` can go on with it.
    pub resumable: bool,
}

/// The run's shell, owned by [`run`]'s loop: it does what the [`Coordinator`] decides (git,
/// files, the lanes' loops, events) and tells it what came of it.
struct Parallel {
    options: ParallelOptions,
    repo: Repo,
    /// Where the lanes' own task files and progress files go (`.ralph/parallel`).
    state_dir: PathBuf,
    /// The RALPH.md's folder relative to the top: a lane's cwd is the same inside its worktree.
    cwd_rel: PathBuf,
    /// The run's decisions, and the session and tasks they are about.
    coordinator: Coordinator,
    /// The run's task list, read where the RALPH.md is; a list outside git is marked here.
    list: Box<dyn TaskList>,
    /// Its tasks as last read, for a starting lane's prompt.
    listed: Vec<ListedTask>,
    sinks: Vec<Box<dyn ParallelSink>>,
    board: Board,
    /// The lanes getting ready or whose loop runs: their loops' interrupts and their views.
    lanes: BTreeMap<String, Lane>,
    lane_tx: mpsc::UnboundedSender<LaneMessage>,
    /// The merge queue's step just started, for [`run`]'s loop to wait on.
    spawned: Option<QueueStep>,
    /// Where the queue's checks are told to stop now.
    check_stop: CheckStop,
    check_stop_tx: mpsc::UnboundedSender<InterruptSignal>,
}

/// What the shell's loop does after it did what the coordinator decided.
enum Flow {
    /// Wait for the next fact.
    Wait,
    /// Ask the coordinator again now: a lane's slot or the queue's step came free.
    Again,
    /// The run is over.
    Finish(Ending),
}

/// The file a repository's parallel runs append their events to
/// (`<top level>/.ralph/parallel/events.jsonl`), when `folder` is in a git repository.
pub fn events_file(folder: &Path) -> Option<PathBuf> {
    let top = git::run(folder, &["rev-parse", "--show-toplevel"]).ok()?;
    Some(Path::new(&top).join(".ralph/parallel/events.jsonl"))
}

/// The parallel run of the repository `folder` is in, if one ever ran there: its session
/// file found through git, read by [`ParallelStatus::read`].
pub fn read_status(folder: &Path) -> Result<Option<ParallelStatus>, ParallelError> {
    let Ok(top) = git::run(folder, &["rev-parse", "--show-toplevel"]) else {
        return Ok(None);
    };
    Ok(ParallelStatus::read(&Session::path(Path::new(&top)))?)
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
    let mut step: Option<QueueStep> = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let ending = loop {
        let effects = this.coordinator.step(Input::Poll {
            now: Instant::now(),
        });
        let flow = this.perform(effects)?;
        if let Some(spawned) = this.spawned.take() {
            step = Some(spawned);
        }
        match flow {
            Flow::Again => continue,
            Flow::Finish(ending) => break ending,
            Flow::Wait => {}
        }
        this.board.waiting = this.coordinator.waiting();
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
                this.stepped(&id, result?)?;
            }
            Some(signal) = interrupts.recv() => {
                let now = Instant::now();
                let effects = this.coordinator.step(Input::Interrupt { signal, now });
                this.perform(effects)?;
            }
            _ = tick.tick() => {
                let effects = this.coordinator.step(Input::Tick { now: Instant::now() });
                this.perform(effects)?;
                for sink in &mut this.sinks {
                    sink.tick(&this.board);
                }
            }
        }
    };
    // Whatever a lane or a queue's check left running, out of the lanes' sweeps' reach.
    if let Some(token) = containment.run_token() {
        let grace = this.options.engine.kill_grace;
        for warning in
            ralph_process::end_carriers(ralph_process::RUN_TOKEN_VAR, &token, grace).await
        {
            this.warn(None, warning);
        }
    }
    this.finish(ending)
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
        sinks.push(Box::new(
            JsonLinesSink::new(events_file).named(events_path.display().to_string()),
        ));
        let session_path = Session::path(&top);
        let session = if options.resume {
            let session = match session_path.exists() {
                true => Session::read(&session_path)?,
                false => return Err(ParallelError::NothingToResume(top)),
            };
            if session.ended {
                return Err(ParallelError::NothingToResume(top));
            }
            options.run_id = session.run_id.clone();
            session
        } else {
            if let Ok(stopped) = Session::read(&session_path) {
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
        let limits = Limits {
            parallel: options.parallel,
            max_cost: options.max_cost,
            max_runtime: options.max_runtime,
            same_error_limit: (options.engine.file.config.escalation.as_ref())
                .map_or(3, |e| e.same_error_limit),
        };
        let coordinator =
            Coordinator::new(session, tasks_from_list(&listed), limits, Instant::now());
        let (check_stop_tx, check_stop) = mpsc::unbounded_channel();
        let mut this = Self {
            options,
            repo,
            state_dir,
            cwd_rel,
            coordinator,
            list,
            listed,
            sinks,
            board: Board::default(),
            lanes: BTreeMap::new(),
            lane_tx,
            spawned: None,
            check_stop: CheckStop {
                signals: std::sync::Arc::new(tokio::sync::Mutex::new(check_stop)),
                stopped: std::sync::Arc::default(),
            },
            check_stop_tx,
        };
        let base_commit = this.repo.base_commit()?;
        let resumed = this.options.resume;
        this.emit(ParallelEventKind::ParallelStarted {
            base: this.repo.base.clone(),
            base_commit,
            parallel: this.options.parallel,
            tasks: (this.coordinator.tasks.iter())
                .map(|t| t.id.clone())
                .collect(),
            resumed,
        });
        if resumed {
            this.take_up()?;
        }
        this.save()?;
        Ok(this)
    }

    fn worktree(&self, id: &str) -> PathBuf {
        worktree_path(&self.repo.top, id)
    }

    fn lane_dir(&self, id: &str) -> PathBuf {
        self.state_dir
            .join("lanes")
            .join(ralph_escalation::git::ref_component(id))
    }

    fn save(&self) -> Result<(), ParallelError> {
        session::save(&self.coordinator.session, &Session::path(&self.repo.top))
    }

    fn emit(&mut self, kind: ParallelEventKind) {
        self.board.queued = self.coordinator.session.queue.len() as u64;
        self.board.pending = self.coordinator.pending();
        self.board.landed = self.coordinator.landed();
        self.board.blocked = self.coordinator.blocked();
        let event = ParallelEvent::new(SystemTime::now(), self.options.run_id.clone(), kind);
        events::send(&mut self.sinks, &event, &self.board);
    }

    /// `text` with this machine's paths made the repository's: the reason a task list is told
    /// is committed there.
    fn repo_relative(&self, text: &str) -> String {
        text.replace(&format!("{}/", self.repo.top.display()), "")
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

    fn refresh_board(&mut self) {
        let mut lanes: Vec<LaneView> = self.lanes.values().map(|l| l.view.clone()).collect();
        lanes.sort_by_key(|l| l.started);
        self.board.lanes = lanes;
        self.board.cost_usd = self.coordinator.cost();
        self.board.waiting = self.coordinator.waiting();
    }

    /// Does what the coordinator decided, in order.
    fn perform(&mut self, effects: Vec<Effect>) -> Result<Flow, ParallelError> {
        let mut flow = Flow::Wait;
        // One look at the base and the list for every lane a round starts.
        let mut base = None;
        for effect in effects {
            match effect {
                Effect::PrepareLane {
                    task_id,
                    resumed,
                    first,
                } => {
                    if !self.prepare(&task_id, resumed, first, &mut base)? {
                        flow = Flow::Again;
                    }
                }
                // Done as the lane's ready: it holds what they need.
                Effect::RunLane { .. } | Effect::ReleaseLane { .. } => {}
                Effect::Forward(signal) => {
                    for tx in self.lanes.values().filter_map(|l| l.interrupts.as_ref()) {
                        let _ = tx.send(signal);
                    }
                }
                Effect::StopChecks => {
                    (self.check_stop.stopped).store(true, std::sync::atomic::Ordering::SeqCst);
                    let _ = self.check_stop_tx.send(InterruptSignal::Cancel);
                }
                Effect::MarkBlock { task_id, reason } => match self.gone(&task_id)? {
                    true => {
                        self.forget_block(&task_id)?;
                        flow = Flow::Again;
                    }
                    false => self.spawned = Some(self.spawn_block(task_id, reason)),
                },
                Effect::PutAsk { task_id, question } => {
                    self.spawned = Some(self.spawn_ask(task_id, question));
                }
                Effect::Land { task_id, held } => match self.gone(&task_id)? {
                    true => {
                        self.drop_gone(&task_id)?;
                        flow = Flow::Again;
                    }
                    false => {
                        self.board.merging = Some(task_id.clone());
                        self.spawned = Some(self.spawn_landing(task_id, held)?);
                    }
                },
                Effect::CleanLane { task_id } => self.clean_killed_lane(&task_id)?,
                Effect::Retire { task_id } => {
                    self.retire(&task_id)?;
                    self.refresh_board();
                }
                Effect::TellLanded { task_id } => self.tell_landed(&task_id)?,
                Effect::Save => self.save()?,
                Effect::ClearJournal => self.repo.journal().clear()?,
                Effect::Emit(kind) => {
                    self.refresh_board();
                    self.emit(kind);
                }
                Effect::Warn { task_id, message } => self.warn(Some(&task_id), message),
                Effect::Finish(ending) => flow = Flow::Finish(ending),
            }
        }
        Ok(flow)
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
                    .coordinator
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

    /// The run's end as the coordinator decided it: a landing held by a person's changes
    /// said, the worktrees removed when there is nothing to resume, `PARALLEL_ENDED`.
    fn finish(mut self, ending: Ending) -> Result<ParallelOutcome, ParallelError> {
        // A refused or held landing waits for `--resume` (and the person's fix) with its
        // worktree.
        let held: Vec<(String, Vec<String>)> = (self.coordinator.session.lanes.iter())
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
        if !ending.resumable {
            // Nothing to go on with: no worktree stays; unlanded work keeps its branch.
            let ids: Vec<String> = self.coordinator.session.lanes.keys().cloned().collect();
            for id in ids {
                self.retire(&id)?;
            }
            git::run(&self.repo.top, &["worktree", "prune"])?;
        }
        self.save()?;
        self.emit(ParallelEventKind::ParallelEnded {
            reason: ending.reason.clone(),
            landed: self.coordinator.landed(),
            blocked: self.coordinator.blocked(),
            remaining: ending.remaining,
            cost_usd: self.coordinator.cost(),
            exit_code: ending.exit_code,
        });
        Ok(ParallelOutcome {
            reason: ending.reason,
            exit_code: ending.exit_code,
            resumable: ending.resumable,
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
