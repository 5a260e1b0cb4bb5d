//! What the coordinator is told ([`Input`]: facts) and what it orders ([`Effect`]).

use std::time::Instant;

use ralph_engine::{EndReason, InterruptSignal};

use crate::events::ParallelEventKind;

/// What the run is told: a fact, which [`Coordinator::step`] decides on.
#[derive(Debug, Clone)]
pub(crate) enum Input {
    /// Nothing new: what should happen now (lanes to start, the queue's next step, the end)?
    Poll {
        /// The time now.
        now: Instant,
    },
    /// A second passed.
    Tick {
        /// The time now.
        now: Instant,
    },
    /// A signal for the run.
    Interrupt {
        /// Which.
        signal: InterruptSignal,
        /// When it came.
        now: Instant,
    },
    /// `--resume`: the session's lanes are taken up.
    Resumed,
    /// `--resume` found the queue's step a kill cut short undone: it is done again first.
    Unfinished {
        /// The task.
        task_id: String,
        /// What the step was.
        step: UnfinishedStep,
    },
    /// A task whose lane [`Effect::PrepareLane`] was to make has a branch of a run on another
    /// base: this run leaves it alone.
    LeftAlone {
        /// The task.
        task_id: String,
    },
    /// A lane could not be made ready: its task is blocked.
    LaneNotOpened {
        /// The task.
        task_id: String,
        /// Why, as the task list is to say it.
        reason: String,
    },
    /// A lane is ready to start its loop.
    LaneReady {
        /// The task.
        task_id: String,
    },
    /// A lane's loop started.
    LaneStarted {
        /// The task.
        task_id: String,
        /// The loop's run id.
        run_id: String,
    },
    /// A lane's loop started an iteration.
    IterationStarted {
        /// The task.
        task_id: String,
    },
    /// A lane's loop ended an iteration.
    IterationEnded {
        /// The task.
        task_id: String,
        /// What the iteration's agents reported spending, in US dollars.
        cost: Option<f64>,
        /// When.
        now: Instant,
    },
    /// A lane's agent asked a person; its loop waits for the answer.
    Asked {
        /// The task.
        task_id: String,
        /// The question.
        question: String,
    },
    /// A lane's loop ended.
    LaneEnded {
        /// The task.
        task_id: String,
        /// How its task ended there.
        end: LaneEnd,
    },
    /// The task of the queue's step under way left the task list.
    Gone {
        /// The task.
        task_id: String,
    },
    /// The queue's landing of a task ended.
    Landed {
        /// The task.
        task_id: String,
        /// How.
        landing: Landing,
        /// When.
        now: Instant,
    },
    /// The queue marked a task blocked (or could not say so: the shell warned).
    BlockMarked {
        /// The task.
        task_id: String,
    },
    /// The task list heard of a task's landing the session records.
    Told {
        /// The task.
        task_id: String,
    },
    /// The queue put a lane's question where its task lives.
    AskPut {
        /// The task.
        task_id: String,
        /// Where a person answers it (`None`: it could not be put there).
        answer_at: Option<String>,
    },
}

/// The queue's step a kill cut short, to be done again.
#[derive(Debug, Clone)]
pub(crate) enum UnfinishedStep {
    /// A block's mark.
    Block {
        /// Its reason.
        reason: String,
    },
    /// A lane's question.
    Ask {
        /// The question.
        question: String,
    },
}

/// How a lane's task ended in its lane.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LaneEnd {
    /// It passed: it goes to the merge queue.
    Passed,
    /// It is blocked, with this reason.
    Blocked(String),
    /// Its loop stopped before (interrupted, out of iterations, failing): its work stays in
    /// its worktree for `--resume`.
    Stopped,
}

/// How the queue's landing of a task ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Landing {
    /// The base moved to `commit` (with `land.pr`: the commit on the task's branch, in its
    /// pull request).
    Landed {
        /// The landing commit.
        commit: String,
    },
    /// The merge with the base conflicted or failed its checks: the task goes back to its
    /// loop with `prompt` (the conflict, the failures) for its agent.
    SentBack {
        /// What its agent reads.
        prompt: String,
    },
    /// The base refused it: its work waits on its branch for `--resume`.
    Refused(String),
    /// A person's uncommitted changes at these paths hold it (none: they are gone).
    Held(Vec<String>),
    /// A second Ctrl+C stopped it: it stays first in the queue, the journal for `--resume`.
    Interrupted,
}

/// What the shell is told to do, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Effect {
    /// Make a lane ready for the task (its worktree, its own list, its story mode).
    PrepareLane {
        /// The task.
        task_id: String,
        /// `--resume` took it up: its lane keeps its own list, if it has one.
        resumed: bool,
        /// It never had a lane in this run: its branch may be another base's run's.
        first: bool,
    },
    /// Start the ready lane's loop.
    RunLane {
        /// The task.
        task_id: String,
    },
    /// Let the ready lane go unstarted: the run stops.
    ReleaseLane {
        /// The task.
        task_id: String,
        /// Its loop never ran: its worktree goes too, the task stays pending.
        retire: bool,
    },
    /// Send the signal to every lane's loop.
    Forward(InterruptSignal),
    /// Stop the queue's checks now.
    StopChecks,
    /// The queue's next step: mark the task blocked in the task list.
    MarkBlock {
        /// The task.
        task_id: String,
        /// Why.
        reason: String,
    },
    /// The queue's next step: put the lane's question where its task lives.
    PutAsk {
        /// The task.
        task_id: String,
        /// The question.
        question: String,
    },
    /// The queue's next step: land the task.
    Land {
        /// The task.
        task_id: String,
        /// A person's changes held it: only see whether they still do.
        held: bool,
    },
    /// Clean the worktree of a lane a kill cut short.
    CleanLane {
        /// The task.
        task_id: String,
    },
    /// Remove the task's worktree (its uncommitted work saved), and its branch once landed.
    Retire {
        /// The task.
        task_id: String,
    },
    /// Tell the task list the landing the session records.
    TellLanded {
        /// The task.
        task_id: String,
    },
    /// Save the session.
    Save,
    /// Remove the merge journal: the queue's step is recorded.
    ClearJournal,
    /// Say an event.
    Emit(ParallelEventKind),
    /// Say a warning.
    Warn {
        /// The task it is about.
        task_id: String,
        /// What.
        message: String,
    },
    /// The run is over.
    Finish(Ending),
}

/// How the run ends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ending {
    /// Why.
    pub(crate) reason: EndReason,
    /// The exit code, the engine's for that reason.
    pub(crate) exit_code: i32,
    /// Whether `--resume` can go on with it: its worktrees stay.
    pub(crate) resumable: bool,
    /// Tasks still pending.
    pub(crate) remaining: u64,
}
