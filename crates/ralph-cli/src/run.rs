//! `ralph run`: wire the engine to the renderer, the events file and the process's signals.

use std::io::IsTerminal;
use std::path::PathBuf;

use ralph_engine::{
    EndReason, Engine, EngineOptions, FolderClaim, InterruptSignal, JsonLinesSink, WarningKind,
};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::cli::RunArgs;
use crate::error::CliError;
use crate::ralph_file::{self, Loaded};
use crate::render::Style;
use crate::start_wait::StartWaits;

/// Runs the loop (or, with `--dry-run`, prepares its first iteration); returns the exit code.
/// With `escalation.split`, a story the breaker blocks is split and the loop goes on
/// ([`crate::auto_split`]).
pub(crate) fn run(args: RunArgs) -> Result<i32, CliError> {
    crate::auto_split::run(args)
}

/// One run; `ended` gets its `RUN_ENDED` reason when the loop ran.
pub(crate) fn run_once(args: RunArgs, ended: &mut Option<EndReason>) -> Result<i32, CliError> {
    let Loaded { path, parsed } = ralph_file::load(&args.path)?;
    let mut file = parsed.file;
    crate::sandbox_cmd::apply_flags(&mut file.config, args.sandbox, args.no_sandbox);
    crate::sandbox_cmd::refuse_unsupported(&file.config)?;
    let user_args = ralph_frontmatter::match_args(
        &file,
        &args.named_args,
        &args.positional_args,
        &crate::cli::run_options(),
    )
    .map_err(|err| CliError::Usage(err.to_string()))?;

    let mut options = EngineOptions::new(ralph_file::display_path(&path), file);
    options.args = user_args;
    options.vocabulary = ralph_file::vocabulary();
    options.overrides.max_iterations = args.max_iterations;
    options.overrides.delay = args.delay;
    options.overrides.timeout = args.timeout;
    options.stop_on_error = args.stop_on_error;
    options.overrides.max_cost = args.max_cost;
    options.overrides.max_runtime = args.max_runtime;
    options.reload = true;
    let pty = crate::terminal::pty_config(options.file.config.pty, args.pty, args.interactive);
    options.overrides.pty = pty;
    options.overrides.idle_timeout = args.idle_timeout;
    let log_root = args
        .log_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(".ralph").join("runs"));
    options.log_dir = Some(log_root.join(&options.run_id));
    if args.abandon {
        return crate::parallel::abandon(options, &args);
    }
    // A plain `--resume` goes on with a stopped parallel run as it ran.
    let parallel = match args.parallel {
        Some(n) => Some(n),
        None => crate::parallel::to_resume(&options.cwd, args.resume.as_deref()),
    };
    if let Some(n) = parallel {
        options.warnings = config_warnings(&parsed.warnings);
        return crate::parallel::run(options, &args, n, log_root);
    }
    let resuming = crate::resume::prepare(&mut options, &args)?;

    // A run says them as `WARNING` events, so its events file has them too.
    options.warnings = config_warnings(&parsed.warnings);
    if crate::forge::settings(&options.file).is_some() && args.task.is_none() && resuming.is_none()
    {
        options.warnings.push((
            WarningKind::Config,
            "land.pr: only `ralph run --task ID` and `ralph run --parallel N` land tasks as pull              requests; this run commits on the branch it runs on"
                .to_owned(),
        ));
    }
    if args.dry_run {
        for (_, warning) in &options.warnings {
            tracing::warn!("{warning}");
        }
        // prd.json is read, never written, and git is not touched.
        let tasks = ralph_file::task_list(&options.file, &options.cwd)?;
        let stories =
            ralph_escalation::Escalation::preview_with(&options.file.config, &options.cwd, tasks)?;
        return crate::dry_run::dry_run(options, stories);
    }
    let events_to_stdout = args.events.as_deref() == Some("-".as_ref());
    let human_to_stderr = events_to_stdout;
    let terminal = if human_to_stderr {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    let mut style = Style {
        color: wants_color(terminal, args.no_color, std::env::var_os("NO_COLOR")),
        terminal,
        quiet: args.quiet,
        words: ralph_escalation::TaskWords::STORY,
    };
    let runtime = runtime()?;
    let mut waits = StartWaits::new(&runtime, style, human_to_stderr, &options.run_id);

    // One loop per folder (per repository when it escalates), held until the run ends; taken
    // before escalation opens, which may already save work under a ref.
    let claim = FolderClaim::take(&options)?;
    let _repository_lock =
        ralph_escalation::lock_repository(&options.cwd, &options.file.config, claim.holder())?;
    // Before anything runs: a malformed prd.json or a dirty tree ends ralph here (exit 2), and
    // `.ralph/current` still names the last run that did start. A task list's rate limit is
    // waited for, as in the run.
    // Its token and repository are checked before HEAD moves to the task's branch. A plain
    // run lands nothing as a pull request (it is warned above), so needs no token.
    let landing = match args.task.is_some() || resuming.is_some() {
        true => crate::forge::landing(&options.file, &options.cwd)?,
        false => None,
    };
    if let Some(id) = &args.task {
        waits.retry(|| switch_to_task(&options, &args, &log_root, id))?;
    }
    let mut escalation =
        waits.retry(|| open_escalation(&options, &args, &log_root, resuming.as_ref()))?;
    if let (Some(id), Some(escalation)) = (&args.task, escalation.as_mut()) {
        waits.retry(|| Ok(escalation.only_story(id)?))?;
    } else if let Some(id) = &args.task {
        return Err(ralph_escalation::EscalationError::NotStoryMode { id: id.clone() }.into());
    }
    // `land.pr`: a `--task` that passes (now, or in the run resumed) lands as a pull request.
    if let (Some(escalation), Some(landing)) = (escalation.as_mut(), landing) {
        escalation.land_as_pull_request(landing, &options.cwd);
    }
    style.words = escalation
        .as_ref()
        .and_then(ralph_escalation::Escalation::task_words)
        .unwrap_or(ralph_escalation::TaskWords::STORY);
    let (interrupt_tx, interrupts, signal_warnings) = waits.into_signals();
    // A `${VAR}` not set is an error before the run starts.
    let notify = crate::notify_cmd::sink(
        options.file.config.notify.as_ref(),
        &options.ralph_file.display().to_string(),
        &options.cwd,
        &args.path,
        options.log_dir.clone(),
    )?;

    runtime.block_on(async move {
        // Before raw mode: from then on a signal must not end ralph with its terminal raw.
        options.warnings.extend(
            signal_warnings
                .into_iter()
                .map(|warning| (WarningKind::Signals, warning)),
        );
        let log_dir = options.log_dir.clone();
        let mut engine = Engine::new(options);
        engine.set_folder_claim(claim);
        crate::status_line::add_renderer(
            &mut engine,
            style,
            human_to_stderr,
            pty.is_none(),
            log_dir.as_deref(),
        );
        match &args.events {
            Some(_) if events_to_stdout => {
                engine.add_sink(JsonLinesSink::new(std::io::stdout()).named("stdout"));
            }
            Some(p) => {
                let file = std::fs::File::create(p).map_err(|source| CliError::Events {
                    path: p.clone(),
                    source,
                })?;
                engine.add_sink(JsonLinesSink::new(file).named(p.display().to_string()));
            }
            None => {}
        }
        let notify_failures = notify.map(|(sink, failures)| {
            engine.add_sink(sink);
            failures
        });
        // Held until the run is over: dropping it puts ralph's terminal back.
        let _raw_mode = pty.and_then(|pty| {
            let interactive = pty.mode == ralph_frontmatter::PtyMode::Interactive;
            let (terminal, raw_mode) = crate::terminal::connect(interactive, interrupt_tx.clone());
            engine.pty_terminal(terminal);
            raw_mode
        });
        if let Some(escalation) = escalation {
            engine.set_task_source(escalation);
        }
        engine.interrupts(interrupts);
        let outcome = engine.run().await?;
        // The last messages were sent as the run ended, after the engine last asked.
        if let Some(failure) = notify_failures.and_then(|f| f.take()) {
            tracing::warn!("{failure}");
        }
        crate::resume::hint(
            &outcome.reason,
            outcome.iterations,
            log_dir.as_deref(),
            &args.path,
            human_to_stderr,
        );
        *ended = Some(outcome.reason);
        Ok(outcome.exit_code)
    })
}

/// The single-threaded tokio runtime a run (or a dry run) is driven by.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
}

/// `--task ID`: the task checked in the task list and the tree judged as the run will judge it,
/// both changing nothing, then HEAD put on the task's branch `ralph/ID`.
fn switch_to_task(
    options: &EngineOptions,
    args: &RunArgs,
    log_root: &std::path::Path,
    id: &str,
) -> Result<(), CliError> {
    use ralph_escalation::{Escalation, EscalationError};
    let config = &options.file.config;
    let list = ralph_file::task_list(&options.file, &options.cwd)?;
    Escalation::preview_with(config, &options.cwd, list)?
        .ok_or_else(|| EscalationError::NotStoryMode { id: id.to_owned() })?
        .only_story(id)?;
    // With --allow-dirty the changes go along to the branch (`git switch` carries them or
    // refuses), where opening saves them; a check would save them a second time.
    if !args.allow_dirty {
        Escalation::check_open(config, escalation_options(options, args, log_root)?)
            .map_err(|err| crate::resume::explain_dirty(&options.cwd, err))?;
    }
    let branch = ralph_escalation::switch_to_task_branch(&options.cwd, id)
        .map_err(ralph_escalation::EscalationError::from)?;
    if !args.quiet {
        let how = match branch.created {
            true => "made from the branch it was on",
            false => "as it was",
        };
        eprintln!("ralph: task {id} on branch {} ({how})", branch.name);
    }
    Ok(())
}

/// How escalation opens for this run.
fn escalation_options(
    options: &EngineOptions,
    args: &RunArgs,
    log_root: &std::path::Path,
) -> Result<ralph_escalation::Options, CliError> {
    // A revert must leave ralph's own output alone: the events file, the log root, and the
    // run's own folder by name, which is all that can be protected when the log root is the
    // tree itself (`--log-dir .`), and lies outside the log root a resumed run is given.
    let protect = args
        .events
        .iter()
        .filter(|p| p.as_os_str() != "-")
        .cloned()
        .chain([log_root.to_path_buf()])
        .chain(options.log_dir.clone())
        .collect();
    let mut opening = ralph_escalation::Options::new(&options.cwd);
    opening.allow_dirty = args.allow_dirty;
    opening.protect = protect;
    opening.tasks = ralph_file::task_list(&options.file, &options.cwd)?;
    Ok(opening)
}

/// The file's escalation, if any (in story mode, `Engine::set_task_source` gives it its
/// default `max_iterations`).
fn open_escalation(
    options: &EngineOptions,
    args: &RunArgs,
    log_root: &std::path::Path,
    resuming: Option<&ralph_escalation::Interrupted>,
) -> Result<Option<ralph_escalation::Escalation>, CliError> {
    let opening = escalation_options(options, args, log_root)?;
    // Its warnings (the ref `--allow-dirty` saved to, say) are `WARNING` events of the run.
    Ok(match resuming {
        Some(stopped) => {
            ralph_escalation::Escalation::resume(&options.file.config, opening, stopped)?
        }
        None => ralph_escalation::Escalation::open(&options.file.config, opening)
            .map_err(|err| crate::resume::explain_dirty(&options.cwd, err))?,
    })
}

/// Colour only on a terminal, and never with `--no-color` or a non-empty `NO_COLOR`
/// (<https://no-color.org>).
pub(crate) fn wants_color(
    terminal: bool,
    no_color_flag: bool,
    no_color_env: Option<std::ffi::OsString>,
) -> bool {
    terminal && !no_color_flag && no_color_env.is_none_or(|v| v.is_empty())
}

/// RALPH.md's warnings, as the run's `WARNING`s of kind `config`.
pub(crate) fn config_warnings(warnings: &[impl ToString]) -> Vec<(WarningKind, String)> {
    warnings
        .iter()
        .map(|warning| (WarningKind::Config, warning.to_string()))
        .collect()
}

/// SIGINT, SIGTERM and SIGHUP, delivered to the engine instead of killing ralph: killed by a
/// signal, ralph could not stop the agent, which runs in a process group of its own and would be
/// left running (a closed terminal window or a dropped SSH session sends SIGHUP to ralph only).
/// Returns a warning for each signal that cannot be watched.
pub(crate) fn forward_signals(tx: &mpsc::UnboundedSender<InterruptSignal>) -> Vec<String> {
    crate::interrupts::count_from_now();
    let mut warnings = Vec::new();
    for (kind, what) in [
        (SignalKind::interrupt(), InterruptSignal::Int),
        (SignalKind::terminate(), InterruptSignal::Term),
        (SignalKind::hangup(), InterruptSignal::Hup),
    ] {
        match signal(kind) {
            Ok(mut stream) => {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        if tx.send(what).is_err() {
                            break;
                        }
                    }
                });
            }
            Err(err) => warnings.push(format!("cannot watch for {what:?}: {err}")),
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_needs_a_terminal_and_no_opt_out() {
        assert!(wants_color(true, false, None));
        assert!(!wants_color(false, false, None), "never when piped");
        assert!(!wants_color(true, true, None), "--no-color");
        assert!(!wants_color(true, false, Some("1".into())), "NO_COLOR=1");
        assert!(
            wants_color(true, false, Some("".into())),
            "an empty NO_COLOR is unset"
        );
    }
}
