//! `land.pr` in a parallel run: the merge queue's last step for a task whose merge with the
//! base came out clean and whose checks passed on it. Instead of moving the base, the landing
//! commit (the task marked in the list's files, as a local landing makes it) goes on the
//! task's own branch, which is pushed, and its pull request opened or updated
//! (`ralph_escalation::PrLanding`). The base is never touched.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ralph_escalation::{EscalationError, PrFacts, PrLanded, PrLanding, PrTask};
use ralph_tasks::{Mark, TaskListError};

use crate::ParallelError;
use crate::git;
use crate::land::History;
use crate::queue::Repo;
use crate::session::MergeJournal;

/// How often a wait for the forge looks whether the run was stopped.
const STOP_POLL: Duration = Duration::from_millis(50);

/// How a pull-request landing ended.
pub(crate) enum PrOutcome {
    /// The branch holds `commit` (the landing commit), pushed; the request as the forge has it.
    Landed { commit: String, landed: PrLanded },
    /// The forge or the remote refused: why, in words naming the remote and the branch.
    Refused(String),
    /// The run was stopped while the forge asked for a wait.
    Interrupted,
}

/// What the request tells beside the task: the checks that passed on the merged result and
/// the issue it closes.
pub(crate) struct PrRequest<'a> {
    pub(crate) worktree: &'a Path,
    /// The task's own title (a squash commit's subject).
    pub(crate) title: &'a str,
    /// The request's title ([`ralph_escalation::pr_title`]).
    pub(crate) pr_title: String,
    pub(crate) facts: PrFacts,
}

impl Repo {
    /// The landing commit on `merged` in the task's worktree, then the branch pushed and its
    /// request opened or updated. The forge's "not now" is waited out here (the step runs on
    /// a thread of its own), given up when `stopped` is set; the journal stays for the caller
    /// to clear once the run has recorded the step.
    pub(crate) fn land_as_pull_request(
        &self,
        journal: &MergeJournal,
        merged: &str,
        request: PrRequest<'_>,
        landing: &Arc<Mutex<PrLanding>>,
        stopped: &AtomicBool,
    ) -> Result<PrOutcome, ParallelError> {
        let mark = Mark::passed(&journal.task_id);
        let files = self.marked_at(&journal.base_before, &mark)?;
        let (parent, message) = match self.history {
            History::Squash => (
                journal.base_before.as_str(),
                format!(
                    "{}\n\nralph: {} as one commit",
                    request.title, journal.task_id
                ),
            ),
            History::Merge | History::Rebase => (
                merged,
                format!("ralph: {} passed, for {}", journal.task_id, self.base),
            ),
        };
        let commit = git::commit_files(&self.top, merged, parent, &files, &message)?;
        git::run(request.worktree, &["reset", "-q", "--keep", &commit])?;
        let branch = git::branch_name(&journal.task_id);
        let body = request.facts.body(&journal.task_id);
        let task = PrTask::new(
            request.worktree,
            &branch,
            &self.base,
            &request.pr_title,
            &body,
        );
        loop {
            let tried = landing
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .land(&task);
            match tried {
                Ok(landed) => return Ok(PrOutcome::Landed { commit, landed }),
                Err(EscalationError::Tasks(TaskListError::RetryAfter { wait, .. })) => {
                    let until = Instant::now() + wait;
                    while Instant::now() < until {
                        if stopped.load(Ordering::SeqCst) {
                            return Ok(PrOutcome::Interrupted);
                        }
                        std::thread::sleep(STOP_POLL.min(until - Instant::now()));
                    }
                }
                Err(err) => return Ok(PrOutcome::Refused(err.to_string())),
            }
        }
    }
}

impl crate::Parallel {
    /// What `id`'s request tells of its lane so far: iterations, cost, saved attempts, the
    /// GitHub issue it closes (the queue adds its checks).
    pub(crate) fn pr_facts(&self, id: &str) -> PrFacts {
        let mut facts = PrFacts::default();
        if let Some(view) = self.lanes.get(id).map(|lane| &lane.view) {
            facts.iterations = view.iteration;
            facts.cost_usd = (view.cost_usd > 0.0).then_some(view.cost_usd);
        }
        let attempts = format!(
            "refs/ralph/attempts/{}/",
            ralph_escalation::git::ref_component(id)
        );
        facts.saved_attempts = git::run(
            &self.repo.top,
            &["for-each-ref", "--format=%(refname)", &attempts],
        )
        .map(|refs| refs.lines().map(str::to_owned).collect())
        .unwrap_or_default();
        facts.closes =
            (id.parse().ok()).filter(|_| matches!(self.list.kind(), "github" | "gitlab"));
        facts
    }

    /// `id`'s request opened, updated or found closed: its event, and a warning for a request
    /// a person closed.
    pub(crate) fn pull_request_landed(&mut self, id: &str, landed: &PrLanded) {
        let branch = git::branch_name(id);
        let base = self.repo.base.clone();
        if let PrLanded::ClosedUnmerged(closed) = landed {
            self.warn(
                Some(id),
                format!(
                    "its pull request for {branch}, {}, was closed without being merged: ralph \
                     leaves it closed and pushes nothing; reopen it, or delete the remote branch \
                     for a new one",
                    closed.url
                ),
            );
        }
        let pr = landed.request();
        let (task_id, number, url, state) = (
            id.to_owned(),
            pr.number,
            pr.url.clone(),
            pr.state.as_str().to_owned(),
        );
        let kind = match landed {
            PrLanded::Opened(_) => crate::events::ParallelEventKind::PrOpened {
                task_id,
                number,
                url,
                state,
                branch,
                base,
            },
            PrLanded::Updated(_) => crate::events::ParallelEventKind::PrUpdated {
                task_id,
                number,
                url,
                state,
                branch,
                base,
            },
            _ => crate::events::ParallelEventKind::PrClosed {
                task_id,
                number,
                url,
                state,
                branch,
                base,
            },
        };
        self.emit(kind);
    }
}
