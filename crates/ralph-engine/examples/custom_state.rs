//! Embedding ralph: a custom state and a custom event sink, registered the way the built-in
//! `idle` handler is. `docs/embedding.md` shows this file's code, and
//! `tests/embedding.rs` checks that it shows it word for word and runs it.
//!
//! The agent here is a shell command that says it opened a pull request and ends with
//! `<!-- ralph:state waiting_for_review pr=42 -->`. The `waiting_for_review` handler answers
//! by polling: it waits a little longer each time, and the loop ends after three iterations.
//! Run it with `cargo run -p ralph-engine --example custom_state`.

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

/// The RALPH.md of this example, written to a temporary folder first.
pub(crate) const RALPH_MD: &str = r#"---
agent: sh -c 'cat > /dev/null; echo "opened PR 42 <!-- ralph:state waiting_for_review pr=42 -->"'
---
Open a pull request for the next change, then end with
<!-- ralph:state waiting_for_review pr=NUMBER -->
"#;

use ralph_engine::{Engine, EngineOptions, RunOutcome};
use std::path::{Path, PathBuf};

/// Runs the loop of the RALPH.md at `path` for at most 3 iterations, its logs in `log_dir`.
pub(crate) async fn run_loop(
    path: &Path,
    log_dir: PathBuf,
) -> Result<RunOutcome, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path)?;
    let shown = path.display().to_string();
    let parsed = ralph_frontmatter::parse(&shown, &text)?; // every error at once
    let mut options = EngineOptions::new(path, parsed.file); // the file's settings
    options.overrides.max_iterations = Some(3); // ...overridden as you like
    options.log_dir = Some(log_dir); // None: no logs; else events.jsonl and the logs go there

    let mut engine = Engine::new(options); // built-in handlers: `idle` when configured
    engine.add_sink(Summary); // every event, in order, to every sink (below)
    engine
        .state_handlers()
        .register("waiting_for_review", WaitingForReview::default());
    let (interrupt, signals) = tokio::sync::mpsc::unbounded_channel();
    engine.interrupts(signals); // send InterruptSignal::Int / ::Term on `interrupt`
    let outcome = engine.run().await?; // RunOutcome { reason, exit_code, iterations, .. }
    drop(interrupt);
    Ok(outcome)
}

use ralph_engine::{StateContext, StateDecision, StateHandler};
use std::time::Duration;

/// Waits for a human review: 1s after the first report, one more second for each further one.
/// Any other state ends the streak.
#[derive(Default)]
struct WaitingForReview {
    polls: u32,
}

impl StateHandler for WaitingForReview {
    type State = ();

    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        self.polls += 1;
        let pr = cx.marker.attr("pr").unwrap_or("unknown");
        println!(
            "iteration {}: PR {pr} waits for review (poll {})",
            cx.iteration, self.polls
        );
        StateDecision::wait(Duration::from_secs(u64::from(self.polls)))
    }

    fn on_other_state(&mut self) {
        self.polls = 0;
    }
}

use ralph_engine::{Event, EventKind, EventSink};

/// Prints one line per iteration and the run's end.
struct Summary;

impl EventSink for Summary {
    fn event(&mut self, event: &Event) {
        match &event.kind {
            EventKind::IterationEnded {
                iteration, state, ..
            } => println!(
                "iteration {iteration} ended in state {}",
                state.as_deref().unwrap_or("none")
            ),
            EventKind::RunEnded { reason, .. } => println!("run ended: {reason:?}"),
            _ => {}
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("ralph-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("RALPH.md");
    std::fs::write(&path, RALPH_MD)?;
    let outcome = run_loop(&path, dir.join("logs")).await;
    std::fs::remove_dir_all(&dir)?;
    let outcome = outcome?;
    println!(
        "{} iterations, exit code {}",
        outcome.iterations, outcome.exit_code
    );
    Ok(())
}
