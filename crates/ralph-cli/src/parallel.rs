//! `ralph run --parallel N`: wire `ralph-parallel` to the terminal, the events file and the
//! process's signals.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_engine::{EngineOptions, FolderClaim};
use ralph_escalation::{EscalationError, StoryEnd, TaskWords};
use ralph_parallel::{Board, ParallelEvent, ParallelEventKind, ParallelOptions, ParallelSink};
use ralph_tasks::TaskListError;

use crate::cli::RunArgs;
use crate::error::CliError;
use crate::render::Style;
use crate::start_wait::StartWaits;

/// Runs the tasks of `options`' task list (`tasks:`, or prd.json) `parallel` at a time;
/// returns the exit code.
pub(crate) fn run(
    options: EngineOptions,
    args: &RunArgs,
    parallel: u16,
    log_root: PathBuf,
) -> Result<i32, CliError> {
    if args.dry_run {
        return Err(CliError::Usage(
            "--dry-run shows one loop's next iteration; it does not go with --parallel".to_owned(),
        ));
    }
    let mut options = options;
    if args.resume.is_some() {
        // The folder's lock names the run it goes on with.
        if let Some(stopped) = ralph_parallel::read_status(&options.cwd)?.filter(|s| !s.ended) {
            options.run_id = stopped.run_id;
        }
    }
    let (claim, _repository_lock) = claim(&options)?;
    let run_id = options.run_id.clone();
    let lanes_at_once = parallel;
    let mut parallel = ParallelOptions::new(options, usize::from(parallel));
    parallel.run_id = run_id;
    parallel.resume = args.resume.is_some();
    parallel.log_root = log_root;
    parallel.max_cost = args.max_cost.or(parallel.engine.file.config.max_cost);
    parallel.max_runtime = args.max_runtime.or(parallel.engine.file.config.max_runtime);
    parallel.history =
        ralph_parallel::LandConfig::from_section(parallel.engine.file.sections.get("land")).history;
    // `land.pr`: its token and repository checked before anything runs.
    parallel.pull_requests = crate::forge::landing(&parallel.engine.file, &parallel.engine.cwd)?
        .map(|landing| std::sync::Arc::new(std::sync::Mutex::new(landing)));
    // Made now so a list that cannot be made (no GitHub token) ends ralph before anything runs.
    let mut list = crate::ralph_file::task_list(&parallel.engine.file, &parallel.engine.cwd)?;
    let words = list
        .as_ref()
        .map_or(TaskWords::STORY, |l| TaskWords::of_list(l.kind()));
    let events_to_stdout = args.events.as_deref() == Some("-".as_ref());
    let terminal = match events_to_stdout {
        true => std::io::stderr().is_terminal(),
        false => std::io::stdout().is_terminal(),
    };
    let style = Style {
        color: crate::run::wants_color(terminal, args.no_color, std::env::var_os("NO_COLOR")),
        terminal,
        quiet: args.quiet,
        words,
    };
    let runtime = crate::run::runtime()?;
    let mut waits = StartWaits::new(&runtime, style, events_to_stdout, &parallel.run_id);
    // Read before the start, as one loop's start does: a rate limit is waited for. Any other
    // error is the run's to say, in its order (a missing `done_when` first).
    if let Some(list) = list.as_mut() {
        parallel.listed = waits.retry(|| match list.load() {
            Ok(tasks) => Ok(Some(tasks)),
            Err(err @ TaskListError::RetryAfter { .. }) => {
                Err(CliError::Escalation(EscalationError::Tasks(err)))
            }
            Err(_) => Ok(None),
        })?;
    }
    if list.is_some() {
        let file = parallel.engine.file.clone();
        parallel.tasks = Some(std::sync::Arc::new(move |cwd: &std::path::Path| {
            crate::ralph_file::task_list(&file, cwd)
                .map_err(|err| ralph_tasks::TaskListError::Failed(err.to_string().into()))?
                .ok_or_else(|| {
                    ralph_tasks::TaskListError::Failed("the RALPH.md has no task list".into())
                })
        }));
    }

    let mut sinks: Vec<Box<dyn ParallelSink>> = Vec::new();
    match &args.events {
        Some(_) if events_to_stdout => {
            sinks.push(Box::new(
                ralph_parallel::JsonLinesSink::new(std::io::stdout()).named("stdout"),
            ));
        }
        Some(p) => {
            let file = std::fs::File::create(p).map_err(|source| CliError::Events {
                path: p.clone(),
                source,
            })?;
            sinks.push(Box::new(
                ralph_parallel::JsonLinesSink::new(file).named(p.display().to_string()),
            ));
        }
        None => {}
    }
    if !args.quiet {
        let (out, fd): (Box<dyn Write + Send>, _) = match events_to_stdout {
            true => (Box::new(std::io::stderr()), rustix::stdio::stderr()),
            false => (Box::new(std::io::stdout()), rustix::stdio::stdout()),
        };
        let width = match terminal {
            true => WIDTH.min(crate::status_line::terminal_width(fd)),
            false => WIDTH,
        };
        sinks.push(Box::new(LaneLines::new(out, terminal, width, words)));
    }
    // A `${VAR}` not set is an error before the run starts.
    let notify = crate::notify_cmd::lane_sink(
        parallel.engine.file.config.notify.as_ref(),
        &parallel.engine.ralph_file.display().to_string(),
        &parallel.engine.cwd,
        &args.path,
        &parallel.log_root.join(&parallel.run_id),
    )?;
    let notify_failures = notify.map(|(sink, failures)| {
        sinks.push(Box::new(sink));
        failures
    });
    let (interrupt_tx, interrupts, signal_warnings) = waits.into_signals();
    runtime.block_on(async move {
        for warning in signal_warnings {
            tracing::warn!("{warning}");
        }
        let outcome = ralph_parallel::run(parallel, sinks, interrupts)
            .await
            .map_err(|err| way_on(err, &args.path))?;
        // The last messages were sent as the run ended, with its sinks.
        if let Some(failure) = notify_failures.and_then(|f| f.take()) {
            tracing::warn!("{failure}");
        }
        drop(interrupt_tx);
        drop(claim);
        if outcome.resumable && !args.quiet {
            let line = format!(
                "  go on where it stopped: {}\n  or give it up, each lane's work saved under \
                 refs/ralph/attempts/: {}\n",
                resume_command(&args.path, usize::from(lanes_at_once)),
                crate::resume::run_command(&args.path, "--abandon")
            );
            let _ = match events_to_stdout {
                true => std::io::stderr().write_all(line.as_bytes()),
                false => std::io::stdout().write_all(line.as_bytes()),
            };
        }
        Ok(outcome.exit_code)
    })
}

/// The repository's stopped parallel run that `--resume` (plain, or naming its id) goes on
/// with, and its lanes at once: when it stopped after the folder's last single loop, or that
/// loop cannot be resumed. `None`: `--resume` is one loop's (a parallel session that cannot
/// be read too: a parallel start says why, one loop's resume does not depend on it).
pub(crate) fn to_resume(folder: &Path, resume: Option<&str>) -> Option<u16> {
    let resume = resume?;
    let stopped = ralph_parallel::read_status(folder)
        .ok()
        .flatten()
        .filter(|s| !s.ended)?;
    let at_once = u16::try_from(stopped.parallel).unwrap_or(u16::MAX);
    if !resume.is_empty() {
        return (resume == stopped.run_id).then_some(at_once);
    }
    // Run ids sort by their start time.
    let newer_loop = ralph_events::session::last_run(folder).is_some_and(|dir| {
        dir.file_name()
            .is_some_and(|id| *id.to_string_lossy() > *stopped.run_id)
            && ralph_events::session::Session::read(&dir).is_ok_and(|s| s.resumable())
    });
    (!newer_loop).then_some(at_once)
}

/// `ralph run --abandon`: gives up the repository's stopped parallel run (every lane's work
/// saved under `refs/ralph/attempts/`, its worktrees, branches and session removed) and says
/// what it saved where. Refused while the run still runs (it holds the locks).
pub(crate) fn abandon(options: EngineOptions, args: &RunArgs) -> Result<i32, CliError> {
    let mut options = options;
    if let Some(stopped) = ralph_parallel::read_status(&options.cwd)?.filter(|s| !s.ended) {
        options.run_id = stopped.run_id;
    }
    let (claim, _repository_lock) = claim(&options)?;
    let abandoned = ralph_parallel::abandon(&options.cwd)?;
    drop(claim);
    let mut out = format!(
        "ralph: gave up parallel run {} on {}\n",
        abandoned.run_id, abandoned.base
    );
    for lane in &abandoned.lanes {
        let saved = match lane.saved.as_slice() {
            [] => format!("nothing {} lacks", abandoned.base),
            refs => format!("its work saved under {}", refs.join(" and ")),
        };
        out.push_str(&format!("  {}: {saved}\n", lane.task_id));
    }
    out.push_str(&format!(
        "  removed: its worktrees, its ralph/* branches, its session {}\n  \
         see the saved work: git for-each-ref refs/ralph/attempts/ (drop one: git update-ref -d \
         REF)\n",
        abandoned.session.display()
    ));
    if !args.quiet {
        let _ = std::io::stdout().write_all(out.as_bytes());
    }
    Ok(0)
}

/// The folder's claim and the repository's lock, as one loop takes them, held until the
/// caller is done: one run per folder and repository.
fn claim(
    options: &EngineOptions,
) -> Result<(FolderClaim, Option<ralph_engine::RunLock>), CliError> {
    let claim = FolderClaim::take(options)?;
    // Every lane reverts, whatever the RALPH.md says: the repository is the run's alone.
    let mut lock_config = options.file.config.clone();
    lock_config
        .escalation
        .get_or_insert_with(Default::default)
        .revert = true;
    let repository_lock =
        ralph_escalation::lock_repository(&options.cwd, &lock_config, claim.holder())?;
    Ok((claim, repository_lock))
}

/// `ralph run [PATH] --parallel N --resume`.
fn resume_command(path: &Path, at_once: usize) -> String {
    crate::resume::run_command(path, &format!("--parallel {at_once} --resume"))
}

/// A new run refused because a stopped one is there: the error with the commands that go on
/// with it or give it up.
fn way_on(err: ralph_parallel::ParallelError, path: &Path) -> CliError {
    match &err {
        ralph_parallel::ParallelError::StoppedRun { parallel, .. } => CliError::Usage(format!(
            "{err}; go on with it: `{}`; or give it up, each lane's work saved under \
             refs/ralph/attempts/: `{}`",
            resume_command(path, *parallel),
            crate::resume::run_command(path, "--abandon")
        )),
        _ => err.into(),
    }
}

/// The terminal's view: a line per notable event, and on a terminal one live line per running
/// lane above a summary line, redrawn in place. Every line fits [`WIDTH`] columns, and a
/// narrower terminal's width: a live line that wrapped would not be erased whole.
struct LaneLines {
    out: Box<dyn Write + Send>,
    terminal: bool,
    /// The columns a line may take.
    width: usize,
    /// Lines of the live block now on screen.
    drawn: usize,
    /// What the task list's tasks are called.
    words: TaskWords,
    /// Each started task's title, by id: what a person knows the task by.
    titles: HashMap<String, String>,
}

impl LaneLines {
    fn new(out: Box<dyn Write + Send>, terminal: bool, width: usize, words: TaskWords) -> Self {
        LaneLines {
            out,
            terminal,
            width,
            drawn: 0,
            words,
            titles: HashMap::new(),
        }
    }

    fn erase(&mut self) {
        for _ in 0..self.drawn {
            let _ = write!(self.out, "\x1b[1A\x1b[2K");
        }
        self.drawn = 0;
    }

    fn draw(&mut self, board: &Board) {
        if !self.terminal {
            return;
        }
        // One column spare: a line that fills the last one leaves some terminals' cursor there.
        let fit = |line: String| shorten(&line, self.width.saturating_sub(1));
        for lane in &board.lanes {
            let _ = writeln!(self.out, "{}", fit(lane_line(lane, &self.titles)));
        }
        let _ = writeln!(self.out, "{}", fit(summary_line(board, &self.titles)));
        self.drawn = board.lanes.len() + 1;
        let _ = self.out.flush();
    }
}

impl ParallelSink for LaneLines {
    fn event(&mut self, event: &ParallelEvent, board: &Board) {
        if let ParallelEventKind::LaneStarted { task_id, title, .. } = &event.kind {
            self.titles
                .insert(task_id.clone(), crate::render::inert(title).into_owned());
        }
        let line = event_line(&event.kind, board, &self.titles, self.words);
        if line.is_none() && !self.terminal {
            return;
        }
        self.erase();
        if let Some(line) = line {
            // The line holds the list's and the agents' words, and no escape of ralph's own.
            let _ = writeln!(
                self.out,
                "{}",
                wrap(&crate::render::inert(&line), self.width)
            );
        }
        if matches!(event.kind, ParallelEventKind::ParallelEnded { .. }) {
            let _ = self.out.flush();
            return;
        }
        self.draw(board);
        let _ = self.out.flush();
    }

    fn tick(&mut self, board: &Board) {
        if self.terminal {
            self.erase();
            self.draw(board);
        }
    }
}

/// The columns a line may take: a terminal's usual width.
const WIDTH: usize = 100;

/// The most characters of a title a line gives.
const TITLE_MAX: usize = 40;

/// The width of the live lines' title column.
const TITLE_COLUMN: usize = 36;

/// What a person knows task `id` by: a short id (`US-001`, an issue's number) with its title;
/// the title alone when the id is long (a Markdown task's, a slug of that title), the id when
/// there is no title; the title cut to `max` characters.
fn label(id: &str, titles: &HashMap<String, String>, max: usize) -> String {
    match titles.get(id).filter(|t| !t.is_empty()) {
        None => shorten(id, max),
        Some(title) if id.chars().count() <= 12 => shorten(&format!("{id} {title}"), max),
        Some(title) => shorten(title, max),
    }
}

/// `text` cut to `max` characters, an ellipsis saying where.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// `text` broken between words into lines of at most `width` characters, the later ones
/// indented; a word longer than that (a path) stays whole on a line of its own, and a line
/// break of `text`'s own is kept.
fn wrap(text: &str, width: usize) -> String {
    const INDENT: &str = "    ";
    let mut out = String::new();
    for (i, line) in text.split('\n').enumerate() {
        let mut column = 0;
        if i > 0 {
            out.push('\n');
            out.push_str(INDENT);
            column = INDENT.len();
        }
        // Whether the line being made has no word yet: a word goes there however long it is.
        let mut empty = true;
        for word in line.split(' ') {
            let len = word.chars().count();
            if !empty && column + 1 + len > width {
                out.push('\n');
                out.push_str(INDENT);
                column = INDENT.len();
            } else if !empty {
                out.push(' ');
                column += 1;
            }
            out.push_str(word);
            column += len;
            empty = false;
        }
    }
    out
}

/// A cost the agents reported, or `None`: the coordinator counts only costs above zero, so
/// zero means no agent reported one.
fn cost(usd: f64) -> Option<String> {
    (usd > 0.0).then(|| format!("${usd:.2}"))
}

/// `n` things: `1 task`, `2 tasks`.
fn count(n: usize, words: TaskWords) -> String {
    match n {
        1 => format!("1 {}", words.one),
        n => format!("{n} {}", words.many),
    }
}

/// `  Build the cart                       iteration 2   running     0:42  $0.12`
fn lane_line(lane: &ralph_parallel::LaneView, titles: &HashMap<String, String>) -> String {
    let line = format!(
        "  {:<TITLE_COLUMN$} iteration {:<3} {:<10} {:>6}",
        label(&lane.task_id, titles, TITLE_COLUMN),
        lane.iteration,
        shorten(&lane.state, 10),
        clock(lane.started.elapsed()),
    );
    match cost(lane.cost_usd) {
        Some(cost) => format!("{line}  {cost}"),
        None => line,
    }
}

/// `landed 2 · blocked 0 · running 3 · queued 1 (merging Build the cart) · waiting 1 · $1.20`
fn summary_line(board: &Board, titles: &HashMap<String, String>) -> String {
    let merging = board
        .merging
        .as_deref()
        .map(|id| format!(" (merging {})", label(id, titles, 30)))
        .unwrap_or_default();
    let line = format!(
        "landed {} · blocked {} · running {} · queued {}{merging} · waiting {}",
        board.landed,
        board.blocked,
        board.lanes.len(),
        board.queued,
        board.waiting,
    );
    match cost(board.cost_usd) {
        Some(cost) => format!("{line} · {cost}"),
        None => line,
    }
}

fn clock(elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    match s / 3600 {
        0 => format!("{}:{:02}", s / 60, s % 60),
        h => format!("{h}:{:02}:{:02}", (s / 60) % 60, s % 60),
    }
}

/// The line a notable event leaves in the scrollback, before [`wrap`]; `board` is the run
/// after it, `titles` the started tasks' titles.
fn event_line(
    kind: &ParallelEventKind,
    board: &Board,
    titles: &HashMap<String, String>,
    words: TaskWords,
) -> Option<String> {
    let name = |id: &str| label(id, titles, TITLE_MAX);
    Some(match kind {
        ParallelEventKind::ParallelStarted {
            base,
            parallel,
            resumed,
            ..
        } => format!(
            "ralph: {} {} on {base}, {parallel} at a time",
            if *resumed { "resuming" } else { "running" },
            count(usize::try_from(board.pending).unwrap_or(usize::MAX), words),
        ),
        ParallelEventKind::LaneStarted {
            task_id, returns, ..
        } => {
            // The task's id is what `ralph logs` takes; the title gets the room left.
            let log = format!("(log: ralph logs {task_id} -f)");
            let again = if *returns > 0 { " again" } else { "" };
            let room = WIDTH.saturating_sub(log.chars().count() + again.len() + 3);
            format!(
                "▶ {}{again} {log}",
                label(task_id, titles, room.clamp(20, TITLE_MAX * 2))
            )
        }
        // A lane whose task passed or blocked says so in the queue's lines.
        ParallelEventKind::LaneEnded {
            task_id, reason, ..
        } if !matches!(
            StoryEnd::of(reason),
            Some(StoryEnd::StoriesDone | StoryEnd::StoriesBlocked)
        ) =>
        {
            format!("■ {} stopped: {reason}", name(task_id))
        }
        ParallelEventKind::MergeQueued { task_id, position } => {
            format!(
                "⧗ {} passed; merge queue position {position}",
                name(task_id)
            )
        }
        ParallelEventKind::MergeConflict { task_id, files, .. } => format!(
            "↺ {} conflicts with the base in {}: back to its loop",
            name(task_id),
            files.join(", ")
        ),
        ParallelEventKind::MergeCheckFailed {
            task_id, checks, ..
        } => format!(
            "↺ {} fails {} once merged: back to its loop",
            name(task_id),
            checks
                .iter()
                .map(|c| format!("`{}`", c.command))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ParallelEventKind::MergeHeld { task_id, files } => format!(
            "⏸ {} waits on your uncommitted changes to {} (the task changes them too); \
             the other landings go on",
            name(task_id),
            files.join(", ")
        ),
        ParallelEventKind::TaskLanded { task_id, commit } => {
            format!(
                "✓ {} landed ({})",
                name(task_id),
                &commit[..commit.len().min(8)]
            )
        }
        ParallelEventKind::PrOpened { task_id, url, .. } => {
            format!("⇡ {} pull request opened: {url}", name(task_id))
        }
        ParallelEventKind::PrUpdated { task_id, url, .. } => {
            format!("⇡ {} pull request updated: {url}", name(task_id))
        }
        ParallelEventKind::PrClosed { task_id, url, .. } => format!(
            "⇡ {} pull request closed unmerged, left closed: {url}",
            name(task_id)
        ),
        ParallelEventKind::LaneAsked {
            task_id,
            question,
            at,
        } => {
            // An issue's address is a page the answer goes on; a file is a place it goes in.
            let on = if at.contains("://") { "on" } else { "in" };
            format!(
                "? {} asks \"{question}\": waiting for your answer {on} {at}; the other lanes go on",
                name(task_id)
            )
        }
        ParallelEventKind::TaskBlocked { task_id, reason } => {
            format!("✗ {} blocked: {reason}", name(task_id))
        }
        ParallelEventKind::LaneRateLimited {
            task_id,
            until,
            wait_ms,
            ..
        } => {
            let next = match wait_ms {
                Some(ms) => format!(
                    "; it runs again in {}",
                    crate::render::human_duration(Duration::from_millis(*ms))
                ),
                None => "; its loop ends".to_owned(),
            };
            format!("⏸ {} rate-limited until {until}{next}", name(task_id))
        }
        ParallelEventKind::Warning { message, task_id } => match task_id {
            Some(id) => format!("warning: {}: {message}", name(id)),
            None => format!("warning: {message}"),
        },
        ParallelEventKind::ParallelEnded {
            reason,
            landed,
            blocked,
            remaining,
            cost_usd,
            ..
        } => {
            // The task list's endings in words, as a single run's last line has them.
            let why = match StoryEnd::of(reason) {
                Some(StoryEnd::StoriesDone) => format!("every {} passes", words.one),
                Some(StoryEnd::StoriesBlocked) => {
                    format!("no {} left to do; some are blocked", words.one)
                }
                _ => reason.to_string(),
            };
            let cost = cost(*cost_usd).unwrap_or_else(|| "cost unknown".to_owned());
            // Tokens an agent reported without a cost (Codex, gemini-cli): still what it spent.
            let tokens = match board.tokens {
                0 => String::new(),
                n => format!(" · {} tokens", crate::render::compact(n)),
            };
            format!(
                "ralph: {why}: {landed} landed, {blocked} blocked, {remaining} left{tokens} · {cost}"
            )
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNUP: &str = "write-the-signup-form-with-email-validat-c7f37e56";
    const CART: &str = "build-the-cart-c56cb5b8";

    /// The piped lines of `kinds`, each event with a board saying `pending` tasks to do.
    fn piped(kinds: &[ParallelEventKind], pending: u64, words: TaskWords) -> String {
        let mut titles = HashMap::new();
        let mut board = Board::default();
        board.pending = pending;
        let mut text = String::new();
        for kind in kinds {
            if let ParallelEventKind::LaneStarted { task_id, title, .. } = kind {
                titles.insert(task_id.clone(), title.clone());
            }
            if let Some(line) = event_line(kind, &board, &titles, words) {
                text.push_str(&wrap(&line, WIDTH));
                text.push('\n');
            }
        }
        text
    }

    fn started(tasks: &[&str]) -> ParallelEventKind {
        ParallelEventKind::ParallelStarted {
            base: "main".into(),
            base_commit: "abc".into(),
            parallel: 2,
            tasks: tasks.iter().map(|t| (*t).to_owned()).collect(),
            resumed: false,
        }
    }

    fn lane(task_id: &str, title: &str, returns: u64) -> ParallelEventKind {
        ParallelEventKind::LaneStarted {
            task_id: task_id.into(),
            title: title.into(),
            branch: format!("ralph/{task_id}"),
            worktree: format!("/home/x/shop/.ralph/worktrees/{task_id}"),
            lane_run_id: "20261201T214914829-5d0b".into(),
            log_dir: "/home/x/shop/.ralph/runs/20261201T214914829-5d0b".into(),
            returns,
        }
    }

    fn ended(reason: StoryEnd, cost_usd: f64) -> ParallelEventKind {
        ParallelEventKind::ParallelEnded {
            reason: reason.reason(),
            landed: 2,
            blocked: 1,
            remaining: 0,
            cost_usd,
            exit_code: 1,
        }
    }

    #[test]
    fn a_checklist_run_names_each_task_by_its_title_within_100_columns() {
        let text = piped(
            &[
                started(&["old-one-0a1b2c3d", SIGNUP, CART, "refuse-this-4e5f6a7b"]),
                lane(
                    SIGNUP,
                    "Write the signup form with email validation and a friendly error message",
                    0,
                ),
                lane(CART, "Build the cart", 0),
                ParallelEventKind::MergeQueued {
                    task_id: SIGNUP.into(),
                    position: 1,
                },
                ParallelEventKind::TaskLanded {
                    task_id: SIGNUP.into(),
                    commit: "f555de6398aa".into(),
                },
                lane(CART, "Build the cart", 1),
                ParallelEventKind::LaneEnded {
                    task_id: CART.into(),
                    reason: StoryEnd::StoriesBlocked.reason(),
                    iterations: 3,
                    cost_usd: 0.0,
                },
                ParallelEventKind::TaskBlocked {
                    task_id: CART.into(),
                    reason: "check `sh check.sh` failed 3 times in a row the same way: \
                             error[E0308]: mismatched types (details: \
                             .ralph/parallel/lanes/build-the-cart-c56cb5b8/progress.txt; \
                             the abandoned work is saved under \
                             refs/ralph/attempts/build-the-cart-c56cb5b8/1)"
                        .into(),
                },
                ended(StoryEnd::StoriesBlocked, -0.0),
            ],
            3,
            TaskWords::TASK,
        );
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
        insta::assert_snapshot!(text);
    }

    #[test]
    fn counts_say_one_task_and_a_reported_cost_is_shown() {
        let lines = piped(
            &[started(&["a", "b"]), ended(StoryEnd::StoriesDone, 1.254)],
            1,
            TaskWords::TASK,
        );
        assert_eq!(
            lines,
            "ralph: running 1 task on main, 2 at a time\n\
             ralph: every task passes: 2 landed, 1 blocked, 0 left · $1.25\n"
        );
    }

    #[test]
    fn a_prd_json_run_is_in_stories_and_names_a_story_by_its_id_and_title() {
        let lines = piped(
            &[
                started(&["US-001", "US-002"]),
                lane("US-001", "Add a login page", 0),
                ParallelEventKind::TaskLanded {
                    task_id: "US-001".into(),
                    commit: "f555de63".into(),
                },
                ended(StoryEnd::StoriesDone, 0.0),
            ],
            2,
            TaskWords::STORY,
        );
        assert_eq!(
            lines,
            "ralph: running 2 stories on main, 2 at a time\n\
             ▶ US-001 Add a login page (log: ralph logs US-001 -f)\n\
             ✓ US-001 Add a login page landed (f555de63)\n\
             ralph: every story passes: 2 landed, 1 blocked, 0 left · cost unknown\n"
        );
    }

    #[test]
    fn a_long_word_stays_whole_and_wrapped_lines_are_indented() {
        let long = "x".repeat(120);
        assert_eq!(
            wrap(&format!("a b {long} c"), 20),
            format!("a b\n    {long}\n    c")
        );
        assert_eq!(wrap("a b\nc d", 5), "a b\n    c\n    d");
        assert_eq!(shorten("Build the cart", 8), "Build t…");
        assert_eq!(shorten("Build the cart", 14), "Build the cart");
    }
}
