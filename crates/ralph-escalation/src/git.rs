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
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

mod push;
pub use push::{PushError, base_of, push_head, remember_base, remote_branch, remote_url};

/// The temporary indexes' file name, before the pid of the ralph that made them.
const SAVE_INDEX_PREFIX: &str = "ralph-save-index-";

/// How many times a ref name already taken by another writer is tried with the next number.
const REF_RETRIES: usize = 100;

/// Story ids longer than this are cut (and told apart by a hash) in ref names.
const REF_COMPONENT_MAX: usize = 64;

/// A git command that failed, or a repository ralph cannot work in.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An untracked file could not be removed by a revert.
    #[error("{}: cannot remove: {source}", .path.display())]
    Remove {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
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

/// What a tree built from the working tree does with a repository the agent created inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nested {
    /// Its files go in as ordinary files: saved work must hold them.
    Files,
    /// It stays out (and in the working tree): a checkpoint never records it as a gitlink.
    Leave,
}

/// A `git` command in a process group of its own, with nothing on stdin.
fn git_command() -> Command {
    let mut cmd = Command::new("git");
    // An index of the user's own (GIT_INDEX_FILE in the environment) must not be used.
    cmd.env_remove("GIT_INDEX_FILE").process_group(0);
    cmd
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

/// Whether process `pid` exists (it may belong to another user).
fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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
        let out = git_command()
            .arg("-C")
            .arg(dir)
            .env("PWD", ralph_process::child_pwd(dir))
            .args(["rev-parse", "--show-toplevel", "--absolute-git-dir"])
            .stdin(Stdio::null())
            .output()
            .map_err(|source| GitError::Spawn { source })?;
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
            if pid.parse::<i32>().is_ok_and(|pid| !process_alive(pid)) {
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
        let mut cmd = git_command();
        cmd.arg("-C")
            .arg(dir)
            // Its hooks are the person's programs, run in `dir`.
            .env("PWD", ralph_process::child_pwd(dir))
            .args(["-c", "core.quotepath=off"])
            // A ralph killed mid-step leaves its git running a moment longer, and the next
            // start finishes the step at once: a ref it still holds is waited for (git waits
            // 100 ms by default), not taken for a stale lock.
            .args(["-c", "core.filesRefLockTimeout=2000"])
            .args(args)
            .stdin(match input {
                Some(_) => Stdio::piped(),
                None => Stdio::null(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        let mut child = cmd.spawn().map_err(|source| GitError::Spawn { source })?;
        std::thread::scope(|scope| {
            if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
                // Written while the output is read: neither pipe can fill up and stall git.
                scope.spawn(move || {
                    let _ = stdin.write_all(bytes);
                });
            }
            child.wait_with_output()
        })
        .map_err(|source| GitError::Spawn { source })
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

    /// The repositories inside the tree that `index` does not track (an agent's `git init`).
    fn nested_repos(&self, excluded: &[PathBuf], index: &Path) -> Result<Vec<PathBuf>, GitError> {
        Ok(self
            .untracked(excluded, Some(index))?
            .into_iter()
            .filter(|p| p.as_os_str().as_bytes().ends_with(b"/"))
            .map(|p| p.components().collect())
            .collect())
    }

    /// Adds the working files of the repository at `repo` (relative to the top folder) to
    /// `index` as ordinary files: its tracked and untracked, not ignored, files, byte for byte.
    fn add_nested_files(&self, repo: &Path, index: &Path) -> Result<(), GitError> {
        let mut files = Vec::new();
        self.nested_files(repo, &mut files)?;
        let mut info = Vec::new();
        for chunk in files.chunks(256) {
            for (mode, oid, rel) in self.hash_files(chunk)? {
                info.extend_from_slice(format!("{mode} {oid}\t").as_bytes());
                info.extend_from_slice(rel.as_os_str().as_bytes());
                info.push(0);
            }
        }
        let args = os_args(&["update-index", "--add", "-z", "--index-info"]);
        self.run_in(&self.top, &args, Some(index), Some(&info))?;
        Ok(())
    }

    /// Pushes onto `files` the working files (tracked, or untracked and not ignored) of the
    /// repository at `repo` and of the repositories inside it, relative to the top folder.
    fn nested_files(&self, repo: &Path, files: &mut Vec<PathBuf>) -> Result<(), GitError> {
        let args = os_args(&[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ]);
        let listing = self.run_in(&self.top.join(repo), &args, None, None)?;
        for entry in nul_entries(&listing) {
            let rel: PathBuf = repo.join(OsStr::from_bytes(entry)).components().collect();
            match entry.ends_with(b"/") {
                true => self.nested_files(&rel, files)?,
                false => files.push(rel),
            }
        }
        Ok(())
    }

    /// Stores `files` (relative to the top folder) as blobs: their index mode, blob id and
    /// path. A file listed but gone (deleted there) has nothing to store and is left out.
    fn hash_files(
        &self,
        files: &[PathBuf],
    ) -> Result<Vec<(&'static str, String, PathBuf)>, GitError> {
        let mut entries = Vec::new();
        let mut regular = Vec::new();
        for rel in files {
            let path = self.top.join(rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                // A link's blob is its target, as git stores it.
                let target = std::fs::read_link(&path).map_err(|source| GitError::Read {
                    path: path.clone(),
                    source,
                })?;
                let args = os_args(&["hash-object", "-w", "--stdin"]);
                let oid =
                    self.run_in(&self.top, &args, None, Some(target.as_os_str().as_bytes()))?;
                entries.push((
                    "120000",
                    String::from_utf8_lossy(&oid).trim().to_owned(),
                    rel.clone(),
                ));
            } else if meta.is_file() {
                let mode = match meta.permissions().mode() & 0o111 {
                    0 => "100644",
                    _ => "100755",
                };
                regular.push((mode, rel));
            }
        }
        if regular.is_empty() {
            return Ok(entries);
        }
        let mut args = os_args(&["hash-object", "-w", "--no-filters", "--"]);
        args.extend(regular.iter().map(|(_, rel)| rel.as_os_str().to_owned()));
        let oids = self.run_with(&args, None)?;
        for ((mode, rel), oid) in regular.into_iter().zip(oids.lines()) {
            entries.push((mode, oid.to_owned(), rel.clone()));
        }
        Ok(entries)
    }

    /// Fills `index` with `base`'s tree plus everything in the working tree outside
    /// `excluded` (untracked files too, ignored ones not). A repository the agent created
    /// inside the tree is never recorded as a gitlink: `nested` says what becomes of it.
    fn stage_work(
        &self,
        base: &str,
        excluded: &[PathBuf],
        index: &Path,
        nested: Nested,
    ) -> Result<(), GitError> {
        self.read_tree_keeping_stat(base, index)?;
        let repos = self.nested_repos(excluded, index)?;
        let skipped: Vec<PathBuf> = excluded.iter().chain(&repos).cloned().collect();
        self.add_all(&skipped, Some(index))?;
        if nested == Nested::Files {
            for repo in &repos {
                self.add_nested_files(repo, index)?;
            }
        }
        Ok(())
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

    /// Stores everything that differs from HEAD (commits since the checkpoint are its history;
    /// staged, unstaged and untracked non-ignored files outside `excluded`, and the files of a
    /// repository the agent created inside the tree, are its tree) as a commit under the first
    /// free `<prefix>/<n>`, without touching the index, the working tree or HEAD. When the
    /// index differs from HEAD, the staged state is kept too, as a second parent (as
    /// `git stash` does): a file staged in one version and edited again loses neither.
    pub fn save(
        &self,
        prefix: &str,
        message: &str,
        excluded: &[PathBuf],
    ) -> Result<Saved, GitError> {
        let commit = self.save_commit(message, excluded)?;
        let refname = self.create_ref(prefix, &commit)?;
        Ok(Saved { refname, commit })
    }

    /// What [`save`](Self::save) stores, as a commit no ref names yet, with the first free
    /// `<prefix>/<n>` it is to be named by ([`name_saved`](Self::name_saved)). A step that must
    /// be journaled before its saved work has a name (a revert: a kill in between would leave
    /// a saved attempt the next start knows nothing of) records both, then names it.
    pub fn save_unnamed(
        &self,
        prefix: &str,
        message: &str,
        excluded: &[PathBuf],
    ) -> Result<Saved, GitError> {
        let commit = self.save_commit(message, excluded)?;
        let refname = self.next_ref(prefix)?;
        Ok(Saved { refname, commit })
    }

    /// Points `saved.refname` at `saved.commit` ([`save_unnamed`](Self::save_unnamed)), and
    /// returns the saved work as named: as given, also when the ref names it already; when
    /// another writer took the name meanwhile, its ref is left alone and the first free
    /// `<prefix>/<n>` names the work instead.
    pub fn name_saved(&self, saved: &Saved) -> Result<Saved, GitError> {
        match self.run(&["update-ref", &saved.refname, &saved.commit, ""]) {
            Ok(_) => Ok(saved.clone()),
            Err(_) if self.ref_exists(&saved.refname)? => {
                if self.ref_commit(&saved.refname)? == saved.commit {
                    return Ok(saved.clone());
                }
                let prefix = saved
                    .refname
                    .rsplit_once('/')
                    .map_or(saved.refname.as_str(), |(prefix, _)| prefix);
                Ok(Saved {
                    refname: self.create_ref(prefix, &saved.commit)?,
                    commit: saved.commit.clone(),
                })
            }
            Err(err) => Err(err),
        }
    }

    /// The commit [`save`](Self::save) stores.
    fn save_commit(&self, message: &str, excluded: &[PathBuf]) -> Result<String, GitError> {
        let index = TempIndex::new(&self.git_dir);
        let head = self.head()?;
        let mut parents = vec![head.clone()];
        if let Some(staged) = self.staged_commit(&head, index.path())? {
            parents.push(staged);
        }
        self.stage_work(&head, excluded, index.path(), Nested::Files)?;
        let tree = self.write_tree(index.path())?;
        self.commit_tree(&tree, &parents, message)
    }

    /// The tree of everything in the working tree outside `excluded` (untracked files too,
    /// ignored ones not), as [`save`](Self::save) would store it, without touching the index,
    /// the working tree or HEAD: equal trees mean the same work.
    pub fn work_tree(&self, excluded: &[PathBuf]) -> Result<String, GitError> {
        let index = TempIndex::new(&self.git_dir);
        let head = self.head()?;
        self.stage_work(&head, excluded, index.path(), Nested::Files)?;
        self.write_tree(index.path())
    }

    /// The user's index as a commit on `head`, or `None` when nothing is staged. Works on a copy
    /// (at `scratch`) so the user's index file is never written.
    fn staged_commit(&self, head: &str, scratch: &Path) -> Result<Option<String>, GitError> {
        if std::fs::copy(self.user_index()?, scratch).is_err() {
            // No index yet: nothing is staged.
            return Ok(None);
        }
        // An index with conflicts has no tree; the working tree is still saved.
        let Ok(tree) = self.write_tree(scratch) else {
            return Ok(None);
        };
        if tree == self.tree_of(head)? {
            return Ok(None);
        }
        let commit = self.commit_tree(
            &tree,
            &[head.to_owned()],
            "ralph: the index (staged changes) when the work was saved",
        )?;
        Ok(Some(commit))
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

    /// Puts HEAD, the index and the working tree back to `checkpoint` and removes untracked
    /// files, leaving alone ignored files, repositories inside the tree and everything under
    /// `excluded` (their index entries too). This is `git reset --hard` plus `git clean -fd`,
    /// done so that the excluded paths keep their current content even when they are tracked:
    /// HEAD moved, the index and then the working tree set from the checkpoint outside
    /// `excluded`, and every other untracked, not ignored, file removed.
    ///
    /// `saved` is what [`Git::save`] stored first. Files about to be removed that it lacks
    /// (files the agent wrote and added to `.gitignore`, no longer ignored once the
    /// checkpoint's `.gitignore` is back) are added to it first: its ref moves to a commit with
    /// the same parents and message whose tree holds them too. Returns the saved work as
    /// stored in the end.
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
        saved: &Saved,
    ) -> Result<Saved, GitError> {
        match branch {
            // Only HEAD changes; the steps below set the branch, the index and the tree.
            Some(branch) => self.run(&["symbolic-ref", "HEAD", branch])?,
            None => self.run(&["update-ref", "--no-deref", "HEAD", checkpoint])?,
        };
        self.run(&[
            "update-ref",
            "-m",
            "ralph: revert to the checkpoint",
            "HEAD",
            checkpoint,
        ])?;
        let mut reset = os_args(&["reset", "-q", checkpoint]);
        reset.extend(Self::pathspec(excluded));
        self.run_with(&reset, None)?;
        let mut checkout: Vec<OsString> = vec!["checkout".into(), "-q".into()];
        checkout.extend(Self::pathspec(excluded));
        self.run_with(&checkout, None)?;
        let files: Vec<PathBuf> = self
            .untracked(excluded, None)?
            .into_iter()
            // A repository inside the tree stays, with its own history.
            .filter(|p| !p.as_os_str().as_bytes().ends_with(b"/"))
            .collect();
        let saved = self.save_files(saved, &files)?;
        self.remove(&files)?;
        Ok(saved)
    }

    /// Removes `files` (relative to the top folder) and then each folder of theirs that is left
    /// empty. Not `git clean -fd`: given a pathspec that excludes a file inside an untracked
    /// folder (an events file in `out/`), it removes the whole folder.
    fn remove(&self, files: &[PathBuf]) -> Result<(), GitError> {
        for file in files {
            let path = self.top.join(file);
            match std::fs::remove_file(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(GitError::Remove { path, source: err });
                }
                _ => {}
            }
            // Stops, harmlessly, at the first folder that still holds anything.
            for dir in file.ancestors().skip(1) {
                if dir.as_os_str().is_empty() || std::fs::remove_dir(self.top.join(dir)).is_err() {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Adds to `saved` those of `files` (untracked, about to be removed) that its tree lacks
    /// (the agent had them ignored); `saved` as it was when it holds them all.
    fn save_files(&self, saved: &Saved, files: &[PathBuf]) -> Result<Saved, GitError> {
        if files.is_empty() {
            return Ok(saved.clone());
        }
        let index = TempIndex::new(&self.git_dir);
        self.run_with(
            &["read-tree".into(), saved.commit.as_str().into()],
            Some(index.path()),
        )?;
        let add = os_args(&["add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"]);
        self.run_in(
            &self.top,
            &add,
            Some(index.path()),
            Some(&literal_pathspecs(files)),
        )?;
        let tree = self.write_tree(index.path())?;
        if tree == self.tree_of(&saved.commit)? {
            return Ok(saved.clone());
        }
        let parents: Vec<String> = self
            .run(&["show", "-s", "--format=%P", &saved.commit])?
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let message = self.run(&["show", "-s", "--format=%B", &saved.commit])?;
        let commit = self.commit_tree(&tree, &parents, message.trim_end())?;
        self.run(&["update-ref", &saved.refname, &commit, &saved.commit])?;
        Ok(Saved {
            refname: saved.refname.clone(),
            commit,
        })
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

/// The branch `ralph run --task ID` works on: `ralph/ID` (the id made safe as
/// [`ref_component`] makes it).
pub fn task_branch(id: &str) -> String {
    format!("ralph/{}", ref_component(id))
}

/// Where `ralph run --task ID` put HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskBranch {
    /// The branch: [`task_branch`].
    pub name: String,
    /// Whether it was made now, at the commit HEAD was on; else it existed and was checked
    /// out as it was (or HEAD was on it already).
    pub created: bool,
}

/// `ralph run --task ID`: puts the work tree of the repository holding `cwd` on branch
/// [`task_branch`], made at HEAD when it does not exist. `git switch` carries uncommitted
/// changes over or refuses, so nothing is lost either way.
pub fn switch_to_task_branch(cwd: &Path, id: &str) -> Result<TaskBranch, GitError> {
    let git = Git::open(cwd)?;
    git.head()?;
    let name = task_branch(id);
    let full = format!("refs/heads/{name}");
    if git.head_branch()?.as_deref() == Some(full.as_str()) {
        return Ok(TaskBranch {
            name,
            created: false,
        });
    }
    let exists = git.run(&["rev-parse", "--verify", "-q", &full]).is_ok();
    let from = git.head_branch()?;
    match exists {
        true => git.run(&["switch", "-q", &name])?,
        false => git.run(&["switch", "-q", "-c", &name])?,
    };
    // The branch it is made from (or comes back from) is where its pull request lands
    // (`land.pr`): recorded beside git's own settings for the branch.
    if let Some(base) = from.as_deref().and_then(|b| b.strip_prefix("refs/heads/")) {
        push::remember_base(&git.top, &name, base).map_err(|err| GitError::Failed {
            args: format!("config branch.{name}.ralphBase {base}"),
            stderr: err.to_string(),
        })?;
    }
    Ok(TaskBranch {
        name,
        created: !exists,
    })
}

/// A story id made safe for one component of a ref name, distinct for distinct ids: an id of
/// letters, digits, `-` and `_`, at most 64 bytes long, is kept as it is; any other is cut to
/// 64 characters, every other character becomes `-`, and `.` and a hash of the whole id are
/// appended (an id kept as it is never holds a `.`, so the two kinds cannot meet).
pub fn ref_component(id: &str) -> String {
    let safe: String = id
        .chars()
        .take(REF_COMPONENT_MAX)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !id.is_empty() && safe == id {
        return safe;
    }
    let prefix = if safe.is_empty() { "story" } else { &safe };
    format!("{prefix}.{:016x}", crate::signature::fnv1a(id.as_bytes()))
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

/// What a failed git command said: its standard error, else its output's last line, else its
/// exit status, so an error never ends in `failed:` with nothing after it (a hook that fails
/// silently, a `git diff --quiet`).
pub fn what_git_said(out: &Output) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        return stderr.trim().to_owned();
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(line) = stdout.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        return line.to_owned();
    }
    match (out.status.code(), out.status.signal()) {
        (Some(code), _) => format!("it exited with {code} and said nothing"),
        (None, Some(signal)) => format!("it was killed by signal {signal}"),
        (None, None) => "it said nothing".to_owned(),
    }
}

#[cfg(test)]
mod what_git_said_tests {
    use super::what_git_said;

    fn said(script: &str) -> String {
        let out = std::process::Command::new("sh")
            .args(["-c", script])
            .output()
            .unwrap();
        what_git_said(&out)
    }

    #[test]
    fn a_silent_failure_still_says_something() {
        assert_eq!(said("echo 'fatal: bad' >&2; exit 128"), "fatal: bad");
        assert_eq!(said("echo one; echo two; exit 1"), "two");
        assert_eq!(said("exit 3"), "it exited with 3 and said nothing");
        assert_eq!(said("kill -9 $$"), "it was killed by signal 9");
    }
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
                "old name.rs",
                "dir/\"quoted\" file",
                "tab\there"
            ]
        );
    }
}

#[cfg(test)]
mod ref_component_tests {
    use super::ref_component;

    fn valid(component: &str) -> bool {
        std::process::Command::new("git")
            .args(["check-ref-format"])
            .arg(format!("refs/ralph/attempts/{component}/1"))
            .status()
            .expect("git runs")
            .success()
    }

    #[test]
    fn odd_ids_get_valid_distinct_ref_names() {
        let long = "x".repeat(300);
        let ids = [
            "US-001",
            "../x",
            "a..b",
            "a@{b",
            "@",
            long.as_str(),
            "ünïcødé",
            "story.lock",
            "a/b",
            "a b",
            "a-b",
            "",
            ".",
            "-",
            "a\\b",
            "~^:?*[",
        ];
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            let component = ref_component(id);
            assert!(valid(&component), "{id:?} -> {component:?}");
            assert!(component.len() <= 64 + 17, "{id:?} -> {component:?}");
            assert!(
                seen.insert(component.clone()),
                "{id:?} -> {component:?} twice"
            );
        }
    }

    #[test]
    fn plain_ids_are_kept_as_they_are() {
        assert_eq!(ref_component("US-001"), "US-001");
        assert_eq!(ref_component("story_2"), "story_2");
        assert_ne!(ref_component("a/b"), ref_component("a-b"));
        assert!(ref_component("a/b").starts_with("a-b."));
    }
}
