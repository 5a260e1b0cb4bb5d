//! The ralph loop engine: runs an agent on a RALPH.md prompt again and again until something
//! ends the loop, and reports every step as a typed [`Event`].
//!
//! The engine owns the loop, idle handling through [`StateHandlers`], interrupts, and the
//! run's log folder. It spawns nothing itself: `ralph-process` runs the agent, commands and
//! checks alike, and `ralph-agents` reads what each agent prints. It never prints: terminal
//! output, JSON Lines and an embedder's own
//! reporting are [`EventSink`]s. It never parses RALPH.md itself (`ralph-frontmatter` does) and
//! knows nothing of git or prd.json (`ralph-escalation` plugs in from above).
//!
//! # Extension points
//!
//! Four traits, each plugged into [`Engine`] from outside, none needing a change here:
//!
//! - [`EventSink`] ([`Engine::add_sink`]): sees every [`Event`], the agent's output and the
//!   countdown of each wait; [`JsonLinesSink`] is one.
//! - [`StateHandler`] ([`Engine::state_handlers`]): gives a `<!-- ralph:state NAME -->` marker
//!   its meaning (stop, continue or wait); `idle` and `done` are handlers like any other.
//! - [`TaskSource`] ([`Engine::set_task_source`]): names the task of each iteration, decides
//!   after it, and emits events and end reasons of its own ([`TaskEvent`],
//!   [`EndReason::Task`]); ralph-escalation's prd.json stories are one.
//! - [`OutputAdapter`] ([`Engine::set_adapter`]): reads an agent's output format (the final
//!   answer, usage, errors, a [`RateLimit`] and its reset); one per agent ralph knows, in the
//!   `ralph-agents` crate, whose `choose_output` picks.
//!
//! # Embedding
//!
//! Build [`EngineOptions`] from a parsed RALPH.md, add sinks and state handlers, run. A state
//! of your own is registered exactly as the built-in `idle` is (`docs/embedding.md` has the
//! whole guide; `examples/custom_state.rs` a runnable version):
//!
//! ```
//! use std::time::Duration;
//! use ralph_engine::{Engine, EngineOptions, StateContext, StateDecision, StateHandler};
//!
//! /// `<!-- ralph:state waiting_for_review pr=42 -->`: poll again in a second.
//! struct WaitingForReview;
//!
//! impl StateHandler for WaitingForReview {
//!     type State = ();
//!
//!     fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
//!         assert_eq!(cx.marker.attr("pr"), Some("42"));
//!         StateDecision::wait(Duration::from_millis(10))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let text = "---\nagent: sh -c 'cat >/dev/null; echo \"<!-- ralph:state waiting_for_review pr=42 -->\"'\n\
//!             max_iterations: 2\n---\nOpen a pull request.\n";
//! let parsed = ralph_frontmatter::parse("RALPH.md", text)?;
//! let mut engine = Engine::new(EngineOptions::new("RALPH.md", parsed.file));
//! engine.state_handlers().register("waiting_for_review", WaitingForReview);
//! let outcome = engine.run().await?;
//! assert_eq!((outcome.iterations, outcome.exit_code), (2, 0));
//! # Ok(())
//! # }
//! ```

mod check;
mod claim;
mod convergence;
mod engine;
mod environment;
mod event;
mod fallback;
mod handle;
mod hold;
mod lock;
mod logs;
mod outcome;
mod session;
mod signal;
mod state;
mod tail;
mod task;

pub use check::run_check;
pub use claim::FolderClaim;
pub use engine::{
    AgentLine, DryRun, DryRunCommand, Engine, EngineError, EngineOptions, Failure, LoadError,
    Overrides, ResumeError, new_run_id, wait_before_start,
};
pub use environment::withheld_env;
pub use event::{EventSink, JsonLinesSink, JsonLinesWriter, WaitProgress};
// The wire types the sinks are handed are ralph-events'; part of the engine's API all the
// same, since `EventSink` takes them.
pub use handle::{Canceller, RunHandle};
pub use hold::{HoldAnswer, HoldVerdict, StateHold};
pub use lock::{LockError, LockHolder, LockMode, RunLock};
pub use ralph_events::{
    CHECK_LINES_SHOWN, CheckResult, EVENTS_VERSION, Event, EventKind, FailureKind, IdleSummary,
    MarkerRecord, Outcome, Stream, SwitchReason, Termination, WaitReason, WarningKind, exit,
    exit_status,
};
// A stopped run's session file, which `EngineOptions::resume` takes up again.
pub use ralph_events::session::Session;
/// What Ctrl+C, SIGTERM and SIGHUP mean to a loop, for a supervisor of loops to rule the same.
pub mod interrupts {
    pub use crate::engine::interrupts::{DOUBLE_PRESS, Interrupts, Phase, Response};
}
pub use outcome::{EndReason, InterruptSignal, RunOutcome, budget_spent, exit_code};
pub use ralph_agents::{
    AdapterOutput, AgentRetry, OutputAdapter, OutputChoice, RateLimit, RunCost, Usage,
};
pub use ralph_backoff::{FailureBackoff, FailureDecision};
pub use ralph_events::{TaskEvent, TaskEventError};
// The marker a state handler and a task source are handed (`StateContext::marker`,
// `IterationReport::state`); the rest of the grammar is ralph-marker's.
pub use ralph_marker::Marker;
pub use ralph_process::{PtySize, PtyTerminal};
pub use state::{
    DONE_BUT_FAILING, DeclaredStateHandler, DoneHandler, IdleHandler, IdleState, StateContext,
    StateDecision, StateHandler, StateHandlers, StateOutbox, StateWait,
};
pub use task::{
    AttemptReport, IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource, TaskWait,
};
