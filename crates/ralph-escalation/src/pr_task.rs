//! `land.pr` in a `ralph run --task ID` loop: where the run would end with `task_passed`, the
//! task's branch is pushed and its pull request opened or updated first. The forge's "not now"
//! is the engine's wait, as a task list's; the landing is tried again after it, and a resumed
//! run whose task passed lands it (again: the open request is found and updated).

use std::path::PathBuf;

use ralph_engine::{EndReason, IterationReport, NextTask, TaskContext, TaskWait};
use ralph_tasks::TaskListError;

use crate::events::StoryEnd;
use crate::git::{self, Git};
use crate::pull_request::{PrFacts, PrLanded, PrLanding, PrTask};
use crate::{Escalation, EscalationError};

/// The landing of the run's one task, and what its body tells.
#[derive(Debug)]
pub(crate) struct PrTaskLanding {
    landing: PrLanding,
    /// The repository (worktree) whose HEAD is the task's branch.
    dir: PathBuf,
    facts: PrFacts,
    /// The task's title as its iterations saw it: a list that drops a passed task (a closed
    /// issue) no longer has it when the task lands.
    title: Option<String>,
    /// Landed in this run: the run ends as it would have.
    landed: bool,
}

impl Escalation {
    /// With `ralph run --task ID` ([`only_story`](Self::only_story)): the task, once it
    /// passes, is pushed from `dir` (its branch `ralph/ID` checked out there) and its pull
    /// request opened or updated through `landing`, before the run ends with `task_passed`.
    pub fn land_as_pull_request(&mut self, landing: PrLanding, dir: impl Into<PathBuf>) {
        self.pull_request = Some(PrTaskLanding {
            landing,
            dir: dir.into(),
            facts: PrFacts::default(),
            title: None,
            landed: false,
        });
    }

    /// The one task this run works on (`--task`, or the resumed run's), if any.
    pub fn only_task(&self) -> Option<&str> {
        self.only.as_deref()
    }

    /// An iteration, for the request's body.
    pub(crate) fn record_for_pull_request(&mut self, report: &IterationReport<'_>) {
        if let Some(pr) = &mut self.pull_request {
            pr.facts.record(report);
            if let Some(current) = &self.current {
                pr.title = Some(current.title.clone());
            }
        }
    }

    /// `next`, unless it ends the run with the task passed and the task is still to land as a
    /// pull request: then the landing's wait, or its failure, or (landed) `next`.
    pub(crate) fn land_before_passing(
        &mut self,
        next: NextTask,
        cx: &mut TaskContext<'_>,
    ) -> NextTask {
        let passed = StoryEnd::TaskPassed.reason();
        let ends_passed = matches!(&next, NextTask::End(reason) if *reason == passed);
        if !ends_passed || self.pull_request.as_ref().is_none_or(|pr| pr.landed) {
            return next;
        }
        match self.land_task(cx) {
            Ok(()) => next,
            Err(EscalationError::Tasks(TaskListError::RetryAfter { wait, why })) => {
                NextTask::Wait(TaskWait::new(wait, why))
            }
            Err(err) => NextTask::End(self.pull_request_failed(&err, cx)),
        }
    }

    /// `reason`, the run's end at its iteration limit, unless it is `task_passed` with the
    /// task still to land: then the landing, tried once (no wait is left to make: a "not now"
    /// from the forge ends the run as a failure, saying how to land it).
    pub(crate) fn land_at_limit(
        &mut self,
        reason: EndReason,
        cx: &mut TaskContext<'_>,
    ) -> EndReason {
        match self.land_before_passing(NextTask::End(reason), cx) {
            NextTask::End(reason) => reason,
            NextTask::Wait(wait) => {
                let err = EscalationError::Tasks(TaskListError::RetryAfter {
                    wait: wait.poll,
                    why: wait.why,
                });
                self.pull_request_failed(&err, cx)
            }
            _ => StoryEnd::TaskPassed.reason(),
        }
    }

    fn pull_request_failed(&self, err: &EscalationError, cx: &mut TaskContext<'_>) -> EndReason {
        cx.warn(format!(
            "the task passed but did not land as a pull request: {err}; once that is mended, \
             `ralph run --task {}` pushes its branch and opens the request",
            self.only.as_deref().unwrap_or_default()
        ));
        Self::failed_in(err, cx)
    }

    fn land_task(&mut self, cx: &mut TaskContext<'_>) -> Result<(), EscalationError> {
        let Some(id) = self.only.clone() else {
            return Ok(());
        };
        let listed = self
            .load()?
            .and_then(|tasks| tasks.into_iter().find(|t| t.id == id));
        let title = listed
            .map(|t| t.title)
            .or_else(|| self.pull_request.as_ref().and_then(|pr| pr.title.clone()));
        let forge_issue = self
            .list
            .as_ref()
            .is_some_and(|l| matches!(l.kind(), "github" | "gitlab"));
        let title = crate::pr_title(&id, title.as_deref(), forge_issue);
        let Some(pr) = &mut self.pull_request else {
            return Ok(());
        };
        let branch = git::task_branch(&id);
        let base = pr.landing.base(&pr.dir, &branch)?;
        pr.facts.saved_attempts = Git::open(&pr.dir)?
            .refs(&format!("refs/ralph/attempts/{}", git::ref_component(&id)))?;
        pr.facts.closes = id.parse().ok().filter(|_| forge_issue);
        let body = pr.facts.body(&id);
        let landed = pr.landing.land(&PrTask {
            dir: &pr.dir,
            branch: &branch,
            base: &base,
            title: &title,
            body: &body,
        })?;
        pr.landed = true;
        if let PrLanded::ClosedUnmerged(closed) = &landed {
            cx.warn(format!(
                "{}'s pull request for {branch}, {}, was closed without being merged: ralph \
                 leaves it closed and pushes nothing; reopen it, or delete the remote branch \
                 for a new one",
                pr.landing.forge.forge(),
                closed.url
            ));
        }
        cx.emit(landed.event(&id, &branch, &base));
        Ok(())
    }
}
