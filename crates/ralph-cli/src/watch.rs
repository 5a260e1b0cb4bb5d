//! `ralph watch [RUN_ID] [-C DIR]`: a full-screen view of a folder's run, attached from another
//! terminal while `ralph run` works. It reads the run folder (events, iteration logs) as
//! `ralph status` and `ralph logs -f` do and never writes there: `q` leaves it, the run goes on.
//!
//! Without RUN_ID it shows the run going on in the folder, or waits for the next one to start
//! there (so it can be started before `ralph run`). The view is a pure function of a model
//! built from the events ([`model`], [`view`]); this module only reads files and keys.

mod model;
mod view;

use std::fs::File;
use std::io::{IsTerminal, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, SystemTime};

use ralph_events::run_folder::{self, RunDir};
use ralph_events::session::Session;
use ralph_frontmatter::OutputFormat;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use ralph_events::parallel::ParallelEvent;

use crate::cli::WatchArgs;
use crate::error::CliError;
use model::WatchModel;
use view::{RunScreen, Screen};

/// How often the view looks for new events and output.
const TICK: Duration = Duration::from_millis(250);

/// A parallel run's own events (`docs/parallel.md`), in the loop's folder: every parallel run
/// made there, one after the other; each lane's loop has a run folder of its own.
const PARALLEL_EVENTS: &str = ".ralph/parallel/events.jsonl";

/// How much of the end of a log is read for its last lines.
const LOG_TAIL_BYTES: u64 = 64 * 1024;

/// Shows the run until `q` (exit 0) or SIGINT, SIGTERM, SIGHUP (128 + the signal), the
/// terminal put back either way. A RUN_ID that names no run, or no terminal to draw on, is an
/// error (exit 1).
pub(crate) fn watch(args: &WatchArgs) -> Result<i32, CliError> {
    let runs = crate::runs::runs_dir(&args.dir, args.log_dir.as_deref());
    let run = match &args.run_id {
        Some(id) => Some(match parallel_run(&args.dir, Some(id)) {
            Some(id) => Watched::parallel(&args.dir, id),
            None => Watched::single(
                run_folder::find_run_in(&runs, Some(id))
                    .map_err(|err| CliError::Watch(err.to_string()))?,
            ),
        }),
        None => None,
    };
    if !std::io::stdout().is_terminal() {
        return Err(CliError::Watch(
            "`ralph watch` draws on a terminal and standard output is not one; \
             `ralph logs -f` follows a run's output and `ralph status --json` reads its state"
                .to_owned(),
        ));
    }
    leave_on_signals();
    let mut terminal = ratatui::try_init().map_err(CliError::Stdout)?;
    let result = Watcher::new(args.dir.clone(), runs, run).show(&mut terminal);
    ratatui::restore();
    result?;
    // Left by a signal: the shell's way of saying so, as `ralph run` does.
    Ok(match SIGNALLED.load(Ordering::Relaxed) {
        0 => 0,
        signal => 128 + signal,
    })
}

/// The signal (SIGINT, SIGTERM, SIGHUP) that asked the view to leave; 0 for none.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn ask_to_leave(signal: libc::c_int) {
    SIGNALLED.store(signal, Ordering::Relaxed);
}

/// A signal ends the view at its next tick like `q` does, so the terminal is put back (raw
/// mode off, the main screen back) instead of being left as the view had it.
fn leave_on_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let handler: extern "C" fn(libc::c_int) = ask_to_leave;
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe.
        unsafe { libc::signal(signal, handler as libc::sighandler_t) };
    }
}

/// The run being watched and what has been read of it.
struct Watcher {
    folder: PathBuf,
    runs: PathBuf,
    run: Option<Watched>,
    selected: usize,
}

struct Watched {
    /// The run id.
    id: String,
    /// What loops' log folders are relative to: a single run's folder, or for a parallel run
    /// the loop's folder.
    logs: PathBuf,
    model: WatchModel,
    events: WatchedEvents,
}

/// The events file being followed, read into the types that wrote it.
enum WatchedEvents {
    /// A single run's: the engine's events.
    Loop(EventsTail<ralph_events::Event>),
    /// A parallel run's own.
    Parallel(EventsTail<ParallelEvent>),
}

impl Watched {
    fn single(dir: RunDir) -> Self {
        Self {
            model: WatchModel::new(&dir.id),
            events: WatchedEvents::Loop(EventsTail::new(
                dir.events_path(),
                run_folder::parse_events,
            )),
            logs: dir.path,
            id: dir.id,
        }
    }

    fn parallel(folder: &Path, id: String) -> Self {
        Self {
            model: WatchModel::new(&id),
            events: WatchedEvents::Parallel(EventsTail::new(
                folder.join(PARALLEL_EVENTS),
                ralph_events::parallel::parse_events,
            )),
            logs: folder.to_path_buf(),
            id,
        }
    }

    /// Takes in what was written since the last read.
    fn read_new(&mut self) {
        match &mut self.events {
            WatchedEvents::Loop(tail) => tail
                .read_new()
                .iter()
                .for_each(|e| self.model.apply_loop(e)),
            WatchedEvents::Parallel(tail) => tail
                .read_new()
                .iter()
                .for_each(|e| self.model.apply_parallel(e)),
        }
    }
}

/// The id of the parallel run in `folder` that `id` names (the whole id or a prefix of one),
/// or its last parallel run without `id`; `None` when there is none.
fn parallel_run(folder: &Path, id: Option<&str>) -> Option<String> {
    let events = ralph_events::parallel::read_events(&folder.join(PARALLEL_EVENTS)).ok()?;
    ralph_events::parallel::find_run(&events, id)
}

impl Watcher {
    fn new(folder: PathBuf, runs: PathBuf, run: Option<Watched>) -> Self {
        Self {
            folder,
            runs,
            run,
            selected: 0,
        }
    }

    fn show(&mut self, terminal: &mut ratatui::DefaultTerminal) -> Result<(), CliError> {
        loop {
            if self.run.is_none() {
                self.run = self.started_run();
            }
            let alive = match &mut self.run {
                Some(run) => {
                    // Whether it runs is asked before reading, so what it wrote last is read.
                    let alive = ralph_engine::FolderClaim::running_in(&self.folder)
                        .is_some_and(|holder| holder.run_id == run.id);
                    run.read_new();
                    alive
                }
                None => false,
            };
            let log = self.selected_log();
            let last = self.last_run_words();
            let folder = self.folder.display().to_string();
            terminal
                .draw(|frame| {
                    let screen = match &self.run {
                        Some(run) => Screen::Run(RunScreen {
                            model: &run.model,
                            selected: self.selected,
                            log: &log,
                            alive,
                            now: SystemTime::now(),
                        }),
                        None => Screen::Waiting {
                            folder: &folder,
                            last: last.as_deref(),
                        },
                    };
                    view::draw(frame, &screen);
                })
                .map_err(CliError::Stdout)?;
            if !self.keys()? {
                return Ok(());
            }
        }
    }

    /// Waits up to a tick for keys and acts on them; false once the user leaves.
    fn keys(&mut self) -> Result<bool, CliError> {
        let ready = match event::poll(TICK) {
            // A signal cut the wait short.
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => false,
            other => other.map_err(CliError::Stdout)?,
        };
        if SIGNALLED.load(Ordering::Relaxed) != 0 {
            return Ok(false);
        }
        if !ready {
            return Ok(true);
        }
        let lanes = self.run.as_ref().map_or(0, |r| r.model.lanes.len());
        while event::poll(Duration::ZERO).map_err(CliError::Stdout)? {
            let Event::Key(key) = event::read().map_err(CliError::Stdout)? else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(false),
                // Raw mode turns Ctrl+C into a key: it leaves the view, as elsewhere.
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(false);
                }
                KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
                KeyCode::Down | KeyCode::Char('j') => {
                    self.selected = (self.selected + 1).min(lanes.saturating_sub(1));
                }
                _ => {}
            }
        }
        Ok(true)
    }

    /// The run that started in the folder since the view waits, once its events are there.
    fn started_run(&self) -> Option<Watched> {
        let holder = ralph_engine::FolderClaim::running_in(&self.folder)?;
        if let Some(id) = parallel_run(&self.folder, Some(&holder.run_id)) {
            return Some(Watched::parallel(&self.folder, id));
        }
        let dir = ralph_events::session::last_run(&self.folder)
            .filter(|dir| dir.file_name().is_some_and(|n| *n == *holder.run_id))
            .map(|path| RunDir {
                id: holder.run_id.clone(),
                path,
            });
        dir.or_else(|| run_folder::find_run_in(&self.runs, Some(&holder.run_id)).ok())
            .filter(|dir| dir.events_path().exists())
            .map(Watched::single)
    }

    /// The folder's last run in words, for the view that waits for the next one.
    fn last_run_words(&self) -> Option<String> {
        if self.run.is_some() {
            return None;
        }
        let session = Session::read(&ralph_events::session::last_run(&self.folder)?).ok()?;
        Some(match session.ended {
            Some(end) => format!(
                "{}, ended: {}, exit {}",
                session.run_id, end.reason, end.exit_code
            ),
            None => format!(
                "{}, stopped without an end (`ralph run --resume` goes on with it)",
                session.run_id
            ),
        })
    }

    /// The last lines of the selected loop's current iteration log.
    fn selected_log(&mut self) -> Vec<String> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        self.selected = self.selected.min(run.model.lanes.len().saturating_sub(1));
        let Some(file) = run
            .model
            .lanes
            .get(self.selected)
            .and_then(model::Lane::log_file)
        else {
            return Vec::new();
        };
        log_tail(&run.logs.join(file))
    }
}

/// The last lines of the log at `path` as people read them (the agent's JSON shown as the
/// terminal showed it, escape sequences removed, a redrawn progress line as a line of its
/// own); none while it does not exist.
fn log_tail(path: &Path) -> Vec<String> {
    let Ok(mut file) = File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let agent = agent_section(&mut file);
    let from = len.saturating_sub(LOG_TAIL_BYTES);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    // A cut first line is not shown.
    let mut from = from;
    if from > 0 {
        let start = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.drain(..start);
        from += start as u64;
    }
    if let Some((at, format)) = agent {
        bytes = shown_as_on_the_terminal(bytes, from, at, format);
    }
    printable_lines(&String::from_utf8_lossy(&bytes))
}

/// How far into an iteration log its header line is looked for: past the commands' output
/// (each cut to its `max_output`).
const AGENT_HEADER_WITHIN: u64 = 1024 * 1024;

/// Where the agent's output starts in an iteration log, and the built-in format it is in, when
/// its header names one (`===== agent (claude-stream-json) =====`).
fn agent_section(file: &mut File) -> Option<(u64, OutputFormat)> {
    let mut head = Vec::new();
    file.take(AGENT_HEADER_WITHIN).read_to_end(&mut head).ok()?;
    const HEADER: &[u8] = b"\n===== agent (";
    let at = head.windows(HEADER.len()).position(|w| w == HEADER)? + HEADER.len();
    let close = head[at..].windows(8).position(|w| w == b") =====\n")?;
    let format = OutputFormat::from_name(std::str::from_utf8(&head[at..at + close]).ok()?)?;
    Some(((at + close + 8) as u64, format))
}

/// `bytes` (a log's from offset `from` on) with the agent's part (from offset `agent_at` to
/// the `===== end` line) replaced by what its adapter shows, as the terminal showed it.
fn shown_as_on_the_terminal(
    bytes: Vec<u8>,
    from: u64,
    agent_at: u64,
    format: OutputFormat,
) -> Vec<u8> {
    let start = usize::try_from(agent_at.saturating_sub(from))
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    const END: &[u8] = b"\n===== end";
    let end = bytes[start..]
        .windows(END.len())
        .position(|w| w == END)
        .map_or(bytes.len(), |i| start + i);
    let mut shown = Shown(bytes[..start].to_vec());
    let mut adapter = ralph_agents::choose_output(&[], Some(format)).adapter();
    adapter.feed(ralph_agents::Stream::Stdout, &bytes[start..end], &mut shown);
    adapter.finish(&mut shown);
    shown.0.extend_from_slice(&bytes[end..]);
    shown.0
}

/// What an adapter shows, collected.
struct Shown(Vec<u8>);

impl ralph_agents::AdapterOutput for Shown {
    fn show(&mut self, _stream: ralph_agents::Stream, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn result_text(&mut self, _stream: ralph_agents::Stream, _bytes: &[u8]) {}

    // The terminal said it when the run was live; a view of the log does not repeat it.
    fn warn(&mut self, _message: String) {}

    fn retrying(&mut self, _retry: ralph_agents::AgentRetry) {}
}

/// `text`'s lines without terminal escape sequences or other control characters (tabs become
/// spaces), a lone `\r` taken as a new line, trailing blank lines dropped: what can be drawn in
/// a cell grid without moving its cursor.
fn printable_lines(text: &str) -> Vec<String> {
    let text = ralph_marker::strip_ansi(text).replace("\r\n", "\n");
    let mut lines: Vec<String> = text
        .split(['\n', '\r'])
        .map(|line| {
            line.replace('\t', "    ")
                .chars()
                .filter(|c| !c.is_control())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// An events file read from where the last read stopped, whole lines only, each read by
/// `parse` (the library's reader of the type that wrote it).
struct EventsTail<T> {
    path: PathBuf,
    offset: u64,
    pending: Vec<u8>,
    parse: fn(&[u8]) -> Vec<T>,
}

impl<T> EventsTail<T> {
    fn new(path: PathBuf, parse: fn(&[u8]) -> Vec<T>) -> Self {
        Self {
            path,
            offset: 0,
            pending: Vec::new(),
            parse,
        }
    }

    /// The events written since the last call; a line being written waits for the next.
    fn read_new(&mut self) -> Vec<T> {
        let Ok(mut file) = File::open(&self.path) else {
            return Vec::new();
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let before = self.pending.len();
        if file.read_to_end(&mut self.pending).is_err() {
            self.pending.truncate(before);
            return Vec::new();
        }
        self.offset += (self.pending.len() - before) as u64;
        let Some(end) = self.pending.iter().rposition(|b| *b == b'\n') else {
            return Vec::new();
        };
        let events = (self.parse)(&self.pending[..end]);
        self.pending.drain(..=end);
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_shown_without_escape_sequences_or_control_characters() {
        let text = "one\n\x1b[31mtwo\x1b[0m\tx\n10%\r100%\x07\n\n";
        assert_eq!(printable_lines(text), ["one", "two    x", "10%", "100%"]);
    }

    /// An agent read as JSON shows in the log view as it did on the terminal (text, a line
    /// per tool call), not as its raw events; the lines around it stay as written.
    #[test]
    fn an_agents_json_is_shown_as_the_terminal_showed_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("iteration-001.log");
        let stream = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/claude/normal.jsonl"),
        )
        .unwrap();
        std::fs::write(
            &path,
            format!(
                "\n===== command tests: cargo test =====\nok\n\
                 \n===== agent (claude-stream-json) =====\n{stream}\
                 \n===== end: exit 0, state idle, 5 ms =====\n"
            ),
        )
        .unwrap();
        let lines = log_tail(&path);
        let text = lines.join("\n");
        assert!(!text.contains("{\"type\""), "{text}");
        assert!(
            text.contains("I'll start by reading the task list."),
            "{text}"
        );
        assert!(text.contains("Read"), "a tool call is a line: {text}");
        assert_eq!(lines[..2], ["", "===== command tests: cargo test ====="]);
        assert!(
            lines.last().unwrap().starts_with("===== end: exit 0"),
            "{text}"
        );

        // While the agent runs there is no end line yet: all after the header is its output.
        let live = format!("\n===== agent (claude-stream-json) =====\n{stream}");
        std::fs::write(&path, live).unwrap();
        let text = log_tail(&path).join("\n");
        assert!(!text.contains("{\"type\""), "{text}");
        assert!(
            text.contains("I'll start by reading the task list."),
            "{text}"
        );
    }

    #[test]
    fn events_are_read_as_whole_lines_as_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut tail = EventsTail::new(path.clone(), run_folder::parse_events);
        assert!(tail.read_new().is_empty());
        let head = r#"{"ts":"2026-01-01T00:00:00Z","run_id":"r","#;
        std::fs::write(
            &path,
            format!("{head}\"type\":\"RUN_RESUMED\"}}\n{head}\"type\":\"ITER"),
        )
        .unwrap();
        assert_eq!(tail.read_new().len(), 1);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("ATION_STARTED\",\"iteration\":1}\n");
        std::fs::write(&path, text).unwrap();
        let events = tail.read_new();
        assert_eq!(events.len(), 1);
        assert!(matches!(
            events[0].kind,
            ralph_events::EventKind::IterationStarted { iteration: 1, .. }
        ));
    }

    #[test]
    fn a_parallel_run_is_found_by_its_id_a_prefix_or_as_the_last() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(parallel_run(dir.path(), None), None);
        let events = dir.path().join(PARALLEL_EVENTS);
        std::fs::create_dir_all(events.parent().unwrap()).unwrap();
        std::fs::write(
            &events,
            "{\"ts\":\"2026-01-01T00:00:00Z\",\"run_id\":\"20260101-a\",\"type\":\"PARALLEL_STARTED\"}\n\
             {\"ts\":\"2026-01-02T00:00:00Z\",\"run_id\":\"20260102-b\",\"type\":\"PARALLEL_STARTED\"}\n\
             {\"ts\":\"2026-01-02T00:00:01Z\",\"run_id\":\"20260102-b\",\"type\":\"PARALLEL_STARTED\",\"resumed\":true}\n",
        )
        .unwrap();
        let found = |id| parallel_run(dir.path(), id);
        assert_eq!(found(None).as_deref(), Some("20260102-b"));
        assert_eq!(found(Some("20260101")).as_deref(), Some("20260101-a"));
        assert_eq!(found(Some("20260102-b")).as_deref(), Some("20260102-b"));
        assert_eq!(
            found(Some("2026")),
            None,
            "a prefix of two runs names neither"
        );
        assert_eq!(found(Some("single-run")), None);
    }

    #[test]
    fn the_last_lines_of_a_long_log_start_at_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("iteration-001.log");
        let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let lines = log_tail(&path);
        assert_eq!(lines.last().map(String::as_str), Some("line 19999"));
        assert!(lines[0].starts_with("line "), "{:?}", lines[0]);
    }
}
