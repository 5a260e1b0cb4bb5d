//! A parallel run's own events (its lanes' engine events stay in their run folders), and the
//! sinks that take them: the events file and the CLI's terminal lines.

use std::io::Write;
use std::time::SystemTime;

use serde::Serialize;

/// One thing that happened in a parallel run, as written to its events file: `ts`, `run_id`,
/// then `type` and the fields of [`ParallelEventKind`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ParallelEvent {
    /// When it happened (RFC 3339 UTC with milliseconds).
    #[serde(serialize_with = "serialize_ts")]
    pub ts: SystemTime,
    /// The parallel run.
    pub run_id: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: ParallelEventKind,
}

fn serialize_ts<S: serde::Serializer>(ts: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_rfc3339_millis(*ts).to_string())
}

/// What happened; see `docs/parallel.md` for the table.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ParallelEventKind {
    /// The run starts (or goes on, `resumed`).
    ParallelStarted {
        /// The base branch's name.
        base: String,
        /// The base's commit at the start.
        base_commit: String,
        /// How many lanes run at once at most.
        parallel: usize,
        /// Every task's id, in prd.json order.
        tasks: Vec<String>,
        /// Whether this run goes on with a stopped one (`--resume`).
        resumed: bool,
    },
    /// A task's loop starts in its worktree.
    LaneStarted {
        /// The task.
        task_id: String,
        /// Its title.
        title: String,
        /// Its branch, `ralph/<task id>`.
        branch: String,
        /// Its worktree.
        worktree: String,
        /// The lane's own run id (`ralph logs <lane run id> -f`).
        lane_run_id: String,
        /// The lane's run folder.
        log_dir: String,
        /// How many times the task came back from the queue (a conflict, a failed check).
        returns: u64,
    },
    /// An iteration of a lane starts.
    LaneIterationStarted {
        /// The task.
        task_id: String,
        /// The lane's iteration number.
        iteration: u64,
    },
    /// An iteration of a lane ended.
    LaneIterationEnded {
        /// The task.
        task_id: String,
        /// The lane's iteration number.
        iteration: u64,
        /// The agent's last state marker.
        state: Option<String>,
        /// Whether the agent run failed.
        failed: bool,
        /// What the agent reported it cost, in US dollars.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// A lane's loop ended.
    LaneEnded {
        /// The task.
        task_id: String,
        /// The lane's `RUN_ENDED` reason (`stories_done`: it goes to the queue).
        reason: String,
        /// Iterations the lane ran.
        iterations: u64,
        /// The lane's cost so far, in US dollars.
        cost_usd: f64,
    },
    /// A passed task joined the merge queue.
    MergeQueued {
        /// The task.
        task_id: String,
        /// Its place in the queue, 1 being next.
        position: usize,
    },
    /// The queue starts landing a task.
    MergeStarted {
        /// The task.
        task_id: String,
        /// The base's commit it is brought up to date with.
        base_commit: String,
        /// The task branch's commit before.
        branch_commit: String,
    },
    /// The base did not merge into the task's branch: the task goes back to its loop.
    MergeConflict {
        /// The task.
        task_id: String,
        /// The conflicting files.
        files: Vec<String>,
        /// Where its branch was saved.
        saved_ref: String,
    },
    /// A `done_when` check failed on the merged result: the task goes back to its loop.
    MergeCheckFailed {
        /// The task.
        task_id: String,
        /// The failing checks.
        checks: Vec<FailedCheck>,
        /// Where its branch was saved.
        saved_ref: String,
    },
    /// A task's work and its `passes: true` are on the base.
    TaskLanded {
        /// The task.
        task_id: String,
        /// The base's new commit.
        commit: String,
    },
    /// A task was given up; prd.json says `"blocked"` with the reason.
    TaskBlocked {
        /// The task.
        task_id: String,
        /// Why.
        reason: String,
    },
    /// Something a person should know; the run goes on.
    Warning {
        /// What.
        message: String,
        /// The task it concerns.
        #[serde(skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
    },
    /// The run ended.
    ParallelEnded {
        /// Why: `stories_done`, `stories_blocked`, `work_left` (tasks could not start or
        /// land), `interrupted`, `max_cost`, `max_runtime`.
        reason: String,
        /// Tasks landed in this run.
        landed: u64,
        /// Tasks blocked in this run.
        blocked: u64,
        /// Tasks neither passed nor blocked.
        remaining: u64,
        /// The lanes' cost, in US dollars.
        cost_usd: f64,
        /// ralph's exit code.
        exit_code: i32,
    },
}

/// A check that failed on a merged result.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct FailedCheck {
    /// The command.
    pub command: String,
    /// Its exit code; `None` when it was killed or did not start.
    pub exit_code: Option<i32>,
}

/// A running lane as the terminal shows it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LaneView {
    /// The task.
    pub task_id: String,
    /// The lane's current iteration (0 before the first).
    pub iteration: u64,
    /// `starting`, `running`, the last iteration's state marker (or `ended`), `merging`.
    pub state: String,
    /// When the lane started.
    pub started: std::time::Instant,
    /// Its cost so far, in US dollars.
    pub cost_usd: f64,
}

/// The run at a glance, handed to every sink with each event and every second.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Board {
    /// The lanes running or waiting in the queue, in start order.
    pub lanes: Vec<LaneView>,
    /// Tasks landed in this run.
    pub landed: u64,
    /// Tasks blocked in this run.
    pub blocked: u64,
    /// Tasks waiting to start (no slot, or dependencies not passed).
    pub waiting: u64,
    /// Tasks in the merge queue, the one being landed included.
    pub queued: u64,
    /// The task the queue is landing now.
    pub merging: Option<String>,
    /// The lanes' cost, in US dollars.
    pub cost_usd: f64,
}

/// Where a parallel run's events go.
pub trait ParallelSink: Send {
    /// An event, and the board after it.
    fn event(&mut self, event: &ParallelEvent, board: &Board);

    /// A second went by: the board, for a live view's clocks.
    fn tick(&mut self, _board: &Board) {}
}

/// Writes each event as one JSON line, flushed.
pub struct JsonLinesSink<W: Write + Send>(pub W);

impl<W: Write + Send> ParallelSink for JsonLinesSink<W> {
    fn event(&mut self, event: &ParallelEvent, _board: &Board) {
        if let Ok(line) = serde_json::to_string(event) {
            // A sink that cannot write must not end the run: the lanes' own files still are.
            let _ = writeln!(self.0, "{line}").and_then(|()| self.0.flush());
        }
    }
}
