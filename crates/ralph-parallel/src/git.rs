//! The git commands of a parallel run: worktrees, the merge, the landing commit, moving the
//! base. The one module of this crate that starts processes, through escalation's
//! [`git_command`]: each git runs in a process group of its own, so the terminal's Ctrl+C never
//! kills one half-way, and in the repository it is given whatever the environment says.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use ralph_escalation::git::git_command;

use crate::ParallelError;

/// Runs `git args` in `dir` with `env`, `stdin` written to it; the whole output.
fn output(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    stdin: Option<&[u8]>,
) -> Result<Output, ParallelError> {
    let mut cmd = git_command(dir);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    ralph_escalation::git::output(cmd, stdin).map_err(|cause| ParallelError::GitStart {
        dir: dir.to_path_buf(),
        cause,
    })
}

/// How much of a lane's worktree a kill let `git worktree add --no-checkout` and the checkout
/// after it make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HalfMade {
    /// Whole, or not there at all.
    No,
    /// The folder is there but not the `.git` file that makes it a worktree: git in it would
    /// work on the main worktree's repository.
    NotRegistered,
    /// Added, but its checkout never finished: no index (the checkout writes it last), so
    /// every file reads as deleted.
    NotCheckedOut,
}

/// What a kill left of the worktree at `worktree` (see [`HalfMade`]).
pub(crate) fn half_made(worktree: &Path) -> Result<HalfMade, ParallelError> {
    if !worktree.exists() {
        return Ok(HalfMade::No);
    }
    if !worktree.join(".git").is_file() {
        return Ok(HalfMade::NotRegistered);
    }
    let index = run(
        worktree,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    )?;
    Ok(match Path::new(&index).exists() {
        true => HalfMade::No,
        false => HalfMade::NotCheckedOut,
    })
}

/// `git args` in `dir`, which must succeed: its stdout, trimmed.
pub(crate) fn run(dir: &Path, args: &[&str]) -> Result<String, ParallelError> {
    run_with(dir, args, &[], None)
}

/// [`run`] with `env` and `stdin`.
pub(crate) fn run_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    stdin: Option<&[u8]>,
) -> Result<String, ParallelError> {
    let out = output(dir, args, env, stdin)?;
    if !out.status.success() {
        return Err(ParallelError::Git {
            dir: dir.to_path_buf(),
            command: format!("git {}", args.join(" ")),
            stderr: ralph_escalation::git::what_git_said(&out),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `git args` in `dir`, which must succeed: its stdout as it is (`-z` output, whose first
/// entry may start with a space).
pub(crate) fn run_untrimmed(dir: &Path, args: &[&str]) -> Result<String, ParallelError> {
    let out = output(dir, args, &[], None)?;
    if !out.status.success() {
        return Err(ParallelError::Git {
            dir: dir.to_path_buf(),
            command: format!("git {}", args.join(" ")),
            stderr: ralph_escalation::git::what_git_said(&out),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `git args` in `dir`: whether it succeeded, and its stderr.
pub(crate) fn attempt(dir: &Path, args: &[&str]) -> Result<(bool, String), ParallelError> {
    attempt_with(dir, args, &[])
}

/// [`attempt`] with `env`.
pub(crate) fn attempt_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> Result<(bool, String), ParallelError> {
    let out = output(dir, args, env, None)?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    ))
}

/// The commit `rev` names, or `None`.
pub(crate) fn rev(dir: &Path, rev: &str) -> Result<Option<String>, ParallelError> {
    let out = output(
        dir,
        &["rev-parse", "-q", "--verify", &format!("{rev}^{{commit}}")],
        &[],
        None,
    )?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}

/// The repository's common git folder (shared by every worktree).
pub(crate) fn common_dir(top: &Path) -> Result<PathBuf, ParallelError> {
    let dir = PathBuf::from(run(top, &["rev-parse", "--git-common-dir"])?);
    Ok(if dir.is_absolute() {
        dir
    } else {
        top.join(dir)
    })
}

/// The branch checked out in `dir` (`refs/heads/...`), `None` when detached.
pub(crate) fn head_ref(dir: &Path) -> Result<Option<String>, ParallelError> {
    let out = output(dir, &["symbolic-ref", "-q", "HEAD"], &[], None)?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}

/// The base branch the branch `name` was made from, as a lane records it (its upstream,
/// `branch.<name>.merge`): `None` for a branch made before ralph recorded it.
pub(crate) fn recorded_base(dir: &Path, name: &str) -> Result<Option<String>, ParallelError> {
    let key = format!("branch.{name}.merge");
    let out = output(dir, &["config", "--get", &key], &[], None)?;
    Ok(out.status.success().then(|| {
        let merge = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        merge.trim_start_matches("refs/heads/").to_owned()
    }))
}

/// Deletes the branch `refs/heads/<name>` from `commit`, and the base a lane recorded for it
/// (its upstream), so a branch of that name made later is not taken for this one.
pub(crate) fn delete_branch(dir: &Path, name: &str, commit: &str) -> Result<(), ParallelError> {
    run(
        dir,
        &["update-ref", "-d", &format!("refs/heads/{name}"), commit],
    )?;
    // Best effort: a left-over section is only a branch's upstream, overwritten when it is
    // made again.
    let _ = attempt(
        dir,
        &["config", "--remove-section", &format!("branch.{name}")],
    );
    Ok(())
}

/// `ralph/<id>`, with what git refuses in a ref name replaced.
pub(crate) fn branch_name(id: &str) -> String {
    format!("ralph/{}", ralph_escalation::git::ref_component(id))
}

/// The bytes of `path` in `commit`, as stored (`None`: not there).
pub(crate) fn blob(top: &Path, commit: &str, path: &str) -> Result<Option<Vec<u8>>, ParallelError> {
    object(top, &format!("{commit}:{path}"))
}

/// The bytes of the blob `spec` names (`<commit>:<path>`, or a blob id), as stored (`None`:
/// no such blob).
pub(crate) fn object(top: &Path, spec: &str) -> Result<Option<Vec<u8>>, ParallelError> {
    let out = output(top, &["cat-file", "blob", spec], &[], None)?;
    Ok(out.status.success().then_some(out.stdout))
}

/// The temporary indexes' file name, before the pid of the ralph that made them.
const INDEX_PREFIX: &str = "ralph-parallel-index-";

/// Removes from the common git dir `common` the temporary indexes (and their locks) of ralphs
/// no longer running: a kill mid-commit leaves them.
pub(crate) fn remove_stale_indexes(common: &Path) {
    let Ok(entries) = std::fs::read_dir(common) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(INDEX_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !ralph_process::process_exists(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A commit on top of `parent` whose tree is `from`'s with each `(path, bytes)` of `files`
/// (none: the same tree), built in a temporary index: no worktree is touched.
pub(crate) fn commit_files(
    top: &Path,
    from: &str,
    parent: &str,
    files: &[(String, Vec<u8>)],
    message: &str,
) -> Result<String, ParallelError> {
    let index = common_dir(top)?.join(format!(
        "{INDEX_PREFIX}{}-{}",
        std::process::id(),
        INDEXES.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let env = [("GIT_INDEX_FILE", index.as_path())];
    let result = (|| {
        run_with(top, &["read-tree", from], &env, None)?;
        for (path, bytes) in files {
            let blob = run_with(top, &["hash-object", "-w", "--stdin"], &[], Some(bytes))?;
            let mode = run(top, &["ls-tree", from, "--", path])?
                .split_whitespace()
                .next()
                .map_or_else(|| "100644".to_owned(), str::to_owned);
            run_with(
                top,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("{mode},{blob},{path}"),
                ],
                &env,
                None,
            )?;
        }
        let tree = run_with(top, &["write-tree"], &env, None)?;
        run(top, &["commit-tree", &tree, "-p", parent, "-m", message])
    })();
    let _ = std::fs::remove_file(&index);
    result
}

/// Tells apart the temporary indexes of commits made at once (a landing and a block).
static INDEXES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A worktree's index held as git holds it for a change: `<index>.lock` made by us (git's own
/// lock, so a person's `git commit` or `git add` meanwhile fails rather than taking in a half-made
/// change), holding a copy of the index that git commands change through `GIT_INDEX_FILE`.
/// [`IndexLock::commit`] makes the copy the index; dropped, it is removed and the index is as
/// it was.
pub(crate) struct IndexLock {
    index: PathBuf,
    lock: PathBuf,
}

impl IndexLock {
    /// How long a lock another git holds is waited on (a person's `git status` holds it
    /// for milliseconds).
    const WAIT: std::time::Duration = std::time::Duration::from_secs(2);

    /// Takes the lock on the index of the worktree at `dir`; `None` when another git held it
    /// all along [`Self::WAIT`].
    pub(crate) fn take(dir: &Path) -> Result<Option<Self>, ParallelError> {
        let (index, lock) = Self::paths(dir)?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| ParallelError::Io { path, cause }
        };
        let deadline = std::time::Instant::now() + Self::WAIT;
        let mut file = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
            {
                Ok(file) => break file,
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    if std::time::Instant::now() >= deadline {
                        return Ok(None);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(err) => return Err(io(&lock)(err)),
            }
        };
        let held = Self { index, lock };
        let bytes = std::fs::read(&held.index).map_err(io(&held.index))?;
        file.write_all(&bytes).map_err(io(&held.lock))?;
        Ok(Some(held))
    }

    /// The lock a killed ralph left on the index of the worktree at `dir` (the step's journal
    /// says it held it), if it is there.
    pub(crate) fn left(dir: &Path) -> Result<Option<Self>, ParallelError> {
        let (index, lock) = Self::paths(dir)?;
        Ok(lock.exists().then_some(Self { index, lock }))
    }

    /// The index of the worktree at `dir` and its lock.
    fn paths(dir: &Path) -> Result<(PathBuf, PathBuf), ParallelError> {
        let index = PathBuf::from(run(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        )?);
        let mut name = index.clone().into_os_string();
        name.push(".lock");
        Ok((index, PathBuf::from(name)))
    }

    /// The copy git commands change, as `GIT_INDEX_FILE`.
    pub(crate) fn env(&self) -> [(&'static str, &Path); 1] {
        [("GIT_INDEX_FILE", self.lock.as_path())]
    }

    /// The copy becomes the index (a rename: git's own way to let go of its lock).
    pub(crate) fn commit(self) -> Result<(), ParallelError> {
        let renamed = std::fs::rename(&self.lock, &self.index);
        renamed.map_err(|cause| ParallelError::Io {
            path: self.index.clone(),
            cause,
        })
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        // Committed: renamed away already.
        let _ = std::fs::remove_file(&self.lock);
    }
}
