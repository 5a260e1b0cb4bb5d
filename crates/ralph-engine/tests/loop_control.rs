//! Loop control on tokio's controllable clock: failure backoff, rate-limit waits, the runtime
//! budget and the Ctrl+C grace, each wait exact to the millisecond, hours of them in
//! milliseconds of real time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ralph_engine::{
    AdapterOutput, Engine, EngineOptions, Event, EventKind, EventSink, FailureKind,
    InterruptSignal, OutputAdapter, RateLimit, Stream, Usage,
};
use tokio::sync::mpsc;
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
    fn kinds(&self) -> Vec<EventKind> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, e)| e.kind.clone())
            .collect()
    }

    /// When each event whose kind `pick` accepts arrived.
    fn times(&self, pick: impl Fn(&EventKind) -> bool) -> Vec<Instant> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter(|(_, e)| pick(&e.kind))
            .map(|(t, _)| *t)
            .collect()
    }

    async fn wait_for(&self, pick: impl Fn(&EventKind) -> bool) -> Instant {
        loop {
            if let Some(t) = self.times(&pick).first() {
                return *t;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
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

fn waits(kinds: &[EventKind]) -> Vec<(String, u64)> {
    kinds
        .iter()
        .filter_map(|k| match k {
            EventKind::WaitStarted {
                reason, delay_ms, ..
            } => Some((
                serde_json::to_value(reason)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
                *delay_ms,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_default_failure_backoff_doubles_to_five_minutes_and_stops_at_ten() {
    let (engine, recorder) = engine("agent: sh -c 'exit 1'");
    let start = Instant::now();
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.reason.as_str(), "agent_failing");
    assert_eq!((outcome.exit_code, outcome.iterations), (1, 10));

    let secs: Vec<u64> = waits(&recorder.kinds())
        .into_iter()
        .map(|(reason, ms)| {
            assert_eq!(reason, "failure");
            ms / 1000
        })
        .collect();
    assert_eq!(secs, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
    // Every wait was waited in full: 1215s, plus at most the pipe drain of each run.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(1215) && took < Duration::from_secs(1215 + 10),
        "{took:?}"
    );
    let failed: Vec<(u64, Option<u64>, String, Option<FailureKind>)> = recorder
        .kinds()
        .iter()
        .filter_map(|k| match k {
            EventKind::IterationFailed {
                consecutive_failures,
                next_delay_ms,
                failure,
                failure_kind,
                ..
            } => Some((
                *consecutive_failures,
                *next_delay_ms,
                failure.clone(),
                *failure_kind,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 10);
    // The words as ever, and the kind beside them.
    let last = (10, None, "exit 1".to_owned(), Some(FailureKind::ExitStatus));
    assert_eq!(failed[9], last);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_ten_hours_away_waits_exactly_the_six_hour_cap() {
    let (engine, recorder) = engine(
        "agent: sh -c '[ \"$RALPH_ITERATION\" = 2 ] && exit 0; \
         echo \"Claude AI usage limit reached|$(( $(date +%s) + 36000 ))\"; exit 1'\n\
         max_iterations: 2",
    );
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.exit_code, 0, "a rate limit is not a failure");

    let kinds = recorder.kinds();
    assert!(kinds.iter().any(|k| matches!(
        k,
        EventKind::RateLimited {
            iteration: 1,
            wait_ms: Some(21_600_000),
            ..
        }
    )));
    assert_eq!(waits(&kinds), [("rate_limit".to_owned(), 21_600_000)]);
    let ended = recorder.times(|k| matches!(k, EventKind::IterationEnded { iteration: 1, .. }));
    let second = recorder.times(|k| matches!(k, EventKind::IterationStarted { iteration: 2, .. }));
    let waited = second[0] - ended[0];
    assert!(
        waited >= Duration::from_secs(6 * 3600) && waited < Duration::from_secs(6 * 3600 + 1),
        "{waited:?}"
    );
}

/// An agent whose words no built-in adapter knows: `QUOTA EXHAUSTED` on a failed run.
#[derive(Default)]
struct QuotaAdapter {
    said: Vec<u8>,
}

impl OutputAdapter for QuotaAdapter {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        self.said.extend_from_slice(bytes);
        out.show(stream, bytes);
    }

    fn finish(&mut self, _out: &mut dyn AdapterOutput) -> Option<Usage> {
        None
    }

    fn rate_limit(&self, _output_tail: &str, now: SystemTime) -> Option<RateLimit> {
        let said = String::from_utf8_lossy(&self.said);
        said.contains("QUOTA EXHAUSTED")
            .then(|| RateLimit::resets_at(now + Duration::from_secs(10 * 3600)))
    }
}

/// Issue 25, item 7: an adapter says "rate limited" in its own verdict, with its reset, and the
/// engine waits it out (capped at six hours) though the agent's words are none of Claude's.
#[tokio::test(start_paused = true)]
async fn an_adapters_own_rate_limit_is_waited_out() {
    let (mut engine, recorder) = engine(
        "agent: sh -c '[ \"$RALPH_ITERATION\" = 2 ] && exit 0; echo QUOTA EXHAUSTED; exit 1'\n\
         max_iterations: 2",
    );
    engine.set_adapter(|_| Some(Box::new(QuotaAdapter::default())));
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.exit_code, 0, "a rate limit is not a failure");

    let kinds = recorder.kinds();
    assert!(
        kinds.iter().any(|k| matches!(
            k,
            EventKind::RateLimited {
                iteration: 1,
                wait_ms: Some(21_600_000),
                ..
            }
        )),
        "{kinds:?}"
    );
    assert!(
        !kinds
            .iter()
            .any(|k| matches!(k, EventKind::IterationFailed { .. })),
        "{kinds:?}"
    );
    assert_eq!(waits(&kinds), [("rate_limit".to_owned(), 21_600_000)]);
}

#[tokio::test(start_paused = true)]
async fn an_eight_hour_runtime_budget_cuts_the_last_wait_short() {
    // Idle every run, 3h waits: runs at 0h, 3h, 6h; the third wait is cut at 8h.
    let (engine, recorder) = engine(
        "agent: sh -c 'echo \"<!-- ralph:state idle -->\"'\n\
         idle: {delay: 3h, backoff: 1}\nmax_runtime: 8h",
    );
    let start = Instant::now();
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.reason.as_str(), "max_runtime");
    assert_eq!((outcome.exit_code, outcome.iterations), (1, 3));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(8 * 3600) && took < Duration::from_secs(8 * 3600 + 1),
        "{took:?}"
    );
    let w = waits(&recorder.kinds());
    assert_eq!(w.len(), 3);
    assert!(
        w[2].1 < 2 * 3_600_000 + 1 && w[2].1 > 2 * 3_600_000 - 5_000,
        "{w:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_ctrl_c_within_the_grace_stops_before_any_new_run() {
    let (mut engine, recorder) =
        engine("agent: sh -c 'echo \"<!-- ralph:state idle -->\"'\nidle: {delay: 30s}");
    let (tx, rx) = mpsc::unbounded_channel();
    engine.interrupts(rx);
    // The engine's future is not Send: it runs here, the presses beside it.
    let presses = async {
        recorder
            .wait_for(|k| matches!(k, EventKind::WaitStarted { .. }))
            .await;
        tx.send(InterruptSignal::Int).unwrap();
        recorder
            .wait_for(|k| matches!(k, EventKind::WaitSkipped { .. }))
            .await;
        tokio::time::sleep(Duration::from_millis(900)).await;
        tx.send(InterruptSignal::Int).unwrap();
    };
    let (outcome, ()) = tokio::join!(engine.run(), presses);
    let outcome = outcome.expect("the run ends");
    assert_eq!(
        (outcome.reason.as_str(), outcome.exit_code),
        ("interrupted", 130)
    );
    assert_eq!(outcome.iterations, 1, "no agent run was started");
}

#[tokio::test(start_paused = true)]
async fn one_ctrl_c_skips_the_wait_and_the_next_run_starts_a_second_later() {
    let (mut engine, recorder) = engine(
        "agent: sh -c 'echo \"<!-- ralph:state idle -->\"'\nidle: {delay: 30s}\nmax_iterations: 2",
    );
    let (tx, rx) = mpsc::unbounded_channel();
    engine.interrupts(rx);
    let press = async {
        recorder
            .wait_for(|k| matches!(k, EventKind::WaitStarted { .. }))
            .await;
        tx.send(InterruptSignal::Int).unwrap();
    };
    let (outcome, ()) = tokio::join!(engine.run(), press);
    let outcome = outcome.expect("the run ends");
    assert_eq!((outcome.iterations, outcome.exit_code), (2, 0));
    let skipped = recorder.times(|k| matches!(k, EventKind::WaitSkipped { .. }));
    let second = recorder.times(|k| matches!(k, EventKind::IterationStarted { iteration: 2, .. }));
    let grace = second[0] - skipped[0];
    assert!(
        grace >= Duration::from_secs(1) && grace < Duration::from_millis(1100),
        "{grace:?}"
    );
}
