//! `--resume`: the queue's step a kill cut short finished or undone, the lanes it cut short
//! cleaned and lined up again.

use ralph_escalation::{Escalation, EscalationError};
use ralph_tasks::Mark;

use crate::coordinator::{Input, Landing, UnfinishedStep};
use crate::git::{self, HalfMade};
use crate::queue::{Change, Moved};
use crate::session::{JournaledStep, MergeJournal};
use crate::{Parallel, ParallelError, blocked_mark, save_worktree};

impl Parallel {
    /// `--resume`: finishes or redoes the merge in flight, cleans the lanes a kill cut short
    /// and lines them up again.
    pub(crate) fn take_up(&mut self) -> Result<(), ParallelError> {
        if let Some(journal) = self.repo.journal().read()? {
            self.take_up_step(journal)?;
        }
        // The landings a kill kept the list from hearing of told, the stopped lanes cleaned.
        let effects = self.coordinator.step(Input::Resumed);
        self.perform(effects).map(drop)
    }

    /// The queue's step a kill cut short: finished when the base is at the commit it was
    /// moving to, otherwise undone for the queue to do again (a block stays first in line).
    fn take_up_step(&mut self, journal: MergeJournal) -> Result<(), ParallelError> {
        let moved = journal.landing.as_deref() == Some(self.repo.base_commit()?.as_str());
        let change = match &journal.step {
            JournaledStep::Landing { .. } => Change::Mark(Mark::passed(&journal.task_id)),
            JournaledStep::Block { blocked } => {
                Change::Mark(blocked_mark(&journal.task_id, blocked))
            }
            JournaledStep::Ask { asked } => Change::Ask {
                task_id: journal.task_id.clone(),
                question: asked.question.clone(),
            },
        };
        self.repo.finish_fast_forward(&journal, moved)?;
        self.repo
            .put_back_kept(&journal, moved.then_some(&change))?;
        let id = journal.task_id;
        match journal.step {
            JournaledStep::Ask { asked } => {
                self.coordinator.step(Input::Unfinished {
                    task_id: id.clone(),
                    step: UnfinishedStep::Ask {
                        question: asked.question.clone(),
                    },
                });
                if moved {
                    // Recorded as the queue would have; that clears the journal.
                    return self.ask_put(&id, Some((asked, Moved::Yes)));
                }
            }
            JournaledStep::Block { blocked } => {
                self.coordinator.step(Input::Unfinished {
                    task_id: id.clone(),
                    step: UnfinishedStep::Block { reason: blocked },
                });
                if moved {
                    // Recorded as the queue would have; that clears the journal.
                    return self.block_marked(&id, Some(Moved::Yes));
                }
            }
            JournaledStep::Landing { .. } if moved => {
                let commit = journal.landing.unwrap_or_default();
                // Recorded as the queue would have; that clears the journal and tells the list.
                let effects = self.coordinator.step(Input::Landed {
                    task_id: id,
                    landing: Landing::Landed { commit },
                    now: std::time::Instant::now(),
                });
                return self.perform(effects).map(drop);
            }
            JournaledStep::Landing { branch_before } => {
                let worktree = self.worktree(&id);
                if worktree.exists() {
                    let _ = git::attempt(&worktree, &["merge", "--abort"])?;
                    // A kill mid-rebase (`land.history: rebase`) leaves the worktree in it.
                    let _ = git::attempt(&worktree, &["rebase", "--abort"])?;
                    git::run(&worktree, &["reset", "-q", "--hard", &branch_before])?;
                }
            }
        }
        Ok(self.repo.journal().clear()?)
    }

    /// A lane a kill cut short: its own journal finished (escalation does that as it opens),
    /// then what the kill left uncommitted saved and the worktree put back to its branch.
    pub(crate) fn clean_killed_lane(&mut self, id: &str) -> Result<(), ParallelError> {
        let worktree = self.worktree(id);
        // One a kill left half made is finished as the lane starts: no agent ran there.
        if !worktree.exists() || git::half_made(&worktree)? != HalfMade::No {
            return Ok(());
        }
        let (config, opening) = self.lane_escalation(id, &worktree);
        match Escalation::open(&config, opening) {
            Ok(_) => Ok(()),
            Err(EscalationError::DirtyTree { .. }) => {
                let saved = save_worktree(id, &worktree)?;
                git::run(&worktree, &["reset", "-q", "--hard", "HEAD"])?;
                git::run(&worktree, &["clean", "-q", "-fd"])?;
                if let Some(saved) = saved {
                    self.warn(
                        Some(id),
                        format!("the work its interrupted iteration left is saved under {saved}"),
                    );
                }
                Ok(())
            }
            Err(err) => Err(err.into()),
        }
    }
}
