//! The Landlock ruleset: which folders are writable, which readable, which ports reachable.
//!
//! Landlock only grants: a rule on a folder covers everything beneath it. "Read everything but
//! these paths" is therefore built as grants on every entry of each folder on the way down to
//! a denied path, except the one leading on (and the denied path itself): `/` and `~` are then
//! not listable themselves, and a file made in them later is not readable, but everything
//! beside the denied paths is.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr,
};
use ralph_frontmatter::{AgentNeeds, SandboxConfig};

use crate::SandboxError;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask the kernel its ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// Devices every program expects to write: the null devices, the terminal, shared memory.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The kernel's Landlock ABI version, `None` without Landlock.
pub(crate) fn abi() -> Option<u32> {
    // SAFETY: with a null attribute and size 0, the call only returns the version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).ok().filter(|&v| v > 0)
}

/// Applies the ruleset `fd` (and `no_new_privs`, which Landlock needs of an unprivileged
/// caller) to the calling thread and whatever it starts afterwards.
pub(crate) fn restrict_self(fd: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: prctl and landlock_restrict_self read no memory of ours.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The paths and ports of a ruleset, before the kernel sees them.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Read, write and run beneath these.
    writable: Vec<PathBuf>,
    /// Read and run beneath these.
    readable: Vec<PathBuf>,
    /// TCP ports connectable; `None` leaves the network alone.
    ports: Option<Vec<u16>>,
}

impl Plan {
    /// The plan of a loop in `work` with private temporary folder `tmp`. `ports`, when the
    /// network is confined, are the ports connections may go to.
    pub(crate) fn new(
        config: &SandboxConfig,
        agent: Option<&AgentNeeds>,
        work: &Path,
        tmp: &Path,
        home: Option<&Path>,
        ports: Option<Vec<u16>>,
    ) -> Result<Self, SandboxError> {
        let work = canonical(work);
        let mut writable = vec![work.clone(), canonical(tmp)];
        writable.extend(git_dirs(&work));
        // The agent's own folders are made when missing: the agent would make them itself,
        // in a home it may not write.
        for folder in agent
            .into_iter()
            .flat_map(|agent| agent.writes.iter())
            .filter_map(|path| path.strip_suffix('/'))
        {
            let _ = std::fs::create_dir_all(crate::expand(folder, home, &work));
        }
        let listed = config.write.iter().map(String::as_str);
        let agents = agent
            .into_iter()
            .flat_map(|agent| agent.writes.iter().copied());
        for path in listed.chain(agents) {
            let path = canonical(&crate::expand(path.trim_end_matches('/'), home, &work));
            // A path that does not exist cannot carry a rule: nothing is made for it.
            if path.exists() {
                writable.push(path);
            }
        }
        writable.extend(DEVICES.iter().map(PathBuf::from).filter(|p| p.exists()));
        let denied: Vec<PathBuf> = ralph_frontmatter::sandbox::SECRET_PATHS
            .iter()
            .copied()
            .chain(config.deny_read.iter().map(String::as_str))
            .map(|path| canonical(&crate::expand(path, home, &work)))
            .collect();
        for denied in &denied {
            if let Some(writable) = writable.iter().find(|w| denied.starts_with(w)) {
                return Err(SandboxError::DeniedInsideWritable {
                    denied: denied.clone(),
                    writable: writable.clone(),
                });
            }
        }
        Ok(Self {
            readable: readable_around(&denied),
            writable,
            ports,
        })
    }

    /// The ruleset, made by the kernel of ABI `abi`, held as its file descriptor.
    pub(crate) fn build(&self, abi: u32) -> Result<OwnedFd, SandboxError> {
        let refused = |err: landlock::RulesetError| SandboxError::Landlock(err.to_string());
        let abi = abi_of(abi);
        // Ioctls on devices are left alone: a terminal's are needed, and a device opened
        // before the ruleset is not covered anyway.
        let all = AccessFs::from_all(abi) & !AccessFs::IoctlDev;
        let read = AccessFs::from_read(abi);
        let mut ruleset = Ruleset::default().handle_access(all).map_err(refused)?;
        if self.ports.is_some() {
            ruleset = ruleset
                .handle_access(AccessNet::ConnectTcp)
                .map_err(refused)?;
        }
        let mut created = ruleset.create().map_err(refused)?;
        for (paths, access) in [(&self.writable, all), (&self.readable, read)] {
            for path in paths {
                // A path gone since it was listed carries no rule; nothing else is lost.
                let Ok(fd) = PathFd::new(path) else {
                    continue;
                };
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(refused)?;
            }
        }
        for port in self.ports.iter().flatten() {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(refused)?;
        }
        Option::<OwnedFd>::from(created)
            .ok_or_else(|| SandboxError::Landlock("no ruleset was made".to_owned()))
    }
}

/// The crate's name for ABI `version`, the newest it knows for a newer kernel.
fn abi_of(version: u32) -> ABI {
    match version {
        0 | 1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        7 => ABI::V7,
        8 => ABI::V8,
        _ => ABI::V9,
    }
}

/// `path` with links resolved, as far as it exists; the rest as written.
fn canonical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |path, part| path.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// The git folders a loop in `work` writes to when it commits: the repository's `.git` found
/// above it, or for a worktree its own git folder and the repository's common one.
fn git_dirs(work: &Path) -> Vec<PathBuf> {
    let Some(dot_git) = work
        .ancestors()
        .map(|a| a.join(".git"))
        .find(|p| p.exists())
    else {
        return Vec::new();
    };
    if dot_git.is_dir() {
        return vec![dot_git];
    }
    // A worktree's `.git` is a file: `gitdir: <its git folder>`, which names the common one
    // in its `commondir` file.
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return Vec::new();
    };
    let Some(own) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let base = dot_git.parent().unwrap_or(work);
    let own = canonical(&base.join(own));
    let common = std::fs::read_to_string(own.join("commondir"))
        .map(|common| canonical(&own.join(common.trim())));
    let mut dirs = vec![own];
    dirs.extend(common.ok());
    dirs
}

/// What to grant reading so that everything but `denied` (canonical paths) is readable: every
/// entry of the folders above a denied path but those leading to one and the denied paths.
fn readable_around(denied: &[PathBuf]) -> Vec<PathBuf> {
    let split: BTreeSet<PathBuf> = denied
        .iter()
        .flat_map(|d| d.ancestors().skip(1).map(Path::to_path_buf))
        .collect();
    if split.is_empty() {
        return vec![PathBuf::from("/")];
    }
    let mut readable = Vec::new();
    for dir in &split {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if split.contains(&path) || denied.contains(&path) {
                continue;
            }
            // A rule follows a link: one leading into a denied path would open it.
            if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                let target = canonical(&path);
                if denied.iter().any(|d| target.starts_with(d)) || split.contains(&target) {
                    continue;
                }
            }
            readable.push(path);
        }
    }
    readable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_beside_a_denied_path_is_readable_and_nothing_above_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical(dir.path());
        for path in [
            "home/.ssh",
            "home/code",
            "home/.config/gh",
            "home/.config/nvim",
            "opt",
        ] {
            std::fs::create_dir_all(root.join(path)).unwrap();
        }
        std::fs::write(root.join("home/notes"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
        let denied = [root.join("home/.ssh"), root.join("home/.config/gh")];
        let readable: BTreeSet<PathBuf> = readable_around(&denied).into_iter().collect();
        for path in ["home/code", "home/notes", "home/.config/nvim", "opt"] {
            assert!(readable.contains(&root.join(path)), "{path}: {readable:?}");
        }
        for path in [
            "home/.ssh",
            "home/keys",
            "home/.config/gh",
            "home/.config",
            "home",
        ] {
            assert!(!readable.contains(&root.join(path)), "{path}: {readable:?}");
        }
        assert!(
            !readable.iter().any(|p| root.starts_with(p)),
            "{readable:?}"
        );
    }

    #[test]
    fn a_worktree_writes_its_own_git_folder_and_the_common_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical(dir.path());
        let own = root.join("repo/.git/worktrees/lane");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("commondir"), "../..\n").unwrap();
        let tree = root.join("repo/.ralph/worktrees/lane");
        std::fs::create_dir_all(tree.join("src")).unwrap();
        std::fs::write(tree.join(".git"), format!("gitdir: {}\n", own.display())).unwrap();
        assert_eq!(git_dirs(&tree.join("src")), [own, root.join("repo/.git")]);
        assert_eq!(git_dirs(&root.join("repo")), [root.join("repo/.git")]);
    }
}
