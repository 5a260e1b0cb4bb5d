//! The live status line: drawn on a terminal while the agent runs, never into piped output,
//! never with `--quiet`, and never into the middle of the agent's text.

use crate::common;

use common::{Project, code, run_on_terminal};

/// An agent that says something, keeps quiet for a while, then says something else.
const QUIET_AGENT: &str =
    "agent: sh -c 'cat >/dev/null; echo first-words; sleep 2; echo last-words'";

/// The agent's lines as they reached the screen: each must stand whole on a line of its own.
fn assert_agent_text_intact(screen: &str) {
    for words in ["first-words", "last-words"] {
        let whole_line = screen
            .split(['\n', '\r'])
            .any(|line| line.trim_start_matches("\u{1b}[2K") == words);
        assert!(whole_line, "{words} was cut into:\n{screen:?}");
    }
}

#[test]
fn on_a_terminal_the_status_line_counts_while_the_agent_is_quiet() {
    let p = Project::new(QUIET_AGENT, "x\n");
    let (screen, code) = run_on_terminal(&p, &["-n", "2"], &[]);
    assert_eq!(code, 0, "{screen}");
    // Redrawn while the agent is quiet: the count moves on without any output.
    assert!(screen.contains("iteration 1/2 · 1s"), "{screen:?}");
    assert!(screen.contains("last output 1s ago"), "{screen:?}");
    assert!(screen.contains("iteration 2/2 · "), "{screen:?}");
    assert!(screen.contains("last output "), "{screen:?}");
    assert_agent_text_intact(&screen);
    // Erased before the summary: the summary line is not preceded by a leftover status.
    let summary = screen.find("■ done:").expect("a summary");
    let before = screen[..summary].trim_end_matches("\u{1b}[1;32m");
    assert!(
        before.ends_with('\n') || before.ends_with("\u{1b}[2K"),
        "{screen:?}"
    );
}

#[test]
fn no_color_keeps_the_status_line_plain() {
    let p = Project::new(QUIET_AGENT, "x\n");
    let (screen, code) = run_on_terminal(&p, &["-n", "1"], &[("NO_COLOR", "1")]);
    assert_eq!(code, 0, "{screen}");
    let status = screen
        .split('\r')
        .find(|s| s.contains("iteration 1/1 ·"))
        .expect("a status line");
    assert!(
        !status.contains("\u{1b}[3") && !status.contains("\u{1b}[2m"),
        "{status:?}"
    );
}

#[test]
fn quiet_runs_show_no_status_line() {
    let p = Project::new(QUIET_AGENT, "x\n");
    let (screen, code) = run_on_terminal(&p, &["-n", "1", "--quiet"], &[]);
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("iteration 1/1"), "{screen:?}");
}

#[test]
fn piped_output_has_no_status_line() {
    let p = Project::new(QUIET_AGENT, "x\n");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0);
    let stdout = common::stdout(&out);
    assert!(stdout.contains("first-words\n"), "{stdout}");
    assert!(!stdout.contains("iteration 1/1"), "{stdout:?}");
    assert!(!stdout.contains('\r'), "{stdout:?}");
}

#[test]
fn the_header_names_the_run_folder_and_how_to_follow_it() {
    let p = Project::new(QUIET_AGENT, "x\n");
    let out = p.run(&["run", "-n", "1"]);
    let stdout = common::stdout(&out);
    let run_id = p.events()[0]["run_id"].as_str().unwrap().to_owned();
    let named = format!("logs: .ralph/runs/{run_id}/");
    assert_eq!(stdout.matches(&named).count(), 2, "{stdout}");
    let quiet = common::stdout(&p.run(&["run", "-n", "1", "--quiet"]));
    assert!(quiet.contains("logs: .ralph/runs/"), "{quiet}");
    assert!(stdout.contains("ralph logs -f"), "{stdout}");
}
