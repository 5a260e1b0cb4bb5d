//! Odd but reachable inputs a hostile tester found (Trust 0.4, item 17): each gets a working
//! run or an error that says what is wrong.

mod common;

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
