//! Convergence: `done_when` decides success, not the agent's exit code.

use crate::common;

use common::{Project, code, fake_agent};

/// A check that passes from iteration `n` on.
fn passes_from(n: u64) -> String {
    format!(
        "'[ \"$RALPH_ITERATION\" -ge {n} ] || {{ echo \"not yet: iteration $RALPH_ITERATION\"; exit 1; }}'"
    )
}

/// A project whose agent is the fake agent with `agent_args`; `convergence` is the block's
/// flow-style content.
fn project(agent_args: &str, done_when: &[String], convergence: &str, body: &str) -> Project {
    let checks: Vec<String> = done_when.iter().map(|c| format!("  - {c}")).collect();
    let convergence = if convergence.is_empty() {
        "backoff: 20ms"
    } else {
        convergence
    };
    Project::new(
        &format!(
            "agent: '{} {agent_args}'\ndone_when:\n{}\nconvergence: {{{convergence}}}",
            fake_agent(),
            checks.join("\n")
        ),
        body,
    )
}

#[test]
fn converges_on_the_first_attempt_cleanly() {
    let p = project("--out work", &["'true'".into()], "", "x\n");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "converged");
    assert_eq!(ended["outcome"], "clean");
    assert_eq!(ended["flake_retries"], 0);
    let attempts = p.events_of("ATTEMPT_ENDED");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["ok"], true);
    assert_eq!(attempts[0]["backoff_ms"], serde_json::Value::Null);
    assert!(common::stdout(&out).contains("attempt 1/6 ✓ 1 of 1 check passed"));
}

#[test]
fn converges_on_the_third_attempt_with_a_flake() {
    let p = project("--out work", &[passes_from(3)], "", "x\n");
    assert_eq!(code(&p.run(&["run"])), 0);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "converged");
    assert_eq!(ended["outcome"], "clean_with_flake");
    assert_eq!(ended["flake_retries"], 1);
    let backoffs: Vec<_> = p
        .events_of("ATTEMPT_ENDED")
        .iter()
        .map(|a| a["backoff_ms"].clone())
        .collect();
    assert_eq!(backoffs, [serde_json::Value::Null, 40.into(), 80.into()]);
}

#[test]
fn never_converging_ends_after_exactly_max_attempts() {
    let p = project(
        "--out work",
        &["'false'".into()],
        "backoff: 5ms, max_attempts: 3",
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "max_attempts_reached");
    assert_eq!(ended["outcome"], "failed");
    assert_eq!(p.events_of("ITERATION_ENDED").len(), 3);
    assert_eq!(p.events_of("ATTEMPT_ENDED").len(), 3);
}

#[test]
fn every_check_runs_and_a_long_failure_keeps_a_4096_byte_tail() {
    let p = project(
        "--out work",
        &[
            "'head -c 10240 /dev/zero | tr \"\\0\" y; exit 3'".into(),
            "'true'".into(),
            "'echo short >&2; exit 4'".into(),
        ],
        "backoff: 5ms, max_attempts: 1",
        "x\n",
    );
    assert_eq!(code(&p.run(&["run"])), 1);
    let attempt = &p.events_of("ATTEMPT_ENDED")[0];
    let results = attempt["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["exit_code"], 3);
    assert_eq!(results[0]["tail"].as_str().unwrap().len(), 4096);
    assert_eq!(results[0]["truncated"], true);
    assert_eq!(results[1]["exit_code"], 0);
    assert_eq!(results[1]["tail"], serde_json::Value::Null);
    assert_eq!(results[2]["tail"], "short\n");
    assert_eq!(results[2]["truncated"], false);
}

#[test]
fn the_agent_exit_code_is_ignored() {
    let p = project("--exit 7", &["'true'".into()], "", "x\n");
    let out = p.run(&["run", "--stop-on-error"]);
    assert_eq!(code(&out), 0);
    assert_eq!(p.run_ended()["reason"], "converged");
    assert_eq!(p.events_of("ITERATION_ENDED")[0]["exit_code"], 7);
}

#[test]
fn a_non_zero_exit_waits_the_convergence_backoff_and_is_no_failure() {
    let p = project("--exit 3", &[passes_from(3)], "backoff: 50ms", "x\n");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "converged");
    let waits: Vec<_> = p
        .events_of("WAIT_STARTED")
        .iter()
        .map(|w| (w["reason"].clone(), w["delay_ms"].clone()))
        .collect();
    assert_eq!(
        waits,
        [("retry".into(), 100.into()), ("retry".into(), 200.into())]
    );
    assert!(p.events_of("ITERATION_FAILED").is_empty());
    for ended in p.events_of("ITERATION_ENDED") {
        assert_eq!(ended["exit_code"], 3);
        assert_eq!(ended["failed"], false);
    }
}

/// A project whose agent is the script `agent` in its folder.
fn scripted(script: &str, frontmatter: &str) -> Project {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&format!("agent: ./agent\n{frontmatter}"), "x\n");
    let path = p.path().join("agent");
    std::fs::write(&path, format!("#!/bin/sh\n{script}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn with_checks_an_agent_that_cannot_start_is_still_a_failure() {
    // The agent removes itself: from iteration 2 on it cannot be started.
    let p = scripted(
        "cat >/dev/null\nrm -- \"$0\"\nexit 1\n",
        "done_when: ['false']\nconvergence: {backoff: 5ms, max_attempts: 3}\nfailure: {delay: 5ms}",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let failed: Vec<_> = p
        .events_of("ITERATION_ENDED")
        .iter()
        .map(|e| e["failed"].clone())
        .collect();
    assert_eq!(failed, [false, true, true]);
    assert_eq!(p.events_of("ITERATION_FAILED").len(), 2);
}

#[test]
fn with_checks_a_rate_limit_is_still_a_failure() {
    let p = scripted(
        "cat >/dev/null\necho 'API Error: 429 {\"type\":\"rate_limit_error\"}' >&2; exit 1\n",
        "done_when: ['false']\nconvergence: {backoff: 5ms, max_attempts: 2}\nfailure: {delay: 5ms}",
    );
    assert_eq!(code(&p.run(&["run"])), 1);
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 2);
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("rate-limited, no reset time given"),
        "{failure}"
    );
}

#[test]
fn a_failing_checks_last_lines_are_on_the_terminal_in_the_logs_and_in_the_report() {
    let p = project(
        "--out work",
        &["'sh tests.sh'".into()],
        "max_attempts: 1",
        "x\n",
    );
    std::fs::write(
        p.path().join("tests.sh"),
        "i=1; while [ $i -le 15 ]; do echo \"test line $i\"; i=$((i+1)); done; exit 1\n",
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let shown = common::stdout(&out);
    let verdict = "attempt 1/1 ✗ 1 of 1 check failed: sh tests.sh (exit 1)\n";
    let under: Vec<&str> = shown[shown.find(verdict).expect(&shown) + verdict.len()..]
        .lines()
        .take(11)
        .collect();
    let want: Vec<String> = (6..=15).map(|n| format!("  │ test line {n}")).collect();
    assert_eq!(under[..10], want, "{shown}");
    assert!(!under[10].contains("│"), "{shown}");

    let logs = p.run(&["logs"]);
    assert_eq!(code(&logs), 0, "{}", common::stderr(&logs));
    let logs = common::stdout(&logs);
    let check = logs.find("check `sh tests.sh`: exit 1").expect(&logs);
    assert!(logs[check..].contains("test line 15"), "{logs}");

    let report = p.run(&["report", "-o", "report.html"]);
    assert_eq!(code(&report), 0, "{}", common::stderr(&report));
    let html = std::fs::read_to_string(p.path().join("report.html")).unwrap();
    let checks = &html[html.find("<h2>done_when checks").expect(&html)..];
    let checks = &checks[..checks.find("<h2>Iterations").expect(&html)];
    assert!(
        checks.contains("test line 6\n") && checks.contains("test line 15\n"),
        "{checks}"
    );
    assert!(!checks.contains("test line 5\n"), "{checks}");
}

#[test]
fn the_next_prompt_carries_the_failures() {
    let p = project(
        "--save-prompt prompts.txt",
        &[passes_from(2)],
        "",
        "Do the work.\n",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let second = prompts.split("=== end ===\n").nth(1).unwrap();
    assert!(
        second.starts_with("Do the work.\n\n## Checks that failed on the last attempt\n"),
        "{second}"
    );
    assert!(second.contains("not yet: iteration 1"), "{second}");
    assert!(
        !prompts
            .split("=== end ===\n")
            .next()
            .unwrap()
            .contains("Checks that failed")
    );
}

#[test]
fn failures_placeholder_puts_the_feedback_in_place() {
    let p = project(
        "--save-prompt prompts.txt",
        &[passes_from(2)],
        "",
        "Before.\n{{ ralph.failures }}\nAfter.\n",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let mut parts = prompts.split("=== end ===\n");
    assert_eq!(parts.next().unwrap(), "Before.\n\nAfter.\n");
    let second = parts.next().unwrap();
    assert!(
        second.starts_with("Before.\n## Checks that failed"),
        "{second}"
    );
    assert!(second.ends_with("After.\n"), "{second}");
}

#[test]
fn feedback_can_be_turned_off() {
    let p = project(
        "--save-prompt prompts.txt",
        &[passes_from(2)],
        "backoff: 20ms, feedback: false",
        "Plain.\n",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    assert_eq!(prompts, "Plain.\n=== end ===\nPlain.\n=== end ===\n");
}

#[test]
fn the_attempt_log_holds_the_latest_attempt() {
    let p = project("--out work", &[passes_from(2)], "", "x\n");
    assert_eq!(code(&p.run(&["run"])), 0);
    let run_id = p.run_ended()["run_id"].as_str().unwrap().to_owned();
    let log = std::fs::read_to_string(p.path().join(".ralph/runs").join(run_id).join("main.log"))
        .unwrap();
    assert!(log.starts_with("attempt 2/6\nagent exit: 0\n"), "{log}");
    assert!(log.contains("iteration-002.log"), "{log}");
    assert!(
        log.contains("\nwork\n"),
        "the agent's output is in the attempt log: {log}"
    );
    assert!(log.contains("check `"), "{log}");
    assert!(log.ends_with("verdict: converged\n"), "{log}");
}

#[test]
fn an_idle_iteration_is_not_an_attempt() {
    let agent =
        "sh -c 'if [ \"$RALPH_ITERATION\" -le 2 ]; then echo \"<!-- ralph:state idle -->\"; fi'";
    let p = Project::new(
        &format!(
            "agent: {agent}\nidle: {{delay: 10ms}}\ndone_when:\n  - '[ \"$RALPH_ITERATION\" -ge 4 ]'\nconvergence: {{backoff: 5ms}}"
        ),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    let attempts: Vec<_> = p
        .events_of("ATTEMPT_ENDED")
        .iter()
        .map(|a| {
            (
                a["attempt"].as_u64().unwrap(),
                a["iteration"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(attempts, [(1, 3), (2, 4)]);
    assert_eq!(p.events_of("ITERATION_IDLE").len(), 2);
}

#[test]
fn max_iterations_still_caps_a_converging_loop() {
    let p = project("--out work", &["'false'".into()], "", "x\n");
    let out = p.run(&["run", "-n", "2"]);
    assert_eq!(code(&out), 0);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "max_iterations");
    assert_eq!(ended["outcome"], "failed");
}

#[test]
fn a_hung_check_is_stopped_at_check_timeout_and_fails_the_attempt() {
    // The check leaves a grandchild behind and hangs; the whole group goes at the limit.
    let marker = format!("ralph-hung-check-{}", std::process::id());
    let hung = format!("'sh -c \"sleep 30; : {marker}\" & echo started; wait'");
    let p = project(
        "--out work",
        &[hung, "'true'".into()],
        "max_attempts: 2, backoff: 10ms, check_timeout: 200ms",
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let attempts = p.events_of("ATTEMPT_ENDED");
    assert_eq!(attempts.len(), 2);
    let hung = &attempts[0]["results"][0];
    assert_eq!(hung["timed_out"], true, "{hung:#}");
    assert_eq!(hung["tail"], "started\n");
    let ms = hung["duration_ms"].as_u64().unwrap();
    assert!(
        (200..5000).contains(&ms),
        "stopped at the limit, not at 30 s: {ms} ms"
    );
    assert_eq!(attempts[0]["results"][1]["timed_out"], false);
    assert!(
        !common::process_running(&marker),
        "the check's grandchild was killed"
    );
    assert!(
        common::stdout(&out).contains("(timed out)"),
        "{}",
        common::stdout(&out)
    );
    assert_eq!(p.run_ended()["reason"], "max_attempts_reached");
}
