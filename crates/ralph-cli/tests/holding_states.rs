//! A declared state with `then: hold`: no agent runs while its `run` check fails, checked every
//! `poll`; once it passes, the loop goes on. A review costs one agent run, not one per look.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;

use common::{Project, code};

/// An agent that asks for a review on its first run and is done on the next; each run is a
/// line in `runs.txt`.
fn project(states: &str) -> Project {
    let p = Project::new("agent: x", "x\n");
    let agent = p.path().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat >/dev/null\necho run >> runs.txt\n\
         if [ \"$(wc -l < runs.txt)\" -eq 1 ]; then echo '<!-- ralph:state review -->'; \
         else echo '<!-- ralph:state done -->'; fi\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\nagent: {}\n{states}\n---\nx\n", agent.display()),
    )
    .unwrap();
    p
}

fn agent_runs(p: &Project) -> usize {
    std::fs::read_to_string(p.path().join("runs.txt"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn a_held_state_runs_no_agent_until_its_check_passes() {
    let p =
        project("states:\n  review:\n    run: test -f APPROVED\n    then: hold\n    poll: 20ms");
    let mut child = p.spawn(&["run", "."]);
    // Several failing checks, and still the one agent run.
    p.wait_for("STATE_HANDLED", 4);
    assert_eq!(agent_runs(&p), 1);
    std::fs::write(p.path().join("APPROVED"), "lgtm\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    assert_eq!(agent_runs(&p), 2, "the run after the hold, and no other");
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "agent_done");
    assert_eq!(ended["iterations"], 2);
    let handled = p.events_of("STATE_HANDLED");
    assert!(
        handled
            .iter()
            .all(|e| e["then"] == "hold" && e["iteration"] == 1)
    );
    let exits: Vec<i64> = handled
        .iter()
        .map(|e| e["hook_exit_code"].as_i64().unwrap())
        .collect();
    assert_eq!(exits.last(), Some(&0), "{exits:?}");
    assert!(
        exits[..exits.len() - 1].iter().all(|c| *c == 1),
        "{exits:?}"
    );
    let waits = p.events_of("WAIT_STARTED");
    assert_eq!(waits.len(), 1, "the hold is announced once: {waits:#?}");
    assert_eq!(waits[0]["reason"], "state");
    assert_eq!(waits[0]["why"], "`test -f APPROVED` to succeed");
}

#[test]
fn a_hold_needs_its_check_and_its_poll_and_poll_belongs_to_hold() {
    let p = project("states:\n  review:\n    then: hold");
    let out = p.run(&["check", "."]);
    assert_eq!(code(&out), 2);
    let err = common::stderr(&out);
    assert!(
        err.contains("RALPH.md:5:11: states.review.then: `then: hold` needs `run`"),
        "{err}"
    );

    let p = project("states:\n  review:\n    then: wait\n    wait: 1s\n    poll: 1s");
    let err = common::stderr(&p.run(&["check", "."]));
    assert!(
        err.contains(
            "states.review.poll: `poll` applies only with `then: hold` (`then` is \"wait\")"
        ),
        "{err}"
    );
}
