//! The live status line: while the agent runs, one line at the bottom of the terminal, redrawn
//! in place: spinner, `iteration 3/20`, the time it has run, the story and its attempt, cost
//! and tokens so far, and when the agent last printed something.
//!
//! Only on a terminal (never in logs or piped output), never with `--quiet` or on a PTY run
//! (the agent owns the terminal then), plain without colours under `NO_COLOR`, cut to the
//! terminal's width. The renderer writes through a [`ScreenWriter`] that erases the line
//! before anything else is written; the line is only drawn again at the start of a line, so
//! the agent's streamed text is never cut into. A thread redraws it a few times a second: the
//! engine says nothing while an agent is quiet, and needs no clock of its own for this.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ralph_engine::{Event, EventKind, EventSink, RunCost, Stream};
use ralph_escalation::StoryAttempt;

use crate::render::{Style, TerminalRenderer, compact, human_duration};

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(250);
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const ERASE: &[u8] = b"\r\x1b[2K";

/// What the status line shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Status {
    /// The running iteration; `None` between iterations.
    pub(crate) iteration: Option<u64>,
    /// The iteration cap.
    pub(crate) max_iterations: Option<u64>,
    /// When the running iteration started.
    pub(crate) started: Option<Instant>,
    /// Story mode: the story and the attempt on it.
    pub(crate) story: Option<(String, Option<u64>)>,
    /// Story mode: the attempts a story is allowed.
    pub(crate) max_attempts: Option<u64>,
    /// Run totals so far, from the iterations whose agent reported them.
    pub(crate) cost_usd: Option<f64>,
    pub(crate) tokens: Option<u64>,
    /// The run's cost as the engine counts it: an agent session that goes on over several
    /// iterations once.
    pub(crate) run_cost: RunCost,
    /// When the agent last printed something in this iteration.
    pub(crate) last_output: Option<Instant>,
    /// The agent is retrying a request on its own: why, and which retry (`529 (3/10)`),
    /// until it prints something again.
    pub(crate) retrying: Option<String>,
}

impl Status {
    /// The line at `now`, cut to `width` columns, coloured or not.
    pub(crate) fn line(&self, now: Instant, width: usize, color: bool) -> Option<String> {
        let iteration = self.iteration?;
        let elapsed = self
            .started
            .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        let frame = SPINNER[(elapsed.as_millis() / TICK.as_millis()) as usize % SPINNER.len()];
        let mut parts = vec![match self.max_iterations {
            Some(max) => format!("iteration {iteration}/{max}"),
            None => format!("iteration {iteration}"),
        }];
        parts.push(seconds(elapsed));
        if let Some((story, attempt)) = &self.story {
            parts.push(match (attempt, self.max_attempts) {
                (Some(n), Some(max)) => format!("{story} attempt {n}/{max}"),
                (Some(n), None) => format!("{story} attempt {n}"),
                _ => story.clone(),
            });
        }
        if let Some(cost) = self.cost_usd {
            parts.push(format!("${cost:.2}"));
        }
        if let Some(tokens) = self.tokens {
            parts.push(format!("{} tokens", compact(tokens)));
        }
        if let Some(retry) = &self.retrying {
            parts.push(format!("agent retrying: {retry}"));
        }
        parts.push(match self.last_output {
            Some(at) => format!(
                "last output {} ago",
                seconds(now.saturating_duration_since(at))
            ),
            None => "no output yet".to_owned(),
        });
        // Cut by characters, one short of the width (the spinner and its space take two):
        // writing the last column wraps some terminals onto a new line.
        let rest: String = parts
            .join(" · ")
            .chars()
            .take(width.saturating_sub(3))
            .collect();
        Some(match color {
            true => format!("\x1b[36m{frame}\x1b[0m \x1b[2m{rest}\x1b[0m"),
            false => format!("{frame} {rest}"),
        })
    }
}

/// Whole seconds: a live count reads better without tenths.
fn seconds(d: Duration) -> String {
    match d.as_secs() {
        0 => "0s".to_owned(),
        secs => human_duration(Duration::from_secs(secs)),
    }
}

struct Screen<W: Write> {
    out: W,
    /// The status line is on screen.
    shown: bool,
    /// The last byte written ended a line: the status line may be drawn.
    at_line_start: bool,
    status: Status,
    color: bool,
    /// Columns of the terminal.
    width: fn() -> usize,
    stopped: bool,
}

impl<W: Write> Screen<W> {
    fn erase(&mut self) {
        if self.shown {
            let _ = self.out.write_all(ERASE);
            let _ = self.out.flush();
            self.shown = false;
        }
    }

    fn draw(&mut self, now: Instant) {
        if !self.at_line_start || self.stopped {
            return;
        }
        if let Some(line) = self.status.line(now, (self.width)(), self.color) {
            let erase = if self.shown { ERASE } else { b"" };
            let _ = self.out.write_all(erase);
            let _ = self.out.write_all(line.as_bytes());
            let _ = self.out.flush();
            self.shown = true;
        }
    }
}

/// The terminal, shared by the renderer's writes and the status line.
pub(crate) struct StatusLine<W: Write + Send + 'static> {
    screen: Arc<Mutex<Screen<W>>>,
}

fn lock<W: Write>(screen: &Mutex<Screen<W>>) -> MutexGuard<'_, Screen<W>> {
    screen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<W: Write + Send + 'static> StatusLine<W> {
    /// A status line on `out` (a terminal `width()` columns wide), redrawn by a thread; the
    /// renderer writes through [`StatusLine::writer`], the engine's events come in through
    /// [`StatusLine::sink`].
    pub(crate) fn start(out: W, color: bool, width: fn() -> usize) -> Self {
        let screen = Arc::new(Mutex::new(Screen {
            out,
            shown: false,
            at_line_start: true,
            status: Status::default(),
            color,
            width,
            stopped: false,
        }));
        let ticking = Arc::clone(&screen);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(TICK);
                let mut screen = lock(&ticking);
                if screen.stopped {
                    break;
                }
                screen.draw(Instant::now());
            }
        });
        Self { screen }
    }

    /// Where the renderer writes.
    pub(crate) fn writer(&self) -> ScreenWriter<W> {
        ScreenWriter {
            screen: Arc::clone(&self.screen),
        }
    }

    /// The sink that keeps the line's content up to date.
    pub(crate) fn sink(&self) -> StatusSink<W> {
        StatusSink {
            screen: Arc::clone(&self.screen),
        }
    }
}

/// The renderer's way to the terminal: the status line is erased before each write.
pub(crate) struct ScreenWriter<W: Write> {
    screen: Arc<Mutex<Screen<W>>>,
}

impl<W: Write> Write for ScreenWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut screen = lock(&self.screen);
        screen.erase();
        let n = screen.out.write(buf)?;
        if n > 0 {
            screen.at_line_start = buf[..n].ends_with(b"\n");
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        lock(&self.screen).out.flush()
    }
}

/// Follows the run's events for the status line.
pub(crate) struct StatusSink<W: Write> {
    screen: Arc<Mutex<Screen<W>>>,
}

impl<W: Write + Send> EventSink for StatusSink<W> {
    fn event(&mut self, event: &Event) {
        let mut screen = lock(&self.screen);
        let status = &mut screen.status;
        match &event.kind {
            EventKind::RunStarted { max_iterations, .. } => {
                status.max_iterations = *max_iterations;
            }
            EventKind::Task(task) => {
                if let Some(ralph_escalation::StoryEvent::StoryStarted { max_attempts, .. }) =
                    ralph_escalation::StoryEvent::from_task_event(task)
                {
                    status.max_attempts = Some(max_attempts);
                }
            }
            EventKind::IterationStarted { iteration, task } => {
                status.story = task
                    .get(StoryAttempt::STORY_ID)
                    .and_then(|v| v.as_str())
                    .map(|id| {
                        let attempt = task.get(StoryAttempt::ATTEMPT).and_then(|v| v.as_u64());
                        (id.to_owned(), attempt)
                    });
                status.iteration = Some(*iteration);
                status.started = Some(Instant::now());
                status.last_output = None;
                status.retrying = None;
            }
            EventKind::AgentRetrying {
                reason,
                attempt,
                max_attempts,
                ..
            } => {
                status.retrying = Some(ralph_agents::describe_retry(
                    reason,
                    *attempt,
                    *max_attempts,
                ));
            }
            EventKind::IterationEnded { usage, .. } => {
                status.iteration = None;
                status.retrying = None;
                if let Some(usage) = usage {
                    status.run_cost.record(usage);
                    status.cost_usd = status.run_cost.total();
                    let tokens = [usage.input_tokens, usage.output_tokens];
                    if tokens.iter().any(Option::is_some) {
                        let sum: u64 = tokens.iter().flatten().sum();
                        *status.tokens.get_or_insert(0) += sum;
                    }
                }
                screen.erase();
            }
            EventKind::RunEnded { .. } => {
                screen.status.iteration = None;
                screen.stopped = true;
                screen.erase();
            }
            _ => {}
        }
    }

    fn output(&mut self, _iteration: u64, _stream: Stream, bytes: &[u8]) {
        if !bytes.is_empty() {
            let mut screen = lock(&self.screen);
            screen.status.last_output = Some(Instant::now());
            // Output again: the retry went through.
            screen.status.retrying = None;
        }
    }
}

impl<W: Write> Drop for StatusSink<W> {
    fn drop(&mut self) {
        let mut screen = lock(&self.screen);
        screen.stopped = true;
        screen.erase();
    }
}

/// Adds the terminal renderer to `engine`, writing to stderr or stdout, naming `run_dir`, with
/// the live status line when `live` (not a PTY run) and the output is a terminal and not quiet.
pub(crate) fn add_renderer(
    engine: &mut ralph_engine::Engine,
    style: Style,
    to_stderr: bool,
    live: bool,
    run_dir: Option<&std::path::Path>,
) {
    fn add<W: Write + Send + 'static>(
        engine: &mut ralph_engine::Engine,
        out: W,
        width: fn() -> usize,
        style: Style,
        live: bool,
        run_dir: Option<&std::path::Path>,
    ) {
        fn named<W: Write + Send>(
            r: TerminalRenderer<W>,
            run_dir: Option<&std::path::Path>,
        ) -> TerminalRenderer<W> {
            match run_dir {
                Some(dir) => r.with_run_dir(dir),
                None => r,
            }
        }
        if live && style.terminal && !style.quiet {
            let line = StatusLine::start(out, style.color, width);
            engine.add_sink(named(TerminalRenderer::new(line.writer(), style), run_dir));
            engine.add_sink(line.sink());
        } else {
            engine.add_sink(named(TerminalRenderer::new(out, style), run_dir));
        }
    }
    if to_stderr {
        add(
            engine,
            std::io::stderr(),
            || terminal_width(rustix::stdio::stderr()),
            style,
            live,
            run_dir,
        );
    } else {
        add(
            engine,
            std::io::stdout(),
            || terminal_width(rustix::stdio::stdout()),
            style,
            live,
            run_dir,
        );
    }
}

/// The width of the terminal on `fd`, 80 when it cannot be told.
pub(crate) fn terminal_width(fd: impl std::os::fd::AsFd) -> usize {
    match rustix::termios::tcgetwinsize(fd) {
        Ok(size) if size.ws_col > 0 => usize::from(size.ws_col),
        _ => 80,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(status: &Status, secs: u64, width: usize, color: bool) -> String {
        let start = status.started.unwrap();
        status
            .line(start + Duration::from_secs(secs), width, color)
            .unwrap_or_default()
    }

    fn running(iteration: u64) -> Status {
        let start = Instant::now();
        Status {
            iteration: Some(iteration),
            max_iterations: Some(20),
            started: Some(start),
            ..Status::default()
        }
    }

    #[test]
    fn status_line_states() {
        let quiet_agent = running(3);
        let mut talking = running(3);
        talking.last_output = talking.started.map(|s| s + Duration::from_secs(70));
        let mut story = talking.clone();
        story.story = Some(("US-004".into(), Some(2)));
        story.max_attempts = Some(6);
        story.cost_usd = Some(1.234);
        story.tokens = Some(12_345);
        let mut no_limit = running(7);
        no_limit.max_iterations = None;
        let mut retrying = running(3);
        retrying.retrying = Some("529 overloaded_error (3/10)".into());
        let states = [
            ("starting", at(&quiet_agent, 0, 200, false)),
            ("a quiet agent", at(&quiet_agent, 185, 200, false)),
            ("after output", at(&talking, 72, 200, false)),
            ("story mode with cost", at(&story, 72, 200, false)),
            ("no iteration limit", at(&no_limit, 5, 200, false)),
            ("a narrow terminal", at(&story, 72, 40, false)),
            ("colour", at(&talking, 72, 200, true)),
            (
                "an agent retrying on its own",
                at(&retrying, 95, 200, false),
            ),
        ];
        let text: String = states
            .iter()
            .map(|(name, line)| format!("{name}:\n{line:?}\n"))
            .collect();
        insta::assert_snapshot!(text);
    }

    #[test]
    fn between_iterations_there_is_no_line() {
        assert_eq!(Status::default().line(Instant::now(), 80, false), None);
    }

    fn screen(out: Vec<u8>) -> Arc<Mutex<Screen<Vec<u8>>>> {
        Arc::new(Mutex::new(Screen {
            out,
            shown: false,
            at_line_start: true,
            status: running(1),
            color: false,
            width: || 80,
            stopped: false,
        }))
    }

    #[test]
    fn the_line_is_erased_before_output_and_never_drawn_mid_line() {
        let screen = screen(Vec::new());
        let mut writer = ScreenWriter {
            screen: Arc::clone(&screen),
        };
        lock(&screen).draw(Instant::now());
        writer.write_all(b"agent says").unwrap();
        // Mid-line: a redraw would cut into the agent's text.
        lock(&screen).draw(Instant::now());
        writer.write_all(b" more\n").unwrap();
        lock(&screen).draw(Instant::now());
        let out = String::from_utf8(lock(&screen).out.clone()).unwrap();
        let line = "⠋ iteration 1/20 · 0s · no output yet";
        assert_eq!(out, format!("{line}\r\x1b[2Kagent says more\n{line}"),);
    }
}
