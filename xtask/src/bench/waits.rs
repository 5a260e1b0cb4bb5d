//! Idle waits: how far the actual waits stray from the scheduled ones, and what CPU ralph spends
//! while it waits.

use std::path::Path;
use std::time::Duration;

use super::harness::{self, Ctx, Result};
use super::table::Row;

const ACCURACY: &str = "Idle wait accuracy: `delay: 200ms, backoff: 2, max_delay: 1s`, `-n 5` \
                        (waits of 200, 400, 800, 1000 ms)";
const ACCURACY_TARGET: &str = "< 20 ms";
const CPU: &str = "CPU used by ralph during a 5 s idle wait";

/// An agent that always reports idle.
const IDLE_AGENT: &str = "agent: sh -c 'echo \"<!-- ralph:state idle -->\"'\n";

/// Measures wait accuracy and the CPU cost of waiting.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    eprintln!("bench: idle waits (about 8 s)");
    let accuracy = match accuracy(ctx) {
        Ok((max, mean)) => Row::measured(
            ACCURACY,
            format!("max error {max:.0} ms, mean {mean:.1} ms"),
            "–".to_owned(),
            ACCURACY_TARGET,
            Some(max < 20.0),
        ),
        Err(why) => Row::skipped(ACCURACY, ACCURACY_TARGET, &why),
    };
    let cpu = match cpu_while_waiting(ctx) {
        Ok(cpu_ms) => Row::measured(CPU, format!("{cpu_ms:.2} ms"), "–".to_owned(), "–", None),
        Err(why) => Row::skipped(CPU, "–", &why),
    };
    vec![accuracy, cpu]
}

/// Runs the backoff scenario; returns the largest and the mean error of the waits in ms.
///
/// A wait runs from its `WAIT_STARTED` event to the next `ITERATION_STARTED`; its error is that
/// span minus `delay_ms`. Timestamps are ralph's own, in whole milliseconds.
fn accuracy(ctx: &Ctx) -> Result<(f64, f64)> {
    let work = harness::scratch("waits")?;
    let dir = work.path();
    harness::write_ralph_md(
        dir,
        &format!("{IDLE_AGENT}idle:\n  delay: 200ms\n  backoff: 2\n  max_delay: 1s\n"),
        "Nothing to do.\n",
    )?;
    let events = dir.join("events.jsonl");
    harness::timed(
        ctx.ralph_run(dir)
            .args(["-n", "5", "--events"])
            .arg(&events),
    )?;
    let events = harness::read_events(&events)?;
    let mut errors = Vec::new();
    for (i, wait) in events.iter().enumerate() {
        if harness::event_type(wait) != "WAIT_STARTED" {
            continue;
        }
        let scheduled = wait["delay_ms"]
            .as_f64()
            .ok_or("WAIT_STARTED without delay_ms")?;
        let Some(next) = events[i..]
            .iter()
            .find(|e| harness::event_type(e) == "ITERATION_STARTED")
        else {
            continue;
        };
        let actual = harness::event_ts(next)?
            .duration_since(harness::event_ts(wait)?)
            .map_err(|_| "ITERATION_STARTED before its WAIT_STARTED")?;
        errors.push(harness::ms(actual) - scheduled);
    }
    if errors.is_empty() {
        return Err("the run had no wait followed by an iteration".to_owned());
    }
    let max = errors.iter().map(|e| e.abs()).fold(0.0, f64::max);
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    Ok((max, mean))
}

/// Runs two iterations with a 5 s idle wait between them and reads ralph's CPU time when the
/// wait starts and when the next iteration starts; returns the difference in ms.
fn cpu_while_waiting(ctx: &Ctx) -> Result<f64> {
    let work = harness::scratch("wait-cpu")?;
    let dir = work.path();
    harness::write_ralph_md(
        dir,
        &format!("{IDLE_AGENT}idle:\n  delay: 5s\n"),
        "Nothing to do.\n",
    )?;
    let events = dir.join("events.jsonl");
    let mut child = ctx.spawn_run(dir, 2, &events)?;
    let measured = cpu_between_events(&mut child, &events);
    if measured.is_err() {
        harness::abandon(&mut child);
    } else {
        let _ = child.wait();
    }
    Ok(measured? as f64 / 1e6)
}

/// ralph's CPU time in ns from its `WAIT_STARTED` event to the next `ITERATION_STARTED`.
fn cpu_between_events(child: &mut std::process::Child, events: &Path) -> Result<u64> {
    let mut tail = harness::EventTail::new(events.to_path_buf());
    let unreadable = || "cannot read ralph's /proc/<pid>/task/*/schedstat".to_owned();
    tail.wait_for("WAIT_STARTED", child, Duration::from_secs(10))?;
    let at_start = harness::cpu_ns(child.id()).ok_or_else(unreadable)?;
    tail.wait_for("ITERATION_STARTED", child, Duration::from_secs(10))?;
    let at_end = harness::cpu_ns(child.id()).ok_or_else(unreadable)?;
    Ok(at_end.saturating_sub(at_start))
}
