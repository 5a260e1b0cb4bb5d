//! Tasks: an embedder's say in what each iteration works on and when a piece of work is over.
//!
//! Without a [`TaskSource`] the loop works on one thing until a limit, a state or convergence
//! ends it. With one (ralph-escalation's prd.json stories and circuit breaker, or an embedder's
//! own), the source picks the task before every iteration, adds its placeholders to the prompt,
//! and judges every iteration's result: go on, the task is over (the next one starts with fresh
//! attempts), or stop. It reports what it did as events through a [`TaskContext`]. The engine
//! knows nothing of what a task is made of (stories, git, files).

use std::collections::BTreeMap;

use ralph_marker::Marker;
use serde::{Deserialize, Serialize};

use crate::event::{CheckResult, EventKind};
use crate::outcome::EndReason;

/// The piece of work the next iteration is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Its id (a story id). Names the attempt log: `<log folder>/<id>.log`.
    pub id: String,
    /// Prompt placeholders by `namespace.name` (`story.title`), filled where the body has them.
    pub placeholders: BTreeMap<String, String>,
}

/// What the source has for the next iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextTask {
    /// Work on this.
    Work(Task),
    /// Nothing is left: end the loop for this reason.
    End(EndReason),
}

/// The `done_when` checks of one attempt.
#[derive(Debug, Clone, Copy)]
pub struct AttemptReport<'a> {
    /// Each check, in `done_when` order.
    pub results: &'a [CheckResult],
    /// Every check passed.
    pub converged: bool,
    /// It failed and was the last attempt `convergence.max_attempts` allows.
    pub exhausted: bool,
}

/// What a source sees of an iteration that ended.
#[derive(Debug, Clone, Copy)]
pub struct IterationReport<'a> {
    /// The iteration.
    pub iteration: u64,
    /// The task it worked on.
    pub task: &'a Task,
    /// The agent's exit code; `None` when it ended by a signal.
    pub exit_code: Option<i32>,
    /// The iteration's state marker, if any.
    pub state: Option<&'a Marker>,
    /// With `done_when`: the attempt's checks. `None` without `done_when`, or when a state
    /// handler took the iteration (idle).
    pub attempt: Option<AttemptReport<'a>>,
}

/// What the loop does after an iteration, as the source decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskDecision {
    /// Carry on as the engine would without a source (retry, converge, wait, ...).
    Continue,
    /// The task is over (passed or given up on): reset the attempts and run the next iteration
    /// on whatever [`TaskSource::next_task`] gives.
    NextTask,
    /// End the loop.
    Stop(EndReason),
}

/// The stories of a run, as reported in `RUN_ENDED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoriesSummary {
    /// Stories whose `passes` is `true`.
    pub passed: u64,
    /// Stories whose `passes` is `"blocked"`.
    pub blocked: u64,
    /// Stories still to do.
    pub remaining: u64,
}

/// Lets a source report what it did.
pub struct TaskContext<'a> {
    events: &'a mut Vec<EventKind>,
}

impl TaskContext<'_> {
    /// Emits an event, after the iteration's own events.
    pub fn emit(&mut self, event: EventKind) {
        self.events.push(event);
    }
}

/// Picks the work of each iteration and judges its result. Register one with
/// [`Engine::set_task_source`](crate::Engine::set_task_source).
pub trait TaskSource: Send {
    /// Before every iteration: the task to work on, or the end of the loop.
    fn next_task(&mut self, cx: &mut TaskContext<'_>) -> NextTask;

    /// After every iteration that was not interrupted and not stopped by a state handler.
    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision;

    /// The `max_iterations` of a run that sets none itself ([`EngineOptions::max_iterations`]
    /// is `None` when [`Engine::set_task_source`] registers this source). `None`, the default:
    /// no limit.
    ///
    /// [`EngineOptions::max_iterations`]: crate::EngineOptions::max_iterations
    /// [`Engine::set_task_source`]: crate::Engine::set_task_source
    fn default_max_iterations(&self) -> Option<u64> {
        None
    }

    /// `max_iterations` ended the loop: the reason to report (say, that work was left).
    fn limit_reached(&mut self) -> EndReason {
        EndReason::MaxIterations
    }

    /// The stories for `RUN_ENDED`, when the source has any.
    fn summary(&self) -> Option<StoriesSummary> {
        None
    }

    /// The source's own state, saved in the run's session file after every iteration and at
    /// the end, so a resumed run can [`restore`](Self::restore) it. `None`, the default: none.
    /// `ending` is set for the run's last snapshot (it stopped or ended), the one a resumed
    /// run starts from when it was not killed: a source may record more then (escalation
    /// records what the working tree holds).
    fn snapshot(&self, ending: bool) -> Option<serde_json::Value> {
        let _ = ending;
        None
    }

    /// Takes up the state a [`snapshot`](Self::snapshot) of a stopped run saved, before the
    /// resumed run's first iteration.
    fn restore(&mut self, state: serde_json::Value) {
        let _ = state;
    }
}

/// The engine's side: the registered source, if any, and the task in progress.
#[derive(Default)]
pub(crate) struct Tasks {
    source: Option<Box<dyn TaskSource>>,
    current: Option<Task>,
    /// The story and attempt of the last `STORY_STARTED` the source reported, for
    /// `ITERATION_STARTED`.
    story: Option<(String, u64)>,
}

impl Tasks {
    pub(crate) fn new(source: Option<Box<dyn TaskSource>>) -> Self {
        Self {
            source,
            current: None,
            story: None,
        }
    }

    /// Asks for the next iteration's task; `Some` ends the loop.
    pub(crate) fn begin(&mut self, events: &mut Vec<EventKind>) -> Option<EndReason> {
        let source = self.source.as_mut()?;
        let next = source.next_task(&mut TaskContext { events });
        for event in events.iter() {
            if let EventKind::StoryStarted {
                story_id, attempt, ..
            } = event
            {
                self.story = Some((story_id.clone(), *attempt));
            }
        }
        match next {
            NextTask::Work(task) => {
                self.current = Some(task);
                None
            }
            NextTask::End(reason) => Some(reason),
        }
    }

    /// Story mode: the story of the next iteration and the attempt on it.
    pub(crate) fn story(&self) -> (Option<String>, Option<u64>) {
        match &self.story {
            Some((id, attempt)) => (Some(id.clone()), Some(*attempt)),
            None => (None, None),
        }
    }

    /// The current task's id.
    pub(crate) fn current_id(&self) -> Option<&str> {
        self.current.as_ref().map(|task| task.id.as_str())
    }

    /// The current task's value for a placeholder.
    pub(crate) fn placeholder(&self, namespace: &str, name: &str) -> Option<String> {
        self.current
            .as_ref()?
            .placeholders
            .get(&format!("{namespace}.{name}"))
            .cloned()
    }

    /// The attempt log's name: the task id made safe for a file name, or `main`.
    pub(crate) fn log_name(&self) -> String {
        match &self.current {
            Some(task) if !task.id.is_empty() => task
                .id
                .chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
                    _ => '_',
                })
                .collect(),
            _ => "main".to_owned(),
        }
    }

    pub(crate) fn ended(
        &mut self,
        iteration: u64,
        exit_code: Option<i32>,
        state: Option<&Marker>,
        attempt: Option<AttemptReport<'_>>,
        events: &mut Vec<EventKind>,
    ) -> TaskDecision {
        let (Some(source), Some(task)) = (self.source.as_mut(), self.current.as_ref()) else {
            return TaskDecision::Continue;
        };
        let report = IterationReport {
            iteration,
            task,
            exit_code,
            state,
            attempt,
        };
        source.iteration_ended(&report, &mut TaskContext { events })
    }

    pub(crate) fn limit_reached(&mut self) -> EndReason {
        self.source
            .as_mut()
            .map_or(EndReason::MaxIterations, |s| s.limit_reached())
    }

    pub(crate) fn summary(&self) -> Option<StoriesSummary> {
        self.source.as_ref().and_then(|s| s.summary())
    }

    pub(crate) fn snapshot(&self, ending: bool) -> Option<serde_json::Value> {
        self.source.as_ref().and_then(|s| s.snapshot(ending))
    }

    pub(crate) fn restore(&mut self, state: serde_json::Value) {
        if let Some(source) = self.source.as_mut() {
            source.restore(state);
        }
    }
}
