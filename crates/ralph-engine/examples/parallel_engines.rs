//! Embedding ralph: two loops at once on a multi-thread runtime, each a [`RunHandle`] whose
//! events are read as they happen, and one cancelled before its work is done.
//! `docs/embedding.md` shows this file's code, and `tests/embedding.rs` checks that it shows it
//! word for word and runs it. Run it with `cargo run -p ralph-engine --example parallel_engines`.

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

/// The "tests" loop: an agent that finishes at once, three times.
pub(crate) const TESTS_MD: &str = "---\nagent: echo fixed a test\n---\nFix a failing test.\n";
/// The "docs" loop: an agent that would take a minute each time.
pub(crate) const DOCS_MD: &str = "---\nagent: sleep 60\n---\nImprove the docs.\n";

use ralph_engine::{Engine, EngineOptions, EventKind, RunHandle, RunOutcome};
use std::path::Path;

/// Starts the loop of the RALPH.md at `path` as a task of its own, for at most 3 iterations.
pub(crate) fn start(path: &Path) -> Result<RunHandle, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path)?;
    let parsed = ralph_engine::frontmatter::parse(&path.display().to_string(), &text)?;
    let mut options = EngineOptions::new(path, parsed.file);
    options.overrides.max_iterations = Some(3);
    Ok(Engine::new(options).spawn()) // every run has its own id, events and interrupts
}

/// Runs both loops at once; cancels "docs" as soon as its agent has started.
pub(crate) async fn run_both(
    tests: &Path,
    docs: &Path,
) -> Result<(RunOutcome, RunOutcome), Box<dyn std::error::Error>> {
    let tests = start(tests)?;
    let mut docs = start(docs)?;
    while let Some(event) = docs.next_event().await {
        if matches!(event.kind, EventKind::IterationStarted { .. }) {
            docs.cancel(); // RUN_ENDED `cancelled`: the agent is stopped, nothing outlives it
        }
    }
    Ok((tests.wait().await?, docs.wait().await?))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("ralph-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (tests, docs) = (dir.join("TESTS.md"), dir.join("DOCS.md"));
    std::fs::write(&tests, TESTS_MD)?;
    std::fs::write(&docs, DOCS_MD)?;
    let outcomes = run_both(&tests, &docs).await;
    std::fs::remove_dir_all(&dir)?;
    let (tests, docs) = outcomes?;
    println!(
        "tests: {} after {} iterations",
        tests.reason, tests.iterations
    );
    println!("docs: {} after {} iterations", docs.reason, docs.iterations);
    Ok(())
}
