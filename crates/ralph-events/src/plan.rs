//! What `ralph plan` reports: its events and end reasons, written by the engine as a task
//! source's and read back by whoever reads the run.

use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::end::{EndReason, exit};
use crate::task_event::TaskEvent;

/// `RUN_ENDED`'s reason when the plan was written (exit 0).
pub const PLAN_WRITTEN: &str = "plan_written";
/// `RUN_ENDED`'s reason when the plan was shown and not written (`--dry-run`; exit 0).
pub const PLAN_SHOWN: &str = "plan_shown";
/// `RUN_ENDED`'s reason when every answer was invalid (exit 1): nothing was written.
pub const PLAN_INVALID: &str = "plan_invalid";

/// An event of `ralph plan`. Serialised with a `type` field in SCREAMING_SNAKE_CASE, flat in
/// the event line like the engine's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum PlanEvent {
    /// The planning agent is asked for a plan (once, before its first answer).
    PlanStarted {
        /// The list's kind: `prd`, `markdown` or `github`.
        format: String,
        /// Where the tasks go (a path, or `owner/repo`).
        list: String,
        /// With `--split`: the task split into smaller ones.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        split: Option<String>,
    },
    /// An answer could not be used; it goes back to the agent with these errors, unless it
    /// was the last one allowed.
    PlanInvalid {
        /// The answer, from 1.
        answer: u64,
        /// Every reason, in the words the agent is given.
        errors: Vec<String>,
        /// Whether the agent is asked again.
        retry: bool,
    },
    /// The plan was written to the list (or, with `--dry-run`, only shown).
    PlanWritten {
        /// Where.
        list: String,
        /// The new tasks' ids, in order.
        tasks: Vec<String>,
        /// Whether they were added to a list that had tasks already.
        appended: bool,
        /// `--dry-run`: shown, nothing written.
        #[serde(default)]
        dry_run: bool,
    },
}

impl From<PlanEvent> for TaskEvent {
    fn from(event: PlanEvent) -> Self {
        // A derived enum of strings and numbers always serialises to a tagged object.
        TaskEvent::from_tagged(&event).unwrap_or_else(|_| TaskEvent::new("PLAN_EVENT", Map::new()))
    }
}

/// The ending `reason` (one of [`PLAN_WRITTEN`], [`PLAN_SHOWN`], [`PLAN_INVALID`]).
pub fn end(reason: &str) -> EndReason {
    let ok = reason != PLAN_INVALID;
    EndReason::Task {
        reason: reason.to_owned(),
        exit_code: if ok { exit::OK } else { exit::FAILURE },
        converged: ok,
        resumable: false,
    }
}
