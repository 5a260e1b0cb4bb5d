//! A task judged passed and marked so: its checks, its mark in the list and its pass commit.

use ralph_engine::{EndReason, IterationReport, TaskContext, TaskDecision, TaskWait};
use ralph_tasks::{Landed, Mark, TaskListError, TaskState};

use crate::events::{StoryEvent, TaskWords};
use crate::{ASK_STATE, Escalation, EscalationError, Trip, journal, list_name, signature, summary};

impl Escalation {
    /// Writes the [`unwritten`](Self::unwritten) marks, each into the list as it is now, and
    /// tells the list each one landed. While the list cannot be read or does not parse,
    /// nothing is written: a `WARNING` says so and the marks wait for a later step. While the
    /// list's service says "not now" ([`TaskListError::RetryAfter`]), the marks wait unwritten
    /// and the wait comes back, for the engine to make. A mark whose task a person removed is
    /// dropped.
    pub(crate) fn write_marks(
        &mut self,
        cx: &mut TaskContext<'_>,
    ) -> Result<Option<TaskWait>, EscalationError> {
        let Some(list) = &mut self.list else {
            return Ok(None);
        };
        let mut wrote = false;
        while let Some(mark) = self.unwritten.first() {
            match list.write_mark(mark) {
                Ok(()) => {
                    wrote = true;
                    if let Err(err) = list.after_landed(&Landed::new(mark)) {
                        cx.warn(format!(
                            "{}: \"{mark}\" is written, but: {err}",
                            list.location()
                        ));
                    }
                }
                Err(TaskListError::Unreadable(err)) => {
                    cx.warn(format!(
                        "{err}; ralph writes {} only once it reads and parses again: \
                         \"{mark}\" is kept in the run's session until then",
                        list_name(list.as_ref())
                    ));
                    return Ok(None);
                }
                Err(TaskListError::RetryAfter { wait, why }) => {
                    let why = format!("{why}; \"{mark}\" is written after the wait");
                    return Ok(Some(TaskWait::new(wait, why)));
                }
                Err(TaskListError::NoSuchTask { location, id }) => cx.warn(format!(
                    "{location}: no {} \"{id}\" any more, so \"{mark}\" is not written",
                    TaskWords::of_list(list.kind()).one
                )),
                Err(err) => return Err(err.into()),
            }
            self.unwritten.remove(0);
        }
        // The counts after the marks; with none written the next look reads the list anyway,
        // and a "not now" here is a wait, never a try made and forgotten.
        if wrote {
            match list.load() {
                Ok(tasks) => self.counts = Some(summary(&tasks)),
                Err(TaskListError::RetryAfter { wait, why }) => {
                    return Ok(Some(TaskWait::new(wait, why)));
                }
                Err(_) => {}
            }
        }
        Ok(None)
    }

    pub(crate) fn judge(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> Result<TaskDecision, EscalationError> {
        if let Some(current) = &mut self.current {
            current.iterations.push(report.iteration);
        }
        if let Some(ask) = report
            .state
            .filter(|m| m.name == ASK_STATE && self.story_mode())
        {
            let question = ask.attr("question").unwrap_or("").to_owned();
            if question.trim().is_empty() {
                cx.warn(
                    "the agent reported `ask` without a question=\"...\"; nothing is asked"
                        .to_owned(),
                );
            } else {
                self.ask(&question, &report.task.id.clone(), cx);
            }
            return Ok(TaskDecision::Continue);
        }
        let blocked = report
            .state
            .filter(|m| m.name == "blocked")
            .map(|m| m.attr("reason"));
        // Without checks the agent says when a story is done: `done`, or `passes` in prd.json.
        let said_done = !self.has_checks && report.state.is_some_and(|m| m.name == "done");
        let passed = match (report.attempt, self.story_mode()) {
            // The agent's `blocked` wins over checks that pass: it knows what they do not test.
            (_, true) if blocked.is_some() => false,
            (Some(attempt), _) => attempt.converged,
            (None, true) if !self.has_checks => {
                said_done || self.state_of(&report.task.id)? == Some(TaskState::Passed)
            }
            (None, _) => said_done,
        };
        if passed {
            return match (self.story_mode(), said_done) {
                (true, _) => self.pass(cx),
                (false, true) => Ok(TaskDecision::Stop(EndReason::AgentDone)),
                // One task: the engine ends the run as converged.
                (false, false) => Ok(TaskDecision::Continue),
            };
        }
        if let (Some(attempt), Some(current)) = (report.attempt, &mut self.current) {
            current.last_failure = attempt
                .results
                .iter()
                .filter(|r| !r.passed())
                .cloned()
                .collect();
        }
        let trip = match (blocked, report.attempt) {
            (Some(reason), _) => Some(self.breaker.blocked(reason)),
            (None, Some(attempt)) => {
                let sig = signature(attempt.results);
                let trip = self.breaker.failed(sig.as_ref().map(|s| s.hash.as_str()));
                trip.or_else(|| {
                    attempt.exhausted.then(|| Trip::MaxAttempts {
                        count: self.breaker.attempts(),
                    })
                })
            }
            // A story not done after an iteration without checks is a failed attempt.
            (None, None) if self.story_mode() && !self.has_checks => self.breaker.failed(None),
            // A state handler took the iteration (idle): not an attempt.
            (None, None) => None,
        };
        match trip {
            Some(trip) => self.escalate(&trip, cx),
            None => Ok(TaskDecision::Continue),
        }
    }

    pub(crate) fn pass(
        &mut self,
        cx: &mut TaskContext<'_>,
    ) -> Result<TaskDecision, EscalationError> {
        // A task a person took out of the list meanwhile (closed its issue) is not theirs to
        // receive a commit: its work is saved and dropped instead. A list that cannot be read
        // now says nothing of that: the pass goes on, its mark waiting as any other.
        if let Some(id) = self.current.as_ref().map(|c| c.id.clone()) {
            let gone = match self.list.as_mut().map(|list| list.load()) {
                Some(Ok(tasks)) => !tasks.iter().any(|t| t.id == id),
                None
                | Some(Err(TaskListError::Unreadable(_) | TaskListError::RetryAfter { .. })) => {
                    false
                }
                Some(Err(err)) => return Err(err.into()),
            };
            if self.story_mode() && gone {
                self.drop_gone(cx)?;
                return Ok(TaskDecision::NextTask);
            }
        }
        let Some(current) = self.current.take() else {
            return Ok(TaskDecision::NextTask);
        };
        // A task passed earlier that a stale save undid is ticked again first, so this pass
        // commit holds the list with both marks.
        self.retick(cx)?;
        // The commit (holding prd.json with the story marked) first, then prd.json in the
        // tree: a crash between them leaves the story unmarked, never marked passed without
        // its commit, and the journal has the next start finish the pass.
        self.record(journal::Step::Pass, Some(&current.id))?;
        let mark = Mark::passed(current.id.clone());
        // The commit's list: the file as it is now with the task marked, or as ralph last
        // read it when it does not parse now.
        let marked = match &mut self.list {
            Some(list) => list.marked_files(&mark)?,
            None => Vec::new(),
        };
        // HEAD at the task's start: a pass that commits nothing cites no commit of its own.
        let start = self.repo.as_ref().map(|r| r.checkpoint.clone());
        let checkpoint = match &mut self.repo {
            Some(repo) => {
                let text = marked.first().and_then(|(path, bytes)| {
                    let rel = repo.git.relative(&repo.cwd, path)?;
                    Some((rel, bytes.as_slice()))
                });
                let replace = text
                    .as_ref()
                    .filter(|(rel, _)| Some(rel) == repo.prd.as_ref())
                    .map(|(rel, bytes)| (rel.as_path(), *bytes));
                let head = repo.git.commit_checkpoint(
                    &journal::pass_message(&current.id),
                    &repo.own,
                    replace,
                )?;
                repo.checkpoint = head.clone();
                repo.branch = repo.git.head_branch()?;
                Some(head)
            }
            None => None,
        };
        self.passed.insert(current.id.clone(), checkpoint.clone());
        // The list is read again for the write: a person's edit made meanwhile stays.
        if self.story_mode() {
            self.unwritten.push(Mark::Passed {
                story_id: current.id.clone(),
                commit: checkpoint.clone().filter(|c| Some(c) != start.as_ref()),
                branch: self.repo.as_ref().and_then(|r| r.branch.clone()),
            });
            // Not now: the mark waits in the session, and the next look waits for the list.
            self.not_now = self.write_marks(cx)?;
        }
        self.recorded_done()?;
        self.only_passed |= self.only.as_deref() == Some(current.id.as_str());
        cx.emit(StoryEvent::StoryPassed {
            story_id: current.id,
            attempts: self.breaker.attempts() + 1,
            checkpoint,
        });
        self.breaker.reset();
        Ok(TaskDecision::NextTask)
    }
}
