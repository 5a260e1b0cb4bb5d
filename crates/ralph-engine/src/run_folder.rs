//! The run folder, `.ralph/runs/<run_id>/`: its records and readers are ralph-events'
//! (`ralph_events::run_folder`, re-exported here whole: the engine writes what they read); what
//! needs the running system stays here: whether a run is still going.

use std::path::Path;

pub use ralph_events::run_folder::*;

use crate::lock::FOLDER_LOCK;

/// The live holder of `folder`'s lock ([`FOLDER_LOCK`]): the run going on there, if any.
pub fn running(folder: &Path) -> Option<LockHolder> {
    crate::lock::live_holder(&folder.join(FOLDER_LOCK))
}
