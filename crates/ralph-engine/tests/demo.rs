//! The bundled demo (`fixtures/demo`, the README's first command): two iterations of work,
//! then idle waits of exactly 1s, 2s and 4s until the idle limit (8s) ends it. Checked here
//! without sitting through the waits; the real binary runs it in `ralph-cli/tests/demo.rs`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ralph_backoff::{IdleDecision, IdleStreak};
use ralph_engine::{Engine, EngineOptions, Event, EventKind, EventSink};
use ralph_frontmatter::RalphFile;

/// Collects events for the test to read.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Event>>>);

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn demo() -> RalphFile {
    let text = std::fs::read_to_string(root().join("fixtures/demo/RALPH.md")).unwrap();
    ralph_frontmatter::parse("fixtures/demo/RALPH.md", &text)
        .unwrap()
        .file
}

#[test]
fn the_demos_idle_streak_waits_1s_2s_4s_then_stops_at_its_limit() {
    let policy = demo().config.idle.expect("the demo has an idle block");
    let mut streak = IdleStreak::new();
    let mut now = Duration::ZERO; // the scripted agent's idle runs take no time here
    let mut waits = Vec::new();
    let stopped = loop {
        match streak.record_idle(&policy, now) {
            IdleDecision::Wait { delay, .. } => {
                waits.push(delay.as_secs());
                now += delay;
            }
            IdleDecision::Stop { consecutive, .. } => break consecutive,
        }
    };
    assert_eq!(waits, [1, 2, 4]);
    assert_eq!(stopped, 4, "the fourth idle iteration ends the demo");
}

#[tokio::test(start_paused = true)]
async fn the_demo_runs_in_process_works_twice_then_backs_off_until_its_idle_limit() {
    let mut options = EngineOptions::new("fixtures/demo/RALPH.md", demo());
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = root();
    let mut engine = Engine::new(options);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());

    let outcome = engine.run().await.expect("the demo runs");
    assert_eq!(outcome.reason.as_str(), "idle_limit");
    assert_eq!(outcome.exit_code, 0);

    // Each idle iteration announces the wait its place in the streak gets: 1s, 2s, 4s, capped
    // at 4s, and none for the last. (How many fit in the 8s limit depends on how long the
    // agent's idle runs take, which on this clock includes the engine's own timers.)
    let events = recorder.0.lock().unwrap();
    let idle: Vec<(u64, u64, Option<u64>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::IterationIdle {
                iteration,
                consecutive_idle,
                next_delay_ms,
                ..
            } => Some((*iteration, *consecutive_idle, *next_delay_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(idle[0].0, 3, "idle once the two tasks are done: {idle:?}");
    let (last, waited) = idle.split_last().unwrap();
    assert_eq!(last.2, None, "the last idle iteration ends the run");
    for (n, (_, consecutive, next)) in waited.iter().enumerate() {
        assert_eq!(*consecutive, n as u64 + 1);
        assert_eq!(*next, Some([1_000, 2_000, 4_000][n.min(2)]), "{idle:?}");
    }
    let waits: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WaitStarted { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect();
    assert_eq!(waits.len(), waited.len());
    assert_eq!(
        outcome.idle_time.as_millis(),
        u128::from(waits.iter().sum::<u64>())
    );
}
