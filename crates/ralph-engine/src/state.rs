//! State handlers: what the loop does when an iteration ends in a given state.
//!
//! The agent names its state with a marker (`<!-- ralph:state NAME -->`); the registry maps that
//! name to a [`StateHandler`]. `idle` ([`IdleHandler`]), `done` ([`DoneHandler`]) and the states
//! a RALPH.md declares in `states` ([`DeclaredStateHandler`]) are ordinary handlers; an embedder
//! registers its own the same way, without touching the engine.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ralph_backoff::{IdleDecision, IdlePolicy, IdleStreak};
use ralph_frontmatter::schema::BUILT_IN_STATES;
use ralph_frontmatter::{StateSpec, StateThen};
use ralph_marker::Marker;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::event::{EventKind, WaitReason, WarningKind};
use crate::hold::{HoldAnswer, HoldVerdict, StateHold};
use crate::outcome::EndReason;

/// The built-in idle state's name: [`Engine::new`](crate::Engine::new) gives it an
/// [`IdleHandler`] when the file has an `idle` block.
pub(crate) const IDLE_STATE: &str = "idle";

/// What the loop does next.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateDecision {
    /// Run the next iteration as usual.
    Continue,
    /// Wait before the next iteration (Ctrl+C skips the wait), as [`StateWait`] says.
    Wait(StateWait),
    /// Hold the loop without running the agent, asking the handler again
    /// ([`StateHandler::poll_hold`]) every [`StateHold::poll`] until it releases or stops the
    /// loop: waiting on the world (a review, a deployment) costs no agent run. A failed agent
    /// run does not hold (the failure policy decides), and a hold on the run's last iteration
    /// ends the run as `max_iterations` does.
    Hold(StateHold),
    /// End the loop.
    Stop(EndReason),
}

impl StateDecision {
    /// Wait `delay` before the next iteration, as a state's wait (`WAIT_STARTED` reason
    /// `state`, no streak): [`StateWait::new`].
    pub fn wait(delay: Duration) -> Self {
        Self::Wait(StateWait::new(delay))
    }

    /// Hold the loop, asking again every `poll`; `why` says what it waits for:
    /// [`StateHold::new`].
    pub fn hold(poll: Duration, why: impl Into<String>) -> Self {
        Self::Hold(StateHold::new(poll, why))
    }
}

/// A wait a state's handler asks for, in its own words: how long, what the wait is (`reason`,
/// `WAIT_STARTED`'s and the countdown's) and the handler's streak (iterations in a row in its
/// state, shown with the countdown). The engine reads these, never the state's name: the
/// built-in `idle` handler's waits are [`WaitReason::Idle`] with its streak, and the run counts
/// the iterations whose waits say `Idle` as idle (`RUN_ENDED`'s `idle_iterations`, `idle_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateWait {
    /// How long.
    pub delay: Duration,
    /// What kind of wait it is; [`WaitReason::State`] unless the handler says otherwise.
    pub reason: WaitReason,
    /// Iterations in a row that ended in the handler's state, this one included; 0 when the
    /// handler keeps no streak.
    pub streak: u64,
}

impl StateWait {
    /// A wait of `delay`, reason [`WaitReason::State`], no streak.
    pub fn new(delay: Duration) -> Self {
        Self {
            delay,
            reason: WaitReason::State,
            streak: 0,
        }
    }

    /// The same wait, reported as `reason`.
    pub fn reason(mut self, reason: WaitReason) -> Self {
        self.reason = reason;
        self
    }

    /// The same wait, after `streak` iterations in a row in the handler's state.
    pub fn streak(mut self, streak: u64) -> Self {
        self.streak = streak;
        self
    }
}

/// What a handler sees of the iteration that ended in its state.
pub struct StateContext<'a> {
    /// The iteration number.
    pub iteration: u64,
    /// The state marker, with its attributes.
    pub marker: &'a Marker,
    /// Time since the run started, from the engine's clock.
    pub elapsed: Duration,
    /// With `done_when`, when the checks ran after this iteration (the state's handler says it
    /// [is an attempt](StateHandler::is_attempt)): whether they all passed.
    pub checks_passed: Option<bool>,
    /// The task the iteration worked on (a story id), when a task source is set.
    pub task: Option<&'a str>,
    events: &'a mut Vec<EventKind>,
    requests: &'a mut Requests,
}

/// What handlers asked of the engine besides their decision.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    /// A shell command to run now, for the state's handler.
    pub(crate) hook: Option<String>,
    /// Its time limit; `None`: the command timeout.
    pub(crate) hook_timeout: Option<Duration>,
    /// Text for the front of the next prompt's feedback.
    pub(crate) feedback: Option<String>,
    /// Text for the end of the next prompt.
    pub(crate) prompt_note: Option<String>,
    /// Placeholder values for every later prompt: `(namespace, name, value)`.
    pub(crate) placeholders: Vec<(String, String, String)>,
}

/// Where a [`StateContext`] puts what a handler emits and asks for: the engine keeps one per
/// iteration; an embedder's tests make one to call a handler directly and look at the result.
///
/// ```
/// use ralph_marker::{Finding, last_state, scan};
/// use ralph_engine::{StateContext, StateDecision, StateHandler, StateOutbox};
///
/// struct Review;
/// impl StateHandler for Review {
///     type State = ();
///
///     fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
///         cx.run_hook("gh pr view {{ state.pr }}", None);
///         StateDecision::Continue
///     }
/// }
///
/// let findings: Vec<Finding> = scan(b"<!-- ralph:state review pr=42 -->");
/// let marker = last_state(&findings).expect("a state marker");
/// let mut outbox = StateOutbox::new();
/// let decision = Review.on_state(&mut outbox.context(3, marker));
/// assert_eq!(decision, StateDecision::Continue);
/// assert_eq!(outbox.hook(), Some(("gh pr view {{ state.pr }}", None)));
/// ```
#[derive(Debug, Default)]
pub struct StateOutbox {
    events: Vec<EventKind>,
    requests: Requests,
}

impl StateOutbox {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// A context for `iteration`, ended in `marker`: no time elapsed, no checks, no task (set
    /// the public fields to taste).
    pub fn context<'a>(&'a mut self, iteration: u64, marker: &'a Marker) -> StateContext<'a> {
        let facts = Facts {
            iteration,
            elapsed: Duration::ZERO,
            checks_passed: None,
            task: None,
        };
        StateContext::new(facts, marker, &mut self.events, &mut self.requests)
    }

    /// The events handlers emitted, in order.
    pub fn events(&self) -> &[EventKind] {
        &self.events
    }

    /// The hook a handler asked for ([`StateContext::run_hook`]) and its timeout.
    pub fn hook(&self) -> Option<(&str, Option<Duration>)> {
        self.requests
            .hook
            .as_deref()
            .map(|hook| (hook, self.requests.hook_timeout))
    }

    /// The feedback a handler added ([`StateContext::add_feedback`]).
    pub fn feedback(&self) -> Option<&str> {
        self.requests.feedback.as_deref()
    }
}

/// What the engine knows of the iteration besides its state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts<'a> {
    pub(crate) iteration: u64,
    pub(crate) elapsed: Duration,
    pub(crate) checks_passed: Option<bool>,
    pub(crate) task: Option<&'a str>,
}

impl<'a> StateContext<'a> {
    fn new(
        facts: Facts<'a>,
        marker: &'a Marker,
        events: &'a mut Vec<EventKind>,
        requests: &'a mut Requests,
    ) -> Self {
        Self {
            iteration: facts.iteration,
            marker,
            elapsed: facts.elapsed,
            checks_passed: facts.checks_passed,
            task: facts.task,
            events,
            requests,
        }
    }

    /// Emits an event of the handler's own after the iteration's `ITERATION_ENDED`: a `type`
    /// and fields ([`TaskEvent`](crate::TaskEvent), or a tagged serde enum of yours converted
    /// with [`TaskEvent::from_tagged`](crate::TaskEvent::from_tagged)). A type the engine
    /// writes itself (`RUN_ENDED`, `ITERATION_ENDED`, ...) is not written: a `WARNING` says so.
    pub fn emit(&mut self, event: impl Into<crate::TaskEvent>) {
        self.events
            .push(crate::EventKind::of_plug(event.into(), "a state handler"));
    }

    /// One of the engine's own events, from a built-in handler.
    pub(crate) fn emit_engine(&mut self, event: EventKind) {
        self.events.push(event);
    }

    /// Asks the engine to run `command` through `sh -c` before the decision takes effect, as it
    /// runs one of `commands` (own process group, `RALPH_*` variables, killed after `timeout`,
    /// by default the command timeout). In `command`, `{{ state.KEY }}` becomes the marker's
    /// attribute `KEY` (nothing when it has none), shell-quoted exactly as `{{ args.NAME }}`
    /// values are, which are filled too. Its exit code comes back through
    /// [`StateHandler::on_hook_finished`].
    pub fn run_hook(&mut self, command: impl Into<String>, timeout: Option<Duration>) {
        self.requests.hook = Some(command.into());
        self.requests.hook_timeout = timeout;
    }

    /// Puts `text` at the front of what the agent's next prompt says about its failed attempt
    /// (`{{ ralph.failures }}`). Without feedback to give (no failed `done_when` attempt, or
    /// `convergence.feedback: false`) it is dropped.
    pub fn add_feedback(&mut self, text: impl Into<String>) {
        self.requests.feedback = Some(text.into());
    }

    /// Puts `text` at the end of the agent's next prompt, once (what a review said, say).
    pub fn add_to_next_prompt(&mut self, text: impl Into<String>) {
        self.requests.prompt_note = Some(text.into());
    }

    /// Gives `{{ namespace.name }}` the value `value` in every later prompt, until set again.
    /// The parser must know the placeholder: register it with a
    /// [`PlugVocabulary`](ralph_frontmatter::PlugVocabulary) and parse with
    /// [`EngineOptions::load_with`](crate::EngineOptions::load_with).
    pub fn set_placeholder(
        &mut self,
        namespace: impl Into<String>,
        name: impl Into<String>,
        value: impl Into<String>,
    ) {
        self.requests
            .placeholders
            .push((namespace.into(), name.into(), value.into()));
    }
}

/// Decides what happens after an iteration that ends in one state.
pub trait StateHandler: Send {
    /// What the handler keeps across a stop and a resume ([`snapshot`](Self::snapshot),
    /// [`restore`](Self::restore)), saved as JSON in the run's session file. `()` for a
    /// handler that keeps nothing: every handler names its type, as associated type defaults
    /// are not stable Rust.
    type State: Serialize + DeserializeOwned;

    /// The iteration ended in this handler's state.
    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision;

    /// The iteration ended in another state, or none: a streak of this state is over.
    fn on_other_state(&mut self) {}

    /// Whether an iteration ending in this state is still a `done_when` attempt: the checks
    /// run first and [`StateContext::checks_passed`] tells how they went (`done`). `false`, the
    /// default: the handler alone decides, no checks run (`idle`: nothing was tried).
    fn is_attempt(&self) -> bool {
        false
    }

    /// The hook asked for with [`StateContext::run_hook`] ended with `exit_code` (`None`: by a
    /// signal, at its timeout, or it could not start).
    fn on_hook_finished(&mut self, cx: &mut StateContext<'_>, exit_code: Option<i32>) {
        let _ = (cx, exit_code);
    }

    /// Asked every [`StateHold::poll`] while the loop holds in this handler's state
    /// ([`StateDecision::Hold`]): hold on, release the loop (the next iteration runs the agent),
    /// or stop it; now, or through a future ([`HoldAnswer::later`]). The context is the
    /// iteration that ended in the state; [`StateContext::emit`] and
    /// [`StateContext::add_feedback`] work as in [`on_state`](Self::on_state). The default
    /// releases at once.
    fn poll_hold(&mut self, cx: &mut StateContext<'_>) -> HoldAnswer {
        let _ = cx;
        HoldAnswer::Now(HoldVerdict::Release)
    }

    /// The handler's own state (a streak), saved in the run's session file so a resumed run
    /// can [`restore`](Self::restore) it. `None`, the default: nothing to keep.
    fn snapshot(&self) -> Option<Self::State> {
        None
    }

    /// Takes up the state a [`snapshot`](Self::snapshot) of a stopped run saved. A saved state
    /// that does not read as a [`State`](Self::State) never gets here: the engine warns and the
    /// handler starts afresh.
    fn restore(&mut self, state: Self::State) {
        let _ = state;
    }
}

/// A [`StateHandler`] whose state is JSON, whatever its [`StateHandler::State`]: what
/// [`StateHandlers`] keeps, as a trait with an associated type cannot be a trait object.
trait ErasedStateHandler: Send {
    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision;
    fn on_other_state(&mut self);
    fn is_attempt(&self) -> bool;
    fn on_hook_finished(&mut self, cx: &mut StateContext<'_>, exit_code: Option<i32>);
    fn poll_hold(&mut self, cx: &mut StateContext<'_>) -> HoldAnswer;
    /// The handler's snapshot as JSON; an error when its `State` does not serialize.
    fn snapshot(&self) -> Result<Option<serde_json::Value>, serde_json::Error>;
    /// Reads `state` as the handler's `State` and restores it; the error when it does not read.
    fn restore(&mut self, state: serde_json::Value) -> Result<(), serde_json::Error>;
}

impl<T: StateHandler> ErasedStateHandler for T {
    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        StateHandler::on_state(self, cx)
    }

    fn on_other_state(&mut self) {
        StateHandler::on_other_state(self);
    }

    fn is_attempt(&self) -> bool {
        StateHandler::is_attempt(self)
    }

    fn on_hook_finished(&mut self, cx: &mut StateContext<'_>, exit_code: Option<i32>) {
        StateHandler::on_hook_finished(self, cx, exit_code);
    }

    fn poll_hold(&mut self, cx: &mut StateContext<'_>) -> HoldAnswer {
        StateHandler::poll_hold(self, cx)
    }

    fn snapshot(&self) -> Result<Option<serde_json::Value>, serde_json::Error> {
        StateHandler::snapshot(self)
            .map(serde_json::to_value)
            .transpose()
    }

    fn restore(&mut self, state: serde_json::Value) -> Result<(), serde_json::Error> {
        StateHandler::restore(self, serde_json::from_value(state)?);
        Ok(())
    }
}

/// The state handlers of a run, by state name.
#[derive(Default)]
pub struct StateHandlers {
    handlers: BTreeMap<String, Box<dyn ErasedStateHandler>>,
    /// Unknown states already warned about: once per run each.
    warned: BTreeSet<String>,
    /// The idle streak as the handlers' decisions tell it: when its first iteration ended, and
    /// how many, for an `ITERATION_IDLE` a handler did not emit.
    idle_streak: Option<(Duration, u64)>,
}

impl StateHandlers {
    /// No handlers: every state is reported and the loop goes on.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` for state `name` (lowercase), replacing any previous one.
    pub fn register(&mut self, name: impl Into<String>, handler: impl StateHandler + 'static) {
        self.handlers
            .insert(name.into().to_ascii_lowercase(), Box::new(handler));
    }

    /// Whether a handler is registered for `name`.
    pub fn handles(&self, name: &str) -> bool {
        self.handlers.contains_key(name)
    }

    /// Whether an iteration ending in `name` is left to its handler alone: a handler is
    /// registered and it is not an attempt (see [`StateHandler::is_attempt`]).
    pub fn takes_iteration(&self, name: &str) -> bool {
        self.handlers.get(name).is_some_and(|h| !h.is_attempt())
    }

    /// State `name` has a meaning elsewhere (the task source's): no warning that nothing
    /// handles it.
    pub(crate) fn handled_elsewhere(&mut self, name: &str) {
        self.warned.insert(name.to_owned());
    }

    /// Routes an iteration's state to its handler and tells every other handler its streak ended.
    pub(crate) fn decide(
        &mut self,
        facts: Facts<'_>,
        state: Option<&Marker>,
        events: &mut Vec<EventKind>,
        requests: &mut Requests,
    ) -> StateDecision {
        if let Some(marker) = state {
            let name = marker.name.as_str();
            if !self.handles(name)
                && !BUILT_IN_STATES.contains(&name)
                && self.warned.insert(name.to_owned())
            {
                // An event, not only `tracing`, so every sink (events.jsonl too) sees it.
                events.push(EventKind::Warning {
                    kind: WarningKind::UnhandledState,
                    message: format!(
                        "iteration {}: the agent reported state `{name}`, which nothing handles; \
                         declare it in `states` to give it a meaning (warned once per run)",
                        facts.iteration
                    ),
                });
            }
        }
        let mut decision = StateDecision::Continue;
        for (name, handler) in &mut self.handlers {
            match state {
                Some(marker) if &marker.name == name => {
                    let mut cx = StateContext::new(facts, marker, events, requests);
                    decision = handler.on_state(&mut cx);
                }
                _ => handler.on_other_state(),
            }
        }
        self.report_idle(facts, &decision, events);
        decision
    }

    /// `ITERATION_IDLE` for an iteration a handler called idle (an idle wait, or the idle
    /// limit), when the handler did not say it itself: an embedder's own `idle` handler keeps
    /// the event the built-in one emits. The streak counts the idle decisions in a row, its
    /// time from the end of the first.
    fn report_idle(
        &mut self,
        facts: Facts<'_>,
        decision: &StateDecision,
        events: &mut Vec<EventKind>,
    ) {
        let next = match decision {
            StateDecision::Wait(wait) if wait.reason == WaitReason::Idle => Some(Some(*wait)),
            StateDecision::Stop(EndReason::IdleLimit) => Some(None),
            _ => None,
        };
        let Some(next) = next else {
            self.idle_streak = None;
            return;
        };
        let (since, count) = self.idle_streak.get_or_insert((facts.elapsed, 0));
        *count += 1;
        let (since, count) = (*since, *count);
        if events
            .iter()
            .any(|e| matches!(e, EventKind::IterationIdle { .. }))
        {
            return;
        }
        events.push(EventKind::IterationIdle {
            iteration: facts.iteration,
            consecutive_idle: next.map_or(count, |wait| match wait.streak {
                0 => count,
                streak => streak,
            }),
            idle_elapsed_ms: millis(facts.elapsed.saturating_sub(since)),
            next_delay_ms: next.map(|wait| millis(wait.delay)),
        });
    }

    /// Whether an iteration that ended in `state`, on which its handler decided `decision`,
    /// is an idle one (`RUN_ENDED`'s `idle_iterations`): the handler called its wait idle, or
    /// its idle streak ended the run (`idle_limit`). The built-in `idle` state without a
    /// handler (no `idle` block) is idle too, as the events format has always counted it.
    pub(crate) fn counts_as_idle(&self, state: Option<&Marker>, decision: &StateDecision) -> bool {
        match decision {
            StateDecision::Wait(wait) => wait.reason == WaitReason::Idle,
            StateDecision::Stop(reason) => *reason == EndReason::IdleLimit,
            StateDecision::Hold(_) => false,
            StateDecision::Continue => {
                state.is_some_and(|m| m.name == IDLE_STATE && !self.handles(&m.name))
            }
        }
    }

    /// Each handler's [`snapshot`](StateHandler::snapshot), by state name. A state that does
    /// not serialize is left out, and why goes to `warnings`.
    pub(crate) fn snapshot(
        &self,
        warnings: &mut Vec<String>,
    ) -> BTreeMap<String, serde_json::Value> {
        let mut states = BTreeMap::new();
        for (name, handler) in &self.handlers {
            match handler.snapshot() {
                Ok(Some(state)) => {
                    states.insert(name.clone(), state);
                }
                Ok(None) => {}
                Err(err) => warnings.push(format!(
                    "cannot save the state of the `{name}` state's handler: {err}"
                )),
            }
        }
        states
    }

    /// Gives each handler the state its snapshot saved. One that does not read as the
    /// handler's `State` is a `WARNING` in `events`, and the handler starts afresh.
    pub(crate) fn restore(
        &mut self,
        states: &BTreeMap<String, serde_json::Value>,
        events: &mut Vec<EventKind>,
    ) {
        for (name, state) in states {
            let Some(handler) = self.handlers.get_mut(name) else {
                continue;
            };
            if let Err(err) = handler.restore(state.clone()) {
                events.push(EventKind::Warning {
                    kind: WarningKind::UnreadableState,
                    message: format!(
                        "the session's state of the `{name}` state's handler is unreadable \
                         ({err}); the handler starts afresh"
                    ),
                });
            }
        }
    }

    /// Asks the handler of `marker`'s state, which holds the loop, whether it still does.
    pub(crate) fn poll_hold(
        &mut self,
        facts: Facts<'_>,
        marker: &Marker,
        events: &mut Vec<EventKind>,
        requests: &mut Requests,
    ) -> HoldAnswer {
        match self.handlers.get_mut(&marker.name) {
            Some(handler) => {
                handler.poll_hold(&mut StateContext::new(facts, marker, events, requests))
            }
            None => HoldAnswer::Now(HoldVerdict::Release),
        }
    }

    /// Tells the handler of `marker`'s state how the hook it asked for ended.
    pub(crate) fn hook_finished(
        &mut self,
        facts: Facts<'_>,
        marker: &Marker,
        exit_code: Option<i32>,
        events: &mut Vec<EventKind>,
    ) {
        if let Some(handler) = self.handlers.get_mut(&marker.name) {
            let mut requests = Requests::default();
            let mut cx = StateContext::new(facts, marker, events, &mut requests);
            handler.on_hook_finished(&mut cx, exit_code);
        }
    }
}

/// What the agent's next prompt says when it reported `done` but the checks fail.
pub const DONE_BUT_FAILING: &str = "You reported `<!-- ralph:state done -->`, but the checks \
that decide when the work is done fail: the work is not finished. Fix what they report below, \
then report done again.";

/// The built-in `done` handler: the agent says the work is finished.
///
/// Without `done_when` and without a task source the loop ends (`agent_done`, exit 0). With
/// `done_when` the checks decide, as on any attempt: passing converges, failing is an ordinary
/// failed attempt whose feedback starts with [`DONE_BUT_FAILING`]. With a task source (story
/// mode) the source judges the task, and `done` tells it the task is finished.
#[derive(Debug, Clone, Copy, Default)]
pub struct DoneHandler;

impl StateHandler for DoneHandler {
    type State = ();

    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        match (cx.checks_passed, cx.task) {
            (Some(false), _) => {
                cx.add_feedback(DONE_BUT_FAILING);
                StateDecision::Continue
            }
            (Some(true), _) | (None, Some(_)) => StateDecision::Continue,
            (None, None) => StateDecision::Stop(EndReason::AgentDone),
        }
    }

    fn is_attempt(&self) -> bool {
        true
    }
}

/// A state declared in RALPH.md's `states`: its hook, if any, then stop, continue, wait, or
/// hold the loop until the hook exits 0. Emits `STATE_HANDLED` for each run of the hook.
#[derive(Debug, Clone)]
pub struct DeclaredStateHandler {
    spec: StateSpec,
    /// With `then: hold`: whether the hook's last run exited 0.
    check_passed: bool,
}

impl DeclaredStateHandler {
    /// A handler doing what `spec` says.
    pub fn new(spec: StateSpec) -> Self {
        Self {
            spec,
            check_passed: false,
        }
    }

    fn handled(&self, cx: &mut StateContext<'_>, hook_exit_code: Option<i32>) {
        cx.emit_engine(EventKind::StateHandled {
            iteration: cx.iteration,
            state: cx.marker.name.clone(),
            then: self.spec.then.as_str().to_owned(),
            hook_exit_code,
        });
    }
}

impl StateHandler for DeclaredStateHandler {
    type State = ();

    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        self.check_passed = false;
        match &self.spec.run {
            Some(run) => cx.run_hook(run.clone(), self.spec.timeout),
            None => self.handled(cx, None),
        }
        match self.spec.then {
            StateThen::Stop { exit_code } => StateDecision::Stop(EndReason::State {
                reason: cx.marker.name.clone(),
                exit_code: i32::from(exit_code),
            }),
            StateThen::Continue => StateDecision::Continue,
            StateThen::Wait(wait) => StateDecision::wait(wait),
            StateThen::Hold { poll } => {
                let check = self.spec.run.as_deref().unwrap_or_default();
                StateDecision::hold(poll, format!("`{check}` to succeed"))
            }
        }
    }

    fn poll_hold(&mut self, cx: &mut StateContext<'_>) -> HoldAnswer {
        // The check that ran last (as the iteration ended, or at the last poll) decides; a
        // check that still fails runs again, for the next poll.
        if self.check_passed {
            return HoldAnswer::Now(HoldVerdict::Release);
        }
        if let Some(run) = &self.spec.run {
            cx.run_hook(run.clone(), self.spec.timeout);
        }
        HoldAnswer::Now(HoldVerdict::Hold)
    }

    fn on_hook_finished(&mut self, cx: &mut StateContext<'_>, exit_code: Option<i32>) {
        self.check_passed = exit_code == Some(0);
        self.handled(cx, exit_code);
    }
}

/// The built-in `idle` handler: waits that grow with each consecutive idle iteration, reset on
/// activity, and a stop once the streak's idle time would pass `idle.max`.
#[derive(Debug, Clone)]
pub struct IdleHandler {
    policy: IdlePolicy,
    streak: IdleStreak,
}

impl IdleHandler {
    /// A handler following `policy`.
    pub fn new(policy: IdlePolicy) -> Self {
        Self {
            policy,
            streak: IdleStreak::new(),
        }
    }
}

impl StateHandler for IdleHandler {
    type State = IdleState;

    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        let decision = self.streak.record_idle(&self.policy, cx.elapsed);
        let (consecutive, idle_elapsed, next) = match decision {
            IdleDecision::Wait {
                delay,
                consecutive,
                idle_elapsed,
            } => (consecutive, idle_elapsed, Some(delay)),
            IdleDecision::Stop {
                consecutive,
                idle_elapsed,
            } => (consecutive, idle_elapsed, None),
        };
        cx.emit_engine(EventKind::IterationIdle {
            iteration: cx.iteration,
            consecutive_idle: consecutive,
            idle_elapsed_ms: millis(idle_elapsed),
            next_delay_ms: next.map(millis),
        });
        match next {
            Some(delay) => StateDecision::Wait(
                StateWait::new(delay)
                    .reason(WaitReason::Idle)
                    .streak(consecutive),
            ),
            None => StateDecision::Stop(EndReason::IdleLimit),
        }
    }

    fn on_other_state(&mut self) {
        self.streak.record_activity();
    }

    fn snapshot(&self) -> Option<IdleState> {
        Some(IdleState {
            consecutive: self.streak.consecutive(),
            first_idle_end_ms: self.streak.first_idle_end().map(millis),
        })
    }

    fn restore(&mut self, state: IdleState) {
        let first = state.first_idle_end_ms.map(Duration::from_millis);
        self.streak = IdleStreak::resumed(state.consecutive, first);
    }
}

/// The [`IdleHandler`]'s part of a session file: its streak. A field that is missing reads
/// as no streak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct IdleState {
    /// Idle iterations in a row.
    pub consecutive: u64,
    /// When the first of them ended, in milliseconds of run time.
    pub first_idle_end_ms: Option<u64>,
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(name: &str) -> Marker {
        Marker {
            kind: "state".into(),
            name: name.into(),
            attrs: vec![("pr".into(), "12".into())],
            offset: 0,
        }
    }

    /// What `handler` decides for `marker`, with its events and requests.
    fn decide(
        handler: &mut impl StateHandler,
        marker: &Marker,
        checks_passed: Option<bool>,
        task: Option<&str>,
    ) -> (StateDecision, Vec<EventKind>, Requests) {
        let facts = Facts {
            iteration: 2,
            elapsed: Duration::ZERO,
            checks_passed,
            task,
        };
        let (mut events, mut requests) = (Vec::new(), Requests::default());
        let mut cx = StateContext::new(facts, marker, &mut events, &mut requests);
        let decision = handler.on_state(&mut cx);
        (decision, events, requests)
    }

    #[test]
    fn a_restored_idle_handler_goes_on_with_its_streak() {
        let policy = IdlePolicy::new(Duration::from_secs(1), 2.0, Duration::from_secs(60));
        let mut before = IdleHandler::new(policy);
        for _ in 0..2 {
            decide(&mut before, &marker("idle"), None, None);
        }
        let mut after = IdleHandler::new(policy);
        StateHandler::restore(&mut after, StateHandler::snapshot(&before).unwrap());
        let (decision, events, _) = decide(&mut after, &marker("idle"), None, None);
        let wait = StateWait::new(Duration::from_secs(4))
            .reason(WaitReason::Idle)
            .streak(3);
        assert_eq!(decision, StateDecision::Wait(wait));
        assert!(matches!(
            events[..],
            [EventKind::IterationIdle {
                consecutive_idle: 3,
                ..
            }]
        ));
    }

    #[test]
    fn a_saved_handler_state_that_does_not_read_is_a_warning_and_a_fresh_start() {
        let policy = IdlePolicy::new(Duration::from_secs(1), 2.0, Duration::from_secs(60));
        let mut handlers = StateHandlers::new();
        handlers.register("idle", IdleHandler::new(policy));
        let saved = BTreeMap::from([("idle".to_owned(), serde_json::json!({"consecutive": "3"}))]);
        let mut events = Vec::new();
        handlers.restore(&saved, &mut events);
        assert!(matches!(
            &events[..],
            [EventKind::Warning { kind: WarningKind::UnreadableState, message }]
                if message.starts_with("the session's state of the `idle` state's handler")
        ));
        let fresh = IdleState::default();
        let mut unsaved = Vec::new();
        assert_eq!(
            handlers.snapshot(&mut unsaved)["idle"],
            serde_json::to_value(fresh).unwrap()
        );
        assert!(unsaved.is_empty());
    }

    #[test]
    fn an_iteration_is_idle_when_its_handler_says_so_or_idle_has_no_handler() {
        let mut handlers = StateHandlers::new();
        handlers.register("napping", DoneHandler);
        let (idle, napping) = (marker(IDLE_STATE), marker("napping"));
        let idle_wait =
            StateDecision::Wait(StateWait::new(Duration::from_secs(1)).reason(WaitReason::Idle));
        assert!(handlers.counts_as_idle(Some(&napping), &idle_wait));
        let state_wait = StateDecision::wait(Duration::from_secs(1));
        assert!(!handlers.counts_as_idle(Some(&idle), &state_wait));
        let limit = StateDecision::Stop(EndReason::IdleLimit);
        assert!(handlers.counts_as_idle(Some(&napping), &limit));
        let go_on = StateDecision::Continue;
        assert!(
            handlers.counts_as_idle(Some(&idle), &go_on),
            "no `idle` block"
        );
        assert!(!handlers.counts_as_idle(Some(&napping), &go_on));
        assert!(!handlers.counts_as_idle(None, &go_on));
        handlers.register(IDLE_STATE, DoneHandler);
        assert!(
            !handlers.counts_as_idle(Some(&idle), &go_on),
            "its handler says"
        );
    }

    #[test]
    fn done_without_checks_or_task_ends_the_run() {
        let (decision, _, requests) = decide(&mut DoneHandler, &marker("done"), None, None);
        assert_eq!(decision, StateDecision::Stop(EndReason::AgentDone));
        assert!(requests.feedback.is_none());
    }

    #[test]
    fn done_leaves_the_verdict_to_the_checks_and_says_so_when_they_fail() {
        let (decision, _, requests) = decide(&mut DoneHandler, &marker("done"), Some(true), None);
        assert_eq!(decision, StateDecision::Continue);
        assert!(requests.feedback.is_none());
        let (decision, _, requests) = decide(&mut DoneHandler, &marker("done"), Some(false), None);
        assert_eq!(decision, StateDecision::Continue);
        assert_eq!(requests.feedback.as_deref(), Some(DONE_BUT_FAILING));
    }

    #[test]
    fn done_with_a_task_leaves_the_task_to_its_source() {
        let (decision, _, _) = decide(&mut DoneHandler, &marker("done"), None, Some("US-1"));
        assert_eq!(decision, StateDecision::Continue);
        assert!(StateHandler::is_attempt(&DoneHandler));
    }

    #[test]
    fn a_declared_state_with_a_hook_reports_after_the_hook() {
        let spec = StateSpec {
            run: Some("echo {{ state.pr }}".into()),
            timeout: Some(Duration::from_secs(5)),
            then: StateThen::Stop { exit_code: 7 },
        };
        let mut handler = DeclaredStateHandler::new(spec);
        let (decision, events, requests) = decide(&mut handler, &marker("review"), None, None);
        assert_eq!(
            decision,
            StateDecision::Stop(EndReason::State {
                reason: "review".into(),
                exit_code: 7
            })
        );
        assert!(events.is_empty(), "STATE_HANDLED waits for the hook");
        assert_eq!(requests.hook.as_deref(), Some("echo {{ state.pr }}"));
        assert_eq!(requests.hook_timeout, Some(Duration::from_secs(5)));
        assert!(!StateHandler::is_attempt(&handler));
    }

    #[test]
    fn a_declared_state_without_a_hook_reports_at_once() {
        let spec = StateSpec {
            run: None,
            timeout: None,
            then: StateThen::Wait(Duration::from_millis(50)),
        };
        let mut handler = DeclaredStateHandler::new(spec);
        let (decision, events, requests) = decide(&mut handler, &marker("review"), None, None);
        assert_eq!(decision, StateDecision::wait(Duration::from_millis(50)));
        assert!(requests.hook.is_none());
        assert_eq!(
            events,
            [EventKind::StateHandled {
                iteration: 2,
                state: "review".into(),
                then: "wait".into(),
                hook_exit_code: None
            }]
        );
    }
}
