//! Stopping: the time from the second SIGINT to ralph's exit with the agent's whole process group
//! gone.

use std::path::Path;
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use super::harness::{self, Ctx, Result};
use super::table::Row;

const RUNS: usize = 5;
const NAME: &str = "Second Ctrl+C to ralph exited and the agent's process group gone \
                    (agent: `sh` with a `sleep 30` child and a background `sleep 30`)";

/// The agent: a group of three processes, one of them in the background (where a
/// non-interactive shell ignores SIGINT). The pid file is written last, by rename, so that once
/// it exists the whole group is running.
const AGENT: &str = "sleep 30 &
echo $$ > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"
sleep 30
wait
";

/// Measures the stop latency over a few runs.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    eprintln!("bench: stopping on the second SIGINT ({RUNS} runs)");
    let mut times = Vec::new();
    for _ in 0..RUNS {
        match stop_once(ctx) {
            Ok(t) => times.push(harness::ms(t)),
            Err(why) => return vec![Row::skipped(NAME, "–", &why)],
        }
    }
    let max = times.iter().copied().fold(0.0, f64::max);
    vec![Row::measured(
        NAME,
        format!(
            "median {:.1} ms, max {max:.1} ms over {RUNS} runs",
            harness::median(&mut times)
        ),
        "–".to_owned(),
        "–",
        None,
    )]
}

fn stop_once(ctx: &Ctx) -> Result<Duration> {
    let work = harness::scratch("signals")?;
    let dir = work.path();
    let script = dir.join("agent.sh");
    let pid_file = dir.join("agent.pid");
    harness::write(&script, AGENT)?;
    harness::write_ralph_md(
        dir,
        &format!(
            "agent: sh {} {}\n",
            harness::quoted(&script),
            harness::quoted(&pid_file)
        ),
        "Take your time.\n",
    )?;
    let events = dir.join("events.jsonl");
    let mut child = ctx.spawn_run(dir, 1, &events)?;
    let mut pgid = None;
    let result = interrupt_twice(&mut child, &events, &pid_file, &mut pgid);
    if result.is_err() {
        harness::abandon(&mut child);
        // The agent's group is ours too: it was started for this measurement.
        if let Some(pgid) = pgid {
            // SAFETY: kill(2) only sends a signal, to the group this run created.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
    result
}

/// SIGINT once the agent runs; SIGINT again once ralph reports `STOP_REQUESTED`; then the time
/// until ralph has exited and no live process of the agent's group remains.
fn interrupt_twice(
    child: &mut Child,
    events: &Path,
    pid_file: &Path,
    pgid: &mut Option<i32>,
) -> Result<Duration> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let agent = loop {
        if let Some(pid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            break pid;
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("ralph exited ({status}) before the agent started"));
        }
        if Instant::now() > deadline {
            return Err("the agent did not start within 10 s".to_owned());
        }
        thread::sleep(Duration::from_millis(1));
    };
    // ralph starts each agent in a process group of its own, led by the agent.
    *pgid = Some(agent);

    let mut tail = harness::EventTail::new(events.to_path_buf());
    harness::send_signal(child.id(), libc::SIGINT)?;
    tail.wait_for("STOP_REQUESTED", child, Duration::from_secs(5))?;

    let start = Instant::now();
    harness::send_signal(child.id(), libc::SIGINT)?;
    let mut exited = false;
    loop {
        if !exited {
            exited = child
                .try_wait()
                .map_err(|err| format!("waiting for ralph: {err}"))?
                .is_some();
        }
        if exited && !harness::group_alive(agent) {
            return Ok(start.elapsed());
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Err("ralph or its agent still running 10 s after the second SIGINT".to_owned());
        }
        thread::sleep(Duration::from_micros(200));
    }
}
