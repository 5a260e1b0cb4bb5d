//! [`EngineOptions::resume`]: a stopped run found and checked before it goes on, with the
//! checks `ralph run --resume` makes; [`ResumeError`]: why one may not.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::EngineOptions;
use crate::EndReason;
use crate::session::{self, Session, SessionError};
use ralph_events::run_folder::RUNS_DIR;

/// Why a stopped run cannot go on ([`EngineOptions::resume`], and [`Engine::run`] given a
/// session it must not take up).
///
/// [`Engine::run`]: crate::Engine::run
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// No run has started in the folder: it has no `.ralph/current`.
    #[error("no run has started in {}", .folder.display())]
    NoRun {
        /// The loop's folder.
        folder: PathBuf,
    },
    /// The run named is no run id ralph could have made (`../elsewhere`).
    #[error("{run_id:?} is not a run id")]
    NotARunId {
        /// As given.
        run_id: String,
    },
    /// The run's session could not be read.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The session is another folder's loop's.
    #[error("run {run_id} is the loop's in {}", .folder.display())]
    OtherFolder {
        /// The run.
        run_id: String,
        /// The folder whose loop it is.
        folder: PathBuf,
    },
    /// The run ended by itself (converged, done, failing, blocked): that ending is final.
    #[error("run {run_id} ended by itself ({reason}, exit code {exit_code})")]
    Ended {
        /// The run.
        run_id: String,
        /// `RUN_ENDED`'s reason.
        reason: EndReason,
        /// `RUN_ENDED`'s exit code.
        exit_code: i32,
        /// When it ended.
        at: SystemTime,
    },
    /// A process is running the run now.
    #[error("run {run_id} is running (pid {pid})")]
    Running {
        /// The run.
        run_id: String,
        /// The process that runs it.
        pid: u32,
    },
    /// The run used up its iteration limit: resumed with it, it would end at once.
    #[error("run {run_id} stopped at its iteration limit ({limit})")]
    AtIterationLimit {
        /// The run.
        run_id: String,
        /// The limit: the run's own, or [`Overrides::max_iterations`](crate::Overrides).
        limit: u64,
    },
}

impl EngineOptions {
    /// Points these options at a stopped run of their folder (`cwd`), to go on with it: the
    /// last run there with `which` `None` (named in `.ralph/current`), else the run of that id
    /// in the runs folder ([`log_dir`](EngineOptions::log_dir)'s parent, or
    /// `cwd/.ralph/runs`). Refused, as `ralph run --resume` refuses it, when no run has
    /// started, the run is another folder's, ended by itself, is running now, or used up its
    /// iteration limit (raise it with `overrides.max_iterations`). The options keep the run's
    /// id, log folder and session ([`resume`](EngineOptions::resume)); the run's limits are
    /// its own unless `overrides` has another.
    pub fn resume(mut self, which: Option<&str>) -> Result<EngineOptions, ResumeError> {
        let dir = match which {
            None => session::last_run(&self.cwd).ok_or_else(|| ResumeError::NoRun {
                folder: self.cwd.clone(),
            })?,
            Some(id) if !session::is_run_id(id) => {
                return Err(ResumeError::NotARunId {
                    run_id: id.to_owned(),
                });
            }
            Some(id) => self.runs_folder().join(id),
        };
        let stopped = Session::read(&dir)?;
        check_resumable_in(&stopped, &self.cwd)?;
        if crate::lock::flock_held(&dir) == Some(true) {
            return Err(ResumeError::Running {
                run_id: stopped.run_id,
                pid: stopped.pid,
            });
        }
        let limit = self.overrides.max_iterations.or(stopped.max_iterations);
        if let Some(limit) = limit.filter(|limit| stopped.tally.iteration >= *limit) {
            return Err(ResumeError::AtIterationLimit {
                run_id: stopped.run_id,
                limit,
            });
        }
        self.run_id.clone_from(&stopped.run_id);
        self.log_dir = Some(dir);
        self.resume = Some(stopped);
        Ok(self)
    }

    /// Where this folder's runs are: beside the log folder set, else `cwd/.ralph/runs`.
    fn runs_folder(&self) -> PathBuf {
        match self.log_dir.as_deref().and_then(Path::parent) {
            Some(runs) => runs.to_path_buf(),
            None => self.cwd.join(RUNS_DIR),
        }
    }
}

/// Whether the loop in `folder` may go on with the run `session` saved: it is that folder's
/// loop's, and was stopped rather than ended by itself.
pub(crate) fn check_resumable_in(session: &Session, folder: &Path) -> Result<(), ResumeError> {
    if let Some(home) = session
        .folder
        .as_ref()
        .filter(|_| !session.belongs_to(folder))
    {
        return Err(ResumeError::OtherFolder {
            run_id: session.run_id.clone(),
            folder: home.clone(),
        });
    }
    match session.ended.as_ref().filter(|_| !session.resumable()) {
        Some(ended) => Err(ResumeError::Ended {
            run_id: session.run_id.clone(),
            reason: ended.reason.clone(),
            exit_code: ended.exit_code,
            at: ended.at,
        }),
        None => Ok(()),
    }
}
