//! Events: everything the engine has to say, as typed values handed to [`EventSink`]s.
//!
//! The engine never prints. A terminal renderer, the JSON Lines writer and an embedder's own
//! sink all see the same events.

pub use ralph_agents::Stream;
pub use ralph_process::Termination;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::outcome::EndReason;
use crate::task::TaskEvent;
use ralph_agents::Usage;

/// The version of the event format written in `RUN_STARTED`. Within a version, new event
/// types and new fields may appear; no field is removed, renamed or changes its meaning or type.
/// 2: story events come from the task source, `max_iterations_work_left`, `WARNING`.
pub const EVENTS_VERSION: u32 = 2;

/// One event of a run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// When it happened (RFC 3339 UTC with milliseconds when serialized).
    #[serde(serialize_with = "serialize_ts")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub ts: SystemTime,
    /// The run it belongs to.
    pub run_id: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

fn serialize_ts<S: serde::Serializer>(ts: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_millis(*ts))
}

/// What happened. Serialized with a `type` field in SCREAMING_SNAKE_CASE.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum EventKind {
    /// The loop is about to run its first iteration.
    RunStarted {
        /// The version of the event format, [`EVENTS_VERSION`]: within one, events and fields
        /// are only added (`docs/events.md` has the promise).
        events_version: u32,
        /// The RALPH.md path as given.
        ralph_file: String,
        /// The agent command line.
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
        iteration: u64,
        /// How it stopped: its `RUN_ENDED` reason, or `killed` when it had none (a crash,
        /// `kill -9`, a reboot).
        previous_reason: String,
    },
    /// An iteration begins.
    IterationStarted {
        /// 1-based iteration number.
        iteration: u64,
        /// The fields the task source gives the iteration's task ([`Task::fields`]; story
        /// mode: `story_id` and `attempt`), written flat after `iteration`.
        ///
        /// [`Task::fields`]: crate::Task::fields
        #[serde(flatten)]
        task: serde_json::Map<String, serde_json::Value>,
    },
    /// One of `commands` finished.
    CommandFinished {
        /// The iteration it ran in.
        iteration: u64,
        /// The command's name.
        name: String,
        /// Its exit code; `None` when killed by a signal.
        exit_code: Option<i32>,
        /// How long it ran.
        duration_ms: u64,
        /// Whether it was killed for running past its timeout.
        timed_out: bool,
    },
    /// The agent finished an iteration.
    IterationEnded {
        /// The iteration.
        iteration: u64,
        /// The agent's exit code; `None` when it ended by a signal.
        exit_code: Option<i32>,
        /// The signal that ended the agent, if any.
        signal: Option<i32>,
        /// How long the agent ran.
        duration_ms: u64,
        /// Whether the agent was killed for running past its timeout.
        timed_out: bool,
        /// How the agent ended.
        termination: Termination,
        /// The iteration's state: the name of the last state marker, if any.
        state: Option<String>,
        /// Every marker found, in order.
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
        failed: bool,
        /// Why it failed, in words; `None` when it did not.
        failure: Option<String>,
    },
    /// The agent run failed (after `ITERATION_ENDED`): the loop backs off, or ends at
    /// `failure.max_consecutive`.
    IterationFailed {
        /// The iteration.
        iteration: u64,
        /// Failed runs in a row, this one included.
        consecutive_failures: u64,
        /// Why it failed, in words.
        failure: String,
        /// The wait before the next run; `None` when the loop ends.
        next_delay_ms: Option<u64>,
    },
    /// The agent said it is rate-limited until a given time: the loop waits until then
    /// (at most `rate_limit.max_wait`). Not a failure.
    RateLimited {
        /// The iteration.
        iteration: u64,
        /// When the limit resets, as the agent said (RFC 3339 UTC).
        #[serde(serialize_with = "serialize_ts")]
        #[cfg_attr(feature = "schema", schemars(with = "String"))]
        until: SystemTime,
        /// The wait before the next run; `None` when the loop ends instead.
        wait_ms: Option<u64>,
    },
    /// The agent is retrying a request on its own (Claude Code's `api_retry`, Codex's
    /// `Reconnecting... 1/5`): it may stay silent for minutes meanwhile. Not a failure.
    AgentRetrying {
        /// The iteration.
        iteration: u64,
        /// Why, in the agent's words (`529 overloaded_error`, `stream disconnected ...`).
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
        iteration: u64,
        /// Consecutive idle iterations, this one included.
        consecutive_idle: u64,
        /// Idle time of the current streak.
        idle_elapsed_ms: u64,
        /// The wait before the next iteration; `None` when the idle limit stops the loop.
        next_delay_ms: Option<u64>,
    },
    /// An iteration ended in a state declared in RALPH.md (`states`): its hook ran, if it has
    /// one, and the loop does what `then` says.
    StateHandled {
        /// The iteration.
        iteration: u64,
        /// The state's name.
        state: String,
        /// `stop`, `continue` or `wait`.
        then: String,
        /// The hook's exit code; `None` without a hook, or when it ended by a signal, timed out
        /// or could not start.
        hook_exit_code: Option<i32>,
    },
    /// The `done_when` checks ran after an agent run: one convergence attempt.
    AttemptEnded {
        /// 1-based attempt number.
        attempt: u64,
        /// The attempt cap (`convergence.max_attempts`).
        max_attempts: u64,
        /// The iteration the attempt ran in.
        iteration: u64,
        /// Agent run and checks together.
        duration_ms: u64,
        /// Whether every check passed.
        ok: bool,
        /// Each check, in `done_when` order.
        results: Vec<CheckResult>,
        /// The wait before this attempt; `None` for the first.
        backoff_ms: Option<u64>,
    },
    /// The RALPH.md changed while the loop ran; this iteration uses the new version.
    ConfigReloaded {
        /// The iteration about to run.
        iteration: u64,
    },
    /// The RALPH.md changed but is invalid; the loop goes on with the previous version.
    ConfigRejected {
        /// The iteration about to run.
        iteration: u64,
        /// Every error, rendered `FILE:LINE:COL: FIELD: MESSAGE`.
        errors: Vec<String>,
    },
    /// The loop starts waiting.
    WaitStarted {
        /// The iteration just finished.
        iteration: u64,
        /// Why it waits.
        reason: WaitReason,
        /// How long it means to wait.
        delay_ms: u64,
    },
    /// A wait was cut short by Ctrl+C. The next run starts after a grace period, during which
    /// a second Ctrl+C stops the loop without starting it.
    WaitSkipped {
        /// The iteration just finished.
        iteration: u64,
        /// The grace period before the next run starts.
        grace_ms: u64,
    },
    /// Ctrl+C while an iteration runs (a command, the agent or a check): the loop stops after
    /// this iteration.
    StopRequested {
        /// The running iteration.
        iteration: u64,
    },
    /// Something went wrong that does not stop the loop (a check or command that could not
    /// start, a hook that failed, a malformed marker, a log that could not be written). A
    /// terminal shows it as `warning: MESSAGE`.
    Warning {
        /// What went wrong, in words.
        message: String,
    },
    /// The run is over.
    RunEnded {
        /// Why it ended.
        reason: EndReason,
        /// Iterations run.
        iterations: u64,
        /// Idle iterations among them.
        idle_iterations: u64,
        /// Total time spent waiting because of idleness.
        idle_ms: u64,
        /// ralph's exit code.
        exit_code: i32,
        /// With `done_when`: `clean`, `clean_with_flake` or `failed`.
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<Outcome>,
        /// With `done_when`: attempts that converged after an earlier attempt failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        flake_retries: Option<u64>,
        /// The task source's fields ([`TaskSource::summary`]; story mode: `stories`), written
        /// flat after `flake_retries`.
        ///
        /// [`TaskSource::summary`]: crate::TaskSource::summary
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
    /// and fields, written flat like the engine's own.
    #[serde(untagged)]
    Task(TaskEvent),
}

/// One `done_when` check's result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// # use ralph_engine::CheckResult;
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

/// How a converging run went.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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
}

/// A marker as reported in [`EventKind::IterationEnded`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MarkerRecord {
    /// Marker kind (`state`).
    pub kind: String,
    /// Marker name (`idle`).
    pub name: String,
    /// Attributes, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(default))]
    pub attrs: Vec<(String, String)>,
}

/// A wait in progress, reported about once a second so a terminal can count down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitProgress {
    /// Why the loop waits.
    pub reason: WaitReason,
    /// The streak the state's handler gave with the wait ([`StateWait::streak`]: consecutive
    /// idle iterations for `idle`'s); 0 for every other wait.
    ///
    /// [`StateWait::streak`]: crate::StateWait::streak
    pub consecutive_idle: u64,
    /// The whole wait.
    pub total: std::time::Duration,
    /// What is left of it.
    pub remaining: std::time::Duration,
}

/// Receives a run's events. The terminal renderer, the JSON Lines writer and an embedder's own
/// sinks are peers.
pub trait EventSink: Send {
    /// Called for every event, in order.
    fn event(&mut self, event: &Event);

    /// Called with the agent's output as it arrives. Most sinks ignore it.
    fn output(&mut self, iteration: u64, stream: Stream, bytes: &[u8]) {
        let _ = (iteration, stream, bytes);
    }

    /// Called when a wait starts and about once a second during it.
    fn wait_progress(&mut self, progress: &WaitProgress) {
        let _ = progress;
    }

    /// Called once a wait is over (elapsed or skipped), so a countdown can be erased.
    fn wait_finished(&mut self) {}

    /// A failure this sink cannot report to itself (its file could not be written, say), in
    /// words that name the sink; taken once. The engine asks after every event and tells the
    /// other sinks as a `WARNING`. `None`, the default: nothing failed.
    fn take_failure(&mut self) -> Option<String> {
        None
    }
}

/// Writes events as JSON Lines: one object per line, each line written whole and flushed at once,
/// so a reader (or a crash) never sees half an event except possibly the last.
pub struct JsonLinesSink<W: std::io::Write + Send> {
    out: W,
    line: Vec<u8>,
    failed: bool,
    /// What `out` is, for the warning when it fails.
    name: String,
    /// The failure, until [`EventSink::take_failure`] takes it.
    failure: Option<String>,
}

impl<W: std::io::Write + Send> JsonLinesSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        Self {
            out,
            line: Vec::with_capacity(512),
            failed: false,
            name: "the JSON Lines output".to_owned(),
            failure: None,
        }
    }

    /// Names what `out` is (a path, `stdout`) for the warning if writing to it fails.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Whether a write has failed; later events are dropped rather than interleaved half-written.
    pub fn failed(&self) -> bool {
        self.failed
    }
}

impl<W: std::io::Write + Send> EventSink for JsonLinesSink<W> {
    fn event(&mut self, event: &Event) {
        if self.failed {
            return;
        }
        self.line.clear();
        if serde_json::to_writer(&mut self.line, event).is_err() {
            return;
        }
        self.line.push(b'\n');
        let written = self
            .out
            .write_all(&self.line)
            .and_then(|()| self.out.flush());
        if let Err(err) = written {
            self.failure = Some(format!(
                "cannot write events to {}: {err}; no more are written there",
                self.name
            ));
            self.failed = true;
        }
    }

    fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }
}

#[cfg(test)]
mod tests {
    use super::{EventSink, JsonLinesSink, exit_status};

    /// A disk that is full.
    struct Full;

    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_json_lines_sink_that_cannot_write_gives_its_failure_once_naming_itself() {
        let mut sink = JsonLinesSink::new(Full).named("events.jsonl");
        assert_eq!(sink.take_failure(), None);
        let event = super::Event {
            ts: std::time::SystemTime::UNIX_EPOCH,
            run_id: "r".to_owned(),
            kind: super::EventKind::StopRequested { iteration: 1 },
        };
        sink.event(&event);
        sink.event(&event);
        let failure = sink.take_failure().expect("the write failed");
        assert!(
            failure.starts_with("cannot write events to events.jsonl: "),
            "{failure}"
        );
        assert!(sink.failed());
        assert_eq!(sink.take_failure(), None, "once");
    }

    #[test]
    fn exit_status_words_a_code_a_signal_or_an_unknown_kill() {
        assert_eq!(exit_status(Some(3), None), "exit 3");
        assert_eq!(exit_status(Some(0), Some(9)), "exit 0");
        assert_eq!(exit_status(None, Some(9)), "killed by signal 9");
        assert_eq!(exit_status(None, None), "killed");
    }
}
