//! Every wait lasts exactly what `WAIT_STARTED` announced: from it to the next
//! `ITERATION_STARTED`, measured on tokio's controllable clock, for idle backoff and for the
//! backoff between `done_when` attempts. (The CLI tests measured this on the wall clock, with
//! a 100 ms allowance a busy machine could overrun.)

use std::sync::{Arc, Mutex};

use ralph_engine::{Engine, EngineOptions, Event, EventKind, EventSink};
use tokio::time::Instant;

/// Collects events with the (virtual) time each arrived.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(Instant, Event)>>>);

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.0.lock().unwrap().push((Instant::now(), event.clone()));
    }
}

impl Recorder {
    /// Each wait as (reason, announced ms, ms until the next iteration started).
    fn waits(&self) -> Vec<(String, u64, u64)> {
        let events = self.0.lock().unwrap();
        let mut waits = Vec::new();
        for (i, (at, event)) in events.iter().enumerate() {
            let EventKind::WaitStarted {
                reason, delay_ms, ..
            } = &event.kind
            else {
                continue;
            };
            let (next, _) = events[i..]
                .iter()
                .find(|(_, e)| matches!(e.kind, EventKind::IterationStarted { .. }))
                .expect("an iteration follows every wait");
            let waited = u64::try_from(next.duration_since(*at).as_millis()).unwrap();
            let reason = serde_json::to_value(reason).unwrap();
            waits.push((reason.as_str().unwrap().to_owned(), *delay_ms, waited));
        }
        waits
    }
}

async fn run(frontmatter: &str, max_iterations: Option<u64>) -> Recorder {
    let text = format!("---\n{frontmatter}\n---\nx\n");
    let parsed = ralph_frontmatter::parse("RALPH.md", &text).expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    if max_iterations.is_some() {
        options.overrides.max_iterations = max_iterations;
    }
    let mut engine = Engine::new(options);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());
    engine.run().await.expect("the run ends");
    recorder
}

#[tokio::test(start_paused = true)]
async fn idle_waits_last_exactly_what_they_announce() {
    let recorder = run(
        "agent: sh -c 'echo \"<!-- ralph:state idle -->\"'\nidle: {delay: 100ms, backoff: 2, max_delay: 200ms}",
        Some(4),
    )
    .await;
    let idle = |ms| ("idle".to_owned(), ms, ms);
    assert_eq!(recorder.waits(), [idle(100), idle(200), idle(200)]);
}

#[tokio::test(start_paused = true)]
async fn waits_between_attempts_last_exactly_what_they_announce() {
    let recorder = run(
        "agent: 'true'\ndone_when: ['false']\nconvergence: {max_attempts: 4, backoff: 40ms, max_backoff: 10s}",
        None,
    )
    .await;
    let retry = |ms| ("retry".to_owned(), ms, ms);
    assert_eq!(recorder.waits(), [retry(80), retry(160), retry(320)]);
}
