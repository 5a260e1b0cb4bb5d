//! Notifications from the command line: `ralph run`'s notify sink, and `ralph notify --test`.

use std::path::{Path, PathBuf};

use ralph_frontmatter::NotifyConfig;
use ralph_notify::{Delivery, Failures, LaneNotifier, Message, NotifySink, Place, Targets};
use ralph_parallel::{Board, ParallelEvent, ParallelSink};

use crate::error::CliError;
use crate::ralph_file::{self, Loaded};

/// The targets of `config`, `${VAR}` read from the environment: a missing variable is an error
/// before anything runs.
pub(crate) fn targets(config: &NotifyConfig, file: &str) -> Result<Targets, CliError> {
    Ok(Targets::new(config, file, |name| std::env::var(name).ok())?)
}

/// The place a message names: the loop's folder (absolute) and the RALPH.md as given.
fn place(cwd: &Path, ralph_file: &Path) -> Place {
    let folder = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    Place {
        folder: folder.display().to_string(),
        ralph_file: ralph_file::display_path(ralph_file),
    }
}

/// `ralph run`'s sink for the file's `notify`, and the handle on its failures (the last
/// messages are sent as the run ends, after the engine last asks). `None` without `notify`.
pub(crate) fn sink(
    config: Option<&NotifyConfig>,
    file: &str,
    cwd: &Path,
    ralph_file: &Path,
    run_folder: Option<PathBuf>,
) -> Result<Option<(NotifySink, Failures)>, CliError> {
    let Some(config) = config else {
        return Ok(None);
    };
    let delivery = Delivery::start(targets(config, file)?);
    let failures = delivery.failures();
    let sink = NotifySink::new(
        config.on.clone(),
        place(cwd, ralph_file),
        delivery,
        run_folder,
    );
    Ok(Some((sink, failures)))
}

/// A parallel run's coordinator events, as messages: what a second brings goes as one.
pub(crate) struct LaneMessages(LaneNotifier);

impl ParallelSink for LaneMessages {
    fn event(&mut self, event: &ParallelEvent, _board: &Board) {
        if let Ok(value) = serde_json::to_value(event) {
            self.0.event(&value);
        }
    }

    fn tick(&mut self, _board: &Board) {
        self.0.flush();
    }

    // A message that could not be sent is a `WARNING` the other sinks show, as in one loop.
    fn take_failure(&mut self) -> Option<String> {
        self.0.take_failure()
    }
}

/// `ralph run --parallel`'s sink for the file's `notify`, keeping what it sent in
/// `run_folder`, and the handle on its failures. `None` without `notify`.
pub(crate) fn lane_sink(
    config: Option<&NotifyConfig>,
    file: &str,
    cwd: &Path,
    ralph_file: &Path,
    run_folder: &Path,
) -> Result<Option<(LaneMessages, Failures)>, CliError> {
    let Some(config) = config else {
        return Ok(None);
    };
    let delivery = Delivery::start(targets(config, file)?);
    let failures = delivery.failures();
    // Made here: the coordinator makes the run's folder as lanes start.
    let folder = std::fs::create_dir_all(run_folder)
        .ok()
        .map(|()| run_folder);
    let notifier = LaneNotifier::new(config.on.clone(), place(cwd, ralph_file), delivery, folder);
    Ok(Some((LaneMessages(notifier), failures)))
}

/// `ralph notify --test`: one test message to every target, each one's outcome on its own line
/// (webhooks redacted); exit 1 when any failed.
pub(crate) fn test(path: &Path) -> Result<i32, CliError> {
    let Loaded { path, parsed } = ralph_file::load(path)?;
    let shown = ralph_file::display_path(&path);
    let Some(config) = &parsed.file.config.notify else {
        return Err(CliError::Usage(format!(
            "{shown}: no `notify` section: add one (docs/config.md, \"notify\") to send a test \
             message"
        )));
    };
    let targets = targets(config, &shown)?;
    let folder = path.parent().unwrap_or(Path::new("."));
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let message = Message::test(&place(folder, &path));
    let report = Delivery::send_now(&targets, &message);
    let mut failed = false;
    let mut out = String::new();
    for (target, failure) in report.targets {
        match failure {
            None => out.push_str(&format!("sent: {target}\n")),
            Some(failure) => {
                failed = true;
                out.push_str(&format!("failed: {target}: {failure}\n"));
            }
        }
    }
    crate::print_out(out.as_bytes())?;
    Ok(i32::from(failed))
}
