//! Waits measured on tokio's controllable clock: a six-hour idle streak runs in well under a
//! second of real time, and every wait and idle total is exact to the millisecond.

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

fn engine(frontmatter: &str) -> (Engine, Recorder) {
    let text = format!("---\n{frontmatter}\n---\nx\n");
    let parsed = ralph_frontmatter::parse("RALPH.md", &text).expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    let mut engine = Engine::new(options);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());
    (engine, recorder)
}

#[tokio::test(start_paused = true)]
async fn a_six_hour_idle_streak_backs_off_exactly_and_stops_at_the_limit() {
    let (engine, recorder) = engine(
        "agent: sh -c 'echo \"<!-- ralph:state idle -->\"'\nidle: {delay: 30s, backoff: 2, max_delay: 5m, max: 6h}",
    );
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.reason.as_str(), "idle_limit");
    assert_eq!(outcome.exit_code, 0);

    let events = recorder.0.lock().unwrap();
    let idle: Vec<(u64, Option<u64>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::IterationIdle {
                idle_elapsed_ms,
                next_delay_ms,
                ..
            } => Some((*idle_elapsed_ms, *next_delay_ms)),
            _ => None,
        })
        .collect();
    // 30s, 1m, 2m, 4m, then the 5m cap until the next wait would pass 6h.
    let six_hours = 6 * 3_600_000;
    let delays: Vec<Option<u64>> = idle.iter().map(|(_, next)| *next).collect();
    let capped = delays.len() - 5;
    let mut expected = vec![Some(30_000), Some(60_000), Some(120_000), Some(240_000)];
    expected.extend(std::iter::repeat_n(Some(300_000), capped));
    expected.push(None);
    assert_eq!(delays, expected);
    // The streak's idle time grows by each wait (plus the agent's run, which takes no virtual
    // time beyond the engine's 500 ms pipe drain at most) and stops just short of 6h.
    for pair in idle.windows(2) {
        let ((before, Some(wait)), (after, _)) = (pair[0], pair[1]) else {
            unreachable!("only the last entry stops");
        };
        assert!(
            after >= before + wait && after <= before + wait + 500,
            "{pair:?}"
        );
    }
    let (last_elapsed, _) = idle[idle.len() - 1];
    assert!(last_elapsed + 300_000 > six_hours);
    assert!(idle[idle.len() - 2].0 + 300_000 <= six_hours);
    // Time spent waiting is exactly the sum of the waits.
    let waited: u64 = delays.iter().flatten().sum();
    assert_eq!(outcome.idle_time.as_millis(), u128::from(waited));
}

#[tokio::test(start_paused = true)]
async fn convergence_backoff_waits_are_exact() {
    let (engine, recorder) = engine(
        "agent: 'true'\ndone_when: ['false']\nconvergence: {max_attempts: 7, backoff: 1s, max_backoff: 60s}",
    );
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.reason.as_str(), "max_attempts_reached");
    let events = recorder.0.lock().unwrap();
    let backoffs: Vec<Option<u64>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AttemptEnded { backoff_ms, .. } => Some(*backoff_ms),
            _ => None,
        })
        .collect();
    assert_eq!(
        backoffs,
        [
            None,
            Some(2_000),
            Some(4_000),
            Some(8_000),
            Some(16_000),
            Some(32_000),
            Some(60_000)
        ]
    );
}
