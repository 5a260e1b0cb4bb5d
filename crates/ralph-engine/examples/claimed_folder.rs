//! Embedding ralph: a loop run in its folder as `ralph run` runs it, the folder's lock held,
//! `.ralph/current` naming the run and its session kept, so `ralph status` and `ralph runs`
//! read it as running and a second loop there is refused.
//! `docs/embedding.md` shows this file's code, and `tests/embedding.rs` checks that it shows it
//! word for word and runs it. Run it with `cargo run -p ralph-engine --example claimed_folder`.

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

/// A loop whose agent works a while each time.
pub(crate) const RALPH_MD: &str = "---\nagent: sleep 1\nmax_iterations: 2\n---\nTidy up.\n";

use ralph_engine::{Engine, EngineOptions, RunHandle};
use std::path::Path;

/// Starts the loop of `folder`'s RALPH.md there, holding the folder as `ralph run` does.
pub(crate) fn start_in(folder: &Path) -> Result<RunHandle, Box<dyn std::error::Error>> {
    let path = folder.join("RALPH.md");
    let text = std::fs::read_to_string(&path)?;
    let parsed = ralph_frontmatter::parse("RALPH.md", &text)?;
    let mut options = EngineOptions::new(path, parsed.file);
    options.cwd = folder.to_path_buf(); // the loop's folder: the agent runs there
    let runs = folder.join(ralph_events::run_folder::RUNS_DIR); // where `ralph runs` looks
    options.log_dir = Some(runs.join(&options.run_id)); // events.jsonl, logs, session.json
    let mut engine = Engine::new(options);
    engine.claim_folder()?; // the folder's lock; refused while another loop runs there
    Ok(engine.spawn()) // lets go of the folder when the run ends
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let folder = std::env::temp_dir().join(format!("ralph-example-{}", std::process::id()));
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("RALPH.md"), RALPH_MD)?;
    let run = start_in(&folder)?;
    match start_in(&folder) {
        Err(refused) => println!("a second loop: {refused}"),
        Ok(_) => println!("a second loop started beside the first"),
    }
    if let Some(running) = ralph_engine::FolderClaim::running_in(&folder) {
        println!("running: run {} in pid {}", running.run_id, running.pid);
    }
    let outcome = run.wait().await;
    std::fs::remove_dir_all(&folder)?;
    println!("ended: {}", outcome?.reason);
    Ok(())
}
