//! The loop: commands, prompt, agent, state, wait; again until something ends it.

use std::time::{Duration, SystemTime};

use ralph_backoff::FailureStreak;
use ralph_frontmatter::PtyMode;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::claim::FolderClaim;
use crate::convergence::Attempts;
use crate::event::{EventKind, EventSink, IdleSummary, WaitReason, WarningKind};
use crate::hold::HoldVerdict;
use crate::logs;
use crate::outcome::{self, EndReason, InterruptSignal, RunOutcome};
use crate::session::PlannedWait;
use crate::session::Tally;
use crate::state::{
    DeclaredStateHandler, DoneHandler, IDLE_STATE, IdleHandler, StateHandlers, StateWait, millis,
};
use crate::task::{ErasedTaskSource, NotYet, TaskSource, Tasks};
use ralph_agents::{OutputAdapter, RunCost};
use ralph_process::Containment;
use ralph_process::pty::PtyTerminal;

mod agent;
mod assemble;
mod attempt;
mod commands;
mod dry_run;
mod failure;
mod fallback;
mod hold;
pub(crate) mod interrupts;
mod iteration;
mod load;
mod options;
mod persist;
mod prompt;
mod reload;
mod resume;
mod sandbox;
mod spawn;
mod states;
mod step;
mod supervise;
mod wait;

use interrupts::{Interrupts, Phase};
use spawn::spawn_problem;
use step::{AgentFacts, Limits};
use supervise::emit;

pub use dry_run::{DryRun, DryRunCommand};
pub use load::LoadError;

pub use failure::Failure;
use options::Settings;
pub use options::{EngineOptions, Overrides, new_run_id};
pub use resume::ResumeError;
pub use wait::wait_before_start;

/// The shortest wait between two looks at something the loop waits for (a task source's
/// [`TaskWait`](crate::TaskWait), a state's hold): asked to look again at once, the loop would
/// spin at full speed, writing its session each time.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(10);

/// Errors that stop a run before it could end normally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The agent program could not be started.
    #[error(
        "cannot start the agent `{program}`: {}",
        spawn_problem(program, cause)
    )]
    AgentSpawn {
        /// The program.
        program: String,
        /// Why.
        cause: std::io::Error,
    },
    /// The agent command line is empty after substitution.
    #[error("the agent command line is empty")]
    EmptyAgent,
    /// [`EngineOptions::resume`] holds a session this loop must not go on with: another
    /// folder's, or one that ended by itself. Nothing was written.
    #[error("cannot resume: {0}")]
    Resume(ResumeError),
    /// The file's `output:` names an adapter no [`Engine::register_adapter`] registered.
    /// Nothing was written.
    #[error("output `{name}` names no adapter this program registered (Engine::register_adapter)")]
    NoAdapter {
        /// The name.
        name: String,
    },
    /// [`EngineOptions::hold_folder`]: another run holds the loop's folder. Nothing was
    /// written.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    /// The RALPH.md's `sandbox` cannot be set up on this machine; nothing ran.
    #[error(transparent)]
    Sandbox(#[from] ralph_sandbox::SandboxError),
}

/// How one of `commands` ended, as `Engine::run_command` reports it.
struct CommandRun {
    output: String,
    exit_code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
}

/// The ralph loop. Build it from [`EngineOptions`], add sinks and state handlers, then
/// [`Engine::run`] it.
pub struct Engine {
    pub(crate) options: EngineOptions,
    sinks: Vec<Box<dyn EventSink>>,
    handlers: StateHandlers,
    signals: mpsc::UnboundedReceiver<InterruptSignal>,
    /// Kept so `signals` never closes when the embedder gives no sender.
    _signals_tx: Option<mpsc::UnboundedSender<InterruptSignal>>,
    terminal: PtyTerminal,
    /// The embedder's adapter choice for an agent line; `None` (or its `None`) lets
    /// [`ralph_agents::choose_output`] pick a built-in.
    adapter: Option<AdapterChoice>,
    /// The embedder's adapters by the `output:` name a file gives them.
    named_adapters: std::collections::BTreeMap<String, AdapterMaker>,
    /// The embedder's failure backoff; `None`: the file's `failure` policy.
    failure_backoff: Option<Box<dyn ralph_backoff::FailureBackoff>>,
    /// Picks each iteration's task and judges its result (ralph-escalation's stories).
    tasks: Option<Box<dyn ErasedTaskSource>>,
    /// The loop's folder, held for the run ([`Engine::claim_folder`]).
    claim: Option<FolderClaim>,
}

/// Makes a fresh [`OutputAdapter`] for each agent run.
type AdapterChoice = Box<dyn FnMut(&AgentLine<'_>) -> Option<Box<dyn OutputAdapter>> + Send>;
type AdapterMaker = Box<dyn FnMut() -> Box<dyn OutputAdapter> + Send>;

/// The agent line an adapter is chosen for ([`Engine::set_adapter`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AgentLine<'a> {
    /// The agent's command line as the file writes it, split (placeholders not filled).
    pub argv: &'a [String],
    /// The file's `output:`: a built-in format's name or a plug's, `None` when it sets none.
    pub output: Option<&'a str>,
}

impl Engine {
    /// An engine with the built-in state handlers (`idle` when the file has an `idle` block,
    /// `done`, and the file's `states`) and no sinks.
    pub fn new(options: EngineOptions) -> Self {
        let mut handlers = StateHandlers::new();
        if let Some(policy) = options.file.config.idle {
            handlers.register(IDLE_STATE, IdleHandler::new(policy));
        }
        handlers.register("done", DoneHandler);
        for (name, spec) in &options.file.config.states {
            handlers.register(name.clone(), DeclaredStateHandler::new(spec.clone()));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            options,
            sinks: Vec::new(),
            handlers,
            signals: rx,
            _signals_tx: Some(tx),
            terminal: PtyTerminal::detached(),
            adapter: None,
            named_adapters: std::collections::BTreeMap::new(),
            failure_backoff: None,
            tasks: None,
            claim: None,
        }
    }

    /// Does what the `ralph` binary does around a run in a loop's folder
    /// ([`FolderClaim::take`] of `options.cwd`, then [`Engine::set_folder_claim`]): a second
    /// loop there is refused, and `ralph status` and `ralph runs` read the run as running.
    /// Refused with [`LockError::Held`](crate::lock::LockError::Held), naming the run that
    /// holds the folder.
    pub fn claim_folder(&mut self) -> Result<&mut Self, crate::lock::LockError> {
        let claim = FolderClaim::take(&self.options)?;
        Ok(self.set_folder_claim(claim))
    }

    /// Runs in the folder `claim` holds, for a caller that took it before the engine was
    /// built (the binary opens its task source in between). As it starts, the run locks its
    /// log folder (`options.log_dir`) and names it in `.ralph/current`; when it ends, the
    /// claim is let go.
    pub fn set_folder_claim(&mut self, claim: FolderClaim) -> &mut Self {
        self.claim = Some(claim);
        self
    }

    /// Lets `source` pick the task of every iteration and judge its result (see [`TaskSource`]).
    /// A run whose file and overrides set no `max_iterations` takes the source's
    /// [`default_max_iterations`](TaskSource::default_max_iterations).
    pub fn set_task_source(&mut self, source: impl TaskSource + 'static) -> &mut Self {
        self.tasks = Some(Box::new(source));
        self
    }

    /// Chooses the adapter of each agent run from its [`AgentLine`] (the agent's command line
    /// and the file's `output:`): `Some` reads the run with that adapter, and the agent line is
    /// run as written (no flags added); `None` leaves the choice to ralph (a named adapter,
    /// then the built-ins: text, or Claude's stream-json for `claude -p`, ...).
    ///
    /// ```
    /// use ralph_agents::TextAdapter;
    /// use ralph_engine::{Engine, EngineOptions};
    ///
    /// let parsed = ralph_frontmatter::parse("RALPH.md", "---\nagent: acme run\n---\nGo.\n")?;
    /// let mut engine = Engine::new(EngineOptions::new("RALPH.md", parsed.file));
    /// engine.set_adapter(|line| match line.argv.first().map(String::as_str) {
    ///     Some("acme") => Some(Box::new(TextAdapter)), // yours, for the acme agent
    ///     _ => None,                                   // ralph's choice for the rest
    /// });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_adapter(
        &mut self,
        choose: impl FnMut(&AgentLine<'_>) -> Option<Box<dyn OutputAdapter>> + Send + 'static,
    ) -> &mut Self {
        self.adapter = Some(Box::new(choose));
        self
    }

    /// Decides what follows each failed agent run with `backoff` instead of the file's
    /// `failure` policy (its waits and its `max_consecutive`): the failure seam, as a state
    /// handler is the idle one. `ITERATION_FAILED` still reports each failure, with the wait
    /// `backoff` chose.
    pub fn set_failure_backoff(
        &mut self,
        backoff: impl ralph_backoff::FailureBackoff + 'static,
    ) -> &mut Self {
        self.failure_backoff = Some(Box::new(backoff));
        self
    }

    /// Registers the adapter `make` makes as the output format `name`: a RALPH.md with
    /// `output: NAME` (a name a plug's [`PlugVocabulary::outputs`] lets the parser take) is
    /// read with it, one adapter per agent run. A run whose file names an adapter nobody
    /// registered ends before it starts ([`EngineError::NoAdapter`]).
    ///
    /// [`PlugVocabulary::outputs`]: ralph_frontmatter::PlugVocabulary::outputs
    pub fn register_adapter(
        &mut self,
        name: impl Into<String>,
        make: impl FnMut() -> Box<dyn OutputAdapter> + Send + 'static,
    ) -> &mut Self {
        self.named_adapters.insert(name.into(), Box::new(make));
        self
    }

    /// In PTY mode, the user's terminal: its input (forwarded to the agent in interactive
    /// mode) and its size. Without it the agent gets no input and an 80x24 terminal.
    pub fn pty_terminal(&mut self, terminal: PtyTerminal) -> &mut Self {
        self.terminal = terminal;
        self
    }

    /// Adds a sink; every event goes to every sink in the order they were added.
    pub fn add_sink(&mut self, sink: impl EventSink + 'static) -> &mut Self {
        self.sinks.push(Box::new(sink));
        self
    }

    /// The state handlers, to register more.
    pub fn state_handlers(&mut self) -> &mut StateHandlers {
        &mut self.handlers
    }

    /// Interrupts (Ctrl+C, SIGTERM) come from `signals`; without it the run cannot be
    /// interrupted.
    pub fn interrupts(&mut self, signals: mpsc::UnboundedReceiver<InterruptSignal>) -> &mut Self {
        self.signals = signals;
        self._signals_tx = None;
        self
    }

    /// Interrupts now come from `signals`, whose sender `keep` the run holds, so the channel
    /// stays open for as long as the run lasts; returns the receiver they came from until now.
    pub(crate) fn replace_interrupts(
        &mut self,
        signals: mpsc::UnboundedReceiver<InterruptSignal>,
        keep: mpsc::UnboundedSender<InterruptSignal>,
    ) -> mpsc::UnboundedReceiver<InterruptSignal> {
        self._signals_tx = Some(keep);
        std::mem::replace(&mut self.signals, signals)
    }

    /// Runs the loop to its end. The future is `Send`: `tokio::spawn(engine.run())` runs it on
    /// a multi-thread runtime beside other runs ([`Engine::spawn`] does that and returns a
    /// [`RunHandle`](crate::RunHandle)).
    pub async fn run(mut self) -> Result<RunOutcome, EngineError> {
        // Before anything is written: the session's history is another run's until taken up.
        if let Some(stopped) = &self.options.resume {
            resume::check_resumable_in(stopped, &self.options.cwd).map_err(EngineError::Resume)?;
        }
        if let Some(name) = &self.options.file.config.output_adapter {
            if !self.named_adapters.contains_key(name) {
                return Err(EngineError::NoAdapter { name: name.clone() });
            }
        }
        if self.options.hold_folder && self.claim.is_none() {
            self.claim_folder()?;
        }
        Run::new(self).run().await
    }

    /// Prepares iteration 1 without running the agent: runs `commands` exactly as the iteration
    /// would, renders the prompt and substitutes the agent's command line. Writes no logs and
    /// no prompt file (`{prompt_file}` shows the path it would have); `COMMAND_FINISHED` events
    /// still go to the sinks.
    pub async fn dry_run(self) -> Result<DryRun, EngineError> {
        Run::new(self).dry_run().await
    }
}

/// What the loop does after an iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    Continue,
    Wait(Duration, WaitReason),
    Stop(EndReason),
}

/// The state of one run.
struct Run {
    /// What the run was built from: options, sinks, handlers, signals, terminal, adapter and
    /// folder claim, owned as the embedder set them (its task source moved to `tasks`).
    engine: Engine,
    /// The settings, fixed as the run starts.
    settings: Settings,
    started: Instant,
    interrupts: Interrupts,
    /// The loop's counts: iterations, idle time, the failure streak, the spend. The session
    /// file writes them as they are.
    tally: Tally,
    /// The wait the last iteration's state handler asked for (its reason and streak, for the
    /// countdown), if it asked for one.
    state_wait: Option<StateWait>,
    /// The state whose handler holds the loop, and how, while it does.
    holding: Option<(ralph_marker::Marker, crate::hold::StateHold)>,
    /// Text a state handler put at the end of the next prompt.
    prompt_note: Option<String>,
    /// Placeholder values state handlers set, by namespace and name.
    state_placeholders: std::collections::BTreeMap<(String, String), String>,
    /// Convergence bookkeeping, when the file has `done_when`.
    attempts: Option<Attempts>,
    /// The RALPH.md text the current config came from, when reloading.
    source: Option<String>,
    /// `RALPH_FILE` for processes: absolute, since `./` commands run from another folder.
    ralph_file_abs: String,
    /// The run's cost, each agent session counted once (`adapter::RunCost`).
    run_cost: RunCost,
    tasks: Tasks,
    /// The watchdog and the subreaper: no process outlives the run, nor its iteration.
    containment: Containment,
    /// The sandbox every process of the run starts in, when the RALPH.md has one.
    sandbox: Option<ralph_sandbox::Sandbox>,
    /// The thread the sandboxed processes are spawned from, confined by the sandbox's rules.
    child_setup: Option<ralph_process::ChildSetup>,
    /// How the last agent run went, for the decision after its iteration.
    agent_run: AgentRun,
    /// An agent process has started in this run: a later spawn error is a failed run, not a
    /// mistake in the agent line.
    agent_started: bool,
    /// The session file's content, written as the run goes; `None` without a log folder.
    session: Option<crate::session::Session>,
    /// Writes it, off the loop's thread.
    session_writer: Option<persist::SessionWriter>,
    /// The iterations' prompt copies in the log folder.
    prompt_copies: crate::logs::PromptCopies,
    /// Files made ahead for the iterations' logs and prompt copies.
    spare_files: crate::logs::SpareFiles,
    /// Run time before this process took the run up (`--resume`).
    elapsed_before: Duration,
    /// The agent and its fallbacks: which one runs, their limits and costs.
    agents: crate::fallback::Roster,
}

/// How an agent run went, as far as failing and rate limits go.
#[derive(Debug, Default)]
struct AgentRun {
    /// Why it failed; `None` when it did not (a rate limit with a reset time included).
    failure: Option<Failure>,
    /// The agent is rate-limited until then.
    rate_limited_until: Option<SystemTime>,
    /// The agent's words for its rate limit (its exit and error), when it is rate-limited.
    rate_limit_words: String,
    /// The `fallback` agent that runs the next iteration meanwhile, when one does.
    fallback: Option<String>,
}

impl Run {
    fn new(mut engine: Engine) -> Self {
        let tasks = engine.tasks.take();
        let task_default = tasks.as_ref().and_then(|t| t.default_max_iterations());
        let options = &engine.options;
        Self {
            settings: Settings::of(options, task_default),
            containment: Containment::start(options.subreaper),
            sandbox: None,
            child_setup: None,
            tasks: Tasks::new(tasks),
            run_cost: RunCost::default(),
            agent_run: AgentRun::default(),
            agent_started: false,
            session: None,
            session_writer: None,
            prompt_copies: crate::logs::PromptCopies::default(),
            spare_files: crate::logs::SpareFiles::default(),
            elapsed_before: Duration::ZERO,
            agents: crate::fallback::Roster::new(&options.file.config),
            started: Instant::now(),
            interrupts: Interrupts::default(),
            tally: Tally::default(),
            state_wait: None,
            holding: None,
            prompt_note: None,
            state_placeholders: std::collections::BTreeMap::new(),
            ralph_file_abs: std::fs::canonicalize(&options.ralph_file)
                .unwrap_or_else(|_| options.ralph_file.clone())
                .display()
                .to_string(),
            source: options
                .reload
                .then(|| std::fs::read_to_string(&options.ralph_file).ok())
                .flatten(),
            attempts: (!options.file.config.done_when.is_empty())
                .then(|| Attempts::new(options.file.config.convergence.clone())),
            engine,
        }
    }

    fn emit(&mut self, kind: EventKind) {
        emit(&mut self.engine.sinks, &self.engine.options.run_id, kind);
    }

    /// A problem that does not stop the loop, for every sink to see (not only `tracing`).
    fn warn(&mut self, kind: WarningKind, message: String) {
        self.emit(EventKind::Warning { kind, message });
    }

    async fn run(mut self) -> Result<RunOutcome, EngineError> {
        self.start_sandbox()?;
        // Problems before `RUN_STARTED`, emitted right after it: events.jsonl's copy is not
        // open yet, and `RUN_STARTED` comes first.
        let mut early_warnings = std::mem::take(&mut self.engine.options.warnings);
        early_warnings.extend(
            (self.containment.take_warning()).map(|warning| (WarningKind::Containment, warning)),
        );
        if let Some(dir) = &self.engine.options.log_dir {
            if let Err(err) = logs::create_run_dir(dir) {
                early_warnings.push((
                    WarningKind::NotWritten,
                    format!(
                        "cannot create the log folder {}: {err}; going on without logs",
                        dir.display()
                    ),
                ));
                self.engine.options.log_dir = None;
            }
        }
        if let (Some(claim), Some(dir)) = (&mut self.engine.claim, &self.engine.options.log_dir) {
            early_warnings.extend(
                (claim.record_start(&self.engine.options.cwd, dir))
                    .into_iter()
                    .map(|warning| (WarningKind::NotWritten, warning)),
            );
        }
        if let Some(dir) = &self.engine.options.log_dir {
            let resuming = self.engine.options.resume.is_some();
            match logs::events_file(dir, resuming) {
                Ok((copy, path)) => self.engine.sinks.push(Box::new(
                    crate::JsonLinesSink::new(copy).named(path.display().to_string()),
                )),
                Err(warning) => early_warnings.push((WarningKind::NotWritten, warning)),
            }
        }
        let config = &self.engine.options.file.config;
        let started = EventKind::RunStarted {
            events_version: ralph_events::EVENTS_VERSION,
            ralph_file: self.engine.options.ralph_file.display().to_string(),
            agent: config.agent.clone(),
            max_iterations: self.settings.max_iterations,
            idle: config.idle.map(|p| {
                IdleSummary::new(
                    millis(p.delay),
                    p.backoff,
                    millis(p.max_delay),
                    p.max.map(millis),
                )
            }),
            max_cost_usd: self.settings.max_cost,
            max_runtime_ms: self.settings.max_runtime.map(millis),
        };
        let resumed = self.resume();
        self.emit(started);
        for (kind, warning) in early_warnings {
            self.warn(kind, warning);
        }
        if let Some(reason) = self.resumed(resumed).await {
            return Ok(self.finish(reason));
        }

        // What the task source waits for, while it does.
        let mut task_waiting: Option<String> = None;
        // Whether the hold going on was announced (`WAIT_STARTED`, once per hold).
        let mut hold_announced = false;
        let reason = loop {
            if let Some(max) = self.settings.max_iterations {
                if self.tally.iteration >= max {
                    break EndReason::MaxIterations;
                }
            }
            // Interrupts that came while nothing could take them (after a process ended, while
            // its iteration was being wound up): they were meant for the iteration that is over,
            // not for a new one.
            let interactive = self
                .settings
                .pty
                .is_some_and(|pty| pty.mode == PtyMode::Interactive);
            // One that came while the task source ran (a revert, a commit: synchronous work)
            // is still on its way: the runtime's driver must see it, then the task forwarding
            // it run. Each yield lets one of those happen.
            for _ in 0..2 {
                tokio::task::yield_now().await;
            }
            while let Ok(signal) = self.engine.signals.try_recv() {
                let between = Phase::Between { interactive };
                self.interrupts.receive(signal, between, Instant::now());
            }
            if self.interrupts.stop_now.is_some() || self.interrupts.stop_requested {
                break EndReason::Interrupted;
            }
            if let Some(reason) = self.budget_spent() {
                break reason;
            }
            if let Some((marker, hold)) = self.holding.take() {
                let announce = !std::mem::replace(&mut hold_announced, true);
                match self.hold_step(&marker, &hold, announce).await {
                    HoldVerdict::Hold => {
                        self.holding = Some((marker, hold));
                        continue;
                    }
                    HoldVerdict::Stop(reason) => break reason,
                    HoldVerdict::Release => hold_announced = false,
                }
                // A first Ctrl+C during the handler's check: its answer is in, the loop stops.
                if self.interrupts.stop_now.is_some() || self.interrupts.stop_requested {
                    break EndReason::Interrupted;
                }
            }
            let mut events = Vec::new();
            let not_yet = self.tasks.begin(&mut events);
            events.into_iter().for_each(|e| self.emit(e));
            match not_yet {
                None => task_waiting = None,
                Some(NotYet::End(reason)) => break reason,
                Some(NotYet::Wait(mut wait)) => {
                    // A source with nothing to give that asks again at once would spin.
                    wait.poll = wait.poll.max(MIN_POLL);
                    // Said once per stretch of waiting for the same thing; every look after
                    // is a quiet countdown.
                    let announce =
                        (task_waiting.as_ref() != Some(&wait.why)).then(|| Some(wait.why.clone()));
                    // `ralph status` reads what it waits for from the session.
                    self.save_session(
                        false,
                        Some(PlannedWait::new(
                            WaitReason::Task,
                            millis(wait.poll),
                            SystemTime::now() + wait.poll,
                            Some(wait.why.clone()),
                        )),
                    );
                    task_waiting = Some(wait.why);
                    if let Some(reason) = self
                        .wait_saying(self.tally.iteration, WaitReason::Task, wait.poll, announce)
                        .await
                    {
                        break reason;
                    }
                    continue;
                }
            }
            self.tally.iteration += 1;
            let iteration = self.tally.iteration;
            if self.engine.options.reload && iteration > 1 {
                self.reload(iteration);
            }
            self.choose_agent(iteration);
            self.save_session(true, None);
            let before = self.containment.iteration_started();
            let decision = self.iteration(iteration).await;
            let warnings = self
                .containment
                .iteration_ended(before, self.engine.options.kill_grace)
                .await;
            for warning in warnings {
                self.warn(WarningKind::Containment, warning);
            }
            self.report_denials(iteration, None);
            let decision = match decision {
                Ok(decision) => decision,
                Err(err) => {
                    // A failed run that ends the loop, said as any other is: no next run.
                    let next = self.after_agent(Next::Stop(EndReason::AgentFailed));
                    self.report_agent_run(iteration, &next);
                    self.finish(EndReason::AgentFailed);
                    return Err(err);
                }
            };
            if self.interrupts.stop_now.is_some() {
                break EndReason::Interrupted;
            }
            let decision = self.after_agent(decision);
            let planned = self.planned_wait(&decision);
            let limits = Limits {
                stop_requested: self.interrupts.stop_requested,
                last_iteration: self.settings.max_iterations == Some(iteration),
                budget_spent: self.budget_spent(),
            };
            let decision = step::limit_step(decision, limits);
            self.report_agent_run(iteration, &decision);
            self.step_session(planned);
            let (delay, reason) = match decision {
                Next::Stop(reason) => break reason,
                Next::Wait(delay, reason) => (delay, reason),
                Next::Continue => (self.settings.delay, WaitReason::Delay),
            };
            if !delay.is_zero() {
                if let Some(reason) = self.wait(iteration, reason, delay).await {
                    break reason;
                }
            }
        };
        Ok(self.finish(reason))
    }

    /// A wait of `reason` lasted `time`: idle waits add up to `RUN_ENDED`'s `idle_ms`.
    fn waited(&mut self, reason: WaitReason, time: Duration) {
        if reason == WaitReason::Idle {
            self.tally.idle_time += time;
        }
    }

    /// The budget (`max_cost`, `max_runtime`) that is spent, if one is.
    fn budget_spent(&self) -> Option<EndReason> {
        crate::outcome::budget_spent(
            self.settings.max_cost,
            self.tally.cost_usd(),
            self.settings.max_runtime,
            self.elapsed(),
        )
    }

    /// Folds the last agent run's failure or rate limit into what the iteration decided: a
    /// rate limit waits for its reset, a failure backs off (or ends the loop at
    /// `failure.max_consecutive`), a run that did not fail ends the failure streak. An ending the
    /// iteration reached stands.
    fn after_agent(&mut self, next: Next) -> Next {
        let run = &mut self.agent_run;
        self.tally.last_failed = run.failure.is_some();
        let agent = if let Some(until) = run.rate_limited_until {
            // With fallback agents, another may run the next iteration at once.
            let now = SystemTime::now();
            match self.agents.limited(until, now) {
                wait if wait.is_zero() => {
                    run.fallback = self.agents.next_other(now).map(str::to_owned);
                    AgentFacts::Switching
                }
                wait => AgentFacts::RateLimited(wait.min(self.settings.rate_limit_max_wait)),
            }
        } else if run.failure.is_none() {
            self.tally.consecutive_failures = 0;
            AgentFacts::Succeeded
        } else {
            let mut streak = FailureStreak::resumed(self.tally.consecutive_failures);
            let decision = match self.engine.failure_backoff.as_mut() {
                Some(backoff) => streak.record_failure_by(backoff.as_mut()),
                None => streak.record_failure(&self.settings.failure),
            };
            self.tally.consecutive_failures = streak.consecutive();
            AgentFacts::Failed(decision)
        };
        step::agent_step(next, agent, self.settings.delay)
    }

    /// `ITERATION_FAILED` or `RATE_LIMITED` for the last agent run, with the wait `next` holds
    /// (none when the loop ends).
    fn report_agent_run(&mut self, iteration: u64, next: &Next) {
        let run = std::mem::take(&mut self.agent_run);
        let wait = match next {
            Next::Wait(delay, _) => Some(millis(*delay)),
            Next::Continue => Some(millis(self.settings.delay)),
            Next::Stop(_) => None,
        };
        if let Some(until) = run.rate_limited_until {
            self.emit(EventKind::RateLimited {
                iteration,
                until,
                wait_ms: wait,
                why: run.rate_limit_words,
                fallback: run.fallback,
            });
        } else if let Some(failure) = run.failure {
            self.emit(EventKind::IterationFailed {
                iteration,
                consecutive_failures: self.tally.consecutive_failures,
                failure: failure.to_string(),
                failure_kind: Some(failure.kind()),
                next_delay_ms: wait,
            });
        }
    }

    fn finish(&mut self, reason: EndReason) -> RunOutcome {
        let reason = match reason {
            // Every stop path says `Interrupted`; which interrupt it was names the ending.
            EndReason::Interrupted if self.interrupts.stop_now == Some(InterruptSignal::Cancel) => {
                EndReason::Cancelled
            }
            EndReason::MaxIterations => {
                let mut events = Vec::new();
                let reason = self.tasks.limit_reached(&mut events);
                events.into_iter().for_each(|e| self.emit(e));
                match reason {
                    EndReason::MaxIterations if self.tally.last_failed => {
                        EndReason::MaxIterationsLastFailed
                    }
                    other => other,
                }
            }
            other => other,
        };
        let exit_code = outcome::exit_code(
            &reason,
            self.interrupts.stop_now.or(
                // A first Ctrl+C that let the iteration finish is still a SIGINT ending.
                self.interrupts
                    .stop_requested
                    .then_some(InterruptSignal::Int),
            ),
        );
        self.session_ended(&reason, exit_code);
        let converged = matches!(
            reason,
            EndReason::Converged
                | EndReason::Task {
                    converged: true,
                    ..
                }
        );
        self.emit(EventKind::RunEnded {
            reason: reason.clone(),
            iterations: self.tally.iteration,
            idle_iterations: self.tally.idle_iterations,
            idle_ms: millis(self.tally.idle_time),
            exit_code,
            outcome: self.attempts.as_ref().map(|a| a.outcome(converged)),
            flake_retries: self.attempts.as_ref().map(Attempts::flake_retries),
            task: self.tasks.summary(),
            cost_usd: self.tally.cost_usd(),
            num_turns: self.tally.num_turns(),
            usage: self.tally.usage.clone(),
        });
        RunOutcome {
            resumable: crate::session::resumable(&reason),
            reason,
            exit_code,
            iterations: self.tally.iteration,
            idle_iterations: self.tally.idle_iterations,
            idle_time: self.tally.idle_time,
            run_id: self.engine.options.run_id.clone(),
            log_dir: self.engine.options.log_dir.clone(),
            usage: self.tally.usage.clone(),
            cost_usd: self.tally.cost_usd(),
        }
    }
}
