//! The wire types of ralph, serde only: every event a run writes (the engine's, a task
//! source's, story mode's, `ralph plan`'s, a parallel run's), the end reasons with their exit
//! codes, and the run-folder and session records, with the functions that read them back from
//! their files. A reader (`ralph report`, `runs`, `status`, `watch`, a dashboard) reads runs
//! through this crate without linking the engine.
//!
//! It must never start a process, spawn a task or need an async runtime, and it depends on no
//! ralph crate but `ralph-marker` (pure text rules): the crates that write these types depend
//! on it, not the other way round. Reading a file with `std` is all the I/O it does. Every type
//! reads leniently: a field a later version adds, or a `type` it does not know, still reads.

mod end;
mod event;
pub mod parallel;
pub mod plan;
mod process;
pub mod run_folder;
pub mod session;
pub mod story;
mod tail;
mod task_event;
mod time;
mod usage;

pub use end::{EndReason, exit, exit_code};
pub use event::{
    CHECK_LINES_SHOWN, CheckResult, EVENTS_VERSION, Event, EventKind, FailureKind, IdleSummary,
    MarkerRecord, Outcome, SwitchReason, WaitReason, WarningKind, exit_status,
};
pub use process::{InterruptSignal, Stream, Termination};
pub use task_event::{TaskEvent, TaskEventError};
pub use usage::{RunCost, SessionTokens, Usage, add_cost, describe_retry};
