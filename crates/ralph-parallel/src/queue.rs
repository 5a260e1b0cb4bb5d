//! The merge queue's git steps, each blocking, one task at a time: bring the task's branch up to
//! date with the base (a merge), mark it passed in prd.json in a commit on top, move the base
//! there; or send the task back with its branch saved. Journaled so a killed ralph's `--resume`
//! finishes or redoes a merge in flight.

use std::path::{Path, PathBuf};

use ralph_escalation::{Passes, Prd};

use crate::ParallelError;
use crate::git;
use crate::session::MergeJournal;

/// The longest conflict text put in a prompt.
const MAX_CONFLICT_BYTES: usize = 16 * 1024;

/// The repository a parallel run works on.
#[derive(Debug, Clone)]
pub(crate) struct Repo {
    /// The main worktree's top folder.
    pub(crate) top: PathBuf,
    /// The common git folder.
    pub(crate) common: PathBuf,
    /// The base branch's short name.
    pub(crate) base: String,
    /// prd.json, relative to the top, `/`-separated.
    pub(crate) prd_rel: String,
    /// prd.json's path, for its errors.
    pub(crate) prd_path: PathBuf,
}

/// What merging the base into a task's branch gave.
#[derive(Debug)]
pub(crate) enum Merged {
    /// The merged result, committed on the branch.
    Clean { head: String },
    /// The base does not merge: the conflicted files and the hunks (`git diff` during the
    /// conflicted merge, cut to 16 KiB). The merge was aborted.
    Conflict { files: Vec<String>, hunks: String },
}

/// Whether the base moved.
#[derive(Debug)]
pub(crate) enum Moved {
    /// The base is at the landing commit.
    Yes,
    /// It could not move without overwriting something, or moved under us; why.
    Refused(String),
}

impl Repo {
    pub(crate) fn base_ref(&self) -> String {
        format!("refs/heads/{}", self.base)
    }

    pub(crate) fn base_commit(&self) -> Result<String, ParallelError> {
        git::rev(&self.top, &self.base_ref())?.ok_or_else(|| ParallelError::Git {
            dir: self.top.clone(),
            command: format!("git rev-parse {}", self.base_ref()),
            stderr: "the base branch is gone".to_owned(),
        })
    }

    pub(crate) fn journal_path(&self) -> PathBuf {
        MergeJournal::path(&self.common)
    }

    /// prd.json as `commit` has it.
    pub(crate) fn prd_at(&self, commit: &str) -> Result<Prd, ParallelError> {
        let text = git::run(&self.top, &["show", &format!("{commit}:{}", self.prd_rel)])?;
        Ok(Prd::parse(&self.prd_path, &text)?)
    }

    /// Step 1 and 2: journal, then `git merge --no-edit <base>` in the task's worktree.
    pub(crate) fn merge_base(
        &self,
        task_id: &str,
        worktree: &Path,
    ) -> Result<(MergeJournal, Merged), ParallelError> {
        let journal = MergeJournal {
            task_id: task_id.to_owned(),
            base_before: self.base_commit()?,
            branch_before: git::run(worktree, &["rev-parse", "HEAD"])?,
            landing: None,
        };
        journal.save(&self.journal_path())?;
        let message = format!("ralph: bring {task_id} up to date with {}", self.base);
        let (merged, stderr) = git::attempt(
            worktree,
            &["merge", "--no-edit", "-m", &message, &journal.base_before],
        )?;
        if merged {
            let head = git::run(worktree, &["rev-parse", "HEAD"])?;
            return Ok((journal, Merged::Clean { head }));
        }
        let files: Vec<String> = git::run(worktree, &["diff", "--name-only", "--diff-filter=U"])?
            .lines()
            .map(str::to_owned)
            .collect();
        let hunks = git::run(worktree, &["diff"]).unwrap_or_default();
        let _ = git::attempt(worktree, &["merge", "--abort"])?;
        if files.is_empty() {
            return Err(ParallelError::Git {
                dir: worktree.to_path_buf(),
                command: format!("git merge {}", journal.base_before),
                stderr,
            });
        }
        Ok((
            journal,
            Merged::Conflict {
                files,
                hunks: cut(hunks),
            },
        ))
    }

    /// Sends a task back: its branch saved under `refs/ralph/attempts/<id>/<n>`, then reset to
    /// the base it failed to land on. Returns the saved ref.
    pub(crate) fn send_back(
        &self,
        task_id: &str,
        worktree: &Path,
        journal: &MergeJournal,
    ) -> Result<String, ParallelError> {
        // A merge that went through is undone with the rest: the branch before it is saved.
        let saved = self.save_commit(task_id, &journal.branch_before)?;
        git::run(worktree, &["reset", "-q", "--hard", &journal.base_before])?;
        MergeJournal::clear(&self.journal_path())?;
        Ok(saved)
    }

    /// Stores `commit` under the first free `refs/ralph/attempts/<id>/<n>`.
    pub(crate) fn save_commit(&self, task_id: &str, commit: &str) -> Result<String, ParallelError> {
        let prefix = format!(
            "refs/ralph/attempts/{}",
            ralph_escalation::git::ref_component(task_id)
        );
        let refname = ralph_escalation::Git::open(&self.top)?.next_ref(&prefix)?;
        git::run(&self.top, &["update-ref", &refname, commit, ""])?;
        Ok(refname)
    }

    /// Steps 4 and 5: the landing commit on `merged` (prd.json with the task passed), journaled,
    /// then the base moved there.
    pub(crate) fn land(
        &self,
        mut journal: MergeJournal,
        merged: &str,
    ) -> Result<(String, Moved), ParallelError> {
        let mut prd = self.prd_at(merged)?;
        prd.set(&journal.task_id, Passes::Yes, None)?;
        let landing = git::commit_file(
            &self.top,
            merged,
            &self.prd_rel,
            prd.to_text().as_bytes(),
            &format!(
                "ralph: land {} on {} (passes: true)",
                journal.task_id, self.base
            ),
        )?;
        journal.landing = Some(landing.clone());
        journal.save(&self.journal_path())?;
        let moved = self.advance_base(&journal.base_before, &landing)?;
        MergeJournal::clear(&self.journal_path())?;
        Ok((landing, moved))
    }

    /// A commit on the base marking `task_id` blocked with `reason`, and the base moved there.
    pub(crate) fn block(&self, task_id: &str, reason: &str) -> Result<Moved, ParallelError> {
        let base = self.base_commit()?;
        let mut prd = self.prd_at(&base)?;
        prd.block(task_id, reason)?;
        let commit = git::commit_file(
            &self.top,
            &base,
            &self.prd_rel,
            prd.to_text().as_bytes(),
            &format!("ralph: {task_id} blocked"),
        )?;
        self.advance_base(&base, &commit)
    }

    /// Moves the base from `old` to its descendant `new`. With the base checked out in the main
    /// worktree, by `git merge --ff-only` there (it never overwrites a change of a person's);
    /// otherwise by `git update-ref` from `old`.
    pub(crate) fn advance_base(&self, old: &str, new: &str) -> Result<Moved, ParallelError> {
        if git::head_ref(&self.top)?.as_deref() == Some(self.base_ref().as_str()) {
            if git::rev(&self.top, "HEAD")?.as_deref() != Some(old) {
                return Ok(Moved::Refused(format!(
                    "{} moved in the main worktree while the task was being landed",
                    self.base
                )));
            }
            let (ok, stderr) = git::attempt(&self.top, &["merge", "--ff-only", "-q", new])?;
            return Ok(match ok {
                true => Moved::Yes,
                false => Moved::Refused(format!(
                    "the main worktree ({}) could not be brought forward without overwriting \
                     changes there: {stderr}",
                    self.top.display()
                )),
            });
        }
        let (ok, stderr) = git::attempt(&self.top, &["update-ref", &self.base_ref(), new, old])?;
        Ok(match ok {
            true => Moved::Yes,
            false => Moved::Refused(stderr),
        })
    }
}

/// `text` cut to [`MAX_CONFLICT_BYTES`] on a character boundary, the cut said.
fn cut(text: String) -> String {
    if text.len() <= MAX_CONFLICT_BYTES {
        return text;
    }
    let mut end = MAX_CONFLICT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... {} more bytes cut]\n",
        &text[..end],
        text.len() - end
    )
}
