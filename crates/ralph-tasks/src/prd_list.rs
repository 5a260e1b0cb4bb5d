//! prd.json as a [`TaskList`]: stories are tasks, `passes` their state, a [`Mark`] edits only
//! the story's `passes` and `notes` in the text as it is at the write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::list::{
    Asked, ListedTask, Mark, STORY_PLACEHOLDERS, TASK_PLACEHOLDERS, TaskList, TaskListError,
    TaskState,
};
use crate::prd::{self, Passes, Prd, PrdError, Story};

/// Reads of a prd.json that does not parse before its error stands, [`MALFORMED_PAUSE`] apart.
const MALFORMED_TRIES: u32 = 5;

/// The pause between those reads: long enough for an editor's in-place save to finish.
const MALFORMED_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Stories from a prd.json.
#[derive(Debug)]
pub struct PrdList {
    /// The file (a symlink's target).
    path: PathBuf,
    /// The path as written, when a symlink: a revert leaves the link alone too.
    link: Option<PathBuf>,
    /// The last parse, reused while the bytes stay the same.
    cache: prd::Cache,
}

impl PrdList {
    /// The prd.json at `path` (a symlink followed once, here: files are replaced by renaming
    /// a new one over them, which would replace the link itself).
    pub fn new(path: PathBuf) -> Self {
        let followed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone())
            }
            _ => path.clone(),
        };
        Self {
            link: (followed != path).then_some(path),
            path: followed,
            cache: prd::Cache::default(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads and validates prd.json, with its located errors. A file that does not parse is
    /// read again after a short pause, a few times: an editor saving in place (truncate, then
    /// write) leaves it empty or cut for a moment.
    pub fn prd(&mut self) -> Result<Prd, PrdError> {
        let mut tries = 1;
        loop {
            match self.cache.load(&self.path) {
                Err(PrdError::Malformed { .. }) if tries < MALFORMED_TRIES => {
                    tries += 1;
                    std::thread::sleep(MALFORMED_PAUSE);
                }
                outcome => return outcome,
            }
        }
    }
}

impl From<PrdError> for TaskListError {
    fn from(err: PrdError) -> Self {
        match err {
            PrdError::Read { .. } | PrdError::Malformed { .. } | PrdError::KeepsChanging { .. } => {
                Self::Unreadable(Box::new(err))
            }
            PrdError::NoSuchStory { path, id } => Self::NoSuchTask {
                location: path.display().to_string(),
                id,
            },
            PrdError::NoSuchQuestion { path, id, question } => Self::NoSuchQuestion {
                at: format!("{} ({id}'s notes)", path.display()),
                question,
            },
            other => Self::Failed(Box::new(other)),
        }
    }
}

impl TaskList for PrdList {
    fn kind(&self) -> &str {
        "prd"
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn files(&self) -> Vec<PathBuf> {
        std::iter::once(self.path.clone())
            .chain(self.link.clone())
            .collect()
    }

    fn load(&mut self) -> Result<Vec<ListedTask>, TaskListError> {
        Ok(self.prd()?.stories().iter().map(listed).collect())
    }

    fn marked_files(&mut self, mark: &Mark) -> Result<Vec<(PathBuf, Vec<u8>)>, TaskListError> {
        // The file as it is now, or as ralph last read it when it does not parse now.
        let mut prd = match self.cache.load(&self.path) {
            Ok(prd) => prd,
            Err(err) => self.cache.last_good().cloned().ok_or(err)?,
        };
        mark.apply(&mut prd)?;
        Ok(vec![(self.path.clone(), prd.to_text().into_bytes())])
    }

    fn write_mark(&mut self, mark: &Mark) -> Result<(), TaskListError> {
        self.cache.write_mark(&self.path, mark)?;
        Ok(())
    }

    fn can_ask(&self) -> bool {
        true
    }

    /// The question in the story's notes, as the file is now (every other byte kept).
    fn ask(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let mut asked = String::new();
        self.cache.update(&self.path, |prd| {
            asked = prd.ask(task_id, question)?;
            Ok(true)
        })?;
        Ok(Asked::new(
            task_id,
            question,
            format!("{} ({task_id}'s notes)", self.location()),
            serde_json::Value::String(asked),
        ))
    }

    fn answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let Some(question) = asked.token.as_str() else {
            return Ok(None);
        };
        Ok(self.prd()?.answer(&asked.task_id, question)?)
    }
}

/// A story as a task.
fn listed(story: &Story) -> ListedTask {
    let mut task = ListedTask::new(story.id.clone(), story.title.clone());
    task.priority = story.priority;
    task.state = match story.passes {
        Passes::No => TaskState::Pending,
        Passes::Yes => TaskState::Passed,
        Passes::Blocked => TaskState::Blocked,
    };
    task.placeholders = placeholders(story);
    // `dependsOn`, when the story has one: a list of story ids, or one id alone (`"E"` reads
    // as `["E"]`: a person who wrote one dependency meant it, and ignoring it would start the
    // story too early).
    task.depends_on = serde_json::from_str::<serde_json::Value>(&story.json)
        .ok()
        .and_then(|v| match v.get("dependsOn")? {
            serde_json::Value::String(id) => Some(vec![id.clone()]),
            serde_json::Value::Array(ids) => Some(
                ids.iter()
                    .filter_map(|id| id.as_str().map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default();
    task
}

/// The `{{ story.* }}` values of `story`, one for each name validation knows
/// ([`STORY_PLACEHOLDERS`]), and the same story under the `{{ task.* }}` names every list
/// shares.
pub(crate) fn placeholders(story: &Story) -> BTreeMap<String, String> {
    let criteria = story
        .acceptance_criteria
        .iter()
        .map(|c| format!("- {c}"))
        .collect::<Vec<_>>()
        .join("\n");
    let story_values = STORY_PLACEHOLDERS.iter().filter_map(|name| {
        let value = match *name {
            "id" => story.id.clone(),
            "title" => story.title.clone(),
            "description" => story.description.clone(),
            "acceptance_criteria" => criteria.clone(),
            "json" => story.json.clone(),
            // Set by the escalation, not the story: see `Escalation::set_conflict`.
            "conflict" => String::new(),
            _ => return None,
        };
        Some((format!("story.{name}"), value))
    });
    let body = match criteria.is_empty() {
        true => story.description.clone(),
        false => format!("{}\n\nAcceptance criteria:\n{criteria}", story.description),
    };
    let task_values = TASK_PLACEHOLDERS.iter().filter_map(|name| {
        let value = match *name {
            "id" => story.id.clone(),
            "title" => story.title.clone(),
            "body" => body.clone(),
            // Filled by escalation once a person answered.
            _ => return None,
        };
        Some((format!("task.{name}"), value))
    });
    story_values.chain(task_values).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `{{ story.* }}` name validation accepts gets a value in story mode.
    #[test]
    fn every_story_placeholder_validation_knows_gets_a_value() {
        let story = Story {
            id: "US-1".to_owned(),
            title: "Cart".to_owned(),
            description: "A cart".to_owned(),
            acceptance_criteria: vec!["a".to_owned(), "b".to_owned()],
            priority: 1.0,
            passes: Passes::No,
            json: "{}".to_owned(),
        };
        let values = placeholders(&story);
        let names: Vec<&str> = values
            .keys()
            .filter_map(|k| k.strip_prefix("story."))
            .collect();
        let mut expected = STORY_PLACEHOLDERS.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected);
        assert_eq!(values["story.acceptance_criteria"], "- a\n- b");
        assert_eq!(values["task.title"], "Cart");
        assert_eq!(
            values["task.body"],
            "A cart\n\nAcceptance criteria:\n- a\n- b"
        );
    }

    /// Story `US-2` as `json` writes it.
    fn story(json: &str) -> Story {
        Story {
            id: "US-2".to_owned(),
            title: "Checkout".to_owned(),
            description: String::new(),
            acceptance_criteria: Vec::new(),
            priority: 2.0,
            passes: Passes::No,
            json: json.to_owned(),
        }
    }

    /// A story's `dependsOn` is the task's `depends_on`: a parallel run waits on it.
    #[test]
    fn depends_on_comes_from_the_story() {
        let story = story(r#"{"id": "US-2", "dependsOn": ["US-1", 7]}"#);
        assert_eq!(listed(&story).depends_on, ["US-1"]);
    }

    /// One id alone, not in a list, is that one dependency.
    #[test]
    fn depends_on_one_id_alone_is_that_dependency() {
        let story = story(r#"{"id": "US-2", "dependsOn": "US-1"}"#);
        assert_eq!(listed(&story).depends_on, ["US-1"]);
    }
}
