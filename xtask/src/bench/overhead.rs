//! Per-iteration overhead: `ralph run -n 200` with a trivial agent and one command, against a
//! shell loop making the same process spawns (and one running the command through `sh -c`), and
//! against ralphify 0.3.0.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::harness::{self, Ctx, Result};
use super::table::Row;

const ITERATIONS: u32 = 200;
/// Timed runs per contender, after one warm-up run; the median is reported.
const RUNS: usize = 11;
const RALPHIFY: &str = "ralphify==0.3.0";

const VS_SHELL: &str = "Per-iteration overhead, `-n 200`, agent `true`, 1 command: vs a shell loop";
const VS_SHELL_C: &str =
    "Per-iteration overhead, same run: vs a shell loop running the command through `sh -c`";
const VS_RALPHIFY: &str = "Per-iteration overhead, same RALPH.md: vs ralphify 0.3.0";
const SHELL_TARGET: &str = "≤ 1.1x the shell loop";
/// The most ralph may take, as a multiple of the shell loop's time.
const SHELL_LIMIT: f64 = 1.1;
const RALPHIFY_TARGET: &str = "≥ 3x faster than ralphify";

/// Measures the two overhead rows.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    match measure_all(ctx) {
        Ok(rows) => rows,
        Err(why) => vec![
            Row::skipped(VS_SHELL, SHELL_TARGET, &why),
            Row::skipped(VS_SHELL_C, "–", &why),
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

    // Per iteration: the command's process, its output captured, then one agent process fed
    // the prompt on stdin. ralph runs a command without shell syntax as its words, so the same
    // spawn in the shell loop is the same `echo` executable, not the shell's builtin.
    let echo_bin = harness::find_in_path("echo").ok_or("no `echo` executable in PATH")?;
    let mut shell = shell_loop(&format!("{} hi", harness::quoted(&echo_bin)), &true_bin);
    // The loop as it is often written: the command through `sh -c`, whose `echo` is a builtin
    // of the shell (one exec of `sh`, where ralph's spawn execs `echo`).
    let mut shell_c = shell_loop("sh -c 'echo hi'", &true_bin);

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
    let mut shell_c_ms = Vec::new();
    let mut ralphify_ms = Vec::new();
    // Round-robin, so that a slow spell of the machine falls on all contenders alike.
    for run in 0..=RUNS {
        let warm_up = run == 0;
        harness::settle();
        let r = harness::timed(&mut ralph)?;
        harness::settle();
        let s = harness::timed(&mut shell)?;
        harness::settle();
        let c = harness::timed(&mut shell_c)?;
        if let Ok(cmd) = &mut ralphify {
            harness::settle();
            match harness::timed(cmd) {
                Ok(t) if !warm_up => ralphify_ms.push(per_iteration(t)),
                Ok(_) => {}
                Err(why) => ralphify = Err(format!("ralphify failed: {why}")),
            }
        }
        if !warm_up {
            ralph_ms.push(per_iteration(r));
            shell_ms.push(per_iteration(s));
            shell_c_ms.push(per_iteration(c));
        }
    }
    let ralph = harness::median(&mut ralph_ms);
    let shell = harness::median(&mut shell_ms);
    let shell_c = harness::median(&mut shell_c_ms);
    let ralph_cell = format!("{ralph:.2} ms/iteration");
    let mut rows = vec![Row::measured(
        VS_SHELL,
        ralph_cell.clone(),
        format!(
            "shell loop: {shell:.2} ms/iteration (ralph takes {:.2}x its time, {:+.2} ms)",
            ralph / shell,
            ralph - shell
        ),
        SHELL_TARGET,
        Some(ralph <= SHELL_LIMIT * shell),
    )];
    rows.push(Row::measured(
        VS_SHELL_C,
        ralph_cell.clone(),
        format!(
            "`sh -c` loop: {shell_c:.2} ms/iteration (ralph takes {:.2}x its time, {:+.2} ms)",
            ralph / shell_c,
            ralph - shell_c
        ),
        "–",
        None,
    ));
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

/// `sh -c` running ITERATIONS times: `out=$(COMMAND)`, then the prompt made from `out` piped
/// into `agent`.
fn shell_loop(command: &str, agent: &Path) -> Command {
    let script = format!(
        "i=0; while [ \"$i\" -lt {ITERATIONS} ]; do out=$({command}); \
         printf 'The command said: %s\\n' \"$out\" | {}; i=$((i+1)); done",
        harness::quoted(agent)
    );
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    shell
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
