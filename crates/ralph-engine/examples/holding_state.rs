//! Embedding ralph: a state that holds the loop, running no agent and spending nothing, until
//! the world moves: here, until a file appears (an approval, a finished deployment). The agent
//! runs once, asks for a review with `<!-- ralph:state review -->`, and the handler checks for
//! `APPROVED` every 50 ms without blocking a worker thread. `docs/embedding.md` shows this
//! file's code, and `tests/embedding.rs` checks that it shows it word for word and runs it. Run
//! it with `cargo run -p ralph-engine --example holding_state` (it writes the file itself).

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

/// The RALPH.md of this example, written to a temporary folder first.
pub(crate) const RALPH_MD: &str = "---\nagent: echo '<!-- ralph:state review -->'\n---\n\
                                   Make the change, then ask for a review.\n";

use ralph_engine::{EndReason, HoldAnswer, HoldVerdict, StateContext, StateDecision, StateHandler};
use std::path::PathBuf;
use std::time::Duration;

/// `review`: hold the loop until `approval` exists, then end the run as `approved`.
pub(crate) struct AwaitApproval {
    pub(crate) approval: PathBuf,
}

impl StateHandler for AwaitApproval {
    type State = ();

    fn on_state(&mut self, _cx: &mut StateContext<'_>) -> StateDecision {
        let why = format!("waiting for {}", self.approval.display()); // WAIT_STARTED's `why`
        StateDecision::hold(Duration::from_millis(50), why) // no agent runs while it holds
    }

    fn poll_hold(&mut self, _cx: &mut StateContext<'_>) -> HoldAnswer {
        let approval = self.approval.clone();
        HoldAnswer::later(async move {
            // An HTTP call to a forge would go here: awaited, it blocks no thread.
            match tokio::fs::try_exists(&approval).await {
                Ok(true) => HoldVerdict::Stop(EndReason::State {
                    reason: "approved".to_owned(),
                    exit_code: 0,
                }),
                _ => HoldVerdict::Hold, // asked again in 50 ms; `Release` runs the agent again
            }
        })
    }
}

use ralph_engine::{Engine, EngineOptions, RunHandle};
use std::path::Path;

/// Starts the loop of `folder`'s RALPH.md there, its `review` state held until `APPROVED`.
pub(crate) fn start(folder: &Path) -> Result<RunHandle, Box<dyn std::error::Error>> {
    let mut engine = Engine::new(EngineOptions::load(folder)?.in_folder(folder));
    let approval = folder.join("APPROVED");
    engine
        .state_handlers()
        .register("review", AwaitApproval { approval });
    Ok(engine.spawn())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("RALPH.md"), RALPH_MD)?;
    let run = start(dir.path())?;
    tokio::time::sleep(Duration::from_millis(300)).await; // a person takes their time
    std::fs::write(dir.path().join("APPROVED"), "lgtm\n")?;
    let outcome = run.wait().await?;
    println!(
        "{} after {} agent run(s)",
        outcome.reason, outcome.iterations
    );
    Ok(())
}
