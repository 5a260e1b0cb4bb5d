//! Memory and throughput: an agent printing 1 GiB, with and without newlines, run by
//! `ralph run -n 1 --quiet`. ralph's own peak RSS (not the agent's) and its throughput against
//! `cat` copying the same generator's output into a file on the same disk.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::harness::{self, Ctx, Result};
use super::table::Row;

const GIB: u64 = 1 << 30;
/// Timed runs per generator and contender; the median throughput and the highest peak RSS are
/// reported.
const RUNS: usize = 3;
const RSS_TARGET: &str = "< 32 MiB";
/// What an iteration log adds around the agent's output: section titles and a closing line.
const FRAMING: u64 = 4096;

/// A 1 GiB generator: a shell script, so that ralph's agent and the `cat` baseline run the
/// very same thing.
struct Generator {
    /// How the output looks, for the row names.
    shape: &'static str,
    script: &'static str,
}

const GENERATORS: [Generator; 2] = [
    Generator {
        shape: "in 80-byte lines",
        script: "yes 'ralph bench: a line of agent output, eighty bytes long with its newline........' \
                 | head -c 1073741824\n",
    },
    Generator {
        shape: "without a newline",
        script: "head -c 1073741824 /dev/zero | tr '\\0' x\n",
    },
];

/// Measures peak RSS and throughput for each generator.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    GENERATORS
        .iter()
        .flat_map(|generator| {
            let rss_name = format!("Peak RSS of ralph, agent prints 1 GiB {}", generator.shape);
            let speed_name = format!("Throughput, agent prints 1 GiB {}", generator.shape);
            eprintln!("bench: 1 GiB {} ({RUNS} runs)", generator.shape);
            match measure_one(ctx, generator) {
                Ok(m) => vec![
                    Row::measured(
                        &rss_name,
                        format!("{:.1} MiB", m.peak_rss_mib),
                        "–".to_owned(),
                        RSS_TARGET,
                        Some(m.peak_rss_mib < 32.0),
                    ),
                    Row::measured(
                        &speed_name,
                        format!("{:.0} MB/s", m.ralph_mbps),
                        format!(
                            "`cat` into a file: {:.0} MB/s (ralph at {:.0}%)",
                            m.cat_mbps,
                            100.0 * m.ralph_mbps / m.cat_mbps
                        ),
                        "–",
                        None,
                    ),
                ],
                Err(why) => vec![
                    Row::skipped(&rss_name, RSS_TARGET, &why),
                    Row::skipped(&speed_name, "–", &why),
                ],
            }
        })
        .collect()
}

struct Measured {
    peak_rss_mib: f64,
    ralph_mbps: f64,
    cat_mbps: f64,
}

fn measure_one(ctx: &Ctx, generator: &Generator) -> Result<Measured> {
    let work = harness::scratch("memory")?;
    let dir = work.path();
    let script = dir.join("generate.sh");
    harness::write(&script, generator.script)?;
    harness::write_ralph_md(
        dir,
        &format!("agent: sh {}\n", harness::quoted(&script)),
        "Print a lot.\n",
    )?;
    let copy = dir.join("cat.log");
    let mut cat = Command::new("sh");
    cat.arg("-c")
        .arg(format!(
            "sh {} | cat > {}",
            harness::quoted(&script),
            harness::quoted(&copy)
        ))
        .stdin(Stdio::null());

    let mut peak_kib = 0;
    let mut ralph_mbps = Vec::new();
    let mut cat_mbps = Vec::new();
    for _ in 0..RUNS {
        let (elapsed, kib) = run_ralph(ctx, dir)?;
        peak_kib = peak_kib.max(kib);
        ralph_mbps.push(mb_per_sec(elapsed));

        let elapsed = harness::timed(&mut cat)?;
        check_size(&copy, 0)?;
        remove(&copy)?;
        cat_mbps.push(mb_per_sec(elapsed));
    }
    Ok(Measured {
        peak_rss_mib: peak_kib as f64 / 1024.0,
        ralph_mbps: harness::median(&mut ralph_mbps),
        cat_mbps: harness::median(&mut cat_mbps),
    })
}

/// One `ralph run -n 1`: its wall time and its peak RSS in KiB.
///
/// The peak is ralph's own `VmHWM`, sampled every 10 ms until it exits. The rusage that
/// `wait4` returns would not do: its `ru_maxrss` also covers the descendants ralph reaped,
/// the agent among them.
fn run_ralph(ctx: &Ctx, dir: &Path) -> Result<(Duration, u64)> {
    let events = dir.join("events.jsonl");
    let start = Instant::now();
    let mut child = ctx.spawn_run(dir, 1, &events)?;
    let mut peak_kib = 0;
    let status = loop {
        if let Some(kib) = harness::peak_rss_kib(child.id()) {
            peak_kib = peak_kib.max(kib);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(err) => return Err(format!("waiting for ralph: {err}")),
        }
    };
    let elapsed = start.elapsed();
    if !status.success() {
        return Err(format!("ralph exited with {status}"));
    }
    // The log proves the whole GiB went through ralph, not a generator that failed early.
    let log = harness::read_events(&events)?
        .iter()
        .find(|e| harness::event_type(e) == "ITERATION_ENDED")
        .and_then(|e| e["log_file"].as_str().map(|p| dir.join(p)))
        .ok_or("no ITERATION_ENDED event with a log_file")?;
    check_size(&log, FRAMING)?;
    remove(&dir.join("logs"))?;
    Ok((elapsed, peak_kib))
}

fn mb_per_sec(elapsed: Duration) -> f64 {
    GIB as f64 / elapsed.as_secs_f64() / 1e6
}

/// Checks that `path` holds 1 GiB plus at most `slack` bytes.
fn check_size(path: &Path, slack: u64) -> Result<()> {
    let len = fs::metadata(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?
        .len();
    if (GIB..=GIB + slack).contains(&len) {
        Ok(())
    } else {
        Err(format!("{} holds {len} bytes, not 1 GiB", path.display()))
    }
}

/// Removes a file or a directory tree, so the next run starts on an empty disk budget.
fn remove(path: &Path) -> Result<()> {
    let removed = if path.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    removed.map_err(|err| format!("cannot remove {}: {err}", path.display()))
}
