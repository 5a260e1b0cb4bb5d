//! Reading a run folder's stories back: ralph-events' reader
//! (`ralph_events::story::run_folder`), re-exported here whole as escalation's API.

pub use ralph_events::story::run_folder::*;
