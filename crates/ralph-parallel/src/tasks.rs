//! The tasks a parallel run schedules, and which of them can start now.
//!
//! The run's task list (prd.json, a Markdown checklist, GitHub issues) hands them over. Pure:
//! no I/O.

use ralph_tasks::ListedTask;

/// Where a task stands on the base branch: the task list's own states (passed: landed on the
/// base and marked so in its list).
pub use ralph_tasks::TaskState;

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

/// A task list's tasks ([`TaskList::load`](ralph_tasks::TaskList::load)) as the
/// scheduler's: id, title, priority, dependencies and state.
pub fn tasks_from_list(listed: &[ListedTask]) -> Vec<Task> {
    listed
        .iter()
        .map(|t| Task {
            id: t.id.clone(),
            title: t.title.clone(),
            priority: t.priority,
            depends_on: t.depends_on.clone(),
            state: t.state,
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
