//! The session file: a run's state, saved in its folder so the run can go on after it stopped.
//!
//! The engine replaces `<log folder>/session.json` whole (temporary file, fsync, rename) when an
//! iteration starts, after every iteration (the task source's step included) and when the run
//! ends. A run stopped any way at all (Ctrl+C, a signal, `-n`, `max_runtime`, a crash,
//! `kill -9`, a reboot) leaves the file of its last completed step; the engine's
//! `EngineOptions::resume` takes it up again. `docs/session.md` documents the format; [`SESSION_VERSION`] names it.
//!
//! This module is the file's records and their reader: `ralph status`, `watch` and `report`
//! read a session without the engine, which writes it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::end::EndReason;
use crate::event::WaitReason;
use crate::usage::{SessionTokens, Usage};

/// The session file's name inside the run's log folder.
pub const SESSION_FILE: &str = "session.json";

/// The format's version, written in every session file; a file of another version is refused.
pub const SESSION_VERSION: u32 = 1;

/// The file, relative to a loop's folder, that names the folder's last run (its log folder).
pub const CURRENT_FILE: &str = ".ralph/current";

/// A run's state after its last completed step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Session {
    /// [`SESSION_VERSION`].
    pub version: u32,
    /// The run's id.
    pub run_id: String,
    /// The process running (or that last ran) it.
    pub pid: u32,
    /// When the run first started.
    #[serde(with = "rfc3339")]
    pub started: SystemTime,
    /// When this file was written.
    #[serde(with = "rfc3339")]
    pub updated: SystemTime,
    /// The RALPH.md path as given.
    pub ralph_file: String,
    /// The loop's folder, the run's home (absolute, symlinks resolved): a run is resumed from
    /// there only. `None` in a session written before ralph 0.3.
    #[serde(default)]
    pub folder: Option<PathBuf>,
    /// A hash of the RALPH.md text the run's config came from ([`config_hash`]).
    pub config_hash: String,
    /// The run's iteration limit (`-n` or `max_iterations`), counted over the whole run: a
    /// resumed run keeps it unless it is given another.
    #[serde(default)]
    pub max_iterations: Option<u64>,
    /// The run's `max_cost` (`--max-cost` or RALPH.md), kept as `max_iterations` is.
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// The run's `max_runtime` (`--max-runtime` or RALPH.md), kept as `max_iterations` is.
    #[serde(default)]
    pub max_runtime_ms: Option<u64>,
    /// An iteration is under way (its commands, agent or checks run).
    pub working: bool,
    /// The loop's counts so far: iterations, idle time, the failure streak, the spend. Written
    /// flat (`iteration`, `idle_ms`, `consecutive_failures`, `cost_usd`, ...); declared before
    /// `task_fields`, which takes the keys nothing else does.
    #[serde(flatten)]
    pub tally: Tally,
    /// The run's time so far (`max_runtime` counts it), over every process that ran it.
    pub elapsed_ms: u64,
    /// With `fallback`: the agent and each fallback agent, in order, with its rate limit
    /// and cost, so a resumed run knows which are limited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRecord>,
    /// Idle iterations in a row (the idle streak), as last reported.
    pub consecutive_idle: u64,
    /// Each state handler's own state, by state name (the idle streak's count and start).
    pub handlers: BTreeMap<String, serde_json::Value>,
    /// The `done_when` attempt bookkeeping, with `done_when`.
    pub attempts: Option<AttemptsState>,
    /// The task source's own state (escalation: the story, the breaker's counts, the
    /// checkpoint, the tree), opaque to the engine.
    pub task: Option<serde_json::Value>,
    /// The task in progress (a story id).
    pub task_id: Option<String>,
    /// The task source's `RUN_ENDED` fields so far (`ralph_engine::TaskSource::summary`; story
    /// mode: `stories`), written flat.
    #[serde(flatten)]
    pub task_fields: serde_json::Map<String, serde_json::Value>,
    /// The wait the last iteration asked for, even when the run stopped before it.
    pub wait: Option<PlannedWait>,
    /// How the run ended; `None` while it runs, or when it was killed or crashed.
    pub ended: Option<Ended>,
}

/// A wait after an iteration: why, how long, and when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlannedWait {
    /// Why the loop waits.
    pub reason: WaitReason,
    /// The whole wait.
    pub delay_ms: u64,
    /// When it ends (wall clock).
    #[serde(with = "rfc3339")]
    pub until: SystemTime,
    /// What a task source waits for, in words (reason `task`): `waiting for an answer in
    /// TODO.md:12`. It waits until then, looking again every `delay_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl PlannedWait {
    /// A wait for `reason` of `delay_ms`, ending at `until`, for `why` (a task source's words).
    pub fn new(reason: WaitReason, delay_ms: u64, until: SystemTime, why: Option<String>) -> Self {
        Self {
            reason,
            delay_ms,
            until,
            why,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "EndedRecord")]
#[non_exhaustive]
pub struct Ended {
    /// `RUN_ENDED`'s reason. Read back, an ending the engine does not name itself is
    /// [`EndReason::Other`] with this record's exit code (and a task source's
    /// [`EndReason::Task`] is one: whether it may be resumed is [`resumable`](Self::resumable)).
    pub reason: EndReason,
    /// `RUN_ENDED`'s exit code.
    pub exit_code: i32,
    /// When.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    /// Whether `ralph run --resume` may take it up ([`resumable`]).
    pub resumable: bool,
}

impl Ended {
    /// An ending for `reason`, with `exit_code`, at `at`; `resumable` as [`resumable`] says.
    pub fn new(reason: EndReason, exit_code: i32, at: SystemTime, resumable: bool) -> Self {
        Self {
            reason,
            exit_code,
            at,
            resumable,
        }
    }
}

/// [`Ended`] as the file holds it, for the exit code of a reason read as [`EndReason::Other`].
#[derive(Deserialize)]
struct EndedRecord {
    reason: EndReason,
    exit_code: i32,
    #[serde(with = "rfc3339")]
    at: SystemTime,
    resumable: bool,
}

impl From<EndedRecord> for Ended {
    fn from(record: EndedRecord) -> Self {
        let reason = match record.reason {
            EndReason::Other { reason, .. } => EndReason::Other {
                reason,
                exit_code: record.exit_code,
            },
            own => own,
        };
        Ended::new(reason, record.exit_code, record.at, record.resumable)
    }
}

/// The `done_when` attempt bookkeeping of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AttemptsState {
    /// Attempts recorded for the current task.
    pub attempt: u64,
    /// An attempt of the current task failed.
    pub failed_before: bool,
    /// Attempts that passed after a failure.
    pub flake_retries: u64,
    /// What the next prompt says about the last failed attempt.
    pub feedback: Option<String>,
    /// The wait before the next attempt.
    pub pending_backoff_ms: Option<u64>,
}

impl AttemptsState {
    /// The bookkeeping after `attempt` attempts on the current task.
    pub fn new(
        attempt: u64,
        failed_before: bool,
        flake_retries: u64,
        feedback: Option<String>,
        pending_backoff_ms: Option<u64>,
    ) -> Self {
        Self {
            attempt,
            failed_before,
            flake_retries,
            feedback,
            pending_backoff_ms,
        }
    }
}

/// One agent of a run with fallback agents, as the session keeps it: `ralph run --resume`
/// knows which agents are limited, and the report what each cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentRecord {
    /// Its command line, as written (`agent`, or an item of `fallback`).
    pub agent: String,
    /// When its last rate limit resets, if it reported one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::time::optional_ts"
    )]
    pub limited_until: Option<SystemTime>,
    /// What its runs cost, when it reports a cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl AgentRecord {
    /// Agent `agent`, limited until `limited_until`, having cost `cost_usd`.
    pub fn new(agent: String, limited_until: Option<SystemTime>, cost_usd: Option<f64>) -> Self {
        Self {
            agent,
            limited_until,
            cost_usd,
        }
    }
}

/// Why a session file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The file is missing or unreadable.
    #[error("{}: cannot read: {cause}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is not a session.
    #[error("{}: not a ralph session file: {cause}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: serde_json::Error,
    },
    /// The file is of another version.
    #[error(
        "{}: session format version {found}; this ralph reads version {SESSION_VERSION}",
        .path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u64,
    },
    /// The file's run id cannot be one (a hand-edited `../elsewhere`): it names the run's
    /// folder and files, so it is never taken as a path.
    #[error(
        "{}: run_id {run_id:?} is not a run id (letters, digits, `-`, `_` and `.`, not starting \
         with `.`)",
        .path.display()
    )]
    RunId {
        /// The file.
        path: PathBuf,
        /// The run id it holds.
        run_id: String,
    },
}

impl Session {
    /// The session of the run whose log folder is `dir`.
    pub fn read(dir: &Path) -> Result<Self, SessionError> {
        let path = dir.join(SESSION_FILE);
        // The running loop swaps its spare in for each write and then rewrites the file it
        // swapped out: a reader that opened that one just before, and was held up across the
        // next write, reads a mix. It reads again.
        let mut tries = 0;
        let value: serde_json::Value = loop {
            let bytes = std::fs::read(&path).map_err(|cause| SessionError::Io {
                path: path.clone(),
                cause,
            })?;
            match serde_json::from_slice(&bytes) {
                Ok(value) => break value,
                Err(_) if tries < 3 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(cause) => {
                    return Err(SessionError::Parse {
                        path: path.clone(),
                        cause,
                    });
                }
            }
        };
        let found = value
            .get("version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if found != u64::from(SESSION_VERSION) {
            return Err(SessionError::Version { path, found });
        }
        let session: Self = serde_json::from_value(value).map_err(|cause| SessionError::Parse {
            path: path.clone(),
            cause,
        })?;
        if !is_run_id(&session.run_id) {
            return Err(SessionError::RunId {
                path,
                run_id: session.run_id,
            });
        }
        Ok(session)
    }

    /// The file's bytes (the engine replaces the file with them whole).
    pub fn to_bytes(&self) -> std::io::Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// A session for a run starting now in the loop's folder `folder`.
    pub fn new(run_id: &str, ralph_file: &str, folder: &Path, config_hash: String) -> Self {
        let now = SystemTime::now();
        Self {
            version: SESSION_VERSION,
            run_id: run_id.to_owned(),
            pid: std::process::id(),
            started: now,
            updated: now,
            ralph_file: ralph_file.to_owned(),
            folder: Some(canonical_folder(folder)),
            config_hash,
            max_iterations: None,
            max_cost_usd: None,
            max_runtime_ms: None,
            working: false,
            tally: Tally::default(),
            elapsed_ms: 0,
            agents: Vec::new(),
            consecutive_idle: 0,
            handlers: BTreeMap::new(),
            attempts: None,
            task: None,
            task_id: None,
            task_fields: serde_json::Map::new(),
            wait: None,
            ended: None,
        }
    }

    /// Whether the run is the loop's in `folder`: a run goes on only where it started (a
    /// session that names no folder, from before 0.3, is taken on trust).
    pub fn belongs_to(&self, folder: &Path) -> bool {
        self.folder
            .as_ref()
            .is_none_or(|home_folder| *home_folder == canonical_folder(folder))
    }

    /// Whether the run can be resumed: it was stopped (by a person, a limit they set, a
    /// signal, a crash), not ended by itself.
    pub fn resumable(&self) -> bool {
        self.ended.as_ref().is_none_or(|e| e.resumable)
    }

    /// How the run stopped, for `RUN_RESUMED`: `RUN_ENDED`'s reason, or `killed` when it
    /// never reported one (a crash, `kill -9`, a reboot).
    pub fn previous_reason(&self) -> &str {
        self.ended.as_ref().map_or(KILLED, |e| e.reason.as_str())
    }
}

/// How a session names a loop's folder: absolute, symlinks resolved (as given when it cannot
/// be resolved).
pub fn canonical_folder(folder: &Path) -> PathBuf {
    std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf())
}

/// [`Session::previous_reason`] of a run that ended without a word.
pub const KILLED: &str = "killed";

/// Whether a run that ended for `reason` may be resumed: a person stopped it, or a limit they
/// set (`max_iterations`, `max_runtime`, `max_cost`) ran out, so going on is theirs to ask.
/// An ending the loop reached by itself (done, converged, idle, failing, blocked) is final.
pub fn resumable(reason: &EndReason) -> bool {
    matches!(
        reason,
        EndReason::Interrupted
            | EndReason::Cancelled
            | EndReason::MaxIterations
            | EndReason::MaxIterationsLastFailed
            | EndReason::Task {
                resumable: true,
                ..
            }
            | EndReason::MaxRuntime
            | EndReason::MaxCost
    )
}

/// A short, stable hash of a RALPH.md's text (FNV-1a, 64 bits, hex): tells a resumed run
/// whether its file changed. Not a security measure.
pub fn config_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Whether `id` can be a run id: one path component ralph could have made, never `..` or a
/// path.
pub fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The log folder of `folder`'s last run, from its [`CURRENT_FILE`], a relative one taken
/// from `folder`.
pub fn last_run(folder: &Path) -> Option<PathBuf> {
    read_current(folder).map(|dir| match dir.is_relative() {
        true => folder.join(dir),
        false => dir,
    })
}

/// The log folder of `folder`'s last run, from its [`CURRENT_FILE`].
pub fn read_current(folder: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(folder.join(CURRENT_FILE)).ok()?;
    let line = text.trim_end_matches(['\n', '\r']);
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// A time as every record here writes one ([`crate::time`]).
mod rfc3339 {
    pub(super) use crate::time::deserialize_ts as deserialize;
    pub(super) use crate::time::serialize_ts as serialize;
}

/// What a run has counted so far: its iterations, its idle ones and their time, the failure
/// streak, and what the agents reported spending. The loop updates these in one place as it
/// goes; `RUN_ENDED` reports them, and the session file ([`Session`])
/// writes them flat, so a resumed run takes them up exactly as they were.
///
/// ```
/// use ralph_events::session::Tally;
///
/// let mut tally = Tally::default();
/// tally.iteration = 3;
/// tally.consecutive_failures = 2;
/// let json = serde_json::to_value(&tally).unwrap();
/// assert_eq!(json["iteration"], 3);
/// assert_eq!(json["consecutive_failures"], 2);
/// assert_eq!(serde_json::from_value::<Tally>(json).unwrap(), tally);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "TallyRecord", into = "TallyRecord")]
#[non_exhaustive]
pub struct Tally {
    /// The last iteration started; a resumed run goes on with the next.
    pub iteration: u64,
    /// Idle iterations so far.
    pub idle_iterations: u64,
    /// Time spent in idle waits so far.
    pub idle_time: Duration,
    /// Failed agent runs in a row (the failure streak).
    pub consecutive_failures: u64,
    /// The last agent run failed: a `max_iterations` ending after it is a failure.
    pub last_failed: bool,
    /// The agents' reported usage summed over the run, `None` until one reports any. Its
    /// `cost_usd` is the run's cost, each agent session counted once
    /// ([`RunCost`](crate::RunCost)).
    pub usage: Option<Usage>,
    /// The last agent session's token running totals (Codex's thread), so the first agent run
    /// after a resume that goes on with it counts only what it added.
    pub agent_session_tokens: SessionTokens,
}

impl Tally {
    /// The run's cost so far, when an agent reported one.
    #[must_use]
    pub fn cost_usd(&self) -> Option<f64> {
        self.usage.as_ref().and_then(|u| u.cost_usd)
    }

    /// The agents' reported turns so far.
    #[must_use]
    pub fn num_turns(&self) -> Option<u64> {
        self.usage.as_ref().and_then(|u| u.num_turns)
    }

    /// Adds one agent run's `usage`; `run_cost` is the run's cost with it counted.
    pub fn add_usage(&mut self, usage: &Usage, run_cost: Option<f64>) {
        let total = self.usage.get_or_insert_with(Usage::default);
        total.add(usage);
        total.cost_usd = run_cost;
    }
}

/// The session file's flat keys for a [`Tally`], as every version of the file has them.
#[derive(Serialize, Deserialize)]
struct TallyRecord {
    iteration: u64,
    idle_iterations: u64,
    idle_ms: u64,
    cost_usd: Option<f64>,
    num_turns: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cached_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "SessionTokens::is_empty")]
    agent_session_tokens: SessionTokens,
    consecutive_failures: u64,
    last_failed: bool,
}

impl From<TallyRecord> for Tally {
    fn from(record: TallyRecord) -> Self {
        let usage = Usage {
            cost_usd: record.cost_usd,
            num_turns: record.num_turns,
            input_tokens: record.input_tokens,
            output_tokens: record.output_tokens,
            cached_input_tokens: record.cached_input_tokens,
            reasoning_tokens: record.reasoning_tokens,
            ..Usage::default()
        };
        Self {
            iteration: record.iteration,
            idle_iterations: record.idle_iterations,
            idle_time: Duration::from_millis(record.idle_ms),
            consecutive_failures: record.consecutive_failures,
            last_failed: record.last_failed,
            usage: (usage != Usage::default()).then_some(usage),
            agent_session_tokens: record.agent_session_tokens,
        }
    }
}

impl From<Tally> for TallyRecord {
    fn from(tally: Tally) -> Self {
        let usage = tally.usage.unwrap_or_default();
        Self {
            iteration: tally.iteration,
            idle_iterations: tally.idle_iterations,
            idle_ms: u64::try_from(tally.idle_time.as_millis()).unwrap_or(u64::MAX),
            cost_usd: usage.cost_usd,
            num_turns: usage.num_turns,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            reasoning_tokens: usage.reasoning_tokens,
            agent_session_tokens: tally.agent_session_tokens,
            consecutive_failures: tally.consecutive_failures,
            last_failed: tally.last_failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_survives_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        let mut session = Session::new("r1", "RALPH.md", Path::new("."), config_hash("x"));
        // Times are written to the millisecond.
        (session.started, session.updated) = (at, at);
        session.tally.iteration = 3;
        session.wait = Some(PlannedWait::new(WaitReason::Idle, 4000, at, None));
        std::fs::write(dir.path().join(SESSION_FILE), session.to_bytes().unwrap()).unwrap();
        assert_eq!(Session::read(dir.path()).unwrap(), session);
    }

    #[test]
    fn the_tally_is_written_flat_and_the_task_fields_keep_only_their_own_keys() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::new("r1", "RALPH.md", Path::new("."), config_hash("x"));
        (session.started, session.updated) = (SystemTime::UNIX_EPOCH, SystemTime::UNIX_EPOCH);
        session.tally.iteration = 7;
        session.tally.idle_time = std::time::Duration::from_millis(1500);
        session.tally.consecutive_failures = 2;
        let mut usage = Usage::default();
        (usage.cost_usd, usage.input_tokens, usage.num_turns) = (Some(0.25), Some(900), Some(4));
        session.tally.usage = Some(usage);
        session
            .task_fields
            .insert("stories".into(), serde_json::json!({"passed": 1}));
        std::fs::write(dir.path().join(SESSION_FILE), session.to_bytes().unwrap()).unwrap();

        let text = std::fs::read_to_string(dir.path().join(SESSION_FILE)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["iteration"], 7);
        assert_eq!(json["idle_ms"], 1500);
        assert_eq!(json["consecutive_failures"], 2);
        assert_eq!(
            (json["cost_usd"].as_f64(), json["num_turns"].as_u64()),
            (Some(0.25), Some(4))
        );
        assert_eq!(json["stories"]["passed"], 1);
        assert_eq!(text.matches("\"iteration\"").count(), 1, "{text}");

        let read = Session::read(dir.path()).unwrap();
        assert_eq!(read.task_fields.keys().collect::<Vec<_>>(), ["stories"]);
        assert_eq!(read, session);
    }

    #[test]
    fn an_ending_reads_back_typed_with_its_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let mut session = Session::new("r1", "RALPH.md", Path::new("."), config_hash("x"));
        (session.started, session.updated) = (at, at);
        let endings = [
            (EndReason::IdleLimit, 0, false),
            (EndReason::Interrupted, 130, true),
            // A task source's own ending: written as its words, read back as one the engine
            // does not name, with the exit code it ended with.
            (
                EndReason::Task {
                    reason: "stories_blocked".into(),
                    exit_code: 4,
                    converged: false,
                    resumable: false,
                },
                4,
                false,
            ),
        ];
        let mut read = Vec::new();
        for (reason, exit_code, resumable) in endings {
            session.ended = Some(Ended::new(reason, exit_code, at, resumable));
            std::fs::write(dir.path().join(SESSION_FILE), session.to_bytes().unwrap()).unwrap();
            let ended = Session::read(dir.path()).unwrap().ended.unwrap();
            read.push((ended.reason, ended.exit_code, ended.resumable));
        }
        let other = EndReason::Other {
            reason: "stories_blocked".into(),
            exit_code: 4,
        };
        assert_eq!(
            read,
            [
                (EndReason::IdleLimit, 0, false),
                (EndReason::Interrupted, 130, true),
                (other, 4, false),
            ]
        );
    }

    #[test]
    fn another_version_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SESSION_FILE), r#"{"version": 9}"#).unwrap();
        let err = Session::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.ends_with("session format version 9; this ralph reads version 1"),
            "{err}"
        );
    }

    #[test]
    fn only_stops_a_person_asked_for_are_resumable() {
        assert!(resumable(&EndReason::Interrupted));
        assert!(resumable(&EndReason::Cancelled));
        assert!(resumable(&EndReason::MaxIterations));
        assert!(resumable(&EndReason::MaxRuntime));
        assert!(!resumable(&EndReason::IdleLimit));
        assert!(!resumable(&EndReason::AgentDone));
        assert!(!resumable(&EndReason::AgentFailing));
    }

    #[test]
    fn the_config_hash_tells_texts_apart() {
        assert_eq!(config_hash("a"), config_hash("a"));
        assert_ne!(config_hash("a"), config_hash("b"));
        assert_eq!(config_hash("").len(), 16);
    }
}
