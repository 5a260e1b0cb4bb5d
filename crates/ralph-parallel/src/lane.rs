//! A parallel run's lanes: each one's worktree and story mode made ready off the runtime's
//! thread, its loop started, and what its loop says turned into the coordinator's inputs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ralph_engine::{
    EndReason, Engine, EngineOptions, Event, EventKind, FolderClaim, InterruptSignal, RunOutcome,
    new_run_id,
};
use ralph_escalation::{Escalation, StoryEnd};
use ralph_tasks::ListedTask;
use tokio::sync::mpsc;

use crate::coordinator::{Effect, Input, LaneEnd};
use crate::git::{self, HalfMade};
use crate::lane_list::{Asking, LaneList, LaneTask};
use crate::steps::join_blocking;
use crate::{LANE_TASK_FILE, LaneView, Parallel, ParallelError, ParallelEventKind, queue};

/// What lanes tell the run.
pub(crate) enum LaneMessage {
    Prepared(String, Box<Result<Prepared, ParallelError>>),
    Event(String, Box<Event>),
    Ended(String, Box<Result<RunOutcome, ralph_engine::EngineError>>),
    /// What the sweep at a lane's end has to say (what it ended).
    Swept(String, Vec<String>),
    /// The lane's agent asked a person this question; its loop waits for the answer.
    Asked(String, String),
}

/// A lane getting ready or whose loop runs.
pub(crate) struct Lane {
    /// Its loop's interrupts; `None` while it gets ready.
    pub(crate) interrupts: Option<mpsc::UnboundedSender<InterruptSignal>>,
    pub(crate) view: LaneView,
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
    config: ralph_frontmatter::Config,
    opening: ralph_escalation::Options,
    /// The lane's loop: its folder in the worktree, run id and log folder.
    options: EngineOptions,
    /// The parallel run's id, named by the lane's hold on its folder.
    parallel_run_id: String,
}

/// A lane ready to start.
pub(crate) struct Prepared {
    escalation: Escalation,
    config: ralph_frontmatter::Config,
    worktree: PathBuf,
    branch: String,
    options: EngineOptions,
    /// The lane's folder, held as one loop holds its own: a `ralph run` started there while
    /// the lane runs is refused, naming the parallel run, so a landing never removes a folder
    /// another run writes its logs in.
    claim: FolderClaim,
    /// The worktree's repository lock, as one loop's CLI takes it, held with the claim.
    repository_lock: Option<ralph_engine::RunLock>,
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

impl Parallel {
    /// Makes a lane ready for `id` (the coordinator took a slot for it), unless its branch
    /// is another base's run's: then the task is left alone and `false` returned. `base`: the
    /// base's commit, looked at (with the list) once for every lane a round starts.
    pub(crate) fn prepare(
        &mut self,
        id: &str,
        resumed: bool,
        first: bool,
        base: &mut Option<String>,
    ) -> Result<bool, ParallelError> {
        if let Some(other) = first.then(|| self.other_base(id)).transpose()?.flatten() {
            self.coordinator.step(Input::LeftAlone {
                task_id: id.to_owned(),
            });
            self.leave_alone(id, &other);
            return Ok(false);
        }
        let commit = match base {
            Some(commit) => commit.clone(),
            None => {
                match self.list.load() {
                    Ok(listed) => self.listed = listed,
                    // A person is editing it: the last reading serves.
                    Err(err) => self.warn(None, format!("the task list: {err}")),
                }
                base.insert(self.repo.base_commit()?).clone()
            }
        };
        let task = match self.listed.iter().find(|t| t.id == id) {
            Some(task) => LaneTask::of(task),
            None => {
                let title = self.coordinator.title(id);
                LaneTask::of(&ListedTask::new(id.to_owned(), title))
            }
        };
        self.prepare_lane(id, commit, task, resumed);
        Ok(true)
    }

    /// The other base `id`'s existing branch was made from, when a run on another base made
    /// it (kept when that run ended, or that run's lane now): it is not this run's to take
    /// up. A branch made before ralph recorded its base is ours (one this run's session knows
    /// is never asked about).
    fn other_base(&self, id: &str) -> Result<Option<String>, ParallelError> {
        let branch = git::branch_name(id);
        if git::rev(&self.repo.top, &format!("refs/heads/{branch}"))?.is_none() {
            return Ok(None);
        }
        Ok(git::recorded_base(&self.repo.top, &branch)?.filter(|base| *base != self.repo.base))
    }

    /// `id`'s branch holds a run's work on the base `other`: this run leaves the task alone
    /// (never takes up, lands or removes that branch), with a `WARNING` saying how to go on.
    fn leave_alone(&mut self, id: &str, other: &str) {
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

    /// The lane's story mode: its own one-task list and progress file, revert on.
    pub(crate) fn lane_escalation(
        &self,
        id: &str,
        worktree: &Path,
    ) -> (ralph_frontmatter::Config, ralph_escalation::Options) {
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
    fn prepare_lane(&mut self, id: &str, base: String, task: LaneTask, resumed: bool) {
        let lane_dir = self.lane_dir(id);
        let resumed = resumed && lane_dir.join(LANE_TASK_FILE).exists();
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
                    cost_usd: self.coordinator.cost_of(id),
                },
                tip: None,
            },
        );
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
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err(ParallelError::Escalation(err)) => {
                // This task cannot run; the others can.
                self.lanes.remove(id);
                let effects = self.coordinator.step(Input::LaneNotOpened {
                    task_id: id.to_owned(),
                    reason: self.repo_relative(&format!("its worktree could not be opened: {err}")),
                });
                self.perform(effects)?;
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        let effects = self.coordinator.step(Input::LaneReady {
            task_id: id.to_owned(),
        });
        let mut prepared = Some(prepared);
        for effect in effects {
            match effect {
                Effect::RunLane { .. } => {
                    if let Some(prepared) = prepared.take() {
                        self.run_lane(id, prepared)?;
                    }
                }
                Effect::ReleaseLane { retire, .. } => {
                    self.lanes.remove(id);
                    drop(prepared.take());
                    if retire {
                        self.retire(id)?;
                    }
                    self.refresh_board();
                }
                effect => {
                    self.perform(vec![effect])?;
                }
            }
        }
        Ok(())
    }

    /// Starts the ready lane's loop.
    fn run_lane(&mut self, id: &str, prepared: Prepared) -> Result<(), ParallelError> {
        let Prepared {
            mut escalation,
            config,
            worktree,
            branch,
            mut options,
            claim,
            repository_lock,
        } = prepared;
        let conflict = self.coordinator.record(id).conflict.clone();
        options.file.config = config;
        if let Some(conflict) = &conflict {
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
        let title = self.coordinator.title(id);
        let effects = self.coordinator.step(Input::LaneStarted {
            task_id: id.to_owned(),
            run_id: lane_run_id.clone(),
        });
        self.perform(effects)?;
        let returns = self.coordinator.record(id).returns;
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

    pub(crate) fn lane_message(&mut self, message: LaneMessage) -> Result<(), ParallelError> {
        match message {
            LaneMessage::Event(id, event) => match event.kind {
                EventKind::IterationStarted { iteration, .. } => {
                    if let Some(lane) = self.lanes.get_mut(&id) {
                        lane.view.iteration = iteration;
                        "running".clone_into(&mut lane.view.state);
                    }
                    let effects = self.coordinator.step(Input::IterationStarted {
                        task_id: id.clone(),
                    });
                    self.perform(effects)?;
                    self.refresh_board();
                    self.emit(ParallelEventKind::LaneIterationStarted {
                        task_id: id,
                        iteration,
                    });
                }
                EventKind::IterationEnded {
                    iteration,
                    state,
                    usage,
                    failed,
                    ..
                } => {
                    self.keep_dropped_commits(&id)?;
                    let cost = (usage.as_ref())
                        .and_then(|u| u.cost_usd)
                        .filter(|c| *c > 0.0);
                    let tokens = usage.and_then(|u| match (u.input_tokens, u.output_tokens) {
                        (None, None) => None,
                        (input, output) => {
                            Some(input.unwrap_or(0).saturating_add(output.unwrap_or(0)))
                        }
                    });
                    // The budget's effects (every lane stopped) after the event.
                    let budget = self.coordinator.step(Input::IterationEnded {
                        task_id: id.clone(),
                        cost,
                        now: Instant::now(),
                    });
                    self.board.tokens = self.board.tokens.saturating_add(tokens.unwrap_or(0));
                    let total = self.coordinator.cost_of(&id);
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
                        failed,
                        cost_usd: cost,
                        tokens,
                    });
                    self.perform(budget)?;
                }
                EventKind::RateLimited {
                    iteration,
                    until,
                    wait_ms,
                    ..
                } => self.emit(ParallelEventKind::LaneRateLimited {
                    task_id: id,
                    iteration,
                    // As the lane's own events write it.
                    until: humantime::format_rfc3339_millis(until).to_string(),
                    wait_ms,
                }),
                _ => {}
            },
            LaneMessage::Ended(id, outcome) => self.lane_ended(&id, *outcome)?,
            LaneMessage::Swept(id, warnings) => {
                for warning in warnings {
                    self.warn(Some(&id), warning);
                }
            }
            LaneMessage::Prepared(id, prepared) => self.lane_prepared(&id, *prepared)?,
            LaneMessage::Asked(id, question) => {
                // The merge queue puts the question where the task lives in its turn.
                if let Some(lane) = self.lanes.get_mut(&id) {
                    "asking".clone_into(&mut lane.view.state);
                }
                let effects = self.coordinator.step(Input::Asked {
                    task_id: id,
                    question,
                });
                self.perform(effects)?;
                self.refresh_board();
            }
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
            Ok(outcome) => (outcome.reason.clone(), outcome.iterations),
            // No `RUN_ENDED`: the loop could not run; said in the reason, a failure.
            Err(err) => (
                EndReason::Other {
                    reason: format!("error: {err}"),
                    exit_code: ralph_events::exit::FAILURE,
                },
                lane.as_ref().map_or(0, |l| l.view.iteration),
            ),
        };
        self.refresh_board();
        self.emit(ParallelEventKind::LaneEnded {
            task_id: id.to_owned(),
            reason,
            iterations,
            cost_usd: self.coordinator.cost_of(id),
        });
        let story_end = outcome
            .as_ref()
            .ok()
            .and_then(|o| StoryEnd::of(&o.reason))
            .or_else(|| self.lane_task_end(id));
        let end = match story_end {
            Some(StoryEnd::StoriesDone) => LaneEnd::Passed,
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
                LaneEnd::Blocked(self.repo_relative(&reason))
            }
            // Interrupted before its task passed, out of iterations, failing: its work stays
            // in its worktree, for `--resume`.
            _ => LaneEnd::Stopped,
        };
        let effects = self.coordinator.step(Input::LaneEnded {
            task_id: id.to_owned(),
            end,
        });
        self.perform(effects)?;
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
}
