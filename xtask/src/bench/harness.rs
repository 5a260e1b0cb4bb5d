//! Plumbing shared by the measurements: scratch directories, RALPH.md files, timed runs, the
//! events file, and the few `/proc` readers that see ralph's own memory and CPU.

use std::ffi::OsString;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use tempfile::TempDir;

/// Errors are reasons, shown as `skipped: <reason>` rows or as xtask's own failure.
pub(crate) type Result<T> = std::result::Result<T, String>;

/// What every measurement needs.
pub(crate) struct Ctx {
    /// The release `ralph` binary under test.
    pub(crate) ralph: PathBuf,
    /// The workspace root.
    pub(crate) root: PathBuf,
    /// The cargo that runs xtask (`$CARGO`), for the builds the bench does itself.
    pub(crate) cargo: OsString,
}

impl Ctx {
    /// `ralph run DIR --quiet --log-dir DIR/logs` run from `dir`, with stdin and stdout null.
    pub(crate) fn ralph_run(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.ralph);
        cmd.arg("run")
            .arg(dir)
            .arg("--quiet")
            .arg("--log-dir")
            .arg(dir.join("logs"))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd
    }

    /// Starts `ralph run DIR -n ITERATIONS --events EVENTS` as [`ralph_run`](Self::ralph_run)
    /// does, with stderr null too: a run the measurement watches while it goes.
    pub(crate) fn spawn_run(&self, dir: &Path, iterations: u32, events: &Path) -> Result<Child> {
        self.ralph_run(dir)
            .arg("-n")
            .arg(iterations.to_string())
            .arg("--events")
            .arg(events)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot start ralph: {err}"))
    }

    /// A cargo command run from the workspace root with the default target directory, so the
    /// binaries land where a fresh clone would put them.
    pub(crate) fn cargo(&self) -> Command {
        let mut cmd = Command::new(&self.cargo);
        cmd.current_dir(&self.root).env_remove("CARGO_TARGET_DIR");
        cmd
    }
}

/// A scratch directory removed when dropped.
pub(crate) fn scratch(name: &str) -> Result<TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("ralph-bench-{name}-"))
        .tempdir()
        .map_err(|err| format!("cannot create a scratch directory: {err}"))
}

/// Writes `DIR/RALPH.md` from its frontmatter (without the `---` lines) and body.
pub(crate) fn write_ralph_md(dir: &Path, frontmatter: &str, body: &str) -> Result<()> {
    write(
        &dir.join("RALPH.md"),
        &format!("---\n{frontmatter}---\n{body}"),
    )
}

/// Writes a file, naming it in the error.
pub(crate) fn write(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))
}

/// Quotes `path` for a shell-like command line (RALPH.md's `agent`, or `sh -c`).
pub(crate) fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// Writes every dirty page to disk (`sync`), so that a timed run does not pay the kernel's
/// writeback of the files the previous run wrote (ralphify's logs landing in ralph's run).
pub(crate) fn settle() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// `LD_LIBRARY_PATH` without the folders `cargo run` puts in front of it (its target folder's
/// and the toolchain's libraries), or `None` when nothing else is left.
///
/// Every program the bench starts would otherwise look for its C library in those folders
/// first: 0.15 to 0.3 ms more for each exec on the bench machine, a cost no user's loop pays.
pub(crate) fn library_path_of_the_user() -> Option<OsString> {
    let current = std::env::var_os("LD_LIBRARY_PATH")?;
    let cargo_dirs: Vec<PathBuf> = [
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf)),
        sysroot(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let kept: Vec<PathBuf> = std::env::split_paths(&current)
        .filter(|dir| {
            !cargo_dirs
                .iter()
                .any(|cargo_dir| dir.starts_with(cargo_dir))
        })
        .collect();
    match kept.is_empty() {
        true => None,
        false => std::env::join_paths(kept).ok(),
    }
}

/// The Rust toolchain's own folder (`rustc --print sysroot`).
fn sysroot() -> Option<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| PathBuf::from(text.trim_end()))
}

/// Runs `cmd` to completion and returns its wall time; a failure carries the end of its stderr.
pub(crate) fn timed(cmd: &mut Command) -> Result<Duration> {
    let start = Instant::now();
    let out = cmd
        .stderr(Stdio::piped())
        .output()
        .map_err(|err| format!("cannot start {:?}: {err}", cmd.get_program()))?;
    let elapsed = start.elapsed();
    if out.status.success() {
        Ok(elapsed)
    } else {
        Err(failure(cmd, &out.status, &out.stderr))
    }
}

/// "PROGRAM exited with STATUS: last line of stderr".
pub(crate) fn failure(cmd: &Command, status: &std::process::ExitStatus, stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    format!(
        "{} exited with {status}{}",
        Path::new(cmd.get_program()).display(),
        last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
    )
}

/// The median of `values` (sorted in place); NaN for none.
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Milliseconds in a duration, as a float.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `name` resolved through `PATH`, so the bench and its baselines exec the same file.
pub(crate) fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Reads a ralph events file (`--events FILE`) as it grows, one complete line at a time.
pub(crate) struct EventTail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl EventTail {
    /// Tails `path`, which may not exist yet.
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            offset: 0,
            partial: Vec::new(),
        }
    }

    /// The events completed since the last call.
    pub(crate) fn poll(&mut self) -> Result<Vec<Value>> {
        let Ok(mut file) = fs::File::open(&self.path) else {
            return Ok(Vec::new());
        };
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.read_to_end(&mut bytes))
            .map_err(|err| format!("cannot read {}: {err}", self.path.display()))?;
        self.offset += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(Vec::new());
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        complete
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                serde_json::from_slice(line).map_err(|err| format!("bad event line: {err}"))
            })
            .collect()
    }

    /// Polls every millisecond until an event of type `kind` arrives and returns it; gives up
    /// when `child` exits first or after `limit`.
    pub(crate) fn wait_for(
        &mut self,
        kind: &str,
        child: &mut Child,
        limit: Duration,
    ) -> Result<Value> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(event) = self.poll()?.into_iter().find(|e| event_type(e) == kind) {
                return Ok(event);
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("ralph exited ({status}) before a {kind} event"));
            }
            if Instant::now() > deadline {
                return Err(format!("no {kind} event within {limit:?}"));
            }
            thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Every event of a finished run.
pub(crate) fn read_events(path: &Path) -> Result<Vec<Value>> {
    EventTail::new(path.to_path_buf()).poll()
}

/// An event's `type`.
pub(crate) fn event_type(event: &Value) -> &str {
    event["type"].as_str().unwrap_or_default()
}

/// An event's `ts`.
pub(crate) fn event_ts(event: &Value) -> Result<SystemTime> {
    let ts = event["ts"].as_str().ok_or("event without a ts")?;
    humantime::parse_rfc3339(ts).map_err(|err| format!("bad event ts {ts:?}: {err}"))
}

/// Kills a child this bench started and reaps it, when a measurement gives up half-way.
pub(crate) fn abandon(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The process's peak resident set (`VmHWM`) in KiB; `None` once it has exited.
pub(crate) fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The CPU time, in ns, that the kernel's scheduler has charged to the process's live threads
/// (`/proc/<pid>/task/*/schedstat`). Nanoseconds, where `/proc/<pid>/stat` counts 10 ms ticks;
/// the time of threads that exited in between is lost, which a single-threaded ralph never has.
pub(crate) fn cpu_ns(pid: u32) -> Option<u64> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks
        .flatten()
        .map(|task| {
            let schedstat = fs::read_to_string(task.path().join("schedstat")).ok()?;
            schedstat.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

/// Whether any live (not zombie) process is in process group `pgid`.
///
/// `kill(-pgid, 0)` is not enough: orphans left as zombies still count for it until their
/// new parent reaps them, and some containers' init never does.
pub(crate) fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        let Some(close) = stat.rfind(')') else {
            return false;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let live = !matches!(fields.first(), Some(&("Z" | "X")));
        live && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
    })
}

/// Sends `signal` to process `pid` (never to a group).
pub(crate) fn send_signal(pid: u32, signal: i32) -> Result<()> {
    let pid = i32::try_from(pid).map_err(|_| format!("pid {pid} out of range"))?;
    // SAFETY: kill(2) on one positive pid only sends a signal.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "kill({pid}, {signal}): {}",
            std::io::Error::last_os_error()
        ))
    }
}
