//! What `ralph watch` shows, built from a run's events one at a time: the loops (lanes), their
//! iteration, state, time and cost, the merge queue, and the run's end. Pure: no file, no clock
//! (times come from the events' `ts`, "now" from the caller).

use std::path::PathBuf;
use std::time::SystemTime;

use ralph_engine::{RunCost, Usage};
use serde_json::Value;

/// The field an event of a parallel run carries to say which task's loop it belongs to; events
/// without it are the run's own (a single run has one loop, the run itself).
pub(crate) const LANE_FIELD: &str = "task_id";

/// The name of a single run's one loop.
pub(crate) const SINGLE_LANE: &str = "loop";

/// A run as `ralph watch` shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WatchModel {
    /// The run id.
    pub(crate) run_id: String,
    /// The first event's time.
    pub(crate) started: Option<SystemTime>,
    /// The loops, in the order they first appeared.
    pub(crate) lanes: Vec<Lane>,
    /// Tasks waiting to land on the base branch (parallel runs), first in line first.
    pub(crate) queue: Vec<QueueEntry>,
    /// Whether the run is parallel: it has a merge queue and a loop per task.
    pub(crate) parallel: bool,
    /// The run's end, once `RUN_ENDED` came (and no `RUN_RESUMED` after it).
    pub(crate) end: Option<RunEnd>,
    cost: RunCost,
    ended_cost: Option<f64>,
}

/// One loop: the run's for a single run, a task's in a parallel run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lane {
    /// `loop` for a single run, else the task id.
    pub(crate) name: String,
    /// The task the loop works on now (story mode's `story_id`), when it says.
    pub(crate) task: Option<String>,
    /// The current (or last) iteration; 0 before the first starts.
    pub(crate) iteration: u64,
    /// What it does now.
    pub(crate) state: LaneState,
    /// Its first event's time.
    pub(crate) started: Option<SystemTime>,
    /// When it ended, if it did.
    pub(crate) ended: Option<SystemTime>,
    /// The folder its iteration logs are in, relative to the run folder (empty: the run folder).
    pub(crate) log_dir: PathBuf,
    cost: RunCost,
}

/// What a loop does now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LaneState {
    /// No iteration has started yet.
    Starting,
    /// An iteration runs.
    Working,
    /// The loop waits before its next iteration: `idle`, `failure`, `rate_limit`, `delay`...
    Waiting(String),
    /// The task waits in the merge queue, or is being merged.
    Merging,
    /// The loop is over: its reason (`passed`, `blocked`, a run's end reason).
    Ended(String),
}

/// A task in the merge queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueEntry {
    /// The task id.
    pub(crate) task: String,
    /// What happens to it: `queued`, `merging`, `checking`.
    pub(crate) step: String,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunEnd {
    /// `RUN_ENDED.reason`.
    pub(crate) reason: String,
    /// ralph's exit code.
    pub(crate) exit_code: Option<i64>,
    /// When.
    pub(crate) at: Option<SystemTime>,
}

fn ts(event: &Value) -> Option<SystemTime> {
    humantime::parse_rfc3339(event.get("ts")?.as_str()?).ok()
}

fn text(event: &Value, key: &str) -> Option<String> {
    event.get(key)?.as_str().map(str::to_owned)
}

impl Lane {
    fn new(name: &str, log_dir: PathBuf, at: Option<SystemTime>) -> Self {
        Self {
            name: name.to_owned(),
            task: None,
            iteration: 0,
            state: LaneState::Starting,
            started: at,
            ended: None,
            log_dir,
            cost: RunCost::default(),
        }
    }

    /// The loop's cost so far, as the engine counts it.
    pub(crate) fn cost_usd(&self) -> Option<f64> {
        self.cost.total()
    }

    /// The log of its current iteration, relative to the run folder.
    pub(crate) fn log_file(&self) -> Option<PathBuf> {
        (self.iteration > 0).then(|| {
            self.log_dir
                .join(format!("iteration-{:03}.log", self.iteration))
        })
    }
}

impl WatchModel {
    /// A run with no events read yet.
    pub(crate) fn new(run_id: &str) -> Self {
        Self {
            run_id: run_id.to_owned(),
            started: None,
            lanes: Vec::new(),
            queue: Vec::new(),
            parallel: false,
            end: None,
            cost: RunCost::default(),
            ended_cost: None,
        }
    }

    /// The run built from `events`, in order.
    #[cfg(test)]
    pub(crate) fn from_events(run_id: &str, events: &[Value]) -> Self {
        let mut model = Self::new(run_id);
        for event in events {
            model.apply(event);
        }
        model
    }

    /// The run's cost so far: `RUN_ENDED.cost_usd` once it ended, else every loop's.
    pub(crate) fn cost_usd(&self) -> Option<f64> {
        self.ended_cost.or_else(|| self.cost.total())
    }

    /// Takes in the run's next event.
    pub(crate) fn apply(&mut self, event: &Value) {
        let at = ts(event);
        if self.started.is_none() {
            self.started = at;
        }
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(step) = queue_step(kind) {
            self.parallel = true;
            self.apply_queue(event, step, at);
            return;
        }
        match kind {
            "RUN_RESUMED" => {
                self.end = None;
                self.ended_cost = None;
                self.cost = RunCost::resumed(self.cost.total());
                for lane in &mut self.lanes {
                    lane.cost = RunCost::resumed(lane.cost.total());
                }
            }
            "RUN_ENDED" => {
                self.ended_cost = event.get("cost_usd").and_then(Value::as_f64);
                let reason = text(event, "reason").unwrap_or_default();
                self.end = Some(RunEnd {
                    reason: reason.clone(),
                    exit_code: event.get("exit_code").and_then(Value::as_i64),
                    at,
                });
                for lane in &mut self.lanes {
                    if !matches!(lane.state, LaneState::Ended(_)) {
                        lane.state = LaneState::Ended(reason.clone());
                        lane.ended = at;
                    }
                }
                self.queue.clear();
            }
            _ => self.apply_to_lane(kind, event, at),
        }
    }

    /// The lane `event` belongs to, made when it is new.
    fn lane_mut(&mut self, event: &Value, at: Option<SystemTime>) -> &mut Lane {
        let name = text(event, LANE_FIELD).unwrap_or_else(|| SINGLE_LANE.to_owned());
        if name != SINGLE_LANE {
            self.parallel = true;
        }
        match self.lanes.iter().position(|l| l.name == name) {
            Some(i) => &mut self.lanes[i],
            None => {
                let log_dir = match text(event, "log_dir") {
                    Some(dir) => PathBuf::from(dir),
                    None if name == SINGLE_LANE => PathBuf::new(),
                    None => PathBuf::from(&name),
                };
                self.lanes.push(Lane::new(&name, log_dir, at));
                let last = self.lanes.len() - 1;
                &mut self.lanes[last]
            }
        }
    }

    fn apply_to_lane(&mut self, kind: &str, event: &Value, at: Option<SystemTime>) {
        let lane_events = [
            "ITERATION_STARTED",
            "ITERATION_ENDED",
            "WAIT_STARTED",
            "TASK_STARTED",
            "TASK_PASSED",
            "TASK_BLOCKED",
            "TASK_ENDED",
            "STORY_PASSED",
            "STORY_BLOCKED",
        ];
        if !lane_events.contains(&kind) {
            return;
        }
        let mut usage = None;
        let lane = self.lane_mut(event, at);
        match kind {
            "ITERATION_STARTED" => {
                lane.iteration = event
                    .get("iteration")
                    .and_then(Value::as_u64)
                    .unwrap_or(lane.iteration + 1);
                lane.state = LaneState::Working;
                if let Some(task) = text(event, "story_id") {
                    lane.task = Some(task);
                }
            }
            "ITERATION_ENDED" => {
                if let Some(u) = event
                    .get("usage")
                    .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
                {
                    lane.cost.record(&u);
                    usage = Some(u);
                }
            }
            "WAIT_STARTED" => {
                lane.state = LaneState::Waiting(text(event, "reason").unwrap_or_default());
            }
            "TASK_STARTED" => lane.state = LaneState::Starting,
            "TASK_PASSED" | "TASK_BLOCKED" | "TASK_ENDED" => {
                let reason = text(event, "reason")
                    .unwrap_or_else(|| kind.trim_start_matches("TASK_").to_ascii_lowercase());
                lane.state = LaneState::Ended(reason);
                lane.ended = at;
            }
            // Story mode: the story the loop works on passed or was blocked; the loop goes on
            // with the next story unless the run ends.
            _ => {
                if lane.name != SINGLE_LANE {
                    lane.state =
                        LaneState::Ended(kind.trim_start_matches("STORY_").to_ascii_lowercase());
                    lane.ended = at;
                }
            }
        }
        if let Some(u) = usage {
            self.cost.record(&u);
        }
    }

    fn apply_queue(&mut self, event: &Value, step: QueueStep, at: Option<SystemTime>) {
        let Some(task) = text(event, LANE_FIELD) else {
            return;
        };
        let entry = self.queue.iter().position(|q| q.task == task);
        match step {
            QueueStep::Joined | QueueStep::Step(_) => {
                let step = match step {
                    QueueStep::Step(name) => name.to_owned(),
                    _ => "queued".to_owned(),
                };
                match entry {
                    Some(i) => self.queue[i].step = step,
                    None => self.queue.push(QueueEntry { task, step }),
                }
                if let Some(lane) = self.lanes.iter_mut().find(|l| l.name == event[LANE_FIELD]) {
                    lane.state = LaneState::Merging;
                }
            }
            QueueStep::Left(outcome) => {
                if let Some(i) = entry {
                    self.queue.remove(i);
                }
                if let Some(lane) = self.lanes.iter_mut().find(|l| l.name == event[LANE_FIELD]) {
                    match outcome {
                        "merged" => {
                            lane.state = LaneState::Ended("merged".to_owned());
                            lane.ended = at;
                        }
                        // Back to its loop, on the new base.
                        _ => lane.state = LaneState::Working,
                    }
                }
            }
        }
    }
}

/// What a merge-queue event does to a task's place in the queue.
#[derive(Debug, Clone, Copy)]
enum QueueStep {
    /// It joins the end of the queue.
    Joined,
    /// It is at this step of landing.
    Step(&'static str),
    /// It left the queue: `merged`, or sent back to its loop.
    Left(&'static str),
}

fn queue_step(kind: &str) -> Option<QueueStep> {
    Some(match kind {
        "MERGE_QUEUED" => QueueStep::Joined,
        "MERGE_STARTED" => QueueStep::Step("merging"),
        "MERGE_CHECKING" => QueueStep::Step("checking"),
        "MERGE_LANDED" => QueueStep::Left("merged"),
        "MERGE_CONFLICT" | "MERGE_FAILED" | "MERGE_REJECTED" => QueueStep::Left("back"),
        _ => return None,
    })
}
