//! One function per engine event kind: the line a person reads for it.

use ralph_engine::{CheckResult, Termination, exit_status};
use ralph_escalation::StoryAttempt;

use super::{Style, human_ms};

/// The header: the prompt file, the agent and the budgets.
pub(super) fn run_started_line(
    style: Style,
    ralph_file: &str,
    agent: &str,
    max_iterations: Option<u64>,
    max_cost_usd: Option<f64>,
    max_runtime_ms: Option<u64>,
) -> String {
    let mut limit = max_iterations.map_or_else(|| "no limit".to_owned(), |n| format!("max {n}"));
    if let Some(usd) = max_cost_usd {
        limit.push_str(&format!(" · max ${usd:.2}"));
    }
    if let Some(ms) = max_runtime_ms {
        limit.push_str(&format!(" · max {} runtime", human_ms(ms)));
    }
    format!(
        "{} {ralph_file} · agent `{agent}` · {limit}",
        style.paint("1", "ralph")
    )
}

/// `resuming the run after iteration 4 (interrupted)`.
pub(super) fn run_resumed_line(style: Style, iteration: u64, previous_reason: &str) -> String {
    style.paint(
        "36",
        &format!("resuming the run after iteration {iteration} ({previous_reason})"),
    )
}

/// `── iteration 3 · US-002 attempt 2 ──`: the story and attempt where the task source gives
/// them.
pub(super) fn iteration_started_line(
    style: Style,
    iteration: u64,
    task: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let story = match (
        task.get(StoryAttempt::STORY_ID).and_then(|v| v.as_str()),
        task.get(StoryAttempt::ATTEMPT).and_then(|v| v.as_u64()),
    ) {
        (Some(id), Some(n)) => format!(" · {id} attempt {n}"),
        (Some(id), None) => format!(" · {id}"),
        _ => String::new(),
    };
    style.paint("1;36", &format!("── iteration {iteration}{story} ──"))
}

/// `  ✓ command tests (exit 0, 120ms)`: a per-iteration command; `!` where it failed.
pub(super) fn command_finished_line(
    style: Style,
    name: &str,
    exit_code: Option<i32>,
    duration_ms: u64,
    timed_out: bool,
) -> String {
    let status = if timed_out {
        "timed out".to_owned()
    } else {
        exit_status(exit_code, None)
    };
    let mark = if exit_code == Some(0) {
        style.paint("32", "✓")
    } else {
        style.paint("33", "!")
    };
    format!(
        "  {mark} command {name} ({status}, {})",
        human_ms(duration_ms)
    )
}

/// `── iteration 3 done · exit 0 · 3.2s · state idle`: how the agent ended, and the state it
/// reported.
pub(super) fn iteration_ended_line(
    style: Style,
    iteration: u64,
    termination: Termination,
    exit_code: Option<i32>,
    signal: Option<i32>,
    duration_ms: u64,
    state: Option<&str>,
) -> String {
    let status = match (termination, exit_code) {
        (Termination::Timeout, _) => style.paint("31", "timed out"),
        (Termination::Interrupted, _) => style.paint("33", "stopped"),
        (Termination::IdleTimeout, _) => style.paint("33", "idle timeout"),
        (Termination::RetryLimit, _) => style.paint("31", "stopped retrying"),
        (_, Some(0)) => style.paint("32", "exit 0"),
        // No exit code and no signal: the program could not be started.
        (Termination::Natural, None) if signal.is_none() => style.paint("31", "not started"),
        (_, code) => style.paint("31", &exit_status(code, signal)),
    };
    let state = state
        .map(|s| format!(" · state {}", style.paint("35", s)))
        .unwrap_or_default();
    format!(
        "── iteration {iteration} done · {status} · {}{state}",
        human_ms(duration_ms)
    )
}

/// The idle streak, and the next wait, or that the next wait would pass `idle.max` (none
/// follows: the run ends).
pub(super) fn iteration_idle_line(
    style: Style,
    consecutive_idle: u64,
    idle_elapsed_ms: u64,
    next_delay_ms: Option<u64>,
) -> String {
    let next = match next_delay_ms {
        Some(ms) => next_run_in(style, ms),
        None => ": the next wait would pass idle.max".to_owned(),
    };
    format!(
        "  idle ×{consecutive_idle} · idle for {}{next}",
        human_ms(idle_elapsed_ms)
    )
}

/// `  ✗ failed ×3: exit 1 · next run in 20s`: the failure streak and why.
pub(super) fn iteration_failed_line(
    style: Style,
    consecutive_failures: u64,
    failure: &str,
    next_delay_ms: Option<u64>,
) -> String {
    let next = next_delay_ms
        .map(|ms| next_run_in(style, ms))
        .unwrap_or_default();
    format!(
        "  {} failed ×{consecutive_failures}: {failure}{next}",
        style.paint("31", "✗")
    )
}

/// `  rate-limited until 2025-08-19T15:00:00Z (exit 1: You've hit your limit) · next run in
/// 6h`: the agent's words are said here, the one place they are shown.
pub(super) fn rate_limited_line(
    style: Style,
    until: std::time::SystemTime,
    why: &str,
    wait_ms: Option<u64>,
    fallback: Option<&str>,
) -> String {
    let until = humantime::format_rfc3339_seconds(until);
    let why = match why {
        "" => String::new(),
        why => format!(" ({why})"),
    };
    let next = match (fallback, wait_ms) {
        // The switch's own line follows.
        (Some(_), Some(_)) => String::new(),
        _ => wait_ms.map(|ms| next_run_in(style, ms)).unwrap_or_default(),
    };
    format!(
        "  {} until {until}{why}{next}",
        style.paint("33", "rate-limited")
    )
}

/// `  ⇄ agent `codex exec --json` runs: `claude -p` is rate-limited until ...`, or `... runs
/// again: its limit has reset`: another agent (`fallback`) runs the next iteration.
pub(super) fn agent_switched_line(
    style: Style,
    from: &str,
    to: &str,
    until: Option<std::time::SystemTime>,
) -> String {
    let why = match until {
        Some(until) => format!(
            "`{from}` is rate-limited until {}",
            humantime::format_rfc3339_seconds(until)
        ),
        None => "its limit has reset".to_owned(),
    };
    let runs = if until.is_some() {
        "runs"
    } else {
        "runs again"
    };
    format!("  {} `{to}` {runs}: {why}", style.paint("36", "⇄ agent"))
}

/// `  ↻ agent retrying: 529 overloaded_error (1/10) · next try in 2s`: the agent retrying a
/// request on its own, which may keep it silent for minutes.
pub(super) fn agent_retrying_line(
    style: Style,
    reason: &str,
    attempt: Option<u64>,
    max_attempts: Option<u64>,
    delay_ms: Option<u64>,
) -> String {
    let retry = ralph_agents::describe_retry(reason, attempt, max_attempts);
    let next = delay_ms
        .map(|ms| format!(" · next try in {}", human_ms(ms)))
        .unwrap_or_default();
    format!("  {} {retry}{next}", style.paint("33", "↻ agent retrying:"))
}

/// ` · next run in 20s` on a terminal, where the countdown that follows is erased when it ends
/// and so this line keeps the wait; nothing elsewhere, where the wait's own line says it.
fn next_run_in(style: Style, delay_ms: u64) -> String {
    if style.terminal {
        format!(" · next run in {}", human_ms(delay_ms))
    } else {
        String::new()
    }
}

/// A `done_when` verdict: every check passed, or which failed and how.
pub(super) fn attempt_ended_line(
    style: Style,
    attempt: u64,
    max_attempts: u64,
    ok: bool,
    results: &[CheckResult],
) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if ok {
        let n = results.len();
        return format!(
            "attempt {attempt}/{max_attempts} {} {n} of {n} check{} passed",
            style.paint("32", "✓"),
            plural(n)
        );
    }
    let failed: Vec<_> = results.iter().filter(|r| !r.passed()).collect();
    let names = failed
        .iter()
        .map(|r| format!("{} ({})", r.command, r.status()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = format!(
        "attempt {attempt}/{max_attempts} {} {} of {} check{} failed: {names}",
        style.paint("31", "✗"),
        failed.len(),
        results.len(),
        plural(results.len())
    );
    // Each failing check's last lines under the verdict, named when more than one failed.
    for check in &failed {
        let lines = check.last_lines();
        if lines.is_empty() {
            continue;
        }
        if failed.len() > 1 {
            text.push_str(&format!("\n  {} ({}):", check.command, check.status()));
        }
        for line in lines {
            text.push_str(&format!("\n  {} {line}", style.paint("2", "│")));
        }
    }
    text
}

/// RALPH.md was edited during the run and the new version is used.
pub(super) fn config_reloaded_line(style: Style) -> String {
    style.paint(
        "36",
        "RALPH.md changed: this iteration uses the new version",
    )
}

/// The warning, then each error on a line of its own.
pub(super) fn config_rejected_line(style: Style, errors: &[String]) -> String {
    let mut text = style.paint(
        "33",
        "RALPH.md changed but is invalid; the loop goes on with the previous version:",
    );
    for e in errors {
        text.push_str("\n  ");
        text.push_str(e);
    }
    text
}

/// Ctrl+C during a wait: the next run starts after a grace period.
pub(super) fn wait_skipped_line(grace_ms: u64) -> String {
    format!(
        "  wait skipped (Ctrl+C): running in {} · Ctrl+C again stops",
        human_ms(grace_ms)
    )
}

/// The first Ctrl+C while the agent runs.
pub(super) fn stop_requested_line(style: Style) -> String {
    style.paint(
        "33",
        "Ctrl+C: the loop stops after this iteration · Ctrl+C again stops now",
    )
}

/// `⛔ sandbox: denied example.com:443 (not in sandbox.network)`: a connection the sandbox's
/// proxy refused.
pub(super) fn sandbox_denied_line(style: Style, host: &str, port: u16) -> String {
    style.paint(
        "31",
        &format!("⛔ sandbox: denied {host}:{port} (not in sandbox.network)"),
    )
}

/// `  state review → wait · hook exit 0`: a declared state and what it did.
pub(super) fn state_handled_line(
    style: Style,
    state: &str,
    then: &str,
    hook_exit_code: Option<i32>,
) -> String {
    let hook = hook_exit_code
        .map(|code| format!(" · hook exit {code}"))
        .unwrap_or_default();
    format!("  {} {state} → {then}{hook}", style.paint("1;36", "state"))
}
