//! A task's branch pushed to a remote for its pull request (`land.pr`), and the base branch a
//! `--task` branch was made from. The forge's token reaches git only in the environment of the
//! one command (`GIT_CONFIG_*`, an `http.extraHeader`): never in `.git/config`, the remote's
//! URL, the command line or a message.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::{git_command, output};

/// A push or a look at the remote that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    /// `git` could not be started.
    #[error("cannot run git: {cause}")]
    Spawn {
        /// Why.
        cause: std::io::Error,
    },
    /// The remote refused the push (a protected branch, no permission, a branch moved by
    /// someone else since ralph looked) or could not be reached.
    #[error("{}: git push to remote `{remote}`, branch `{branch}`, was refused: {why}", .dir.display())]
    Rejected {
        /// The repository.
        dir: PathBuf,
        /// The remote.
        remote: String,
        /// The branch on the remote (`ralph/US-1`).
        branch: String,
        /// What git said.
        why: String,
    },
    /// The remote's branches could not be read (`git ls-remote`).
    #[error("{}: cannot read remote `{remote}` (git ls-remote): {why}", .dir.display())]
    Unreadable {
        /// The repository.
        dir: PathBuf,
        /// The remote.
        remote: String,
        /// What git said.
        why: String,
    },
    /// Neither the task branch's recorded base nor the remote's default branch is known.
    #[error(
        "{}: no base branch for `{branch}`: it was not made by `ralph run --task` from a branch, and `{remote}/HEAD` is not set (set it with `git remote set-head {remote} --auto`)",
        .dir.display()
    )]
    NoBase {
        /// The repository.
        dir: PathBuf,
        /// The task's branch.
        branch: String,
        /// The remote.
        remote: String,
    },
}

/// The git config key (in `.git/config`, beside git's own `branch.<name>.merge`) that records
/// the branch a task branch was made from.
fn base_key(branch: &str) -> String {
    format!("branch.{branch}.ralphBase")
}

/// Records `base` as the branch the task branch `branch` lands on.
///
/// # Errors
/// [`PushError::Spawn`], or [`PushError::Unreadable`] when git refuses the setting.
pub fn remember_base(dir: &Path, branch: &str, base: &str) -> Result<(), PushError> {
    let out = git(dir, &["config", &base_key(branch), base], None)?;
    match out.status.success() {
        true => Ok(()),
        false => Err(PushError::Unreadable {
            dir: dir.to_path_buf(),
            remote: ".git/config".to_owned(),
            why: said(&out),
        }),
    }
}

/// The branch the task branch `branch` lands on: the one `ralph run --task` made it from, else
/// the remote's default branch (`<remote>/HEAD`).
///
/// # Errors
/// [`PushError::NoBase`] when neither is known.
pub fn base_of(dir: &Path, branch: &str, remote: &str) -> Result<String, PushError> {
    let recorded = git(dir, &["config", "--get", &base_key(branch)], None)?;
    let recorded = String::from_utf8_lossy(&recorded.stdout).trim().to_owned();
    if !recorded.is_empty() {
        return Ok(recorded);
    }
    let head = format!("refs/remotes/{remote}/HEAD");
    let out = git(dir, &["symbolic-ref", "-q", "--short", &head], None)?;
    let default = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    match default.strip_prefix(&format!("{remote}/")) {
        Some(name) if out.status.success() && !name.is_empty() => Ok(name.to_owned()),
        _ => Err(PushError::NoBase {
            dir: dir.to_path_buf(),
            branch: branch.to_owned(),
            remote: remote.to_owned(),
        }),
    }
}

/// The commit the remote's branch `branch` is at, `None` when it has no such branch.
///
/// # Errors
/// [`PushError::Unreadable`].
pub fn remote_branch(
    dir: &Path,
    remote: &str,
    branch: &str,
    header: Option<&str>,
) -> Result<Option<String>, PushError> {
    let full = format!("refs/heads/{branch}");
    let header = scoped_header(dir, remote, header)?;
    let out = git(dir, &["ls-remote", "--", remote, &full], header.as_ref())?;
    if !out.status.success() {
        return Err(PushError::Unreadable {
            dir: dir.to_path_buf(),
            remote: remote.to_owned(),
            why: said(&out),
        });
    }
    let listing = String::from_utf8_lossy(&out.stdout);
    Ok(listing.lines().find_map(|line| {
        let (commit, name) = line.split_once('\t')?;
        (name == full).then(|| commit.to_owned())
    }))
}

/// Pushes HEAD as the remote's branch `branch`, only if that branch is still at `expected`
/// (`None`: absent), as [`remote_branch`] read it a moment before: a branch someone else moved
/// meanwhile is refused, never overwritten.
///
/// # Errors
/// [`PushError::Rejected`], naming the remote and the branch.
pub fn push_head(
    dir: &Path,
    remote: &str,
    branch: &str,
    expected: Option<&str>,
    header: Option<&str>,
) -> Result<(), PushError> {
    let full = format!("refs/heads/{branch}");
    let lease = format!("--force-with-lease={full}:{}", expected.unwrap_or_default());
    let refspec = format!("HEAD:{full}");
    let args = [
        "push",
        "--porcelain",
        "--no-verify",
        &lease,
        "--",
        remote,
        &refspec,
    ];
    let header = scoped_header(dir, remote, header)?;
    let out = git(dir, &args, header.as_ref())?;
    match out.status.success() {
        true => Ok(()),
        false => Err(PushError::Rejected {
            dir: dir.to_path_buf(),
            remote: remote.to_owned(),
            branch: branch.to_owned(),
            why: said(&out),
        }),
    }
}

/// What git said on failure: its error lines, or its whole standard error.
fn said(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // `--porcelain` puts the refusal (`!  HEAD:refs/heads/x  [rejected] (stale info)`) on stdout.
    let refused = stdout
        .lines()
        .filter(|l| l.starts_with('!'))
        .map(|l| l.trim_start_matches('!').trim().replace('\t', " "));
    let errors = stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("error:") || l.starts_with("fatal:") || l.starts_with("remote:"));
    let words: Vec<String> = refused.chain(errors.map(str::to_owned)).collect();
    match words.is_empty() {
        true => stderr.trim().to_owned(),
        false => words.join("; "),
    }
}

/// The setting that gives `header` to git for `remote`'s own URL only
/// (`http.<url>.extraHeader`): none for a remote that is not `http(s)` (ssh, a path), which
/// takes no header, so the token never goes anywhere but the remote it is for.
fn scoped_header(
    dir: &Path,
    remote: &str,
    header: Option<&str>,
) -> Result<Option<(String, String)>, PushError> {
    let Some(header) = header else {
        return Ok(None);
    };
    Ok(remote_url(dir, remote)?
        .filter(|url| url.starts_with("https://") || url.starts_with("http://"))
        .map(|url| (format!("http.{url}.extraHeader"), header.to_owned())))
}

/// `git -C dir args`, with the setting `header` (a key and its value) given to git for this
/// command only, and no prompt for a password (a CI job must fail, not hang).
fn git(dir: &Path, args: &[&str], header: Option<&(String, String)>) -> Result<Output, PushError> {
    let mut cmd = git_command(dir);
    cmd.args(args);
    if let Some((key, value)) = header {
        // Read by git as `-c key=value` would be, but out of the process list.
        cmd.env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", key)
            .env("GIT_CONFIG_VALUE_0", value);
    }
    output(cmd, None).map_err(|cause| PushError::Spawn { cause })
}

/// The URL of `remote` (`git remote get-url`), `None` when there is no such remote.
///
/// # Errors
/// [`PushError::Spawn`].
pub fn remote_url(dir: &Path, remote: &str) -> Result<Option<String>, PushError> {
    let out = git(dir, &["remote", "get-url", "--", remote], None)?;
    let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Ok((out.status.success() && !url.is_empty()).then_some(url))
}
