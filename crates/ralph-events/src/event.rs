//! A run's events: what the engine writes to `events.jsonl`, one JSON object per line, and what
//! each line reads back into.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::end::EndReason;
use crate::process::Termination;
use crate::task_event::TaskEvent;
use crate::time::{deserialize_ts, optional_ts, serialize_ts};
use crate::usage::Usage;

/// The version of the event format written in `RUN_STARTED`. Within a version, new event
/// types and new fields may appear; no field is removed, renamed or changes its meaning or type.
/// 2: story events come from the task source, `max_iterations_work_left`, `WARNING`.
pub const EVENTS_VERSION: u32 = 2;

/// One event of a run: what the engine writes, one JSON object per line, and what a line reads
/// back into (`serde_json::from_str::<Event>`), a task source's events included.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When it happened (RFC 3339 UTC with milliseconds when serialized).
    #[serde(serialize_with = "serialize_ts", deserialize_with = "deserialize_ts")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub ts: SystemTime,
    /// The run it belongs to.
    pub run_id: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// The format's version a `RUN_STARTED` without `events_version` was written in.
fn first_events_version() -> u32 {
    1
}

/// What happened. Serialized with a `type` field in SCREAMING_SNAKE_CASE, and read back from
/// one: an engine event of this version, or any other `type` as a [`EventKind::Task`] event
/// with its fields (a task source's, or a later version's).
///
/// Written then read, every kind gives back the same value but for a `RUN_ENDED` reason the
/// events name only by its words: a task source's or a state's ending reads back as
/// [`EndReason::Other`], and [`EndReason::MaxIterationsLastFailed`] as itself only through
/// its exit code.
///
/// Serialize and deserialize through the [`Serialize`] and [`Deserialize`] traits. The
/// associated functions `EventKind::serialize` and `EventKind::deserialize` that rustdoc also
/// lists are serde's derived form, which the trait impls wrap: they know no task source's event.
/// Serde's `remote` derive gives them the enum's own visibility; hiding them would take a
/// second copy of every variant, kept in step by hand.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// The derived code is `EventKind::serialize`/`deserialize`; the trait impls below add what a
// derive cannot say: a task source's events written as they are, and read from any other type.
#[serde(remote = "Self")]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum EventKind {
    /// The loop is about to run its first iteration.
    RunStarted {
        /// The version of the event format, [`EVENTS_VERSION`]: within one, events and fields
        /// are only added (`docs/events.md` has the promise). Read as 1 when missing: version
        /// 1 did not write it.
        #[serde(default = "first_events_version")]
        events_version: u32,
        /// The RALPH.md path as given.
        #[serde(default)]
        ralph_file: String,
        /// The agent command line.
        #[serde(default)]
        agent: String,
        /// The iteration cap, if any.
        max_iterations: Option<u64>,
        /// The idle policy, if idle handling is on.
        idle: Option<IdleSummary>,
        /// The cost budget in US dollars (`max_cost`), if any.
        max_cost_usd: Option<f64>,
        /// The runtime budget (`max_runtime`), if any.
        max_runtime_ms: Option<u64>,
    },
    /// A stopped run goes on (`ralph run --resume`): the first event of the resumed part,
    /// before its `RUN_STARTED`.
    RunResumed {
        /// The last iteration the run started before it stopped; the next is one more.
        #[serde(default)]
        iteration: u64,
        /// How it stopped: its `RUN_ENDED` reason, or `killed` when it had none (a crash,
        /// `kill -9`, a reboot).
        #[serde(default)]
        previous_reason: String,
    },
    /// An iteration begins.
    IterationStarted {
        /// 1-based iteration number.
        #[serde(default)]
        iteration: u64,
        /// The fields the task source gives the iteration's task (`ralph_engine::Task::fields`;
        /// story mode: `story_id` and `attempt`), written flat after `iteration`.
        #[serde(flatten)]
        task: serde_json::Map<String, serde_json::Value>,
    },
    /// One of `commands` finished.
    CommandFinished {
        /// The iteration it ran in.
        #[serde(default)]
        iteration: u64,
        /// The command's name.
        #[serde(default)]
        name: String,
        /// Its exit code; `None` when killed by a signal.
        exit_code: Option<i32>,
        /// How long it ran.
        #[serde(default)]
        duration_ms: u64,
        /// Whether it was killed for running past its timeout.
        #[serde(default)]
        timed_out: bool,
    },
    /// The agent finished an iteration.
    IterationEnded {
        /// The iteration.
        #[serde(default)]
        iteration: u64,
        /// The agent's exit code; `None` when it ended by a signal.
        exit_code: Option<i32>,
        /// The signal that ended the agent, if any.
        signal: Option<i32>,
        /// How long the agent ran.
        #[serde(default)]
        duration_ms: u64,
        /// Whether the agent was killed for running past its timeout.
        #[serde(default)]
        timed_out: bool,
        /// How the agent ended.
        termination: Termination,
        /// The iteration's state: the name of the last state marker, if any.
        state: Option<String>,
        /// Every marker found, in order.
        #[serde(default)]
        markers: Vec<MarkerRecord>,
        /// The iteration's log file, if logs are being written.
        log_file: Option<String>,
        /// Cost, tokens and turns, when the agent's adapter reports them (every JSON adapter).
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Whether the run failed: a non-zero exit, a signal ralph did not send, a timeout, an
        /// agent that could not start, or an error its adapter reported. A rate limit with a
        /// reset time is a wait, not a failure. When `done_when` checks judge the iteration,
        /// only an agent that could not start and a rate limit fail.
        #[serde(default)]
        failed: bool,
        /// Why it failed, in words; `None` when it did not.
        failure: Option<String>,
        /// Why it failed, by kind: what a program branches on. Absent when it did not fail,
        /// and in a line written before 0.4.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_kind: Option<FailureKind>,
    },
    /// The agent run failed (after `ITERATION_ENDED`): the loop backs off, or ends at
    /// `failure.max_consecutive`.
    IterationFailed {
        /// The iteration.
        #[serde(default)]
        iteration: u64,
        /// Failed runs in a row, this one included.
        #[serde(default)]
        consecutive_failures: u64,
        /// Why it failed, in words.
        #[serde(default)]
        failure: String,
        /// Why it failed, by kind: what a program branches on. Absent in a line written
        /// before 0.4.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_kind: Option<FailureKind>,
        /// The wait before the next run; `None` when the loop ends.
        next_delay_ms: Option<u64>,
    },
    /// The agent said it is rate-limited until a given time: the loop waits until then
    /// (at most `rate_limit.max_wait`). Not a failure.
    RateLimited {
        /// The iteration.
        #[serde(default)]
        iteration: u64,
        /// When the limit resets, as the agent said (RFC 3339 UTC).
        #[serde(serialize_with = "serialize_ts", deserialize_with = "deserialize_ts")]
        #[cfg_attr(feature = "schema", schemars(with = "String"))]
        until: SystemTime,
        /// The wait before the next run; `None` when the loop ends instead.
        wait_ms: Option<u64>,
        /// The agent's words for it, with its exit (`exit 1: You've hit your session limit ·
        /// resets 9:59pm (UTC)`); empty in events from before ralph 0.4.
        #[serde(default)]
        why: String,
        /// The command line of the `fallback` agent that runs the next iteration meanwhile
        /// (`AGENT_SWITCHED` follows); absent when the loop waits for the reset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fallback: Option<String>,
    },
    /// Another agent runs the next iteration (`fallback`): the one that ran is rate-limited
    /// with a reset further than `fallback_after` away, or an agent earlier in the list
    /// (`agent` first) is no longer limited. The prompt is the same; nothing of the other
    /// agent's session goes along.
    AgentSwitched {
        /// The iteration the agent `to` runs.
        #[serde(default)]
        iteration: u64,
        /// The command line of the agent that ran until now, as written.
        #[serde(default)]
        from: String,
        /// The command line of the agent that runs now.
        #[serde(default)]
        to: String,
        /// Why.
        #[serde(default)]
        why: SwitchReason,
        /// When `from`'s rate limit resets (RFC 3339 UTC), when `from` is limited.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "optional_ts")]
        #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
        until: Option<SystemTime>,
    },
    /// The agent is retrying a request on its own (Claude Code's `api_retry`, Codex's
    /// `Reconnecting... 1/5`): it may stay silent for minutes meanwhile. Not a failure.
    AgentRetrying {
        /// The iteration.
        #[serde(default)]
        iteration: u64,
        /// Why, in the agent's words (`529 overloaded_error`, `stream disconnected ...`).
        #[serde(default)]
        reason: String,
        /// Which retry this is, from 1, when the agent says.
        attempt: Option<u64>,
        /// How many retries it makes at most, when the agent says.
        max_attempts: Option<u64>,
        /// How long it waits before this retry, when the agent says.
        delay_ms: Option<u64>,
    },
    /// An iteration ended idle, with the `idle` handler on: the loop waits before the next one,
    /// or stops when the wait would pass the idle limit.
    IterationIdle {
        /// The iteration.
        #[serde(default)]
        iteration: u64,
        /// Consecutive idle iterations, this one included.
        #[serde(default)]
        consecutive_idle: u64,
        /// Idle time of the current streak.
        #[serde(default)]
        idle_elapsed_ms: u64,
        /// The wait before the next iteration; `None` when the idle limit stops the loop.
        next_delay_ms: Option<u64>,
    },
    /// An iteration ended in a state declared in RALPH.md (`states`): its hook ran, if it has
    /// one, and the loop does what `then` says.
    StateHandled {
        /// The iteration.
        #[serde(default)]
        iteration: u64,
        /// The state's name.
        #[serde(default)]
        state: String,
        /// `stop`, `continue`, `wait` or `hold` (one event per check while it holds).
        #[serde(default)]
        then: String,
        /// The hook's exit code; `None` without a hook, or when it ended by a signal, timed out
        /// or could not start.
        hook_exit_code: Option<i32>,
    },
    /// The `done_when` checks ran after an agent run: one convergence attempt.
    AttemptEnded {
        /// 1-based attempt number.
        #[serde(default)]
        attempt: u64,
        /// The attempt cap (`convergence.max_attempts`).
        #[serde(default)]
        max_attempts: u64,
        /// The iteration the attempt ran in.
        #[serde(default)]
        iteration: u64,
        /// Agent run and checks together.
        #[serde(default)]
        duration_ms: u64,
        /// Whether every check passed.
        #[serde(default)]
        ok: bool,
        /// Each check, in `done_when` order.
        #[serde(default)]
        results: Vec<CheckResult>,
        /// The wait before this attempt; `None` for the first.
        backoff_ms: Option<u64>,
    },
    /// The RALPH.md changed while the loop ran; this iteration uses the new version.
    ConfigReloaded {
        /// The iteration about to run.
        #[serde(default)]
        iteration: u64,
    },
    /// The RALPH.md changed but is invalid; the loop goes on with the previous version.
    ConfigRejected {
        /// The iteration about to run.
        #[serde(default)]
        iteration: u64,
        /// Every error, rendered `FILE:LINE:COL: FIELD: MESSAGE`.
        #[serde(default)]
        errors: Vec<String>,
    },
    /// The loop starts waiting.
    WaitStarted {
        /// The iteration just finished.
        #[serde(default)]
        iteration: u64,
        /// Why it waits.
        reason: WaitReason,
        /// How long it means to wait.
        #[serde(default)]
        delay_ms: u64,
        /// What the wait is for, in words, when the task source gave them (reason `task`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// A wait was cut short by Ctrl+C. The next run starts after a grace period, during which
    /// a second Ctrl+C stops the loop without starting it.
    WaitSkipped {
        /// The iteration just finished.
        #[serde(default)]
        iteration: u64,
        /// The grace period before the next run starts.
        #[serde(default)]
        grace_ms: u64,
    },
    /// Ctrl+C while an iteration runs (a command, the agent or a check): the loop stops after
    /// this iteration.
    StopRequested {
        /// The running iteration.
        #[serde(default)]
        iteration: u64,
    },
    /// The sandbox's proxy refused a connection the agent, a command or a check asked for: the
    /// host is not in `sandbox.network`.
    SandboxDenied {
        /// The iteration it happened in.
        #[serde(default)]
        iteration: u64,
        /// The host asked for, as asked.
        #[serde(default)]
        host: String,
        /// The port asked for.
        #[serde(default)]
        port: u16,
    },
    /// Something went wrong that does not stop the loop (a check or command that could not
    /// start, a hook that failed, a malformed marker, a log that could not be written). A
    /// terminal shows it as `warning: MESSAGE`.
    Warning {
        /// What went wrong, by kind: what a program branches on (the words may change).
        /// `other` in a line written before 0.4.
        #[serde(default)]
        kind: WarningKind,
        /// What went wrong, in words.
        #[serde(default)]
        message: String,
    },
    /// The run is over.
    RunEnded {
        /// Why it ended.
        reason: EndReason,
        /// Iterations run.
        #[serde(default)]
        iterations: u64,
        /// Idle iterations among them.
        #[serde(default)]
        idle_iterations: u64,
        /// Total time spent waiting because of idleness.
        #[serde(default)]
        idle_ms: u64,
        /// ralph's exit code.
        #[serde(default)]
        exit_code: i32,
        /// With `done_when`: `clean`, `clean_with_flake` or `failed`.
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<Outcome>,
        /// With `done_when`: attempts that converged after an earlier attempt failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        flake_retries: Option<u64>,
        /// The task source's fields (`ralph_engine::TaskSource::summary`; story mode:
        /// `stories`), written flat after `flake_retries`.
        #[serde(flatten)]
        task: serde_json::Map<String, serde_json::Value>,
        /// Total cost in US dollars of the iterations whose agent reported one.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// Total agent turns of the iterations whose agent reported them.
        #[serde(skip_serializing_if = "Option::is_none")]
        num_turns: Option<u64>,
        /// Every iteration's `usage`, summed (cost, tokens, turns, tool calls); absent when no
        /// agent reported any.
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// An event of the task source's own (ralph-escalation's `STORY_PASSED`, say): its `type`
    /// and fields, written flat like the engine's own. Read back, any `type` the engine does
    /// not write is one: a task source's, or a later version's.
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(!skip, untagged))]
    Task(TaskEvent),
}

/// Every `type` the engine writes itself: a plug's event may take none of them.
const ENGINE_EVENT_TYPES: [&str; 20] = [
    "RUN_STARTED",
    "RUN_RESUMED",
    "ITERATION_STARTED",
    "COMMAND_FINISHED",
    "ITERATION_ENDED",
    "ITERATION_FAILED",
    "RATE_LIMITED",
    "AGENT_RETRYING",
    "ITERATION_IDLE",
    "STATE_HANDLED",
    "ATTEMPT_ENDED",
    "CONFIG_RELOADED",
    "CONFIG_REJECTED",
    "WAIT_STARTED",
    "WAIT_SKIPPED",
    "STOP_REQUESTED",
    "WARNING",
    "SANDBOX_DENIED",
    "AGENT_SWITCHED",
    "RUN_ENDED",
];

impl EventKind {
    /// The event's `type` as written: `RUN_STARTED`, `ITERATION_ENDED`, ..., or a plug's own.
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::RunStarted { .. } => "RUN_STARTED",
            EventKind::RunResumed { .. } => "RUN_RESUMED",
            EventKind::IterationStarted { .. } => "ITERATION_STARTED",
            EventKind::CommandFinished { .. } => "COMMAND_FINISHED",
            EventKind::IterationEnded { .. } => "ITERATION_ENDED",
            EventKind::IterationFailed { .. } => "ITERATION_FAILED",
            EventKind::RateLimited { .. } => "RATE_LIMITED",
            EventKind::AgentRetrying { .. } => "AGENT_RETRYING",
            EventKind::IterationIdle { .. } => "ITERATION_IDLE",
            EventKind::StateHandled { .. } => "STATE_HANDLED",
            EventKind::AttemptEnded { .. } => "ATTEMPT_ENDED",
            EventKind::ConfigReloaded { .. } => "CONFIG_RELOADED",
            EventKind::ConfigRejected { .. } => "CONFIG_REJECTED",
            EventKind::WaitStarted { .. } => "WAIT_STARTED",
            EventKind::WaitSkipped { .. } => "WAIT_SKIPPED",
            EventKind::StopRequested { .. } => "STOP_REQUESTED",
            EventKind::Warning { .. } => "WARNING",
            EventKind::SandboxDenied { .. } => "SANDBOX_DENIED",
            EventKind::AgentSwitched { .. } => "AGENT_SWITCHED",
            EventKind::RunEnded { .. } => "RUN_ENDED",
            EventKind::Task(event) => event.type_name(),
        }
    }
}

impl std::fmt::Display for EventKind {
    /// The event's `type` ([`EventKind::as_str`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EventKind {
    /// A plug's event as the engine writes it: [`EventKind::Task`], or, for a type the engine
    /// writes itself, a `WARNING` naming `who` tried (a second `RUN_ENDED` would end the run
    /// for every reader).
    pub fn of_plug(event: TaskEvent, who: &str) -> EventKind {
        match ENGINE_EVENT_TYPES.contains(&event.type_name()) {
            true => EventKind::Warning {
                kind: WarningKind::RefusedEvent,
                message: format!(
                    "{who} emitted a `{}` event, which only the engine writes; it was not written",
                    event.type_name()
                ),
            },
            false => EventKind::Task(event),
        }
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EventKind::Task(event) => event.serialize(s),
            kind => EventKind::serialize(kind, s),
        }
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let Some(serde_json::Value::String(type_name)) = fields.get("type").cloned() else {
            return Err(D::Error::missing_field("type"));
        };
        let line = serde_json::Value::Object(fields);
        match EventKind::deserialize(&line) {
            Ok(kind) => Ok(kind.with_exit_code_read()),
            // A type the engine does not write: the derived code names it as the variant it
            // did not know.
            Err(err)
                if err
                    .to_string()
                    .starts_with(&format!("unknown variant `{type_name}`")) =>
            {
                let serde_json::Value::Object(fields) = line else {
                    unreachable!("built as an object above")
                };
                Ok(EventKind::Task(TaskEvent::new(type_name, fields)))
            }
            Err(err) => Err(D::Error::custom(err)),
        }
    }
}

impl EventKind {
    /// A `RUN_ENDED` read back: its reason as the exit code tells it (the reason's words alone
    /// do not say a `max_iterations` ending failed, nor a task source's ending's code).
    fn with_exit_code_read(mut self) -> Self {
        if let EventKind::RunEnded {
            reason, exit_code, ..
        } = &mut self
        {
            match reason {
                EndReason::MaxIterations if *exit_code != 0 => {
                    *reason = EndReason::MaxIterationsLastFailed;
                }
                EndReason::Other {
                    exit_code: code, ..
                } => *code = *exit_code,
                _ => {}
            }
        }
        self
    }
}

/// One `done_when` check's result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
// Read leniently: a field a reader lacks reads as its default.
#[serde(default)]
pub struct CheckResult {
    /// The shell command.
    pub command: String,
    /// Its exit code; `None` when killed by a signal or not started.
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// For a failure: the last 4096 bytes of its output, stdout and stderr in the order written.
    pub tail: Option<String>,
    /// Whether more output came before the tail.
    pub truncated: bool,
    /// Whether it was stopped for running past `convergence.check_timeout`.
    pub timed_out: bool,
}

/// How a process ended, in the words ralph uses for it everywhere (events, the terminal,
/// warnings): `exit 3`, `killed by signal 9`, or `killed` when the signal is not known.
pub fn exit_status(exit_code: Option<i32>, signal: Option<i32>) -> String {
    match (exit_code, signal) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "killed".to_owned(),
    }
}

/// How many of a failing check's last lines people are shown: under its verdict on the
/// terminal, and in the report.
pub const CHECK_LINES_SHOWN: usize = 10;

impl CheckResult {
    /// The last [`CHECK_LINES_SHOWN`] lines of a failing check's output, as people read them
    /// (escape sequences removed, trailing blank lines dropped, long lines cut); none for a
    /// passing check or one that printed nothing.
    pub fn last_lines(&self) -> Vec<String> {
        self.tail.as_deref().map_or_else(Vec::new, |tail| {
            crate::tail::last_lines(tail, CHECK_LINES_SHOWN)
        })
    }

    /// Whether the check passed: exit code 0 within its time limit.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// How it ended, for people: `exit 101`, `timed out` or `killed`.
    ///
    /// ```
    /// # use ralph_events::CheckResult;
    /// let check = CheckResult {
    ///     command: "cargo test".into(),
    ///     exit_code: Some(101),
    ///     duration_ms: 2300,
    ///     tail: None,
    ///     truncated: false,
    ///     timed_out: false,
    /// };
    /// assert_eq!(check.status(), "exit 101");
    /// let hung = CheckResult { exit_code: None, timed_out: true, ..check };
    /// assert_eq!(hung.status(), "timed out");
    /// ```
    pub fn status(&self) -> String {
        match (self.timed_out, self.exit_code) {
            (true, _) => "timed out".to_owned(),
            (false, code) => exit_status(code, None),
        }
    }
}

/// What a [`EventKind::Warning`] is about. Serialized in snake_case; a kind a later version
/// writes, or none (a line written before 0.4), reads as [`Other`](Self::Other).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WarningKind {
    /// RALPH.md holds a setting that works, but likely not as meant.
    Config,
    /// A `commands` entry could not start.
    CommandNotStarted,
    /// A `done_when` check could not start: it counts as failed.
    CheckNotStarted,
    /// A state's hook failed, timed out, could not start, or was not run.
    HookFailed,
    /// The agent's output holds a marker that does not parse.
    MalformedMarker,
    /// The agent reported the state of a marker that nothing handles.
    UnhandledState,
    /// The agent or its adapter said something ralph cannot use (output that does not parse,
    /// a cost no run can have).
    Agent,
    /// A file of the run (a log, a copy of a prompt, the session file, the log folder or its
    /// lock) could not be written.
    NotWritten,
    /// An event sink (events.jsonl, an embedder's own) failed; the other sinks hear of it.
    SinkFailed,
    /// A plug (task source, state handler) emitted an event type only the engine writes; it
    /// was not written.
    RefusedEvent,
    /// A task source's own warning (ralph-engine's `TaskContext::warn`).
    TaskSource,
    /// A task source's or state handler's state in the session file did not read as its
    /// type: it starts afresh.
    UnreadableState,
    /// The agent's processes or its sandbox: processes left running, connections refused.
    Containment,
    /// A signal (Ctrl+C, SIGTERM, SIGHUP) cannot be watched: it ends ralph as it would any
    /// program, and the agent may be left running.
    Signals,
    /// Read back: a kind a later version writes, or none.
    #[default]
    #[serde(other)]
    Other,
}

/// Why an agent run failed (`failure_kind` of [`EventKind::IterationEnded`] and
/// [`EventKind::IterationFailed`]); `failure` says it in words. Serialized in snake_case; a kind
/// a later version writes reads as [`Other`](Self::Other).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// It exited non-zero.
    ExitStatus,
    /// A signal ralph did not send ended it.
    Signal,
    /// It ran past `timeout`.
    Timeout,
    /// It printed nothing for `idle_timeout` (on pipes).
    IdleTimeout,
    /// It retried more often than `failure.max_consecutive` allows.
    RetryLimit,
    /// It could not be started.
    NotStarted,
    /// It exited 0, but its adapter reported an error.
    ReportedError,
    /// It is rate-limited with no reset time to wait for, or one already past.
    RateLimited,
    /// Read back: a kind a later version writes.
    #[default]
    #[serde(other)]
    Other,
}

/// How a converging run went.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// Converged on the first attempt.
    Clean,
    /// Converged after an earlier attempt failed.
    CleanWithFlake,
    /// Did not converge.
    Failed,
}

/// The idle policy as reported in [`EventKind::RunStarted`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IdleSummary {
    /// First wait.
    pub delay_ms: u64,
    /// Multiplier per consecutive idle iteration.
    pub backoff: f64,
    /// Cap on a wait.
    pub max_delay_ms: u64,
    /// Cumulative idle limit.
    pub max_ms: Option<u64>,
}

impl IdleSummary {
    /// The idle policy of first wait `delay_ms`, growing by `backoff` up to `max_delay_ms`,
    /// stopping past `max_ms` of idle time.
    pub fn new(delay_ms: u64, backoff: f64, max_delay_ms: u64, max_ms: Option<u64>) -> Self {
        Self {
            delay_ms,
            backoff,
            max_delay_ms,
            max_ms,
        }
    }
}

/// Why another agent runs ([`EventKind::AgentSwitched`]).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SwitchReason {
    /// The agent that ran is rate-limited with a reset further than `fallback_after` away (or
    /// every agent is, and this one's reset comes first).
    RateLimited,
    /// The rate limit of an agent earlier in the list has reset: it runs again.
    LimitReset,
    /// Read back: a reason a later version writes, or none.
    #[default]
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Other,
}

impl SwitchReason {
    /// The reason as written in events: `rate_limited`, `limit_reset`.
    pub fn as_str(self) -> &'static str {
        match self {
            SwitchReason::RateLimited => "rate_limited",
            SwitchReason::LimitReset => "limit_reset",
            SwitchReason::Other => "other",
        }
    }
}

/// Why the loop waits.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WaitReason {
    /// A state's handler asked for a wait it calls idle (the built-in `idle` handler's).
    Idle,
    /// The frontmatter's `delay` between iterations.
    Delay,
    /// A state's handler asked for a wait (any other than an idle one).
    State,
    /// Backoff before the next convergence attempt.
    Retry,
    /// Backoff after a failed agent run.
    Failure,
    /// The agent is rate-limited: waiting for the reset.
    RateLimit,
    /// The task source waits for something outside the loop (a person's answer) and looks
    /// again after the wait.
    Task,
    /// Read back: a reason a later version writes. The engine never waits for it.
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Other,
}

impl WaitReason {
    /// The reason as written in events: `idle`, `delay`, `rate_limit`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::Idle => "idle",
            WaitReason::Delay => "delay",
            WaitReason::State => "state",
            WaitReason::Retry => "retry",
            WaitReason::Failure => "failure",
            WaitReason::RateLimit => "rate_limit",
            WaitReason::Task => "task",
            WaitReason::Other => "other",
        }
    }
}

/// A marker as reported in [`EventKind::IterationEnded`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MarkerRecord {
    /// Marker kind (`state`).
    pub kind: String,
    /// Marker name (`idle`).
    pub name: String,
    /// Attributes, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attrs: Vec<(String, String)>,
}

impl MarkerRecord {
    /// A marker `<!-- ralph:KIND NAME attrs... -->`.
    pub fn new(kind: String, name: String, attrs: Vec<(String, String)>) -> Self {
        Self { kind, name, attrs }
    }
}

#[cfg(test)]
mod tests;
