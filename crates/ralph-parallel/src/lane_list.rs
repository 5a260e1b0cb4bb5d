//! A lane's own task list: the one task it works on, kept in a file of the lane's beside its
//! progress file, outside its worktree. The lane's story mode reads and marks only this; the
//! run's list (prd.json, a checklist, the issues) is marked by the merge queue on the base,
//! so no lane's branch touches the shared list and the lanes never conflict over it.
//!
//! The agent's question goes the same way: the lane's list hands it to the run, whose merge
//! queue puts it where the task lives and writes the list's record of it here; the answer is
//! read from the run's list, as one loop reads it, in the main worktree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ralph_tasks::{Asked, ListedTask, Mark, TaskList, TaskListError, TaskState};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::{LaneMessage, ListSource};

/// The task as the lane's file holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LaneTask {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) placeholders: BTreeMap<String, String>,
    pub(crate) state: TaskState,
    /// Why the lane blocked it (its breaker's or the agent's reason), once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// Where the lane saved the abandoned work when it blocked the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) saved_ref: Option<String>,
    /// The run's list's record of the agent's last question, once the run put it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) asked: Option<Asked>,
}

impl LaneTask {
    /// `task` as the run's list has it, to be worked on.
    pub(crate) fn of(task: &ListedTask) -> Self {
        Self {
            id: task.id.clone(),
            title: task.title.clone(),
            placeholders: task.placeholders.clone(),
            state: TaskState::Pending,
            reason: None,
            saved_ref: None,
            asked: None,
        }
    }

    /// The lane's task as its file at `path` holds it.
    pub(crate) fn read(path: &Path) -> Result<Self, TaskListError> {
        let failed =
            |err: String| TaskListError::Failed(format!("{}: {err}", path.display()).into());
        let text = std::fs::read_to_string(path).map_err(|err| failed(err.to_string()))?;
        serde_json::from_str(&text).map_err(|err| failed(err.to_string()))
    }

    /// Writes it to `path` (a temp file renamed).
    pub(crate) fn write(&self, path: &Path) -> Result<(), std::io::Error> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        ralph_atomic::write(path, text.as_bytes())
    }
}

/// Where a lane's question goes and its answer comes from: the run's list.
pub(crate) struct Asking {
    /// The run, told of the question as `LaneMessage::Asked`.
    pub(crate) run: mpsc::UnboundedSender<LaneMessage>,
    /// Builds the run's list over a folder.
    pub(crate) list_at: ListSource,
    /// The RALPH.md's folder in the main worktree, where a person writes the answer.
    pub(crate) main_cwd: PathBuf,
}

/// The lane's one task as a [`TaskList`].
pub(crate) struct LaneList {
    path: PathBuf,
    /// The run's list's kind and location, for messages.
    kind: String,
    location: String,
    /// `None`: the run's list cannot put a question to a person.
    asking: Option<Asking>,
}

impl std::fmt::Debug for LaneList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneList")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("location", &self.location)
            .field("asks", &self.asking.is_some())
            .finish()
    }
}

impl LaneList {
    pub(crate) fn new(
        path: PathBuf,
        kind: String,
        location: String,
        asking: Option<Asking>,
    ) -> Self {
        Self {
            path,
            kind,
            location,
            asking,
        }
    }

    fn read(&self) -> Result<LaneTask, TaskListError> {
        LaneTask::read(&self.path)
    }
}

impl TaskList for LaneList {
    fn kind(&self) -> &str {
        &self.kind
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn load(&mut self) -> Result<Vec<ListedTask>, TaskListError> {
        let task = self.read()?;
        let mut listed = ListedTask::new(task.id, task.title);
        listed.placeholders = task.placeholders;
        listed.state = task.state;
        Ok(vec![listed])
    }

    fn write_mark(&mut self, mark: &Mark) -> Result<(), TaskListError> {
        let mut task = self.read()?;
        if mark.story_id() != task.id {
            return Err(TaskListError::NoSuchTask {
                location: self.location.clone(),
                id: mark.story_id().to_owned(),
            });
        }
        match mark {
            Mark::Passed { .. } => task.state = TaskState::Passed,
            Mark::Blocked {
                reason, saved_ref, ..
            } => {
                task.state = TaskState::Blocked;
                task.reason = Some(reason.clone());
                task.saved_ref = saved_ref.clone();
            }
            // A mark this ralph does not know changes nothing.
            _ => {}
        }
        self.write(&task)
    }

    fn can_ask(&self) -> bool {
        self.asking.is_some()
    }

    /// Hands the question to the run, which puts it where the task lives in the merge
    /// queue's turn; until then the lane's wait finds no answer.
    fn ask(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let Some(asking) = &self.asking else {
            return Err(TaskListError::CannotAsk {
                kind: self.kind.clone(),
                location: self.location.clone(),
            });
        };
        let mut task = self.read()?;
        task.asked = None;
        self.write(&task)?;
        asking
            .run
            .send(LaneMessage::Asked(task_id.to_owned(), question.to_owned()))
            .map_err(|_| TaskListError::Failed("the parallel run ended".into()))?;
        Ok(Asked::new(
            task_id,
            question,
            self.location.clone(),
            serde_json::Value::Null,
        ))
    }

    /// The run's list's answer to the question the run put there, read in the main worktree.
    fn answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let Some(asking) = &self.asking else {
            return Ok(None);
        };
        let Some(put) = self
            .read()?
            .asked
            .filter(|put| put.question == asked.question)
        else {
            return Ok(None);
        };
        (asking.list_at)(&asking.main_cwd)?.answer(&put)
    }
}

impl LaneList {
    fn write(&self, task: &LaneTask) -> Result<(), TaskListError> {
        task.write(&self.path)
            .map_err(|err| TaskListError::Failed(format!("{}: {err}", self.path.display()).into()))
    }
}
