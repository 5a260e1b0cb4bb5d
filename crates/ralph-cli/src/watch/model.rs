//! What `ralph watch` shows, built from a run's events one at a time: the loops (lanes), their
//! iteration, state, time and cost, the merge queue, and the run's end. Pure: no file, no clock
//! (times come from the events' `ts`, "now" from the caller).

use std::path::PathBuf;
use std::time::SystemTime;

use ralph_engine::{RunCost, Usage};
use serde_json::{Value, json};

/// The field a parallel run's events carry to say which task's loop (lane) they are about.
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
    /// The folder its iteration logs are in: empty for a single run (its run folder), the
    /// lane's run folder (`LANE_STARTED.log_dir`) in a parallel run.
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
    /// An iteration ended; the next one (or the checks, or a wait) comes: the agent's state.
    Between(Option<String>),
    /// The task waits in the merge queue, or is being merged.
    Merging,
    /// The queue sent the task back to its loop: why.
    SentBack(&'static str),
    /// The loop is over: its reason (`passed`, `blocked`, a run's end reason).
    Ended(String),
}

/// A task in the merge queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueEntry {
    /// The task id.
    pub(crate) task: String,
    /// What happens to it: `queued`, `merging`.
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

    /// Takes in the run's next event; another run's (a parallel run's events file holds every
    /// run made in the folder) is left out.
    pub(crate) fn apply(&mut self, event: &Value) {
        if event
            .get("run_id")
            .and_then(Value::as_str)
            .is_some_and(|id| id != self.run_id)
        {
            return;
        }
        let at = ts(event);
        if self.started.is_none() {
            self.started = at;
        }
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "RUN_RESUMED" | "PARALLEL_STARTED" => {
                self.parallel |= kind == "PARALLEL_STARTED";
                self.end = None;
                self.ended_cost = None;
                self.cost = RunCost::resumed(self.cost.total());
                for lane in &mut self.lanes {
                    lane.cost = RunCost::resumed(lane.cost.total());
                }
            }
            "RUN_ENDED" | "PARALLEL_ENDED" => {
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
            // One loop's own events (a single run's folder).
            "ITERATION_STARTED" | "ITERATION_ENDED" | "WAIT_STARTED" => {
                let lane = self.lane_mut(SINGLE_LANE, at);
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
                        let usage = event
                            .get("usage")
                            .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok());
                        if let Some(usage) = usage {
                            lane.cost.record(&usage);
                            self.cost.record(&usage);
                        }
                    }
                    _ => {
                        lane.state = LaneState::Waiting(text(event, "reason").unwrap_or_default());
                    }
                }
            }
            _ => self.apply_parallel(kind, event, at),
        }
    }

    /// The lane `name`, made when it is new.
    fn lane_mut(&mut self, name: &str, at: Option<SystemTime>) -> &mut Lane {
        let i = match self.lanes.iter().position(|l| l.name == name) {
            Some(i) => i,
            None => {
                self.lanes.push(Lane::new(name, PathBuf::new(), at));
                self.lanes.len() - 1
            }
        };
        &mut self.lanes[i]
    }

    /// A parallel run's own events (`docs/parallel.md`): its lanes, each a task's loop with a
    /// run folder of its own, and the merge queue.
    fn apply_parallel(&mut self, kind: &str, event: &Value, at: Option<SystemTime>) {
        let Some(task) = text(event, LANE_FIELD) else {
            return;
        };
        let in_queue = self.queue.iter().position(|q| q.task == task);
        let mut leave_queue = false;
        let lane = self.lane_mut(&task, at);
        match kind {
            // Its loop starts, or starts again after the queue sent it back.
            "LANE_STARTED" => {
                lane.log_dir = text(event, "log_dir")
                    .map(PathBuf::from)
                    .unwrap_or_default();
                lane.task = text(event, "title");
                lane.iteration = 0;
                lane.state = LaneState::Starting;
                lane.ended = None;
            }
            "LANE_ITERATION_STARTED" => {
                lane.iteration = event
                    .get("iteration")
                    .and_then(Value::as_u64)
                    .unwrap_or(lane.iteration + 1);
                lane.state = LaneState::Working;
            }
            "LANE_ITERATION_ENDED" => {
                // The iteration's own cost: each counts on its own.
                let usage = event
                    .get("cost_usd")
                    .and_then(Value::as_f64)
                    .and_then(|c| serde_json::from_value::<Usage>(json!({ "cost_usd": c })).ok());
                if let Some(usage) = &usage {
                    lane.cost.record(usage);
                }
                lane.state = LaneState::Between(text(event, "state"));
                if let Some(usage) = usage {
                    self.cost.record(&usage);
                }
            }
            // `stories_done`: it passed and joins the queue (`MERGE_QUEUED`).
            "LANE_ENDED" => {
                let reason = text(event, "reason").unwrap_or_default();
                if reason != "stories_done" {
                    lane.state = LaneState::Ended(reason);
                    lane.ended = at;
                }
            }
            "MERGE_QUEUED" | "MERGE_STARTED" => {
                lane.state = LaneState::Merging;
                let step = match kind {
                    "MERGE_QUEUED" => "queued",
                    _ => "merging",
                };
                match in_queue {
                    Some(i) => step.clone_into(&mut self.queue[i].step),
                    None => self.queue.push(QueueEntry {
                        task,
                        step: step.to_owned(),
                    }),
                }
            }
            // Back to its loop, on the new base (`LANE_STARTED` follows).
            "MERGE_CONFLICT" | "MERGE_CHECK_FAILED" => {
                lane.state = LaneState::SentBack(match kind {
                    "MERGE_CONFLICT" => "a conflict",
                    _ => "a check failed after the merge",
                });
                leave_queue = true;
            }
            "TASK_LANDED" | "TASK_BLOCKED" => {
                lane.state = LaneState::Ended(match kind {
                    "TASK_LANDED" => "landed".to_owned(),
                    _ => text(event, "reason")
                        .map_or_else(|| "blocked".to_owned(), |why| format!("blocked: {why}")),
                });
                lane.ended = at;
                leave_queue = true;
            }
            _ => {}
        }
        if let Some(i) = in_queue.filter(|_| leave_queue) {
            self.queue.remove(i);
        }
    }
}
