//! The parallel run's decisions, with no I/O: which task starts in which lane, what the merge
//! queue does next, what a landing's result means (landed, sent back, blocked, held, refused),
//! what an interrupt or a spent budget stops, and how the run ends.
//!
//! A sans-IO state machine, as the engine's supervisor of processes: [`Coordinator::step`]
//! takes a fact ([`Input`]: a lane ended, a landing conflicted, Ctrl+C came, a second passed)
//! and answers with orders ([`Effect`]: start a lane, land a task, save the session, say an
//! event, finish). The shell in `lib.rs` does the git, the files, the lanes' loops and the
//! events, and tells the outcome back as the next input. Time comes in the inputs: nothing
//! here reads a clock.
//!
//! The rules that are the engine's are the engine's: the double Ctrl+C
//! ([`ralph_engine::interrupts`]), the budgets ([`ralph_engine::budget_spent`]), the endings
//! and their exit codes ([`EndReason`], [`ralph_engine::exit_code`], escalation's
//! [`StoryEnd`]), the task states ([`TaskState`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use ralph_engine::interrupts::{Interrupts, Phase, Response};
use ralph_engine::{EndReason, InterruptSignal};
use ralph_escalation::StoryEnd;

use crate::LaneState;
use crate::events::ParallelEventKind;
use crate::session::{LaneRecord, PendingAsk, PendingBlock, Session};
use crate::tasks::{Task, TaskState, startable};

mod messages;
#[cfg(test)]
mod tests;

pub(crate) use messages::{Effect, Ending, Input, Landing, LaneEnd, UnfinishedStep};

/// How often a landing held by a person's changes is tried again while the queue stands still.
const HELD_RETRY: Duration = Duration::from_secs(1);

/// Why the run stops starting lanes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stop {
    Interrupted(InterruptSignal),
    /// A budget is spent: [`EndReason::MaxCost`] or [`EndReason::MaxRuntime`].
    Spent(EndReason),
}

/// The merge queue's step under way.
#[derive(Debug, Clone, PartialEq, Eq)]
enum QueueStep {
    Block(String),
    Ask(String),
    Landing(String),
}

/// What the run counts over every lane.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits {
    /// Lanes at once.
    pub(crate) parallel: usize,
    /// The lanes' cost at which every lane stops, as a first Ctrl+C would stop it.
    pub(crate) max_cost: Option<f64>,
    /// The run's time after which every lane stops.
    pub(crate) max_runtime: Option<Duration>,
    /// Times a task comes back from the queue before it is blocked.
    pub(crate) same_error_limit: u64,
}

/// The run's decision state.
#[derive(Debug)]
pub(crate) struct Coordinator {
    /// What `--resume` goes on with: the lanes' records, the queue, the blocks and questions
    /// waiting for their step. The shell saves it on [`Effect::Save`].
    pub(crate) session: Session,
    /// The run's tasks as the list had them, marked as the run goes.
    pub(crate) tasks: Vec<Task>,
    limits: Limits,
    started: Instant,
    /// Lanes getting ready or whose loop runs.
    lanes: BTreeSet<String>,
    /// Tasks to start before any new one: returned from the queue, or resumed.
    again: VecDeque<String>,
    /// Task ids resumed as they were (their lane's own list kept).
    resumed: Vec<String>,
    /// Tasks whose branch holds a run's work on another base: this run leaves them alone.
    elsewhere: Vec<String>,
    /// Lanes' cost so far, by task.
    costs: BTreeMap<String, f64>,
    stop: Option<Stop>,
    stop_now: bool,
    /// The interrupts forwarded to the lanes, ruled on as each lane's loop rules on them.
    interrupts: Interrupts,
    /// When each held landing was last tried; one the queue moved past since is tried again.
    held_tried: BTreeMap<String, Instant>,
    step: Option<QueueStep>,
    landed: u64,
    blocked: u64,
}

impl Coordinator {
    /// A run of `tasks` from `session` (new or resumed), started at `started`.
    pub(crate) fn new(
        mut session: Session,
        tasks: Vec<Task>,
        limits: Limits,
        started: Instant,
    ) -> Self {
        session.parallel = limits.parallel;
        Self {
            session,
            tasks,
            limits,
            started,
            lanes: BTreeSet::new(),
            again: VecDeque::new(),
            resumed: Vec::new(),
            elsewhere: Vec::new(),
            costs: BTreeMap::new(),
            stop: None,
            stop_now: false,
            interrupts: Interrupts::default(),
            held_tried: BTreeMap::new(),
            step: None,
            landed: 0,
            blocked: 0,
        }
    }

    /// Decides on `input`: what the shell does about it, in order.
    pub(crate) fn step(&mut self, input: Input) -> Vec<Effect> {
        match input {
            Input::Poll { now } => self.poll(now),
            Input::Tick { now } => self.check_budget(now),
            Input::Interrupt { signal, now } => self.interrupted(signal, now),
            Input::Resumed => self.take_up(),
            Input::Unfinished { task_id, step } => {
                self.unfinished(task_id, step);
                Vec::new()
            }
            Input::LeftAlone { task_id } => {
                self.lanes.remove(&task_id);
                self.session.lanes.remove(&task_id);
                self.elsewhere.push(task_id);
                Vec::new()
            }
            Input::LaneNotOpened { task_id, reason } => {
                self.lanes.remove(&task_id);
                self.block(&task_id, reason)
            }
            Input::LaneReady { task_id } => self.lane_ready(task_id),
            Input::LaneStarted { task_id, run_id } => {
                self.record(&task_id).run_id = Some(run_id);
                vec![Effect::Save]
            }
            Input::IterationStarted { task_id } => {
                // Its loop waits for no answer any more.
                let record = self.record(&task_id);
                match record.question.take() {
                    Some(_) => {
                        record.answer_at = None;
                        vec![Effect::Save]
                    }
                    None => Vec::new(),
                }
            }
            Input::IterationEnded { task_id, cost, now } => {
                if let Some(cost) = cost.filter(|c| *c > 0.0) {
                    *self.costs.entry(task_id).or_default() += cost;
                }
                self.check_budget(now)
            }
            Input::Asked { task_id, question } => {
                let record = self.record(&task_id);
                record.question = Some(question.clone());
                record.answer_at = None;
                self.session.asks.retain(|a| a.task_id != task_id);
                self.session.asks.push(PendingAsk::new(task_id, question));
                vec![Effect::Save]
            }
            Input::LaneEnded { task_id, end } => self.lane_ended(task_id, end),
            Input::Gone { task_id } => self.gone(&task_id),
            Input::Landed {
                task_id,
                landing,
                now,
            } => self.landing_ended(&task_id, landing, now),
            Input::BlockMarked { task_id } => self.block_marked(&task_id),
            Input::AskPut { task_id, answer_at } => self.ask_put(&task_id, answer_at),
            Input::Told { task_id } => {
                self.record(&task_id).untold = None;
                vec![Effect::Save]
            }
        }
    }

    /// The lanes' cost so far (0 when none reported one).
    pub(crate) fn cost(&self) -> f64 {
        // An empty float sum is -0.0, which prints as `-0.00`.
        self.costs.values().sum::<f64>() + 0.0
    }

    /// `id`'s lane's cost so far.
    pub(crate) fn cost_of(&self, id: &str) -> f64 {
        self.costs.get(id).copied().unwrap_or(0.0)
    }

    /// Tasks landed by this run.
    pub(crate) fn landed(&self) -> u64 {
        self.landed
    }

    /// Tasks blocked by this run, their mark said.
    pub(crate) fn blocked(&self) -> u64 {
        self.blocked
    }

    /// Tasks still pending.
    pub(crate) fn pending(&self) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.state == TaskState::Pending)
            .count() as u64
    }

    /// The task's title, as the list had it.
    pub(crate) fn title(&self, id: &str) -> String {
        self.tasks
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.title.clone())
            .unwrap_or_default()
    }

    /// Tasks waiting for a lane.
    pub(crate) fn waiting(&self) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.state == TaskState::Pending && !self.busy(&t.id))
            .count() as u64
            + self.again.len() as u64
    }

    /// Whether a person's changes hold `id`'s landing.
    pub(crate) fn held(&self, id: &str) -> bool {
        self.session
            .lanes
            .get(id)
            .is_some_and(|l| !l.held.is_empty())
    }

    /// `id`'s record, made when it has none.
    pub(crate) fn record(&mut self, id: &str) -> &mut LaneRecord {
        self.session
            .lanes
            .entry(id.to_owned())
            .or_insert_with(|| LaneRecord::new(LaneState::Running))
    }

    fn busy(&self, id: &str) -> bool {
        self.session.lanes.contains_key(id)
            || self.lanes.contains(id)
            || self.elsewhere.iter().any(|e| e == id)
    }

    /// Tasks that may start now, ignoring the slots: those sent back or resumed first.
    fn startable_now(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.again.iter().cloned().collect();
        ids.extend(
            startable(&self.tasks, |id| self.busy(id), usize::MAX)
                .into_iter()
                .map(|t| t.id.clone()),
        );
        ids
    }

    /// Lanes for the free slots (unless the run stops), the queue's next step (one at a time
    /// moves the base: a block's mark, then a question, before the next landing), or the end.
    fn poll(&mut self, now: Instant) -> Vec<Effect> {
        let mut effects = Vec::new();
        while self.stop.is_none() && self.lanes.len() < self.limits.parallel {
            let Some(id) = self.startable_now().into_iter().next() else {
                break;
            };
            self.again.retain(|a| a != &id);
            let first = !self.session.lanes.contains_key(&id);
            let resumed = self.resumed.contains(&id);
            self.resumed.retain(|r| r != &id);
            self.lanes.insert(id.clone());
            self.record(&id).state = LaneState::Running;
            effects.push(Effect::PrepareLane {
                task_id: id,
                resumed,
                first,
            });
        }
        if self.step.is_none() && !self.stop_now {
            if let Some(block) = self.session.blocks.first() {
                self.step = Some(QueueStep::Block(block.task_id.clone()));
                effects.push(Effect::MarkBlock {
                    task_id: block.task_id.clone(),
                    reason: block.reason.clone(),
                });
            } else if let Some(ask) = self.session.asks.first() {
                self.step = Some(QueueStep::Ask(ask.task_id.clone()));
                effects.push(Effect::PutAsk {
                    task_id: ask.task_id.clone(),
                    question: ask.question.clone(),
                });
            } else if let Some(id) = self.next_landing(now) {
                self.step = Some(QueueStep::Landing(id.clone()));
                let held = self.held(&id);
                effects.push(Effect::Land { task_id: id, held });
            }
        }
        let idle = self.lanes.is_empty() && self.step.is_none();
        let queue_done = self.only_held_queued()
            && self.session.blocks.is_empty()
            && self.session.asks.is_empty();
        if idle
            && (queue_done || self.stop_now)
            && (self.stop.is_some() || self.startable_now().is_empty())
        {
            effects.push(Effect::Finish(self.finish()));
        }
        effects
    }

    /// The queue's next landing: the first task not held by a person's changes, else a held
    /// one the queue moved past or not tried for [`HELD_RETRY`].
    fn next_landing(&self, now: Instant) -> Option<String> {
        let due = |id: &String| {
            self.held_tried
                .get(id)
                .is_none_or(|tried| now.saturating_duration_since(*tried) >= HELD_RETRY)
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

    /// Stops every lane after its running iteration, as a first Ctrl+C does, once a budget is
    /// spent.
    fn check_budget(&mut self, now: Instant) -> Vec<Effect> {
        if self.stop.is_some() {
            return Vec::new();
        }
        let cost = (!self.costs.is_empty()).then(|| self.cost());
        let elapsed = now.saturating_duration_since(self.started);
        match ralph_engine::budget_spent(
            self.limits.max_cost,
            cost,
            self.limits.max_runtime,
            elapsed,
        ) {
            Some(spent) => {
                self.stop = Some(Stop::Spent(spent));
                self.forward(InterruptSignal::Int, now);
                vec![Effect::Forward(InterruptSignal::Int)]
            }
            None => Vec::new(),
        }
    }

    /// A signal for the run: every lane gets it, and the run stops as their loops do. A first
    /// Ctrl+C lets the running iterations end and the queue land what passed; SIGTERM, SIGHUP
    /// and a second Ctrl+C stop now, the queue's checks too, leaving the rest to `--resume`.
    fn interrupted(&mut self, signal: InterruptSignal, now: Instant) -> Vec<Effect> {
        let first_stop = !matches!(self.stop, Some(Stop::Interrupted(_)));
        let stops_now = self.forward(signal, now) == Response::StopNow && !self.stop_now;
        // The signal that stopped the run names its end (exit 130, 143, 129).
        if first_stop || stops_now {
            self.stop = Some(Stop::Interrupted(signal));
        }
        self.stop_now |= stops_now;
        let mut effects = vec![Effect::Forward(signal)];
        if self.stop_now {
            effects.push(Effect::StopChecks);
        }
        effects
    }

    /// Rules on a signal sent to the lanes as their loops do: their processes run, so the
    /// engine's rules for a running iteration are the run's.
    fn forward(&mut self, signal: InterruptSignal, now: Instant) -> Response {
        self.interrupts.receive(signal, Phase::Running, now)
    }

    /// `--resume`: the landings a kill kept the list from hearing of told; the queue in its
    /// order first, then the landings the base refused, then the lanes that stopped (or ran
    /// when ralph was killed), cleaned.
    fn take_up(&mut self) -> Vec<Effect> {
        let mut effects: Vec<Effect> = self
            .session
            .lanes
            .iter()
            .filter(|(_, l)| l.untold.is_some())
            .map(|(id, _)| Effect::TellLanded {
                task_id: id.clone(),
            })
            .collect();
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
            effects.push(Effect::CleanLane {
                task_id: id.clone(),
            });
            self.again.push_back(id.clone());
            self.resumed.push(id);
        }
        effects
    }

    /// A step a kill cut short goes first in line again.
    fn unfinished(&mut self, task_id: String, step: UnfinishedStep) {
        match step {
            UnfinishedStep::Ask { question } => {
                if !self.session.asks.iter().any(|a| a.task_id == task_id) {
                    self.session
                        .asks
                        .insert(0, PendingAsk::new(task_id, question));
                }
            }
            UnfinishedStep::Block { reason } => {
                self.record(&task_id).state = LaneState::Blocked;
                if !self.session.blocks.iter().any(|b| b.task_id == task_id) {
                    self.session
                        .blocks
                        .insert(0, PendingBlock::new(task_id, reason));
                }
            }
        }
    }

    /// A lane made ready: its loop starts, unless the run stops (`--resume` starts it then).
    fn lane_ready(&mut self, id: String) -> Vec<Effect> {
        if self.stop.is_none() {
            return vec![Effect::RunLane { task_id: id }];
        }
        self.lanes.remove(&id);
        // A task whose loop never ran stays pending, as if never started; one that ran before
        // (sent back by the queue, resumed) keeps its record for `--resume`.
        let retire = self.record(&id).run_id.is_none();
        match retire {
            true => {
                self.session.lanes.remove(&id);
            }
            false => self.record(&id).state = LaneState::Stopped,
        }
        vec![
            Effect::ReleaseLane {
                task_id: id,
                retire,
            },
            Effect::Save,
        ]
    }

    fn lane_ended(&mut self, id: String, end: LaneEnd) -> Vec<Effect> {
        self.lanes.remove(&id);
        match end {
            LaneEnd::Passed => {
                let record = self.record(&id);
                record.state = LaneState::Queued;
                record.conflict = None;
                self.session.queue.push(id.clone());
                let position = self.session.queue.len();
                vec![
                    Effect::Save,
                    Effect::Emit(ParallelEventKind::MergeQueued {
                        task_id: id,
                        position,
                    }),
                ]
            }
            LaneEnd::Blocked(reason) => self.block(&id, reason),
            LaneEnd::Stopped => {
                self.record(&id).state = LaneState::Stopped;
                vec![Effect::Save]
            }
        }
    }

    /// Blocks `id`: its worktree goes now, and the merge queue marks it blocked with `reason`
    /// in its turn. Saved first: a kill from then on leaves the block for `--resume` to mark.
    fn block(&mut self, id: &str, reason: String) -> Vec<Effect> {
        self.record(id).state = LaneState::Blocked;
        if let Some(task) = self.tasks.iter_mut().find(|t| t.id == id) {
            task.state = TaskState::Blocked;
        }
        if !self.session.blocks.iter().any(|b| b.task_id == id) {
            (self.session.blocks).push(PendingBlock::new(id.to_owned(), reason));
        }
        vec![
            Effect::Save,
            Effect::Retire {
                task_id: id.to_owned(),
            },
        ]
    }

    /// The task of the queue's step left the list: its block is forgotten, or, queued, it is
    /// dropped, never landed (the shell saved its branch first).
    fn gone(&mut self, id: &str) -> Vec<Effect> {
        self.step = None;
        self.tasks.retain(|t| t.id != id);
        if self.session.blocks.iter().any(|b| b.task_id == id) {
            self.session.blocks.retain(|b| b.task_id != id);
            return vec![Effect::Save];
        }
        self.session.queue.retain(|q| q != id);
        self.held_tried.remove(id);
        let record = self.record(id);
        record.state = LaneState::Dropped;
        record.held.clear();
        record.refused = None;
        // Recorded before anything goes: a kill from here on leaves its branch to the end of
        // the run, which keeps it as any unlanded branch.
        vec![
            Effect::Save,
            Effect::Retire {
                task_id: id.to_owned(),
            },
        ]
    }

    fn landing_ended(&mut self, id: &str, landing: Landing, now: Instant) -> Vec<Effect> {
        self.step = None;
        match landing {
            // Still first in the queue; the journal has the merge for `--resume`.
            Landing::Interrupted => return Vec::new(),
            Landing::Held(files) => return self.hold(id, files, now),
            _ => {}
        }
        self.session.queue.retain(|q| q != id);
        self.record(id).held.clear();
        self.held_tried.remove(id);
        match landing {
            Landing::Landed { commit } => self.record_landing(id, commit),
            Landing::SentBack { prompt } => self.send_back(id, prompt),
            Landing::Refused(why) => {
                // Its work stays on its branch and in its worktree; `--resume` lands it, its
                // task not done again.
                self.record(id).refused = Some(why.clone());
                let message = format!(
                    "not landed, kept on {}: {}\nOnce that is put right, \
                     `ralph run --parallel {} --resume` lands it.",
                    crate::git::branch_name(id),
                    why.trim_end(),
                    self.limits.parallel
                );
                vec![
                    Effect::Save,
                    Effect::ClearJournal,
                    Effect::Warn {
                        task_id: id.to_owned(),
                        message,
                    },
                ]
            }
            Landing::Interrupted | Landing::Held(_) => Vec::new(),
        }
    }

    /// The base moved to `commit`, which lands `id`: the run records it (the list yet to be
    /// told), then the step's journal goes, then the list is told and `TASK_LANDED` said. A
    /// kill before the record leaves the journal (`--resume` finds the base at `commit`); one
    /// after it leaves the record: either way the task lands once and the list hears once.
    fn record_landing(&mut self, id: &str, commit: String) -> Vec<Effect> {
        let record = self.record(id);
        record.state = LaneState::Landed;
        record.untold = Some(commit.clone());
        if let Some(task) = self.tasks.iter_mut().find(|t| t.id == id) {
            task.state = TaskState::Passed;
        }
        self.held_tried.clear();
        self.landed += 1;
        vec![
            Effect::Save,
            Effect::ClearJournal,
            Effect::TellLanded {
                task_id: id.to_owned(),
            },
            Effect::Emit(ParallelEventKind::TaskLanded {
                task_id: id.to_owned(),
                commit,
            }),
        ]
    }

    /// The task goes back to its loop with `prompt`, first in line, or, at its
    /// `same_error_limit`-th return, is blocked.
    fn send_back(&mut self, id: &str, prompt: String) -> Vec<Effect> {
        let limit = self.limits.same_error_limit;
        let record = self.record(id);
        record.returns += 1;
        let returns = record.returns;
        if returns >= limit {
            let reason = format!(
                "its work did not land {returns} times (a merge conflict or a check failing on \
                 the merged result); the attempts are under refs/ralph/attempts/{}",
                ralph_escalation::git::ref_component(id)
            );
            return self.block(id, reason);
        }
        record.state = LaneState::Running;
        record.conflict = Some(prompt);
        self.again.push_front(id.to_owned());
        vec![Effect::Save]
    }

    /// A person's uncommitted changes at `files` hold `id`'s landing: it stays in the queue,
    /// the landings after it go on, and it is tried again once the queue moves or
    /// [`HELD_RETRY`] passed; said when the files it waits on change. No `files`: the
    /// person's changes are gone, and the queue lands it in its turn.
    fn hold(&mut self, id: &str, files: Vec<String>, now: Instant) -> Vec<Effect> {
        let mut effects = vec![Effect::ClearJournal];
        self.held_tried.insert(id.to_owned(), now);
        let record = self.record(id);
        if record.held == files {
            return effects;
        }
        record.held = files.clone();
        effects.push(Effect::Save);
        if files.is_empty() {
            self.held_tried.remove(id);
            return effects;
        }
        effects.push(Effect::Emit(ParallelEventKind::MergeHeld {
            task_id: id.to_owned(),
            files,
        }));
        effects
    }

    /// The queue marked `id` blocked: recorded, then the step's journal goes, then
    /// `TASK_BLOCKED`.
    fn block_marked(&mut self, id: &str) -> Vec<Effect> {
        self.step = None;
        let Some(at) = self.session.blocks.iter().position(|b| b.task_id == id) else {
            return vec![Effect::ClearJournal];
        };
        let block = self.session.blocks.remove(at);
        // A resumed run read the list before the mark.
        if let Some(task) = self.tasks.iter_mut().find(|t| t.id == id) {
            task.state = TaskState::Blocked;
        }
        self.held_tried.clear();
        self.blocked += 1;
        vec![
            Effect::Save,
            Effect::ClearJournal,
            Effect::Emit(ParallelEventKind::TaskBlocked {
                task_id: id.to_owned(),
                reason: block.reason,
            }),
        ]
    }

    /// The queue put `id`'s question where a person answers it (`answer_at`).
    fn ask_put(&mut self, id: &str, answer_at: Option<String>) -> Vec<Effect> {
        self.step = None;
        let Some(at) = self.session.asks.iter().position(|a| a.task_id == id) else {
            return vec![Effect::ClearJournal];
        };
        self.session.asks.remove(at);
        if let Some(answer_at) = answer_at {
            self.record(id).answer_at = Some(answer_at);
        }
        self.held_tried.clear();
        vec![Effect::Save, Effect::ClearJournal]
    }

    /// The run's end: its reason and exit code (the engine's), and whether `--resume` can go
    /// on with it (it stopped, or a landing waits on a person, with work left).
    fn finish(&mut self) -> Ending {
        let remaining = self.pending();
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
        let (reason, signal) = match &self.stop {
            Some(Stop::Interrupted(signal)) => (EndReason::Interrupted, Some(*signal)),
            Some(Stop::Spent(reason)) => (reason.clone(), None),
            None if remaining == 0 && self.blocked == 0 => (StoryEnd::StoriesDone.reason(), None),
            None if remaining == 0 => (StoryEnd::StoriesBlocked.reason(), None),
            None => (StoryEnd::WorkLeft.reason(), None),
        };
        let exit_code = ralph_engine::exit_code(&reason, signal);
        // A refused or held landing waits for `--resume` (and the person's fix).
        let waits = self
            .session
            .lanes
            .values()
            .any(|l| !l.held.is_empty() || l.refused.is_some());
        let resumable = (self.stop.is_some() || waits) && unfinished;
        // Nothing to go on with: the shell removes every worktree.
        self.session.ended = !resumable;
        Ending {
            reason,
            exit_code,
            resumable,
            remaining,
        }
    }
}
