//! How a process ran, in the words events use: which stream a chunk came from, how the
//! process ended, and the signal that stopped a run.

use serde::{Deserialize, Serialize};

/// Which output stream of the agent a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// How a process ended.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Termination {
    /// It exited by itself.
    Natural,
    /// ralph killed it for running past `timeout`.
    Timeout,
    /// ralph ended it after `idle_timeout` without output.
    IdleTimeout,
    /// ralph ended it for retrying without end (`ralph_process::Supervision::give_up`).
    RetryLimit,
    /// ralph stopped it on the user's request.
    Interrupted,
    /// It was killed by a signal ralph did not send.
    Killed,
    /// Read back from an events file: a way of ending a later version writes. Nothing here
    /// ends a process so.
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Other,
}

impl Termination {
    /// The word events write: `natural`, `timeout`, `idle_timeout`, `retry_limit`,
    /// `interrupted`, `killed` (`other` for a later version's).
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::Natural => "natural",
            Termination::Timeout => "timeout",
            Termination::IdleTimeout => "idle_timeout",
            Termination::RetryLimit => "retry_limit",
            Termination::Interrupted => "interrupted",
            Termination::Killed => "killed",
            Termination::Other => "other",
        }
    }
}

impl std::fmt::Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a running process is being interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InterruptSignal {
    /// SIGINT (Ctrl+C).
    Int,
    /// SIGTERM.
    Term,
    /// SIGHUP: ralph's terminal went away (a closed window, a dropped SSH session). Stops now,
    /// as SIGTERM does, so the agent does not outlive ralph.
    Hup,
    /// The embedder cancelled the run (ralph-engine's `RunHandle::cancel`). Stops now, as
    /// SIGTERM does.
    Cancel,
}
