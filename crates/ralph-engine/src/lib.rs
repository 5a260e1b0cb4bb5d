//! The ralph loop engine: runs an agent on a RALPH.md prompt again and again until something
//! ends the loop, and reports every step as a typed [`Event`].
//!
//! The engine owns the loop, process spawning (one module, [`process`](crate) internally, for
//! the agent, commands and checks alike), idle handling through [`StateHandlers`], interrupts,
//! and the run's log folder. It never prints: terminal output, JSON Lines and an embedder's own
//! reporting are [`EventSink`]s. It never parses RALPH.md itself (`ralph-frontmatter` does) and
//! knows nothing of git or prd.json (`ralph-escalation` plugs in from above).

mod convergence;
mod engine;
mod event;
mod logs;
mod outcome;
mod process;
mod state;
mod tail;

pub use engine::{Engine, EngineError, EngineOptions, new_run_id};
pub use event::{
    CheckResult, Event, EventKind, EventSink, IdleSummary, JsonLinesSink, MarkerRecord, Outcome,
    Stream, Termination, WaitProgress, WaitReason,
};
pub use outcome::{EndReason, InterruptSignal, RunOutcome, exit_code};
pub use state::{IdleHandler, StateContext, StateDecision, StateHandler, StateHandlers};

pub use ralph_frontmatter as frontmatter;
pub use ralph_marker as marker;
