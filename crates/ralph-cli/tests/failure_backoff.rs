//! Failing agents back off and end the loop; rate limits are waits; Ctrl+C during a wait costs
//! no agent run. The exact waits of long streaks are checked on a virtual clock in
//! `ralph-engine/tests/loop_control.rs`; here the real binary runs with millisecond waits.

use crate::common;

use std::time::{Duration, Instant};

use common::{Project, code, fake_agent};
use serde_json::Value;

/// `agent:` for the fake agent with these arguments.
fn agent(args: &str) -> String {
    format!("agent: '{} {args}'", fake_agent())
}

/// A project whose agent is `sh agent.sh`, the script being `script`.
fn scripted(script: &str, frontmatter: &str) -> Project {
    let p = Project::new(&format!("agent: sh agent.sh\n{frontmatter}"), "x\n");
    std::fs::write(p.path().join("agent.sh"), script).unwrap();
    p
}

fn field<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().map(|e| &e[name]).collect()
}

#[test]
fn an_agent_that_fails_at_once_backs_off_and_ends_with_agent_failing() {
    let p = Project::new(
        &format!(
            "{}\nfailure: {{delay: 20ms, backoff: 2, max_delay: 50ms, max_consecutive: 4}}",
            agent("--err \"Invalid API key\" --exit 1")
        ),
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "agent_failing");
    assert_eq!(ended["iterations"], 4);

    let runs = p.events_of("ITERATION_ENDED");
    assert!(runs.iter().all(|e| e["failed"] == true));
    assert_eq!(runs[0]["failure"], "exit 1: Invalid API key");

    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(field(&failed, "consecutive_failures"), [1, 2, 3, 4]);
    // min(20ms * 2^(n-1), 50ms), and none when the loop ends.
    assert_eq!(
        field(&failed, "next_delay_ms"),
        [
            &Value::from(20),
            &Value::from(40),
            &Value::from(50),
            &Value::Null
        ]
    );
    let waits = p.events_of("WAIT_STARTED");
    assert!(waits.iter().all(|w| w["reason"] == "failure"));
    assert_eq!(field(&waits, "delay_ms"), [20, 40, 50]);
}

#[test]
fn the_default_backoff_waits_five_seconds_after_a_failure() {
    let p = Project::new(&agent("--exit 1"), "x\n");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        p.events_of("ITERATION_FAILED")[0]["next_delay_ms"],
        Value::Null
    );
    // `-n 2` would wait the default 5s; the event says so before the wait.
    let mut child = p.spawn(&["run", "-n", "2"]);
    p.wait_for("WAIT_STARTED", 1);
    let wait = &p.events_of("WAIT_STARTED")[0];
    assert_eq!(
        (&wait["reason"], &wait["delay_ms"]),
        (&"failure".into(), &5000.into())
    );
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn a_run_that_does_not_fail_resets_the_streak() {
    // Iterations 1, 2, 4 and 5 fail; 3 succeeds.
    let p = scripted(
        "cat >/dev/null\n[ \"$RALPH_ITERATION\" = 3 ] && exit 0\necho broken >&2; exit 2\n",
        "failure: {delay: 5ms, max_consecutive: 3}",
    );
    let out = p.run(&["run", "-n", "5"]);
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(field(&failed, "iteration"), [1, 2, 4, 5]);
    assert_eq!(field(&failed, "consecutive_failures"), [1, 2, 1, 2]);
    // max_iterations ended the loop on a failed run: a failure.
    assert_eq!(code(&out), 1);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
}

#[test]
fn a_successful_last_run_ends_max_iterations_with_exit_0() {
    let p = scripted(
        "cat >/dev/null\n[ \"$RALPH_ITERATION\" = 2 ] && exit 0\nexit 1\n",
        "failure: {delay: 5ms}",
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
}

#[test]
fn stop_on_error_still_stops_at_the_first_failure() {
    let p = Project::new(&agent("--exit 3"), "x\n");
    let out = p.run(&["run", "--stop-on-error"]);
    assert_eq!(code(&out), 1);
    assert_eq!(p.run_ended()["reason"], "agent_failed");
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["next_delay_ms"], Value::Null);
    assert!(p.events_of("WAIT_STARTED").is_empty());
}

#[test]
fn an_error_the_adapter_reports_is_a_failure_even_with_exit_0() {
    let result = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 500 Internal server error"}"#;
    let p = scripted(
        &format!("cat >/dev/null\nprintf '%s\\n' '{result}'\n"),
        "output: claude-stream-json\nfailure: {delay: 5ms, max_consecutive: 2}",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1);
    assert_eq!(p.run_ended()["reason"], "agent_failing");
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["exit_code"], 0);
    assert_eq!(ended["failed"], true);
    assert_eq!(
        ended["failure"],
        "the agent reported an error: API Error: 500 Internal server error"
    );
}

#[test]
fn an_agent_that_went_missing_after_running_is_a_failed_run() {
    // The agent removes itself: from iteration 2 on it cannot be started.
    let p = Project::new(
        "agent: ./agent\nfailure: {delay: 5ms, max_consecutive: 2}",
        "x\n",
    );
    let script = p.path().join("agent");
    std::fs::write(&script, "#!/bin/sh\ncat >/dev/null\nrm -- \"$0\"\n").unwrap();
    make_executable(&script);
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "agent_failing");
    let runs = p.events_of("ITERATION_ENDED");
    assert_eq!(field(&runs, "failed"), [false, true, true]);
    let failure = runs[1]["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("cannot start the agent `./agent`"),
        "{failure}"
    );
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_rate_limit_with_a_reset_time_is_a_wait_capped_by_max_wait() {
    // Claude Code's usage-limit message: the reset as a Unix time, an hour from now.
    let p = scripted(
        "cat >/dev/null\n[ \"$RALPH_ITERATION\" = 2 ] && exit 0\n\
         echo \"Claude AI usage limit reached|$(( $(date +%s) + 3600 ))\"; exit 1\n",
        "rate_limit: {max_wait: 150ms}",
    );
    let started = Instant::now();
    let out = p.run(&["run", "-n", "2"]);
    assert_eq!(code(&out), 0, "a rate limit is not a failure");
    assert!(started.elapsed() < Duration::from_secs(10));

    let first = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(
        (&first["failed"], &first["failure"]),
        (&false.into(), &Value::Null)
    );
    assert!(p.events_of("ITERATION_FAILED").is_empty());
    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0]["wait_ms"], 150);
    let until = humantime::parse_rfc3339(limited[0]["until"].as_str().unwrap()).unwrap();
    let ahead = until.duration_since(std::time::SystemTime::now()).unwrap();
    assert!(ahead > Duration::from_secs(3500), "{ahead:?}");
    let wait = &p.events_of("WAIT_STARTED")[0];
    assert_eq!(
        (&wait["reason"], &wait["delay_ms"]),
        (&"rate_limit".into(), &150.into())
    );
}

#[test]
fn a_rate_limit_without_a_reset_time_backs_off_as_a_failure() {
    let p = scripted(
        "cat >/dev/null\necho 'API Error: 429 {\"type\":\"rate_limit_error\"}' >&2; exit 1\n",
        "failure: {delay: 5ms, max_consecutive: 2}",
    );
    assert_eq!(code(&p.run(&["run"])), 1);
    assert!(p.events_of("RATE_LIMITED").is_empty());
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 2);
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("rate-limited, no reset time given (exit 1"),
        "{failure}"
    );
}

#[test]
fn a_second_ctrl_c_during_the_grace_stops_with_no_new_agent_run() {
    let p = Project::new(
        &format!("{}\nidle: {{delay: 30s}}", agent("--marker idle")),
        "x\n",
    );
    let mut child = p.spawn(&["run"]);
    p.wait_for("WAIT_STARTED", 1);
    common::send_signal(child.id(), libc::SIGINT);
    p.wait_for("WAIT_SKIPPED", 1);
    std::thread::sleep(Duration::from_millis(300));
    common::send_signal(child.id(), libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(p.events_of("ITERATION_STARTED").len(), 1, "no new run");
    assert_eq!(p.events_of("WAIT_SKIPPED")[0]["grace_ms"], 1000);
    assert_eq!(p.run_ended()["reason"], "interrupted");
}

#[test]
fn one_ctrl_c_skips_the_wait_and_the_next_run_starts_after_the_grace() {
    let p = Project::new(
        &format!("{}\nidle: {{delay: 30s}}", agent("--marker idle")),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "2"]);
    p.wait_for("WAIT_STARTED", 1);
    let pressed = Instant::now();
    common::send_signal(child.id(), libc::SIGINT);
    p.wait_for("ITERATION_STARTED", 2);
    let started_after = pressed.elapsed();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "max_iterations after an idle run");
    assert!(
        started_after >= Duration::from_millis(1000) && started_after < Duration::from_secs(10),
        "{started_after:?}"
    );
}

#[test]
fn claude_codes_usage_limit_result_is_a_wait_until_its_reset() {
    // What `claude -p --output-format stream-json` ends with when the plan's limit is reached.
    let p = scripted(
        // A run that ends without its result event fails; iteration 2 answers.
        "cat >/dev/null\n[ \"$RALPH_ITERATION\" = 2 ] && { echo '{\"type\":\"result\",\"result\":\"ok\"}'; exit 0; }\n\
         printf '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Claude AI usage limit reached|%s\"}\\n' \
         \"$(( $(date +%s) + 7200 ))\"\nexit 1\n",
        "output: claude-stream-json\nrate_limit: {max_wait: 100ms}",
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0]["wait_ms"], 100);
    assert!(p.events_of("ITERATION_FAILED").is_empty());
}

#[test]
fn an_agent_that_cannot_start_on_the_first_iteration_says_why_in_the_events() {
    let p = Project::new("agent: ralph-no-such-agent-xyz -p", "x\n");
    let out = p.run(&["run", "-n", "3"]);
    assert_eq!(code(&out), 1);
    let kinds: Vec<String> = common::types(&p.events())
        .into_iter()
        .filter(|t| t != "WARNING")
        .collect();
    assert_eq!(
        kinds,
        [
            "RUN_STARTED",
            "ITERATION_STARTED",
            "ITERATION_ENDED",
            "ITERATION_FAILED",
            "RUN_ENDED"
        ]
    );
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["failed"], true);
    assert_eq!(ended["exit_code"], Value::Null);
    assert_eq!(ended["signal"], Value::Null);
    assert_eq!(ended["termination"], "natural");
    assert!(ended["duration_ms"].is_u64(), "{ended}");
    // The same words the user reads on stderr.
    let failure = ended["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("cannot start the agent `ralph-no-such-agent-xyz`"),
        "{failure}"
    );
    assert!(
        common::stderr(&out).contains(failure),
        "{}",
        common::stderr(&out)
    );
    let failed = &p.events_of("ITERATION_FAILED")[0];
    assert_eq!(failed["iteration"], 1);
    assert_eq!(failed["consecutive_failures"], 1);
    assert_eq!(failed["next_delay_ms"], Value::Null);
    assert_eq!(failed["failure"], failure);
    assert_eq!(p.run_ended()["reason"], "agent_failed");

    // The run folder's readers (`ralph runs`, `ralph report`) see a failed iteration.
    use ralph_events::run_folder::{self, IterationOutcome, RunRecord};
    let dir = run_folder::find_run(p.path(), None).unwrap();
    let events = run_folder::read_events(&dir.events_path()).unwrap();
    let record = RunRecord::from_events(&dir.id, &events, None);
    let outcomes: Vec<_> = record.iterations.iter().map(|i| i.outcome).collect();
    assert_eq!(outcomes, [IterationOutcome::Failed]);
}
