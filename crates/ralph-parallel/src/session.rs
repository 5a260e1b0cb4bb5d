//! What a stopped parallel run leaves for `--resume`: the session (`.ralph/parallel/session.json`),
//! written to a temporary file and renamed, and the merge queue's step, kept in escalation's
//! [`Journal`] (`<common git dir>/ralph-merge-journal.json`) as escalation's own steps are.

use std::path::Path;

use ralph_escalation::{Journal, JournalError};
use ralph_events::parallel::ParallelSessionError;
use serde::{Deserialize, Serialize};

use crate::ParallelError;

pub(crate) use ralph_events::parallel::{
    LaneRecord, ParallelSession as Session, PendingAsk, PendingBlock, SESSION_FILE,
};

/// Writes `session` to `path` (its repository's [`SESSION_FILE`]), whole or not at all.
pub(crate) fn save(session: &Session, path: &Path) -> Result<(), ParallelError> {
    write_json(path, session)
}

impl From<ParallelSessionError> for ParallelError {
    /// The session file's errors, said as the merge journal's are.
    fn from(err: ParallelSessionError) -> Self {
        match err {
            ParallelSessionError::Io { path, cause } => ParallelError::Io { path, cause },
            other => ParallelError::Session {
                path: other.path().to_path_buf(),
                what: match other {
                    ParallelSessionError::Malformed { cause, .. } => cause.to_string(),
                    ParallelSessionError::Version { found, .. } => format!(
                        "version {found} (this ralph reads {})",
                        ralph_events::parallel::SESSION_VERSION
                    ),
                    other => other.to_string(),
                },
            },
        }
    }
}

/// The merge queue's step under way: a landing, written before the task's branch is touched,
/// or a block; the commit the base moves to added before the base moves.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MergeJournal {
    pub(crate) task_id: String,
    /// The base's commit when the step began.
    pub(crate) base_before: String,
    /// Which step.
    #[serde(flatten)]
    pub(crate) step: JournaledStep,
    /// The commit the base is about to move to.
    pub(crate) landing: Option<String>,
    /// A person's uncommitted edits of the task list's files, put aside while the main
    /// worktree moves to `landing` and then put back with the step's mark applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) kept: Vec<KeptEdit>,
    /// The step holds the main worktree's index lock (`<index>.lock`, its copy of the index
    /// in it) while it brings the worktree forward: a `--resume` after a kill then finishes
    /// or rolls back the fast-forward and lets go of the lock.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) index_locked: bool,
}

/// A person's uncommitted version of a task list file, stored as a blob while a step of the
/// queue moves the main worktree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct KeptEdit {
    /// The file, relative to the top, `/`-separated.
    pub(crate) path: String,
    /// Its bytes' blob id.
    pub(crate) blob: String,
}

/// The kind of step a [`MergeJournal`] records, told apart by its field.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum JournaledStep {
    /// Landing the task: its branch's commit when the merge began.
    Landing { branch_before: String },
    /// Marking the task blocked in the task list, for this reason.
    Block { blocked: String },
    /// Putting a lane's question in the task list: the list's record of it, to hand the lane
    /// once the base moved.
    Ask { asked: ralph_tasks::Asked },
}

impl MergeJournal {
    /// The merge queue's journal of the repository whose common git directory is
    /// `common_dir`: one for all its worktrees, as the base is.
    pub(crate) fn journal(common_dir: &Path) -> Journal<MergeJournal> {
        Journal::at(common_dir.join("ralph-merge-journal.json"))
    }
}

impl From<JournalError> for ParallelError {
    /// The merge journal's errors, said as the session's are.
    fn from(err: JournalError) -> Self {
        match err {
            JournalError::Io { path, cause, .. } => ParallelError::Io { path, cause },
            JournalError::Malformed { path, cause } => ParallelError::Session {
                path,
                what: cause.to_string(),
            },
            other => ParallelError::Session {
                path: other.path().to_path_buf(),
                what: other.to_string(),
            },
        }
    }
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), ParallelError> {
    let text = serde_json::to_vec_pretty(value).map_err(|err| ParallelError::Session {
        path: path.to_path_buf(),
        what: err.to_string(),
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|cause| ParallelError::Io {
            path: dir.to_path_buf(),
            cause,
        })?;
    }
    ralph_atomic::write(path, &text).map_err(|cause| ParallelError::Io {
        path: path.to_path_buf(),
        cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_tells_a_landing_from_a_block_and_reads_one_written_before_blocks() {
        let older = r#"{"task_id":"US-1","base_before":"a","branch_before":"b","landing":null}"#;
        let journal: MergeJournal = serde_json::from_str(older).unwrap();
        assert!(
            matches!(&journal.step, JournaledStep::Landing { branch_before } if branch_before == "b")
        );
        let block = MergeJournal {
            task_id: "US-2".to_owned(),
            base_before: "a".to_owned(),
            step: JournaledStep::Block {
                blocked: "why".to_owned(),
            },
            landing: Some("c".to_owned()),
            kept: Vec::new(),
            index_locked: false,
        };
        let text = serde_json::to_string(&block).unwrap();
        assert_eq!(
            text,
            r#"{"task_id":"US-2","base_before":"a","blocked":"why","landing":"c"}"#
        );
        let back: MergeJournal = serde_json::from_str(&text).unwrap();
        assert!(matches!(&back.step, JournaledStep::Block { blocked } if blocked == "why"));
    }

    #[test]
    fn a_journaled_question_reads_back_as_one_with_the_lists_record() {
        let asked = ralph_tasks::Asked::new(
            "US-3",
            "Which framework?",
            "TODO.md:3",
            serde_json::Value::String("Which framework?".to_owned()),
        );
        let journal = MergeJournal {
            task_id: "US-3".to_owned(),
            base_before: "a".to_owned(),
            step: JournaledStep::Ask {
                asked: asked.clone(),
            },
            landing: Some("c".to_owned()),
            kept: Vec::new(),
            index_locked: false,
        };
        let text = serde_json::to_string(&journal).unwrap();
        let back: MergeJournal = serde_json::from_str(&text).unwrap();
        assert!(matches!(&back.step, JournaledStep::Ask { asked: read } if *read == asked));
    }

    #[test]
    fn a_merge_journal_an_earlier_ralph_left_is_read_back_then_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let journal = MergeJournal::journal(dir.path());
        assert_eq!(journal.path(), dir.path().join("ralph-merge-journal.json"));
        // As a killed run wrote it before the journal was escalation's type.
        let left = "{\n  \"task_id\": \"US-1\",\n  \"base_before\": \"a\",\n  \
                    \"branch_before\": \"b\",\n  \"landing\": \"c\",\n  \"index_locked\": true\n}";
        std::fs::write(journal.path(), left).unwrap();
        let read = journal.read().unwrap().unwrap();
        assert!(
            matches!(&read.step, JournaledStep::Landing { branch_before } if branch_before == "b")
        );
        assert_eq!(read.landing.as_deref(), Some("c"));
        assert!(read.index_locked);
        journal.write(&read).unwrap();
        assert_eq!(std::fs::read_to_string(journal.path()).unwrap(), left);
        journal.clear().unwrap();
        assert!(journal.read().unwrap().is_none());
    }

    #[test]
    fn a_merge_journal_that_does_not_parse_is_the_sessions_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let journal = MergeJournal::journal(dir.path());
        std::fs::write(journal.path(), "{").unwrap();
        let err = ParallelError::from(journal.read().unwrap_err());
        assert!(
            matches!(&err, ParallelError::Session { path, .. } if path == journal.path()),
            "{err}"
        );
    }
}
