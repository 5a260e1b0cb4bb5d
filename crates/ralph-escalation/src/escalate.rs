//! What a trip of the circuit breaker does: progress.txt, the saved attempt and the revert,
//! the story blocked, the next one started.

use std::fmt::Write as _;
use std::time::SystemTime;

use ralph_engine::{TaskContext, TaskDecision};
use ralph_tasks::Mark;

use crate::events::{StoryEnd, StoryEvent};
use crate::{
    Escalation, EscalationError, MAIN_TASK, PROGRESS_TAIL_LINES, Saved, Trip, git, journal,
    progress, push_indented, signature,
};

impl Escalation {
    /// Log, save and revert, block, move on (or, without stories, end the loop).
    pub(crate) fn escalate(
        &mut self,
        trip: &Trip,
        cx: &mut TaskContext<'_>,
    ) -> Result<TaskDecision, EscalationError> {
        let current = self.current.take();
        let story_id = current
            .as_ref()
            .filter(|_| self.story_mode())
            .map(|c| c.id.clone());
        let last_failure = current
            .as_ref()
            .map(|c| c.last_failure.clone())
            .unwrap_or_default();
        let sig = match trip {
            Trip::SameError { signature, .. } => Some(signature.clone()),
            _ => signature(&last_failure).map(|s| s.hash),
        };
        cx.emit(StoryEvent::CircuitTripped {
            story_id: story_id.clone(),
            reason: trip.as_str().to_owned(),
            count: trip.count(),
            signature: sig,
        });
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let what = story_id.as_deref().unwrap_or(MAIN_TASK);
        let why = trip.describe(&last_failure);

        // Save before anything is logged or reverted: the log never names a missing ref, and
        // nothing is reset that is not stored. The saved work is named only once the journal
        // holds the revert (below): a kill in between must not leave an attempt saved while
        // the next start takes up its work in the tree.
        let mut saved = None;
        if let Some(repo) = &self.repo {
            let work = repo.git.save_unnamed(
                &format!("refs/ralph/attempts/{}", git::ref_component(what)),
                &format!("ralph: abandoned attempt at {what} ({why})"),
                &repo.own,
            )?;
            let commits = repo.git.log(&repo.checkpoint, "HEAD")?;
            // ralph's own files (prd.json, progress.txt) are not the agent's work.
            let diffstat = repo
                .git
                .diffstat(&repo.checkpoint, &work.commit, &repo.keep)?;
            saved = Some((work, commits, diffstat));
        }

        let mut entry = String::new();
        let title = current
            .as_ref()
            .filter(|c| !c.title.is_empty())
            .map(|c| format!(" \"{}\"", c.title))
            .unwrap_or_default();
        let _ = writeln!(entry, "## {now} · {what}{title} · circuit breaker tripped");
        let _ = writeln!(entry, "reason: {why}");
        if let Trip::SameError { signature, .. } = trip {
            let _ = writeln!(entry, "signature: {signature}");
        }
        let iterations = current
            .as_ref()
            .map(|c| {
                c.iterations
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let _ = writeln!(
            entry,
            "attempts: {} (iterations {iterations})",
            trip.count().max(self.breaker.attempts())
        );
        if let (Some(repo), Some((Saved { refname, .. }, commits, diffstat))) = (&self.repo, &saved)
        {
            let _ = writeln!(entry, "checkpoint: {}", repo.checkpoint);
            let _ = writeln!(
                entry,
                "abandoned work saved as {refname} (get it back: git checkout {refname})"
            );
            let _ = writeln!(entry, "commits since the checkpoint:");
            push_indented(&mut entry, commits, "(none)");
            let _ = writeln!(entry, "diffstat (checkpoint to abandoned work):");
            push_indented(&mut entry, diffstat, "(no changes)");
        }
        let _ = writeln!(entry, "persistent error:");
        if last_failure.is_empty() {
            let _ = writeln!(entry, "    (no failing checks)");
        }
        for r in &last_failure {
            let _ = writeln!(entry, "  $ {} ({})", r.command, r.status());
            let tail = r.tail.as_deref().unwrap_or("");
            let lines: Vec<&str> = tail.lines().collect();
            let from = lines.len().saturating_sub(PROGRESS_TAIL_LINES);
            push_indented(&mut entry, &lines[from..].join("\n"), "(no output)");
        }
        let progress_name = self.progress.file_name().map_or_else(
            || self.progress.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        // The story's notes, around the entry's line number.
        let notes_before = format!("blocked by ralph at {now}: {why}. Details: {progress_name}:");
        let mut notes_after = match &saved {
            Some((work, _, _)) => format!("; abandoned work: git checkout {}", work.refname),
            None => String::new(),
        };
        // From here on a killed ralph leaves the trip half done: the next start finishes it.
        if let Some((work, _, _)) = &mut saved {
            let step = |work: &Saved, entry: &str, notes_after: &str| journal::Step::Revert {
                saved_ref: work.refname.clone(),
                saved_commit: Some(work.commit.clone()),
                progress: std::path::absolute(&self.progress)
                    .unwrap_or_else(|_| self.progress.clone()),
                entry: entry.to_owned(),
                notes: story_id
                    .as_ref()
                    .map(|_| [notes_before.clone(), notes_after.to_owned()]),
                reason: why.clone(),
            };
            self.record(step(work, &entry, &notes_after), story_id.as_deref())?;
            if let Some(repo) = &self.repo {
                // Another writer took the number meanwhile: the work is saved under the next,
                // and the entry says which.
                let named = repo.git.name_saved(work)?;
                if named.refname != work.refname {
                    entry = entry.replace(&work.refname, &named.refname);
                    notes_after = notes_after.replace(&work.refname, &named.refname);
                    *work = named;
                    self.record(step(work, &entry, &notes_after), story_id.as_deref())?;
                }
            }
        }
        let line = progress::append(&self.progress, &entry)?;

        if let (Some(repo), Some((work, _, _))) = (&self.repo, &saved) {
            repo.git
                .restore(&repo.checkpoint, repo.branch.as_deref(), &repo.keep, work)?;
            cx.emit(StoryEvent::Reverted {
                story_id: story_id.clone(),
                checkpoint: repo.checkpoint.clone(),
                saved_ref: work.refname.clone(),
            });
        }

        let Some(id) = story_id else {
            self.recorded_done()?;
            return Ok(TaskDecision::Stop(StoryEnd::CircuitOpen.reason()));
        };
        let notes = format!("{notes_before}{line}{notes_after}");
        self.unwritten.push(Mark::Blocked {
            story_id: id.clone(),
            notes,
            reason: why.clone(),
            saved_ref: saved.as_ref().map(|(work, _, _)| work.refname.clone()),
        });
        // Not now: the mark waits in the session, and the next look waits for the list.
        self.not_now = self.write_marks(cx)?;
        // The mark and its progress.txt entry are committed, as a parallel run's queue does:
        // left in the tree they would fail the next task's clean-tree check, and its pass
        // commit would sweep them in.
        if let Some(repo) = &mut self.repo {
            repo.checkpoint =
                repo.git
                    .commit_checkpoint(&journal::blocked_message(&id), &repo.own, None)?;
            repo.branch = repo.git.head_branch()?;
        }
        self.recorded_done()?;
        cx.emit(StoryEvent::StoryBlocked {
            story_id: id,
            reason: why,
        });
        self.breaker.reset();
        Ok(TaskDecision::NextTask)
    }
}

/// Whether `err` comes of a full disk: an I/O error `ENOSPC` (or a quota's `EDQUOT`) in its
/// chain of causes, or a command saying so in the words the C library gives those (git's
/// `fatal: ...: No space left on device`, which reaches ralph as text).
pub(crate) fn out_of_room(err: &EscalationError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if matches!(io.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
                return true;
            }
        }
        cause = e.source();
    }
    let said = err.to_string();
    said.contains("No space left on device") || said.contains("Disk quota exceeded")
}
