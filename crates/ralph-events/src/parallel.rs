//! A parallel run's own events (its lanes' engine events stay in their run folders), as the
//! coordinator writes them to `.ralph/parallel/events.jsonl`, and the reader that takes the
//! file back ([`parse_events`], [`read_events`], [`ParallelRecord`]): one set of types both
//! ways. Its session file too (`.ralph/parallel/session.json`): the record
//! ([`ParallelSession`]) and what `ralph status` reads of it ([`ParallelStatus::read`]).

use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::end::EndReason;
use crate::time::{deserialize_ts, serialize_ts};

mod session;

pub use session::{
    LaneRecord, LaneState, LaneStatus, ParallelSession, ParallelSessionError, ParallelStatus,
    PendingAsk, PendingBlock, SESSION_FILE, SESSION_VERSION,
};

/// One thing that happened in a parallel run, as written to its events file: `ts`, `run_id`,
/// then `type` and the fields of [`ParallelEventKind`]; and what a line reads back into.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A later version may add to the envelope (a sequence number, a version): built with `new`.
#[non_exhaustive]
pub struct ParallelEvent {
    /// When it happened (RFC 3339 UTC with milliseconds).
    #[serde(serialize_with = "serialize_ts", deserialize_with = "deserialize_ts")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub ts: SystemTime,
    /// The parallel run.
    pub run_id: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: ParallelEventKind,
}

/// What happened; see `docs/parallel.md` for the table. Serialized with a `type` field in
/// SCREAMING_SNAKE_CASE and read back from one. Read leniently, as the engine's events are: a
/// missing field but `task_id` reads as its default, and a `type` this version does not write
/// (a later version's) as [`ParallelEventKind::Unknown`]. As in the engine's `RUN_ENDED`, an
/// ending the events name only by its words (a task list's, `stories_done`) reads back as
/// [`EndReason::Other`], with `PARALLEL_ENDED`'s exit code.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// The derived code is `ParallelEventKind::serialize`/`deserialize`; the trait impls below add
// what a derive cannot say: an event of an unknown type read with its fields, and written back.
#[serde(remote = "Self")]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ParallelEventKind {
    /// The run starts (or goes on, `resumed`).
    ParallelStarted {
        /// The base branch's name.
        #[serde(default)]
        base: String,
        /// The base's commit at the start.
        #[serde(default)]
        base_commit: String,
        /// How many lanes run at once at most.
        #[serde(default)]
        parallel: usize,
        /// Every task's id, in the task list's order.
        #[serde(default)]
        tasks: Vec<String>,
        /// Whether this run goes on with a stopped one (`--resume`).
        #[serde(default)]
        resumed: bool,
    },
    /// A task's loop starts in its worktree.
    LaneStarted {
        /// The task.
        task_id: String,
        /// Its title.
        #[serde(default)]
        title: String,
        /// Its branch, `ralph/<task id>`.
        #[serde(default)]
        branch: String,
        /// Its worktree.
        #[serde(default)]
        worktree: String,
        /// The lane's own run id (`ralph logs <lane run id> -f`).
        #[serde(default)]
        lane_run_id: String,
        /// The lane's run folder.
        #[serde(default)]
        log_dir: String,
        /// How many times the task came back from the queue (a conflict, a failed check).
        #[serde(default)]
        returns: u64,
    },
    /// An iteration of a lane starts.
    LaneIterationStarted {
        /// The task.
        task_id: String,
        /// The lane's iteration number.
        #[serde(default)]
        iteration: u64,
    },
    /// An iteration of a lane ended.
    LaneIterationEnded {
        /// The task.
        task_id: String,
        /// The lane's iteration number.
        #[serde(default)]
        iteration: u64,
        /// The agent's last state marker.
        #[serde(default)]
        state: Option<String>,
        /// Whether the agent run failed.
        #[serde(default)]
        failed: bool,
        /// What the agent reported it cost, in US dollars.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// Input plus output tokens, when the agent reported them (with or without a cost).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
    },
    /// A lane's agent was refused by a rate limit: its loop waits for the reset (its own
    /// `RATE_LIMITED`). The iteration that ended before it is a rate-limited one.
    LaneRateLimited {
        /// The task.
        task_id: String,
        /// The lane's iteration number.
        #[serde(default)]
        iteration: u64,
        /// When the limit resets, as the lane's loop wrote it (RFC 3339 UTC).
        #[serde(default)]
        until: String,
        /// The lane's wait before its next run; `None` when its loop ends instead.
        #[serde(default)]
        wait_ms: Option<u64>,
    },
    /// A lane's loop ended.
    LaneEnded {
        /// The task.
        task_id: String,
        /// The lane's `RUN_ENDED` reason (`stories_done`: it goes to the queue), or
        /// `error: ...` when its loop failed to run.
        #[serde(default = "unknown_reason")]
        reason: EndReason,
        /// Iterations the lane ran.
        #[serde(default)]
        iterations: u64,
        /// The lane's cost so far, in US dollars.
        #[serde(default)]
        cost_usd: f64,
    },
    /// A passed task joined the merge queue.
    MergeQueued {
        /// The task.
        task_id: String,
        /// Its place in the queue, 1 being next.
        #[serde(default)]
        position: usize,
    },
    /// The queue starts landing a task.
    MergeStarted {
        /// The task.
        task_id: String,
        /// The base's commit it is brought up to date with.
        #[serde(default)]
        base_commit: String,
        /// The task branch's commit before.
        #[serde(default)]
        branch_commit: String,
    },
    /// The base did not merge into the task's branch: the task goes back to its loop.
    MergeConflict {
        /// The task.
        task_id: String,
        /// The conflicting files.
        #[serde(default)]
        files: Vec<String>,
        /// Where its branch was saved.
        #[serde(default)]
        saved_ref: String,
    },
    /// A `done_when` check failed on the merged result: the task goes back to its loop.
    MergeCheckFailed {
        /// The task.
        task_id: String,
        /// The failing checks.
        #[serde(default)]
        checks: Vec<FailedCheck>,
        /// Where its branch was saved.
        #[serde(default)]
        saved_ref: String,
    },
    /// A person's uncommitted changes in the main worktree (or untracked files) at paths the
    /// task changes too hold its landing: it waits in the queue, the landings after it go on,
    /// and it lands once the files allow (or `--resume` does). Said again when the files
    /// change.
    MergeHeld {
        /// The task.
        task_id: String,
        /// The paths, relative to the repository's top.
        #[serde(default)]
        files: Vec<String>,
    },
    /// A task's work and its `passes: true` are on the base.
    TaskLanded {
        /// The task.
        task_id: String,
        /// The base's new commit.
        #[serde(default)]
        commit: String,
    },
    /// `land.pr`: the task passed the queue's checks; its branch was pushed and a pull
    /// request opened (the base untouched).
    PrOpened {
        /// The task.
        task_id: String,
        /// The request's number.
        #[serde(default)]
        number: u64,
        /// Its page on the forge.
        #[serde(default)]
        url: String,
        /// `open`, `closed` or `merged`.
        #[serde(default)]
        state: String,
        /// The task's branch (`ralph/US-1`).
        #[serde(default)]
        branch: String,
        /// The branch it lands on.
        #[serde(default)]
        base: String,
    },
    /// `land.pr`: the task's branch was pushed again and its open pull request updated.
    PrUpdated {
        /// The task.
        task_id: String,
        /// The request's number.
        #[serde(default)]
        number: u64,
        /// Its page on the forge.
        #[serde(default)]
        url: String,
        /// `open`, `closed` or `merged`.
        #[serde(default)]
        state: String,
        /// The task's branch (`ralph/US-1`).
        #[serde(default)]
        branch: String,
        /// The branch it lands on.
        #[serde(default)]
        base: String,
    },
    /// `land.pr`: the branch's pull request was closed unmerged by a person: nothing pushed,
    /// not reopened.
    PrClosed {
        /// The task.
        task_id: String,
        /// The request's number.
        #[serde(default)]
        number: u64,
        /// Its page on the forge.
        #[serde(default)]
        url: String,
        /// `open`, `closed` or `merged`.
        #[serde(default)]
        state: String,
        /// The task's branch (`ralph/US-1`).
        #[serde(default)]
        branch: String,
        /// The branch it lands on.
        #[serde(default)]
        base: String,
    },
    /// A lane's agent asked a person: the merge queue put the question where the task lives
    /// (committed under a checklist item on the base, a comment on an issue). The lane waits
    /// for the answer there; the other lanes go on.
    LaneAsked {
        /// The task.
        task_id: String,
        /// The agent's question.
        #[serde(default)]
        question: String,
        /// Where a person answers: `TODO.md:3`, an issue's address.
        #[serde(default)]
        at: String,
    },
    /// A task was given up; its task list says so with the reason.
    TaskBlocked {
        /// The task.
        task_id: String,
        /// Why.
        #[serde(default)]
        reason: String,
    },
    /// Something a person should know; the run goes on.
    Warning {
        /// What.
        #[serde(default)]
        message: String,
        /// The task it concerns.
        #[serde(skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
    },
    /// The run ended.
    ParallelEnded {
        /// Why: `stories_done`, `stories_blocked`, `work_left` (tasks could not start or
        /// land), `interrupted`, `max_cost`, `max_runtime`.
        #[serde(default = "unknown_reason")]
        reason: EndReason,
        /// Tasks landed in this run.
        #[serde(default)]
        landed: u64,
        /// Tasks blocked in this run.
        #[serde(default)]
        blocked: u64,
        /// Tasks neither passed nor blocked.
        #[serde(default)]
        remaining: u64,
        /// The lanes' cost, in US dollars.
        #[serde(default)]
        cost_usd: f64,
        /// ralph's exit code.
        #[serde(default)]
        exit_code: i32,
    },
    /// A line of a type this version does not write (a later version's): never written by
    /// the coordinator, only read.
    #[serde(skip)]
    Unknown {
        /// Its `type`.
        type_name: String,
        /// Its other fields, `ts` and `run_id` aside.
        fields: serde_json::Map<String, serde_json::Value>,
    },
}

impl ParallelEvent {
    /// `kind`, in parallel run `run_id`, at `ts`.
    pub fn new(ts: SystemTime, run_id: String, kind: ParallelEventKind) -> Self {
        Self { ts, run_id, kind }
    }
}

impl Serialize for ParallelEventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ParallelEventKind::Unknown { type_name, fields } => {
                let mut line = serde_json::Map::with_capacity(fields.len() + 1);
                line.insert("type".to_owned(), type_name.clone().into());
                line.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                line.serialize(s)
            }
            kind => ParallelEventKind::serialize(kind, s),
        }
    }
}

impl<'de> Deserialize<'de> for ParallelEventKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let Some(serde_json::Value::String(type_name)) = fields.get("type").cloned() else {
            return Err(D::Error::missing_field("type"));
        };
        let line = serde_json::Value::Object(fields);
        match ParallelEventKind::deserialize(&line) {
            Ok(kind) => Ok(kind.with_exit_code_read()),
            // A type this version does not write: the derived code names it as the variant it
            // did not know.
            Err(err)
                if err
                    .to_string()
                    .starts_with(&format!("unknown variant `{type_name}`")) =>
            {
                let serde_json::Value::Object(map) = line else {
                    unreachable!("built as an object above")
                };
                fields = map;
                fields.shift_remove("type");
                Ok(ParallelEventKind::Unknown { type_name, fields })
            }
            Err(err) => Err(D::Error::custom(err)),
        }
    }
}

/// The reason of an ending whose line has none (written by no version; read leniently).
fn unknown_reason() -> EndReason {
    EndReason::read(String::new())
}

impl ParallelEventKind {
    /// A `PARALLEL_ENDED` read back: an ending named only by its words gets the event's exit
    /// code, as the engine's `RUN_ENDED` does.
    fn with_exit_code_read(mut self) -> Self {
        if let ParallelEventKind::ParallelEnded {
            reason: EndReason::Other {
                exit_code: code, ..
            },
            exit_code,
            ..
        } = &mut self
        {
            *code = *exit_code;
        }
        self
    }

    /// The task (lane) the event is about; `None` for the run's own events.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            ParallelEventKind::LaneStarted { task_id, .. }
            | ParallelEventKind::LaneIterationStarted { task_id, .. }
            | ParallelEventKind::LaneIterationEnded { task_id, .. }
            | ParallelEventKind::LaneRateLimited { task_id, .. }
            | ParallelEventKind::LaneEnded { task_id, .. }
            | ParallelEventKind::MergeQueued { task_id, .. }
            | ParallelEventKind::MergeStarted { task_id, .. }
            | ParallelEventKind::MergeConflict { task_id, .. }
            | ParallelEventKind::MergeCheckFailed { task_id, .. }
            | ParallelEventKind::MergeHeld { task_id, .. }
            | ParallelEventKind::TaskLanded { task_id, .. }
            | ParallelEventKind::PrOpened { task_id, .. }
            | ParallelEventKind::PrUpdated { task_id, .. }
            | ParallelEventKind::PrClosed { task_id, .. }
            | ParallelEventKind::LaneAsked { task_id, .. }
            | ParallelEventKind::TaskBlocked { task_id, .. } => Some(task_id),
            ParallelEventKind::Warning { task_id, .. } => task_id.as_deref(),
            ParallelEventKind::ParallelStarted { .. }
            | ParallelEventKind::ParallelEnded { .. }
            | ParallelEventKind::Unknown { .. } => None,
        }
    }
}

/// Reads a parallel runs' events file (`.ralph/parallel/events.jsonl`, every parallel run made
/// in the repository, one after the other): each whole line that reads as a
/// [`ParallelEvent`]; others (a half-written last line) are skipped.
pub fn read_events(path: &Path) -> std::io::Result<Vec<ParallelEvent>> {
    Ok(parse_events(&std::fs::read(path)?))
}

/// Parses JSON Lines parallel events leniently (see [`read_events`]).
pub fn parse_events(text: &[u8]) -> Vec<ParallelEvent> {
    text.split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// The run id in `events` that `id` names (the whole id, or a prefix of exactly one run's id),
/// or without `id` the last run that started; `None` when there is no such run.
pub fn find_run(events: &[ParallelEvent], id: Option<&str>) -> Option<String> {
    let mut ids: Vec<&str> = events
        .iter()
        .filter(|e| matches!(e.kind, ParallelEventKind::ParallelStarted { .. }))
        .map(|e| e.run_id.as_str())
        .collect();
    let Some(want) = id else {
        return ids.last().map(|id| (*id).to_owned());
    };
    if ids.contains(&want) {
        return Some(want.to_owned());
    }
    ids.retain(|id| id.starts_with(want));
    ids.sort_unstable();
    ids.dedup();
    match ids.as_slice() {
        [one] => Some((*one).to_owned()),
        _ => None,
    }
}

/// A parallel run rebuilt from its events, as `ralph runs` lists it: what an embedder's
/// dashboard reads without the coordinator.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParallelRecord {
    /// The run's id.
    pub run_id: String,
    /// Its first `PARALLEL_STARTED`.
    pub started: SystemTime,
    /// Its last event (its `PARALLEL_ENDED` once it ended).
    pub last: SystemTime,
    /// Lanes at once, as last started.
    pub parallel: usize,
    /// Every task's id, as the run last read the list.
    pub tasks: Vec<String>,
    /// How its last stretch ended (`reason`, exit code); `None` while it runs, or when it was
    /// killed (a `PARALLEL_STARTED` after its last `PARALLEL_ENDED`).
    pub ended: Option<(EndReason, i32)>,
    /// Tasks landed, over every stretch (a resume's too).
    pub landed: u64,
    /// Tasks blocked, over every stretch.
    pub blocked: u64,
    /// Lane iterations that ended.
    pub iterations: u64,
    /// The lanes' cost, in US dollars; `None` when no lane's agent reported one.
    pub cost_usd: Option<f64>,
    /// The lanes' input plus output tokens; `None` when no lane's agent reported them.
    pub tokens: Option<u64>,
    /// Each lane's loops, in start order: (task id, the loop's run id).
    pub lanes: Vec<(String, String)>,
}

impl ParallelRecord {
    /// Every parallel run in `events` (a repository's events file), oldest first.
    pub fn all(events: &[ParallelEvent]) -> Vec<ParallelRecord> {
        let mut records: Vec<ParallelRecord> = Vec::new();
        for event in events {
            let at = match records.iter().position(|r| r.run_id == event.run_id) {
                Some(at) => at,
                None => {
                    records.push(ParallelRecord {
                        run_id: event.run_id.clone(),
                        started: event.ts,
                        last: event.ts,
                        parallel: 0,
                        tasks: Vec::new(),
                        ended: None,
                        landed: 0,
                        blocked: 0,
                        iterations: 0,
                        cost_usd: None,
                        tokens: None,
                        lanes: Vec::new(),
                    });
                    records.len() - 1
                }
            };
            records[at].add(event);
        }
        records
    }

    fn add(&mut self, event: &ParallelEvent) {
        self.last = self.last.max(event.ts);
        match &event.kind {
            ParallelEventKind::ParallelStarted {
                parallel, tasks, ..
            } => {
                self.parallel = *parallel;
                self.tasks.clone_from(tasks);
                self.ended = None;
            }
            ParallelEventKind::LaneStarted {
                task_id,
                lane_run_id,
                ..
            } if !lane_run_id.is_empty() => {
                self.lanes.push((task_id.clone(), lane_run_id.clone()));
            }
            ParallelEventKind::LaneIterationEnded {
                cost_usd, tokens, ..
            } => {
                self.iterations += 1;
                if let Some(cost) = cost_usd {
                    *self.cost_usd.get_or_insert(0.0) += cost;
                }
                if let Some(tokens) = tokens {
                    *self.tokens.get_or_insert(0) += tokens;
                }
            }
            ParallelEventKind::TaskLanded { .. } => self.landed += 1,
            ParallelEventKind::TaskBlocked { .. } => self.blocked += 1,
            ParallelEventKind::ParallelEnded {
                reason, exit_code, ..
            } => self.ended = Some((reason.clone(), *exit_code)),
            _ => {}
        }
    }
}

/// A check that failed on a merged result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A later version may say more of a check (its output, a timeout): built with `new`.
#[non_exhaustive]
pub struct FailedCheck {
    /// The command.
    #[serde(default)]
    pub command: String,
    /// Its exit code; `None` when it was killed or did not start.
    #[serde(default)]
    pub exit_code: Option<i32>,
}

impl FailedCheck {
    /// `command`, which exited with `exit_code` (`None`: killed, or did not start).
    pub fn new(command: String, exit_code: Option<i32>) -> Self {
        Self { command, exit_code }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: ParallelEventKind) -> ParallelEvent {
        ParallelEvent {
            ts: humantime::parse_rfc3339("2026-01-01T00:00:01.250Z").unwrap(),
            run_id: "20260101-000000-ab12".to_owned(),
            kind,
        }
    }

    /// A later version's type reads as an unknown event with its fields, and writes back the
    /// same line; a known type with a field missing reads it as its default.
    #[test]
    fn an_unknown_type_and_a_missing_field_do_not_make_a_line_unreadable() {
        let line = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"p","type":"LANE_PAUSED","task_id":"US-001","why":{"n":1}}"#;
        let event: ParallelEvent = serde_json::from_str(line).unwrap();
        assert_eq!(event.kind.task_id(), None);
        let ParallelEventKind::Unknown { type_name, fields } = &event.kind else {
            panic!("{event:?}");
        };
        assert_eq!(type_name, "LANE_PAUSED");
        assert_eq!(fields["why"]["n"], 1);
        assert_eq!(serde_json::to_string(&event).unwrap(), line);

        let old = r#"{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"LANE_STARTED","task_id":"US-002"}"#;
        let event: ParallelEvent = serde_json::from_str(old).unwrap();
        assert!(matches!(
            event.kind,
            ParallelEventKind::LaneStarted { ref task_id, returns: 0, .. } if task_id == "US-002"
        ));
    }

    /// A file as the coordinator wrote it before its events were read back (its lines,
    /// verbatim): every line reads, a half-written last one is skipped.
    #[test]
    fn a_file_written_by_an_earlier_version_reads() {
        let text = br#"{"ts":"2026-03-02T10:00:00.000Z","run_id":"20260302-100000-1a2b","type":"PARALLEL_STARTED","base":"main","base_commit":"4f1c","parallel":2,"tasks":["US-001","US-002"],"resumed":false}
{"ts":"2026-03-02T10:00:00.100Z","run_id":"20260302-100000-1a2b","type":"LANE_STARTED","task_id":"US-001","title":"Cart","branch":"ralph/US-001","worktree":"/r/.ralph/worktrees/US-001","lane_run_id":"20260302-100000-9f9f","log_dir":"/r/.ralph/worktrees/US-001/.ralph/runs/20260302-100000-9f9f","returns":0}
{"ts":"2026-03-02T10:00:09.000Z","run_id":"20260302-100000-1a2b","type":"LANE_ITERATION_ENDED","task_id":"US-001","iteration":1,"state":null,"failed":false}
{"ts":"2026-03-02T10:00:10.000Z","run_id":"20260302-100000-1a2b","type":"MERGE_CHECK_FAILED","task_id":"US-001","checks":[{"command":"make test","exit_code":2}],"saved_ref":"refs/ralph/attempts/US-001/1"}
{"ts":"2026-03-02T10:00:11.000Z","run_id":"20260302-100000-1a2b","type":"WARNING","message":"m"}
{"ts":"2026-03-02T10:00:12.000Z","run_id":"20260302-100000-1a2b","type":"PARALLEL_ENDED","reason":"interrupted","landed":0,"blocked":0,"remaining":2,"cost_usd":0.0,"exit_code":130}
{"ts":"2026-03-02T10:00:12.000Z","run_id":"20260302-1"#;
        let events = parse_events(text);
        assert_eq!(events.len(), 6, "{events:?}");
        assert!(
            events
                .iter()
                .all(|e| !matches!(e.kind, ParallelEventKind::Unknown { .. }))
        );
        assert_eq!(events[3].kind.task_id(), Some("US-001"));
    }

    /// Endings read back typed: the engine's own by name, a task list's by its words with
    /// `PARALLEL_ENDED`'s exit code; a later version's still reads.
    #[test]
    fn endings_read_back_as_typed_reasons_and_an_unknown_one_still_reads() {
        let ended = |reason: &str, code: i32| {
            let line = format!(
                r#"{{"ts":"2026-01-01T00:00:00.000Z","run_id":"p","type":"PARALLEL_ENDED","reason":"{reason}","landed":1,"blocked":0,"remaining":0,"cost_usd":0.0,"exit_code":{code}}}"#
            );
            let event: ParallelEvent = serde_json::from_str(&line).unwrap();
            let ParallelEventKind::ParallelEnded { reason, .. } = event.kind else {
                panic!("{event:?}");
            };
            assert_eq!(serde_json::to_value(&reason).unwrap(), *reason.as_str());
            reason
        };
        assert_eq!(ended("interrupted", 130), EndReason::Interrupted);
        assert_eq!(ended("max_cost", 1), EndReason::MaxCost);
        let done = ended("stories_done", 0);
        assert_eq!(
            crate::story::StoryEnd::of(&done),
            Some(crate::story::StoryEnd::StoriesDone)
        );
        assert_eq!(
            ended("lanes_paused", 4),
            EndReason::Other {
                reason: "lanes_paused".to_owned(),
                exit_code: 4
            }
        );

        let lane = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"p","type":"LANE_ENDED","task_id":"US-1","reason":"stories_blocked"}"#;
        let event: ParallelEvent = serde_json::from_str(lane).unwrap();
        let ParallelEventKind::LaneEnded { reason, .. } = &event.kind else {
            panic!("{event:?}");
        };
        assert_eq!(
            crate::story::StoryEnd::of(reason),
            Some(crate::story::StoryEnd::StoriesBlocked)
        );
    }

    #[test]
    fn a_run_is_found_by_its_id_a_unique_prefix_or_as_the_last() {
        let started = |id: &str| {
            let mut e = event(ParallelEventKind::ParallelStarted {
                base: "main".into(),
                base_commit: String::new(),
                parallel: 1,
                tasks: Vec::new(),
                resumed: false,
            });
            id.clone_into(&mut e.run_id);
            e
        };
        assert_eq!(find_run(&[], None), None);
        let events = [
            started("20260101-a"),
            started("20260102-b"),
            started("20260102-b"),
        ];
        assert_eq!(find_run(&events, None).as_deref(), Some("20260102-b"));
        assert_eq!(
            find_run(&events, Some("20260101")).as_deref(),
            Some("20260101-a")
        );
        assert_eq!(
            find_run(&events, Some("20260102-b")).as_deref(),
            Some("20260102-b")
        );
        assert_eq!(find_run(&events, Some("2026")), None, "two runs' prefix");
        assert_eq!(find_run(&events, Some("single-run")), None);
    }
}
