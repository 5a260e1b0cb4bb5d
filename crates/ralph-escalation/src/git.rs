//! Git, through the `git` program: the only module of this crate that starts processes.
//!
//! Everything here either adds to the repository (commits, refs) or, in [`Git::restore`],
//! replaces the working tree with a checkpoint after [`Git::save`] has stored it. Nothing here
//! touches ignored files, and every operation takes the paths ralph must never touch
//! (`.ralph/`, prd.json, progress.txt, the events file) as pathspec exclusions.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// A git command that failed, or a repository ralph cannot work in.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` could not be started.
    #[error("cannot run git: {source}")]
    Spawn {
        /// Why.
        source: std::io::Error,
    },
    /// The folder is not inside a git work tree.
    #[error("{}: not a git repository (escalation.revert needs one; set `revert: false` to run without git)", .dir.display())]
    NotARepository {
        /// The folder.
        dir: PathBuf,
    },
    /// The repository has no commit to revert to.
    #[error("{}: the repository has no commit yet; commit once so ralph has a checkpoint to revert to", .dir.display())]
    NoCommit {
        /// The repository.
        dir: PathBuf,
    },
    /// A git command exited with an error.
    #[error("`git {args}` failed: {stderr}")]
    Failed {
        /// The arguments.
        args: String,
        /// What git said.
        stderr: String,
    },
}

/// A repository, addressed by its top-level folder.
#[derive(Debug, Clone)]
pub struct Git {
    top: PathBuf,
}

impl Git {
    /// The repository holding `dir`.
    pub fn open(dir: &Path) -> Result<Self, GitError> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["rev-parse", "--show-toplevel"])
            .output()
            .map_err(|source| GitError::Spawn { source })?;
        if !out.status.success() {
            return Err(GitError::NotARepository {
                dir: dir.to_path_buf(),
            });
        }
        let top = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok(Self {
            top: PathBuf::from(top),
        })
    }

    /// The top-level folder.
    pub fn top(&self) -> &Path {
        &self.top
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("-C")
            .arg(&self.top)
            .args(["-c", "core.quotepath=off"]);
        // An index of the user's own (GIT_INDEX_FILE in the environment) must not be used.
        cmd.env_remove("GIT_INDEX_FILE");
        cmd
    }

    fn run_with(&self, args: &[OsString], index: Option<&Path>) -> Result<String, GitError> {
        let mut cmd = self.command();
        cmd.args(args);
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        let out = cmd.output().map_err(|source| GitError::Spawn { source })?;
        if !out.status.success() {
            return Err(GitError::Failed {
                args: args
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        self.run_with(&args, None)
    }

    /// The commit HEAD points at.
    pub fn head(&self) -> Result<String, GitError> {
        self.run(&["rev-parse", "--verify", "-q", "HEAD^{commit}"])
            .map(|s| s.trim().to_owned())
            .map_err(|_| GitError::NoCommit {
                dir: self.top.clone(),
            })
    }

    /// The branch HEAD is on (`refs/heads/main`), or `None` when HEAD is detached.
    pub fn head_branch(&self) -> Result<Option<String>, GitError> {
        let out = self
            .command()
            .args(["symbolic-ref", "-q", "HEAD"])
            .output()
            .map_err(|source| GitError::Spawn { source })?;
        match out.status.code() {
            Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())),
            // Exit 1: HEAD is detached.
            Some(1) => Ok(None),
            _ => Err(GitError::Failed {
                args: "symbolic-ref -q HEAD".to_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            }),
        }
    }

    /// Pathspecs: the whole tree except `excluded` (paths relative to the top folder).
    fn pathspec(excluded: &[PathBuf]) -> Vec<OsString> {
        let mut specs = vec![OsString::from("--"), OsString::from(".")];
        for path in excluded {
            let mut spec = OsString::from(":(exclude,literal)");
            spec.push(path);
            specs.push(spec);
        }
        specs
    }

    /// `git add -A` of everything outside `excluded`, into `index` (the user's when `None`).
    ///
    /// `git add` fails when an exclusion names an ignored, untracked path (a `.ralph/` in
    /// `.gitignore`), though it would never add that path anyway: such exclusions are left out.
    fn add_all(&self, excluded: &[PathBuf], index: Option<&Path>) -> Result<(), GitError> {
        let ignored = self.untracked_ignored(excluded, index)?;
        let kept: Vec<PathBuf> = excluded
            .iter()
            .filter(|path| !ignored.contains(*path))
            .cloned()
            .collect();
        let mut add: Vec<OsString> = vec!["add".into(), "-A".into()];
        add.extend(Self::pathspec(&kept));
        self.run_with(&add, index)?;
        Ok(())
    }

    /// Those of `paths` that are ignored and hold no tracked file (in `index`).
    fn untracked_ignored(
        &self,
        paths: &[PathBuf],
        index: Option<&Path>,
    ) -> Result<Vec<PathBuf>, GitError> {
        let mut ignored = Vec::new();
        for path in paths {
            let mut check: Vec<OsString> = vec!["check-ignore".into(), "-q".into(), "--".into()];
            check.push(path.into());
            // check-ignore exits 1 for a path that is not ignored, 0 for one that is.
            if self.run_with(&check, index).is_err() {
                continue;
            }
            let mut tracked: Vec<OsString> = vec!["ls-files".into(), "--".into()];
            let mut literal = OsString::from(":(literal)");
            literal.push(path);
            tracked.push(literal);
            if self.run_with(&tracked, index)?.is_empty() {
                ignored.push(path.clone());
            }
        }
        Ok(ignored)
    }

    /// Changed, staged and untracked (not ignored) paths, outside `excluded`.
    pub fn dirty_paths(&self, excluded: &[PathBuf]) -> Result<Vec<String>, GitError> {
        // -z: paths come unquoted, NUL-terminated, and a rename as `R  new\0old\0`.
        let mut args: Vec<OsString> = ["status", "--porcelain", "-z", "--untracked-files=all"]
            .into_iter()
            .map(OsString::from)
            .collect();
        args.extend(Self::pathspec(excluded));
        let out = self.run_with(&args, None)?;
        Ok(parse_porcelain_z(&out))
    }

    /// Commits everything outside `excluded` (untracked files too, ignored ones not) with
    /// `message`, when there is anything to commit. Returns HEAD afterwards.
    pub fn commit_all(&self, message: &str, excluded: &[PathBuf]) -> Result<String, GitError> {
        self.add_all(excluded, None)?;
        let staged = self
            .command()
            .args(["diff", "--cached", "--quiet"])
            .status()
            .map_err(|source| GitError::Spawn { source })?;
        if !staged.success() {
            // ralph's own checkpoint commit: the user's hooks judge the user's commits.
            self.run(&["commit", "-q", "--no-verify", "-m", message])?;
        }
        self.head()
    }

    /// Stores everything that differs from HEAD (commits since the checkpoint are its history;
    /// staged, unstaged and untracked non-ignored files outside `excluded` are its tree) as a
    /// commit under `refname`, without touching the index, the working tree or HEAD. Returns the
    /// commit. When the index differs from HEAD, the staged state is kept too, as a second
    /// parent (as `git stash` does): a file staged in one version and edited again loses
    /// neither.
    pub fn save(
        &self,
        refname: &str,
        message: &str,
        excluded: &[PathBuf],
    ) -> Result<String, GitError> {
        let git_dir = PathBuf::from(self.run(&["rev-parse", "--absolute-git-dir"])?.trim());
        let index = git_dir.join(format!("ralph-save-index-{}", std::process::id()));
        let result = (|| {
            let head = self.head()?;
            let mut parents = vec!["-p".to_owned(), head.clone()];
            if let Some(staged) = self.staged_commit(&head, &index)? {
                parents.extend(["-p".to_owned(), staged]);
            }
            self.run_with(&["read-tree".into(), head.clone().into()], Some(&index))?;
            self.add_all(excluded, Some(&index))?;
            let tree = self.run_with(&["write-tree".into()], Some(&index))?;
            let mut commit_tree = vec!["commit-tree", tree.trim()];
            commit_tree.extend(parents.iter().map(String::as_str));
            commit_tree.extend(["-m", message]);
            let commit = self.run(&commit_tree)?;
            let commit = commit.trim().to_owned();
            self.run(&["update-ref", refname, &commit])?;
            Ok(commit)
        })();
        let _ = std::fs::remove_file(&index);
        let _ = std::fs::remove_file(index.with_extension("lock"));
        result
    }

    /// The user's index as a commit on `head`, or `None` when nothing is staged. Works on a copy
    /// (at `scratch`) so the user's index file is never written.
    fn staged_commit(&self, head: &str, scratch: &Path) -> Result<Option<String>, GitError> {
        let user_index = PathBuf::from(self.run(&["rev-parse", "--git-path", "index"])?.trim());
        let user_index = if user_index.is_absolute() {
            user_index
        } else {
            self.top.join(user_index)
        };
        if std::fs::copy(&user_index, scratch).is_err() {
            // No index yet: nothing is staged.
            return Ok(None);
        }
        // An index with conflicts has no tree; the working tree is still saved.
        let Ok(tree) = self.run_with(&["write-tree".into()], Some(scratch)) else {
            return Ok(None);
        };
        let head_tree = self.run(&["rev-parse", &format!("{head}^{{tree}}")])?;
        if tree.trim() == head_tree.trim() {
            return Ok(None);
        }
        let commit = self.run(&[
            "commit-tree",
            tree.trim(),
            "-p",
            head,
            "-m",
            "ralph: the index (staged changes) when the work was saved",
        ])?;
        Ok(Some(commit.trim().to_owned()))
    }

    /// The first free `<prefix>/<n>` (n from 1).
    pub fn next_ref(&self, prefix: &str) -> Result<String, GitError> {
        let out = self.run(&["for-each-ref", "--format=%(refname)", &format!("{prefix}/")])?;
        let max = out
            .lines()
            .filter_map(|r| {
                r.strip_prefix(prefix)?
                    .strip_prefix('/')?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        Ok(format!("{prefix}/{}", max + 1))
    }

    /// `git log --oneline from..to`.
    pub fn log(&self, from: &str, to: &str) -> Result<String, GitError> {
        self.run(&[
            "log",
            "--oneline",
            "--no-decorate",
            &format!("{from}..{to}"),
        ])
    }

    /// `git diff --stat from to`, leaving out `excluded`.
    pub fn diffstat(&self, from: &str, to: &str, excluded: &[PathBuf]) -> Result<String, GitError> {
        let mut args: Vec<OsString> = vec!["diff".into(), "--stat".into(), from.into(), to.into()];
        args.extend(Self::pathspec(excluded));
        self.run_with(&args, None)
    }

    /// Puts HEAD, the index and the working tree back to `checkpoint` and removes untracked
    /// files, leaving alone ignored files and everything under `excluded`. This is
    /// `git reset --hard` plus `git clean -fd`, done so that the excluded paths keep their
    /// current content even when they are tracked: a mixed reset (HEAD and index only), a
    /// checkout of every other tracked path from the index, and a clean of every other
    /// untracked path. Call [`Git::save`] first.
    ///
    /// `branch` is the branch the checkpoint was taken on ([`Git::head_branch`] then), `None`
    /// for a detached HEAD. HEAD is put back on it before the reset, so the reset moves that
    /// branch only: when the agent checked out another branch (one of the user's own, say),
    /// that branch is left as it is rather than reset to the checkpoint.
    pub fn restore(
        &self,
        checkpoint: &str,
        branch: Option<&str>,
        excluded: &[PathBuf],
    ) -> Result<(), GitError> {
        match branch {
            // Only HEAD changes; the reset below sets the index and the tree.
            Some(branch) => self.run(&["symbolic-ref", "HEAD", branch])?,
            None => self.run(&["update-ref", "--no-deref", "HEAD", checkpoint])?,
        };
        self.run(&["reset", "-q", checkpoint])?;
        let mut checkout: Vec<OsString> = vec!["checkout".into(), "-q".into()];
        checkout.extend(Self::pathspec(excluded));
        self.run_with(&checkout, None)?;
        let mut clean: Vec<OsString> = vec!["clean".into(), "-f".into(), "-d".into(), "-q".into()];
        clean.extend(Self::pathspec(excluded));
        self.run_with(&clean, None)?;
        Ok(())
    }

    /// `path` (relative to `cwd`, or absolute) relative to the top folder, when inside it.
    pub fn relative(&self, cwd: &Path, path: &Path) -> Option<PathBuf> {
        let top = std::fs::canonicalize(&self.top).unwrap_or_else(|_| self.top.clone());
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let joined = normalize(&cwd.join(path));
        // The file may not exist yet (progress.txt): resolve its folder instead.
        let resolved = match (joined.parent(), joined.file_name()) {
            (Some(dir), Some(name)) => std::fs::canonicalize(dir)
                .map(|d| d.join(name))
                .unwrap_or(joined.clone()),
            _ => joined.clone(),
        };
        resolved
            .strip_prefix(&top)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
    }
}

/// Removes `.` and `..` components without touching the filesystem.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A story id made safe for a ref name component: letters, digits, `-` and `_` are kept,
/// anything else becomes `-`.
pub fn ref_component(id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if safe.is_empty() {
        "story".to_owned()
    } else {
        safe
    }
}

/// The paths of `git status --porcelain -z`: for a rename or copy, the new path only.
fn parse_porcelain_z(out: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut entries = out.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let (Some(status), Some(path)) = (entry.get(..2), entry.get(3..)) else {
            continue;
        };
        paths.push(path.to_owned());
        if status.contains(['R', 'C']) {
            // The source path follows as its own entry.
            entries.next();
        }
    }
    paths
}

#[cfg(test)]
mod porcelain_tests {
    use super::parse_porcelain_z;

    #[test]
    fn renames_and_odd_names_come_out_whole() {
        let out =
            " M src/lib.rs\0R  new name.rs\0old name.rs\0?? dir/\"quoted\" file\0A  tab\there\0";
        assert_eq!(
            parse_porcelain_z(out),
            [
                "src/lib.rs",
                "new name.rs",
                "dir/\"quoted\" file",
                "tab\there"
            ]
        );
    }
}
