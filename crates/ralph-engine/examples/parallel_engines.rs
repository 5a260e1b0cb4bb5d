//! Embedding ralph: two loops at once on a multi-thread runtime, each a [`RunHandle`] laid out
//! in its folder as `ralph run` lays it out; one is cancelled from another task through its
//! [`Canceller`](ralph_engine::Canceller) before its work is done, then resumed where it
//! stopped. `docs/embedding.md` shows this file's code, and `tests/embedding.rs` checks that it
//! shows it word for word and runs it. Run it with
//! `cargo run -p ralph-engine --example parallel_engines`.

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

/// The "tests" loop: an agent that finishes at once, three times.
pub(crate) const TESTS_MD: &str =
    "---\nagent: echo fixed a test\nmax_iterations: 3\n---\nFix a failing test.\n";
/// The "docs" loop: an agent that takes a second each time, twice.
pub(crate) const DOCS_MD: &str = "---\nagent: sleep 1\nmax_iterations: 2\n---\nImprove the docs.\n";

use ralph_engine::{Engine, EngineOptions, RunHandle, RunOutcome};
use std::path::Path;

/// Starts the loop of `folder`'s RALPH.md there, as `ralph run` would, as a task of its own.
pub(crate) fn start(folder: &Path) -> Result<RunHandle, Box<dyn std::error::Error>> {
    let options = EngineOptions::load(folder)?.in_folder(folder); // .ralph/runs/<id>, the lock
    Ok(Engine::new(options).spawn()) // every run has its own id, events and interrupts
}

/// Runs both loops at once; "docs" is cancelled when "tests" ends, then resumed to its end.
pub(crate) async fn run_both(
    tests: &Path,
    docs: &Path,
) -> Result<[RunOutcome; 3], Box<dyn std::error::Error>> {
    let tests_run = start(tests)?;
    let docs_run = start(docs)?;
    let stop_docs = docs_run.canceller(); // Clone + Send + Sync: it goes where it is needed
    let tests_ended = tokio::spawn(async move {
        let outcome = tests_run.wait().await;
        stop_docs.cancel(); // RUN_ENDED `cancelled`: the agent is stopped, nothing outlives it
        outcome
    });
    let tests_outcome = tests_ended.await??;
    let cancelled = docs_run.wait().await?;
    // Later, in this process or another: the folder's last run goes on where it stopped.
    let resumed = EngineOptions::load(docs)?.in_folder(docs).resume(None)?;
    let docs_outcome = Engine::new(resumed).run().await?;
    Ok([tests_outcome, cancelled, docs_outcome])
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("ralph-example-{}", std::process::id()));
    let (tests, docs) = (dir.join("tests"), dir.join("docs"));
    std::fs::create_dir_all(&tests)?;
    std::fs::create_dir_all(&docs)?;
    std::fs::write(tests.join("RALPH.md"), TESTS_MD)?;
    std::fs::write(docs.join("RALPH.md"), DOCS_MD)?;
    let outcomes = run_both(&tests, &docs).await;
    std::fs::remove_dir_all(&dir)?;
    for (name, outcome) in ["tests", "docs", "docs resumed"].iter().zip(outcomes?) {
        println!(
            "{name}: run {} {} after {} iterations",
            outcome.run_id, outcome.reason, outcome.iterations
        );
    }
    Ok(())
}
