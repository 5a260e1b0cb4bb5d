//! The terminal renderer: turns engine events into lines for a person.
//!
//! [`TerminalRenderer`] writes (agent output, the countdown, erasing it); `describe` picks the
//! line for an event, built by one function per event kind: `lines` for the loop's own events,
//! `story` for a task source's, `run_end` for the summary.

mod lines;
mod run_end;
pub(crate) use run_end::story_end_sentence;
mod story;

use std::io::Write;
use std::time::Duration;

use ralph_engine::{Event, EventKind, EventSink, Stream, WaitProgress, WaitReason};

/// How the renderer writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// Colours and the live countdown.
    pub(crate) color: bool,
    /// The output is a terminal: the countdown redraws in place.
    pub(crate) terminal: bool,
    /// Only the summary: no agent output, no per-iteration lines.
    pub(crate) quiet: bool,
    /// What the task list's tasks are called: "story" (prd.json), "task" (any other list).
    pub(crate) words: ralph_escalation::TaskWords,
}

impl Style {
    /// `text` in the SGR colour `code` (`1;32`: bold green), or plain without colours.
    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
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
    /// The command that follows the run from another terminal, named in the header.
    follow: String,
}

impl<W: Write + Send> TerminalRenderer<W> {
    pub(crate) fn new(out: W, style: Style) -> Self {
        Self {
            out,
            style,
            countdown_shown: false,
            mid_line: false,
            run_dir: None,
            follow: String::new(),
        }
    }

    /// Names the run's folder (`.ralph/runs/<run_id>`) under the header and the summary.
    pub(crate) fn with_run_dir(mut self, dir: &std::path::Path) -> Self {
        self.run_dir = Some(dir.display().to_string());
        self.follow = crate::logs_cmd::follow_command(std::path::Path::new("."), dir);
        self
    }

    /// The line naming the run's folder after the header, with how to follow the run from
    /// another terminal.
    fn run_dir_line(&self, kind: &EventKind) -> Option<String> {
        let dir = self.run_dir.as_deref()?;
        let follow = &self.follow;
        match kind {
            EventKind::RunStarted { .. } if !self.style.quiet => Some(self.style.paint(
                "2",
                &format!("  logs: {dir}/ · follow from another terminal: {follow}"),
            )),
            _ => None,
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

    /// The line for one event, if it has one.
    fn describe(&self, kind: &EventKind) -> Option<String> {
        use lines::*;
        let style = self.style;
        if style.quiet && !kept_when_quiet(kind) {
            return None;
        }
        Some(match kind {
            EventKind::RunStarted {
                ralph_file,
                agent,
                max_iterations,
                max_cost_usd,
                max_runtime_ms,
                ..
            } => run_started_line(
                style,
                ralph_file,
                agent,
                *max_iterations,
                *max_cost_usd,
                *max_runtime_ms,
            ),
            EventKind::RunResumed {
                iteration,
                previous_reason,
            } => run_resumed_line(style, *iteration, previous_reason),
            EventKind::IterationStarted { iteration, task } => {
                iteration_started_line(style, *iteration, task)
            }
            EventKind::Task(event) => return story::task_line(style, event),
            EventKind::CommandFinished {
                name,
                exit_code,
                duration_ms,
                timed_out,
                ..
            } => command_finished_line(style, name, *exit_code, *duration_ms, *timed_out),
            EventKind::IterationEnded {
                iteration,
                exit_code,
                signal,
                duration_ms,
                termination,
                state,
                ..
            } => iteration_ended_line(
                style,
                *iteration,
                *termination,
                *exit_code,
                *signal,
                *duration_ms,
                state.as_deref(),
            ),
            EventKind::IterationIdle {
                consecutive_idle,
                idle_elapsed_ms,
                next_delay_ms,
                ..
            } => iteration_idle_line(style, *consecutive_idle, *idle_elapsed_ms, *next_delay_ms),
            EventKind::AttemptEnded {
                attempt,
                max_attempts,
                ok,
                results,
                ..
            } => attempt_ended_line(style, *attempt, *max_attempts, *ok, results),
            EventKind::ConfigReloaded { .. } => config_reloaded_line(style),
            EventKind::ConfigRejected { errors, .. } => config_rejected_line(style, errors),
            EventKind::WaitSkipped { grace_ms, .. } => wait_skipped_line(*grace_ms),
            EventKind::IterationFailed {
                consecutive_failures,
                failure,
                next_delay_ms,
                ..
            } => iteration_failed_line(style, *consecutive_failures, failure, *next_delay_ms),
            EventKind::RateLimited {
                until,
                wait_ms,
                why,
                fallback,
                ..
            } => rate_limited_line(style, *until, why, *wait_ms, fallback.as_deref()),
            EventKind::AgentSwitched {
                from, to, until, ..
            } => agent_switched_line(style, from, to, *until),
            EventKind::AgentRetrying {
                reason,
                attempt,
                max_attempts,
                delay_ms,
                ..
            } => agent_retrying_line(style, reason, *attempt, *max_attempts, *delay_ms),
            EventKind::StopRequested { .. } => stop_requested_line(style),
            EventKind::SandboxDenied { host, port, .. } => sandbox_denied_line(style, host, *port),
            EventKind::StateHandled {
                state,
                then,
                hook_exit_code,
                ..
            } => state_handled_line(style, state, then, *hook_exit_code),
            EventKind::RunEnded { .. } => return run_end::run_ended_line(style, kind),
            // A task source's wait is said once, with what it waits for; its looks count down.
            EventKind::WaitStarted {
                reason: WaitReason::Task,
                why: Some(why),
                ..
            } => style.paint("2", &format!("⏸ {why} · Ctrl+C looks now, twice stops")),
            // Any other WAIT_STARTED (the countdown says it), WARNING (on stderr), and kinds added later.
            _ => return None,
        })
    }
}

/// Whether `--quiet` keeps an event's line: the summary, and what a person must know about (a
/// verdict, a rejected RALPH.md, a rate limit, a stop request, a story's fate: `story` decides).
fn kept_when_quiet(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::AttemptEnded { .. }
            | EventKind::ConfigRejected { .. }
            | EventKind::RateLimited { .. }
            | EventKind::AgentSwitched { .. }
            | EventKind::StopRequested { .. }
            | EventKind::SandboxDenied { .. }
            | EventKind::RunEnded { .. }
            | EventKind::Task(_)
    )
}

impl<W: Write + Send> EventSink for TerminalRenderer<W> {
    fn event(&mut self, event: &Event) {
        if let EventKind::Warning { message, .. } = &event.kind {
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
        // A task source's wait was said once, when it started; its looks are not news.
        let looking = progress.reason == WaitReason::Task;
        if !self.style.terminal && (!first || looking) {
            return;
        }
        let what = match progress.reason {
            WaitReason::Idle => format!("idle ×{}", progress.consecutive_idle),
            WaitReason::Delay => "delay".to_owned(),
            WaitReason::State => "waiting".to_owned(),
            WaitReason::Retry => "retry".to_owned(),
            WaitReason::Failure => "failed".to_owned(),
            WaitReason::RateLimit => "rate-limited".to_owned(),
            WaitReason::Task => "waiting for the task list".to_owned(),
            _ => "waiting".to_owned(),
        };
        let next = match looking {
            true => "next look in",
            false => "next run in",
        };
        if self.style.terminal {
            // Whole seconds, rounded up, so the count never shows 0 while still waiting.
            let secs = progress.remaining.as_millis().div_ceil(1000);
            let text = format!(
                "{what} — {next} {} · Ctrl+C runs now, twice stops",
                human_duration(Duration::from_secs(u64::try_from(secs).unwrap_or(u64::MAX)))
            );
            self.erase_countdown();
            if self.mid_line {
                let _ = self.out.write_all(b"\n");
                self.mid_line = false;
            }
            let _ = write!(self.out, "{}", self.style.paint("2", &text));
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

/// `text` (a task list's words: an issue's title, a checklist line, a reason an agent gave)
/// made inert on a terminal: each control character (an escape sequence's start, a bell, a
/// carriage return) shown as `�`, so a title cannot clear the screen, set the window title or
/// write to the clipboard.
pub(crate) fn inert(text: &str) -> std::borrow::Cow<'_, str> {
    match text.chars().any(char::is_control) {
        false => std::borrow::Cow::Borrowed(text),
        true => text
            .chars()
            .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
            .collect::<String>()
            .into(),
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

/// A duration given in milliseconds, as [`human_duration`] writes it.
fn human_ms(ms: u64) -> String {
    human_duration(Duration::from_millis(ms))
}

/// `950`, `12.3k`, `4.1M`.
pub(crate) fn compact(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// A commit id shortened as git shows it (12 characters); an id that is not plain ASCII is
/// shown whole rather than cut inside a character.
fn short_commit(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_engine::{EndReason, FailureKind, Outcome, Termination};
    use std::time::SystemTime;

    #[test]
    fn a_commit_id_is_shortened_to_twelve_characters_never_inside_one() {
        assert_eq!(super::short_commit("0123456789abcdef0123"), "0123456789ab");
        assert_eq!(super::short_commit("abc"), "abc");
        let odd = "aaaaaaaaaaa\u{e9}b";
        assert_eq!(super::short_commit(odd), odd);
    }

    fn render(kinds: &[EventKind], style: Style) -> String {
        render_in(kinds, style, None)
    }

    /// The renderer's output for `kinds`, naming `run_dir` where given.
    fn render_in(kinds: &[EventKind], style: Style, run_dir: Option<&str>) -> String {
        let mut out = Vec::new();
        {
            let mut r = TerminalRenderer::new(&mut out, style);
            if let Some(dir) = run_dir {
                r = r.with_run_dir(std::path::Path::new(dir));
            }
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
        words: ralph_escalation::TaskWords::STORY,
    };

    /// Where the countdown redraws in place, and the lines before it name the wait.
    const TERMINAL: Style = Style {
        terminal: true,
        ..PLAIN
    };

    /// An event's line on a terminal, then off one.
    fn on_and_off_a_terminal(kind: EventKind) -> [String; 2] {
        let kinds = [kind];
        [render(&kinds, TERMINAL), render(&kinds, PLAIN)]
    }

    #[test]
    fn header_and_summary_name_the_run_folder() {
        let text = render_in(
            &[
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
            ],
            PLAIN,
            Some(".ralph/runs/20260101T000000000-1"),
        );
        insta::assert_snapshot!(text);
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
                    failure_kind: None,
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
    fn an_agent_that_could_not_start_is_not_called_killed() {
        let text = render(
            &[EventKind::IterationEnded {
                iteration: 1,
                exit_code: None,
                signal: None,
                duration_ms: 14,
                timed_out: false,
                termination: Termination::Natural,
                state: None,
                markers: Vec::new(),
                log_file: None,
                usage: None,
                failed: true,
                failure: Some("cannot start the agent `claudx`: not found on PATH".into()),
                failure_kind: Some(FailureKind::NotStarted),
            }],
            PLAIN,
        );
        assert_eq!(text, "── iteration 1 done · not started · 14ms\n");
    }

    #[test]
    fn the_idle_line_names_the_wait_only_where_the_countdown_is_erased() {
        let [on, off] = on_and_off_a_terminal(EventKind::IterationIdle {
            iteration: 3,
            consecutive_idle: 2,
            idle_elapsed_ms: 30_000,
            next_delay_ms: Some(60_000),
        });
        assert_eq!(on, "  idle ×2 · idle for 30s · next run in 1m\n");
        // Off a terminal the wait's own line follows: "idle ×2 — waiting 1m before the next run".
        assert_eq!(off, "  idle ×2 · idle for 30s\n");
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
                    failure_kind: Some(FailureKind::ExitStatus),
                    next_delay_ms: Some(20_000),
                },
                EventKind::IterationFailed {
                    iteration: 10,
                    consecutive_failures: 10,
                    failure: "killed by signal 9".into(),
                    failure_kind: Some(FailureKind::Signal),
                    next_delay_ms: None,
                },
                EventKind::RateLimited {
                    iteration: 4,
                    until: SystemTime::UNIX_EPOCH + Duration::from_secs(1_755_615_600),
                    wait_ms: Some(21_600_000),
                    why: "exit 1: You've hit your session limit · resets 3pm (UTC)".into(),
                    fallback: None,
                },
                EventKind::RateLimited {
                    iteration: 4,
                    until: SystemTime::UNIX_EPOCH + Duration::from_secs(1_755_615_600),
                    wait_ms: Some(0),
                    why: "exit 1: You've hit your session limit · resets 3pm (UTC)".into(),
                    fallback: Some("codex exec --json".into()),
                },
                EventKind::AgentSwitched {
                    iteration: 5,
                    from: "claude -p".into(),
                    to: "codex exec --json".into(),
                    why: ralph_engine::SwitchReason::RateLimited,
                    until: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_755_615_600)),
                },
                EventKind::AgentSwitched {
                    iteration: 9,
                    from: "codex exec --json".into(),
                    to: "claude -p".into(),
                    why: ralph_engine::SwitchReason::LimitReset,
                    until: None,
                },
                EventKind::WaitSkipped {
                    iteration: 4,
                    grace_ms: 1000,
                },
            ],
            // On a terminal, where the lines name the wait (the countdown is erased).
            TERMINAL,
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_failure_line_names_the_wait_only_where_the_countdown_is_erased() {
        let [on, off] = on_and_off_a_terminal(EventKind::IterationFailed {
            iteration: 2,
            consecutive_failures: 3,
            failure: "exit 1".into(),
            failure_kind: Some(FailureKind::ExitStatus),
            next_delay_ms: Some(20_000),
        });
        assert_eq!(on, "  ✗ failed ×3: exit 1 · next run in 20s\n");
        assert_eq!(off, "  ✗ failed ×3: exit 1\n");
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
            let mut r = TerminalRenderer::new(&mut out, TERMINAL);
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
            tail: (exit_code != 0).then(|| {
                let lines: Vec<String> = (1..=12).map(|n| format!("{command}: line {n}")).collect();
                format!("{}\n\n", lines.join("\n"))
            }),
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
                attempt(3, vec![check("cargo build", 2), check("cargo test", 101)]),
                attempt(4, vec![check("cargo build", 0), check("cargo test", 0)]),
            ],
            PLAIN,
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn countdown_on_a_terminal_redraws_in_place_and_is_erased() {
        let mut out = Vec::new();
        {
            let mut r = TerminalRenderer::new(&mut out, TERMINAL);
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

    #[test]
    fn quiet_keeps_the_summary_and_what_a_person_must_know() {
        let story = |e: ralph_escalation::StoryEvent| EventKind::Task(e.into());
        let mut field = serde_json::Map::new();
        field.insert("number".into(), 7.into());
        let kinds = [
            EventKind::RunStarted {
                events_version: ralph_engine::EVENTS_VERSION,
                ralph_file: "RALPH.md".into(),
                agent: "claude -p".into(),
                max_iterations: Some(3),
                idle: None,
                max_cost_usd: None,
                max_runtime_ms: None,
            },
            story(ralph_escalation::StoryEvent::StoryStarted {
                story_id: "US-001".into(),
                title: "Log in".into(),
                attempt: 1,
                max_attempts: 3,
            }),
            EventKind::IterationStarted {
                iteration: 1,
                task: Default::default(),
            },
            EventKind::Task(ralph_engine::TaskEvent::new("ISSUE_OPENED", field)),
            EventKind::IterationFailed {
                iteration: 1,
                consecutive_failures: 1,
                failure: "exit 1".into(),
                failure_kind: Some(FailureKind::ExitStatus),
                next_delay_ms: Some(1000),
            },
            EventKind::RateLimited {
                iteration: 1,
                until: SystemTime::UNIX_EPOCH,
                wait_ms: None,
                why: String::new(),
                fallback: None,
            },
            EventKind::StopRequested { iteration: 2 },
            story(ralph_escalation::StoryEvent::StoryPassed {
                story_id: "US-001".into(),
                attempts: 2,
                checkpoint: None,
            }),
            EventKind::RunEnded {
                reason: EndReason::Interrupted,
                iterations: 2,
                idle_iterations: 0,
                idle_ms: 0,
                exit_code: 130,
                outcome: None,
                flake_retries: None,
                cost_usd: None,
                num_turns: None,
                usage: None,
                task: Default::default(),
            },
        ];
        let quiet = Style {
            quiet: true,
            ..PLAIN
        };
        assert_eq!(
            render(&kinds, quiet),
            "  rate-limited until 1970-01-01T00:00:00Z\n\
             Ctrl+C: the loop stops after this iteration · Ctrl+C again stops now\n\
             story passes US-001 (2 attempts)\n\
             ■ done: interrupted · 2 iterations (0 idle) · idle 0ms · exit 130\n"
        );
    }
}
