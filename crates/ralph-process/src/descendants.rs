//! Linux: processes that left the agent's process group (a daemon started with `setsid`, a
//! double fork into a new group) are ended when the iteration that started them ends.
//!
//! Killing the agent's process group misses them. So ralph makes itself a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`): an orphan in its tree is re-parented to ralph, not to init, and
//! stays ralph's descendant. When an iteration ends, every descendant of ralph that was not
//! there when the iteration began (the watchdog and its kin aside) gets SIGTERM, then SIGKILL
//! after the grace, and ralph reaps the ones that became its children. Their process groups
//! are handed to the watchdog before the SIGTERM, so a ralph killed during the grace does not
//! leave one that ignores SIGTERM running. Descendants are found
//! by walking down from ralph through each thread's list of children
//! (`/proc/PID/task/TID/children`), reading only ralph's own processes; where the kernel has no
//! such lists, by reading every process's `/proc/PID/stat` parent link. A process is known by
//! its pid and start time, so a reused pid is never mistaken for a process from before.
//!
//! Several runs may share the process (an embedder's, or tests): a process some run still
//! supervises (its agent, command or check, and everything in its tree) is never a stray, and
//! a sweep does not look while a run spawns one ([`spawning`]), so it cannot take a child for
//! a stray in the instant before it is marked.
//!
//! Elsewhere (macOS, the BSDs) there is no subreaper: only the process group kill applies, and
//! a process that left the group outlives its iteration.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// How often the end of strays is checked while they get their grace.
const POLL: Duration = Duration::from_millis(10);

/// How long after SIGKILL ralph waits for the killed to be gone before giving up.
const AFTER_KILL: Duration = Duration::from_secs(1);

/// Held while a child is spawned and marked, and while a sweep looks and signals.
static SPAWNING: Mutex<()> = Mutex::new(());

/// The children the process module supervises now (their pid is their process group).
static SUPERVISED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Held while a child is spawned, until it is [`supervise`]d: no sweep looks meanwhile.
pub(crate) fn spawning() -> MutexGuard<'static, ()> {
    SPAWNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Marks `pid` as a child a run supervises: it and its tree are no sweep's to end.
pub(crate) fn supervise(pid: i32) {
    SUPERVISED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(pid);
}

/// `pid` was reaped and its group killed: what is left of its tree is a stray.
pub(crate) fn release(pid: i32) {
    SUPERVISED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|&p| p != pid);
}

/// A process, known by its pid and its start time (clock ticks since boot), so that a pid
/// reused by a new process does not pass for the old one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ProcId {
    pid: i32,
    start: u64,
}

/// One line of `/proc/PID/stat`, the fields used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    id: ProcId,
    ppid: i32,
    pgid: i32,
    zombie: bool,
}

/// The processes when an iteration began, pids only: ralph's descendants where the kernel
/// lists children (every one, the supervised trees included), otherwise every process of the
/// system (listing `/proc` costs one directory read, where reading every `stat` would cost
/// milliseconds per iteration).
#[derive(Debug, Default)]
pub(crate) struct Snapshot(HashSet<i32>);

/// How many runs hold the subreaper flag, and whether the process had it before the first.
static SUBREAPER: Mutex<(usize, bool)> = Mutex::new((0, false));

/// Ralph as a subreaper for the length of a run.
#[derive(Debug)]
pub(crate) struct Reaper {
    /// Descendants when the run began: an embedder's, never ralph's to end.
    at_start: HashSet<ProcId>,
    /// The watchdog, which outlives iterations by design.
    watchdog: Option<i32>,
}

impl Reaper {
    /// Makes ralph a child subreaper. `None` where the system has no such thing or refuses.
    pub(crate) fn start(watchdog: Option<i32>) -> Option<Self> {
        {
            let mut holders = SUBREAPER.lock().unwrap_or_else(|p| p.into_inner());
            if holders.0 == 0 {
                holders.1 = set_subreaper()?;
            }
            holders.0 += 1;
        }
        let mut reaper = Self {
            at_start: HashSet::new(),
            watchdog,
        };
        reaper.at_start = reaper.descendants().into_iter().map(|p| p.id).collect();
        Some(reaper)
    }

    /// What runs now, for [`Reaper::end_new`] to tell what came after.
    pub(crate) fn snapshot(&self) -> Snapshot {
        if !children_listed() {
            return Snapshot(pids().collect());
        }
        let me = std::process::id() as i32;
        let watchdog: Vec<i32> = self.watchdog.into_iter().collect();
        Snapshot(
            walk(me, &watchdog, &HashSet::new(), children)
                .into_iter()
                .collect(),
        )
    }

    /// Ends every descendant not in `before`: SIGTERM, SIGKILL after `grace`, then reaped.
    /// Returns what the user should hear, for the engine to emit as warnings.
    pub(crate) async fn end_new(&self, before: &Snapshot, grace: Duration) -> Vec<String> {
        let kill_at = Instant::now() + grace;
        let mut termed = HashSet::new();
        let mut ended = Vec::new();
        let mut warnings = Vec::new();
        // Groups handed to the watchdog: if ralph dies during the grace, it kills them.
        let mut handed = Vec::new();
        // SAFETY: getpgrp only reads ralph's own process group.
        let own_group = unsafe { libc::getpgrp() };
        let mut all_ended = true;
        loop {
            let spawning = spawning();
            let strays = self.new_strays(&before.0);
            let live: Vec<Proc> = strays.into_iter().filter(|p| !p.zombie).collect();
            if live.is_empty() {
                break;
            }
            let now = Instant::now();
            if now >= kill_at + AFTER_KILL {
                warnings.push(format!(
                    "{} process(es) the iteration started did not end after SIGKILL",
                    live.len()
                ));
                all_ended = false;
                break;
            }
            for p in live {
                if now >= kill_at {
                    send(p.id.pid, libc::SIGKILL);
                } else if termed.insert(p.id) {
                    // A supervised child's group is registered already, and unregistered by
                    // its own guard.
                    let supervised = self.skipped().contains(&p.pgid);
                    if p.pgid > 1 && p.pgid != own_group && !supervised && !handed.contains(&p.pgid)
                    {
                        super::watchdog::register(p.pgid);
                        handed.push(p.pgid);
                    }
                    ended.push(describe(p.id.pid));
                    send(p.id.pid, libc::SIGTERM);
                }
            }
            drop(spawning);
            tokio::time::sleep(POLL).await;
        }
        // Gone, so their ids may go to other groups; one that would not die stays handed over.
        if all_ended {
            for pgid in handed {
                super::watchdog::unregister(pgid);
            }
        }
        if !ended.is_empty() {
            // The user learns why their server is gone, and where to run one instead.
            warnings.insert(
                0,
                format!(
                    "ended what the iteration left running ({}): a process that must outlive \
                     an iteration has to be started outside ralph",
                    ended.join(", ")
                ),
            );
        }
        warnings
    }

    /// The processes started since `before` whose parents lead back to ralph through
    /// processes also started since, the watchdog's and supervised trees left out; zombies
    /// among ralph's own children are reaped. A pid reused since `before` hides its process
    /// here: the end of the run, which compares start times, still catches it.
    fn new_strays(&self, before: &HashSet<i32>) -> Vec<Proc> {
        let skip = self.skipped();
        let me = std::process::id() as i32;
        let strays = if children_listed() {
            (walk(me, &skip, before, children).into_iter())
                .filter_map(stat)
                .collect()
        } else {
            let new: Vec<Proc> = pids()
                .filter(|pid| !before.contains(pid))
                .filter_map(stat)
                .collect();
            strays_among(&new, me, &skip)
        };
        strays
            .into_iter()
            .filter(|p| !(p.zombie && p.ppid == me && reap(p.id.pid)))
            .collect()
    }

    /// Descendants not there when the run began, with the zombies among ralph's own children
    /// reaped (and left out).
    fn strays_since_start(&self) -> Vec<Proc> {
        let me = std::process::id() as i32;
        self.descendants()
            .into_iter()
            .filter(|p| !self.at_start.contains(&p.id))
            .filter(|p| !(p.zombie && p.ppid == me && reap(p.id.pid)))
            .collect()
    }

    /// The watchdog and the processes runs supervise: never strays, nor is their tree.
    fn skipped(&self) -> Vec<i32> {
        let mut skip = SUPERVISED.lock().unwrap_or_else(|p| p.into_inner()).clone();
        skip.extend(self.watchdog);
        skip
    }

    /// Ralph's descendants but the watchdog and the processes runs supervise, with their trees.
    fn descendants(&self) -> Vec<Proc> {
        let me = std::process::id() as i32;
        let skip = self.skipped();
        if children_listed() {
            return (walk(me, &skip, &HashSet::new(), children).into_iter())
                .filter_map(stat)
                .collect();
        }
        let procs = all();
        let children = |parent: i32| {
            (procs.iter().filter(|p| p.ppid == parent))
                .map(|p| p.id.pid)
                .collect()
        };
        (walk(me, &skip, &HashSet::new(), children).into_iter())
            .filter_map(|pid| procs.iter().find(|p| p.id.pid == pid).copied())
            .collect()
    }
}

impl Drop for Reaper {
    /// The run is over, whichever way: anything it started that still runs is killed now.
    fn drop(&mut self) {
        for _ in 0..100 {
            let _spawning = spawning();
            let live: Vec<Proc> = self
                .strays_since_start()
                .into_iter()
                .filter(|p| !p.zombie)
                .collect();
            if live.is_empty() {
                break;
            }
            for p in live {
                send(p.id.pid, libc::SIGKILL);
            }
            std::thread::sleep(POLL);
        }
        // The flag goes with the last run holding it, unless the process had it before.
        let mut holders = SUBREAPER.lock().unwrap_or_else(|p| p.into_inner());
        holders.0 -= 1;
        if holders.0 == 0 && !holders.1 {
            unset_subreaper();
        }
    }
}

/// Ends every process but ralph whose environment holds `name` with `value` as one of its
/// `:`-separated parts (the watchdog's run token, one loop's `RALPH_RUN_ID`): SIGTERM, then
/// SIGKILL after `grace`. Found through `/proc`, wherever it went: a daemon that left its
/// process group and ralph's tree (`setsid`, a double fork) carries the environment it was
/// started with. For a caller whose own subreaper sweep is off (lanes of a parallel run, which
/// share ralph's tree): call it when nothing carrying `value` may run any more. Returns the
/// warnings for the caller to emit. Elsewhere (no `/proc`), nothing is found.
pub async fn end_carriers(name: &str, value: &str, grace: Duration) -> Vec<String> {
    let me = std::process::id() as i32;
    let carriers = || {
        pids()
            .filter(|&pid| pid != me && carries(pid, name, value))
            .filter_map(stat)
            .filter(|p| !p.zombie)
            .collect::<Vec<Proc>>()
    };
    let kill_at = Instant::now() + grace;
    let mut termed = HashSet::new();
    let mut ended = Vec::new();
    let mut warnings = Vec::new();
    loop {
        let live = carriers();
        if live.is_empty() {
            break;
        }
        let now = Instant::now();
        if now >= kill_at + AFTER_KILL {
            warnings.push(format!(
                "{} process(es) carrying {name}={value} did not end after SIGKILL",
                live.len()
            ));
            break;
        }
        for p in live {
            if now >= kill_at {
                send(p.id.pid, libc::SIGKILL);
            } else if termed.insert(p.id) {
                ended.push(describe(p.id.pid));
                send(p.id.pid, libc::SIGTERM);
            }
        }
        tokio::time::sleep(POLL).await;
    }
    if !ended.is_empty() {
        warnings.insert(
            0,
            format!(
                "ended what was left running ({}): a process that must outlive the run has to \
                 be started outside ralph",
                ended.join(", ")
            ),
        );
    }
    warnings
}

/// Whether process `pid`'s environment holds `name` with `value` as one of its `:`-separated
/// parts (false when it cannot be read: another user's, or gone).
fn carries(pid: i32, name: &str, value: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    environ.split(|&b| b == 0).any(|entry| {
        entry
            .strip_prefix(name.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
            .is_some_and(|v| v.split(|&b| b == b':').any(|part| part == value.as_bytes()))
    })
}

/// Sets the subreaper flag; returns whether it was set before, or `None` if it cannot be set.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn set_subreaper() -> Option<bool> {
    let mut was: libc::c_int = 0;
    // SAFETY: prctl(2) with PR_GET_CHILD_SUBREAPER writes one int to the pointer given, a
    // live local; PR_SET_CHILD_SUBREAPER takes plain integers.
    unsafe {
        libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut was as *mut libc::c_int);
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) != 0 {
            return None;
        }
    }
    Some(was != 0)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn set_subreaper() -> Option<bool> {
    None
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn unset_subreaper() {
    // SAFETY: prctl(2) with plain integers.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0 as libc::c_ulong);
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn unset_subreaper() {}

fn send(pid: i32, signal: i32) {
    // SAFETY: kill(2) only sends a signal; ESRCH (already gone) needs no handling.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// `sh (pid 1234)`, from the process's command name.
fn describe(pid: i32) -> String {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("{} (pid {pid})", name.trim_end())
}

/// Reaps zombie child `pid`; whether it was reaped.
fn reap(pid: i32) -> bool {
    // SAFETY: waitpid on one pid with WNOHANG and a null status pointer writes no memory of
    // ours and never blocks.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) == pid }
}

/// The pids `/proc` lists.
fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
}

/// Process `pid`, if it still exists.
fn stat(pid: i32) -> Option<Proc> {
    let mut buf = [0u8; 1024];
    let text = read_small(&format!("/proc/{pid}/stat"), &mut buf)?;
    parse_stat(pid, std::str::from_utf8(text).ok()?)
}

/// A `/proc` file that fits in `buf`, read with as few reads as it takes (one for a `stat`,
/// which ends with a newline); `None` when it cannot be read or does not fit.
fn read_small<'b>(path: &str, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path).ok()?;
    let mut len = 0;
    loop {
        let n = file.read(&mut buf[len..]).ok()?;
        len += n;
        if n == 0 || buf[..len].ends_with(b"\n") {
            return Some(&buf[..len]);
        }
        if len == buf.len() {
            return None;
        }
    }
}

/// Whether the kernel lists each thread's children (`/proc/PID/task/TID/children`, built
/// with `CONFIG_PROC_CHILDREN`, as the usual distributions' kernels are).
fn children_listed() -> bool {
    static LISTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LISTED.get_or_init(|| {
        let me = std::process::id();
        std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// The children of process `pid`, those of each of its threads (a child belongs to the thread
/// that started it); none when it is gone.
fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut buf = vec![0u8; 4096];
    for task in tasks.flatten() {
        let path = format!(
            "/proc/{pid}/task/{}/children",
            task.file_name().to_string_lossy()
        );
        let len = loop {
            match read_small(&path, &mut buf).map(<[u8]>::len) {
                Some(len) => break len,
                // More children than the buffer holds: a bigger one.
                None if buf.len() < (1 << 22) && std::path::Path::new(&path).exists() => {
                    buf = vec![0u8; buf.len() * 4];
                }
                None => break 0,
            }
        };
        let list = std::str::from_utf8(&buf[..len]).unwrap_or("");
        found.extend(
            list.split_ascii_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    found
}

/// The pids below `root` that `children` leads to, a pid in `skip` left out with everything
/// under it, one in `old` too (what an old process starts is not the iteration's doing).
fn walk(
    root: i32,
    skip: &[i32],
    old: &HashSet<i32>,
    mut children: impl FnMut(i32) -> Vec<i32>,
) -> Vec<i32> {
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for child in children(parent) {
            // Bounded: a loop cannot happen, but a racing read could show one.
            if skip.contains(&child) || old.contains(&child) || !seen.insert(child) {
                continue;
            }
            found.push(child);
            parents.push(child);
        }
    }
    found
}

/// Every process `/proc` lists.
fn all() -> Vec<Proc> {
    pids().filter_map(stat).collect()
}

/// `/proc/PID/stat`: `pid (comm) state ppid pgrp ...`, the start time the 22nd field. The
/// command name may hold spaces and parentheses: the fields start after the last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<Proc> {
    let (_, rest) = stat.rsplit_once(") ")?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    Some(Proc {
        id: ProcId {
            pid,
            start: fields.get(19)?.parse().ok()?,
        },
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        zombie: *fields.first()? == "Z",
    })
}

/// Those of `new` whose parent chain reaches `root` through `new` alone, none of them in
/// `skip`: the processes `root` started since `new` was taken as new.
fn strays_among(new: &[Proc], root: i32, skip: &[i32]) -> Vec<Proc> {
    let parent = |pid: i32| new.iter().find(|p| p.id.pid == pid).map(|p| p.ppid);
    new.iter()
        .filter(|p| {
            let mut pid = p.id.pid;
            // Bounded: a parent loop cannot happen, but a racing read could show one.
            for _ in 0..=new.len() {
                if skip.contains(&pid) {
                    return false;
                }
                match parent(pid) {
                    Some(ppid) if ppid == root => return true,
                    Some(ppid) => pid = ppid,
                    None => return false,
                }
            }
            false
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: i32, ppid: i32) -> Proc {
        Proc {
            id: ProcId { pid, start: 7 },
            ppid,
            pgid: pid,
            zombie: false,
        }
    }

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let stat = "4242 (a) b (c)) Z 17 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 \
                    98765 0 0 18446744073709551615";
        assert_eq!(
            parse_stat(4242, stat),
            Some(Proc {
                id: ProcId {
                    pid: 4242,
                    start: 98765
                },
                ppid: 17,
                pgid: 4242,
                zombie: true,
            })
        );
        assert_eq!(parse_stat(1, "garbage"), None);
    }

    #[test]
    fn descendants_are_the_whole_tree_below_the_root_but_the_skipped_branch() {
        let procs = [
            proc(10, 1),
            proc(11, 10),
            proc(12, 11),
            proc(13, 10),
            proc(14, 13),
            proc(20, 1),
        ];
        let children = |parent: i32| {
            (procs.iter().filter(|p| p.ppid == parent))
                .map(|p| p.id.pid)
                .collect()
        };
        let mut pids = walk(10, &[13, 99], &HashSet::new(), children);
        pids.sort_unstable();
        assert_eq!(pids, [11, 12]);
        // Under an old process, nothing is the iteration's.
        let mut pids = walk(10, &[], &HashSet::from([13]), children);
        pids.sort_unstable();
        assert_eq!(pids, [11, 12]);
    }

    #[test]
    fn the_children_of_every_thread_are_listed() {
        if !children_listed() {
            return;
        }
        // Started from a thread of its own: the child belongs to that thread.
        let mut child = std::thread::spawn(|| {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap()
        })
        .join()
        .unwrap();
        let listed = children(std::process::id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        assert!(listed.contains(&(child.id() as i32)), "{listed:?}");
    }

    #[test]
    fn strays_are_new_processes_reaching_the_root_through_new_ones_only() {
        // 11 (new, child of 10) has 12; 13 is supervised, its child 14 goes with it; 16 is new
        // but its parent 15 was there before: not the root's doing.
        let new = [
            proc(11, 10),
            proc(12, 11),
            proc(13, 10),
            proc(14, 13),
            proc(16, 15),
        ];
        let mut pids: Vec<i32> = strays_among(&new, 10, &[13])
            .iter()
            .map(|p| p.id.pid)
            .collect();
        pids.sort_unstable();
        assert_eq!(pids, [11, 12]);
    }
}
