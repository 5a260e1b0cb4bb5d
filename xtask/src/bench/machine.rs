//! The machine and build the figures were measured on, for the report's header.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

/// Where and when the bench ran.
pub(crate) struct Machine {
    /// CPU model name from /proc/cpuinfo.
    pub(crate) cpu: String,
    /// Logical CPUs available to the bench.
    pub(crate) cores: usize,
    /// Total memory, as "N.N GiB".
    pub(crate) memory: String,
    /// Kernel name and release.
    pub(crate) kernel: String,
    /// The toolchain that built ralph.
    pub(crate) rustc: String,
    /// The commit measured, saying so when the crates differ from it.
    pub(crate) commit: String,
    /// The time the bench started, RFC 3339 UTC.
    pub(crate) date: String,
    /// The 1-minute load average when the bench started: other work skews every figure.
    pub(crate) load: String,
}

/// Describes this machine; anything unreadable becomes "unknown".
pub(crate) fn describe(root: &Path) -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let kib: f64 = info
                .lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()?;
            Some(format!("{:.1} GiB", kib / 1024.0 / 1024.0))
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let kernel = ["ostype", "osrelease"]
        .map(|f| fs::read_to_string(format!("/proc/sys/kernel/{f}")).unwrap_or_default())
        .map(|s| s.trim().to_owned())
        .join(" ");
    let commit = match stdout_of(
        Command::new("git").args(["rev-parse", "--short", "HEAD"]),
        root,
    ) {
        Some(head) => {
            let dirty = stdout_of(
                Command::new("git").args(["status", "--porcelain", "--", "crates", "Cargo.lock"]),
                root,
            )
            .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head} + uncommitted changes")
            } else {
                head
            }
        }
        None => "unknown".to_owned(),
    };
    Machine {
        cpu,
        cores,
        memory,
        kernel: if kernel.trim().is_empty() {
            "unknown".to_owned()
        } else {
            kernel
        },
        rustc: stdout_of(Command::new("rustc").arg("--version"), root)
            .unwrap_or_else(|| "unknown".to_owned()),
        commit,
        date: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        load: fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned()),
    }
}

/// A command's trimmed stdout, when it succeeds.
fn stdout_of(cmd: &mut Command, dir: &Path) -> Option<String> {
    let out = cmd.current_dir(dir).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
