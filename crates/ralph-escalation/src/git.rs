//! Git, through the `git` program: the only module of this crate that starts processes.
//!
//! Everything here either adds to the repository (commits, refs) or, in [`Git::restore`],
//! replaces the working tree with a checkpoint after [`Git::save`] has stored it. Nothing here
//! touches ignored files, and every operation takes the paths ralph must never touch
//! (`.ralph/`, prd.json, progress.txt, the events file) as pathspec exclusions.
//!
//! Every git command runs in a process group of its own: a Ctrl+C at the terminal goes to
//! ralph's group and must not kill a revert half-way; ralph decides when to stop. Commits are
//! built in a temporary index (`<git dir>/ralph-save-index-<pid>`), never in the user's.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

mod command;
mod push;
mod save;
mod task_branch;

use save::Nested;

pub use command::{REPOSITORY_VARIABLES, git_command, output, what_git_said};
pub use push::{PushError, base_of, push_head, remember_base, remote_branch, remote_url};
pub use task_branch::{TaskBranch, ref_component, switch_to_task_branch, task_branch};

/// The temporary indexes' file name, before the pid of the ralph that made them.
const SAVE_INDEX_PREFIX: &str = "ralph-save-index-";

/// How many times a ref name already taken by another writer is tried with the next number.
const REF_RETRIES: usize = 100;

/// A git command that failed, or a repository ralph cannot work in.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitError {
    /// `git` could not be started.
    #[error("cannot run git: {cause}")]
    Spawn {
        /// Why.
        cause: std::io::Error,
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
    /// HEAD names a branch that no longer exists (the agent deleted it, or checked out a new
    /// orphan branch) after ralph saw it at a commit.
    #[error(
        "{}: the branch ralph ran on is gone: HEAD names `{branch}`, which no longer exists (deleted during the run?); the last commit ralph knows is {last}. Put it back with `git update-ref {branch} {last}` (or check out the branch you want), then run ralph again",
        .dir.display()
    )]
    BranchGone {
        /// The repository.
        dir: PathBuf,
        /// The branch HEAD names (`refs/heads/main`).
        branch: String,
        /// The last commit ralph saw HEAD at.
        last: String,
    },
    /// A git command exited with an error.
    #[error("`git {args}` failed: {stderr}")]
    Failed {
        /// The arguments.
        args: String,
        /// What git said.
        stderr: String,
    },
    /// A file to be saved could not be read.
    #[error("{}: cannot read: {cause}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// An untracked file could not be removed by a revert.
    #[error("{}: cannot remove: {cause}", .path.display())]
    Remove {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The repository has submodules, whose uncommitted work a revert could not save.
    #[error(
        "{}: the repository has submodules ({}); escalation.revert cannot save uncommitted work inside a submodule, so a revert could lose it. Set `revert: false` under `escalation:` to run without reverts, or run ralph in a repository without submodules",
        .dir.display(),
        .paths.join(", ")
    )]
    Submodules {
        /// The repository.
        dir: PathBuf,
        /// The submodules' paths.
        paths: Vec<String>,
    },
    /// git has no user name or email to make ralph's commits with.
    #[error(
        "{}: git has no user identity for ralph's checkpoint commits ({stderr}). Set one: git config --global user.name \"Your Name\" && git config --global user.email you@example.com (without --global for this repository only)",
        .dir.display()
    )]
    NoIdentity {
        /// The repository.
        dir: PathBuf,
        /// What git said.
        stderr: String,
    },
    /// A test commit failed (commonly: signing with `commit.gpgsign`).
    #[error(
        "{}: git cannot make a commit here ({stderr}); ralph's checkpoint commits would fail mid-run. If signing failed, fix gpg (gpg.program, user.signingkey) or turn signing off for this repository: git config commit.gpgsign false",
        .dir.display()
    )]
    CannotCommit {
        /// The repository.
        dir: PathBuf,
        /// What git said.
        stderr: String,
    },
}

/// A commit stored under a ref of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The ref (`refs/ralph/attempts/US-001/1`).
    pub refname: String,
    /// The commit it points at.
    pub commit: String,
}

/// The temporary index a save or a commit is built in; removed when dropped.
struct TempIndex(PathBuf);

impl TempIndex {
    fn new(git_dir: &Path) -> Self {
        Self(git_dir.join(format!("{SAVE_INDEX_PREFIX}{}", std::process::id())))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}

/// `paths` as NUL-terminated literal pathspecs, for `--pathspec-from-file=- --pathspec-file-nul`.
fn literal_pathspecs(paths: &[PathBuf]) -> Vec<u8> {
    let mut out = Vec::new();
    for path in paths {
        out.extend_from_slice(b":(literal)");
        out.extend_from_slice(path.as_os_str().as_bytes());
        out.push(0);
    }
    out
}

/// The NUL-separated entries of a `-z` listing.
fn nul_entries(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|b| *b == 0).filter(|e| !e.is_empty())
}

fn os_args(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// The ref that names a run's latest checkpoint (its last pass commit), moved before HEAD is:
/// the session file, written after the step, may not have it yet when ralph is killed.
pub const CHECKPOINT_REF: &str = "refs/ralph/checkpoint";

/// A repository, addressed by its top-level folder.
#[derive(Debug, Clone)]
pub struct Git {
    top: PathBuf,
    git_dir: PathBuf,
    /// `commit.gpgsign`: ralph's commits are signed as the user's would be.
    sign: bool,
    /// The commit HEAD was last seen at, shared by clones: named when the branch is deleted.
    last_head: Arc<Mutex<Option<String>>>,
}

impl Git {
    /// The repository holding `dir`. Temporary indexes left by a ralph that was killed are
    /// removed.
    pub fn open(dir: &Path) -> Result<Self, GitError> {
        let mut cmd = git_command(dir);
        cmd.args(["rev-parse", "--show-toplevel", "--absolute-git-dir"]);
        let out = output(cmd, None).map_err(|cause| GitError::Spawn { cause })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let (true, Some(top), Some(git_dir)) = (out.status.success(), lines.next(), lines.next())
        else {
            return Err(GitError::NotARepository {
                dir: dir.to_path_buf(),
            });
        };
        let mut git = Self {
            top: PathBuf::from(top),
            git_dir: PathBuf::from(git_dir),
            sign: false,
            last_head: Arc::default(),
        };
        git.remove_stale_indexes();
        git.sign = git.config_bool("commit.gpgsign")?;
        Ok(git)
    }

    /// The top-level folder.
    pub fn top(&self) -> &Path {
        &self.top
    }

    /// The git directory (`.git`, or a linked worktree's own).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The commit `refname` points at.
    pub fn ref_commit(&self, refname: &str) -> Result<String, GitError> {
        Ok(self
            .run(&[
                "rev-parse",
                "--verify",
                "-q",
                &format!("{refname}^{{commit}}"),
            ])?
            .trim()
            .to_owned())
    }

    /// The paths whose content differs between `from` and `to` (commits or trees).
    pub fn changed_paths(&self, from: &str, to: &str) -> Result<Vec<PathBuf>, GitError> {
        let args = os_args(&["diff", "--name-only", "--no-renames", "-z", from, to]);
        let out = self.run_in(&self.top, &args, None, None)?;
        Ok(nul_entries(&out)
            .map(|e| PathBuf::from(OsStr::from_bytes(e)))
            .collect())
    }

    /// Removes the temporary indexes of ralphs that are no longer running (killed mid-save).
    fn remove_stale_indexes(&self) {
        let Ok(entries) = std::fs::read_dir(&self.git_dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name
                .to_str()
                .and_then(|n| n.strip_prefix(SAVE_INDEX_PREFIX))
            else {
                continue;
            };
            let pid = rest.strip_suffix(".lock").unwrap_or(rest);
            if pid
                .parse::<u32>()
                .is_ok_and(|pid| !ralph_process::process_exists(pid))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Runs git in `dir` (the top folder, or a repository inside it) with `index` as its
    /// index and `input` on its stdin.
    fn exec(
        &self,
        dir: &Path,
        args: &[OsString],
        index: Option<&Path>,
        input: Option<&[u8]>,
    ) -> Result<Output, GitError> {
        let mut cmd = git_command(dir);
        cmd.args(["-c", "core.quotepath=off"])
            // A ralph killed mid-step leaves its git running a moment longer, and the next
            // start finishes the step at once: a ref it still holds is waited for (git waits
            // 100 ms by default), not taken for a stale lock.
            .args(["-c", "core.filesRefLockTimeout=2000"])
            .args(args);
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        output(cmd, input).map_err(|cause| GitError::Spawn { cause })
    }

    fn failed(args: &[OsString], out: &Output) -> GitError {
        GitError::Failed {
            args: args
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            stderr: what_git_said(out),
        }
    }

    /// Runs git in `dir`; its stdout as bytes, or an error unless it succeeded.
    fn run_in(
        &self,
        dir: &Path,
        args: &[OsString],
        index: Option<&Path>,
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let out = self.exec(dir, args, index, input)?;
        if !out.status.success() {
            return Err(Self::failed(args, &out));
        }
        Ok(out.stdout)
    }

    fn run_with(&self, args: &[OsString], index: Option<&Path>) -> Result<String, GitError> {
        let out = self.run_in(&self.top, args, index, None)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn run(&self, args: &[&str]) -> Result<String, GitError> {
        self.run_with(&os_args(args), None)
    }

    /// A boolean setting, `false` when unset.
    fn config_bool(&self, key: &str) -> Result<bool, GitError> {
        let args = os_args(&["config", "--type=bool", "--get", key]);
        let out = self.exec(&self.top, &args, None, None)?;
        match out.status.code() {
            Some(0) => Ok(String::from_utf8_lossy(&out.stdout).trim() == "true"),
            // Exit 1: not set.
            Some(1) => Ok(false),
            _ => Err(Self::failed(&args, &out)),
        }
    }

    /// The commit HEAD points at.
    pub fn head(&self) -> Result<String, GitError> {
        let mut last = self.last_head.lock().unwrap_or_else(|e| e.into_inner());
        match self.run(&["rev-parse", "--verify", "-q", "HEAD^{commit}"]) {
            Ok(head) => {
                let head = head.trim().to_owned();
                *last = Some(head.clone());
                Ok(head)
            }
            // An unborn HEAD after ralph saw a commit: the branch went away under it.
            Err(_) => match (last.clone(), self.head_branch().ok().flatten()) {
                (Some(last), Some(branch)) => Err(GitError::BranchGone {
                    dir: self.top.clone(),
                    branch,
                    last,
                }),
                _ => Err(GitError::NoCommit {
                    dir: self.top.clone(),
                }),
            },
        }
    }

    /// The branch HEAD is on (`refs/heads/main`), or `None` when HEAD is detached.
    pub fn head_branch(&self) -> Result<Option<String>, GitError> {
        let args = os_args(&["symbolic-ref", "-q", "HEAD"]);
        let out = self.exec(&self.top, &args, None, None)?;
        match out.status.code() {
            Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())),
            // Exit 1: HEAD is detached.
            Some(1) => Ok(None),
            _ => Err(Self::failed(&args, &out)),
        }
    }

    /// Checks, before anything runs, that ralph will be able to make its commits: a user
    /// identity is set and a commit object can be written (and signed, with
    /// `commit.gpgsign`). The test commit is left unreferenced.
    pub fn check_can_commit(&self) -> Result<(), GitError> {
        for var in ["GIT_COMMITTER_IDENT", "GIT_AUTHOR_IDENT"] {
            let out = self.exec(&self.top, &os_args(&["var", var]), None, None)?;
            if !out.status.success() {
                return Err(GitError::NoIdentity {
                    dir: self.top.clone(),
                    stderr: complaints(&out.stderr),
                });
            }
        }
        let head = self.head()?;
        let tree = self.run(&["rev-parse", &format!("{head}^{{tree}}")])?;
        self.commit_tree(tree.trim(), &[head], "ralph: can a commit be made here?")
            .map(drop)
            .map_err(|err| GitError::CannotCommit {
                dir: self.top.clone(),
                stderr: match err {
                    GitError::Failed { stderr, .. } => complaints(stderr.as_bytes()),
                    other => other.to_string(),
                },
            })
    }

    /// The submodules (gitlinks) HEAD or the index records.
    pub fn submodules(&self) -> Result<Vec<String>, GitError> {
        let mut paths = Vec::new();
        let tree = self.run_in(
            &self.top,
            &os_args(&["ls-tree", "-r", "-z", "HEAD"]),
            None,
            None,
        )?;
        let index = self.run_in(&self.top, &os_args(&["ls-files", "-s", "-z"]), None, None)?;
        for entry in nul_entries(&tree).chain(nul_entries(&index)) {
            // `160000 commit <oid>\t<path>` (ls-tree), `160000 <oid> <stage>\t<path>` (ls-files).
            let text = String::from_utf8_lossy(entry);
            if let (true, Some((_, path))) = (text.starts_with("160000 "), text.split_once('\t')) {
                if !paths.iter().any(|p| p == path) {
                    paths.push(path.to_owned());
                }
            }
        }
        Ok(paths)
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

    /// Changed, staged and untracked (not ignored) paths, outside `excluded`; for a rename,
    /// both its paths.
    pub fn dirty_paths(&self, excluded: &[PathBuf]) -> Result<Vec<String>, GitError> {
        // -z: paths come unquoted, NUL-terminated, and a rename as `R  new\0old\0`.
        let mut args = os_args(&["status", "--porcelain", "-z", "--untracked-files=all"]);
        args.extend(Self::pathspec(excluded));
        let out = self.run_with(&args, None)?;
        Ok(parse_porcelain_z(&out))
    }

    /// Untracked, not ignored paths outside `excluded`, as `index` sees them: files, and
    /// repositories inside the tree as their folder with a trailing `/`.
    fn untracked(
        &self,
        excluded: &[PathBuf],
        index: Option<&Path>,
    ) -> Result<Vec<PathBuf>, GitError> {
        let mut args = os_args(&["ls-files", "-z", "--others", "--exclude-standard"]);
        args.extend(Self::pathspec(excluded));
        let out = self.run_in(&self.top, &args, index, None)?;
        Ok(nul_entries(&out)
            .map(|e| PathBuf::from(OsStr::from_bytes(e)))
            .collect())
    }

    /// Sets `index` to `base`'s tree, with the user's index's file stat data where it matches,
    /// so `git add` rehashes only files that changed rather than the whole tree.
    fn read_tree_keeping_stat(&self, base: &str, index: &Path) -> Result<(), GitError> {
        let seeded = std::fs::copy(self.user_index()?, index).is_ok()
            && self
                .run_with(&["read-tree".into(), "-m".into(), base.into()], Some(index))
                .is_ok();
        if !seeded {
            // No index yet, or one with conflicts: without stat data (every file rehashed).
            self.run_with(&["read-tree".into(), base.into()], Some(index))?;
        }
        Ok(())
    }

    /// The user's index file.
    fn user_index(&self) -> Result<PathBuf, GitError> {
        let path = PathBuf::from(self.run(&["rev-parse", "--git-path", "index"])?.trim());
        Ok(match path.is_absolute() {
            true => path,
            false => self.top.join(path),
        })
    }

    /// Puts `bytes` in `index` as the content of `path` (relative to the top folder), when
    /// `index` tracks it.
    fn set_content(&self, index: &Path, path: &Path, bytes: &[u8]) -> Result<(), GitError> {
        let mut args = os_args(&["ls-files", "-s", "-z", "--"]);
        let mut literal = OsString::from(":(literal)");
        literal.push(path);
        args.push(literal);
        let listed = self.run_with(&args, Some(index))?;
        let Some(mode) = listed.split(' ').next().filter(|m| !m.is_empty()) else {
            return Ok(());
        };
        let mut hash = os_args(&["hash-object", "-w", "--stdin"]);
        let mut at = OsString::from("--path=");
        at.push(path);
        hash.push(at);
        let oid = self.run_in(&self.top, &hash, None, Some(bytes))?;
        let mut info = OsString::from(format!("{mode},{},", String::from_utf8_lossy(&oid).trim()));
        info.push(path);
        let update = vec!["update-index".into(), "--cacheinfo".into(), info];
        self.run_with(&update, Some(index))?;
        Ok(())
    }

    fn write_tree(&self, index: &Path) -> Result<String, GitError> {
        Ok(self
            .run_with(&["write-tree".into()], Some(index))?
            .trim()
            .to_owned())
    }

    fn tree_of(&self, commit: &str) -> Result<String, GitError> {
        Ok(self
            .run(&["rev-parse", &format!("{commit}^{{tree}}")])?
            .trim()
            .to_owned())
    }

    /// A commit of `tree` on `parents`, signed when the user's commits are.
    fn commit_tree(
        &self,
        tree: &str,
        parents: &[String],
        message: &str,
    ) -> Result<String, GitError> {
        let mut args = vec!["commit-tree", tree];
        for parent in parents {
            args.extend(["-p", parent]);
        }
        if self.sign {
            args.push("-S");
        }
        args.extend(["-m", message]);
        Ok(self.run(&args)?.trim().to_owned())
    }

    /// Commits everything outside `excluded` (untracked files too, ignored ones not) with
    /// `message`, when there is anything to commit, with `replace`'s bytes as the content of
    /// its path (when tracked) rather than the file's. Returns HEAD afterwards.
    ///
    /// The commit is built in a temporary index from HEAD: what the user staged under
    /// `excluded` stays staged and uncommitted, and a repository the agent created inside the
    /// tree is left out (and in place). The user's index then follows the commit outside
    /// `excluded`, before HEAD moves to it.
    pub fn commit_all(
        &self,
        message: &str,
        excluded: &[PathBuf],
        replace: Option<(&Path, &[u8])>,
    ) -> Result<String, GitError> {
        self.commit_marking(message, excluded, replace, None)
    }

    /// [`commit_all`](Self::commit_all) for a new checkpoint: [`CHECKPOINT_REF`] names the
    /// commit (or HEAD, when there was nothing to commit) before HEAD moves to it, so a run
    /// killed before it could record the checkpoint finds it in the repository
    /// ([`recorded_checkpoint`](Self::recorded_checkpoint)). Killed between the two, the ref
    /// names a commit HEAD does not hold, which a resumed run ignores.
    pub fn commit_checkpoint(
        &self,
        message: &str,
        excluded: &[PathBuf],
        replace: Option<(&Path, &[u8])>,
    ) -> Result<String, GitError> {
        self.commit_marking(message, excluded, replace, Some(CHECKPOINT_REF))
    }

    /// The commit [`commit_checkpoint`](Self::commit_checkpoint) last named, if any.
    pub fn recorded_checkpoint(&self) -> Option<String> {
        self.run(&[
            "rev-parse",
            "--verify",
            "-q",
            &format!("{CHECKPOINT_REF}^{{commit}}"),
        ])
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
    }

    /// Whether commit `ancestor` is `descendant` or in its history.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> bool {
        self.run(&["merge-base", "--is-ancestor", ancestor, descendant])
            .is_ok()
    }

    fn commit_marking(
        &self,
        message: &str,
        excluded: &[PathBuf],
        replace: Option<(&Path, &[u8])>,
        mark: Option<&str>,
    ) -> Result<String, GitError> {
        let head = self.head()?;
        let index = TempIndex::new(&self.git_dir);
        self.stage_work(&head, excluded, index.path(), Nested::Leave)?;
        if let Some((path, bytes)) = replace {
            self.set_content(index.path(), path, bytes)?;
        }
        let tree = self.write_tree(index.path())?;
        if tree == self.tree_of(&head)? {
            if let Some(mark) = mark {
                self.run(&["update-ref", mark, &head])?;
            }
            return Ok(head);
        }
        let commit = self.commit_tree(&tree, std::slice::from_ref(&head), message)?;
        if let Some(mark) = mark {
            self.run(&["update-ref", mark, &commit])?;
        }
        // The index first: killed before HEAD moves, the work is left staged, as by `git add`.
        let mut reset = os_args(&["reset", "-q", &commit]);
        reset.extend(Self::pathspec(excluded));
        self.run_with(&reset, None)?;
        // The old value guards against HEAD having moved meanwhile.
        self.run(&["update-ref", "-m", message, "HEAD", &commit, &head])?;
        Ok(commit)
    }

    /// Points the first free `<prefix>/<n>` at `commit`. The ref is created only if it does
    /// not exist: when another writer took that number first, the next one is tried.
    fn create_ref(&self, prefix: &str, commit: &str) -> Result<String, GitError> {
        let mut last = None;
        for _ in 0..REF_RETRIES {
            let refname = self.next_ref(prefix)?;
            match self.run(&["update-ref", &refname, commit, ""]) {
                Ok(_) => return Ok(refname),
                Err(err) if self.ref_exists(&refname)? => last = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or_else(|| GitError::Failed {
            args: format!("update-ref {prefix}/<n>"),
            stderr: "no free ref name".to_owned(),
        }))
    }

    fn ref_exists(&self, refname: &str) -> Result<bool, GitError> {
        let args = os_args(&["show-ref", "--verify", "-q", refname]);
        Ok(self.exec(&self.top, &args, None, None)?.status.success())
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

    /// The refs under `prefix/`, oldest number first (`refs/ralph/attempts/US-1/1`, `.../2`).
    pub fn refs(&self, prefix: &str) -> Result<Vec<String>, GitError> {
        let out = self.run(&["for-each-ref", "--format=%(refname)", &format!("{prefix}/")])?;
        let mut refs: Vec<(u64, String)> = out
            .lines()
            .map(|r| {
                let n = r
                    .strip_prefix(prefix)
                    .and_then(|n| n.strip_prefix('/')?.parse().ok());
                (n.unwrap_or(u64::MAX), r.to_owned())
            })
            .collect();
        refs.sort();
        Ok(refs.into_iter().map(|(_, r)| r).collect())
    }

    /// Commits `paths` alone, as they are in the working tree, with `message` (`git commit
    /// --only`): what else is staged stays staged. Returns the commit.
    pub fn commit_paths(&self, message: &str, paths: &[PathBuf]) -> Result<String, GitError> {
        let mut add: Vec<OsString> = vec!["add".into(), "--".into()];
        add.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
        self.run_with(&add, None)?;
        let mut commit: Vec<OsString> = vec![
            "commit".into(),
            "-q".into(),
            "-m".into(),
            message.into(),
            "--only".into(),
            "--".into(),
        ];
        commit.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
        self.run_with(&commit, None)?;
        self.head()
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

    /// `path` (relative to `cwd`, or absolute) relative to the top folder, when inside it.
    pub fn relative(&self, cwd: &Path, path: &Path) -> Option<PathBuf> {
        let top = std::fs::canonicalize(&self.top).unwrap_or_else(|_| self.top.clone());
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let joined = normalize(&cwd.join(path));
        // The path itself is not followed (a symlink is protected as the link), its folders
        // are: the deepest that exists is resolved (the rest may not exist yet: a log folder
        // ralph is about to create under a symlinked folder).
        let resolved = match (joined.parent(), joined.file_name()) {
            (Some(dir), Some(name)) => resolve_existing(dir).join(name),
            _ => joined.clone(),
        };
        resolved
            .strip_prefix(&top)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
    }
}

/// `path` with its deepest existing ancestor resolved (symlinks followed) and the rest as is.
fn resolve_existing(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let (Ok(real), Ok(rest)) = (std::fs::canonicalize(ancestor), path.strip_prefix(ancestor))
        {
            return real.join(rest);
        }
    }
    path.to_path_buf()
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

/// git's `error:` and `fatal:` lines in `stderr`, joined; all of it when it has none.
fn complaints(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("error:") || l.starts_with("fatal:"))
        .collect();
    match lines.is_empty() {
        true => text.trim().to_owned(),
        false => lines.join("; "),
    }
}

/// The paths of `git status --porcelain -z`: for a rename or copy, the new path and the old.
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
            paths.extend(entries.next().map(str::to_owned));
        }
    }
    paths
}

#[cfg(test)]
mod tests {
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
                "old name.rs",
                "dir/\"quoted\" file",
                "tab\there"
            ]
        );
    }
}
