//! `ralph check`, `--version` and `--help`: what a user sees, pinned as snapshots.

use crate::common;

use std::process::Command;

use common::{code, fixtures, stderr, stdout};

fn ralph(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ralph"))
        .args(args)
        .current_dir(fixtures().join(".."))
        .env_remove("NO_COLOR")
        .output()
        .expect("ralph runs")
}

#[test]
fn check_summarises_a_valid_file() {
    let out = ralph(&["check", "fixtures/ralph-md/valid-every-field.md"]);
    // Its prd.json is not there: the run would refuse to start, and check says so.
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("escalation.prd: prd.json: cannot read"),
        "{}",
        stderr(&out)
    );
    insta::assert_snapshot!(stdout(&out));
}

#[test]
fn check_accepts_a_directory_holding_ralph_md() {
    let out = ralph(&["check", "fixtures/demo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("fixtures/demo/RALPH.md: ok\n"));
}

#[test]
fn check_runs_ralphify_files_unchanged() {
    let out = ralph(&["check", "fixtures/ralph-md/valid-ralphify-template.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn check_reports_every_error_with_its_position_and_exits_2() {
    let out = ralph(&["check", "fixtures/ralph-md/err-several-errors.md"]);
    assert_eq!(code(&out), 2);
    assert_eq!(stdout(&out), "", "nothing on stdout for an invalid file");
    insta::assert_snapshot!(stderr(&out));
}

#[test]
fn check_suggests_the_nearest_key() {
    let out = ralph(&["check", "fixtures/ralph-md/err-unknown-key-suggestion.md"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("did you mean"), "{}", stderr(&out));
}

#[test]
fn check_prints_warnings_and_still_passes() {
    let out = ralph(&["check", "fixtures/ralph-md/valid-placeholder-warnings.md"]);
    assert_eq!(code(&out), 0);
    // Whether Claude Code is installed here is the machine's business, not the file's.
    let placeholder_warnings: String = stderr(&out)
        .lines()
        .filter(|l| !l.contains("`claude` is not found on PATH"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(placeholder_warnings);
}

#[test]
fn check_of_a_missing_file_is_a_clear_error() {
    let out = ralph(&["check", "fixtures/no-such-dir/RALPH.md"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        "ralph: fixtures/no-such-dir/RALPH.md: no such file (give a RALPH.md or a directory holding one)\n"
    );
}

#[test]
fn run_with_an_invalid_file_runs_nothing_and_exits_2() {
    let out = ralph(&["run", "fixtures/ralph-md/err-missing-agent.md"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).starts_with("error: fixtures/ralph-md/err-missing-agent.md:1:1: agent:"));
}

#[test]
fn version_names_the_crate_version_and_the_commit_it_was_built_from() {
    let out = ralph(&["--version"]);
    assert_eq!(code(&out), 0);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap();
    assert_eq!(
        stdout(&out),
        format!(
            "ralph {} (commit {})\n",
            env!("CARGO_PKG_VERSION"),
            head.trim()
        )
    );
}

#[test]
fn help_documents_every_run_flag() {
    let out = ralph(&["run", "--help"]);
    assert_eq!(code(&out), 0);
    let help = stdout(&out);
    for flag in [
        "--max-iterations",
        "--delay",
        "--timeout",
        "--stop-on-error",
        "--log-dir",
        "--events",
        "--quiet",
        "--no-color",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[test]
fn bad_usage_exits_2() {
    let out = ralph(&["run", "-n", "0"]);
    assert_eq!(code(&out), 2);
}

/// `check` shows how the agent's output will be read, including the words ralph adds to a
/// `claude -p` command line, so the effective configuration holds no surprise.
#[test]
fn check_shows_how_the_agent_output_is_read() {
    for (agent, shown) in [
        (
            "claude -p",
            "  output          claude-stream-json (claude -p with no --output-format) · ralph adds \
             --output-format stream-json --verbose\n",
        ),
        (
            "cat",
            "  output          text (no JSON output format recognised on the agent line)\n",
        ),
        (
            "claude -p --output-format stream-json --verbose",
            "  output          claude-stream-json (the agent line runs claude --output-format \
             stream-json)\n",
        ),
        (
            "claude -p\noutput: text",
            "  output          text (output: text in RALPH.md)\n",
        ),
        (
            "codex exec --json",
            "  output          codex-json (the agent line runs codex exec --json)\n",
        ),
    ] {
        let project = common::Project::new(&format!("agent: {agent}"), "hi");
        let out = project.run(&["check"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).contains(shown), "{agent}: {}", stdout(&out));
    }
}

/// An `idle` block without `max` never ends the loop; the summary says so in words.
#[test]
fn check_says_when_idle_never_stops_the_loop() {
    let project = common::Project::new("agent: cat\nidle:", "<!-- ralph:state idle -->");
    let out = project.run(&["check"]);
    assert!(
        stdout(&out)
            .contains("  idle            wait 30s ×2 up to 5m · never stops (no idle.max)\n"),
        "{}",
        stdout(&out)
    );
}

/// `ralph check` runs the checks `ralph run` starts with: what the run would refuse, it says,
/// exit 1, where a plain look at the file would say "ok".
#[test]
fn check_says_what_the_run_would_refuse_and_exits_1() {
    // A dirty tree in story mode with revert.
    let project = common::story_repo("echo hi\n", &["one"]);
    std::fs::write(project.path().join("notes.txt"), "mine\n").unwrap();
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(!stdout(&out).contains(": ok"), "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with("RALPH.md: valid, but `ralph run` would refuse to start\n"),
        "{}",
        stdout(&out)
    );
    let said = stderr(&out);
    assert!(
        said.contains("error: RALPH.md:") && said.contains("uncommitted changes (notes.txt)"),
        "{said}"
    );
    let run = project.run(&["run", "-n", "1"]);
    assert_eq!(code(&run), 2, "and the run does refuse");

    // Once committed, all is well.
    common::commit_all(project.path(), "notes");
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("RALPH.md: ok\n"));

    // No git at all.
    let project = common::Project::new("agent: cat\nescalation:\n  revert: true", "x\n");
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("not a git repository"),
        "{}",
        stderr(&out)
    );
}
