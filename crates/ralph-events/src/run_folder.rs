//! Reading a run folder back: `.ralph/runs/<run_id>/`, its `events.jsonl` and its logs.
//!
//! `ralph runs`, `ralph logs` and `ralph report` read runs through this module, and so can an
//! embedder or a dashboard, without the engine (which writes the folder, and says whether a
//! run is still going: `ralph_engine::FolderClaim::running_in`). Everything is rebuilt from
//! `events.jsonl` alone, read leniently: a half-written last line (a run that is still writing,
//! or was killed) is skipped, so a run that is going, was killed, or was written by a newer
//! ralph still reads.
//!
//! Each line reads into the [`Event`] type that wrote it. A task source's events are kept as
//! they were written ([`RunRecord::task_events`], each with the iteration it came during), and
//! so are the task fields of `ITERATION_STARTED` and `RUN_ENDED`: the source's own crate reads
//! them ([`crate::story::run_folder`] finds stories there). A type the engine does not write
//! reads as a task source's ([`EventKind::Task`]), or a later version's: either way it is kept.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};

use serde::Deserialize;

use crate::end::EndReason;
use crate::event::{Event, EventKind, WaitReason};
use crate::process::Termination;
use crate::task_event::TaskEvent;
use crate::usage::RunCost;

mod agents;

pub use agents::AgentUse;

/// Where a loop's runs are kept, relative to its folder.
pub const RUNS_DIR: &str = ".ralph/runs";

/// A run folder could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunFolderError {
    /// A file or folder could not be read.
    #[error("{}: {cause}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The folder holds no runs.
    #[error("{}: no runs yet", .dir.display())]
    NoRuns {
        /// The runs folder.
        dir: PathBuf,
    },
    /// No run has this id.
    #[error("{}: no run {id}", .dir.display())]
    NotFound {
        /// The id asked for.
        id: String,
        /// The runs folder.
        dir: PathBuf,
    },
}

/// One run folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    /// The run id (the folder's name).
    pub id: String,
    /// The folder.
    pub path: PathBuf,
}

impl RunDir {
    /// The run's `events.jsonl`.
    pub fn events_path(&self) -> PathBuf {
        self.path.join("events.jsonl")
    }

    /// The log of `iteration`: `iteration-NNN.log`.
    pub fn iteration_log(&self, iteration: u64) -> PathBuf {
        self.path.join(format!("iteration-{iteration:03}.log"))
    }

    /// The exact prompt `iteration`'s agent received: `iteration-NNN.prompt.md`.
    pub fn prompt_file(&self, iteration: u64) -> PathBuf {
        self.path
            .join(format!("iteration-{iteration:03}.prompt.md"))
    }

    /// The iteration logs present, in iteration order.
    pub fn iteration_logs(&self) -> Result<Vec<(u64, PathBuf)>, RunFolderError> {
        let entries = std::fs::read_dir(&self.path).map_err(|cause| RunFolderError::Io {
            path: self.path.clone(),
            cause,
        })?;
        let mut logs: Vec<(u64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n = name.strip_prefix("iteration-")?.strip_suffix(".log")?;
                Some((n.parse().ok()?, e.path()))
            })
            .collect();
        logs.sort();
        Ok(logs)
    }
}

/// The runs under `folder`'s [`RUNS_DIR`], newest first (run ids start with their start time).
pub fn list_runs(folder: &Path) -> Result<Vec<RunDir>, RunFolderError> {
    list_runs_in(&folder.join(RUNS_DIR))
}

/// The runs in a runs folder (`--log-dir`), newest first.
pub fn list_runs_in(dir: &Path) -> Result<Vec<RunDir>, RunFolderError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(cause) => {
            return Err(RunFolderError::Io {
                path: dir.to_path_buf(),
                cause,
            });
        }
    };
    let mut runs: Vec<RunDir> = entries
        .flatten()
        .filter(|e| e.path().join("events.jsonl").is_file())
        .filter_map(|e| {
            Some(RunDir {
                id: e.file_name().into_string().ok()?,
                path: e.path(),
            })
        })
        .collect();
    runs.sort_by(|a, b| b.id.cmp(&a.id));
    Ok(runs)
}

/// The run `id` under `folder`, or the newest when `id` is `None`. An id may be given by a
/// unique prefix.
pub fn find_run(folder: &Path, id: Option<&str>) -> Result<RunDir, RunFolderError> {
    find_run_in(&folder.join(RUNS_DIR), id)
}

/// The run `id` in a runs folder (`--log-dir`), or the newest when `id` is `None`, as
/// [`find_run`] finds it.
pub fn find_run_in(dir: &Path, id: Option<&str>) -> Result<RunDir, RunFolderError> {
    let dir = dir.to_path_buf();
    let runs = list_runs_in(&dir)?;
    match id {
        None => runs
            .into_iter()
            .next()
            .ok_or(RunFolderError::NoRuns { dir }),
        Some(id) => {
            // An id is itself before it is a prefix: run ids made in one millisecond are
            // `<ms>-<pid>` and `<ms>-<pid>-001`, and the longer sorts first.
            let mut runs = runs;
            if let Some(exact) = runs.iter().position(|r| r.id == id) {
                return Ok(runs.swap_remove(exact));
            }
            let mut matching = runs.into_iter().filter(|r| r.id.starts_with(id));
            match (matching.next(), matching.next()) {
                (Some(run), None) => Ok(run),
                _ => Err(RunFolderError::NotFound {
                    id: id.to_owned(),
                    dir,
                }),
            }
        }
    }
}

/// Who holds a loop's folder lock (or another ralph lock): the record an exclusive holder
/// writes into the lock file, which a refused run and `ralph status` read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: u32,
    /// When its run started (RFC 3339, seconds).
    pub started: String,
    /// Its run id.
    pub run_id: String,
    /// The folder it runs in, as it named it.
    pub folder: PathBuf,
    /// The parallel run (`ralph run --parallel`) this loop is a lane of, if any: the run a
    /// refused person has to wait for or stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane_of: Option<String>,
}

impl LockHolder {
    /// Process `pid`, which started run `run_id` in `folder` at `started`.
    pub fn new(pid: u32, started: SystemTime, run_id: &str, folder: &Path) -> Self {
        Self {
            pid,
            started: humantime::format_rfc3339_seconds(started).to_string(),
            run_id: run_id.to_owned(),
            folder: folder.to_path_buf(),
            lane_of: None,
        }
    }

    /// This process, starting run `run_id` in `folder` now.
    pub fn this_process(run_id: &str, folder: &Path) -> Self {
        Self::new(std::process::id(), SystemTime::now(), run_id, folder)
    }
}

/// Reads a run's events: each whole line that reads as an [`Event`]; others (a half-written
/// last line) are skipped.
pub fn read_events(path: &Path) -> Result<Vec<Event>, RunFolderError> {
    let text = std::fs::read(path).map_err(|cause| RunFolderError::Io {
        path: path.to_path_buf(),
        cause,
    })?;
    Ok(parse_events(&text))
}

/// Parses JSON Lines events leniently (see [`read_events`]).
pub fn parse_events(text: &[u8]) -> Vec<Event> {
    text.split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// Whether `events` (a run's, in order, or a stretch of them) leave the run ended: `Some(true)`
/// when its last `RUN_ENDED` or `RUN_RESUMED` is a `RUN_ENDED`, `Some(false)` when it is a
/// `RUN_RESUMED` (a resumed run goes on past its earlier ending), `None` when they hold neither.
pub fn ends_run(events: &[Event]) -> Option<bool> {
    events.iter().rev().find_map(|e| match e.kind {
        EventKind::RunEnded { .. } => Some(true),
        EventKind::RunResumed { .. } => Some(false),
        _ => None,
    })
}

/// How an iteration went, as a timeline colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IterationOutcome {
    /// The agent ran and exited 0 with no state that says otherwise.
    Worked,
    /// The agent reported `idle`.
    Idle,
    /// The agent failed (a non-zero exit, a signal, a timeout, `ITERATION_FAILED`), or its
    /// `done_when` checks did.
    Failed,
    /// The agent was refused by a rate limit (`RATE_LIMITED`): the loop waited for its reset.
    RateLimited,
    /// Its `done_when` checks all passed, or (as its task source's reader says) its task was
    /// done: ralph-escalation's story passed.
    Converged,
    /// Its task source's reader says its task was given up on: ralph-escalation's circuit
    /// breaker tripped, or its story was blocked. The engine's own events never say it.
    Blocked,
    /// Stopped by Ctrl+C or a signal, or never finished (the run was killed).
    Interrupted,
    /// Still running.
    Running,
}

impl IterationOutcome {
    /// The name a person reads: [`as_str`](Self::as_str) with a hyphen for the underscore
    /// (`rate-limited`).
    pub fn label(self) -> &'static str {
        match self {
            Self::RateLimited => "rate-limited",
            other => other.as_str(),
        }
    }

    /// The name used in `--json`, the report's classes and the docs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Worked => "worked",
            Self::Idle => "idle",
            Self::Failed => "failed",
            Self::RateLimited => "rate_limited",
            Self::Converged => "converged",
            Self::Blocked => "blocked",
            Self::Interrupted => "interrupted",
            Self::Running => "running",
        }
    }
}

/// One iteration, rebuilt from its events.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct IterationRecord {
    /// 1-based iteration number.
    pub iteration: u64,
    /// When `ITERATION_STARTED` was written.
    #[serde(skip)]
    pub started: Option<SystemTime>,
    /// Milliseconds from the run's start to this iteration's start.
    pub start_ms: u64,
    /// From `ITERATION_STARTED` to `ITERATION_ENDED` (commands and agent); to the last event
    /// for an iteration that has not ended.
    pub duration_ms: u64,
    /// The agent's exit code.
    pub exit_code: Option<i32>,
    /// The signal that ended the agent.
    pub signal: Option<i32>,
    /// How the agent ended (`natural`, `timeout`, ...), if it ended.
    pub termination: Option<Termination>,
    /// The state marker, if any.
    pub state: Option<String>,
    /// The task source's fields of its `ITERATION_STARTED` (`ralph_engine::Task::fields`, as
    /// written; ralph-escalation's story and attempt, say); empty without a task source.
    pub task: Map<String, Value>,
    /// Cost in US dollars, as the adapter reported it: for an agent session that goes on
    /// over several iterations (`claude -p --continue`), the session's running total.
    pub cost_usd: Option<f64>,
    /// The run's cost once this iteration ended, each agent session counted once
    /// ([`RunCost`]); `None` while no iteration so far reported a cost.
    pub run_cost_usd: Option<f64>,
    /// Input plus output tokens, when the adapter reported them.
    pub tokens: Option<u64>,
    /// The iteration's log file, as the event named it.
    pub log_file: Option<String>,
    /// How it went.
    pub outcome: IterationOutcome,
    /// How many times the agent retried a request on its own (`AGENT_RETRYING`).
    pub agent_retries: u64,
    /// The agent's last retry, as the status line shows it (`529 overloaded_error (3/10)`).
    pub last_retry: Option<String>,
    /// The connections the sandbox refused in it (`SANDBOX_DENIED`), as `host:port`.
    pub sandbox_denied: Vec<String>,
}

/// A wait between iterations.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct WaitRecord {
    /// The iteration it follows.
    pub iteration: u64,
    /// Why: `idle`, `delay`, `state`, `retry`, `failure`, `rate_limit`, ...
    pub reason: WaitReason,
    /// Milliseconds from the run's start.
    pub start_ms: u64,
    /// How long it meant to wait.
    pub delay_ms: u64,
}

/// One `done_when` check of an attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CheckRecord {
    /// The command.
    pub command: String,
    /// Whether it passed.
    pub passed: bool,
    /// A failing check's last lines of output ([`CheckResult::last_lines`]).
    ///
    /// [`CheckResult::last_lines`]: crate::CheckResult::last_lines
    pub last_lines: Vec<String>,
}

/// One convergence attempt (`ATTEMPT_ENDED`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// The iteration it ran in.
    pub iteration: u64,
    /// 1-based attempt number.
    pub attempt: u64,
    /// Whether every check passed.
    pub ok: bool,
    /// Each check.
    pub checks: Vec<CheckRecord>,
}

/// An event of the task source's own, as written, and when it came.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TaskEventRecord {
    /// The iteration that had started last when it was written (it came during that
    /// iteration, or after it, before the next one started); `None` before the first.
    pub iteration: Option<u64>,
    /// Its `type` and fields (`ts` and `run_id` left out); the source's own crate reads it
    /// (ralph-escalation's `StoryEvent::from_task_event`).
    pub event: TaskEvent,
}

/// Whether a run is over.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// `RUN_ENDED` was written.
    Ended {
        /// Its reason, as read back (a task source's or a state's as [`EndReason::Other`]).
        reason: EndReason,
        /// ralph's exit code.
        exit_code: Option<i64>,
    },
    /// The folder's lock is held by this run's process.
    Running {
        /// The process.
        pid: u32,
    },
    /// No `RUN_ENDED` and no live process: the run was killed (or its machine went down).
    Killed,
}

/// A run, rebuilt from its `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunRecord {
    /// The run id.
    pub run_id: String,
    /// The first event's time.
    #[serde(skip)]
    pub started: Option<SystemTime>,
    /// The first event's time, RFC 3339.
    pub started_at: Option<String>,
    /// From the first event to `RUN_ENDED` (or the last event so far).
    pub duration_ms: u64,
    /// The iteration cap, if any.
    pub max_iterations: Option<u64>,
    /// Whether it is over.
    #[serde(flatten)]
    pub status: RunStatus,
    /// Iterations, in order.
    pub iterations: Vec<IterationRecord>,
    /// Waits between iterations.
    pub waits: Vec<WaitRecord>,
    /// Convergence attempts.
    pub attempts: Vec<AttemptRecord>,
    /// The task source's events, in order.
    pub task_events: Vec<TaskEventRecord>,
    /// The task source's fields of `RUN_ENDED` (`ralph_engine::TaskSource::summary`, as
    /// written; ralph-escalation's `stories`, say); empty while the run has not ended.
    pub task_summary: Map<String, Value>,
    /// The run's cost: `RUN_ENDED.cost_usd` once the run ended, else the iterations' costs
    /// with each agent session counted once ([`RunCost`]), as the engine counts them.
    pub cost_usd: Option<f64>,
    /// Total tokens of the iterations whose agent reported them.
    pub tokens: Option<u64>,
    /// With fallback agents, each agent that ran: its iterations, cost and last rate limit;
    /// empty when one agent ran every iteration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentUse>,
}

fn ms_between(from: Option<SystemTime>, to: Option<SystemTime>) -> u64 {
    match (from, to) {
        (Some(from), Some(to)) => to
            .duration_since(from)
            .unwrap_or(Duration::ZERO)
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX),
        _ => 0,
    }
}

impl RunRecord {
    /// Rebuilds a run from its events. `holder` is the live holder of its folder's lock, if
    /// any: a run without `RUN_ENDED` is running when the holder names it, killed otherwise.
    pub fn from_events(run_id: &str, events: &[Event], holder: Option<&LockHolder>) -> Self {
        let started = events.first().map(|e| e.ts);
        let mut last = started;
        let mut run = RunRecord {
            run_id: run_id.to_owned(),
            started,
            started_at: started.map(|t| humantime::format_rfc3339_seconds(t).to_string()),
            duration_ms: 0,
            max_iterations: None,
            status: RunStatus::Killed,
            iterations: Vec::new(),
            waits: Vec::new(),
            attempts: Vec::new(),
            task_events: Vec::new(),
            task_summary: Map::new(),
            cost_usd: None,
            tokens: None,
            agents: Vec::new(),
        };
        let mut agents = agents::AgentTally::default();
        let mut ended = false;
        let mut cost = RunCost::default();
        let mut ended_cost = None;
        for event in events {
            agents.event(event);
            let at = Some(event.ts);
            last = at;
            let current = run.iterations.last_mut();
            match &event.kind {
                EventKind::RunStarted { max_iterations, .. } => {
                    run.max_iterations = *max_iterations;
                }
                EventKind::IterationStarted { iteration, task } => {
                    run.iterations.push(IterationRecord {
                        iteration: *iteration,
                        started: at,
                        start_ms: ms_between(started, at),
                        duration_ms: 0,
                        exit_code: None,
                        signal: None,
                        termination: None,
                        state: None,
                        task: task.clone(),
                        cost_usd: None,
                        run_cost_usd: None,
                        tokens: None,
                        log_file: None,
                        outcome: IterationOutcome::Running,
                        agent_retries: 0,
                        last_retry: None,
                        sandbox_denied: Vec::new(),
                    });
                }
                EventKind::SandboxDenied { host, port, .. } => {
                    if let Some(it) = current {
                        it.sandbox_denied.push(format!("{host}:{port}"));
                    }
                }
                EventKind::AgentRetrying {
                    reason,
                    attempt,
                    max_attempts,
                    ..
                } => {
                    if let Some(it) = current {
                        it.agent_retries += 1;
                        it.last_retry = Some(crate::usage::describe_retry(
                            reason,
                            *attempt,
                            *max_attempts,
                        ));
                    }
                }
                EventKind::IterationEnded {
                    exit_code,
                    signal,
                    termination,
                    state,
                    log_file,
                    usage,
                    failed,
                    ..
                } => {
                    let Some(it) = current else { continue };
                    it.duration_ms = ms_between(it.started, at);
                    (it.exit_code, it.signal) = (*exit_code, *signal);
                    it.termination = Some(*termination);
                    (it.state, it.log_file) = (state.clone(), log_file.clone());
                    if let Some(usage) = usage {
                        it.cost_usd = usage.cost_usd;
                        cost.record(usage);
                        if usage.input_tokens.is_some() || usage.output_tokens.is_some() {
                            let (input, output) = (usage.input_tokens, usage.output_tokens);
                            it.tokens =
                                Some(input.unwrap_or(0).saturating_add(output.unwrap_or(0)));
                        }
                    }
                    it.run_cost_usd = cost.total();
                    it.outcome = match (termination, state.as_deref()) {
                        (Termination::Interrupted, _) => IterationOutcome::Interrupted,
                        _ if *failed => IterationOutcome::Failed,
                        (_, Some("idle")) => IterationOutcome::Idle,
                        _ => IterationOutcome::Worked,
                    };
                }
                EventKind::IterationFailed { .. } => {
                    if let Some(it) = current {
                        it.outcome = IterationOutcome::Failed;
                    }
                }
                EventKind::RateLimited { iteration, .. } => {
                    if let Some(it) = current.filter(|it| it.iteration == *iteration) {
                        it.outcome = IterationOutcome::RateLimited;
                    }
                }
                EventKind::AttemptEnded {
                    attempt,
                    iteration,
                    ok,
                    results,
                    ..
                } => {
                    let checks = results
                        .iter()
                        .map(|r| CheckRecord {
                            command: r.command.clone(),
                            passed: r.passed(),
                            last_lines: r.last_lines(),
                        })
                        .collect();
                    run.attempts.push(AttemptRecord {
                        iteration: *iteration,
                        attempt: *attempt,
                        ok: *ok,
                        checks,
                    });
                    // Failing checks fail the attempt, whatever the agent's exit.
                    if let Some(it) = current.filter(|it| it.iteration == *iteration) {
                        it.outcome = match ok {
                            true => IterationOutcome::Converged,
                            false => IterationOutcome::Failed,
                        };
                    }
                }
                EventKind::WaitStarted {
                    iteration,
                    reason,
                    delay_ms,
                    ..
                } => run.waits.push(WaitRecord {
                    iteration: *iteration,
                    reason: *reason,
                    start_ms: ms_between(started, at),
                    delay_ms: *delay_ms,
                }),
                // The engine counts on from the stopped part's cost; only a `RUN_ENDED` after
                // this ends the run.
                EventKind::RunResumed { .. } => {
                    cost = RunCost::resumed(cost.total());
                    ended_cost = None;
                    ended = false;
                    run.status = RunStatus::Killed;
                    run.task_summary = Map::new();
                    // An iteration under way when the run was killed never ended.
                    if let Some(it) = current.filter(|it| it.outcome == IterationOutcome::Running) {
                        it.outcome = IterationOutcome::Interrupted;
                    }
                }
                EventKind::RunEnded {
                    reason,
                    exit_code,
                    task,
                    cost_usd,
                    ..
                } => {
                    ended = true;
                    ended_cost = *cost_usd;
                    run.status = RunStatus::Ended {
                        reason: reason.clone(),
                        exit_code: Some(i64::from(*exit_code)),
                    };
                    run.task_summary = task.clone();
                }
                EventKind::Task(task_event) => run.task_events.push(TaskEventRecord {
                    iteration: current.map(|it| it.iteration),
                    event: task_event.clone(),
                }),
                _ => {}
            }
        }
        let live = holder.filter(|h| h.run_id == run_id);
        if !ended {
            if let Some(h) = live {
                run.status = RunStatus::Running { pid: h.pid };
            }
            let outcome = match live {
                Some(_) => IterationOutcome::Running,
                None => IterationOutcome::Interrupted,
            };
            if let Some(it) = run
                .iterations
                .last_mut()
                .filter(|it| it.outcome == IterationOutcome::Running)
            {
                it.duration_ms = ms_between(it.started, last);
                it.outcome = outcome;
            }
        }
        run.duration_ms = ms_between(started, last);
        run.cost_usd = ended_cost.or_else(|| cost.total());
        let tokens: Vec<u64> = run.iterations.iter().filter_map(|i| i.tokens).collect();
        run.tokens = (!tokens.is_empty()).then(|| tokens.iter().sum());
        run.agents = agents.finish();
        run
    }

    /// Reads `dir`'s events and rebuilds its run; `holder` is the live holder of its loop's
    /// folder lock (`ralph_engine::FolderClaim::running_in`), which says whether the run is still
    /// going.
    pub fn read(dir: &RunDir, holder: Option<&LockHolder>) -> Result<Self, RunFolderError> {
        let events = read_events(&dir.events_path())?;
        Ok(Self::from_events(&dir.id, &events, holder))
    }

    /// Whether the run is still going.
    pub fn is_running(&self) -> bool {
        matches!(self.status, RunStatus::Running { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(lines: &str) -> Vec<Event> {
        parse_events(lines.as_bytes())
    }

    #[test]
    fn a_whole_id_finds_its_run_though_a_later_one_of_its_millisecond_starts_with_it() {
        let dir = tempfile::tempdir().unwrap();
        for id in ["20260101T100000000-3", "20260101T100000000-3-001"] {
            std::fs::create_dir_all(dir.path().join(id)).unwrap();
            std::fs::write(dir.path().join(id).join("events.jsonl"), "").unwrap();
        }
        let found = find_run_in(dir.path(), Some("20260101T100000000-3")).unwrap();
        assert_eq!(found.id, "20260101T100000000-3");
        let found = find_run_in(dir.path(), Some("20260101T100000000-3-0")).unwrap();
        assert_eq!(found.id, "20260101T100000000-3-001");
        assert!(find_run_in(dir.path(), Some("20260101T1000")).is_err());
    }

    const RUN: &str = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED","max_iterations":3}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","state":"idle","usage":{"cost_usd":0.5,"input_tokens":10,"output_tokens":5}}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"WAIT_STARTED","iteration":1,"reason":"idle","delay_ms":1000}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"SOMETHING_NEW","iteration":2}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":2}
{"ts":"2026-01-01T00:00:04.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":2,"exit_code":3,"termination":"natural","failed":true}
{"ts":"2026-01-01T00:00:04.000Z","run_id":"r","type":"ITERATION_STA"#;

    #[test]
    fn a_killed_run_reads_with_unknown_events_and_a_torn_last_line() {
        let run = RunRecord::from_events("r", &events(RUN), None);
        assert_eq!(run.status, RunStatus::Killed);
        let outcomes: Vec<_> = run.iterations.iter().map(|i| i.outcome).collect();
        assert_eq!(outcomes, [IterationOutcome::Idle, IterationOutcome::Failed]);
        assert_eq!(run.iterations[0].duration_ms, 2000);
        assert_eq!(run.iterations[1].start_ms, 3000);
        assert_eq!(run.duration_ms, 4000);
        assert_eq!((run.cost_usd, run.tokens), (Some(0.5), Some(15)));
        assert_eq!(run.waits[0].reason, WaitReason::Idle);
        // A type this version does not write is kept, as a task source's.
        assert_eq!(run.task_events[0].event.type_name(), "SOMETHING_NEW");
        assert_eq!(run.task_events[0].iteration, Some(1));
    }

    /// Three iterations of one Claude session (`claude -p --continue`), each reporting the
    /// session's running total, then one of a new session.
    const ONE_SESSION: &str = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED"}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","failed":false,"usage":{"cost_usd":0.1,"session_id":"s1","cost_is_session_total":true}}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":2}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":2,"exit_code":0,"termination":"natural","failed":false,"usage":{"cost_usd":0.25,"session_id":"s1","cost_is_session_total":true}}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":3}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":3,"exit_code":0,"termination":"natural","failed":false,"usage":{"cost_usd":0.4,"session_id":"s1","cost_is_session_total":true}}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":4}
{"ts":"2026-01-01T00:00:04.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":4,"exit_code":0,"termination":"natural","failed":false,"usage":{"cost_usd":0.05,"session_id":"s2","cost_is_session_total":true}}
"#;

    #[test]
    fn a_session_that_goes_on_over_iterations_counts_once_as_the_engine_counts_it() {
        let run = RunRecord::from_events("r", &events(ONE_SESSION), None);
        assert_eq!(run.cost_usd, Some(0.45));
        let reported: Vec<_> = run.iterations.iter().map(|i| i.cost_usd).collect();
        assert_eq!(reported, [Some(0.1), Some(0.25), Some(0.4), Some(0.05)]);
        let so_far: Vec<_> = run.iterations.iter().map(|i| i.run_cost_usd).collect();
        assert_eq!(so_far, [Some(0.1), Some(0.25), Some(0.4), Some(0.45)]);

        // Once the run ended, its own figure is the cost.
        let ended = format!(
            "{ONE_SESSION}{}\n",
            r#"{"ts":"2026-01-01T00:00:05.000Z","run_id":"r","type":"RUN_ENDED","reason":"max_iterations","iterations":4,"exit_code":0,"cost_usd":0.45}"#
        );
        let run = RunRecord::from_events("r", &events(&ended), None);
        assert_eq!(run.cost_usd, Some(0.45));

        // Costs not marked as a session's running total (an older ralph's events, another
        // agent) add up.
        let unmarked = ONE_SESSION.replace(r#","cost_is_session_total":true"#, "");
        let run = RunRecord::from_events("r", &events(&unmarked), None);
        assert_eq!(run.cost_usd, Some(0.8));
    }

    #[test]
    fn a_resumed_run_counts_on_from_the_stopped_part_as_the_engine_does() {
        let resumed = format!(
            "{ONE_SESSION}{}\n{}\n{}\n{}\n",
            r#"{"ts":"2026-01-01T00:00:05.000Z","run_id":"r","type":"RUN_ENDED","reason":"interrupted","iterations":4,"exit_code":130,"cost_usd":0.45}"#,
            r#"{"ts":"2026-01-01T00:01:00.000Z","run_id":"r","type":"RUN_RESUMED","iteration":4,"previous_reason":"interrupted"}"#,
            r#"{"ts":"2026-01-01T00:01:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":5}"#,
            r#"{"ts":"2026-01-01T00:01:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":5,"exit_code":0,"termination":"natural","failed":false,"usage":{"cost_usd":0.07,"session_id":"s2","cost_is_session_total":true}}"#,
        );
        let run = RunRecord::from_events("r", &events(&resumed), None);
        // The engine resumes from 0.45 and counts the session afresh.
        assert_eq!(run.cost_usd, Some(0.52));
    }

    #[test]
    fn a_resumed_run_is_not_ended_by_the_ending_before_it() {
        let resumed = format!(
            "{ONE_SESSION}{}\n{}\n{}\n",
            r#"{"ts":"2026-01-01T00:00:05.000Z","run_id":"r","type":"RUN_ENDED","reason":"interrupted","iterations":4,"exit_code":130,"stories":{"passed":1}}"#,
            r#"{"ts":"2026-01-01T00:01:00.000Z","run_id":"r","type":"RUN_RESUMED","iteration":4,"previous_reason":"interrupted"}"#,
            r#"{"ts":"2026-01-01T00:01:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":5}"#,
        );
        let lines = events(&resumed);
        assert_eq!(ends_run(&lines), Some(false));
        let holder = LockHolder::this_process("r", Path::new("."));
        let run = RunRecord::from_events("r", &lines, Some(&holder));
        assert_eq!(
            run.status,
            RunStatus::Running {
                pid: std::process::id()
            }
        );
        assert!(run.task_summary.is_empty());
        assert_eq!(run.iterations[4].outcome, IterationOutcome::Running);
        let run = RunRecord::from_events("r", &lines, None);
        assert_eq!(run.status, RunStatus::Killed);

        // An iteration the stopped part never ended (`kill -9`) was interrupted.
        let killed = format!(
            "{ONE_SESSION}{}\n{}\n",
            r#"{"ts":"2026-01-01T00:00:05.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":5}"#,
            r#"{"ts":"2026-01-01T00:01:00.000Z","run_id":"r","type":"RUN_RESUMED","iteration":5,"previous_reason":"killed"}"#,
        );
        let run = RunRecord::from_events("r", &events(&killed), Some(&holder));
        assert_eq!(run.iterations[4].outcome, IterationOutcome::Interrupted);

        let again = format!(
            "{resumed}{}\n",
            r#"{"ts":"2026-01-01T00:01:09.000Z","run_id":"r","type":"RUN_ENDED","reason":"max_iterations","iterations":5,"exit_code":0}"#
        );
        let lines = events(&again);
        assert_eq!(ends_run(&lines), Some(true));
        let run = RunRecord::from_events("r", &lines, None);
        assert!(matches!(
            run.status,
            RunStatus::Ended {
                reason: EndReason::MaxIterations,
                ..
            }
        ));
        assert_eq!(ends_run(&lines[..1]), None);
    }

    #[test]
    fn a_run_without_run_ended_is_running_while_its_holder_names_it() {
        let mut holder = LockHolder::this_process("r", Path::new("."));
        let text = RUN.rsplit_once('\n').map_or(RUN, |(a, _)| a).to_owned()
            + "\n{\"ts\":\"2026-01-01T00:00:05.000Z\",\"run_id\":\"r\",\"type\":\"ITERATION_STARTED\",\"iteration\":3}\n";
        let run = RunRecord::from_events("r", &events(&text), Some(&holder));
        assert_eq!(
            run.status,
            RunStatus::Running {
                pid: std::process::id()
            }
        );
        assert_eq!(run.iterations[2].outcome, IterationOutcome::Running);
        holder.run_id = "other".into();
        let run = RunRecord::from_events("r", &events(&text), Some(&holder));
        assert_eq!(run.status, RunStatus::Killed);
        assert_eq!(run.iterations[2].outcome, IterationOutcome::Interrupted);
    }

    #[test]
    fn the_engines_failed_verdict_wins_over_the_exit_code() {
        let text = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","failed":true}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":2}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":2,"exit_code":3,"termination":"natural","failed":false}
"#;
        let run = RunRecord::from_events("r", &events(text), None);
        let outcomes: Vec<_> = run.iterations.iter().map(|i| i.outcome).collect();
        assert_eq!(
            outcomes,
            [IterationOutcome::Failed, IterationOutcome::Worked]
        );
    }

    #[test]
    fn a_task_sources_events_and_fields_are_kept_as_written_with_their_iteration() {
        let text = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED"}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ISSUE_OPENED","number":7}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1,"issue":7,"try":2}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural"}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_FAILED","iteration":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"WARNING","message":"m"}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ISSUE_CLOSED","number":7,"by":{"name":"x"}}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"WAIT_STARTED","iteration":1,"reason":"rate_limit","delay_ms":5}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"RUN_ENDED","reason":"issues_done","iterations":1,"exit_code":0,"outcome":"clean","issues":{"closed":1},"cost_usd":0.5}
"#;
        let run = RunRecord::from_events("r", &events(text), None);
        let it = &run.iterations[0];
        assert_eq!(it.outcome, IterationOutcome::Failed);
        assert_eq!(
            Value::Object(it.task.clone()),
            serde_json::json!({"issue": 7, "try": 2})
        );
        let kept: Vec<_> = run
            .task_events
            .iter()
            .map(|e| {
                (
                    e.iteration,
                    e.event.type_name(),
                    Value::Object(e.event.fields().clone()),
                )
            })
            .collect();
        assert_eq!(
            kept,
            [
                (None, "ISSUE_OPENED", serde_json::json!({"number": 7})),
                (
                    Some(1),
                    "ISSUE_CLOSED",
                    serde_json::json!({"number": 7, "by": {"name": "x"}})
                ),
            ]
        );
        assert_eq!(
            Value::Object(run.task_summary.clone()),
            serde_json::json!({"issues": {"closed": 1}})
        );
        assert_eq!(run.waits[0].reason, WaitReason::RateLimit);
        assert!(matches!(
            run.status,
            RunStatus::Ended {
                exit_code: Some(0),
                ..
            }
        ));
    }
}
