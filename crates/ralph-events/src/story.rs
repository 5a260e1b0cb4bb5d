//! What story mode (ralph-escalation) reports: its events and end reasons, which the engine
//! writes as [`TaskEvent`]s and [`EndReason::Task`] without knowing what a story is, and which
//! a reader reads back from them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::end::{EndReason, exit};
use crate::task_event::TaskEvent;

pub mod run_folder;

/// An escalation event. Serialised with a `type` field in SCREAMING_SNAKE_CASE, flat in the
/// event line like the engine's own; a sink gets it back from a [`TaskEvent`] with
/// [`StoryEvent::from_task_event`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum StoryEvent {
    /// The circuit breaker tripped on a task.
    CircuitTripped {
        /// The story; `None` without stories (`escalation.prd`).
        story_id: Option<String>,
        /// `same_error`, `max_attempts` or `blocked` (the agent's marker).
        reason: String,
        /// `same_error`: the same-error streak; `max_attempts` and `blocked`: the attempts made
        /// on the task, this one included.
        count: u64,
        /// The persistent error's signature (16 hex digits), when checks failed.
        signature: Option<String>,
    },
    /// The work since the checkpoint was saved under a ref, then reverted.
    Reverted {
        /// The story; `None` without stories.
        story_id: Option<String>,
        /// The commit the tree went back to.
        checkpoint: String,
        /// The ref holding the abandoned work (`git checkout <ref>` gets it back).
        saved_ref: String,
    },
    /// A story was marked `"blocked"` in prd.json.
    StoryBlocked {
        /// The story.
        story_id: String,
        /// Why, as written in its `notes`.
        reason: String,
    },
    /// A story passed; the loop goes on with the next one.
    StoryPassed {
        /// The story.
        story_id: String,
        /// Attempts it took.
        attempts: u64,
        /// The checkpoint recorded for it (HEAD, after committing its work); `None` when none is
        /// kept (one is kept only with `escalation.revert`).
        checkpoint: Option<String>,
    },
    /// An attempt on a story begins (before its first iteration, and before each new attempt).
    StoryStarted {
        /// The story.
        story_id: String,
        /// Its title.
        title: String,
        /// The attempt, from 1.
        attempt: u64,
        /// The attempts the circuit breaker allows (`convergence.max_attempts`).
        max_attempts: u64,
    },
    /// `land.pr`: the task's branch was pushed and a pull request opened for it.
    PrOpened {
        /// The task.
        story_id: String,
        /// The request's number.
        number: u64,
        /// Its page on the forge.
        url: String,
        /// `open`.
        state: String,
        /// The pushed branch (`ralph/US-1`).
        branch: String,
        /// The branch it lands on.
        base: String,
    },
    /// `land.pr`: the task's branch was pushed again and its open pull request's title and
    /// body replaced (a re-run or a resumed run).
    PrUpdated {
        /// The task.
        story_id: String,
        /// The request's number.
        number: u64,
        /// Its page on the forge.
        url: String,
        /// `open`.
        state: String,
        /// The pushed branch.
        branch: String,
        /// The branch it lands on.
        base: String,
    },
    /// `land.pr`: the branch's pull request was closed unmerged by a person: nothing was
    /// pushed and it was not reopened.
    PrClosed {
        /// The task.
        story_id: String,
        /// The request's number.
        number: u64,
        /// Its page on the forge.
        url: String,
        /// `closed`.
        state: String,
        /// The task's branch.
        branch: String,
        /// The branch it was to land on.
        base: String,
    },
}

impl StoryEvent {
    /// The escalation event a task event is, or `None` when another source wrote it.
    pub fn from_task_event(event: &TaskEvent) -> Option<Self> {
        event.to_tagged().ok()
    }
}

impl From<StoryEvent> for TaskEvent {
    fn from(event: StoryEvent) -> Self {
        // A derived enum of strings and numbers always serialises to a tagged object.
        TaskEvent::from_tagged(&event).unwrap_or_else(|_| TaskEvent::new("STORY_EVENT", Map::new()))
    }
}

/// Story mode: the story an iteration works on and the attempt on it, written flat into its
/// `ITERATION_STARTED` as task fields (`"story_id":"US-1","attempt":2`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoryAttempt {
    /// The story.
    pub story_id: String,
    /// The attempt on it, from 1.
    pub attempt: u64,
}

impl StoryAttempt {
    /// The key the story is written under.
    pub const STORY_ID: &'static str = "story_id";
    /// The key the attempt is written under.
    pub const ATTEMPT: &'static str = "attempt";

    /// The attempt `attempt` on `story_id`.
    pub fn new(story_id: impl Into<String>, attempt: u64) -> Self {
        Self {
            story_id: story_id.into(),
            attempt,
        }
    }

    /// It as task fields: `{"story_id": ..., "attempt": ...}`.
    pub fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert(Self::STORY_ID.to_owned(), self.story_id.clone().into());
        fields.insert(Self::ATTEMPT.to_owned(), self.attempt.into());
        fields
    }
}

/// Why escalation ended a run: the `RUN_ENDED` reasons it owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoryEnd {
    /// Every story passed (exit 0; counts as converged).
    StoriesDone,
    /// No story is left to do, and some are blocked (exit 1).
    StoriesBlocked,
    /// Without stories: the circuit breaker tripped, the work was logged and reverted (exit 1).
    CircuitOpen,
    /// `max_iterations` ran out with stories still to do (exit 1; `ralph run --resume` goes
    /// on).
    MaxIterationsWorkLeft,
    /// No story can start, and some are still to do: they wait on a `dependsOn` that cannot
    /// pass (a blocked or missing story) (exit 1), as a parallel run's `work_left`.
    WorkLeft,
    /// `ralph run --task ID`: the story passed (exit 0; counts as converged).
    TaskPassed,
    /// `ralph run --task ID`: the story is blocked ([`exit::TASK_BLOCKED`]).
    TaskBlocked,
}

impl StoryEnd {
    /// Every one of them.
    pub const ALL: [StoryEnd; 7] = [
        StoryEnd::StoriesDone,
        StoryEnd::StoriesBlocked,
        StoryEnd::CircuitOpen,
        StoryEnd::MaxIterationsWorkLeft,
        StoryEnd::WorkLeft,
        StoryEnd::TaskPassed,
        StoryEnd::TaskBlocked,
    ];

    /// The reason as written in `RUN_ENDED`.
    pub fn as_str(self) -> &'static str {
        match self {
            StoryEnd::StoriesDone => "stories_done",
            StoryEnd::StoriesBlocked => "stories_blocked",
            StoryEnd::CircuitOpen => "circuit_open",
            StoryEnd::MaxIterationsWorkLeft => "max_iterations_work_left",
            StoryEnd::WorkLeft => "work_left",
            StoryEnd::TaskPassed => "task_passed",
            StoryEnd::TaskBlocked => "task_blocked",
        }
    }

    /// The engine's end reason for it.
    pub fn reason(self) -> EndReason {
        EndReason::Task {
            reason: self.as_str().to_owned(),
            exit_code: match self {
                StoryEnd::StoriesDone | StoryEnd::TaskPassed => exit::OK,
                StoryEnd::TaskBlocked => exit::TASK_BLOCKED,
                _ => exit::FAILURE,
            },
            converged: matches!(self, StoryEnd::StoriesDone | StoryEnd::TaskPassed),
            resumable: self == StoryEnd::MaxIterationsWorkLeft,
        }
    }

    /// Which of these ended a run, if one did: as the task source ended it
    /// ([`EndReason::Task`]), or as read back from its events ([`EndReason::Other`], an
    /// ending named only by its words).
    pub fn of(reason: &EndReason) -> Option<Self> {
        match reason {
            EndReason::Task { reason, .. } | EndReason::Other { reason, .. } => {
                Self::from_reason(reason)
            }
            _ => None,
        }
    }

    /// The ending whose `RUN_ENDED` reason is `reason` (as a run folder's record has it).
    pub fn from_reason(reason: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|end| end.as_str() == reason)
    }
}

/// The stories of a run, as reported in `RUN_ENDED` (and the session file) under `stories`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StoriesSummary {
    /// Stories whose `passes` is `true`.
    pub passed: u64,
    /// Stories whose `passes` is `"blocked"`.
    pub blocked: u64,
    /// Stories still to do.
    pub remaining: u64,
}

impl StoriesSummary {
    /// The key it is written under.
    pub const FIELD: &'static str = "stories";

    /// It as task fields for `RUN_ENDED`: `{"stories": {...}}`.
    pub fn fields(self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert(
            Self::FIELD.to_owned(),
            serde_json::json!({
                "passed": self.passed,
                "blocked": self.blocked,
                "remaining": self.remaining,
            }),
        );
        fields
    }

    /// The summary among a run's task fields (`RUN_ENDED`, the session file), if there is one.
    pub fn from_fields(fields: &Map<String, Value>) -> Option<Self> {
        serde_json::from_value(fields.get(Self::FIELD)?.clone()).ok()
    }
}

/// What people read for a run's tasks: "story" for prd.json's user stories, "task" for any
/// other list (a Markdown checklist, GitHub issues). The wire keeps its words (`STORY_*`,
/// `stories`, `stories_done`); terminal lines, `ralph status` and reports use these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskWords {
    /// One of them: `story`, `task`.
    pub one: &'static str,
    /// Several: `stories`, `tasks`.
    pub many: &'static str,
}

impl TaskWords {
    /// prd.json's, and a run's whose fields do not name its list (written before they did).
    pub const STORY: TaskWords = TaskWords {
        one: "story",
        many: "stories",
    };
    /// Any other list's.
    pub const TASK: TaskWords = TaskWords {
        one: "task",
        many: "tasks",
    };
    /// The key a run's task fields (`RUN_ENDED`, the session file) name its list's kind under.
    pub const FIELD: &'static str = "task_list";

    /// The words for a list of kind `kind` (the task list's `kind`: `prd`, `markdown`,
    /// `github`).
    pub fn of_list(kind: &str) -> Self {
        match kind {
            "prd" => Self::STORY,
            _ => Self::TASK,
        }
    }

    /// The words for the run whose task fields are `fields`.
    pub fn from_fields(fields: &Map<String, Value>) -> Self {
        fields
            .get(Self::FIELD)
            .and_then(Value::as_str)
            .map_or(Self::STORY, Self::of_list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prd_json_has_stories_and_every_other_list_tasks() {
        assert_eq!(TaskWords::of_list("prd").one, "story");
        assert_eq!(TaskWords::of_list("markdown").many, "tasks");
        assert_eq!(TaskWords::of_list("github").one, "task");
        let mut fields = StoriesSummary {
            passed: 1,
            blocked: 0,
            remaining: 0,
        }
        .fields();
        assert_eq!(TaskWords::from_fields(&fields), TaskWords::STORY);
        fields.insert(TaskWords::FIELD.to_owned(), "markdown".into());
        assert_eq!(TaskWords::from_fields(&fields), TaskWords::TASK);
    }

    #[test]
    fn each_story_end_is_read_back_from_its_reason_with_its_exit_code() {
        for end in StoryEnd::ALL {
            assert_eq!(StoryEnd::of(&end.reason()), Some(end));
        }
        let code = |end: StoryEnd| crate::end::exit_code(&end.reason(), None);
        assert_eq!(code(StoryEnd::StoriesDone), 0);
        assert_eq!(code(StoryEnd::StoriesBlocked), 1);
        assert_eq!(code(StoryEnd::CircuitOpen), 1);
        assert_eq!(code(StoryEnd::MaxIterationsWorkLeft), 1);
        assert_eq!(StoryEnd::of(&EndReason::MaxIterations), None);
    }
}
