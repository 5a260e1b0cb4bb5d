//! Per-iteration overhead: `ralph run -n 200` with a trivial agent and one command, against a
//! shell loop making the same process spawns, and against ralphify 0.3.0.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::harness::{self, Ctx, Result};
use super::table::Row;

const ITERATIONS: u32 = 200;
/// Timed runs per contender, after one warm-up run; the median is reported.
const RUNS: usize = 7;
const RALPHIFY: &str = "ralphify==0.3.0";

const VS_SHELL: &str = "Per-iteration overhead, `-n 200`, agent `true`, 1 command: vs a shell loop";
const VS_RALPHIFY: &str = "Per-iteration overhead, same RALPH.md: vs ralphify 0.3.0";
const SHELL_TARGET: &str = "no slower than the shell loop";
const RALPHIFY_TARGET: &str = "≥ 3x faster than ralphify";

/// Measures the two overhead rows.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    match measure_all(ctx) {
        Ok(rows) => rows,
        Err(why) => vec![
            Row::skipped(VS_SHELL, SHELL_TARGET, &why),
            Row::skipped(VS_RALPHIFY, RALPHIFY_TARGET, &why),
        ],
    }
}

fn measure_all(ctx: &Ctx) -> Result<Vec<Row>> {
    let work = harness::scratch("overhead")?;
    let dir = work.path();
    // The agent is the same executable for ralph, ralphify and the shell loop: a shell's
    // builtin `true` would spare the loop the exec that the others pay.
    let true_bin = harness::find_in_path("true").ok_or("no `true` executable in PATH")?;
    harness::write_ralph_md(
        dir,
        &format!(
            "agent: {}\ncommands:\n  - name: x\n    run: echo hi\n",
            harness::quoted(&true_bin)
        ),
        "The command said: {{ commands.x }}\n",
    )?;

    let mut ralph = ctx.ralph_run(dir);
    ralph.arg("-n").arg(ITERATIONS.to_string());

    // Per iteration: one `sh -c` for the command, its output captured, then one agent process
    // fed the prompt on stdin.
    let script = format!(
        "i=0; while [ \"$i\" -lt {ITERATIONS} ]; do out=$(sh -c 'echo hi'); \
         printf 'The command said: %s\\n' \"$out\" | {}; i=$((i+1)); done",
        harness::quoted(&true_bin)
    );
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null());

    eprintln!("bench: installing {RALPHIFY} into a scratch venv");
    let venv = harness::scratch("ralphify")?;
    let mut ralphify = install_ralphify(venv.path()).map(|bin| {
        let mut cmd = Command::new(bin);
        cmd.arg("run")
            .arg(dir)
            .arg("-n")
            .arg(ITERATIONS.to_string())
            .arg("--log-dir")
            .arg(dir.join("ralphify-logs"))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd
    });

    eprintln!("bench: per-iteration overhead ({RUNS} runs of {ITERATIONS} iterations each)");
    let mut ralph_ms = Vec::new();
    let mut shell_ms = Vec::new();
    let mut ralphify_ms = Vec::new();
    // Round-robin, so that a slow spell of the machine falls on all contenders alike.
    for run in 0..=RUNS {
        let warm_up = run == 0;
        let r = harness::timed(&mut ralph)?;
        let s = harness::timed(&mut shell)?;
        if let Ok(cmd) = &mut ralphify {
            match harness::timed(cmd) {
                Ok(t) if !warm_up => ralphify_ms.push(per_iteration(t)),
                Ok(_) => {}
                Err(why) => ralphify = Err(format!("ralphify failed: {why}")),
            }
        }
        if !warm_up {
            ralph_ms.push(per_iteration(r));
            shell_ms.push(per_iteration(s));
        }
    }
    let ralph = harness::median(&mut ralph_ms);
    let shell = harness::median(&mut shell_ms);
    let ralph_cell = format!("{ralph:.2} ms/iteration");
    let mut rows = vec![Row::measured(
        VS_SHELL,
        ralph_cell.clone(),
        format!(
            "shell loop: {shell:.2} ms/iteration (ralph takes {:.2}x its time)",
            ralph / shell
        ),
        SHELL_TARGET,
        Some(ralph <= shell),
    )];
    rows.push(match ralphify {
        Ok(_) => {
            let ralphify = harness::median(&mut ralphify_ms);
            Row::measured(
                VS_RALPHIFY,
                ralph_cell,
                format!(
                    "ralphify 0.3.0: {ralphify:.2} ms/iteration (ralph {:.1}x faster)",
                    ralphify / ralph
                ),
                RALPHIFY_TARGET,
                Some(ralphify >= 3.0 * ralph),
            )
        }
        Err(why) => Row::skipped(VS_RALPHIFY, RALPHIFY_TARGET, &why),
    });
    Ok(rows)
}

/// Wall time of a whole run (process start-up included) per iteration, in ms.
fn per_iteration(total: std::time::Duration) -> f64 {
    harness::ms(total) / f64::from(ITERATIONS)
}

/// `python3 -m venv DIR` and `pip install ralphify==0.3.0` into it; returns its `ralph`.
fn install_ralphify(venv: &Path) -> Result<PathBuf> {
    harness::timed(Command::new("python3").args(["-m", "venv"]).arg(venv))
        .map_err(|why| format!("python3 -m venv unavailable ({why})"))?;
    harness::timed(
        Command::new(venv.join("bin").join("pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                RALPHIFY,
            ])
            // Fail in seconds rather than minutes without a network.
            .env("PIP_DEFAULT_TIMEOUT", "20")
            .stdout(Stdio::null()),
    )
    .map_err(|why| format!("pip install {RALPHIFY} failed ({why})"))?;
    Ok(venv.join("bin").join("ralph"))
}
