//! The merge queue's steps, each a task of its own off the run's loop: a landing (the merge
//! with the base, the checks on the merged result, the fast-forward or the pull request), a
//! block's mark, a lane's question put where its task lives; and what their results mean to
//! the coordinator.

use std::time::Instant;

use ralph_engine::InterruptSignal;
use ralph_tasks::Mark;
use tokio::sync::mpsc;

use crate::coordinator::{Input, Landing};
use crate::lane_list::LaneTask;
use crate::queue::{self, Merged, Moved};
use crate::{
    FailedCheck, LANE_TASK_FILE, Parallel, ParallelError, ParallelEventKind, blocked_mark, git,
    pr_landing,
};

/// The merge queue's step under way (a landing or a block): the task and what it gave.
pub(crate) type QueueStep = tokio::task::JoinHandle<(String, Result<Stepped, ParallelError>)>;

/// What a step of the merge queue gave.
pub(crate) enum Stepped {
    /// A landing's end.
    Landing(Landed),
    /// A block's mark: whether the base moved to it (`None`: a list outside git, which the
    /// coordinator tells).
    Block(Option<Moved>),
    /// A lane's question: the list's record of it and whether the base moved to it (`None`:
    /// a list outside git, which the coordinator asks).
    Ask(Option<(ralph_tasks::Asked, Moved)>),
}

/// Where the queue's checks are told to stop now, and whether they were.
#[derive(Clone)]
pub(crate) struct CheckStop {
    pub(crate) signals:
        std::sync::Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<InterruptSignal>>>,
    pub(crate) stopped: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// What the queue's landing of one task gave.
pub(crate) enum Landed {
    Yes(String),
    /// `land.pr`: the landing commit on the task's branch (the base untouched), pushed, and
    /// its pull request as the forge has it.
    PullRequest {
        commit: String,
        landed: ralph_escalation::PrLanded,
    },
    Conflict {
        files: Vec<String>,
        hunks: String,
        saved: String,
    },
    CheckFailed {
        failed: Vec<ralph_engine::CheckResult>,
        saved: String,
    },
    Refused(String),
    /// A person's uncommitted changes in the main worktree at these paths, which the landing
    /// changes too: it waits in the queue.
    Held(Vec<String>),
    /// Stopped now (a second Ctrl+C) while its checks ran: the journal stays, `--resume`
    /// redoes the merge.
    Interrupted,
}

impl Parallel {
    /// What a step of the queue gave, told to the coordinator.
    pub(crate) fn stepped(&mut self, id: &str, stepped: Stepped) -> Result<(), ParallelError> {
        match stepped {
            Stepped::Landing(landed) => self.landed(id, landed),
            Stepped::Block(moved) => self.block_marked(id, moved),
            Stepped::Ask(put) => self.ask_put(id, put),
        }
    }

    /// The queue's landing of `id` (`held`: only whether a person's changes still hold it).
    pub(crate) fn spawn_landing(
        &mut self,
        id: String,
        held: bool,
    ) -> Result<QueueStep, ParallelError> {
        let repo = self.repo.clone();
        let stop = self.check_stop.clone();
        if held {
            // Only whether the person's changes still hold it: once they are gone, it is
            // landed as any other (`MERGE_STARTED` and all).
            return Ok(tokio::spawn(async move {
                let task = id.clone();
                let held = join_blocking(move || repo.holding(&task)).await;
                (id, held.map(|held| Stepped::Landing(Landed::Held(held))))
            }));
        }
        let worktree = self.worktree(&id);
        let checks = self.options.engine.file.config.done_when.clone();
        let check_timeout = self.options.engine.file.config.convergence.check_timeout;
        let kill_grace = self.options.engine.kill_grace;
        let env_remove = ralph_engine::withheld_env(&self.options.engine.file.config);
        let cwd = worktree.join(&self.cwd_rel);
        // A person's change in the main worktree at a path the task changes would hold the
        // landing at its end: seen before the merge and the checks, it holds it now.
        let persons = {
            let (repo, id) = (repo.clone(), id.clone());
            move || repo.holding(&id)
        };
        let merge = {
            let (repo, id, worktree) = (repo.clone(), id.clone(), worktree.clone());
            move || repo.merge_base(&id, &worktree)
        };
        let title = self.coordinator.title(&id);
        let pull_requests = self.options.pull_requests.clone();
        let mut facts = self.pr_facts(&id);
        let pr_title = ralph_escalation::pr_title(&id, Some(&title), self.list.kind() == "github");
        // The event before the step, so readers see the merge start before its end.
        let base_commit = self.repo.base_commit()?;
        let branch_commit = git::run(&worktree, &["rev-parse", "HEAD"])?;
        self.emit(ParallelEventKind::MergeStarted {
            task_id: id.clone(),
            base_commit,
            branch_commit,
        });
        Ok(tokio::spawn(async move {
            let result = async {
                let held = join_blocking(persons).await?;
                if !held.is_empty() {
                    return Ok(Landed::Held(held));
                }
                let (journal, merged) = join_blocking(merge).await?;
                let head = match merged {
                    Merged::Clean { head } => head,
                    Merged::Conflict { files, hunks } => {
                        let (repo, id, worktree) = (repo.clone(), id.clone(), worktree.clone());
                        let saved =
                            join_blocking(move || repo.send_back(&id, &worktree, &journal)).await?;
                        return Ok(Landed::Conflict {
                            files,
                            hunks,
                            saved,
                        });
                    }
                };
                let mut failed = Vec::new();
                let mut passed = Vec::new();
                let mut signals = stop.signals.lock().await;
                for check in &checks {
                    let result = ralph_engine::run_check(
                        check,
                        cwd.clone(),
                        check_timeout,
                        kill_grace,
                        &env_remove,
                        &mut signals,
                    )
                    .await;
                    match result.tail.is_some() {
                        true => failed.push(result),
                        false => passed.push(result),
                    }
                }
                drop(signals);
                if stop.stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    return Ok(Landed::Interrupted);
                }
                if !failed.is_empty() {
                    let (repo, id, worktree) = (repo.clone(), id.clone(), worktree.clone());
                    let saved =
                        join_blocking(move || repo.send_back(&id, &worktree, &journal)).await?;
                    return Ok(Landed::CheckFailed { failed, saved });
                }
                if let Some(pr) = pull_requests {
                    let stopped = stop.stopped.clone();
                    let outcome = join_blocking(move || {
                        facts.checks = passed;
                        let request = pr_landing::PrRequest {
                            worktree: &worktree,
                            title: &title,
                            pr_title,
                            facts,
                        };
                        repo.land_as_pull_request(&journal, &head, request, &pr, &stopped)
                    })
                    .await?;
                    return Ok(match outcome {
                        pr_landing::PrOutcome::Landed { commit, landed } => {
                            Landed::PullRequest { commit, landed }
                        }
                        pr_landing::PrOutcome::Refused(why) => Landed::Refused(why),
                        pr_landing::PrOutcome::Interrupted => Landed::Interrupted,
                    });
                }
                let (landing, moved) =
                    join_blocking(move || repo.land(journal, &head, &title)).await?;
                Ok(match moved {
                    Moved::Yes => Landed::Yes(landing),
                    Moved::Refused(why) => Landed::Refused(why),
                    Moved::Held(files) => Landed::Held(files),
                })
            }
            .await;
            (id, result.map(Stepped::Landing))
        }))
    }

    /// The queue's step putting `ask`'s question where its task lives (see [`Repo::ask`]).
    pub(crate) fn spawn_ask(&mut self, task_id: String, question: String) -> QueueStep {
        let repo = self.repo.clone();
        tokio::spawn(async move {
            let id = task_id.clone();
            let result = join_blocking(move || repo.ask(&id, &question)).await;
            (task_id, result.map(Stepped::Ask))
        })
    }

    /// The queue put `id`'s question (`put`: on the base; `None`: a list outside git, asked
    /// now). A base that could not move has the question written in the main worktree as
    /// one loop writes it, where a person answers all the same. The lane's list gets the
    /// list's record of it, through which the lane reads the answer.
    pub(crate) fn ask_put(
        &mut self,
        id: &str,
        put: Option<(ralph_tasks::Asked, Moved)>,
    ) -> Result<(), ParallelError> {
        let Some(ask) = (self.coordinator.session.asks.iter())
            .find(|a| a.task_id == id)
            .cloned()
        else {
            let effects = self.coordinator.step(Input::AskPut {
                task_id: id.to_owned(),
                answer_at: None,
            });
            return self.perform(effects).map(drop);
        };
        let asked = match put {
            Some((asked, Moved::Yes)) => Ok(asked),
            Some((_, moved)) => {
                let why = match moved {
                    Moved::Held(files) => format!(
                        "the main worktree holds uncommitted changes to {}",
                        files.join(", ")
                    ),
                    Moved::Refused(why) => why,
                    Moved::Yes => String::new(),
                };
                self.warn(
                    Some(id),
                    format!(
                        "{} on {} could not take the agent's question: {why}; it is written \
                         in the main worktree, uncommitted",
                        self.list.location(),
                        self.repo.base
                    ),
                );
                self.list.ask(id, &ask.question)
            }
            None => self.list.ask(id, &ask.question),
        };
        let mut answer_at = None;
        match asked {
            Ok(asked) => {
                let path = self.lane_dir(id).join(LANE_TASK_FILE);
                let mut task = LaneTask::read(&path)
                    .map_err(|err| ParallelError::TaskList(err.to_string()))?;
                answer_at = Some(asked.at.clone());
                self.emit(ParallelEventKind::LaneAsked {
                    task_id: id.to_owned(),
                    question: asked.question.clone(),
                    at: asked.at.clone(),
                });
                task.asked = Some(asked);
                task.write(&path)
                    .map_err(|cause| ParallelError::Io { path, cause })?;
            }
            Err(err) => self.warn(
                Some(id),
                format!(
                    "the agent asked \"{}\", but {err}; its lane waits for an answer",
                    ask.question
                ),
            ),
        }
        let effects = self.coordinator.step(Input::AskPut {
            task_id: id.to_owned(),
            answer_at,
        });
        self.perform(effects).map(drop)
    }

    /// The queue's step marking `block`'s task blocked on the base (see [`Repo::block`]).
    pub(crate) fn spawn_block(&mut self, task_id: String, reason: String) -> QueueStep {
        let repo = self.repo.clone();
        tokio::spawn(async move {
            let mark = blocked_mark(&task_id, &reason);
            let result = join_blocking(move || repo.block(&mark, &reason)).await;
            (task_id, result.map(Stepped::Block))
        })
    }

    /// Whether `id` has left the run's task list (a person removed its line on the base, or
    /// closed its issue, while its lane ran): the list as the base has it, or the list outside
    /// git as it says now. As in one loop, a list that cannot be read now says nothing of it.
    pub(crate) fn gone(&mut self, id: &str) -> Result<bool, ParallelError> {
        let listed = match self.repo.list_rel.is_empty() {
            true => self.list.load().ok(),
            false => self.repo.listed_at(&self.repo.base_commit()?).ok(),
        };
        Ok(listed.is_some_and(|tasks| !tasks.iter().any(|t| t.id == id)))
    }

    /// `id` left the run's task list while its lane ran: dropped as one loop drops it, never
    /// landed. Its branch is saved under `refs/ralph/attempts/<id>/<n>` (its worktree's
    /// uncommitted work too), then its worktree and branch go, with a `WARNING`.
    pub(crate) fn drop_gone(&mut self, id: &str) -> Result<(), ParallelError> {
        let branch = format!("refs/heads/{}", git::branch_name(id));
        let tip = git::rev(&self.repo.top, &branch)?;
        let saved = match &tip {
            Some(tip) => Some(queue::save_commit(&self.repo.top, id, tip)?),
            None => None,
        };
        // Recorded, then its worktree goes.
        let effects = self.coordinator.step(Input::Gone {
            task_id: id.to_owned(),
        });
        self.perform(effects)?;
        if let Some(tip) = &tip {
            git::delete_branch(&self.repo.top, &git::branch_name(id), tip)?;
        }
        self.refresh_board();
        let saved = saved.map_or_else(String::new, |saved| {
            format!("; its work is saved under {saved}")
        });
        let message = format!(
            "{}: {} {id} is no longer in the list (closed or removed by a person while it \
             ran), so it is dropped, not landed{saved}",
            self.list.location(),
            self.words().one,
        );
        self.warn(Some(id), message);
        Ok(())
    }

    /// `id`'s block waiting to be marked, when `id` left the run's task list meanwhile: there
    /// is nothing to mark it in, so it is forgotten, with a `WARNING`.
    pub(crate) fn forget_block(&mut self, id: &str) -> Result<(), ParallelError> {
        let effects = self.coordinator.step(Input::Gone {
            task_id: id.to_owned(),
        });
        self.perform(effects)?;
        let message = format!(
            "{}: {} {id} is no longer in the list (closed or removed by a person), so its \
             block is not marked there",
            self.list.location(),
            self.words().one,
        );
        self.warn(Some(id), message);
        Ok(())
    }

    /// The queue marked `id` blocked (`moved`: on the base; `None`: a list outside git, told
    /// now): the run records it, then the step's journal goes, then `TASK_BLOCKED`.
    pub(crate) fn block_marked(
        &mut self,
        id: &str,
        moved: Option<Moved>,
    ) -> Result<(), ParallelError> {
        let reason = (self.coordinator.session.blocks.iter())
            .find(|b| b.task_id == id)
            .map(|b| b.reason.clone());
        let said = match (moved, reason) {
            (_, None) => Ok(()),
            (Some(Moved::Yes), _) => Ok(()),
            (Some(Moved::Refused(why)), _) => Err(why),
            (Some(Moved::Held(files)), _) => Err(format!(
                "the main worktree holds uncommitted changes to {}",
                files.join(", ")
            )),
            (None, Some(reason)) => (self.list)
                .write_mark(&blocked_mark(id, &reason))
                .map_err(|err| err.to_string()),
        };
        if let Err(why) = said {
            self.warn(
                Some(id),
                format!(
                    "{} on {} could not say it is blocked: {why}",
                    self.list.location(),
                    self.repo.base
                ),
            );
        }
        let effects = self.coordinator.step(Input::BlockMarked {
            task_id: id.to_owned(),
        });
        self.perform(effects).map(drop)
    }

    /// The queue's landing of `id` ended: a conflict or a failed check said (and the text its
    /// agent reads made), then the coordinator decides.
    fn landed(&mut self, id: &str, result: Landed) -> Result<(), ParallelError> {
        self.board.merging = None;
        let mut pull_request = None;
        let landing = match result {
            Landed::Interrupted => Landing::Interrupted,
            Landed::Held(files) => Landing::Held(files),
            Landed::Yes(commit) => Landing::Landed { commit },
            Landed::PullRequest { commit, landed } => {
                pull_request = Some(landed);
                Landing::Landed { commit }
            }
            Landed::Refused(why) => Landing::Refused(why),
            Landed::Conflict {
                files,
                hunks,
                saved,
            } => {
                let text = format!(
                    "## Your earlier work on this {one} did not merge\n\n\
                     It was done on an older {base}; {base} has moved on, and merging it into \
                     your work conflicts in: {}. Your earlier work is saved as {saved} \
                     (`git show {saved}`); this worktree now starts from the new {base}. Do the \
                     {one} again on it, keeping what {base} changed.\n\n\
                     The conflict (`git diff` of the merge):\n\n```diff\n{hunks}\n```\n",
                    files.join(", "),
                    base = self.repo.base,
                    one = self.words().one,
                );
                self.emit(ParallelEventKind::MergeConflict {
                    task_id: id.to_owned(),
                    files,
                    saved_ref: saved,
                });
                Landing::SentBack { prompt: text }
            }
            Landed::CheckFailed { failed, saved } => {
                let mut text = format!(
                    "## Your earlier work on this {one} failed its checks once merged\n\n\
                     Merged with the newer {base}, these checks failed. Your earlier work is \
                     saved as {saved} (`git show {saved}`); this worktree now starts from the \
                     new {base}. Do the {one} again on it.\n",
                    base = self.repo.base,
                    one = self.words().one,
                );
                for check in &failed {
                    text.push_str(&format!(
                        "\n$ {} ({})\n```\n{}\n```\n",
                        check.command,
                        check.status(),
                        check.tail.as_deref().unwrap_or("").trim_end()
                    ));
                }
                self.emit(ParallelEventKind::MergeCheckFailed {
                    task_id: id.to_owned(),
                    checks: failed
                        .iter()
                        .map(|c| FailedCheck::new(c.command.clone(), c.exit_code))
                        .collect(),
                    saved_ref: saved,
                });
                Landing::SentBack { prompt: text }
            }
        };
        let effects = self.coordinator.step(Input::Landed {
            task_id: id.to_owned(),
            landing,
            now: Instant::now(),
        });
        self.perform(effects)?;
        if let Some(landed) = pull_request {
            self.pull_request_landed(id, &landed);
        }
        Ok(())
    }

    /// A landing the session records and the list has not heard of: the list told, the lane's
    /// worktree and branch gone, then the session saved without it.
    pub(crate) fn tell_landed(&mut self, id: &str) -> Result<(), ParallelError> {
        let Some(commit) = self.coordinator.record(id).untold.clone() else {
            return Ok(());
        };
        self.report_landed(id, &commit);
        self.retire(id)?;
        let effects = self.coordinator.step(Input::Told {
            task_id: id.to_owned(),
        });
        self.perform(effects).map(drop)
    }

    /// The base moved to `commit`, which lands `id`: a list outside git is marked now and
    /// told (GitHub: a comment naming the commit, the issue closed); a file list has its mark
    /// in the commit already. What it cannot do is a warning: the work is on the base.
    fn report_landed(&mut self, id: &str, commit: &str) {
        // With `land.pr` the commit is on the task's own branch, in its pull request.
        let branch = match self.options.pull_requests {
            Some(_) => git::branch_name(id),
            None => self.repo.base.clone(),
        };
        let mark = Mark::Passed {
            story_id: id.to_owned(),
            commit: Some(commit.to_owned()),
            branch: Some(branch),
        };
        let mut told = Ok(());
        if self.repo.list_rel.is_empty() {
            told = self.list.write_mark(&mark);
        }
        let told = told.and_then(|()| self.list.after_landed(&ralph_tasks::Landed::new(&mark)));
        if let Err(err) = told {
            self.warn(
                Some(id),
                format!(
                    "landed as {commit}, but {} could not be told: {err}",
                    self.list.location()
                ),
            );
        }
    }
}

/// Runs a blocking git step off the runtime's threads.
pub(crate) async fn join_blocking<T: Send + 'static>(
    step: impl FnOnce() -> Result<T, ParallelError> + Send + 'static,
) -> Result<T, ParallelError> {
    tokio::task::spawn_blocking(step)
        .await
        .map_err(|err| ParallelError::StepLost(err.to_string()))?
}
