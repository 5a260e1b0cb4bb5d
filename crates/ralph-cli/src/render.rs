//! The terminal renderer: turns engine events into lines for a person.

use std::io::Write;
use std::time::Duration;

use ralph_engine::{
    Event, EventKind, EventSink, Outcome, Stream, TaskEvent, Termination, WaitProgress, WaitReason,
    exit_status,
};
use ralph_escalation::{StoriesSummary, StoryAttempt, StoryEnd, StoryEvent};

/// How the renderer writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// Colours and the live countdown.
    pub(crate) color: bool,
    /// The output is a terminal: the countdown redraws in place.
    pub(crate) terminal: bool,
    /// Only the summary: no agent output, no per-iteration lines.
    pub(crate) quiet: bool,
}

/// Renders a run for a person.
pub(crate) struct TerminalRenderer<W: Write + Send> {
    out: W,
    style: Style,
    /// A countdown line is on screen and must be erased before anything else is written.
    countdown_shown: bool,
    /// The agent's output did not end with a newline yet.
    mid_line: bool,
    /// The run's folder, named in the header and the summary.
    run_dir: Option<String>,
}

impl<W: Write + Send> TerminalRenderer<W> {
    pub(crate) fn new(out: W, style: Style) -> Self {
        Self {
            out,
            style,
            countdown_shown: false,
            mid_line: false,
            run_dir: None,
        }
    }

    /// Names the run's folder (`.ralph/runs/<run_id>`) under the header and the summary.
    pub(crate) fn with_run_dir(mut self, dir: &std::path::Path) -> Self {
        self.run_dir = Some(dir.display().to_string());
        self
    }

    /// The line naming the run's folder after the header, with how to follow the run from
    /// another terminal.
    fn run_dir_line(&self, kind: &EventKind) -> Option<String> {
        let dir = self.run_dir.as_deref()?;
        match kind {
            EventKind::RunStarted { .. } if !self.style.quiet => Some(self.paint(
                "2",
                &format!("  logs: {dir}/ · follow from another terminal: ralph logs -f"),
            )),
            _ => None,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.style.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn line(&mut self, text: &str) {
        self.erase_countdown();
        if self.mid_line {
            let _ = self.out.write_all(b"\n");
            self.mid_line = false;
        }
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    fn erase_countdown(&mut self) {
        if self.countdown_shown {
            let _ = self.out.write_all(b"\r\x1b[2K");
            self.countdown_shown = false;
        }
    }

    /// The line for a task source's event: escalation's, from its typed form; another
    /// source's, its type and fields.
    fn describe_task(&self, event: &TaskEvent) -> Option<String> {
        let quiet = self.style.quiet;
        let Some(story) = StoryEvent::from_task_event(event) else {
            if quiet {
                return None;
            }
            let fields: Vec<String> = event
                .fields()
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            return Some(format!("  {} {}", event.type_name(), fields.join(" ")));
        };
        Some(match &story {
            StoryEvent::StoryStarted {
                story_id,
                title,
                attempt: 1,
                ..
            } if !quiet => self.paint("1", &format!("story {story_id}: {title}")),
            StoryEvent::CircuitTripped {
                story_id,
                reason,
                count,
                signature,
            } => {
                let on = story_id
                    .as_deref()
                    .map(|id| format!(" on {id}"))
                    .unwrap_or_default();
                let sig = signature
                    .as_deref()
                    .map(|s| format!(" · error {s}"))
                    .unwrap_or_default();
                format!(
                    "{}{on}: {reason} ×{count}{sig}",
                    self.paint("1;33", "circuit breaker tripped")
                )
            }
            StoryEvent::Reverted {
                checkpoint,
                saved_ref,
                ..
            } => format!(
                "  reverted to {} · abandoned work saved: git checkout {saved_ref}",
                short_commit(checkpoint)
            ),
            StoryEvent::StoryBlocked { story_id, reason } => format!(
                "{} {story_id}: {reason}",
                self.paint("1;31", "story blocked")
            ),
            StoryEvent::StoryPassed {
                story_id,
                attempts,
                checkpoint,
            } => {
                let at = checkpoint
                    .as_deref()
                    .map(|c| format!(" · checkpoint {}", &c[..c.len().min(12)]))
                    .unwrap_or_default();
                let s = if *attempts == 1 { "" } else { "s" };
                format!(
                    "{} {story_id} ({attempts} attempt{s}){at}",
                    self.paint("1;32", "story passes")
                )
            }
            _ => return None,
        })
    }

    /// The line for one event, if it has one.
    fn describe(&self, kind: &EventKind) -> Option<String> {
        let quiet = self.style.quiet;
        Some(match kind {
            EventKind::RunStarted {
                ralph_file,
                agent,
                max_iterations,
                max_cost_usd,
                max_runtime_ms,
                ..
            } => {
                if quiet {
                    return None;
                }
                let mut limit =
                    max_iterations.map_or_else(|| "no limit".to_owned(), |n| format!("max {n}"));
                if let Some(usd) = max_cost_usd {
                    limit.push_str(&format!(" · max ${usd:.2}"));
                }
                if let Some(ms) = max_runtime_ms {
                    let runtime = human_duration(Duration::from_millis(*ms));
                    limit.push_str(&format!(" · max {runtime} runtime"));
                }
                format!(
                    "{} {ralph_file} · agent `{agent}` · {limit}",
                    self.paint("1", "ralph")
                )
            }
            EventKind::RunResumed {
                iteration,
                previous_reason,
            } if !quiet => self.paint(
                "36",
                &format!("resuming the run after iteration {iteration} ({previous_reason})"),
            ),
            EventKind::IterationStarted { iteration, task } if !quiet => {
                let story = match (
                    task.get(StoryAttempt::STORY_ID).and_then(|v| v.as_str()),
                    task.get(StoryAttempt::ATTEMPT).and_then(|v| v.as_u64()),
                ) {
                    (Some(id), Some(n)) => format!(" · {id} attempt {n}"),
                    (Some(id), None) => format!(" · {id}"),
                    _ => String::new(),
                };
                self.paint("1;36", &format!("── iteration {iteration}{story} ──"))
            }
            EventKind::Task(event) => return self.describe_task(event),
            EventKind::CommandFinished {
                name,
                exit_code,
                duration_ms,
                timed_out,
                ..
            } if !quiet => {
                let ok = *exit_code == Some(0);
                let status = if *timed_out {
                    "timed out".to_owned()
                } else {
                    exit_status(*exit_code, None)
                };
                let mark = if ok {
                    self.paint("32", "✓")
                } else {
                    self.paint("33", "!")
                };
                format!(
                    "  {mark} command {name} ({status}, {})",
                    human_duration(Duration::from_millis(*duration_ms))
                )
            }
            EventKind::IterationEnded {
                iteration,
                exit_code,
                signal,
                duration_ms,
                termination,
                state,
                ..
            } if !quiet => {
                let status = match (termination, exit_code, signal) {
                    (Termination::Timeout, _, _) => self.paint("31", "timed out"),
                    (Termination::Interrupted, _, _) => self.paint("33", "stopped"),
                    (Termination::IdleTimeout, _, _) => self.paint("33", "idle timeout"),
                    (_, Some(0), _) => self.paint("32", "exit 0"),
                    (_, code, sig) => self.paint("31", &exit_status(*code, *sig)),
                };
                let state = state
                    .as_deref()
                    .map(|s| format!(" · state {}", self.paint("35", s)))
                    .unwrap_or_default();
                format!(
                    "── iteration {iteration} done · {status} · {}{state}",
                    human_duration(Duration::from_millis(*duration_ms))
                )
            }
            EventKind::IterationIdle {
                consecutive_idle,
                idle_elapsed_ms,
                next_delay_ms,
                ..
            } if !quiet => match next_delay_ms {
                // On a terminal the countdown that follows is erased when it ends, so this line
                // keeps the wait; elsewhere the wait's own line says it.
                Some(next) if self.style.terminal => format!(
                    "  idle ×{consecutive_idle} · idle for {} · next run in {}",
                    human_duration(Duration::from_millis(*idle_elapsed_ms)),
                    human_duration(Duration::from_millis(*next))
                ),
                Some(_) => format!(
                    "  idle ×{consecutive_idle} · idle for {}",
                    human_duration(Duration::from_millis(*idle_elapsed_ms))
                ),
                None => format!(
                    "  idle ×{consecutive_idle} · idle for {}: the next wait would pass idle.max",
                    human_duration(Duration::from_millis(*idle_elapsed_ms))
                ),
            },
            EventKind::AttemptEnded {
                attempt,
                max_attempts,
                ok,
                results,
                ..
            } => {
                if *ok {
                    let n = results.len();
                    format!(
                        "attempt {attempt}/{max_attempts} {} {n} of {n} check{} passed",
                        self.paint("32", "✓"),
                        if n == 1 { "" } else { "s" }
                    )
                } else {
                    let failed: Vec<_> = results.iter().filter(|r| !r.passed()).collect();
                    let names = failed
                        .iter()
                        .map(|r| format!("{} ({})", r.command, r.status()))
                        .collect::<Vec<_>>()
                        .join(", ");
                    format!(
                        "attempt {attempt}/{max_attempts} {} {} of {} check{} failed: {names}",
                        self.paint("31", "✗"),
                        failed.len(),
                        results.len(),
                        if results.len() == 1 { "" } else { "s" }
                    )
                }
            }
            EventKind::ConfigReloaded { .. } if !quiet => self.paint(
                "36",
                "RALPH.md changed: this iteration uses the new version",
            ),
            EventKind::ConfigRejected { errors, .. } => {
                let mut text = self.paint(
                    "33",
                    "RALPH.md changed but is invalid; the loop goes on with the previous version:",
                );
                for e in errors {
                    text.push_str("\n  ");
                    text.push_str(e);
                }
                text
            }
            EventKind::WaitSkipped { grace_ms, .. } if !quiet => format!(
                "  wait skipped (Ctrl+C): running in {} · Ctrl+C again stops",
                human_duration(Duration::from_millis(*grace_ms))
            ),
            EventKind::IterationFailed {
                consecutive_failures,
                failure,
                next_delay_ms,
                ..
            } if !quiet => {
                let mark = self.paint("31", "✗");
                // As for idle: off a terminal the wait's own line says how long.
                let next = match next_delay_ms {
                    Some(ms) if self.style.terminal => format!(
                        " · next run in {}",
                        human_duration(Duration::from_millis(*ms))
                    ),
                    _ => String::new(),
                };
                format!("  {mark} failed ×{consecutive_failures}: {failure}{next}")
            }
            EventKind::RateLimited { until, wait_ms, .. } => {
                let until = humantime::format_rfc3339_seconds(*until);
                let next = match wait_ms {
                    Some(ms) if self.style.terminal => format!(
                        " · next run in {}",
                        human_duration(Duration::from_millis(*ms))
                    ),
                    _ => String::new(),
                };
                format!("  {} until {until}{next}", self.paint("33", "rate-limited"))
            }
            EventKind::StopRequested { .. } => self.paint(
                "33",
                "Ctrl+C: the loop stops after this iteration · Ctrl+C again stops now",
            ),
            EventKind::StateHandled {
                state,
                then,
                hook_exit_code,
                ..
            } if !quiet => {
                let hook = hook_exit_code
                    .map(|code| format!(" · hook exit {code}"))
                    .unwrap_or_default();
                format!("  {} {state} → {then}{hook}", self.paint("1;36", "state"))
            }
            EventKind::RunEnded {
                reason,
                iterations,
                idle_iterations,
                idle_ms,
                exit_code,
                outcome,
                flake_retries,
                cost_usd,
                num_turns,
                task,
                usage,
            } => {
                let stories = StoriesSummary::from_fields(task);
                let why = match StoryEnd::of(reason) {
                    Some(StoryEnd::StoriesDone) => "every story passes",
                    Some(StoryEnd::StoriesBlocked) => "no story left to do; some are blocked",
                    Some(StoryEnd::CircuitOpen) => {
                        "circuit breaker open: the work was logged and reverted"
                    }
                    Some(StoryEnd::MaxIterationsWorkLeft) => "reached max_iterations",
                    _ => "",
                };
                let why = match reason.as_str() {
                    _ if !why.is_empty() => why.to_owned(),
                    "max_iterations" if *exit_code != 0 => {
                        "reached max_iterations; the last run failed".to_owned()
                    }
                    "max_iterations" => "reached max_iterations".to_owned(),
                    "idle_limit" => {
                        "idle limit reached (idle.max): the agent has nothing to do".to_owned()
                    }
                    "interrupted" => "interrupted".to_owned(),
                    // --stop-on-error, or an agent that could not start (its error follows).
                    "agent_failed" => "the agent failed".to_owned(),
                    "agent_failing" => {
                        "the agent kept failing (failure.max_consecutive runs in a row)".to_owned()
                    }
                    "max_cost" => "max_cost reached: the agents' cost hit the budget".to_owned(),
                    "max_runtime" => "max_runtime reached".to_owned(),
                    "pty_idle_timeout" => {
                        "the agent printed nothing for pty.idle_timeout (a safety stop)".to_owned()
                    }
                    "converged" => match (outcome, flake_retries) {
                        (Some(Outcome::CleanWithFlake), Some(n)) => format!(
                            "converged: every check passes, after a failed attempt (flake_retries {n})"
                        ),
                        _ => "converged: every check passes".to_owned(),
                    },
                    "max_attempts_reached" => "not converged: max_attempts reached".to_owned(),
                    "agent_done" => "the agent reported done".to_owned(),
                    other => other.to_owned(),
                };
                let why = match stories {
                    Some(s) => format!(
                        "{why} · stories: {} passed, {} blocked, {} left",
                        s.passed, s.blocked, s.remaining
                    ),
                    None => why,
                };
                let color = if *exit_code == 0 { "1;32" } else { "1;31" };
                // Only agents whose adapter reports them (Claude's stream-json) have these.
                let mut spent = usage.as_ref().map(tokens_summary).unwrap_or_default();
                if let Some(cost) = cost_usd {
                    spent.push_str(&format!(" · ${cost:.2}"));
                }
                if let Some(turns) = num_turns {
                    let s = if *turns == 1 { "" } else { "s" };
                    spent.push_str(&format!(" · {turns} turn{s}"));
                }
                format!(
                    "{} {why} · {iterations} iteration{} ({idle_iterations} idle) · idle {}{spent} · exit {exit_code}",
                    self.paint(color, "■ done:"),
                    if *iterations == 1 { "" } else { "s" },
                    human_duration(Duration::from_millis(*idle_ms)),
                )
            }
            _ => return None,
        })
    }
}

impl<W: Write + Send> EventSink for TerminalRenderer<W> {
    fn event(&mut self, event: &Event) {
        if let EventKind::Warning { message } = &event.kind {
            // As the libraries' `tracing` warnings are printed: stderr, `warning: MESSAGE`.
            self.erase_countdown();
            let _ = self.out.flush();
            let _ = writeln!(std::io::stderr(), "warning: {message}");
            return;
        }
        if let Some(mut line) = self.describe(&event.kind) {
            // The summary names the folder again, on its own line even with --quiet.
            if let (EventKind::RunEnded { .. }, Some(dir)) = (&event.kind, &self.run_dir) {
                line.push_str(&format!(" · logs: {dir}/"));
            }
            self.line(&line);
        }
        if let Some(line) = self.run_dir_line(&event.kind) {
            self.line(&line);
        }
    }

    fn output(&mut self, _iteration: u64, _stream: Stream, bytes: &[u8]) {
        if self.style.quiet || bytes.is_empty() {
            return;
        }
        self.erase_countdown();
        let _ = self.out.write_all(bytes);
        let _ = self.out.flush();
        self.mid_line = !bytes.ends_with(b"\n");
    }

    fn wait_progress(&mut self, progress: &WaitProgress) {
        if self.style.quiet {
            return;
        }
        let first = progress.remaining == progress.total;
        if !self.style.terminal && !first {
            return;
        }
        let what = match progress.reason {
            WaitReason::Idle => format!("idle ×{}", progress.consecutive_idle),
            WaitReason::Delay => "delay".to_owned(),
            WaitReason::State => "waiting".to_owned(),
            WaitReason::Retry => "retry".to_owned(),
            WaitReason::Failure => "failed".to_owned(),
            WaitReason::RateLimit => "rate-limited".to_owned(),
            _ => "waiting".to_owned(),
        };
        if self.style.terminal {
            // Whole seconds, rounded up, so the count never shows 0 while still waiting.
            let secs = progress.remaining.as_millis().div_ceil(1000);
            let text = format!(
                "{what} — next run in {} · Ctrl+C runs now, twice stops",
                human_duration(Duration::from_secs(u64::try_from(secs).unwrap_or(u64::MAX)))
            );
            self.erase_countdown();
            if self.mid_line {
                let _ = self.out.write_all(b"\n");
                self.mid_line = false;
            }
            let _ = write!(self.out, "{}", self.paint("2", &text));
            let _ = self.out.flush();
            self.countdown_shown = true;
        } else {
            let text = format!(
                "{what} — waiting {} before the next run",
                human_duration(progress.total)
            );
            self.line(&text);
        }
    }

    fn wait_finished(&mut self) {
        self.erase_countdown();
        let _ = self.out.flush();
    }
}

/// `850ms`, `3.2s`, `1m 12s`, `2h 5m`.
pub(crate) fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    if secs < 10 && ms % 1000 != 0 {
        return format!("{:.1}s", d.as_secs_f64());
    }
    if secs < 60 {
        return format!("{secs}s");
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, s) {
        (0, 0) => format!("{m}m"),
        (0, _) => format!("{m}m {s}s"),
        (_, _) if m == 0 => format!("{h}h"),
        _ => format!("{h}h {m}m"),
    }
}

/// ` · 98.7k tokens in (88.4k cached), 1.5k out`, or nothing when no tokens were reported.
fn tokens_summary(usage: &ralph_engine::Usage) -> String {
    fn short(n: u64) -> String {
        match n {
            0..1_000 => n.to_string(),
            1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
            _ => format!("{:.1}M", n as f64 / 1e6),
        }
    }
    let (Some(input), Some(output)) = (usage.input_tokens, usage.output_tokens) else {
        return String::new();
    };
    let cached = match usage.cached_input_tokens {
        Some(c) if c > 0 => format!(" ({} cached)", short(c)),
        _ => String::new(),
    };
    format!(
        " · {} tokens in{cached}, {} out",
        short(input),
        short(output)
    )
}

/// A commit id shortened as git shows it (12 characters); an id that is not plain ASCII is
/// shown whole rather than cut inside a character.
fn short_commit(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_engine::EndReason;
    use std::time::SystemTime;

    #[test]
    fn a_commit_id_is_shortened_to_twelve_characters_never_inside_one() {
        assert_eq!(super::short_commit("0123456789abcdef0123"), "0123456789ab");
        assert_eq!(super::short_commit("abc"), "abc");
        let odd = "aaaaaaaaaaa\u{e9}b";
        assert_eq!(super::short_commit(odd), odd);
    }

    fn render(kinds: &[EventKind], style: Style) -> String {
        let mut out = Vec::new();
        {
            let mut r = TerminalRenderer::new(&mut out, style);
            for kind in kinds {
                r.event(&Event {
                    ts: SystemTime::UNIX_EPOCH,
                    run_id: "test".into(),
                    kind: kind.clone(),
                });
            }
        }
        String::from_utf8(out).unwrap()
    }

    const PLAIN: Style = Style {
        color: false,
        terminal: false,
        quiet: false,
    };

    #[test]
    fn header_and_summary_name_the_run_folder() {
        let mut out = Vec::new();
        {
            let mut r = TerminalRenderer::new(&mut out, PLAIN)
                .with_run_dir(std::path::Path::new(".ralph/runs/20260101T000000000-1"));
            for kind in [
                EventKind::RunStarted {
                    events_version: ralph_engine::EVENTS_VERSION,
                    ralph_file: "RALPH.md".into(),
                    agent: "claude -p".into(),
                    max_iterations: Some(20),
                    idle: None,
                    max_cost_usd: None,
                    max_runtime_ms: None,
                },
                EventKind::RunEnded {
                    reason: EndReason::MaxIterations,
                    iterations: 20,
                    idle_iterations: 0,
                    idle_ms: 0,
                    exit_code: 0,
                    outcome: None,
                    flake_retries: None,
                    cost_usd: None,
                    num_turns: None,
                    task: Default::default(),
                    usage: None,
                },
            ] {
                r.event(&Event {
                    ts: SystemTime::UNIX_EPOCH,
                    run_id: "test".into(),
                    kind,
                });
            }
        }
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn human_durations_read_naturally() {
        let cases = [
            (Duration::from_millis(850), "850ms"),
            (Duration::from_millis(3200), "3.2s"),
            (Duration::from_secs(42), "42s"),
            (Duration::from_secs(72), "1m 12s"),
            (Duration::from_secs(300), "5m"),
            (Duration::from_secs(7500), "2h 5m"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want);
        }
    }

    #[test]
    fn iteration_lines() {
        let text = render(
            &[
                EventKind::IterationStarted {
                    iteration: 3,
                    task: Default::default(),
                },
                EventKind::CommandFinished {
                    iteration: 3,
                    name: "tests".into(),
                    exit_code: Some(0),
                    duration_ms: 120,
                    timed_out: false,
                },
                EventKind::IterationEnded {
                    iteration: 3,
                    exit_code: Some(0),
                    signal: None,
                    duration_ms: 3200,
                    timed_out: false,
                    termination: Termination::Natural,
                    state: Some("idle".into()),
                    markers: Vec::new(),
                    log_file: None,
                    usage: None,
                    failed: false,
                    failure: None,
                },
                EventKind::IterationIdle {
                    iteration: 3,
                    consecutive_idle: 2,
                    idle_elapsed_ms: 30_000,
                    next_delay_ms: Some(60_000),
                },
            ],
            PLAIN,
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_idle_line_names_the_wait_only_where_the_countdown_is_erased() {
        let idle = [EventKind::IterationIdle {
            iteration: 3,
            consecutive_idle: 2,
            idle_elapsed_ms: 30_000,
            next_delay_ms: Some(60_000),
        }];
        let terminal = Style {
            terminal: true,
            ..PLAIN
        };
        assert_eq!(
            render(&idle, terminal),
            "  idle ×2 · idle for 30s · next run in 1m\n"
        );
        // Off a terminal the wait's own line follows: "idle ×2 — waiting 1m before the next run".
        assert_eq!(render(&idle, PLAIN), "  idle ×2 · idle for 30s\n");
    }

    #[test]
    fn run_summary_by_reason() {
        let reasons = [
            (EndReason::MaxIterations, 0, None),
            (EndReason::IdleLimit, 0, None),
            (EndReason::Interrupted, 130, None),
            (EndReason::AgentFailed, 1, None),
            (EndReason::Converged, 0, Some((Outcome::Clean, 0))),
            (EndReason::Converged, 0, Some((Outcome::CleanWithFlake, 1))),
            (EndReason::MaxAttemptsReached, 1, Some((Outcome::Failed, 0))),
            (EndReason::AgentFailing, 1, None),
            (EndReason::MaxIterationsLastFailed, 1, None),
            (EndReason::MaxCost, 1, None),
            (EndReason::MaxRuntime, 1, None),
        ];
        let kinds: Vec<_> = reasons
            .into_iter()
            .map(|(reason, exit_code, convergence)| EventKind::RunEnded {
                reason,
                iterations: 5,
                idle_iterations: 3,
                idle_ms: 72_000,
                exit_code,
                outcome: convergence.map(|c| c.0),
                flake_retries: convergence.map(|c| c.1),
                cost_usd: None,
                num_turns: None,
                usage: None,
                task: Default::default(),
            })
            .collect();
        insta::assert_snapshot!(render(&kinds, PLAIN));
    }

    #[test]
    fn failure_and_rate_limit_lines() {
        let text = render(
            &[
                EventKind::IterationFailed {
                    iteration: 2,
                    consecutive_failures: 3,
                    failure: "exit 1: Invalid API key · Please run /login".into(),
                    next_delay_ms: Some(20_000),
                },
                EventKind::IterationFailed {
                    iteration: 10,
                    consecutive_failures: 10,
                    failure: "killed by signal 9".into(),
                    next_delay_ms: None,
                },
                EventKind::RateLimited {
                    iteration: 4,
                    until: SystemTime::UNIX_EPOCH + Duration::from_secs(1_755_615_600),
                    wait_ms: Some(21_600_000),
                },
                EventKind::WaitSkipped {
                    iteration: 4,
                    grace_ms: 1000,
                },
            ],
            // On a terminal, where the lines name the wait (the countdown is erased).
            Style {
                terminal: true,
                ..PLAIN
            },
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_failure_line_names_the_wait_only_where_the_countdown_is_erased() {
        let failed = [EventKind::IterationFailed {
            iteration: 2,
            consecutive_failures: 3,
            failure: "exit 1".into(),
            next_delay_ms: Some(20_000),
        }];
        let terminal = Style {
            terminal: true,
            ..PLAIN
        };
        assert_eq!(
            render(&failed, terminal),
            "  ✗ failed ×3: exit 1 · next run in 20s\n"
        );
        assert_eq!(render(&failed, PLAIN), "  ✗ failed ×3: exit 1\n");
    }

    #[test]
    fn the_header_shows_the_budgets() {
        let started = |max_cost_usd, max_runtime_ms| EventKind::RunStarted {
            events_version: ralph_engine::EVENTS_VERSION,
            ralph_file: "RALPH.md".into(),
            agent: "claude -p".into(),
            max_iterations: Some(40),
            idle: None,
            max_cost_usd,
            max_runtime_ms,
        };
        let text = render(
            &[
                started(None, None),
                started(Some(20.0), Some(8 * 3_600_000)),
            ],
            PLAIN,
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn failure_and_rate_limit_countdowns() {
        let mut out = Vec::new();
        {
            let style = Style {
                color: false,
                terminal: true,
                quiet: false,
            };
            let mut r = TerminalRenderer::new(&mut out, style);
            for (reason, secs) in [(WaitReason::Failure, 20), (WaitReason::RateLimit, 21_600)] {
                r.wait_progress(&WaitProgress {
                    reason,
                    consecutive_idle: 0,
                    total: Duration::from_secs(secs),
                    remaining: Duration::from_secs(secs),
                });
                r.wait_finished();
            }
        }
        insta::assert_debug_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn run_summary_with_the_agents_cost_and_turns() {
        let ended = |cost_usd, num_turns| EventKind::RunEnded {
            reason: EndReason::IdleLimit,
            iterations: 3,
            idle_iterations: 1,
            idle_ms: 30_000,
            exit_code: 0,
            outcome: None,
            flake_retries: None,
            cost_usd,
            num_turns,
            usage: None,
            task: Default::default(),
        };
        let kinds = [
            ended(Some(0.3018245), Some(13)),
            ended(Some(0.0214), Some(1)),
            ended(None, Some(2)),
        ];
        insta::assert_snapshot!(render(&kinds, PLAIN));
    }

    #[test]
    fn escalation_lines() {
        let ended = |reason, exit_code, passed, blocked, remaining| EventKind::RunEnded {
            reason,
            iterations: 7,
            idle_iterations: 0,
            idle_ms: 0,
            exit_code,
            outcome: None,
            flake_retries: None,
            cost_usd: None,
            num_turns: None,
            usage: None,
            task: ralph_escalation::StoriesSummary {
                passed,
                blocked,
                remaining,
            }
            .fields(),
        };
        let story = |e: ralph_escalation::StoryEvent| EventKind::Task(e.into());
        let kinds = [
            story(ralph_escalation::StoryEvent::StoryPassed {
                story_id: "US-001".into(),
                attempts: 1,
                checkpoint: Some("0123456789abcdef0123456789abcdef01234567".into()),
            }),
            story(ralph_escalation::StoryEvent::CircuitTripped {
                story_id: Some("US-002".into()),
                reason: "same_error".into(),
                count: 3,
                signature: Some("3f2a9c0d1e2b4a5c".into()),
            }),
            story(ralph_escalation::StoryEvent::Reverted {
                story_id: Some("US-002".into()),
                checkpoint: "0123456789abcdef0123456789abcdef01234567".into(),
                saved_ref: "refs/ralph/attempts/US-002/1".into(),
            }),
            story(ralph_escalation::StoryEvent::StoryBlocked {
                story_id: "US-002".into(),
                reason: "the same error 3 times in a row (signature 3f2a9c0d1e2b4a5c)".into(),
            }),
            story(ralph_escalation::StoryEvent::CircuitTripped {
                story_id: None,
                reason: "blocked".into(),
                count: 1,
                signature: None,
            }),
            ended(ralph_escalation::StoryEnd::StoriesDone.reason(), 0, 3, 0, 0),
            ended(
                ralph_escalation::StoryEnd::StoriesBlocked.reason(),
                1,
                2,
                1,
                0,
            ),
            ended(
                ralph_escalation::StoryEnd::MaxIterationsWorkLeft.reason(),
                1,
                1,
                0,
                2,
            ),
            EventKind::RunEnded {
                reason: ralph_escalation::StoryEnd::CircuitOpen.reason(),
                iterations: 3,
                idle_iterations: 0,
                idle_ms: 0,
                exit_code: 1,
                outcome: Some(Outcome::Failed),
                flake_retries: Some(0),
                cost_usd: None,
                num_turns: None,
                usage: None,
                task: Default::default(),
            },
        ];
        insta::assert_snapshot!(render(&kinds, PLAIN));
    }

    #[test]
    fn attempt_verdict_lines() {
        let check = |command: &str, exit_code: i32| ralph_engine::CheckResult {
            command: command.into(),
            exit_code: Some(exit_code),
            duration_ms: 10,
            tail: None,
            truncated: false,
            timed_out: false,
        };
        let attempt = |attempt, results: Vec<ralph_engine::CheckResult>| EventKind::AttemptEnded {
            attempt,
            max_attempts: 6,
            iteration: attempt,
            duration_ms: 100,
            ok: results.iter().all(ralph_engine::CheckResult::passed),
            results,
            backoff_ms: None,
        };
        let text = render(
            &[
                attempt(
                    2,
                    vec![
                        check("cargo build", 0),
                        check("cargo test", 101),
                        check("cargo clippy", 0),
                    ],
                ),
                attempt(3, vec![check("cargo build", 0), check("cargo test", 0)]),
            ],
            PLAIN,
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn countdown_on_a_terminal_redraws_in_place_and_is_erased() {
        let mut out = Vec::new();
        {
            let style = Style {
                color: false,
                terminal: true,
                quiet: false,
            };
            let mut r = TerminalRenderer::new(&mut out, style);
            for remaining in [72, 71] {
                r.wait_progress(&WaitProgress {
                    reason: WaitReason::Idle,
                    consecutive_idle: 3,
                    total: Duration::from_secs(72),
                    remaining: Duration::from_secs(remaining),
                });
            }
            r.wait_finished();
        }
        insta::assert_debug_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn countdown_without_a_terminal_is_one_plain_line() {
        let mut out = Vec::new();
        {
            let mut r = TerminalRenderer::new(&mut out, PLAIN);
            for remaining in [72, 71, 70] {
                r.wait_progress(&WaitProgress {
                    reason: WaitReason::Idle,
                    consecutive_idle: 3,
                    total: Duration::from_secs(72),
                    remaining: Duration::from_secs(remaining),
                });
            }
            r.wait_finished();
        }
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn declared_state_lines_and_the_agent_done_summary() {
        let text = render(
            &[
                EventKind::StateHandled {
                    iteration: 4,
                    state: "review".into(),
                    then: "wait".into(),
                    hook_exit_code: Some(0),
                },
                EventKind::StateHandled {
                    iteration: 5,
                    state: "shipped".into(),
                    then: "stop".into(),
                    hook_exit_code: None,
                },
                EventKind::RunEnded {
                    reason: EndReason::AgentDone,
                    iterations: 5,
                    idle_iterations: 0,
                    idle_ms: 0,
                    exit_code: 0,
                    outcome: None,
                    flake_retries: None,
                    cost_usd: None,
                    num_turns: None,
                    usage: None,
                    task: Default::default(),
                },
            ],
            PLAIN,
        );
        insta::assert_snapshot!(text);
    }
}
