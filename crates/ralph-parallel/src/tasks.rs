//! The tasks a parallel run schedules, and which of them can start now.
//!
//! Story mode makes the list from prd.json; another task source can hand the same list. Pure:
//! no I/O.

use ralph_escalation::{Passes, Prd};

/// Where a task stands on the base branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskState {
    /// Still to do.
    Pending,
    /// Done: landed on the base (prd.json `passes: true`).
    Passed,
    /// Given up (`passes: "blocked"`).
    Blocked,
}

/// One task of a parallel run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Task {
    /// Its id: the branch is `ralph/<id>`, the worktree `.ralph/worktrees/<id>`.
    pub id: String,
    /// Its title, for people.
    pub title: String,
    /// Lower starts first.
    pub priority: f64,
    /// The ids that must have passed before it starts.
    pub depends_on: Vec<String>,
    /// Where it stands.
    pub state: TaskState,
}

impl Task {
    /// A pending task with no dependencies.
    pub fn new(id: impl Into<String>, title: impl Into<String>, priority: f64) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            priority,
            depends_on: Vec::new(),
            state: TaskState::Pending,
        }
    }
}

/// prd.json's stories as tasks: `id`, `title`, `priority`, `dependsOn` (a list of ids, when
/// present) and `passes`.
pub fn tasks_from_prd(prd: &Prd) -> Vec<Task> {
    prd.stories()
        .iter()
        .map(|story| {
            let depends_on = serde_json::from_str::<serde_json::Value>(&story.json)
                .ok()
                .and_then(|v| {
                    v.get("dependsOn").and_then(|d| d.as_array()).map(|ids| {
                        ids.iter()
                            .filter_map(|id| id.as_str().map(str::to_owned))
                            .collect()
                    })
                })
                .unwrap_or_default();
            Task {
                id: story.id.clone(),
                title: story.title.clone(),
                priority: story.priority,
                depends_on,
                state: match story.passes {
                    Passes::Yes => TaskState::Passed,
                    Passes::Blocked => TaskState::Blocked,
                    _ => TaskState::Pending,
                },
            }
        })
        .collect()
}

/// The pending tasks that may start now, best first, at most `slots`: not `busy` (running,
/// queued or done in this run), every dependency passed. Lower priority first, then list
/// order.
pub fn startable(tasks: &[Task], busy: impl Fn(&str) -> bool, slots: usize) -> Vec<&Task> {
    let passed = |id: &String| {
        tasks
            .iter()
            .any(|t| &t.id == id && t.state == TaskState::Passed)
    };
    let mut ready: Vec<(usize, &Task)> = tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.state == TaskState::Pending && !busy(&t.id))
        .filter(|(_, t)| t.depends_on.iter().all(passed))
        .collect();
    ready.sort_by(|(i, a), (j, b)| a.priority.total_cmp(&b.priority).then(i.cmp(j)));
    ready.into_iter().take(slots).map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, priority: f64, deps: &[&str]) -> Task {
        let mut t = Task::new(id, id, priority);
        t.depends_on = deps.iter().map(|d| (*d).to_owned()).collect();
        t
    }

    fn ids(tasks: Vec<&Task>) -> Vec<&str> {
        tasks.into_iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn lower_priority_starts_first_and_slots_bound_the_start() {
        let tasks = [
            task("a", 3.0, &[]),
            task("b", 1.0, &[]),
            task("c", 2.0, &[]),
        ];
        assert_eq!(ids(startable(&tasks, |_| false, 2)), ["b", "c"]);
        assert_eq!(ids(startable(&tasks, |id| id == "b", 5)), ["c", "a"]);
    }

    #[test]
    fn a_task_waits_until_each_dependency_has_passed() {
        let mut tasks = vec![task("a", 1.0, &[]), task("b", 2.0, &["a"])];
        assert_eq!(ids(startable(&tasks, |_| false, 4)), ["a"]);
        tasks[0].state = TaskState::Blocked;
        assert!(
            startable(&tasks, |_| false, 4).is_empty(),
            "a blocked dependency keeps it waiting"
        );
        tasks[0].state = TaskState::Passed;
        assert_eq!(ids(startable(&tasks, |_| false, 4)), ["b"]);
    }

    #[test]
    fn an_unknown_dependency_keeps_the_task_waiting() {
        let tasks = [task("a", 1.0, &["nope"])];
        assert!(startable(&tasks, |_| false, 4).is_empty());
    }
}
