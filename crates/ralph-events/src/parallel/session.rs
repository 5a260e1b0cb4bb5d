//! A parallel run's session file (`.ralph/parallel/session.json`): the record the coordinator
//! writes for `--resume` ([`ParallelSession`]), what `ralph status` shows of it
//! ([`ParallelStatus`]), and the reader of the file by path. Writing it is ralph-parallel's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where a repository's parallel session is, from its main worktree's top.
pub const SESSION_FILE: &str = ".ralph/parallel/session.json";

/// The session file's version: the one this ralph writes and reads.
pub const SESSION_VERSION: u32 = 1;

/// Why a parallel session file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParallelSessionError {
    /// The file could not be read.
    #[error("{}: {cause}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is not a parallel run's session.
    #[error("{}: not a parallel run's session: {cause}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What the JSON reader said.
        cause: serde_json::Error,
    },
    /// The file is of a version this ralph does not read.
    #[error(
        "{}: not a parallel run's session: version {found} (this ralph reads {SESSION_VERSION})",
        .path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it says.
        found: u32,
    },
}

impl ParallelSessionError {
    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            ParallelSessionError::Io { path, .. }
            | ParallelSessionError::Malformed { path, .. }
            | ParallelSessionError::Version { path, .. } => path,
        }
    }
}

/// Where a lane stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneState {
    /// Its loop runs (or ran when ralph was killed).
    Running,
    /// Its loop stopped before its task passed (a Ctrl+C, a budget, a second Ctrl+C before its
    /// landing): `--resume` starts it again, its work kept.
    Stopped,
    /// Its story passed; it waits in the merge queue.
    Queued,
    /// On the base.
    Landed,
    /// Given up.
    Blocked,
    /// Its task left the task list while it ran (a person removed it, closed its issue): its
    /// work saved under `refs/ralph/attempts/<id>/<n>`, not landed.
    Dropped,
}

impl LaneState {
    /// Its name in the session file and `ralph status`.
    pub fn as_str(self) -> &'static str {
        match self {
            LaneState::Running => "running",
            LaneState::Stopped => "stopped",
            LaneState::Queued => "queued",
            LaneState::Landed => "landed",
            LaneState::Blocked => "blocked",
            LaneState::Dropped => "dropped",
        }
    }
}

/// One lane's record in the session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LaneRecord {
    /// Where it stands.
    pub state: LaneState,
    /// Times it came back from the queue.
    pub returns: u64,
    /// `{{ story.conflict }}` for its next start.
    pub conflict: Option<String>,
    /// Its latest loop's run id (its run folder's name).
    #[serde(default)]
    pub run_id: Option<String>,
    /// Its landing commit while the task list is yet to be told of it: recorded before the
    /// merge journal goes, so a `--resume` after a kill tells the list instead of landing again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untold: Option<String>,
    /// Why the base refused its landing (the main worktree holding a change the fast-forward
    /// would overwrite, say): it stays queued off the queue, its work on its branch, until
    /// `--resume` queues it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The paths at which a person's uncommitted change in the main worktree holds its
    /// landing: it stays in the queue, tried again as the queue moves and every second, and
    /// the run's end leaves it to `--resume`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    /// The agent's question its loop waits on a person's answer to, from when it asked until
    /// its next iteration starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Where a person answers it (`TODO.md:3`, an issue's address), once it is put there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_at: Option<String>,
}

impl LaneRecord {
    /// A lane just started, in `state`, with nothing else to say yet.
    pub fn new(state: LaneState) -> Self {
        Self {
            state,
            returns: 0,
            conflict: None,
            run_id: None,
            untold: None,
            refused: None,
            held: Vec::new(),
            question: None,
            answer_at: None,
        }
    }
}

/// A parallel run's session, as `.ralph/parallel/session.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ParallelSession {
    /// The file's version ([`SESSION_VERSION`]).
    pub version: u32,
    /// The run's id.
    pub run_id: String,
    /// The base branch's name.
    pub base: String,
    /// Lanes at once.
    pub parallel: usize,
    /// Lanes by task id; a task without one has not started.
    pub lanes: BTreeMap<String, LaneRecord>,
    /// Queued task ids in queue order.
    pub queue: Vec<String>,
    /// Blocks decided and not yet marked in the task list, in order: the merge queue marks
    /// each in its turn, before the next landing.
    #[serde(default)]
    pub blocks: Vec<PendingBlock>,
    /// Lanes' questions not yet put where their tasks live, in order: the merge queue puts
    /// each in its turn (a file list's in a commit on the base), as it marks a block.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asks: Vec<PendingAsk>,
    /// Whether the run ended by itself (nothing to resume).
    pub ended: bool,
}

impl ParallelSession {
    /// A new run's session: no lane started, nothing queued.
    pub fn new(run_id: String, base: String, parallel: usize) -> Self {
        Self {
            version: SESSION_VERSION,
            run_id,
            base,
            parallel,
            lanes: BTreeMap::new(),
            queue: Vec::new(),
            blocks: Vec::new(),
            asks: Vec::new(),
            ended: false,
        }
    }

    /// Where the repository whose main worktree is `top` keeps its parallel run's session.
    pub fn path(top: &Path) -> PathBuf {
        top.join(SESSION_FILE)
    }

    /// Reads the session file at `path`.
    pub fn read(path: &Path) -> Result<Self, ParallelSessionError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ParallelSessionError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        let session: Self =
            serde_json::from_str(&text).map_err(|cause| ParallelSessionError::Malformed {
                path: path.to_path_buf(),
                cause,
            })?;
        if session.version != SESSION_VERSION {
            return Err(ParallelSessionError::Version {
                path: path.to_path_buf(),
                found: session.version,
            });
        }
        Ok(session)
    }
}

/// A task the run blocked whose mark waits for its turn in the merge queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingBlock {
    /// The task.
    pub task_id: String,
    /// Why, as the task list will say it.
    pub reason: String,
}

impl PendingBlock {
    /// `task_id` to be marked blocked for `reason`.
    pub fn new(task_id: String, reason: String) -> Self {
        Self { task_id, reason }
    }
}

/// A lane's question waiting for its turn in the merge queue to be put where its task lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingAsk {
    /// The task.
    pub task_id: String,
    /// The agent's question.
    pub question: String,
}

impl PendingAsk {
    /// `task_id`'s agent asking `question`.
    pub fn new(task_id: String, question: String) -> Self {
        Self { task_id, question }
    }
}

/// A parallel run as its session tells it: what `ralph status` shows.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParallelStatus {
    /// The run's id.
    pub run_id: String,
    /// The base branch.
    pub base: String,
    /// Lanes at once.
    pub parallel: usize,
    /// Whether it ended by itself (otherwise it runs, or `--resume` goes on with it).
    pub ended: bool,
    /// Every lane that started, by task id.
    pub lanes: Vec<LaneStatus>,
    /// The merge queue, next first.
    pub queue: Vec<String>,
}

impl ParallelStatus {
    /// The parallel run whose session file is `path` (`<top>/`[`SESSION_FILE`]); `None` when
    /// there is no such file (no parallel run ever ran there).
    pub fn read(path: &Path) -> Result<Option<Self>, ParallelSessionError> {
        if !path.exists() {
            return Ok(None);
        }
        ParallelSession::read(path).map(|session| Some(Self::from(session)))
    }
}

impl From<ParallelSession> for ParallelStatus {
    fn from(session: ParallelSession) -> Self {
        Self {
            run_id: session.run_id,
            base: session.base,
            parallel: session.parallel,
            ended: session.ended,
            lanes: session
                .lanes
                .into_iter()
                .map(|(task_id, l)| LaneStatus {
                    task_id,
                    state: l.state,
                    returns: l.returns,
                    run_id: l.run_id,
                    refused: l.refused,
                    held: l.held,
                    question: l.question,
                    answer_at: l.answer_at,
                })
                .collect(),
            queue: session.queue,
        }
    }
}

/// One lane of a [`ParallelStatus`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LaneStatus {
    /// The task.
    pub task_id: String,
    /// Where it stands.
    pub state: LaneState,
    /// Times it came back from the queue.
    pub returns: u64,
    /// Its latest loop's run id.
    pub run_id: Option<String>,
    /// Why the base refused its landing, which `--resume` tries again.
    pub refused: Option<String>,
    /// The paths at which a person's uncommitted change in the main worktree holds its
    /// landing (empty: none).
    pub held: Vec<String>,
    /// The agent's question its loop waits on a person's answer to.
    pub question: Option<String>,
    /// Where a person answers it, once the run put it there.
    pub answer_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session as the coordinator writes it (pretty JSON, every field in use), verbatim.
    const WRITTEN: &str = r#"{
  "version": 1,
  "run_id": "20260302-100000-1a2b",
  "base": "main",
  "parallel": 2,
  "lanes": {
    "US-001": {
      "state": "landed",
      "returns": 1,
      "conflict": null,
      "run_id": "20260302-100000-9f9f",
      "untold": "4f1c"
    },
    "US-002": {
      "state": "queued",
      "returns": 0,
      "conflict": "src/cart.rs",
      "run_id": null,
      "refused": "the main worktree holds a change",
      "held": [
        "src/cart.rs"
      ],
      "question": "Which framework?",
      "answer_at": "TODO.md:3"
    }
  },
  "queue": [
    "US-002"
  ],
  "blocks": [
    {
      "task_id": "US-003",
      "reason": "too hard"
    }
  ],
  "asks": [
    {
      "task_id": "US-004",
      "question": "Why?"
    }
  ],
  "ended": false
}"#;

    #[test]
    fn a_session_file_in_the_current_format_reads_and_writes_back_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = ParallelSession::path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, WRITTEN).unwrap();
        let session = ParallelSession::read(&path).unwrap();
        assert_eq!(session.lanes["US-002"].held, ["src/cart.rs"]);
        assert_eq!(
            session.blocks,
            [PendingBlock::new("US-003".into(), "too hard".into())]
        );
        assert_eq!(serde_json::to_string_pretty(&session).unwrap(), WRITTEN);

        let status = ParallelStatus::read(&path).unwrap().expect("a session");
        assert_eq!(
            (status.run_id.as_str(), status.parallel),
            ("20260302-100000-1a2b", 2)
        );
        assert_eq!(status.lanes[0].state, LaneState::Landed);
        assert_eq!(status.lanes[1].answer_at.as_deref(), Some("TODO.md:3"));
        assert_eq!(status.queue, ["US-002"]);
    }

    #[test]
    fn a_session_written_before_blocks_reads_as_none_waiting() {
        let text = r#"{"version":1,"run_id":"r","base":"main","parallel":2,"lanes":{},"queue":[],"ended":false}"#;
        let session: ParallelSession = serde_json::from_str(text).unwrap();
        assert!(session.blocks.is_empty());
    }

    #[test]
    fn no_file_is_no_run_and_another_version_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        assert_eq!(ParallelStatus::read(&path).unwrap(), None);
        std::fs::write(&path, WRITTEN.replace("\"version\": 1", "\"version\": 2")).unwrap();
        let err = ParallelStatus::read(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: not a parallel run's session: version 2 (this ralph reads 1)",
                path.display()
            )
        );
        assert_eq!(err.path(), path);
    }
}
