//! Embedding ralph: a custom state and a custom event sink, registered the way the built-in
//! `idle` handler is.
//!
//! The agent here is a shell command that says it opened a pull request and ends with
//! `<!-- ralph:state waiting_for_review pr=42 -->`. The `waiting_for_review` handler answers
//! by polling: it waits a little longer each time, and the loop ends after three iterations.
//! Run it with `cargo run -p ralph-engine --example custom_state`.

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use ralph_engine::{
    Engine, EngineOptions, Event, EventKind, EventSink, StateContext, StateDecision, StateHandler,
};

/// The RALPH.md of this example, inline: an embedder may build it from anywhere.
const RALPH_MD: &str = r#"---
agent: sh -c 'cat > /dev/null; echo "opened PR 42 <!-- ralph:state waiting_for_review pr=42 -->"'
max_iterations: 3
---
Open a pull request for the next change, then end with
<!-- ralph:state waiting_for_review pr=NUMBER -->
"#;

/// Waits for a human review: 1s after the first report, one more second for each further one.
/// Any other state ends the streak.
#[derive(Default)]
struct WaitingForReview {
    polls: u32,
}

impl StateHandler for WaitingForReview {
    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        self.polls += 1;
        let pr = cx.marker.attr("pr").unwrap_or("unknown");
        println!(
            "iteration {}: PR {pr} waits for review (poll {})",
            cx.iteration, self.polls
        );
        StateDecision::Wait(Duration::from_secs(u64::from(self.polls)))
    }

    fn on_other_state(&mut self) {
        self.polls = 0;
    }
}

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
    let parsed = ralph_engine::frontmatter::parse("RALPH.md", RALPH_MD)?;
    let options = EngineOptions::new("RALPH.md", parsed.file);
    let mut engine = Engine::new(options);
    engine.add_sink(Summary);
    engine
        .state_handlers()
        .register("waiting_for_review", WaitingForReview::default());
    let outcome = engine.run().await?;
    println!(
        "{} iterations, exit code {}",
        outcome.iterations, outcome.exit_code
    );
    Ok(())
}
