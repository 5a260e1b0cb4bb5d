//! `ralph check`: validate a RALPH.md and show its effective configuration.

use std::fmt::Write as _;

use ralph_frontmatter::{Config, OutputFormat, RalphFile, StateThen, schema};

use crate::render::human_duration;

/// A one-screen summary of the effective configuration, under `{path}: {verdict}`.
pub(crate) fn summary(path: &str, verdict: &str, file: &RalphFile) -> String {
    let c: &Config = &file.config;
    let mut s = String::new();
    let _ = writeln!(s, "{path}: {verdict}");
    let mut row = |key: &str, value: String| {
        let _ = writeln!(s, "  {key:<15} {value}");
    };
    let delivery = if c.agent.contains("{prompt_file}") {
        "prompt in a file ({prompt_file})"
    } else if c.agent.contains("{prompt}") {
        "prompt as an argument ({prompt})"
    } else {
        "prompt on stdin"
    };
    row("agent", format!("{} · {delivery}", c.agent));
    // As the engine chooses: a PTY agent is read as text unless the file says otherwise.
    let choice = ralph_agents::choose_output(
        &c.agent_argv,
        c.output.or(c.pty.map(|_| OutputFormat::Text)),
    );
    let format = choice.format.name();
    row(
        "output",
        if choice.extra_args.is_empty() {
            format!("{format} ({})", choice.reason)
        } else {
            format!(
                "{format} ({}) · ralph adds {}",
                choice.reason,
                choice.extra_args.join(" ")
            )
        },
    );
    row(
        "commands",
        if c.commands.is_empty() {
            "none".to_owned()
        } else {
            c.commands
                .iter()
                .map(|cmd| {
                    let t = cmd.timeout.map_or_else(
                        || schema::DEFAULT_COMMAND_TIMEOUT.to_owned(),
                        human_duration,
                    );
                    format!("{} ({t})", cmd.name)
                })
                .collect::<Vec<_>>()
                .join(", ")
        },
    );
    if !c.args.is_empty() {
        row("args", c.args.join(", "));
    }
    row(
        "max_iterations",
        c.max_iterations
            .map_or_else(|| "no limit".to_owned(), |n| n.to_string()),
    );
    row(
        "timeout",
        c.timeout.map_or_else(|| "none".to_owned(), human_duration),
    );
    let silence = c
        .idle_timeout
        .unwrap_or_else(|| Config::default_idle_timeout(c.pty.is_some()));
    row(
        "idle_timeout",
        match (silence.is_zero(), c.idle_timeout.is_some()) {
            (true, _) => "off (an agent may print nothing for ever)".to_owned(),
            (false, true) => format!("{} without output ends the agent", human_duration(silence)),
            (false, false) => format!(
                "{} without output ends the agent (the default)",
                human_duration(silence)
            ),
        },
    );
    row("delay", human_duration(c.delay));
    row(
        "idle",
        match &c.idle {
            None => "off (idle markers are reported, nothing waits)".to_owned(),
            Some(p) => format!(
                "wait {} ×{} up to {} · {}",
                human_duration(p.delay),
                p.backoff,
                human_duration(p.max_delay),
                p.max.map_or_else(
                    || "never stops (no idle.max)".to_owned(),
                    |max| format!("stop after {}", human_duration(max))
                )
            ),
        },
    );
    row(
        "done_when",
        if c.done_when.is_empty() {
            "none (the loop runs until another limit)".to_owned()
        } else {
            format!(
                "{} check{} · {} attempts, backoff {} up to {} · each check stopped after {}",
                c.done_when.len(),
                if c.done_when.len() == 1 { "" } else { "s" },
                c.convergence.max_attempts,
                human_duration(c.convergence.retry.backoff),
                human_duration(c.convergence.retry.max_backoff),
                human_duration(c.convergence.check_timeout)
            )
        },
    );
    if !c.states.is_empty() {
        let states = c.states.iter().map(|(name, spec)| {
            let hook = if spec.run.is_some() {
                "hook, then "
            } else {
                ""
            };
            let then = match spec.then {
                StateThen::Stop { exit_code } => format!("stop (exit {exit_code})"),
                StateThen::Continue => "continue".to_owned(),
                StateThen::Wait(wait) => format!("wait {}", human_duration(wait)),
                StateThen::Hold { poll } => format!("hold, checked every {}", human_duration(poll)),
            };
            format!("{name} ({hook}{then})")
        });
        row("states", states.collect::<Vec<_>>().join(", "));
    }
    if let Some(signal) = &c.completion_signal {
        row(
            "completion",
            match c.completion_text() {
                Some(text) => format!("{text} in the final answer counts as done"),
                None => format!("{signal:?} ignored (stop_on_completion_signal: false)"),
            },
        );
    }
    if let Some(turns) = c.max_turns {
        row(
            "max_turns",
            match ralph_frontmatter::is_claude_print(&c.agent_argv) {
                true => format!("{turns} · ralph adds --max-turns {turns}"),
                false => format!("{turns} · no effect: the agent is not `claude -p`"),
            },
        );
    }
    row(
        "escalation",
        match &c.escalation {
            None => "off".to_owned(),
            Some(e) => format!(
                "prd {} · progress {} · same error ×{} · revert {}{}",
                e.prd
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), |p| p.display().to_string()),
                e.progress.display(),
                e.same_error_limit,
                if e.revert { "on" } else { "off" },
                if e.split { " · split on" } else { "" }
            ),
        },
    );
    row(
        "pty",
        match &c.pty {
            None => "off".to_owned(),
            Some(p) => format!("{:?}", p.mode).to_lowercase(),
        },
    );
    let f = &c.failure;
    row(
        "failure",
        format!(
            "wait {} ×{} up to {} · stop after {} in a row",
            human_duration(f.delay),
            f.backoff,
            human_duration(f.max_delay),
            f.max_consecutive
        ),
    );
    row(
        "rate_limit",
        format!(
            "wait for the reset, at most {}",
            human_duration(c.rate_limit.max_wait)
        ),
    );
    if !c.fallback.is_empty() {
        let lines: Vec<String> = c.fallback.iter().map(|f| format!("`{}`", f.line)).collect();
        row(
            "fallback",
            format!(
                "{} while the agent is limited for more than {}",
                lines.join(", then "),
                human_duration(c.fallback_after)
            ),
        );
    }
    row(
        "max_cost",
        c.max_cost
            .map_or_else(|| "no limit".to_owned(), |usd| format!("${usd:.2}")),
    );
    row(
        "max_runtime",
        c.max_runtime
            .map_or_else(|| "no limit".to_owned(), human_duration),
    );
    if let Some(notify) = &c.notify {
        row("notify", notify_row(notify, path));
    }
    let lines = file.body.lines().count();
    row(
        "prompt",
        format!(
            "{} bytes, {lines} line{}",
            file.body.len(),
            if lines == 1 { "" } else { "s" }
        ),
    );
    s
}

/// The `notify` row: the events, then where messages go, every webhook redacted; a `${VAR}`
/// not set here is said.
fn notify_row(notify: &ralph_frontmatter::NotifyConfig, path: &str) -> String {
    let on: Vec<&str> = notify.on.iter().map(|e| e.as_str()).collect();
    let to = match crate::notify_cmd::targets(notify, path) {
        Ok(targets) => targets.describe().join(" · "),
        Err(err) => format!("not ready: {err}"),
    };
    format!("on {} · {to}", on.join(", "))
}
