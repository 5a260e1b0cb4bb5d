//! Odd but reachable inputs a hostile tester found (Trust 0.4, item 17): each gets a working
//! run or an error that says what is wrong.

use crate::common;

use common::{Project, code, stderr};

/// Run folders written beside the work (`--log-dir .`) are no work of the agent's: a later
/// story run's clean-tree check does not take them for changes.
#[test]
fn a_log_dir_in_the_checkout_does_not_refuse_the_next_run() {
    let p = common::parallel::repo(
        "echo work >> \"$(cat | grep -o 'STORY=[A-Z0-9-]*' | cut -d= -f2).txt\"\n",
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    let first = p.run(&["run", "--log-dir", ".", "-n", "1"]);
    assert_eq!(code(&first), 1, "one story left: {}", stderr(&first));
    assert_eq!(common::git(p.path(), &["status", "--porcelain"]), "");
    let second = p.run(&["run", "--log-dir", "."]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(p.run_ended()["reason"], "stories_done");
}

/// A number of seconds too large for a duration is said to be so, with the bound; `1e308` is
/// finite, and was said not to be.
#[test]
fn a_duration_too_large_names_the_bound() {
    let p = Project::new("agent: echo hi\ndelay: 1e308", "x\n");
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains(
            "delay: expected a number of seconds from 0 to 18446744073709551615, got 1e308"
        ),
        "{said}"
    );
    assert!(!said.contains("finite"), "{said}");
}

/// `ralph report` without `-o` writes into the run's own folder, where git never sees it: a
/// report beside the work was committed by the next story's pass.
#[test]
fn a_report_written_by_default_is_not_committed_by_the_next_pass() {
    let p = common::parallel::repo(
        "echo work >> \"$(cat | grep -o 'STORY=[A-Z0-9-]*' | cut -d= -f2).txt\"\n",
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    let first = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&first), 1, "one story left: {}", stderr(&first));
    let report = p.run(&["report"]);
    assert_eq!(code(&report), 0, "{}", stderr(&report));
    let said = common::stdout(&report);
    assert!(
        said.contains(".ralph/runs/") && said.contains("report.html"),
        "{said}"
    );
    let second = p.run(&["run", "--resume", "-n", "2"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let committed = common::git(p.path(), &["log", "--name-only", "--format="]);
    assert!(!committed.contains("report"), "{committed}");
    assert_eq!(common::git(p.path(), &["status", "--porcelain"]), "");
}
