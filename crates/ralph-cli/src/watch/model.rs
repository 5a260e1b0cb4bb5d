//! What `ralph watch` shows, built from a run's events one at a time: the loops (lanes), their
//! iteration, state, time and cost, the merge queue, and the run's end. Pure: no file, no clock
//! (times come from the events' `ts`, "now" from the caller).

use std::path::PathBuf;
use std::time::SystemTime;

use ralph_events::parallel::{ParallelEvent, ParallelEventKind};
use ralph_events::story::StoryEnd;
use ralph_events::{Event, EventKind, RunCost, Usage};

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
    /// A lane's next loop's run folder, from its `LANE_STARTED` until its first iteration:
    /// meanwhile the last loop's iteration and log stay shown (a lane a resume starts again
    /// whose task had passed goes straight to the queue and lands without an iteration).
    next_log_dir: Option<PathBuf>,
    cost: RunCost,
    /// `land.pr`: its task's pull request, as its last event told it.
    pub(crate) pull_request: Option<crate::pull_requests::PullRequest>,
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
    /// The agent asked a person; the loop waits for the answer: the question and where the
    /// answer goes.
    Asking { question: String, at: String },
    /// The loop is over: its reason (`passed`, `blocked`, a run's end reason).
    Ended(String),
}

/// A task in the merge queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueEntry {
    /// The task id.
    pub(crate) task: String,
    /// What happens to it: `queued`, `merging`, `waiting on your changes to <files>`.
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
            next_log_dir: None,
            cost: RunCost::default(),
            pull_request: None,
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

    /// The single run built from its (engine) `events`, in order.
    #[cfg(test)]
    pub(crate) fn from_events(run_id: &str, events: &[Event]) -> Self {
        let mut model = Self::new(run_id);
        for event in events {
            model.apply_loop(event);
        }
        model
    }

    /// The parallel run built from its own `events`, in order.
    #[cfg(test)]
    pub(crate) fn from_parallel_events(run_id: &str, events: &[ParallelEvent]) -> Self {
        let mut model = Self::new(run_id);
        for event in events {
            model.apply_parallel(event);
        }
        model
    }

    /// The run's cost so far: `RUN_ENDED.cost_usd` once it ended, else every loop's.
    pub(crate) fn cost_usd(&self) -> Option<f64> {
        self.ended_cost.or_else(|| self.cost.total())
    }

    /// Takes in the first event's time (the run's start) and says whether the event is the
    /// run's: a parallel runs' events file holds every run made in the folder.
    fn take(&mut self, run_id: &str, at: SystemTime) -> bool {
        if run_id != self.run_id {
            return false;
        }
        self.started.get_or_insert(at);
        true
    }

    /// The run goes on (`RUN_RESUMED`, or `PARALLEL_STARTED` with `--resume`): it has no end,
    /// and what it costs from now on adds to what it cost.
    fn resumed(&mut self) {
        self.end = None;
        self.ended_cost = None;
        self.cost = RunCost::resumed(self.cost.total());
        for lane in &mut self.lanes {
            lane.cost = RunCost::resumed(lane.cost.total());
        }
    }

    /// The run ended (`RUN_ENDED`, `PARALLEL_ENDED`): every loop still going ends with it.
    fn ended(&mut self, reason: &str, exit_code: i64, cost_usd: Option<f64>, at: SystemTime) {
        self.ended_cost = cost_usd;
        self.end = Some(RunEnd {
            reason: reason.to_owned(),
            exit_code: Some(exit_code),
            at: Some(at),
        });
        for lane in &mut self.lanes {
            if !matches!(lane.state, LaneState::Ended(_)) {
                lane.state = LaneState::Ended(reason.to_owned());
                lane.ended = Some(at);
            }
        }
        self.queue.clear();
    }

    /// Takes in a single run's next (engine) event: its one loop.
    pub(crate) fn apply_loop(&mut self, event: &Event) {
        if !self.take(&event.run_id, event.ts) {
            return;
        }
        let at = Some(event.ts);
        match &event.kind {
            EventKind::RunResumed { .. } => self.resumed(),
            EventKind::RunEnded {
                reason,
                exit_code,
                cost_usd,
                ..
            } => self.ended(reason.as_str(), i64::from(*exit_code), *cost_usd, event.ts),
            EventKind::IterationStarted { iteration, task } => {
                let lane = self.lane_mut(SINGLE_LANE, at);
                lane.iteration = *iteration;
                lane.state = LaneState::Working;
                // Story mode's field (a task source's own, written flat).
                if let Some(task) = task.get("story_id").and_then(|t| t.as_str()) {
                    lane.task = Some(task.to_owned());
                }
            }
            EventKind::IterationEnded { usage, .. } => {
                self.lane_mut(SINGLE_LANE, at);
                if let Some(usage) = usage {
                    self.record(SINGLE_LANE, usage);
                }
            }
            EventKind::WaitStarted { reason, .. } => {
                self.lane_mut(SINGLE_LANE, at).state =
                    LaneState::Waiting(reason.as_str().to_owned());
            }
            EventKind::Task(task) if crate::pull_requests::TYPES.contains(&task.type_name()) => {
                let value = serde_json::to_value(task).unwrap_or_default();
                if let Some((_, pr)) = crate::pull_requests::PullRequest::from_event(&value) {
                    self.lane_mut(SINGLE_LANE, at).pull_request = Some(pr);
                }
            }
            _ => {}
        }
    }

    /// Counts an iteration's usage to the lane `name` and to the run.
    fn record(&mut self, name: &str, usage: &Usage) {
        if let Some(lane) = self.lanes.iter_mut().find(|l| l.name == name) {
            lane.cost.record(usage);
        }
        self.cost.record(usage);
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

    /// Takes in a parallel run's next own event (`docs/parallel.md`): its lanes, each a task's
    /// loop with a run folder of its own, and the merge queue.
    pub(crate) fn apply_parallel(&mut self, event: &ParallelEvent) {
        if !self.take(&event.run_id, event.ts) {
            return;
        }
        let at = Some(event.ts);
        match &event.kind {
            ParallelEventKind::ParallelStarted { .. } => {
                self.parallel = true;
                self.resumed();
                return;
            }
            ParallelEventKind::ParallelEnded {
                reason,
                exit_code,
                cost_usd,
                ..
            } => {
                self.ended(
                    reason.as_str(),
                    i64::from(*exit_code),
                    Some(*cost_usd),
                    event.ts,
                );
                return;
            }
            _ => {}
        }
        let Some(task) = event.kind.task_id().map(str::to_owned) else {
            return;
        };
        let in_queue = self.queue.iter().position(|q| q.task == task);
        let mut leave_queue = false;
        let lane = self.lane_mut(&task, at);
        match &event.kind {
            // Its loop starts, or starts again after the queue sent it back.
            ParallelEventKind::LaneStarted { title, log_dir, .. } => {
                match lane.iteration {
                    0 => lane.log_dir = PathBuf::from(log_dir),
                    _ => lane.next_log_dir = Some(PathBuf::from(log_dir)),
                }
                lane.task = Some(title.clone());
                lane.state = LaneState::Starting;
                lane.ended = None;
            }
            ParallelEventKind::LaneIterationStarted { iteration, .. } => {
                if let Some(log_dir) = lane.next_log_dir.take() {
                    lane.log_dir = log_dir;
                }
                lane.iteration = *iteration;
                lane.state = LaneState::Working;
            }
            ParallelEventKind::LaneIterationEnded {
                state, cost_usd, ..
            } => {
                lane.state = LaneState::Between(state.clone());
                // The iteration's own cost: each counts on its own.
                if let Some(cost) = cost_usd {
                    let mut usage = Usage::default();
                    usage.cost_usd = Some(*cost);
                    self.record(&task, &usage);
                }
            }
            // Any end but `stories_done`, with which it passed and joins the queue.
            ParallelEventKind::LaneEnded { reason, .. }
                if StoryEnd::of(reason) != Some(StoryEnd::StoriesDone) =>
            {
                lane.state = LaneState::Ended(reason.to_string());
                lane.ended = at;
            }
            ParallelEventKind::MergeQueued { .. } | ParallelEventKind::MergeStarted { .. } => {
                lane.state = LaneState::Merging;
                let step = match event.kind {
                    ParallelEventKind::MergeQueued { .. } => "queued",
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
            // Still in the queue, waiting on the person's changes to the files.
            ParallelEventKind::MergeHeld { files, .. } => {
                let step = format!("waiting on your changes to {}", files.join(", "));
                match in_queue {
                    Some(i) => self.queue[i].step = step,
                    None => self.queue.push(QueueEntry { task, step }),
                }
            }
            // Back to its loop, on the new base (`LANE_STARTED` follows).
            ParallelEventKind::MergeConflict { .. } => {
                lane.state = LaneState::SentBack("a conflict");
                leave_queue = true;
            }
            ParallelEventKind::MergeCheckFailed { .. } => {
                lane.state = LaneState::SentBack("a check failed after the merge");
                leave_queue = true;
            }
            ParallelEventKind::TaskLanded { .. } => {
                lane.state = LaneState::Ended("landed".to_owned());
                lane.ended = at;
                leave_queue = true;
            }
            ParallelEventKind::PrOpened { .. }
            | ParallelEventKind::PrUpdated { .. }
            | ParallelEventKind::PrClosed { .. } => {
                let value = serde_json::to_value(event).unwrap_or_default();
                if let Some((_, pr)) = crate::pull_requests::PullRequest::from_event(&value) {
                    lane.state = LaneState::Ended(format!("pull request {}", pr.done));
                    lane.pull_request = Some(pr);
                }
            }
            ParallelEventKind::LaneAsked { question, at, .. } => {
                lane.state = LaneState::Asking {
                    question: question.clone(),
                    at: at.clone(),
                };
            }
            ParallelEventKind::TaskBlocked { reason, .. } => {
                lane.state = LaneState::Ended(if reason.is_empty() {
                    "blocked".to_owned()
                } else {
                    format!("blocked: {reason}")
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A resume starts a lane again whose task had passed: it goes to the queue and lands
    /// without an iteration of its new loop, and still shows its last iteration and log.
    #[test]
    fn a_lane_landed_after_a_resume_keeps_its_last_iteration_and_log() {
        let lines = br#"{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"PARALLEL_STARTED","base":"main","parallel":1,"tasks":["US-001"],"resumed":false}
{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"LANE_STARTED","task_id":"US-001","title":"Cart","log_dir":".ralph/runs/l1","lane_run_id":"l1","returns":0}
{"ts":"2026-01-01T00:00:01Z","run_id":"p","type":"LANE_ITERATION_STARTED","task_id":"US-001","iteration":1}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"LANE_ITERATION_STARTED","task_id":"US-001","iteration":2}
{"ts":"2026-01-01T00:00:03Z","run_id":"p","type":"PARALLEL_STARTED","base":"main","parallel":1,"tasks":["US-001"],"resumed":true}
{"ts":"2026-01-01T00:00:03Z","run_id":"p","type":"LANE_STARTED","task_id":"US-001","title":"Cart","log_dir":".ralph/runs/l2","lane_run_id":"l2","returns":0}
{"ts":"2026-01-01T00:00:03Z","run_id":"p","type":"MERGE_QUEUED","task_id":"US-001","position":1}
{"ts":"2026-01-01T00:00:04Z","run_id":"p","type":"TASK_LANDED","task_id":"US-001","commit":"c"}
"#;
        let model =
            WatchModel::from_parallel_events("p", &ralph_events::parallel::parse_events(lines));
        let lane = &model.lanes[0];
        assert_eq!(lane.state, LaneState::Ended("landed".to_owned()));
        assert_eq!(lane.iteration, 2);
        assert_eq!(
            lane.log_file(),
            Some(PathBuf::from(".ralph/runs/l1/iteration-002.log"))
        );

        // Its new loop's first iteration shows that loop's log.
        let more = br#"{"ts":"2026-01-01T00:00:05Z","run_id":"p","type":"LANE_STARTED","task_id":"US-001","title":"Cart","log_dir":".ralph/runs/l3","lane_run_id":"l3","returns":1}
{"ts":"2026-01-01T00:00:06Z","run_id":"p","type":"LANE_ITERATION_STARTED","task_id":"US-001","iteration":1}
"#;
        let mut events = ralph_events::parallel::parse_events(lines);
        events.extend(ralph_events::parallel::parse_events(more));
        let model = WatchModel::from_parallel_events("p", &events);
        assert_eq!(
            model.lanes[0].log_file(),
            Some(PathBuf::from(".ralph/runs/l3/iteration-001.log"))
        );
    }

    /// A landing a person's changes hold shows as waiting on them, with the files, and
    /// leaves the queue once it lands.
    #[test]
    fn a_held_landing_waits_in_the_queue_on_the_persons_files() {
        let lines = br#"{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"PARALLEL_STARTED","base":"main","parallel":2,"tasks":["US-001"],"resumed":false}
{"ts":"2026-01-01T00:00:01Z","run_id":"p","type":"MERGE_QUEUED","task_id":"US-001","position":1}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"MERGE_STARTED","task_id":"US-001","base_commit":"a","branch_commit":"b"}
{"ts":"2026-01-01T00:00:03Z","run_id":"p","type":"MERGE_HELD","task_id":"US-001","files":["src/a.rs","b.txt"]}
"#;
        let mut events = ralph_events::parallel::parse_events(lines);
        let model = WatchModel::from_parallel_events("p", &events);
        let steps: Vec<&str> = model.queue.iter().map(|q| q.step.as_str()).collect();
        assert_eq!(steps, ["waiting on your changes to src/a.rs, b.txt"]);

        events.extend(ralph_events::parallel::parse_events(
            br#"{"ts":"2026-01-01T00:00:09Z","run_id":"p","type":"TASK_LANDED","task_id":"US-001","commit":"c"}"#,
        ));
        let model = WatchModel::from_parallel_events("p", &events);
        assert!(model.queue.is_empty());
    }

    /// `land.pr`: each lane (and one loop) shows its task's pull request, as its last event
    /// told it.
    #[test]
    fn a_pull_request_shows_on_its_lane_and_on_one_loop() {
        let lines = br#"{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"PARALLEL_STARTED","base":"main","parallel":1,"tasks":["7"],"resumed":false}
{"ts":"2026-01-01T00:00:01Z","run_id":"p","type":"TASK_LANDED","task_id":"7","commit":"c"}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"PR_OPENED","task_id":"7","number":100,"url":"https://github.com/o/r/pull/100","state":"open","branch":"ralph/7","base":"main"}
"#;
        let model =
            WatchModel::from_parallel_events("p", &ralph_events::parallel::parse_events(lines));
        let lane = &model.lanes[0];
        assert_eq!(
            lane.state,
            LaneState::Ended("pull request opened".to_owned())
        );
        assert_eq!(
            lane.pull_request
                .as_ref()
                .map(crate::pull_requests::PullRequest::words),
            Some("https://github.com/o/r/pull/100 (open)".to_owned())
        );

        let line = r#"{"ts":"2026-01-01T00:00:02Z","run_id":"r","type":"PR_UPDATED","story_id":"7","number":100,"url":"https://github.com/o/r/pull/100","state":"open","branch":"ralph/7","base":"main"}"#;
        let event: Event = serde_json::from_str(line).unwrap();
        let model = WatchModel::from_events("r", &[event]);
        let pr = model.lanes[0].pull_request.clone().expect("shown");
        assert_eq!(pr.done, "updated");
    }
}
