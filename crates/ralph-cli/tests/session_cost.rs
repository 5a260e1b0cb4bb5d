//! A Claude session that goes on over several iterations (`claude -p --continue`) reports each
//! invocation's own cost (Claude Code 2.1, seen in `real_claude.rs`): every reader of a run's
//! cost (`ralph runs`, `ralph report`, the live status line) adds the iterations up, and says
//! what `RUN_ENDED.cost_usd` says.

use crate::common;

use std::path::PathBuf;
use std::process::{Output, Stdio};

use common::{Project, code, fixtures};
use serde_json::Value;

/// Every iteration replays `normal.jsonl`: one session, each run of it costing 0.1873245.
const RUN_COST: f64 = 0.1873245;

/// Three runs of the session.
const THREE_RUNS: f64 = 0.5619735;

/// A directory holding a fake `claude` that prints `normal.jsonl` (one session) and then
/// stays `linger` seconds, so a status line has time to show.
fn fake_claude(p: &Project, linger: &str) -> PathBuf {
    let bin = p.path().join(".fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("claude");
    let fixture = fixtures()
        .join("claude/normal.jsonl")
        .canonicalize()
        .unwrap();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat >/dev/null\ncat '{}'\nsleep {linger}\n",
            fixture.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn path_with(bin: PathBuf) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    std::env::join_paths(dirs).unwrap()
}

fn project() -> Project {
    Project::new(
        "agent: claude -p\nidle: {delay: 10ms}",
        "Fix the next item.\n",
    )
}

/// `ralph ARGS` with the fake `claude` first on PATH.
fn ralph(p: &Project, args: &[&str]) -> Output {
    p.ralph(args)
        .env("PATH", path_with(fake_claude(p, "0")))
        .stdin(Stdio::null())
        .output()
        .expect("ralph runs")
}

/// A three-iteration run of one Claude session; returns its `RUN_ENDED.cost_usd`.
fn three_iterations(p: &Project) -> f64 {
    let out = ralph(p, &["run", "-n", "3"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 3);
    for e in &ended {
        assert_eq!(e["usage"]["cost_usd"], RUN_COST, "{e}");
        assert!(e["usage"].get("cost_is_session_total").is_none(), "{e}");
    }
    let cost = p.run_ended()["cost_usd"]
        .as_f64()
        .expect("RUN_ENDED.cost_usd");
    assert_eq!(cost, THREE_RUNS);
    cost
}

fn runs_json_cost(p: &Project) -> Value {
    let out = ralph(p, &["runs", "--json"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let runs: Value = serde_json::from_str(&common::stdout(&out)).expect("JSON");
    runs[0]["cost_usd"].clone()
}

#[test]
fn runs_json_adds_up_the_runs_of_a_claude_session_that_goes_on() {
    let p = project();
    let cost = three_iterations(&p);
    assert_eq!(runs_json_cost(&p), cost);

    // Killed before RUN_ENDED: the cost is rebuilt from the iterations, by the engine's rule.
    let runs = p.path().join(".ralph/runs");
    let run = std::fs::read_dir(&runs).unwrap().next().unwrap().unwrap();
    let events = run.path().join("events.jsonl");
    let text = std::fs::read_to_string(&events).unwrap();
    let killed: String = text
        .lines()
        .filter(|l| !l.contains(r#""type":"RUN_ENDED""#))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(killed, text);
    std::fs::write(&events, killed).unwrap();
    assert_eq!(runs_json_cost(&p), cost);
}

#[test]
fn the_report_total_and_bars_add_up_the_runs_of_a_claude_session_that_goes_on() {
    let p = project();
    let cost = three_iterations(&p);
    let out = ralph(&p, &["report", "-o", "report.html"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let html = std::fs::read_to_string(p.path().join("report.html")).unwrap();
    assert!(
        html.contains(&format!("<b>${cost:.2}</b> in all")),
        "no total of ${cost:.2}"
    );
    // Each iteration's bar is what it added to the run's cost: its own.
    let bars: Vec<&str> = html
        .split("<title>iteration ")
        .skip(1)
        .filter_map(|s| s.split("</title>").next())
        .filter(|s| s.contains('$'))
        .collect();
    assert_eq!(bars, ["1: $0.19", "2: $0.19", "3: $0.19"]);
}

/// `ralph run ARGS` on a terminal of its own, the fake `claude` lingering a second after its
/// answer; returns everything written there.
fn run_with_claude_on_terminal(p: &Project, args: &[&str]) -> String {
    let path = path_with(fake_claude(p, "1"));
    let path = path.to_str().expect("a UTF-8 PATH");
    let (text, code) = common::run_on_terminal(p, args, &[("PATH", path), ("NO_COLOR", "1")]);
    assert_eq!(code, 0, "{text}");
    text
}

#[test]
fn the_status_line_adds_up_the_runs_of_a_claude_session_that_goes_on() {
    let p = project();
    let screen = run_with_claude_on_terminal(&p, &["-n", "3"]);
    let cost = p.run_ended()["cost_usd"]
        .as_f64()
        .expect("RUN_ENDED.cost_usd");
    assert_eq!(cost, THREE_RUNS);
    // While iteration 3 runs, the line shows the cost of iterations 1 and 2.
    let two_runs = 2.0 * RUN_COST;
    let third: Vec<&str> = screen
        .split(['\r', '\n'])
        .filter(|s| s.contains("iteration 3/3"))
        .collect();
    assert!(!third.is_empty(), "{screen:?}");
    for line in third {
        assert!(line.contains(&format!("${two_runs:.2}")), "{line:?}");
    }
}
