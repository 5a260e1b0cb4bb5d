//! One escalating loop per git repository.
//!
//! A loop that reverts or commits changes the whole working tree, not just its own folder: a
//! second loop anywhere in the same repository would have its work reset under it. So every
//! loop inside a repository takes the repository's lock (`<git dir>/ralph.lock`): exclusively
//! when it escalates (story mode or `revert`), shared otherwise. Loops that only edit files may
//! then run side by side in different folders, and none runs beside one that reverts.
//!
//! The repository is found by looking for `.git` in the folder and its parents, as git does,
//! without starting git: a plain loop in a repository pays nothing for this.

use std::path::{Path, PathBuf};

use ralph_engine::{LockError, LockHolder, LockMode, RunLock};
use ralph_frontmatter::Config;

/// The lock file's name inside the git directory.
const REPOSITORY_LOCK: &str = "ralph.lock";

/// Takes the lock of the git repository holding `folder`, in the mode `config` needs:
/// exclusive with story mode or `revert`, shared otherwise. `None` outside a repository.
pub fn lock_repository(
    folder: &Path,
    config: &Config,
    me: &LockHolder,
) -> Result<Option<RunLock>, LockError> {
    let Some(git_dir) = git_dir(folder) else {
        return Ok(None);
    };
    let escalates = config
        .escalation
        .as_ref()
        .is_some_and(|e| e.revert || e.prd.is_some());
    let mode = match escalates {
        true => LockMode::Exclusive,
        false => LockMode::Shared,
    };
    let what = format!("the git repository at {}", git_dir.display());
    RunLock::acquire(&git_dir.join(REPOSITORY_LOCK), mode, &what, me).map(Some)
}

/// The git directory of the repository holding `folder`: the first `.git` folder, or the
/// folder a `.git` file (`gitdir: ...`, in worktrees) points to, in `folder` or a parent.
fn git_dir(folder: &Path) -> Option<PathBuf> {
    let start = std::fs::canonicalize(folder).ok()?;
    start.ancestors().find_map(|dir| {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return Some(dot_git);
        }
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        Some(dir.join(target)).filter(|p| p.is_dir())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_dir_is_found_from_a_subfolder_and_through_a_gitdir_file() {
        let top = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(top.path()).unwrap();
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        assert_eq!(git_dir(&top.join("a/b")), Some(top.join(".git")));

        std::fs::create_dir_all(top.join("elsewhere/wt")).unwrap();
        std::fs::create_dir_all(top.join("wt")).unwrap();
        std::fs::write(top.join("wt/.git"), "gitdir: ../elsewhere/wt\n").unwrap();
        assert_eq!(
            git_dir(&top.join("wt")),
            Some(top.join("wt/../elsewhere/wt"))
        );
    }
}
