//! The watchdog: a small process that kills the agent's process group when ralph dies, however
//! it dies (SIGKILL included), so an agent never goes on editing the repository unsupervised.
//!
//! ralph forks it once per run. It sits in a process group of its own, ignores SIGINT, SIGHUP
//! and SIGTERM (a terminal's Ctrl+C or hang-up, or a `kill` of ralph's group, must not end it
//! first), and reads a pipe whose write end only ralph holds (close-on-exec, so no agent
//! inherits it), on which ralph writes `.` when it ends normally. The groups to kill live in a
//! [`Registry`], memory mapped before the fork and so shared with the watchdog: ralph adds a
//! group when it starts and removes it once it has killed it (its id can then go to another
//! group, which the watchdog must never touch). End of file on the pipe means ralph is gone, or
//! finished: the watchdog SIGKILLs every group still in the registry and exits. A run that ends
//! normally has none left, and reaps the watchdog. Shared memory rather than a record on the
//! pipe per change: a group costs ralph no system call, and the watchdog no wake-up, where the
//! records took four of each an iteration.
//!
//! ralph registers a child's group once `spawn` returns; a SIGKILL to ralph in between would
//! orphan a started agent the watchdog never heard of (the torture test hit it about once in a
//! hundred kills). On Linux every child carries the run's token in its environment
//! ([`TOKEN_VAR`], inherited by whatever it starts), and when ralph dies without its `.` the
//! watchdog also kills every process whose `/proc/PID/environ` holds the token, with its
//! process group. No child escapes that: the end of file comes only once every process ralph
//! was spawning has exec'd (each holds a copy of the pipe's write end until its `exec` closes
//! it), and by then its environment holds the token. So a spawn needs no hook in the child and
//! stays a `posix_spawn` (a `vfork`, not a copy of ralph's memory). Elsewhere there is no
//! `/proc`: the child registers its own group from a `pre_exec` hook before it execs.
//!
//! A fork rather than a helper program: the engine is a library, with no binary of its own to
//! run as the watchdog, and a shell loop could not kill its list without a fork per group. The
//! forked child only makes async-signal-safe calls (`read`, `open`, `getdents64`, `kill`,
//! `dup2`, `close`, `sigaction`, `_exit`) and atomic loads on fixed-size arrays and memory set up
//! before the fork: it allocates nothing, since another thread of ralph may have held the
//! allocator's lock at the fork.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// One record on the pipe: `.`, then padding. Smaller than `PIPE_BUF`, so it is written whole.
const RECORD: usize = 8;

/// Process groups the watchdog remembers at once. ralph runs one process at a time and
/// unregisters each group when it ends; the room is for embedders running several engines.
const SLOTS: usize = 256;

/// How long ralph waits for the watchdog to exit once told to (it only has kills to make).
const EXIT_WAIT: Duration = Duration::from_secs(1);

/// The environment variable every process ralph starts carries: the tokens of the runs it
/// belongs to, `:`-separated (a ralph run by an agent adds its own to its parent's).
pub(crate) const TOKEN_VAR: &str = "RALPH_RUN_TOKEN";

/// The process groups the watchdog kills if ralph dies: [`SLOTS`] group ids (0 for a free
/// slot) in memory shared with the watchdog, which reads them only once ralph is gone. Adding
/// and removing are atomic operations, safe from any thread and from a forked child.
#[derive(Debug)]
struct Registry {
    slots: NonNull<AtomicI32>,
}

// SAFETY: the mapping is only reached through atomics, and lives until the registry is dropped.
unsafe impl Send for Registry {}
// SAFETY: as above; every access is an atomic operation.
unsafe impl Sync for Registry {}

impl Registry {
    const BYTES: usize = SLOTS * std::mem::size_of::<AtomicI32>();

    /// Maps zeroed memory that a `fork` after this shares with the child (`MAP_SHARED`).
    fn new() -> std::io::Result<Self> {
        // SAFETY: an anonymous mapping of a fixed size at an address of the system's choosing;
        // the result is checked before use.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        NonNull::new(at.cast())
            .map(|slots| Self { slots })
            .ok_or_else(|| std::io::Error::other("mmap returned a null address"))
    }

    fn slots(&self) -> &[AtomicI32] {
        // SAFETY: the mapping holds SLOTS zero-initialised (valid) AtomicI32s, page-aligned, and
        // outlives `self`.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr(), SLOTS) }
    }

    /// Adds `pgid`, once (the non-Linux child adds its own group before ralph does). A full
    /// registry leaves the group out: it ends with its iteration as any other, only without
    /// the watchdog's guarantee.
    fn add(&self, pgid: i32) {
        let slots = self.slots();
        if slots
            .iter()
            .any(|slot| slot.load(Ordering::Acquire) == pgid)
        {
            return;
        }
        for slot in slots {
            if slot
                .compare_exchange(0, pgid, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Removes `pgid`, whose id may now go to another group.
    fn remove(&self, pgid: i32) {
        for slot in self.slots() {
            if slot
                .compare_exchange(pgid, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; no reference into it outlives `self`.
        unsafe {
            libc::munmap(self.slots.as_ptr().cast(), Self::BYTES);
        }
    }
}

/// The running watchdog; dropping the last handle ends it.
#[derive(Debug)]
pub(crate) struct Watchdog {
    pid: libc::pid_t,
    /// The pipe's write end; closing it is the watchdog's end of file.
    write: Mutex<Option<OwnedFd>>,
    /// The groups to kill, shared with the watchdog. Dropped after the watchdog was reaped.
    registry: Registry,
    /// [`TOKEN_VAR`]'s value for ralph's children: the inherited tokens, then this run's.
    pub(crate) token: String,
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

    /// Tells the watchdog that ralph ends normally: what carries the token is not its to end.
    fn say_ended(&self) {
        let mut record = [0u8; RECORD];
        record[0] = b'.';
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
        self.say_ended();
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
        watchdog.registry.add(pgid);
    }
}

/// Without `/proc` (not Linux), the hook a child runs between fork and exec (`pre_exec`): it
/// puts itself in a process group of its own (already done by then for a pipe spawn; refused,
/// harmlessly, for a PTY agent that is a session leader) and registers that group with the
/// watchdog before the program runs a single instruction, where Linux has the token. ralph
/// registers again after the spawn (a duplicate the watchdog ignores), which covers a hook that
/// could not run.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn register_from_child() -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    // The handle keeps the registry mapped until the child has exec'd.
    let watchdog = current();
    move || {
        if let Some(watchdog) = &watchdog {
            // SAFETY: runs in the forked child before exec: setpgid and getpid are
            // async-signal-safe. Errors are ignored: ralph's own registration follows.
            let pgid = unsafe {
                libc::setpgid(0, 0);
                libc::getpid()
            };
            // Atomics on memory the fork kept shared: no lock, no allocation.
            watchdog.registry.add(pgid);
        }
        Ok(())
    }
}

/// Tells the watchdog that ralph has killed group `pgid`: its id may be reused.
pub(crate) fn unregister(pgid: i32) {
    if let Some(watchdog) = current() {
        watchdog.registry.remove(pgid);
    }
}

/// [`TOKEN_VAR`]'s value for a child started now, if a watchdog runs.
pub(crate) fn token() -> Option<String> {
    current().map(|w| w.token.clone())
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
    let own = new_token();
    let token = match std::env::var(TOKEN_VAR) {
        Ok(outer) if !outer.is_empty() => format!("{outer}:{own}"),
        _ => own.clone(),
    };
    // SAFETY: getpgrp only reads the process's group.
    let ralph_group = unsafe { libc::getpgrp() };
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
    let registry = Registry::new()?;
    // SAFETY: fork(2). The child runs only `watch`, which makes async-signal-safe calls and
    // never returns; the parent goes on as usual.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(std::io::Error::last_os_error()),
        0 => watch(
            read.as_raw_fd(),
            null.as_raw_fd(),
            max_fd,
            registry.slots(),
            own.as_bytes(),
            ralph_group,
        ),
        pid => Ok(Watchdog {
            pid,
            write: Mutex::new(Some(write)),
            registry,
            token,
        }),
    }
}

/// A token no other run has: ralph's pid, the time and bits of the standard library's random
/// hash keys (seeded from the system), in hex.
fn new_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(nanos);
    format!("{:x}-{:016x}", std::process::id(), hasher.finish())
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

/// The watchdog itself, in the forked child. Only async-signal-safe calls, no allocation:
/// `groups` are the registry's slots, `token` is this run's own token and `ralph_group` ralph's
/// process group, which a token carrier may have joined but which is not the run's to kill.
fn watch(
    read: RawFd,
    null: RawFd,
    max_fd: RawFd,
    groups: &[AtomicI32],
    token: &[u8],
    ralph_group: i32,
) -> ! {
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

        let mut record = [0u8; RECORD];
        let mut ended_normally = false;
        loop {
            let n = libc::read(0, record.as_mut_ptr().cast(), RECORD);
            if n == 0 {
                break;
            }
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break;
            }
            if record[0] == b'.' {
                ended_normally = true;
            }
        }
        for slot in groups {
            let pgid = slot.load(Ordering::Acquire);
            if pgid > 1 {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if !ended_normally {
            kill_token_carriers(token, ralph_group);
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let _ = (ended_normally, token, ralph_group);
        libc::_exit(0)
    }
}

/// Rounds of the `/proc` sweep at most: a carrier may start another between a round's read
/// and its kill; a round that finds none ends the sweep.
#[cfg(any(target_os = "linux", target_os = "android"))]
const SWEEPS: usize = 16;

/// SIGKILLs every process whose environment carries `token` in [`TOKEN_VAR`], and its process
/// group (`ralph_group` aside), until a sweep of `/proc` finds none. In the watchdog child:
/// async-signal-safe calls on stack buffers only.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn kill_token_carriers(token: &[u8], ralph_group: i32) {
    /// `getdents64` records are 8-byte aligned.
    #[repr(align(8))]
    struct Entries([u8; 4096]);

    // SAFETY: getpid only reads the process's id.
    let me = unsafe { libc::getpid() };
    for _ in 0..SWEEPS {
        // SAFETY: open(2) of a static C string.
        let dir = unsafe {
            libc::open(
                c"/proc".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if dir < 0 {
            return;
        }
        let mut found = 0;
        let mut entries = Entries([0; 4096]);
        loop {
            // SAFETY: getdents64 writes at most the buffer's length into it.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    dir,
                    entries.0.as_mut_ptr(),
                    entries.0.len(),
                )
            };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            let mut at = 0;
            // A record: inode (8 bytes), offset (8), its length (2), type (1), NUL-ended name.
            while at + 19 < n {
                let len = usize::from(u16::from_ne_bytes([entries.0[at + 16], entries.0[at + 17]]));
                if len == 0 {
                    break;
                }
                let name = &entries.0[at + 19..(at + len).min(n)];
                if let Some(pid) = parse_pid(name).filter(|&pid| pid > 1 && pid != me) {
                    if carries(pid, token) {
                        found += 1;
                        // SAFETY: getpgid and kill take plain integers.
                        unsafe {
                            let pgid = libc::getpgid(pid);
                            if pgid > 1 && pgid != ralph_group && pgid != me {
                                libc::kill(-pgid, libc::SIGKILL);
                            }
                            libc::kill(pid, libc::SIGKILL);
                        }
                    }
                }
                at += len;
            }
        }
        // SAFETY: closes the descriptor opened above.
        unsafe { libc::close(dir) };
        if found == 0 {
            return;
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
/// The pid a `/proc` entry's NUL-ended name spells, if it is one.
fn parse_pid(name: &[u8]) -> Option<i32> {
    let digits = name.split(|&b| b == 0).next()?;
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    digits.iter().try_fold(0i32, |pid, &b| {
        b.is_ascii_digit().then(|| pid * 10 + i32::from(b - b'0'))
    })
}

/// Whether process `pid`'s environment carries `token`: reads `/proc/PID/environ` in stack
/// chunks (a process gone, or not ours to read, carries nothing).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn carries(pid: i32, token: &[u8]) -> bool {
    let mut path = [0u8; 32];
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        for &b in bytes {
            if len < path.len() - 1 {
                path[len] = b;
                len += 1;
            }
        }
    };
    put(b"/proc/");
    let mut digits = [0u8; 10];
    let mut n = pid;
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || start == 0 {
            break;
        }
    }
    put(&digits[start..]);
    put(b"/environ");
    // SAFETY: `path` is NUL-ended (its last byte is never written).
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut matcher = TokenMatch::new(token);
    let mut chunk = [0u8; 4096];
    let mut found = false;
    loop {
        // SAFETY: read(2) into a stack array of the length given.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        let Ok(n) = usize::try_from(n) else { break };
        if n == 0 {
            found = matcher.finish();
            break;
        }
        if chunk[..n].iter().any(|&b| matcher.feed(b)) {
            found = true;
            break;
        }
    }
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(fd) };
    found
}

#[cfg(any(target_os = "linux", target_os = "android"))]
/// Finds `TOKEN_VAR=…` with `token` as one of its `:`-separated parts in an environment
/// block (`NAME=value` entries, each ended by a NUL), fed a byte at a time.
struct TokenMatch<'a> {
    token: &'a [u8],
    at: Place,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[derive(Clone, Copy)]
enum Place {
    /// In an entry's name, this many bytes of `TOKEN_VAR=` matched.
    Name(usize),
    /// In an entry that is not the token variable.
    Other,
    /// In the token variable's value: this many bytes of the token matched in the current
    /// part, or `None` when the part already differs.
    Value(Option<usize>),
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl<'a> TokenMatch<'a> {
    const NAME: &'static [u8] = b"RALPH_RUN_TOKEN=";

    fn new(token: &'a [u8]) -> Self {
        Self {
            token,
            at: Place::Name(0),
        }
    }

    /// Takes the next byte; `true` once a part equal to the token has ended.
    fn feed(&mut self, byte: u8) -> bool {
        self.at = match (self.at, byte) {
            (Place::Value(Some(n)), 0 | b':') if n == self.token.len() => return true,
            (Place::Value(_), b':') => Place::Value(Some(0)),
            (_, 0) => Place::Name(0),
            (Place::Name(n), b) if Self::NAME[n] == b => match n + 1 == Self::NAME.len() {
                true => Place::Value(Some(0)),
                false => Place::Name(n + 1),
            },
            (Place::Name(_) | Place::Other, _) => Place::Other,
            (Place::Value(Some(n)), b) if self.token.get(n) == Some(&b) => {
                Place::Value(Some(n + 1))
            }
            (Place::Value(_), _) => Place::Value(None),
        };
        false
    }

    /// The block ended: `true` if it ended on a part equal to the token.
    fn finish(&self) -> bool {
        matches!(self.at, Place::Value(Some(n)) if n == self.token.len())
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

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn carries_token(environ: &[u8], token: &str) -> bool {
        let mut matcher = TokenMatch::new(token.as_bytes());
        environ.iter().any(|&b| matcher.feed(b)) || matcher.finish()
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn the_token_is_found_as_a_whole_part_of_its_variable_only() {
        let t = "1a-00ff";
        assert!(carries_token(b"A=1\0RALPH_RUN_TOKEN=1a-00ff\0B=2\0", t));
        assert!(carries_token(b"RALPH_RUN_TOKEN=outer:1a-00ff", t));
        assert!(carries_token(b"RALPH_RUN_TOKEN=1a-00ff:inner\0", t));
        assert!(!carries_token(b"RALPH_RUN_TOKEN=1a-00ffx\0", t));
        assert!(!carries_token(b"RALPH_RUN_TOKEN=x1a-00ff\0", t));
        assert!(!carries_token(b"X_RALPH_RUN_TOKEN=1a-00ff\0", t));
        assert!(!carries_token(b"OTHER=1a-00ff\0", t));
        assert!(!carries_token(b"", t));
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn proc_entry_names_are_pids_or_not() {
        assert_eq!(parse_pid(b"4242\0\0\0"), Some(4242));
        assert_eq!(parse_pid(b"self\0"), None);
        assert_eq!(parse_pid(b"\0"), None);
        assert_eq!(parse_pid(b"12a\0"), None);
    }

    #[test]
    fn at_end_of_file_the_registered_groups_are_killed_and_only_they() {
        // A watchdog of its own, not the shared one other tests' runs register with.
        let watchdog = start().unwrap();
        let mut registered = group_leader();
        let mut ended = group_leader();
        let mut never = group_leader();
        watchdog.registry.add(registered.id() as i32);
        watchdog.registry.add(ended.id() as i32);
        // Killed by ralph and unregistered: its id could be another group's by now.
        watchdog.registry.remove(ended.id() as i32);

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
