//! The sandbox's cost per iteration: the overhead row's run (`-n 200`, agent `true`, one
//! command) with `--sandbox` against the same run without it.

use super::harness::{self, Ctx, Result};
use super::table::Row;

const ITERATIONS: u32 = 200;
/// Timed runs each, after one warm-up run; the median is reported.
const RUNS: usize = 5;
const MEASUREMENT: &str = "Sandbox cost per iteration, `-n 200`, agent `true`, 1 command: \
                           `--sandbox` vs none";
const TARGET: &str = "< 0.5 ms/iteration";
/// The most the sandbox may add to an iteration, in ms.
const LIMIT_MS: f64 = 0.5;

/// Measures the row; a machine without Landlock gets a "skipped" row.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    vec![measure_row(ctx).unwrap_or_else(|why| Row::skipped(MEASUREMENT, TARGET, &why))]
}

fn measure_row(ctx: &Ctx) -> Result<Row> {
    let work = harness::scratch("sandbox")?;
    let dir = work.path();
    let true_bin = harness::find_in_path("true").ok_or("no `true` executable in PATH")?;
    harness::write_ralph_md(
        dir,
        &format!(
            "agent: {}\ncommands:\n  - name: x\n    run: echo hi\n",
            harness::quoted(&true_bin)
        ),
        "The command said: {{ commands.x }}\n",
    )?;
    let run = |sandbox: bool| {
        let mut cmd = ctx.ralph_run(dir);
        cmd.arg("-n").arg(ITERATIONS.to_string());
        cmd.arg(if sandbox { "--sandbox" } else { "--no-sandbox" });
        cmd
    };
    let (mut plain, mut sandboxed) = (run(false), run(true));
    eprintln!("bench: sandbox cost ({RUNS} runs of {ITERATIONS} iterations each way)");
    let (mut plain_ms, mut sandboxed_ms) = (Vec::new(), Vec::new());
    for round in 0..=RUNS {
        harness::settle();
        let p = harness::timed(&mut plain)?;
        harness::settle();
        let s = harness::timed(&mut sandboxed)
            .map_err(|why| format!("--sandbox cannot run here ({why})"))?;
        if round > 0 {
            plain_ms.push(harness::ms(p) / f64::from(ITERATIONS));
            sandboxed_ms.push(harness::ms(s) / f64::from(ITERATIONS));
        }
    }
    let plain = harness::median(&mut plain_ms);
    let sandboxed = harness::median(&mut sandboxed_ms);
    let added = sandboxed - plain;
    Ok(Row::measured(
        MEASUREMENT,
        format!("{added:+.2} ms/iteration"),
        format!("{sandboxed:.2} ms/iteration with the sandbox, {plain:.2} without"),
        TARGET,
        Some(added < LIMIT_MS),
    ))
}
