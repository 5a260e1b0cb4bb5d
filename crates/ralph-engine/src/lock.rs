//! One loop per folder: an OS file lock (`flock`) held for the whole run.
//!
//! Two loops in one folder would both work on the same task, and one's revert would delete the
//! other's work. A [`RunLock`] is held from before anything runs until the run is over; the
//! kernel releases it when the process dies, however it dies, so a crash never leaves a stale
//! lock behind. The holder's pid, start time and run id are written into the lock file so a
//! second run can name the first.
//!
//! Locks come in two modes: a loop takes its folder exclusively
//! ([`RunLock::folder`]); a caller that guards something larger (escalation guards a whole git
//! repository) takes a lock file there, exclusively when it changes what others rely on and
//! shared otherwise, through [`RunLock::acquire`].
//!
//! A loop's folder is locked twice: the lock file, which names the holder, and the folder
//! itself (`flock` on the folder's own descriptor). People delete `.ralph/` while a run goes
//! on; the lock file goes with it, and a lock on a deleted file stops no one. The folder
//! cannot go from under a loop running in it. A run's log folder is locked the same way
//! ([`RunLock::run`]), so a run is never driven by two processes, whichever folder the second
//! was started from.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file of a loop's folder, relative to it.
pub(crate) const FOLDER_LOCK: &str = ".ralph/lock";

/// Who holds a lock: written into the lock file by an exclusive holder. A record of the run
/// folder, so ralph-events owns it (a reader needs no engine to read it).
pub use ralph_events::run_folder::LockHolder;

/// How a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockMode {
    /// No one else may hold the lock at all.
    Exclusive,
    /// Others may hold it shared too, but no one exclusively.
    Shared,
}

/// The lock is held elsewhere, or its file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another run holds the lock.
    #[error("{}", held_message(.what, .holder.as_deref()))]
    Held {
        /// What the lock guards, in words ("this folder", "this git repository").
        what: String,
        /// The lock file.
        path: PathBuf,
        /// The exclusive holder, when it named itself and is still alive.
        holder: Option<Box<LockHolder>>,
    },
    /// The lock file could not be created, opened or locked.
    #[error("{}: cannot lock: {cause}", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
}

fn held_message(what: &str, holder: Option<&LockHolder>) -> String {
    match holder {
        Some(h) => format!(
            "another ralph run is already working in {what}: pid {}, started {}, run {}{} in {}; \
             wait for it to end, or stop it (kill {}) and run again",
            h.pid,
            h.started,
            h.run_id,
            h.lane_of
                .as_ref()
                .map(|p| format!(" (a lane of parallel run {p})"))
                .unwrap_or_default(),
            h.folder.display(),
            h.pid
        ),
        None => format!(
            "another ralph run is already working in {what}; wait for it to end, or stop it, and \
             run again"
        ),
    }
}

/// A held lock; dropping it releases the lock (an exclusive holder first clears its name).
#[derive(Debug)]
pub struct RunLock {
    /// The lock file, or the locked folder itself for [`RunLock::run`].
    file: File,
    /// Whether `file` names the holder (an exclusive lock file).
    named: bool,
    /// The loop's folder, locked too by [`RunLock::folder`].
    _folder: Option<File>,
}

impl RunLock {
    /// Takes `folder`'s lock exclusively: the folder itself and its lock file ([`FOLDER_LOCK`]),
    /// creating `.ralph/` when needed.
    pub(crate) fn folder(folder: &Path, me: &LockHolder) -> Result<Self, LockError> {
        let path = folder.join(FOLDER_LOCK);
        let io = |cause| LockError::Io {
            path: path.clone(),
            cause,
        };
        // The folder first: a run whose `.ralph/` was deleted holds it still.
        let folder_lock = File::open(folder).map_err(io)?;
        if !try_flock(&folder_lock, LockMode::Exclusive).map_err(io)? {
            return Err(LockError::Held {
                what: "this folder".to_owned(),
                holder: live_holder(&path).map(Box::new),
                path,
            });
        }
        if let Some(dir) = path.parent() {
            crate::logs::create_run_dir(dir).map_err(io)?;
        }
        let mut lock = Self::acquire(&path, LockMode::Exclusive, "this folder", me)?;
        lock._folder = Some(folder_lock);
        Ok(lock)
    }

    /// Takes the lock of run `run_id`, whose log folder is `dir` (which must exist): held by
    /// the process running it, new or resumed, so no second process goes on with it.
    pub(crate) fn run(dir: &Path, run_id: &str) -> Result<Self, LockError> {
        let io = |cause| LockError::Io {
            path: dir.to_path_buf(),
            cause,
        };
        let file = File::open(dir).map_err(io)?;
        if !try_flock(&file, LockMode::Exclusive).map_err(io)? {
            // The session names the process that last ran the run: the one going on.
            let holder = crate::session::Session::read(dir)
                .ok()
                .filter(|s| ralph_process::process_exists(s.pid))
                .map(|s| {
                    LockHolder::new(s.pid, s.started, &s.run_id, &s.folder.unwrap_or_default())
                });
            return Err(LockError::Held {
                what: format!("run {run_id}"),
                path: dir.to_path_buf(),
                holder: holder.map(Box::new),
            });
        }
        Ok(Self {
            file,
            named: false,
            _folder: None,
        })
    }

    /// Takes the lock at `path` (created when missing) in `mode`, without waiting. `what` says
    /// what the lock guards, for the message when another run holds it.
    pub fn acquire(
        path: &Path,
        mode: LockMode,
        what: &str,
        me: &LockHolder,
    ) -> Result<Self, LockError> {
        let io = |cause| LockError::Io {
            path: path.to_path_buf(),
            cause,
        };
        // Not truncated on open: the file may name the holder a refused run reports.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        if !try_flock(&file, mode).map_err(io)? {
            return Err(LockError::Held {
                what: what.to_owned(),
                path: path.to_path_buf(),
                holder: read_holder(file)
                    .filter(|h| ralph_process::process_exists(h.pid))
                    .map(Box::new),
            });
        }
        let named = mode == LockMode::Exclusive;
        let mut lock = Self {
            file,
            named,
            _folder: None,
        };
        if named {
            lock.name(me).map_err(io)?;
        }
        Ok(lock)
    }

    fn name(&mut self, me: &LockHolder) -> std::io::Result<()> {
        let json = serde_json::to_vec(me).map_err(std::io::Error::other)?;
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(&json)?;
        self.file.write_all(b"\n")
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // A name left behind would be read by a later refused run as a holder that is gone;
        // a crash leaves it, which is why a holder is only named while its pid is alive.
        if self.named {
            let _ = self.file.set_len(0);
        }
    }
}

/// `flock`s `file` in `mode` without waiting; `false` when another holds it.
fn try_flock(file: &File, mode: LockMode) -> std::io::Result<bool> {
    use rustix::fs::FlockOperation;
    let op = match mode {
        LockMode::Exclusive => FlockOperation::NonBlockingLockExclusive,
        LockMode::Shared => FlockOperation::NonBlockingLockShared,
    };
    match rustix::fs::flock(file, op) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// The holder named in the lock file at `path` while its process is alive: the run going on
/// there. `None` when the file is missing or empty, or names a process that is gone (a crash
/// leaves the name behind).
pub(crate) fn live_holder(path: &Path) -> Option<LockHolder> {
    // A name left by a killed run, whose pid another process took since (after a reboot, or
    // on a busy machine), is no holder: nobody holds the lock any more. Told through the
    // kernel's list of locks where there is one; only read, never taken (taking it even for a
    // moment could refuse a run starting at that moment).
    if flock_held(path) == Some(false) {
        return None;
    }
    read_holder(File::open(path).ok()?).filter(|h| ralph_process::process_exists(h.pid))
}

/// Whether some process holds an `flock` on `path`, from `/proc/locks` (Linux); `None` where
/// that cannot be told.
pub(crate) fn flock_held(path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    // `1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`; a waiter's line has `->` after the
    // id. The device is `major:minor` in hex, the inode in decimal.
    Some(locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(1) == Some(&"FLOCK")
            && fields
                .get(5)
                .and_then(|id| id.rsplit(':').next())
                .and_then(|ino| ino.parse::<u64>().ok())
                == Some(meta.ino())
    }))
}

fn read_holder(mut file: File) -> Option<LockHolder> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(text.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me(run: &str) -> LockHolder {
        LockHolder::this_process(run, Path::new("here"))
    }

    #[test]
    fn a_second_exclusive_lock_is_refused_and_names_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::folder(dir.path(), &me("run-1")).unwrap();
        let err = RunLock::folder(dir.path(), &me("run-2")).unwrap_err();
        let LockError::Held { holder, .. } = &err else {
            panic!("expected Held, got {err:?}");
        };
        assert_eq!(holder.as_ref().map(|h| h.run_id.as_str()), Some("run-1"));
        assert!(err.to_string().contains("run run-1"), "{err}");
        drop(first);
        RunLock::folder(dir.path(), &me("run-3")).unwrap();
    }

    #[test]
    fn a_folder_stays_locked_when_its_lock_file_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let _first = RunLock::folder(dir.path(), &me("run-1")).unwrap();
        std::fs::remove_dir_all(dir.path().join(".ralph")).unwrap();
        let err = RunLock::folder(dir.path(), &me("run-2")).unwrap_err();
        assert!(matches!(err, LockError::Held { .. }), "{err:?}");
    }

    #[test]
    fn a_run_is_held_by_one_process_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::run(dir.path(), "run-1").unwrap();
        let err = RunLock::run(dir.path(), "run-1").unwrap_err();
        assert!(err.to_string().contains("run run-1"), "{err}");
        drop(first);
        RunLock::run(dir.path(), "run-1").unwrap();
    }

    #[test]
    fn shared_locks_coexist_but_exclude_an_exclusive_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repo.lock");
        let a = RunLock::acquire(&path, LockMode::Shared, "the repo", &me("a")).unwrap();
        let b = RunLock::acquire(&path, LockMode::Shared, "the repo", &me("b")).unwrap();
        let err = RunLock::acquire(&path, LockMode::Exclusive, "the repo", &me("c")).unwrap_err();
        assert!(
            matches!(err, LockError::Held { holder: None, .. }),
            "{err:?}"
        );
        drop((a, b));
        let c = RunLock::acquire(&path, LockMode::Exclusive, "the repo", &me("c")).unwrap();
        let err = RunLock::acquire(&path, LockMode::Shared, "the repo", &me("d")).unwrap_err();
        assert!(
            matches!(
                err,
                LockError::Held {
                    holder: Some(_),
                    ..
                }
            ),
            "{err:?}"
        );
        drop(c);
    }

    #[test]
    fn a_released_lock_no_longer_names_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repo.lock");
        drop(RunLock::acquire(&path, LockMode::Exclusive, "x", &me("gone")).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let _shared = RunLock::acquire(&path, LockMode::Shared, "x", &me("s")).unwrap();
        let err = RunLock::acquire(&path, LockMode::Exclusive, "x", &me("e")).unwrap_err();
        assert!(
            matches!(err, LockError::Held { holder: None, .. }),
            "{err:?}"
        );
    }
}
