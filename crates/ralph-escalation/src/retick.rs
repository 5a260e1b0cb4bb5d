//! A task this run passed that its list shows undone again: a person's editor saved a copy of
//! the file older than ralph's mark (a stale buffer), or a save raced it. The pass commit holds
//! the task's work, so the task is marked passed again, with a `WARNING`, never done again.

use ralph_engine::TaskContext;
use ralph_tasks::{Mark, TaskListError, TaskState};

use crate::{Escalation, EscalationError, TaskWords};

impl Escalation {
    /// Marks passed again every task this run passed (in [`passed`](Escalation::passed)) that
    /// its list in files shows pending now, while its pass commit is on the branch. A list
    /// outside git (an issue reopened) and a pass commit reset away are a person's word, left
    /// alone; a list that cannot be read now is looked at next time.
    pub(crate) fn retick(&mut self, cx: &mut TaskContext<'_>) -> Result<(), EscalationError> {
        let Some(list) = self.list.as_mut().filter(|_| !self.passed.is_empty()) else {
            return Ok(());
        };
        if list.files().is_empty() {
            return Ok(());
        }
        let tasks = match list.load() {
            Ok(tasks) => tasks,
            Err(TaskListError::Unreadable(_) | TaskListError::RetryAfter { .. }) => return Ok(()),
            Err(err) => return Err(err.into()),
        };
        let words = TaskWords::of_list(list.kind());
        for task in tasks.iter().filter(|t| t.state == TaskState::Pending) {
            let Some(commit) = self.passed.get(&task.id) else {
                continue;
            };
            // A pass commit a person took off the branch (reset away) undid the pass: theirs.
            let on_branch = match (&self.repo, commit) {
                (Some(repo), Some(commit)) => repo.git.is_ancestor(commit, "HEAD"),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if !on_branch {
                continue;
            }
            if self.unwritten.iter().any(|m| m.story_id() == task.id) {
                continue;
            }
            let mark = Mark::Passed {
                story_id: task.id.clone(),
                commit: commit.clone(),
                branch: None,
            };
            let by = match commit {
                Some(commit) => format!(" (its work is in {})", crate::journal::short(commit)),
                None => String::new(),
            };
            cx.warn(format!(
                "{}: {} {} passed in this run{by}, but the file says it is not done: a save \
                 from a copy older than ralph's mark (an editor's stale buffer?) undid it. \
                 ralph marks it passed again rather than do it again",
                list.location(),
                words.one,
                task.id
            ));
            match list.write_mark(&mark) {
                Ok(()) | Err(TaskListError::NoSuchTask { .. }) => {}
                Err(TaskListError::Unreadable(_) | TaskListError::RetryAfter { .. }) => {
                    self.unwritten.push(mark);
                }
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }
}
