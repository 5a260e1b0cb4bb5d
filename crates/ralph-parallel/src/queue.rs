//! The merge queue's git steps, each blocking, one task at a time: bring the task's branch up to
//! date with the base (a merge), mark it passed in the task list's files in a commit on top,
//! move the base there; or send the task back with its branch saved; or mark a task blocked in
//! a commit on the base. The queue alone moves the base, so no step finds it moved by another.
//! Journaled so a killed ralph's `--resume` finishes or redoes a step in flight.

use std::path::{Path, PathBuf};

use ralph_escalation::Journal;
use ralph_tasks::{Asked, ListedTask, Mark, TaskList};

use crate::git;
use crate::session::{JournaledStep, KeptEdit, MergeJournal};
use crate::{History, ListSource, ParallelError};

/// Stores `commit` of the repository at `top` under the first free
/// `refs/ralph/attempts/<id>/<n>`; returns the ref.
pub(crate) fn save_commit(
    top: &Path,
    task_id: &str,
    commit: &str,
) -> Result<String, ParallelError> {
    let prefix = format!(
        "refs/ralph/attempts/{}",
        ralph_escalation::git::ref_component(task_id)
    );
    let refname = ralph_escalation::Git::open(top)?.next_ref(&prefix)?;
    git::run(top, &["update-ref", &refname, commit, ""])?;
    Ok(refname)
}

/// The longest conflict text put in a prompt.
const MAX_CONFLICT_BYTES: usize = 16 * 1024;

/// The repository a parallel run works on.
#[derive(Clone)]
pub(crate) struct Repo {
    /// The main worktree's top folder.
    pub(crate) top: PathBuf,
    /// The common git folder.
    pub(crate) common: PathBuf,
    /// The base branch's short name.
    pub(crate) base: String,
    /// The task list's files, relative to the top, `/`-separated (none: a list outside git).
    pub(crate) list_rel: Vec<String>,
    /// Builds the run's task list over a folder: a mark is applied to a commit's files there.
    pub(crate) list_at: ListSource,
    /// The RALPH.md's folder relative to the top: the list's paths start there.
    pub(crate) cwd_rel: PathBuf,
    /// Where a commit's list files are put to be marked (`.ralph/parallel/marking`).
    pub(crate) scratch: PathBuf,
    /// What a landing adds to the base's history.
    pub(crate) history: History,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("top", &self.top)
            .field("base", &self.base)
            .field("list_rel", &self.list_rel)
            .finish_non_exhaustive()
    }
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

/// A task list's file, top-relative and `/`-separated, with its bytes.
type ListFile = (String, Vec<u8>);

/// A step's one change to the task list's files: a task's mark, or a lane's question put
/// under its task.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    Mark(Mark),
    Ask { task_id: String, question: String },
}

impl Change {
    /// The task it changes.
    pub(crate) fn task_id(&self) -> &str {
        match self {
            Change::Mark(mark) => mark.story_id(),
            Change::Ask { task_id, .. } => task_id,
        }
    }
}

/// Whether the base moved.
#[derive(Debug)]
pub(crate) enum Moved {
    /// The base is at the landing commit.
    Yes,
    /// It could not move without overwriting something, or moved under us; why.
    Refused(String),
    /// The main worktree holds a person's uncommitted change (or untracked file) at these
    /// paths, which the landing also changes: it waits for them, the base where it was.
    Held(Vec<String>),
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

    /// The merge queue's journal, in the repository's common git directory.
    pub(crate) fn journal(&self) -> Journal<MergeJournal> {
        MergeJournal::journal(&self.common)
    }

    /// The task list's files as `commit` has them with `mark` applied (every other byte
    /// kept), top-relative: the list built over a copy of them, so no worktree is touched.
    /// Empty for a list outside git.
    pub(crate) fn marked_at(
        &self,
        commit: &str,
        mark: &Mark,
    ) -> Result<Vec<(String, Vec<u8>)>, ParallelError> {
        let files = self.files_at(commit)?;
        self.marked(files, &Change::Mark(mark.clone()))
            .map(|(files, _)| files)
    }

    /// The task list's tasks as `commit` has them (the list built over a copy of its files, so
    /// no worktree is touched); empty for a list outside git.
    pub(crate) fn listed_at(&self, commit: &str) -> Result<Vec<ListedTask>, ParallelError> {
        let files = self.files_at(commit)?;
        self.over_copy(files, "listed", |list, _| {
            list.load()
                .map_err(|err| ParallelError::TaskList(err.to_string()))
        })
    }

    /// The task list's files as `commit` has them, top-relative, with their bytes.
    fn files_at(&self, commit: &str) -> Result<Vec<(String, Vec<u8>)>, ParallelError> {
        let mut files = Vec::new();
        for rel in &self.list_rel {
            let bytes = git::blob(&self.top, commit, rel)?.ok_or_else(|| {
                ParallelError::TaskList(format!("{rel} is not in commit {commit}"))
            })?;
            files.push((rel.clone(), bytes));
        }
        Ok(files)
    }

    /// The task list's `files` (top-relative, with their bytes) with `change` applied, every
    /// other byte kept: the list built over a copy of them, so no worktree is touched. A
    /// question comes with the list's record of it, its place top-relative.
    fn marked(
        &self,
        files: Vec<(String, Vec<u8>)>,
        change: &Change,
    ) -> Result<(Vec<ListFile>, Option<Asked>), ParallelError> {
        let key = ralph_escalation::git::ref_component(change.task_id());
        self.over_copy(files, &key, |list, dir| {
            let io = |path: &Path| {
                let path = path.to_path_buf();
                move |cause| ParallelError::Io { path, cause }
            };
            let list_error =
                |err: ralph_tasks::TaskListError| ParallelError::TaskList(err.to_string());
            let (marked, asked) = match change {
                Change::Mark(mark) => (list.marked_files(mark).map_err(list_error)?, None),
                // The list's own ask writes the question into the copy, read back whole.
                Change::Ask { task_id, question } => {
                    let asked = list.ask(task_id, question).map_err(list_error)?;
                    let mut files = Vec::new();
                    for path in list.files() {
                        let bytes = std::fs::read(&path).map_err(io(&path))?;
                        files.push((path, bytes));
                    }
                    (files, Some(asked))
                }
            };
            let list_cwd = dir.join(&self.cwd_rel);
            let dir = dir.canonicalize().map_err(io(dir))?;
            let top_relative = |path: &Path| {
                let path = std::path::absolute(path).ok()?;
                let path = path.canonicalize().unwrap_or(path);
                let rel = path.strip_prefix(&dir).ok()?;
                Some(rel.to_string_lossy().replace('\\', "/"))
            };
            // Where a person answers, as one loop names it: the file (from the RALPH.md's
            // folder, as the main worktree has it) and the line.
            let asked = asked.map(|mut asked| {
                if let Some(rest) = asked.at.strip_prefix(&*list_cwd.to_string_lossy()) {
                    asked.at = rest.trim_start_matches('/').to_owned();
                }
                asked
            });
            let marked = marked
                .into_iter()
                .filter_map(|(path, bytes)| Some((top_relative(&path)?, bytes)))
                .collect();
            Ok((marked, asked))
        })
    }

    /// `read` of the run's task list built over a copy of `files` (top-relative, with their
    /// bytes) in the scratch folder `key`, which goes afterwards; `T::default()` without files
    /// (a list outside git).
    fn over_copy<T: Default>(
        &self,
        files: Vec<(String, Vec<u8>)>,
        key: &str,
        read: impl FnOnce(&mut dyn TaskList, &Path) -> Result<T, ParallelError>,
    ) -> Result<T, ParallelError> {
        if files.is_empty() {
            return Ok(T::default());
        }
        let dir = self.scratch.join(key);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| ParallelError::Io { path, cause }
        };
        let _ = std::fs::remove_dir_all(&dir);
        let result = (|| {
            for (rel, bytes) in files {
                let path = dir.join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(io(parent))?;
                }
                std::fs::write(&path, bytes).map_err(io(&path))?;
            }
            let mut list = (self.list_at)(&dir.join(&self.cwd_rel))
                .map_err(|err| ParallelError::TaskList(err.to_string()))?;
            read(list.as_mut(), &dir)
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    /// Step 1 and 2: journal, then bring the task's branch up to date with the base in its
    /// worktree: `git merge --no-edit <base>`, or with `land.history: rebase` its commits
    /// replayed on the base (`git rebase <base>`). Either way the branch then holds exactly
    /// what the checks judge and the landing puts on the base.
    pub(crate) fn merge_base(
        &self,
        task_id: &str,
        worktree: &Path,
    ) -> Result<(MergeJournal, Merged), ParallelError> {
        let journal = MergeJournal {
            task_id: task_id.to_owned(),
            base_before: self.base_commit()?,
            step: JournaledStep::Landing {
                branch_before: git::run(worktree, &["rev-parse", "HEAD"])?,
            },
            landing: None,
            kept: Vec::new(),
            index_locked: false,
        };
        self.journal().write(&journal)?;
        let message = format!("ralph: bring {task_id} up to date with {}", self.base);
        let (command, abort) = match self.history {
            History::Rebase => (vec!["rebase", "--quiet", &journal.base_before], "rebase"),
            History::Merge | History::Squash => (
                vec!["merge", "--no-edit", "-m", &message, &journal.base_before],
                "merge",
            ),
        };
        let (merged, stderr) = git::attempt(worktree, &command)?;
        if merged {
            let head = git::run(worktree, &["rev-parse", "HEAD"])?;
            return Ok((journal, Merged::Clean { head }));
        }
        let files: Vec<String> = git::run(worktree, &["diff", "--name-only", "--diff-filter=U"])?
            .lines()
            .map(str::to_owned)
            .collect();
        let hunks = git::run(worktree, &["diff"]).unwrap_or_default();
        let _ = git::attempt(worktree, &[abort, "--abort"])?;
        if files.is_empty() {
            return Err(ParallelError::Git {
                dir: worktree.to_path_buf(),
                command: format!("git {}", command.join(" ")),
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
        let branch_before = match &journal.step {
            JournaledStep::Landing { branch_before } => branch_before,
            JournaledStep::Block { .. } | JournaledStep::Ask { .. } => {
                &git::run(worktree, &["rev-parse", "HEAD"])?
            }
        };
        let saved = save_commit(&self.top, task_id, branch_before)?;
        git::run(worktree, &["reset", "-q", "--hard", &journal.base_before])?;
        self.journal().clear()?;
        Ok(saved)
    }

    /// Steps 4 and 5: the landing commit on `merged` (the task list's files as the base has
    /// them with the task passed, so a branch that changed the list, deleting other tasks,
    /// never changes it on the base; the same tree for a list outside git), journaled, then
    /// the base moved there.
    /// With `land.history: squash` the landing commit has the same tree but the base as its
    /// parent and `title` as its subject: the task in one commit. The journal stays: the
    /// caller clears it once the run has recorded the landing, so a `--resume` after a kill
    /// anywhere in between finds the base at the commit (landed, the list yet to be told) or
    /// does the step again; never lands it twice.
    pub(crate) fn land(
        &self,
        mut journal: MergeJournal,
        merged: &str,
        title: &str,
    ) -> Result<(String, Moved), ParallelError> {
        let mark = Mark::passed(&journal.task_id);
        let files = self.marked_at(&journal.base_before, &mark)?;
        let (parent, message) = match self.history {
            History::Squash => (
                journal.base_before.as_str(),
                format!(
                    "{title}\n\nralph: {} landed on {} as one commit (its branch was {merged})",
                    journal.task_id, self.base
                ),
            ),
            History::Merge | History::Rebase => (
                merged,
                format!("ralph: land {} on {}", journal.task_id, self.base),
            ),
        };
        let landing = git::commit_files(&self.top, merged, parent, &files, &message)?;
        journal.landing = Some(landing.clone());
        self.journal().write(&journal)?;
        let moved = self.advance_base(&mut journal, &landing, &Change::Mark(mark))?;
        Ok((landing, moved))
    }

    /// The queue's block step: a commit on the base marking `mark`'s task blocked in the task
    /// list's files (`reason` as the list says it), journaled, and the base moved there. The
    /// journal stays: the caller clears it once the run has recorded the block, so a `--resume`
    /// after a kill anywhere in between either finds the base at the commit (done) or does the
    /// step again. `None` for a list outside git: nothing to commit.
    pub(crate) fn block(&self, mark: &Mark, reason: &str) -> Result<Option<Moved>, ParallelError> {
        if self.list_rel.is_empty() {
            return Ok(None);
        }
        let base = self.base_commit()?;
        let files = self.marked_at(&base, mark)?;
        let commit = git::commit_files(
            &self.top,
            &base,
            &base,
            &files,
            &format!("ralph: {} blocked", mark.story_id()),
        )?;
        let mut journal = MergeJournal {
            task_id: mark.story_id().to_owned(),
            base_before: base.clone(),
            step: JournaledStep::Block {
                blocked: reason.to_owned(),
            },
            landing: Some(commit.clone()),
            kept: Vec::new(),
            index_locked: false,
        };
        self.journal().write(&journal)?;
        self.advance_base(&mut journal, &commit, &Change::Mark(mark.clone()))
            .map(Some)
    }

    /// The queue's ask step: a commit on the base putting the agent's `question` under task
    /// `task_id` in the task list's files as the list's own ask does, journaled with the
    /// list's record of it, and the base moved there. The journal stays, as a block's does.
    /// `None` for a list outside git: the run asks it.
    pub(crate) fn ask(
        &self,
        task_id: &str,
        question: &str,
    ) -> Result<Option<(Asked, Moved)>, ParallelError> {
        if self.list_rel.is_empty() {
            return Ok(None);
        }
        let base = self.base_commit()?;
        let mut files = Vec::new();
        for rel in &self.list_rel {
            let bytes = git::blob(&self.top, &base, rel)?
                .ok_or_else(|| ParallelError::TaskList(format!("{rel} is not in commit {base}")))?;
            files.push((rel.clone(), bytes));
        }
        let change = Change::Ask {
            task_id: task_id.to_owned(),
            question: question.to_owned(),
        };
        let (files, asked) = self.marked(files, &change)?;
        let asked = asked.ok_or_else(|| {
            ParallelError::TaskList(format!("the task list did not ask about {task_id}"))
        })?;
        let commit = git::commit_files(
            &self.top,
            &base,
            &base,
            &files,
            &format!("ralph: {task_id} asks a person"),
        )?;
        let mut journal = MergeJournal {
            task_id: task_id.to_owned(),
            base_before: base,
            step: JournaledStep::Ask {
                asked: asked.clone(),
            },
            landing: Some(commit.clone()),
            kept: Vec::new(),
            index_locked: false,
        };
        self.journal().write(&journal)?;
        let moved = self.advance_base(&mut journal, &commit, &change)?;
        Ok(Some((asked, moved)))
    }

    /// Moves the base from the journal's `base_before` to its descendant `new`. With the base
    /// checked out in the main worktree, by a fast-forward there ([`Self::fast_forward`]),
    /// which never overwrites a change of a person's: their uncommitted change (or untracked
    /// file) at a path the step changes holds it ([`Moved::Held`]), except in the task list's
    /// files, where the step's `change` is applied to the file as the person left it and their
    /// edit stays uncommitted. Otherwise by `git update-ref` from the old value.
    pub(crate) fn advance_base(
        &self,
        journal: &mut MergeJournal,
        new: &str,
        change: &Change,
    ) -> Result<Moved, ParallelError> {
        let old = journal.base_before.clone();
        if git::head_ref(&self.top)?.as_deref() != Some(self.base_ref().as_str()) {
            let (ok, stderr) =
                git::attempt(&self.top, &["update-ref", &self.base_ref(), new, &old])?;
            return Ok(match ok {
                true => Moved::Yes,
                false => Moved::Refused(stderr),
            });
        }
        if git::rev(&self.top, "HEAD")?.as_deref() != Some(old.as_str()) {
            return Ok(Moved::Refused(format!(
                "{} moved in the main worktree while the task was being landed",
                self.base
            )));
        }
        let (list, others): (Vec<String>, Vec<String>) = self
            .persons_changes(&[&old, new])?
            .into_iter()
            .partition(|path| self.list_rel.contains(path));
        if !others.is_empty() {
            return Ok(Moved::Held(others));
        }
        // The person's version of each list file they changed: put aside (in the object
        // store, named in the journal, for a `--resume` after a kill) while the committed one
        // is checked out for the fast-forward, then put back with the mark applied.
        let mut theirs = Vec::new();
        for rel in &list {
            match std::fs::read(self.top.join(rel)) {
                Ok(bytes) => theirs.push((rel.clone(), bytes)),
                // Deleted: nothing to apply the mark to; it waits as any other change.
                Err(_) => return Ok(Moved::Held(list)),
            }
        }
        if !theirs.is_empty() {
            for (rel, bytes) in &theirs {
                let blob = git::run_with(
                    &self.top,
                    &["hash-object", "-w", "--stdin"],
                    &[],
                    Some(bytes),
                )?;
                journal.kept.push(KeptEdit {
                    path: rel.clone(),
                    blob,
                });
            }
            self.journal().write(journal)?;
            let mut checkout = vec!["checkout", old.as_str(), "--"];
            checkout.extend(list.iter().map(String::as_str));
            git::run(&self.top, &checkout)?;
        }
        let forward = self.fast_forward(journal, new, change)?;
        self.put_back(&theirs, forward.is_ok().then_some(change))?;
        let Err(stderr) = forward else {
            return Ok(Moved::Yes);
        };
        // A change the person made meanwhile, or something else git names.
        let held: Vec<String> = self
            .persons_changes(&[&old, new])?
            .into_iter()
            .filter(|path| !self.list_rel.contains(path))
            .collect();
        if !held.is_empty() {
            return Ok(Moved::Held(held));
        }
        Ok(Moved::Refused(format!(
            "the main worktree ({}) could not be brought forward: {stderr}",
            self.top.display()
        )))
    }

    /// The main worktree, on the base at the journal's `base_before`, brought forward to its
    /// descendant `new` in one step as a person sees it: under the index's lock (a person's
    /// `git commit` meanwhile fails, as against any git command, rather than taking in the
    /// step's files), the files and a copy of the index brought forward
    /// (`git read-tree -m -u`, which like `git merge --ff-only` never overwrites a change of a
    /// person's), then the base moved from `base_before`, then the copy made the index. A step that fails half-way (a disk
    /// full, the base moved meanwhile) is rolled back ([`Self::roll_back`]): the index as it
    /// was, the files the step wrote back to the base's. Why it failed, as git said it. The
    /// lock is journaled while held, for [`Self::finish_fast_forward`].
    fn fast_forward(
        &self,
        journal: &mut MergeJournal,
        new: &str,
        change: &Change,
    ) -> Result<Result<(), String>, ParallelError> {
        let old = journal.base_before.clone();
        let Some(lock) = git::IndexLock::take(&self.top)? else {
            return Ok(Err(format!(
                "another git held the index of the main worktree ({})",
                self.top.display()
            )));
        };
        journal.index_locked = true;
        self.journal().write(journal)?;
        let forward = (|| {
            let (read, stderr) = git::attempt_with(
                &self.top,
                &["read-tree", "-m", "-u", &old, new],
                &lock.env(),
            )?;
            if !read {
                return Ok(Err(stderr));
            }
            let message = format!("ralph: {} forward for {}", self.base, change.task_id());
            let (moved, stderr) = git::attempt(
                &self.top,
                &["update-ref", "-m", &message, &self.base_ref(), new, &old],
            )?;
            Ok(if moved { Ok(()) } else { Err(stderr) })
        })();
        match &forward {
            Ok(Ok(())) => lock.commit()?,
            _ => {
                self.roll_back(&old, new)?;
                drop(lock);
            }
        }
        journal.index_locked = false;
        self.journal().write(journal)?;
        forward
    }

    /// A fast-forward a kill cut short while it held the index's lock: the lock's copy made
    /// the index when the base moved (git wrote it whole before moving the base), otherwise
    /// the files rolled back and the lock let go.
    pub(crate) fn finish_fast_forward(
        &self,
        journal: &MergeJournal,
        moved: bool,
    ) -> Result<(), ParallelError> {
        if !journal.index_locked {
            return Ok(());
        }
        let lock = git::IndexLock::left(&self.top)?;
        match (moved, &journal.landing) {
            (true, _) => {
                if let Some(lock) = lock {
                    lock.commit()?;
                }
            }
            (false, Some(landing)) => {
                self.roll_back(&journal.base_before, landing)?;
                drop(lock);
            }
            (false, None) => drop(lock),
        }
        Ok(())
    }

    /// Puts back the files of the main worktree that a step from `old` to `new` cut short had
    /// written: each path the step changes whose file now holds `new`'s version, or part of
    /// it (a write cut short), gets `old`'s (gone when `old` has none). A file holding
    /// anything else is a person's and stays. The index is not touched.
    fn roll_back(&self, old: &str, new: &str) -> Result<(), ParallelError> {
        let changed = git::run_untrimmed(
            &self.top,
            &["diff", "--name-only", "-z", "--no-renames", old, new],
        )?;
        let mut restore = Vec::new();
        for rel in changed.split('\0').filter(|p| !p.is_empty()) {
            let path = self.top.join(rel);
            let now = std::fs::read(&path).ok();
            let was = git::blob(&self.top, old, rel)?;
            let written = match (&now, git::blob(&self.top, new, rel)?) {
                (Some(now), Some(landed)) => landed.starts_with(now),
                // The step deletes it: it is gone since.
                (None, None) => true,
                _ => false,
            };
            if !written || now == was {
                continue;
            }
            match was {
                Some(_) => restore.push(rel.to_owned()),
                None => std::fs::remove_file(&path).map_err(|cause| ParallelError::Io {
                    path: path.clone(),
                    cause,
                })?,
            }
        }
        if restore.is_empty() {
            return Ok(());
        }
        // `old`'s files as git writes them (modes, filters), from an index of their own.
        let index = git::common_dir(&self.top)?.join(format!(
            "ralph-parallel-index-{}-rollback",
            std::process::id()
        ));
        let env = [("GIT_INDEX_FILE", index.as_path())];
        let result = (|| {
            git::run_with(&self.top, &["read-tree", old], &env, None)?;
            let mut args = vec!["checkout-index", "-f", "--"];
            args.extend(restore.iter().map(String::as_str));
            git::run_with(&self.top, &args, &env, None)
        })();
        let _ = std::fs::remove_file(&index);
        result.map(drop)
    }

    /// Writes the person's version of each list file back (temp + rename), `change` applied
    /// to it when given (every other byte of theirs kept; as they left it if it no longer
    /// takes the change).
    fn put_back(
        &self,
        theirs: &[(String, Vec<u8>)],
        change: Option<&Change>,
    ) -> Result<(), ParallelError> {
        if theirs.is_empty() {
            return Ok(());
        }
        let marked = match change {
            Some(change) => self
                .marked(theirs.to_vec(), change)
                .map(|(files, _)| files)
                .unwrap_or_default(),
            None => Vec::new(),
        };
        for (rel, bytes) in theirs {
            let bytes = marked
                .iter()
                .find(|(path, _)| path == rel)
                .map_or(bytes, |(_, marked)| marked);
            let path = self.top.join(rel);
            ralph_atomic::write(&path, bytes).map_err(|cause| ParallelError::Io { path, cause })?;
        }
        Ok(())
    }

    /// A step a kill cut short between putting a person's list edits aside and putting them
    /// back: each file that still holds the committed version gets theirs back, with `change`
    /// applied when the base moved.
    pub(crate) fn put_back_kept(
        &self,
        journal: &MergeJournal,
        change: Option<&Change>,
    ) -> Result<(), ParallelError> {
        let mut theirs = Vec::new();
        for kept in &journal.kept {
            let now = std::fs::read(self.top.join(&kept.path)).ok();
            if now.is_some() && now != git::blob(&self.top, "HEAD", &kept.path)? {
                // Put back already (or changed again since): theirs as it is.
                continue;
            }
            if let Some(bytes) = git::object(&self.top, &kept.blob)? {
                theirs.push((kept.path.clone(), bytes));
            }
        }
        self.put_back(&theirs, change)
    }

    /// The paths at which a person's changes in the main worktree hold `task_id`'s landing:
    /// those its branch changed since it left the base, the task list's files aside (its mark
    /// is applied to the person's version of them).
    pub(crate) fn holding(&self, task_id: &str) -> Result<Vec<String>, ParallelError> {
        let range = format!(
            "{}...refs/heads/{}",
            self.base_ref(),
            git::branch_name(task_id)
        );
        Ok(self
            .persons_changes(&[&range])?
            .into_iter()
            .filter(|path| !self.list_rel.contains(path))
            .collect())
    }

    /// The paths the diff `range` (`git diff` arguments) changes at which the main worktree
    /// holds a person's change: uncommitted, staged, or an untracked file.
    fn persons_changes(&self, range: &[&str]) -> Result<Vec<String>, ParallelError> {
        let mut args = vec!["diff", "--name-only", "-z", "--no-renames"];
        args.extend(range);
        let changed = git::run_untrimmed(&self.top, &args)?;
        let changed: Vec<&str> = changed.split('\0').filter(|p| !p.is_empty()).collect();
        if changed.is_empty() {
            return Ok(Vec::new());
        }
        let status = git::run_untrimmed(
            &self.top,
            &["status", "--porcelain", "-z", "-uall", "--no-renames"],
        )?;
        Ok(status
            .split('\0')
            .filter_map(|entry| entry.get(3..))
            .filter(|path| changed.contains(path))
            .map(str::to_owned)
            .collect())
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
