//! Each task's pull request (`land.pr`), as the events tell it (`PR_OPENED`, `PR_UPDATED`,
//! `PR_CLOSED`): one loop's in its run folder's `events.jsonl` (`story_id`), a parallel run's
//! in the coordinator's (`task_id`). What `ralph status`, `ralph watch` and `ralph report`
//! show of them.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

/// The event types that tell of a pull request.
pub(crate) const TYPES: [&str; 3] = ["PR_OPENED", "PR_UPDATED", "PR_CLOSED"];

/// A task's pull request, as its last event told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PullRequest {
    /// Its page on the forge.
    pub(crate) url: String,
    /// `open`, `closed`, `merged`.
    pub(crate) state: String,
    /// What ralph did last: `opened`, `updated`, or `closed` (found closed, left so).
    pub(crate) done: &'static str,
}

impl PullRequest {
    /// The request an event tells of, with its task, or `None` for any other event.
    pub(crate) fn from_event(event: &Value) -> Option<(String, Self)> {
        let done = match event["type"].as_str()? {
            "PR_OPENED" => "opened",
            "PR_UPDATED" => "updated",
            "PR_CLOSED" => "closed",
            _ => return None,
        };
        let task = event["task_id"]
            .as_str()
            .or_else(|| event["story_id"].as_str())?;
        let pr = Self {
            url: event["url"].as_str()?.to_owned(),
            state: event["state"].as_str().unwrap_or_default().to_owned(),
            done,
        };
        Some((task.to_owned(), pr))
    }

    /// `https://github.com/o/r/pull/7 (open)`.
    pub(crate) fn words(&self) -> String {
        format!("{} ({})", self.url, self.state)
    }

    /// Its `--json` form.
    pub(crate) fn json(&self) -> Value {
        json!({ "url": self.url, "state": self.state, "last": self.done })
    }
}

/// Each task's pull request in `events`, the last event for each winning.
pub(crate) fn from_events<'a>(
    events: impl IntoIterator<Item = &'a Value>,
) -> BTreeMap<String, PullRequest> {
    events
        .into_iter()
        .filter_map(PullRequest::from_event)
        .collect()
}

/// The pull requests one loop's run folder records.
pub(crate) fn of_run_folder(log_dir: &Path) -> BTreeMap<String, PullRequest> {
    let text = std::fs::read_to_string(log_dir.join("events.jsonl")).unwrap_or_default();
    let events: Vec<Value> = text
        .lines()
        .filter(|line| TYPES.iter().any(|t| line.contains(t)))
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    from_events(&events)
}

/// The pull requests parallel run `run_id` of `folder`'s repository opened.
pub(crate) fn of_parallel_run(folder: &Path, run_id: &str) -> BTreeMap<String, PullRequest> {
    let Some(events) = ralph_parallel::events_file(folder)
        .and_then(|path| ralph_events::parallel::read_events(&path).ok())
    else {
        return BTreeMap::new();
    };
    let events: Vec<Value> = events
        .iter()
        .filter(|e| e.run_id == run_id)
        .filter_map(|e| serde_json::to_value(e).ok())
        .collect();
    from_events(&events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_event_of_each_task_tells_its_request() {
        let events = [
            json!({"type": "PR_OPENED", "story_id": "7", "url": "u7", "state": "open"}),
            json!({"type": "PR_OPENED", "task_id": "8", "url": "u8", "state": "open"}),
            json!({"type": "PR_UPDATED", "story_id": "7", "url": "u7", "state": "open"}),
            json!({"type": "TASK_LANDED", "task_id": "9", "commit": "c"}),
        ];
        let found = from_events(&events);
        assert_eq!(found.len(), 2);
        assert_eq!(found["7"].done, "updated");
        assert_eq!(found["8"].words(), "u8 (open)");
    }
}
