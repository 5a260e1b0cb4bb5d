//! Start-up: `ralph --version` and `ralph check` on a typical RALPH.md, each the median of many
//! runs; and the size of the binary that starts.

use std::process::{Command, Stdio};

use super::harness::{self, Ctx, Result};
use super::table::Row;

const RUNS: usize = 50;
const WARM_UPS: usize = 3;
const TARGET: &str = "< 5 ms";

/// The README's example: a command, idle handling and a templated body.
const TYPICAL: &str = "agent: claude -p
commands:
  - name: tests
    run: cargo test 2>&1 | tail -20
idle:
  delay: 30s
  max: 6h
";
const BODY: &str = "Fix the failing tests. Test output:

{{ commands.tests }}

When everything passes and nothing is left to do, end with <!-- ralph:state idle -->
";

/// Measures `ralph --version` and `ralph check`.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    eprintln!("bench: start-up ({RUNS} runs each)");
    let version = format!("Start-up: `ralph --version`, median of {RUNS}");
    let check = format!("Start-up: `ralph check` on the README's RALPH.md, median of {RUNS}");
    let work = match harness::scratch("startup") {
        Ok(work) => work,
        Err(why) => {
            return vec![
                Row::skipped(&version, TARGET, &why),
                Row::skipped(&check, TARGET, &why),
            ];
        }
    };
    let written = harness::write_ralph_md(work.path(), TYPICAL, BODY);
    let mut version_cmd = Command::new(&ctx.ralph);
    version_cmd.arg("--version");
    let mut check_cmd = Command::new(&ctx.ralph);
    check_cmd.arg("check").arg(work.path());
    vec![
        binary_size(ctx),
        row(&version, median_ms(&mut version_cmd)),
        row(&check, written.and_then(|()| median_ms(&mut check_cmd))),
    ]
}

/// The release binary's size on disk, as `cargo install` and the release archives ship it.
fn binary_size(ctx: &Ctx) -> Row {
    const MEASUREMENT: &str = "Size of the release binary (`target/release/ralph`)";
    const LIMIT: &str = "< 8 MB";
    match std::fs::metadata(&ctx.ralph) {
        Ok(meta) => {
            let mb = meta.len() as f64 / 1_000_000.0;
            Row::measured(
                MEASUREMENT,
                format!("{mb:.1} MB"),
                "–".to_owned(),
                LIMIT,
                Some(mb < 8.0),
            )
        }
        Err(err) => Row::skipped(
            MEASUREMENT,
            LIMIT,
            &format!("{}: {err}", ctx.ralph.display()),
        ),
    }
}

fn row(measurement: &str, result: Result<f64>) -> Row {
    match result {
        Ok(ms) => Row::measured(
            measurement,
            format!("{ms:.2} ms"),
            "–".to_owned(),
            TARGET,
            Some(ms < 5.0),
        ),
        Err(why) => Row::skipped(measurement, TARGET, &why),
    }
}

fn median_ms(cmd: &mut Command) -> Result<f64> {
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..WARM_UPS + RUNS {
        let t = harness::timed(cmd)?;
        if run >= WARM_UPS {
            times.push(harness::ms(t));
        }
    }
    Ok(harness::median(&mut times))
}
