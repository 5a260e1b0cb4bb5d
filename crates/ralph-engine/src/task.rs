//! Tasks: an embedder's say in what each iteration works on and when a piece of work is over.
//!
//! Without a [`TaskSource`] the loop works on one thing until a limit, a state or convergence
//! ends it. With one (ralph-escalation's prd.json stories and circuit breaker, or an embedder's
//! own), the source picks the task before every iteration, adds its placeholders to the prompt,
//! and judges every iteration's result: go on, the task is over (the next one starts with fresh
//! attempts), or stop. It reports what it did as events through a [`TaskContext`]. The engine
//! knows nothing of what a task is made of (stories, git, files).

use std::collections::BTreeMap;
use std::time::Duration;

use ralph_marker::Marker;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use ralph_events::{CheckResult, EndReason, EventKind, TaskEvent, WarningKind};

/// The piece of work the next iteration is about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Task {
    /// Its id (a story id). Names the attempt log: `<log folder>/<id>.log`.
    pub id: String,
    /// Prompt placeholders by `namespace.name` (`story.title`), filled where the body has them.
    pub placeholders: BTreeMap<String, String>,
    /// Fields written flat into the `ITERATION_STARTED` of every iteration on it (story mode:
    /// `story_id` and `attempt`). Empty by default.
    pub fields: Map<String, Value>,
}

impl Task {
    /// A task with no placeholders and no fields.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            placeholders: BTreeMap::new(),
            fields: Map::new(),
        }
    }
}

/// What the source has for the next iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NextTask {
    /// Work on this.
    Work(Task),
    /// Nothing is left: end the loop for this reason.
    End(EndReason),
    /// Nothing to work on yet: wait, then ask again. A person's answer, a task blocked on
    /// something outside the loop. The engine waits (a `WAIT_STARTED` with reason `task` and
    /// the wait's words, once per stretch of waiting), counting down to the next look, then
    /// calls [`TaskSource::next_task`] again; no iteration is counted meanwhile. The source
    /// keeps what it waits for in its own [`snapshot`](TaskSource::snapshot), so a stopped run
    /// resumes waiting.
    Wait(TaskWait),
}

/// A wait a task source asks for before the next iteration ([`NextTask::Wait`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskWait {
    /// How long until the source is asked again; the engine waits at least 10 ms, so a
    /// source with nothing to give never makes the loop spin.
    pub poll: Duration,
    /// What it waits for, in words people read: `waiting for an answer in TODO.md:12`.
    pub why: String,
}

impl TaskWait {
    /// A wait of `poll` before the source is asked again, for `why`.
    pub fn new(poll: Duration, why: impl Into<String>) -> Self {
        Self {
            poll,
            why: why.into(),
        }
    }
}

/// The `done_when` checks of one attempt.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// Whether the agent run failed, as `ITERATION_ENDED`'s `failed` says: it exited non-zero,
    /// timed out, went silent, or reported an error while exiting 0 (an API error, a usage
    /// limit). A source that ticks off work should not tick it off a failed run.
    pub failed: bool,
    /// Why it failed (`ITERATION_ENDED`'s `failure_kind`); its `Display` is `failure`'s words,
    /// the agent's own where it gave some.
    pub failure: Option<&'a crate::Failure>,
    /// How the agent run ended: by itself, or stopped by ralph (a timeout, silence, ...).
    pub termination: crate::Termination,
    /// How long the agent ran.
    pub duration: Duration,
    /// What the agent reported using (tokens, cost), when it did.
    pub usage: Option<&'a crate::Usage>,
    /// The end of the agent's answer (its adapter's result text on standard output, the last
    /// mebibyte): what a source that reads the agent's words (a plan) parses. Empty when the
    /// agent said nothing or could not start.
    pub answer: &'a str,
}

/// How an iteration's agent run ended, for its [`IterationReport`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct AgentEnd<'a> {
    pub(crate) exit_code: Option<i32>,
    pub(crate) failure: Option<&'a crate::Failure>,
    pub(crate) termination: crate::Termination,
    pub(crate) duration: Duration,
    pub(crate) usage: Option<&'a crate::Usage>,
}

impl<'a> IterationReport<'a> {
    /// Iteration `iteration` on `task`, the agent exiting 0 with no state and no checks (set the
    /// public fields to taste): what a source's own tests hand it, as the engine would.
    pub fn new(iteration: u64, task: &'a Task) -> Self {
        Self {
            iteration,
            task,
            exit_code: Some(0),
            state: None,
            attempt: None,
            failed: false,
            failure: None,
            termination: crate::Termination::Natural,
            duration: Duration::ZERO,
            usage: None,
            answer: "",
        }
    }
}

impl<'a> AttemptReport<'a> {
    /// An attempt whose checks gave `results`.
    pub fn new(results: &'a [CheckResult], converged: bool, exhausted: bool) -> Self {
        Self {
            results,
            converged,
            exhausted,
        }
    }
}

/// What the loop does after an iteration, as the source decides.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskDecision {
    /// Carry on as the engine would without a source (retry, converge, wait, ...).
    Continue,
    /// The task is over (passed or given up on): reset the attempts and run the next iteration
    /// on whatever [`TaskSource::next_task`] gives.
    NextTask,
    /// End the loop.
    Stop(EndReason),
}

/// Lets a source report what it did.
///
/// The engine makes one for each call; a source's own tests make theirs with
/// [`TaskContext::new`] and read back what it emitted:
///
/// ```
/// use ralph_engine::{
///     EventKind, IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource,
/// };
///
/// /// One task, done once the agent exits 0.
/// struct FixTheBuild;
///
/// impl TaskSource for FixTheBuild {
///     type State = ();
///
///     fn next_task(&mut self, _cx: &mut TaskContext<'_>) -> NextTask {
///         NextTask::Work(Task::new("fix-the-build"))
///     }
///
///     fn iteration_ended(
///         &mut self,
///         report: &IterationReport<'_>,
///         cx: &mut TaskContext<'_>,
///     ) -> TaskDecision {
///         if report.exit_code == Some(0) {
///             return TaskDecision::NextTask;
///         }
///         cx.warn(format!("the build still fails after iteration {}", report.iteration));
///         TaskDecision::Continue
///     }
/// }
///
/// let task = Task::new("fix-the-build");
/// let mut report = IterationReport::new(3, &task);
/// report.exit_code = Some(1);
/// let mut events = Vec::new();
/// let decision = FixTheBuild.iteration_ended(&report, &mut TaskContext::new(&mut events));
/// assert_eq!(decision, TaskDecision::Continue);
/// assert!(matches!(
///     &events[..],
///     [EventKind::Warning { message, .. }] if message == "the build still fails after iteration 3"
/// ));
/// ```
pub struct TaskContext<'a> {
    events: &'a mut Vec<EventKind>,
}

impl<'a> TaskContext<'a> {
    /// A context whose events go to `events`, in order.
    pub fn new(events: &'a mut Vec<EventKind>) -> Self {
        Self { events }
    }
}

impl TaskContext<'_> {
    /// Emits an event, after the iteration's own events. A type the engine writes itself
    /// (`RUN_ENDED`, `ITERATION_ENDED`, ...) is not written: a `WARNING` says so.
    pub fn emit(&mut self, event: impl Into<TaskEvent>) {
        self.events
            .push(EventKind::of_plug(event.into(), "the task source"));
    }

    /// Emits a `WARNING` event of kind `task_source`: a problem of the source's that every sink
    /// should see.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.events.push(EventKind::Warning {
            kind: WarningKind::TaskSource,
            message: message.into(),
        });
    }
}

/// Picks the work of each iteration and judges its result. Register one with
/// [`Engine::set_task_source`](crate::Engine::set_task_source).
pub trait TaskSource: Send {
    /// What the source keeps across a stop and a resume ([`snapshot`](Self::snapshot),
    /// [`restore`](Self::restore)), saved as JSON in the run's session file. `()` for a source
    /// that keeps nothing: every source names its type, as associated type defaults are not
    /// stable Rust.
    type State: Serialize + DeserializeOwned;

    /// Before every iteration: the task to work on, or the end of the loop.
    fn next_task(&mut self, cx: &mut TaskContext<'_>) -> NextTask;

    /// After every iteration that was not interrupted and not stopped by a state handler.
    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision;

    /// The `max_iterations` of a run that sets none itself (neither its file's config nor its
    /// [`Overrides`](crate::Overrides)), once [`Engine::set_task_source`] registers this
    /// source. `None`, the default: no limit.
    ///
    /// [`Engine::set_task_source`]: crate::Engine::set_task_source
    fn default_max_iterations(&self) -> Option<u64> {
        None
    }

    /// Whether the source gives the state `name` a meaning of its own (story mode's `ask`),
    /// so that the engine does not warn that nothing handles it. An iteration ending in it is
    /// not an attempt: the `done_when` checks do not judge it, and the source decides what
    /// follows in [`iteration_ended`](Self::iteration_ended) (its report has no attempt).
    fn handles_state(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// `max_iterations` ended the loop: the reason to report (say, that work was left, as an
    /// [`EndReason::Task`]). Events emitted through `cx` come before `RUN_ENDED`.
    fn limit_reached(&mut self, cx: &mut TaskContext<'_>) -> EndReason {
        let _ = cx;
        EndReason::MaxIterations
    }

    /// Fields written flat into `RUN_ENDED` and kept in the session file (story mode:
    /// `stories`). Empty, the default: none.
    fn summary(&self) -> Map<String, Value> {
        Map::new()
    }

    /// The source's own state, saved in the run's session file after every iteration and at
    /// the end, so a resumed run can [`restore`](Self::restore) it. `None`, the default: none.
    /// `ending` is set for the run's last snapshot (it stopped or ended), the one a resumed
    /// run starts from when it was not killed: a source may record more then (escalation
    /// records what the working tree holds).
    fn snapshot(&self, ending: bool) -> Option<Self::State> {
        let _ = ending;
        None
    }

    /// Takes up the state a [`snapshot`](Self::snapshot) of a stopped run saved, before the
    /// resumed run's first iteration. Events emitted through `cx` (a state that cannot be
    /// taken up, say) come right after `RUN_STARTED`. A saved state that does not read as a
    /// [`State`](Self::State) (written by another version of the source) never gets here: the
    /// engine warns and the source starts afresh.
    fn restore(&mut self, state: Self::State, cx: &mut TaskContext<'_>) {
        let _ = (state, cx);
    }
}

/// A [`TaskSource`] whose state is JSON, whatever its [`TaskSource::State`]: what the engine
/// keeps, as a trait with an associated type cannot be a trait object.
pub(crate) trait ErasedTaskSource: Send {
    fn next_task(&mut self, cx: &mut TaskContext<'_>) -> NextTask;
    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision;
    fn default_max_iterations(&self) -> Option<u64>;
    fn handles_state(&self, name: &str) -> bool;
    fn limit_reached(&mut self, cx: &mut TaskContext<'_>) -> EndReason;
    fn summary(&self) -> Map<String, Value>;
    /// The source's snapshot as JSON; an error when its `State` does not serialize.
    fn snapshot(&self, ending: bool) -> Result<Option<Value>, serde_json::Error>;
    /// Reads `state` as the source's `State` and restores it; a `WARNING` when it does not read.
    fn restore(&mut self, state: Value, cx: &mut TaskContext<'_>);
}

impl<T: TaskSource> ErasedTaskSource for T {
    fn next_task(&mut self, cx: &mut TaskContext<'_>) -> NextTask {
        TaskSource::next_task(self, cx)
    }

    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        TaskSource::iteration_ended(self, report, cx)
    }

    fn default_max_iterations(&self) -> Option<u64> {
        TaskSource::default_max_iterations(self)
    }

    fn handles_state(&self, name: &str) -> bool {
        TaskSource::handles_state(self, name)
    }

    fn limit_reached(&mut self, cx: &mut TaskContext<'_>) -> EndReason {
        TaskSource::limit_reached(self, cx)
    }

    fn summary(&self) -> Map<String, Value> {
        TaskSource::summary(self)
    }

    fn snapshot(&self, ending: bool) -> Result<Option<Value>, serde_json::Error> {
        TaskSource::snapshot(self, ending)
            .map(serde_json::to_value)
            .transpose()
    }

    fn restore(&mut self, state: Value, cx: &mut TaskContext<'_>) {
        match serde_json::from_value::<T::State>(state) {
            Ok(state) => TaskSource::restore(self, state, cx),
            Err(err) => cx.events.push(EventKind::Warning {
                kind: WarningKind::UnreadableState,
                message: format!(
                    "the session's task source state is unreadable ({err}); the task source \
                     starts afresh"
                ),
            }),
        }
    }
}

/// The engine's side: the registered source, if any, and the task in progress.
/// Why no iteration starts now ([`Tasks::begin`]).
pub(crate) enum NotYet {
    /// The loop ends.
    End(EndReason),
    /// The source waits for something; ask again after the wait.
    Wait(TaskWait),
}

#[derive(Default)]
pub(crate) struct Tasks {
    source: Option<Box<dyn ErasedTaskSource>>,
    current: Option<Task>,
}

impl Tasks {
    pub(crate) fn new(source: Option<Box<dyn ErasedTaskSource>>) -> Self {
        Self {
            source,
            current: None,
        }
    }

    /// Asks the source for the next task: `None` to work on it, or why not (the loop ends, or
    /// waits and asks again).
    pub(crate) fn begin(&mut self, events: &mut Vec<EventKind>) -> Option<NotYet> {
        let source = self.source.as_mut()?;
        let next = source.next_task(&mut TaskContext { events });
        match next {
            NextTask::Work(task) => {
                self.current = Some(task);
                None
            }
            NextTask::End(reason) => Some(NotYet::End(reason)),
            NextTask::Wait(wait) => Some(NotYet::Wait(wait)),
        }
    }

    /// Whether the source gives state `name` its own meaning.
    pub(crate) fn handles_state(&self, name: &str) -> bool {
        self.source.as_ref().is_some_and(|s| s.handles_state(name))
    }

    /// The current task's fields for `ITERATION_STARTED`.
    pub(crate) fn fields(&self) -> Map<String, Value> {
        self.current
            .as_ref()
            .map(|task| task.fields.clone())
            .unwrap_or_default()
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
        agent: AgentEnd<'_>,
        state: Option<&Marker>,
        attempt: Option<AttemptReport<'_>>,
        answer: &str,
        events: &mut Vec<EventKind>,
    ) -> TaskDecision {
        let (Some(source), Some(task)) = (self.source.as_mut(), self.current.as_ref()) else {
            return TaskDecision::Continue;
        };
        let report = IterationReport {
            iteration,
            task,
            exit_code: agent.exit_code,
            state,
            attempt,
            failed: agent.failure.is_some(),
            failure: agent.failure,
            termination: agent.termination,
            duration: agent.duration,
            usage: agent.usage,
            answer,
        };
        let decision = source.iteration_ended(&report, &mut TaskContext { events });
        // A task that is over (done, given up on, or the source ended the run) is no longer in
        // progress: the session and `ralph status` name none until the next begins.
        if !matches!(decision, TaskDecision::Continue) {
            self.current = None;
        }
        decision
    }

    pub(crate) fn limit_reached(&mut self, events: &mut Vec<EventKind>) -> EndReason {
        self.source.as_mut().map_or(EndReason::MaxIterations, |s| {
            s.limit_reached(&mut TaskContext { events })
        })
    }

    pub(crate) fn summary(&self) -> Map<String, Value> {
        self.source
            .as_ref()
            .map(|s| s.summary())
            .unwrap_or_default()
    }

    /// The source's state as JSON, if it keeps one.
    pub(crate) fn snapshot(&self, ending: bool) -> Result<Option<Value>, serde_json::Error> {
        self.source
            .as_ref()
            .map_or(Ok(None), |s| s.snapshot(ending))
    }

    pub(crate) fn restore(&mut self, state: Value, events: &mut Vec<EventKind>) {
        if let Some(source) = self.source.as_mut() {
            source.restore(state, &mut TaskContext { events });
        }
    }
}
