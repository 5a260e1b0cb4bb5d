//! The bundled demo (`fixtures/demo`, the README's first command) on tokio's controllable
//! clock: two iterations of work, then idle waits of exactly 1s, 2s and 4s until the idle limit
//! ends it. The real binary runs it in `ralph-cli/tests/demo.rs`, without sitting through the
//! waits.

use std::path::Path;
use std::sync::{Arc, Mutex};

use ralph_engine::{Engine, EngineOptions, Event, EventKind, EventSink};

/// Collects events for the test to read.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Event>>>);

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

#[tokio::test(start_paused = true)]
async fn the_demo_works_twice_then_waits_1s_2s_4s_and_ends_by_its_idle_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("fixtures/demo/RALPH.md")).unwrap();
    let parsed = ralph_engine::frontmatter::parse("fixtures/demo/RALPH.md", &text).unwrap();
    let mut options = EngineOptions::new("fixtures/demo/RALPH.md", parsed.file);
    options.cwd = root;
    let mut engine = Engine::new(options);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());

    let outcome = engine.run().await.expect("the demo runs");
    assert_eq!(outcome.reason.as_str(), "idle_limit");
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(outcome.iterations, 6);
    assert_eq!(outcome.idle_iterations, 4);
    assert_eq!(outcome.idle_time.as_millis(), 7_000);

    let events = recorder.0.lock().unwrap();
    let idle: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::IterationIdle { iteration, .. } => Some(*iteration),
            _ => None,
        })
        .collect();
    assert_eq!(idle, [3, 4, 5, 6], "idle once the two tasks are done");
    let waits: Vec<(String, u64)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WaitStarted {
                reason, delay_ms, ..
            } => Some((serde_json::to_string(reason).unwrap(), *delay_ms)),
            _ => None,
        })
        .collect();
    let idle_wait = |ms| ("\"idle\"".to_owned(), ms);
    assert_eq!(
        waits,
        [idle_wait(1_000), idle_wait(2_000), idle_wait(4_000)]
    );
}
