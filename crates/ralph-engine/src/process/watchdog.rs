//! The watchdog: a small process that kills the agent's process group when ralph dies, however
//! it dies (SIGKILL included), so an agent never goes on editing the repository unsupervised.
//!
//! ralph forks it once per run. It sits in a process group of its own, ignores SIGINT, SIGHUP
//! and SIGTERM (a terminal's Ctrl+C or hang-up, or a `kill` of ralph's group, must not end it
//! first), and reads records from a pipe whose write end only ralph holds (close-on-exec, so no
//! agent inherits it): `+pgid` when a process group starts, `-pgid` once ralph has killed it
//! (its id can then go to another group, which the watchdog must never touch). End of file
//! means ralph is gone, or finished: the watchdog SIGKILLs every group still registered and
//! exits. A run that ends normally has none left, and reaps the watchdog.
//!
//! A fork rather than a helper program: the engine is a library, with no binary of its own to
//! run as the watchdog, and a shell loop could not kill its list without a fork per group. The
//! forked child only makes async-signal-safe calls (`read`, `kill`, `dup2`, `close`,
//! `sigaction`, `_exit`) on a fixed-size array: it allocates nothing, since another thread of
//! ralph may have held the allocator's lock at the fork.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// One record on the pipe: `+` or `-`, three bytes of padding, the group id (native order).
/// Smaller than `PIPE_BUF`, so each is written whole.
const RECORD: usize = 8;

/// Process groups the watchdog remembers at once. ralph runs one process at a time and
/// unregisters each group when it ends; the room is for embedders running several engines.
const SLOTS: usize = 256;

/// How long ralph waits for the watchdog to exit once told to (it only has kills to make).
const EXIT_WAIT: Duration = Duration::from_secs(1);

/// The running watchdog; dropping the last handle ends it.
#[derive(Debug)]
pub(crate) struct Watchdog {
    pid: libc::pid_t,
    /// The pipe's write end; closing it is the watchdog's end of file.
    write: Mutex<Option<OwnedFd>>,
}

/// The watchdog of the runs under way in this process, shared by concurrent runs.
static CURRENT: Mutex<Weak<Watchdog>> = Mutex::new(Weak::new());

impl Watchdog {
    /// The running watchdog, started if no run holds one. The warning for the engine to emit
    /// if it cannot start: the run goes on, without protection against ralph's own death.
    pub(crate) fn acquire() -> Result<Arc<Watchdog>, String> {
        let mut current = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(watchdog) = current.upgrade() {
            return Ok(watchdog);
        }
        match start() {
            Ok(watchdog) => {
                let watchdog = Arc::new(watchdog);
                *current = Arc::downgrade(&watchdog);
                Ok(watchdog)
            }
            Err(err) => Err(format!(
                "cannot start the watchdog ({err}): if ralph is killed, its agent may run on"
            )),
        }
    }

    /// The watchdog's process id.
    pub(crate) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    fn send(&self, op: u8, pgid: i32) {
        let mut record = [0u8; RECORD];
        record[0] = op;
        record[4..].copy_from_slice(&pgid.to_ne_bytes());
        let fd = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let Some(fd) = fd.as_ref() else {
            return;
        };
        // SAFETY: writes RECORD bytes from a live local array to a descriptor this struct owns.
        // A short write cannot happen below PIPE_BUF; EPIPE (the watchdog is gone) is ignored:
        // ralph lives on, only less protected, and Rust programs ignore SIGPIPE.
        unsafe {
            libc::write(fd.as_raw_fd(), record.as_ptr().cast(), RECORD);
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(
            self.write
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
        reap(self.pid);
    }
}

/// Tells the watchdog that group `pgid` started; it will be killed if ralph dies.
pub(crate) fn register(pgid: i32) {
    if let Some(watchdog) = current() {
        watchdog.send(b'+', pgid);
    }
}

/// The hook a child runs between fork and exec (`pre_exec`): it puts itself in a process group
/// of its own (already done by then for a pipe spawn; refused, harmlessly, for a PTY agent that
/// is a session leader) and registers that group with the watchdog before the program runs a
/// single instruction. Registering from ralph's side after `spawn` returns leaves a moment in
/// which a SIGKILL to ralph orphans a started agent that the watchdog never heard of; the
/// torture test hit it about once in a hundred kills. ralph registers again after the spawn
/// (a duplicate the watchdog ignores), which covers a hook that could not run.
pub(crate) fn register_from_child() -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    // The handle keeps the pipe open, so the descriptor number cannot name another file by the
    // time the child writes to it.
    let watchdog = current();
    let fd = watchdog
        .as_ref()
        .and_then(|w| w.write.lock().ok()?.as_ref().map(AsRawFd::as_raw_fd));
    move || {
        let _keep_open = &watchdog;
        if let Some(fd) = fd {
            // SAFETY: runs in the forked child before exec: setpgid, getpid and write are
            // async-signal-safe, and the record is a stack array written whole (below
            // PIPE_BUF). Errors are ignored: ralph's own registration follows.
            unsafe {
                libc::setpgid(0, 0);
                let mut record = [0u8; RECORD];
                record[0] = b'+';
                record[4..].copy_from_slice(&libc::getpid().to_ne_bytes());
                libc::write(fd, record.as_ptr().cast(), RECORD);
            }
        }
        Ok(())
    }
}

/// Tells the watchdog that ralph has killed group `pgid`: its id may be reused.
pub(crate) fn unregister(pgid: i32) {
    if let Some(watchdog) = current() {
        watchdog.send(b'-', pgid);
    }
}

fn current() -> Option<Arc<Watchdog>> {
    CURRENT.lock().unwrap_or_else(|p| p.into_inner()).upgrade()
}

/// Waits up to [`EXIT_WAIT`] for the watchdog to exit, so it does not stay a zombie.
fn reap(pid: libc::pid_t) {
    let deadline = Instant::now() + EXIT_WAIT;
    loop {
        // SAFETY: waitpid on our own child's pid with WNOHANG writes no memory of ours (a
        // null status pointer) and never blocks.
        let rc = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        if rc != 0 || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Forks the watchdog.
fn start() -> std::io::Result<Watchdog> {
    let (read, write) = pipe()?;
    // Opened before the fork: the child must not allocate, and `open` of a path string
    // built here needs nothing more.
    // SAFETY: open(2) of a static C string.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if null < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `null` was just opened and is owned by nothing else.
    let null = unsafe { OwnedFd::from_raw_fd(null) };
    let max_fd = max_fd();
    // SAFETY: fork(2). The child runs only `watch`, which makes async-signal-safe calls and
    // never returns; the parent goes on as usual.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(std::io::Error::last_os_error()),
        0 => watch(read.as_raw_fd(), null.as_raw_fd(), max_fd),
        pid => Ok(Watchdog {
            pid,
            write: Mutex::new(Some(write)),
        }),
    }
}

/// A pipe whose two ends are closed on exec (and so in every process ralph starts).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    // SAFETY: pipe2 writes two descriptors into the two-element array.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    // SAFETY: pipe writes two descriptors into the two-element array; fcntl only sets flags
    // on them. (A fork by another thread in between could inherit them: no pipe2 here.)
    let rc = unsafe {
        let rc = libc::pipe(fds.as_mut_ptr());
        if rc == 0 {
            libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC);
        }
        rc
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The highest descriptor the child closes one by one where it cannot close a range.
fn max_fd() -> RawFd {
    // SAFETY: sysconf only reads a limit.
    let limit = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    RawFd::try_from(limit).unwrap_or(65_536).clamp(1024, 65_536)
}

/// The watchdog itself, in the forked child. Only async-signal-safe calls, no allocation.
fn watch(read: RawFd, null: RawFd, max_fd: RawFd) -> ! {
    // SAFETY: each call below is async-signal-safe and works on descriptors, signal numbers
    // and a stack array owned by this function; the process ends with _exit, running no
    // destructor and no atexit handler of ralph's.
    unsafe {
        // Its own group: a signal to ralph's group (Ctrl+C) does not reach it.
        libc::setpgid(0, 0);
        for signal in [libc::SIGINT, libc::SIGHUP, libc::SIGTERM, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_IGN);
        }
        // The pipe on 0, /dev/null on 1 and 2, nothing else open: the watchdog must hold no
        // pipe of ralph's caller (a test waiting for ralph's output to end) nor ralph's
        // own write end.
        libc::dup2(read, 0);
        libc::dup2(null, 1);
        libc::dup2(null, 2);
        close_from(3, max_fd);

        let mut groups = [0i32; SLOTS];
        let mut record = [0u8; RECORD];
        let mut filled = 0;
        loop {
            let n = libc::read(0, record.as_mut_ptr().add(filled).cast(), RECORD - filled);
            if n == 0 {
                break;
            }
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break;
            }
            filled += n as usize;
            if filled < RECORD {
                continue;
            }
            filled = 0;
            let pgid = i32::from_ne_bytes([record[4], record[5], record[6], record[7]]);
            if pgid <= 1 {
                continue;
            }
            match record[0] {
                // The child registers itself and ralph registers it again: one slot each.
                b'+' if !groups.contains(&pgid) => {
                    if let Some(slot) = groups.iter_mut().find(|g| **g == 0) {
                        *slot = pgid;
                    }
                }
                b'-' => {
                    if let Some(slot) = groups.iter_mut().find(|g| **g == pgid) {
                        *slot = 0;
                    }
                }
                _ => {}
            }
        }
        for &pgid in &groups {
            if pgid > 1 {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        libc::_exit(0)
    }
}

/// Closes every descriptor from `low` up.
///
/// # Safety
/// Async-signal-safe; the caller must own every descriptor from `low` up (the watchdog child
/// does: nothing else runs in it).
unsafe fn close_from(low: RawFd, max_fd: RawFd) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: close_range(2) (Linux 5.9) takes plain integers; on an older kernel it
        // fails with ENOSYS and the loop below does the work.
        let rc = unsafe { libc::syscall(libc::SYS_close_range, low as libc::c_uint, !0u32, 0) };
        if rc == 0 {
            return;
        }
    }
    for fd in low..=max_fd {
        // SAFETY: close(2) of a descriptor number; EBADF for the ones not open.
        unsafe {
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Child, Command};

    use super::*;

    fn group_leader() -> Child {
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[test]
    fn at_end_of_file_the_registered_groups_are_killed_and_only_they() {
        // A watchdog of its own, not the shared one other tests' runs register with.
        let watchdog = start().unwrap();
        let mut registered = group_leader();
        let mut ended = group_leader();
        let mut never = group_leader();
        watchdog.send(b'+', registered.id() as i32);
        watchdog.send(b'+', ended.id() as i32);
        // Killed by ralph and unregistered: its id could be another group's by now.
        watchdog.send(b'-', ended.id() as i32);

        drop(watchdog);

        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            if let Some(status) = registered.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let untouched = [ended.try_wait().unwrap(), never.try_wait().unwrap()];
        for child in [&mut registered, &mut ended, &mut never] {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL));
        assert_eq!(untouched, [None, None]);
    }
}
