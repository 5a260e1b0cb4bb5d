//! `ralph run --parallel N`: wire `ralph-parallel` to the terminal, the events file and the
//! process's signals.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_engine::{EngineOptions, FolderClaim};
use ralph_escalation::{EscalationError, TaskListError, TaskWords};
use ralph_parallel::{Board, ParallelEvent, ParallelEventKind, ParallelOptions, ParallelSink};

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
                .map_err(|err| ralph_escalation::TaskListError::Failed(err.to_string().into()))?
                .ok_or_else(|| {
                    ralph_escalation::TaskListError::Failed("the RALPH.md has no task list".into())
                })
        }));
    }

    let mut sinks: Vec<Box<dyn ParallelSink>> = Vec::new();
    match &args.events {
        Some(_) if events_to_stdout => {
            sinks.push(Box::new(ralph_parallel::JsonLinesSink(std::io::stdout())));
        }
        Some(p) => {
            let file = std::fs::File::create(p).map_err(|source| CliError::Events {
                path: p.clone(),
                source,
            })?;
            sinks.push(Box::new(ralph_parallel::JsonLinesSink(file)));
        }
        None => {}
    }
    if !args.quiet {
        sinks.push(Box::new(LaneLines {
            out: match events_to_stdout {
                true => Box::new(std::io::stderr()),
                false => Box::new(std::io::stdout()),
            },
            terminal,
            drawn: 0,
            words,
        }));
    }
    let (interrupt_tx, interrupts, signal_warnings) = waits.into_signals();
    runtime.block_on(async move {
        for warning in signal_warnings {
            tracing::warn!("{warning}");
        }
        let outcome = ralph_parallel::run(parallel, sinks, interrupts)
            .await
            .map_err(|err| way_on(err, &args.path))?;
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
    let newer_loop = crate::resume::last_run(folder).is_some_and(|dir| {
        dir.file_name()
            .is_some_and(|id| *id.to_string_lossy() > *stopped.run_id)
            && ralph_engine::session::Session::read(&dir).is_ok_and(|s| s.resumable())
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
) -> Result<(FolderClaim, Option<ralph_engine::lock::RunLock>), CliError> {
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
/// lane above a summary line, redrawn in place.
struct LaneLines {
    out: Box<dyn Write + Send>,
    terminal: bool,
    /// Lines of the live block now on screen.
    drawn: usize,
    /// What the task list's tasks are called.
    words: TaskWords,
}

impl LaneLines {
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
        for lane in &board.lanes {
            let _ = writeln!(self.out, "{}", lane_line(lane));
        }
        let _ = writeln!(self.out, "{}", summary_line(board));
        self.drawn = board.lanes.len() + 1;
        let _ = self.out.flush();
    }
}

impl ParallelSink for LaneLines {
    fn event(&mut self, event: &ParallelEvent, board: &Board) {
        let line = event_line(&event.kind, self.words);
        if line.is_none() && !self.terminal {
            return;
        }
        self.erase();
        if let Some(line) = line {
            let _ = writeln!(self.out, "{line}");
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

/// `  US-001  iteration 2  running   0:42  $0.12`
fn lane_line(lane: &ralph_parallel::LaneView) -> String {
    format!(
        "  {:<12} iteration {:<3} {:<10} {:>6}  ${:.2}",
        lane.task_id,
        lane.iteration,
        lane.state,
        clock(lane.started.elapsed()),
        lane.cost_usd
    )
}

/// `landed 2 · blocked 0 · running 3 · queued 1 (merging US-004) · waiting 1 · $1.20`
fn summary_line(board: &Board) -> String {
    let merging = board
        .merging
        .as_deref()
        .map(|id| format!(" (merging {id})"))
        .unwrap_or_default();
    format!(
        "landed {} · blocked {} · running {} · queued {}{merging} · waiting {} · ${:.2}",
        board.landed,
        board.blocked,
        board.lanes.len(),
        board.queued,
        board.waiting,
        board.cost_usd
    )
}

fn clock(elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    match s / 3600 {
        0 => format!("{}:{:02}", s / 60, s % 60),
        h => format!("{h}:{:02}:{:02}", (s / 60) % 60, s % 60),
    }
}

/// The line a notable event leaves in the scrollback.
fn event_line(kind: &ParallelEventKind, words: TaskWords) -> Option<String> {
    Some(match kind {
        ParallelEventKind::ParallelStarted {
            base,
            parallel,
            tasks,
            resumed,
            ..
        } => format!(
            "ralph: {} {} {} on {base}, {parallel} at a time",
            if *resumed { "resuming" } else { "running" },
            tasks.len(),
            words.many
        ),
        ParallelEventKind::LaneStarted {
            task_id,
            title,
            lane_run_id,
            returns,
            ..
        } => format!(
            "▶ {task_id} {title}{} (log: ralph logs {lane_run_id} -f)",
            if *returns > 0 { " again" } else { "" }
        ),
        ParallelEventKind::LaneEnded {
            task_id, reason, ..
        } if reason != "stories_done" => format!("■ {task_id} stopped: {reason}"),
        ParallelEventKind::MergeQueued { task_id, position } => {
            format!("⧗ {task_id} passed; merge queue position {position}")
        }
        ParallelEventKind::MergeConflict { task_id, files, .. } => format!(
            "↺ {task_id} conflicts with the base in {}: back to its loop",
            files.join(", ")
        ),
        ParallelEventKind::MergeCheckFailed {
            task_id, checks, ..
        } => format!(
            "↺ {task_id} fails {} once merged: back to its loop",
            checks
                .iter()
                .map(|c| format!("`{}`", c.command))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ParallelEventKind::MergeHeld { task_id, files } => format!(
            "⏸ {task_id} waits on your uncommitted changes to {} (the task changes them too); \
             the other landings go on",
            files.join(", ")
        ),
        ParallelEventKind::TaskLanded { task_id, commit } => {
            format!("✓ {task_id} landed ({})", &commit[..commit.len().min(8)])
        }
        ParallelEventKind::TaskBlocked { task_id, reason } => {
            format!("✗ {task_id} blocked: {reason}")
        }
        ParallelEventKind::Warning { message, task_id } => match task_id {
            Some(id) => format!("warning: {id}: {message}"),
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
            let why = match reason.as_str() {
                "stories_done" => format!("every {} passes", words.one),
                "stories_blocked" => format!("no {} left to do; some are blocked", words.one),
                other => other.to_owned(),
            };
            format!(
                "ralph: {why}: {landed} landed, {blocked} blocked, {remaining} left · \
                 ${cost_usd:.2}"
            )
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_tasks_is_run_and_ended_in_tasks_a_prd_json_in_stories() {
        let started = ParallelEventKind::ParallelStarted {
            base: "main".into(),
            base_commit: "abc".into(),
            parallel: 2,
            tasks: vec!["a".into(), "b".into()],
            resumed: false,
        };
        let ended = ParallelEventKind::ParallelEnded {
            reason: "stories_done".into(),
            landed: 2,
            blocked: 0,
            remaining: 0,
            cost_usd: 0.0,
            exit_code: 0,
        };
        let lines = |words| [&started, &ended].map(|k| event_line(k, words).unwrap());
        assert_eq!(
            lines(TaskWords::TASK),
            [
                "ralph: running 2 tasks on main, 2 at a time",
                "ralph: every task passes: 2 landed, 0 blocked, 0 left · $0.00"
            ]
        );
        assert_eq!(
            lines(TaskWords::STORY),
            [
                "ralph: running 2 stories on main, 2 at a time",
                "ralph: every story passes: 2 landed, 0 blocked, 0 left · $0.00"
            ]
        );
    }
}
