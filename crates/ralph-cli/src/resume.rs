//! `ralph run --resume [RUN_ID]`: find the stopped run, check that it may go on, and point the
//! engine at it. The engine takes its state up (`EngineOptions::resume`); escalation checks the
//! tree (`Escalation::resume`).

use std::path::Path;

use ralph_engine::{EngineOptions, ResumeError};
use ralph_escalation::{EscalationError, Interrupted};
use ralph_events::session::{self, Session};

use crate::cli::RunArgs;
use crate::error::CliError;

/// With `--resume`, points `options` at the stopped run (its id, log folder and session) and
/// returns what escalation needs to know of it; without, `None`. A run that ended by itself,
/// or none at all, is refused (exit 2).
pub(crate) fn prepare(
    options: &mut EngineOptions,
    args: &RunArgs,
) -> Result<Option<Interrupted>, CliError> {
    let Some(id) = &args.resume else {
        return Ok(None);
    };
    let which = (!id.is_empty()).then_some(id.as_str());
    let resumed = options.clone().resume(which).map_err(|err| {
        CliError::Usage(match err {
            // A stopped parallel run is taken up before this; an ended one is no run to resume.
            ResumeError::NoRun { .. } => match ralph_parallel::read_status(&options.cwd) {
                Ok(Some(run)) => format!(
                    "nothing to resume: parallel run {} ended by itself, and no single loop has \
                     started in this folder; start a new run with `ralph run`",
                    run.run_id
                ),
                _ => format!(
                    "nothing to resume: no run has started in this folder ({} is missing); \
                     start one with `ralph run`",
                    session::CURRENT_FILE
                ),
            },
            ResumeError::OtherFolder { run_id, folder } => format!(
                "cannot resume run {run_id}: it is the loop's in {}, not this folder's; resume \
                 it from there",
                folder.display()
            ),
            ResumeError::Ended {
                run_id,
                reason,
                exit_code,
                at,
            } => format!(
                "run {run_id} ended by itself ({reason}, exit {exit_code}, at {}): there is \
                 nothing to resume; start a new run with `ralph run`",
                humantime::format_rfc3339_seconds(at)
            ),
            ResumeError::Running { run_id, pid } => format!(
                "cannot resume run {run_id}: pid {pid} is running it now; wait for it to end, \
                 or stop it (kill {pid}) and resume again"
            ),
            // A run that used up its iteration limit would start and end at once with it.
            ResumeError::AtIterationLimit { run_id, limit } => format!(
                "run {run_id} stopped at its iteration limit ({limit}, `-n` or \
                 max_iterations): resumed with it, it would end at once; give a higher one: \
                 `{} -n {}`",
                run_command(&args.path, "--resume"),
                limit.saturating_mul(2)
            ),
            other => format!("cannot resume: {other}"),
        })
    })?;
    *options = resumed;
    options.resume_now = args.now;
    let session = options.resume.as_ref().expect("a resumed run's session");
    Ok(Some(Interrupted::new(
        session.task.clone(),
        session.ended.is_none(),
    )))
}

/// A plain `ralph run` refused on a dirty tree: when the folder's last run is a story-mode run
/// that stopped mid-story, the dirt is most likely its work, so the message names the way on.
pub(crate) fn explain_dirty(folder: &Path, err: EscalationError) -> CliError {
    let EscalationError::DirtyTree { dir, paths } = &err else {
        return err.into();
    };
    let Some(session) = session::last_run(folder).and_then(|d| Session::read(&d).ok()) else {
        return err.into();
    };
    if !session.resumable()
        || ralph_escalation::StoriesSummary::from_fields(&session.task_fields).is_none()
    {
        return err.into();
    }
    CliError::Usage(format!(
        "{}: uncommitted changes ({}): run {} stopped in the middle of {}, and this is likely \
         its work. Go on with it: `{}`; or start afresh with `ralph run --allow-dirty` (the \
         changes are then saved under refs/ralph/attempts/preexisting/<n> and left to you)",
        dir.display(),
        paths.join(", "),
        session.run_id,
        session.task_id.as_deref().map_or_else(
            || "its work".to_owned(),
            |id| {
                let words = ralph_escalation::TaskWords::from_fields(&session.task_fields);
                format!("{} {id}", words.one)
            }
        ),
        resume_command(Path::new("."), &session),
    ))
}

/// The command that resumes `session`'s run (its RALPH.md at `path`): `ralph run --resume`,
/// with `-n` doubled when the run used up its iteration limit (the same limit would end the
/// resumed run at once).
fn resume_command(path: &Path, session: &Session) -> String {
    let mut command = run_command(path, "--resume");
    if let Some(limit) = session
        .max_iterations
        .filter(|limit| session.tally.iteration >= *limit)
    {
        command.push_str(&format!(" -n {}", limit.saturating_mul(2)));
    }
    command
}

/// After a run that was interrupted (Ctrl+C, a signal), ran out of a budget, or of
/// iterations with stories left: its last line says how to resume it. A plain `-n` ending is
/// what was asked for, and says nothing more (it can still be resumed). A run that used up a
/// limit its session in `log_dir` keeps (`iterations` reaching its `max_iterations`, its
/// `max_cost` or `max_runtime` spent) goes on only with a higher one: the command doubles it.
pub(crate) fn hint(
    reason: &ralph_engine::EndReason,
    iterations: u64,
    log_dir: Option<&Path>,
    path: &Path,
    to_stderr: bool,
) {
    use ralph_engine::EndReason;
    use std::io::Write as _;
    if !matches!(
        reason,
        EndReason::Interrupted
            | EndReason::MaxRuntime
            | EndReason::MaxCost
            | EndReason::Task {
                resumable: true,
                ..
            }
    ) {
        return;
    }
    let mut command = run_command(path, "--resume");
    // A limit the run used up stops the resumed run at once: the command raises it.
    let session = log_dir.and_then(|dir| Session::read(dir).ok());
    let limits = session
        .as_ref()
        .map(|s| (s.max_iterations, s.max_cost_usd, s.max_runtime_ms));
    let (max_iterations, max_cost, max_runtime) = limits.unwrap_or_default();
    if let Some(limit) = max_iterations.filter(|limit| iterations >= *limit) {
        command.push_str(&format!(" -n {}", limit.saturating_mul(2)));
    }
    match (reason, max_cost, max_runtime) {
        (EndReason::MaxCost, Some(usd), _) => {
            command.push_str(&format!(" --max-cost {}", usd * 2.0));
        }
        (EndReason::MaxRuntime, _, Some(ms)) => {
            command.push_str(&format!(
                " --max-runtime {}",
                one_word(ms.saturating_mul(2))
            ));
        }
        _ => {}
    }
    let line = format!("  go on where it stopped: {command}\n");
    let _ = match to_stderr {
        true => std::io::stderr().write_all(line.as_bytes()),
        false => std::io::stdout().write_all(line.as_bytes()),
    };
}

/// `ralph run [PATH] FLAGS`, the path (quoted for a shell) only when it is not `.`.
pub(crate) fn run_command(path: &Path, flags: &str) -> String {
    match path == Path::new(".") {
        true => format!("ralph run {flags}"),
        false => format!(
            "ralph run {} {flags}",
            shlex::try_quote(&path.to_string_lossy()).unwrap_or_default()
        ),
    }
}

/// `ms` as one word `--max-runtime` reads: in the largest unit it is a whole number of.
fn one_word(ms: u64) -> String {
    match ms {
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doubled_runtime_is_one_word_the_flag_reads() {
        for (ms, word) in [
            (600, "600ms"),
            (3_000, "3s"),
            (180_000, "3m"),
            (7_200_000, "2h"),
        ] {
            assert_eq!(one_word(ms), word);
            let read = crate::cli::parse_limit(&one_word(ms)).unwrap();
            assert_eq!(read.as_millis(), u128::from(ms));
        }
    }
}
