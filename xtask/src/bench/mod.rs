//! `cargo xtask bench`: builds ralph in release mode, drives the real binary through each
//! measurement, prints the table and writes it to `docs/benchmarks.md`.
//!
//! One module per measurement; each returns its rows and turns anything that keeps it from
//! running into a "skipped: why" row, so one missing tool never hides the other figures.

mod harness;
mod machine;
mod marker;
mod memory;
mod overhead;
mod parallel;
mod sandbox;
mod signals;
mod startup;
mod table;
mod waits;

use std::fs;
use std::path::Path;
use std::time::Instant;

use harness::{Ctx, Result};

/// The command that produces the report, as the report quotes it.
const COMMAND: &str = "cargo xtask bench";
const REPORT: &str = "docs/benchmarks.md";

/// How each row is measured: the part of the report that does not change between runs.
const METHOD: &str = "\
## How each row is measured

All figures come from one run of `cargo xtask bench`, which builds ralph with
`cargo build --release -p ralph-loop` and drives `target/release/ralph` as a user would, each
contender's runs interleaved with the others'. The programs it starts get the `LD_LIBRARY_PATH`
of the user, without the folders `cargo run` adds to it: each exec would otherwise look for its C
library there first, 0.15 to 0.3 ms an exec on this machine.

- **Per-iteration overhead**: wall time of `ralph run -n 200 --quiet --log-dir <tmp>` on a RALPH.md
  whose agent is `true` and whose one command (`echo hi`) feeds the body through
  `{{ commands.x }}`, divided by 200 (start-up included). The shell loop makes the same spawns per
  iteration: the `echo` executable ralph runs (`out=$(/usr/bin/echo hi)`), then `true` fed the
  prompt on stdin. ralph runs a command without shell syntax as its words, one exec of `echo`;
  the `sh -c` loop's row runs `out=$(sh -c 'echo hi')` instead, one exec of `sh` whose `echo` is a
  builtin: on this machine `/usr/bin/echo` (coreutils, which loads the locale) costs about
  0.2 ms more than `sh -c 'echo hi'` (dash), which until ralph 0.3's bench was the baseline and
  put that difference on ralph's side of the ratio. ralphify 0.3.0 is
  installed with pip into a scratch venv and runs the same RALPH.md with `-n 200 --log-dir <tmp>`.
  One warm-up run each, then the median of 11, the contenders taking turns run by run, each run
  after a `sync`: the kernel writes back a file's data about half a minute after it was written,
  and without it ralphify's logs were written back during ralph's next run (ralph 1.13x the shell
  loop in rounds with ralphify, 1.01x without it, the same binary). A run's own writeback comes
  after it, as for any run this short.
  What ralph does per iteration beyond the shell loop's spawns: each child is started with
  `posix_spawn` (a `vfork`, as the shell's own spawns; the C library's child then resets every
  signal's handler, about 120 `rt_sigaction` calls a spawn), carrying the run's token in its
  environment for the watchdog, and ralph registers its process group with the watchdog (an
  atomic store into memory the two share; until ralph 0.3 a record on a pipe, which woke the
  watchdog four times an iteration); on Linux the subreaper reads the children lists of ralph's own threads
  (`/proc/PID/task/TID/children`) when the iteration starts and when it ends; and the run
  folder gets the iteration's log and a copy of its prompt (a hard link to the last copy when
  the prompt did not change), each an empty file made ahead by a thread of ralph's own and
  linked under its name, its events in `events.jsonl` and one `session.json` write (off the
  loop's thread: a spare file, fsynced, swapped in; no file created or deleted). ralph keeps
  the memory an iteration frees for the next (glibc's `M_TRIM_THRESHOLD`), where the C
  library would give it back and fault it in again page by page. Until ralph 0.3 each child registered its group from a `pre_exec` hook instead,
  which made every spawn a `fork`: `perf stat` of `ralph run -n 200` (ralph and its children)
  went from about 600 ms of CPU and 71,000 page faults to about 480 ms and 30,000. `perf record`
  then put most of what was left in the kernel creating the run folder's files: on ext4 a new
  file's inode is searched for past every inode deleted in the last minutes, and each of the
  two session writes an iteration deleted one (a temporary file renamed over the old file).
  The session spare, one session write an iteration, linked prompt copies and the children
  lists took ralph's loop thread from about 300 system calls an iteration to about 160.
  Creating the iteration's log was then the loop thread's dearest call on a machine that also
  compiles (ext4 without a journal, as here, searches for a new inode past every inode
  deleted in the last half minute): made ahead on another thread, the loop thread's CPU in
  `ralph run -n 200` went from 380–410 ms to 170–190 ms under that load
  (`perf stat --no-inherit -e task-clock`), and keeping freed memory took its page faults
  from about 2,800 to 390.
- **Sandbox cost per iteration**: the overhead row's RALPH.md run with `-n 200 --quiet` and
  `--sandbox` (every default: Landlock rules built once, applied in each child between fork
  and exec, the proxy started), against `--no-sandbox`, the two taking turns; median of 5 runs
  after one warm-up each, the difference divided by 200. A machine without Landlock skips it.
- **Size of the release binary**: the bytes of `target/release/ralph` as built by the release
  profile (LTO, one codegen unit, symbols stripped), the file `cargo install` and the release
  archives ship.
- **Start-up**: median wall time of 50 runs (after 3 warm-ups) of `ralph --version` and of
  `ralph check` on the README's example RALPH.md.
- **Peak RSS and throughput**: the agent is a shell script printing 1 GiB (`yes` with 80-byte
  lines, or `head -c 1073741824 /dev/zero | tr '\\0' x`); ralph runs it with
  `run -n 1 --quiet` and writes it all to its iteration log (checked to hold 1 GiB). Peak RSS is
  ralph's own `VmHWM` from `/proc/<pid>/status`, sampled every 10 ms: `wait4`'s `ru_maxrss` would
  include the agent. Throughput is 1 GiB over ralph's wall time, against the same script piped
  through `cat` into a file in the same directory. Median of 3 runs; the highest peak.
- **Marker scanning**: `cargo run --release -p ralph-marker --example throughput`, which feeds the
  scanner in 64 KiB chunks from a 32 MiB buffer.
- **Idle wait accuracy**: an agent that always prints `<!-- ralph:state idle -->`, run with
  `-n 5 --events <file>`; each wait runs from its `WAIT_STARTED` event to the next
  `ITERATION_STARTED` (ralph's millisecond timestamps), its error is that minus `delay_ms`.
- **CPU during a wait**: the CPU time the scheduler charged to ralph's threads
  (`/proc/<pid>/task/*/schedstat`, in ns), read when the `WAIT_STARTED` event of a 5 s idle wait
  appears in the events file and again at the next `ITERATION_STARTED`. It includes the
  countdown's once-a-second wake-ups and the start of the next iteration up to that read.
- **Second Ctrl+C**: SIGINT to ralph once the agent runs, SIGINT again once `STOP_REQUESTED` is in
  the events file, then the time until ralph has exited and `/proc` holds no live process of the
  agent's group. 5 runs.
- **`--parallel 32`**: a repository of 32 prd.json stories whose agent sleeps 30 s then writes
  its story's file, one `done_when` check (`ls S-*.txt`); `ralph run --parallel 32 --quiet
  --events <file>`. Start: from `PARALLEL_STARTED` to the 32nd `LANE_STARTED` (each a `git
  worktree add` and a loop started). CPU: ralph's user and system time (`/proc/<pid>/stat`,
  exited threads included) over 20 s once every agent runs, divided by the 20 s. Peak
  RSS: ralph's own `VmHWM`, sampled every 10 ms until it exits after landing all 32. Landing:
  the first `MERGE_STARTED` to the last `TASK_LANDED`. One run.
";

/// Runs every measurement, prints the report and writes it to `docs/benchmarks.md`.
pub(crate) fn run(root: &Path) -> Result<()> {
    let started = Instant::now();
    match harness::library_path_of_the_user() {
        // SAFETY: no other thread runs yet; every program the bench starts inherits the result.
        Some(path) => unsafe { std::env::set_var("LD_LIBRARY_PATH", path) },
        None => unsafe { std::env::remove_var("LD_LIBRARY_PATH") },
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ctx = Ctx {
        // `Ctx::cargo` builds in the default target folder, where a fresh clone's binary is.
        ralph: root.join("target").join("release").join("ralph"),
        root: root.to_path_buf(),
        cargo,
    };
    let machine = machine::describe(root);
    eprintln!("bench: cargo build --release -p ralph-loop");
    let status = ctx
        .cargo()
        .args(["build", "--release", "-p", "ralph-loop"])
        .status()
        .map_err(|err| format!("cannot run cargo: {err}"))?;
    if !status.success() {
        return Err(format!("cargo build --release -p ralph-loop: {status}"));
    }

    let mut rows = Vec::new();
    rows.extend(overhead::measure(&ctx));
    rows.extend(sandbox::measure(&ctx));
    rows.extend(startup::measure(&ctx));
    rows.extend(memory::measure(&ctx));
    rows.extend(marker::measure(&ctx));
    rows.extend(waits::measure(&ctx));
    rows.extend(signals::measure(&ctx));
    rows.extend(parallel::measure(&ctx));

    let header = format!(
        "Measured with `{COMMAND}` on {date}.\n\n\
         - Machine: {cpu}, {cores} cores, {memory} memory, {kernel}; load average {load} \
         at the start\n\
         - Build: ralph at {commit}, {rustc}, release profile\n",
        date = machine.date,
        cpu = machine.cpu,
        cores = machine.cores,
        memory = machine.memory,
        kernel = machine.kernel,
        load = machine.load,
        commit = machine.commit,
        rustc = machine.rustc,
    );
    let table = table::render(&rows);
    println!("{header}\n{table}");

    let report = format!("# Benchmarks\n\n{header}\n{table}\n{METHOD}");
    let path = root.join(REPORT);
    // Written aside and renamed, so an interrupted bench never leaves half a report.
    let partial = path.with_extension("md.tmp");
    harness::write(&partial, &report)?;
    fs::rename(&partial, &path).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    eprintln!(
        "bench: wrote {REPORT} in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
