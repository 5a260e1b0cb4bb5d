//! [`FolderClaim`]: a run's hold on its loop's folder, so that `ralph status`, `ralph runs` and
//! a second loop see it as the `ralph` binary's own runs are seen.
//!
//! What the binary does around a run is this one type: it takes the folder's lock
//! ([`RunLock::folder`], naming this process and run) and, for a resumed run, the run's own
//! lock ([`RunLock::run`]); handed to the engine ([`Engine::set_folder_claim`]), the run, as
//! it starts, locks a new run's log folder before its session exists and names that folder in
//! `.ralph/current` ([`crate::session::write_current`]), and lets go of everything when it ends.
//!
//! [`Engine::set_folder_claim`]: crate::Engine::set_folder_claim

use std::path::Path;

use crate::EngineOptions;
use ralph_events::session;

use crate::lock::{FOLDER_LOCK, LockError, LockHolder, RunLock, live_holder};

/// A loop's folder held for one run: no second loop starts there, and readers of the folder
/// (`ralph status`, `ralph runs`, [`FolderClaim::running_in`]) find
/// the run going on. Dropping it lets go of the folder.
#[derive(Debug)]
#[must_use = "a claim holds the folder only while it is kept: hand it to the engine"]
pub struct FolderClaim {
    holder: LockHolder,
    /// The folder's lock, then the run's own.
    locks: Vec<RunLock>,
    /// Whether the run's own lock is held already (a resumed run's is taken with the folder's).
    run_locked: bool,
}

impl FolderClaim {
    /// Claims `options.cwd` for the run `options` describe: the folder's lock and, with
    /// `options.resume`, the run's own (a run still going is not resumed, from anywhere).
    /// Refused with [`LockError::Held`] while another run holds either, naming it.
    pub fn take(options: &EngineOptions) -> Result<Self, LockError> {
        let folder = session::canonical_folder(&options.cwd);
        Self::take_as(options, LockHolder::this_process(&options.run_id, &folder))
    }

    /// Claims `options.cwd`, as [`FolderClaim::take`] does, for a lane of the parallel run
    /// `parallel_run_id`: a loop refused there is told which parallel run holds the folder.
    pub fn take_lane(options: &EngineOptions, parallel_run_id: &str) -> Result<Self, LockError> {
        let folder = session::canonical_folder(&options.cwd);
        let mut holder = LockHolder::this_process(&options.run_id, &folder);
        holder.lane_of = Some(parallel_run_id.to_owned());
        Self::take_as(options, holder)
    }

    /// The run going on in `folder`: the live holder of its claim, if any (a claim whose
    /// process died holds nothing).
    pub fn running_in(folder: &Path) -> Option<LockHolder> {
        live_holder(&folder.join(FOLDER_LOCK))
    }

    fn take_as(options: &EngineOptions, holder: LockHolder) -> Result<Self, LockError> {
        let mut locks = vec![RunLock::folder(&options.cwd, &holder)?];
        let resuming = options.resume.is_some();
        if let (true, Some(dir)) = (resuming, &options.log_dir) {
            locks.push(RunLock::run(dir, &options.run_id)?);
        }
        Ok(Self {
            holder,
            locks,
            run_locked: resuming,
        })
    }

    /// Who holds the folder: this process and run, for a lock of the caller's own that guards
    /// something larger (ralph-escalation's repository lock).
    pub fn holder(&self) -> &LockHolder {
        &self.holder
    }

    /// The run starts with its log folder `log_dir` (created): a new run's own lock, taken
    /// before its session exists so no resume finds it unlocked, and `.ralph/current` naming
    /// it. Returns what could not be done, as warnings for the run to emit.
    pub(crate) fn record_start(&mut self, folder: &Path, log_dir: &Path) -> Vec<String> {
        let mut warnings = Vec::new();
        if !self.run_locked {
            match RunLock::run(log_dir, &self.holder.run_id) {
                Ok(lock) => self.locks.push(lock),
                Err(err) => warnings.push(format!("cannot lock the run's log folder: {err}")),
            }
            self.run_locked = true;
        }
        if let Err(err) = crate::session::write_current(folder, log_dir) {
            warnings.push(format!(
                "cannot record this run in {}: {err}",
                session::CURRENT_FILE
            ));
        }
        warnings
    }
}
