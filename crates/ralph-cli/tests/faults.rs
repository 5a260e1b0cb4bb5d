//! Fault injection: agents, disks and users failing in every way ralph has to survive. Each case
//! ends with a clear message, the right exit code, no orphan process and no corrupt file.

use crate::common;

use std::time::{Duration, Instant};

use common::{Project, code, fake_agent, send_signal};

#[test]
fn an_agent_that_hangs_past_timeout_and_ignores_sigterm_is_killed() {
    let marker = "41.2718";
    let p = Project::new(
        &format!(
            "agent: '{} --ignore-term --grandchild {marker} --sleep 30'",
            fake_agent()
        ),
        "x\n",
    );
    let started = Instant::now();
    let out = p.run(&["run", "-n", "1", "--timeout", "100ms"]);
    // A timeout is a failed run, and the last run before max_iterations failed: exit 1.
    assert_eq!(code(&out), 1);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(8),
        "{took:?}"
    );
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["termination"], "timeout");
    assert_eq!(ended["signal"], 9);
    assert_eq!(ended["failure"], "timed out after 100ms");
    assert!(!common::process_running(&format!("sleep {marker}")));
}

#[test]
fn an_agent_that_closes_stdout_early_and_keeps_running_is_waited_for() {
    let p = Project::new(
        &format!(
            "agent: '{} --out early --close-stdout --sleep 0.3 --exit 4'",
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 1, "its one run failed");
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["exit_code"], 4);
    assert!(ended["duration_ms"].as_u64().unwrap() >= 300);
    assert!(common::stdout(&out).contains("early"));
}

#[test]
fn invalid_utf8_output_is_passed_through_and_logged() {
    let p = Project::new(
        "agent: sh -c 'printf \"caf\\351 \\377\\376 <!-- ralph:state idle -->\\n\"'",
        "x\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0);
    assert!(
        out.stdout.windows(2).any(|w| w == b"\xff\xfe"),
        "raw bytes reach the terminal"
    );
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle");
    let log = std::fs::read(p.path().join(ended["log_file"].as_str().unwrap())).unwrap();
    assert!(log.windows(3).any(|w| w == b"caf"));
    assert!(log.windows(2).any(|w| w == b"\xff\xfe"));
}

#[test]
fn a_long_line_without_newline_is_handled() {
    let p = Project::new(
        &format!(
            "agent: '{} --bytes-no-newline 20000000 --marker idle'",
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run", "-n", "1", "--quiet"]);
    assert_eq!(code(&out), 0);
    assert_eq!(p.events_of("ITERATION_ENDED")[0]["state"], "idle");
}

#[test]
fn an_unwritable_log_folder_warns_and_the_loop_goes_on() {
    let p = Project::new(&format!("agent: '{} --out x'", fake_agent()), "x\n");
    std::fs::write(p.path().join("not-a-dir"), "").unwrap();
    let out = p.run(&["run", "-n", "2", "--log-dir", "not-a-dir"]);
    assert_eq!(code(&out), 0);
    assert!(
        common::stderr(&out).contains("going on without logs"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(p.run_ended()["iterations"], 2);
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["log_file"],
        serde_json::Value::Null
    );
}

#[test]
fn kill_9_mid_run_leaves_only_whole_event_lines() {
    for delay_ms in [5, 20, 45, 80, 130] {
        let p = Project::new(
            &format!(
                "agent: '{} --out x --marker idle'\ncommands:\n  - name: a\n    run: echo a\nidle: {{delay: 1ms, max_delay: 2ms}}",
                fake_agent()
            ),
            "{{ commands.a }}\n",
        );
        let mut child = p.spawn(&["run", "--quiet"]);
        std::thread::sleep(Duration::from_millis(delay_ms));
        send_signal(child.id(), libc::SIGKILL);
        child.wait().unwrap();
        let text = std::fs::read_to_string(p.events_path()).unwrap_or_default();
        let lines: Vec<_> = text.split_inclusive('\n').collect();
        for (i, line) in lines.iter().enumerate() {
            let whole = line.ends_with('\n');
            assert!(whole || i == lines.len() - 1, "a cut line before the last");
            if whole {
                serde_json::from_str::<serde_json::Value>(line)
                    .unwrap_or_else(|e| panic!("line {i} is not whole JSON ({e}): {line}"));
            }
        }
    }
}

#[test]
fn an_edit_to_ralph_md_is_picked_up_at_the_next_iteration() {
    let agent = format!(
        "agent: '{} --save-prompt prompts.txt --sleep 0.3'",
        fake_agent()
    );
    let p = Project::new(&agent, "Version one.\n");
    let mut child = p.spawn(&["run", "-n", "2"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\n{agent}\n---\nVersion two.\n"),
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(p.events_of("CONFIG_RELOADED").len(), 1);
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    assert_eq!(
        prompts,
        "Version one.\n=== end ===\nVersion two.\n=== end ===\n"
    );
}

#[test]
fn an_invalid_edit_is_rejected_with_a_clear_message_and_the_loop_goes_on() {
    let agent = format!(
        "agent: '{} --save-prompt prompts.txt --sleep 0.3'",
        fake_agent()
    );
    let p = Project::new(&agent, "Version one.\n");
    let child = p.spawn(&["run", "-n", "2"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\n{agent}\nidle: {{backoff: fast}}\n---\nBroken.\n"),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let rejected = p.events_of("CONFIG_REJECTED");
    assert_eq!(rejected.len(), 1);
    assert_eq!(
        rejected[0]["errors"][0],
        "RALPH.md:3:17: idle.backoff: expected a number >= 1.0, got \"fast\""
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("RALPH.md changed but is invalid"));
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    assert_eq!(
        prompts,
        "Version one.\n=== end ===\nVersion one.\n=== end ===\n"
    );
}
