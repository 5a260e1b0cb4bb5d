//! The events format: `RUN_STARTED` names its version, problems that do not stop the loop are
//! `WARNING` events every sink sees (and the terminal prints as before).

mod common;

use common::{Project, code, fake_agent, stderr};

#[test]
fn run_started_names_the_events_version() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "x\n");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let started = &p.events_of("RUN_STARTED")[0];
    assert_eq!(started["events_version"], 2);
    // First after `type`, so a reader can tell the format before it reads on.
    let keys: Vec<&String> = started.as_object().unwrap().keys().collect();
    assert_eq!(keys[..4], ["ts", "run_id", "type", "events_version"]);
}

#[test]
fn a_command_that_cannot_start_is_a_warning_event_and_the_same_stderr_line() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(
        &format!(
            "agent: {}\ncommands:\n  - name: c\n    run: ./c.sh",
            fake_agent()
        ),
        "x\n",
    );
    let script = p.path().join("c.sh");
    std::fs::write(&script, "echo hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let warnings = p.events_of("WARNING");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("command c could not start: it has no #! line"),
        "{message}"
    );
    let line = format!("warning: {message}\n");
    assert_eq!(stderr(&out).matches(&line).count(), 1, "{}", stderr(&out));
}

#[test]
fn a_failing_state_hook_is_a_warning_event() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(
        "agent: ./agent.sh\nmax_iterations: 1\nstates:\n  review:\n    run: exit 3",
        "x\n",
    );
    let agent = p.path().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat >/dev/null\necho '<!-- ralph:state review -->'\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let warnings = p.events_of("WARNING");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(message.starts_with("state `review`: its hook"), "{message}");
    assert!(stderr(&out).contains(&format!("warning: {message}")));
}
