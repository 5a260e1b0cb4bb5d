//! Giving up a stopped parallel run (`ralph run --abandon`): every lane's work saved under
//! `refs/ralph/attempts/<id>/<n>`, then its worktree and its branch removed, then the session,
//! so a new run can start. Nothing is removed before it is stored under a ref.

use std::path::{Path, PathBuf};

use crate::session::{JournaledStep, MergeJournal, SESSION_FILE, Session};
use crate::{LaneState, ParallelError, WORKTREES, git, queue, save_worktree, worktree_path};

/// What giving up a stopped parallel run saved and removed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Abandoned {
    /// The run given up.
    pub run_id: String,
    /// Its base branch.
    pub base: String,
    /// Its lanes (and any worktree of it the session did not know), by task id.
    pub lanes: Vec<AbandonedLane>,
    /// The session file removed, from the repository's top (`.ralph/parallel/session.json`).
    pub session: PathBuf,
}

/// One lane of an [`Abandoned`] run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AbandonedLane {
    /// The task.
    pub task_id: String,
    /// Where it stood (`None`: a worktree the session did not know of).
    pub state: Option<LaneState>,
    /// The refs its work was saved under: its uncommitted work (a commit on its branch's),
    /// and its branch's commits when that does not hold them. Empty: nothing the base lacks.
    pub saved: Vec<String>,
}

/// Gives up the stopped parallel run of the repository `folder` is in: a merge of the base
/// into a lane that a kill cut short is undone (the branch before it is the lane's work); each
/// lane's uncommitted work and each branch `ralph/<id>` whose commits the base lacks are saved
/// under `refs/ralph/attempts/<id>/<n>`; then the worktrees, the branches, the merge journal and
/// the session go. The caller holds the repository's lock: a run still going is never given
/// up. [`ParallelError::NothingToAbandon`] when no stopped run is there.
pub fn abandon(folder: &Path) -> Result<Abandoned, ParallelError> {
    let Ok(top) = git::run(folder, &["rev-parse", "--show-toplevel"]) else {
        return Err(ParallelError::NothingToAbandon(folder.to_path_buf()));
    };
    let top = PathBuf::from(top);
    let path = Session::path(&top);
    if !path.exists() {
        return Err(ParallelError::NothingToAbandon(top));
    }
    let session = Session::read(&path)?;
    if session.ended {
        return Err(ParallelError::NothingToAbandon(top));
    }
    let base_ref = format!("refs/heads/{}", session.base);
    let merge_journal = MergeJournal::journal(&git::common_dir(&top)?);
    if let Some(journal) = merge_journal.read()? {
        undo_merge(&top, &base_ref, &journal)?;
    }
    let mut lanes: Vec<AbandonedLane> = session
        .lanes
        .iter()
        .map(|(id, record)| AbandonedLane {
            task_id: id.clone(),
            state: Some(record.state),
            saved: Vec::new(),
        })
        .collect();
    // A worktree made before the session named its lane (a kill in between) is a lane too.
    for name in worktree_names(&top)? {
        let known = lanes
            .iter()
            .any(|l| ralph_escalation::git::ref_component(&l.task_id) == name);
        if !known {
            lanes.push(AbandonedLane {
                task_id: name,
                state: None,
                saved: Vec::new(),
            });
        }
    }
    for lane in &mut lanes {
        let folder = match lane.state {
            Some(_) => ralph_escalation::git::ref_component(&lane.task_id),
            None => lane.task_id.clone(),
        };
        lane.saved = give_up_lane(&top, &base_ref, &lane.task_id, &folder)?;
    }
    git::run(&top, &["worktree", "prune"])?;
    merge_journal.clear()?;
    std::fs::remove_file(&path).map_err(|cause| ParallelError::Io {
        path: path.clone(),
        cause,
    })?;
    Ok(Abandoned {
        run_id: session.run_id,
        base: session.base,
        lanes,
        session: PathBuf::from(SESSION_FILE),
    })
}

/// A landing's merge a kill cut short, in the lane's worktree: aborted and the branch put back
/// where it was (the merged result holds nothing of the lane's but its branch, which stays),
/// unless the base already moved to the landing (then the task is on the base).
fn undo_merge(top: &Path, base_ref: &str, journal: &MergeJournal) -> Result<(), ParallelError> {
    let JournaledStep::Landing { branch_before } = &journal.step else {
        return Ok(());
    };
    let landed = journal.landing.is_some() && journal.landing == git::rev(top, base_ref)?;
    let worktree = worktree_path(top, &journal.task_id);
    if !landed && worktree.exists() {
        let _ = git::attempt(&worktree, &["merge", "--abort"])?;
        git::run(&worktree, &["reset", "-q", "--hard", branch_before])?;
    }
    Ok(())
}

/// Saves lane `id`'s work, then removes its worktree (`.ralph/worktrees/<folder>`) and its
/// branch (`ralph/<folder>`); returns the saved refs.
fn give_up_lane(
    top: &Path,
    base_ref: &str,
    id: &str,
    folder: &str,
) -> Result<Vec<String>, ParallelError> {
    let mut saved = Vec::new();
    let worktree = top.join(WORKTREES).join(folder);
    if is_worktree(&worktree) {
        saved.extend(save_worktree(id, &worktree)?);
        git::run(
            top,
            &["worktree", "remove", "--force", &worktree.to_string_lossy()],
        )?;
    }
    let branch = format!("refs/heads/ralph/{folder}");
    let Some(commit) = git::rev(top, &branch)? else {
        return Ok(saved);
    };
    let held_by = |rev: &str| -> Result<bool, ParallelError> {
        Ok(git::attempt(top, &["merge-base", "--is-ancestor", &commit, rev])?.0)
    };
    let on_base = match git::rev(top, base_ref)? {
        Some(base) => held_by(&base)?,
        None => false,
    };
    let in_saved = match saved.first() {
        Some(refname) => held_by(refname)?,
        None => false,
    };
    if !on_base && !in_saved {
        saved.push(queue::save_commit(top, id, &commit)?);
    }
    git::delete_branch(top, &format!("ralph/{folder}"), &commit)?;
    Ok(saved)
}

/// Whether `dir` is a worktree of its own (a `.git` file names it), not a folder inside the
/// main worktree: saving in one that is not would save the main worktree's changes.
fn is_worktree(dir: &Path) -> bool {
    dir.join(".git").is_file()
}

/// The worktrees under `.ralph/worktrees`, by folder name.
fn worktree_names(top: &Path) -> Result<Vec<String>, ParallelError> {
    let dir = top.join(WORKTREES);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(cause) => return Err(ParallelError::Io { path: dir, cause }),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|cause| ParallelError::Io {
            path: dir.clone(),
            cause,
        })?;
        if is_worktree(&entry.path()) {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}
