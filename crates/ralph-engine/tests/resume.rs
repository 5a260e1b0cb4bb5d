//! Resume on tokio's controllable clock: a run taken up from its session file goes on with its
//! idle streak, the rest of its wait and its runtime budget, to the millisecond.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ralph_engine::{Engine, EngineOptions, Event, EventKind, EventSink, RunOutcome};
use ralph_events::session::Session;
use tokio::time::Instant;

/// Collects events with the (virtual) time each arrived.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(Instant, EventKind)>>>);

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.0
            .lock()
            .unwrap()
            .push((Instant::now(), event.kind.clone()));
    }
}

impl Recorder {
    fn kinds(&self) -> Vec<EventKind> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, k)| k.clone())
            .collect()
    }
}

/// Idle on every iteration, waits of 1, 2, 4, 8 ... minutes.
const IDLE: &str = "agent: sh -c 'cat >/dev/null; echo \"<!-- ralph:state idle -->\"'\n\
                    idle: {delay: 1m, backoff: 2, max_delay: 1h}";

async fn run(
    dir: &Path,
    max_iterations: Option<u64>,
    max_runtime: Option<Duration>,
    resume: Option<Session>,
) -> (RunOutcome, Recorder, Duration) {
    let text = format!("---\n{IDLE}\n---\nx\n");
    let parsed = ralph_frontmatter::parse("RALPH.md", &text).expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    options.log_dir = Some(dir.to_path_buf());
    options.overrides.max_iterations = max_iterations;
    options.overrides.max_runtime = max_runtime;
    if let Some(session) = resume {
        options.run_id = session.run_id.clone();
        options.resume = Some(session);
    }
    let mut engine = Engine::new(options);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());
    let start = Instant::now();
    let outcome = engine.run().await.expect("the run ends");
    (outcome, recorder, start.elapsed())
}

fn waits(kinds: &[EventKind]) -> Vec<u64> {
    kinds
        .iter()
        .filter_map(|k| match k {
            EventKind::WaitStarted { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_resumed_run_finishes_its_wait_then_goes_on_with_its_idle_streak() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, recorder, _) = run(dir.path(), Some(3), None, None).await;
    assert_eq!(outcome.iterations, 3);
    assert_eq!(waits(&recorder.kinds()), [60_000, 120_000]);
    let session = Session::read(dir.path()).unwrap();
    assert_eq!(session.consecutive_idle, 3);
    let planned = (session.wait.clone()).expect("the wait after iteration 3 is recorded");
    assert_eq!(planned.delay_ms, 240_000);

    let (outcome, recorder, took) = run(dir.path(), Some(4), None, Some(session)).await;
    assert_eq!(outcome.iterations, 4);
    let kinds = recorder.kinds();
    assert!(matches!(
        &kinds[0],
        EventKind::RunResumed { iteration: 3, previous_reason } if previous_reason == "max_iterations"
    ));
    // What is left of the 4 minutes (the wall clock moved a little meanwhile), then iteration
    // 4, the fourth idle in a row.
    let left = waits(&kinds)[0];
    assert!((239_000..=240_000).contains(&left), "{left}");
    assert!(took >= Duration::from_millis(left), "{took:?}");
    let streak: Vec<u64> = kinds
        .iter()
        .filter_map(|k| match k {
            EventKind::IterationIdle {
                consecutive_idle, ..
            } => Some(*consecutive_idle),
            _ => None,
        })
        .collect();
    assert_eq!(streak, [4]);
}

#[tokio::test(start_paused = true)]
async fn max_runtime_counts_the_time_before_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    // 1 + 2 minutes of waits: 3 minutes of run time.
    let (_, _, took) = run(dir.path(), Some(3), None, None).await;
    assert!(took >= Duration::from_secs(180) && took < Duration::from_secs(181));
    let mut session = Session::read(dir.path()).unwrap();
    assert!((180_000..181_000).contains(&session.elapsed_ms));
    session.wait = None;
    // The stopped run's limits are the resumed run's: its iteration cap taken off here.
    session.max_iterations = None;

    // 5 minutes in all: iteration 4 waits 8 minutes, cut to the 2 minutes left.
    let (outcome, recorder, took) = run(
        dir.path(),
        None,
        Some(Duration::from_secs(300)),
        Some(session),
    )
    .await;
    assert_eq!(outcome.reason.as_str(), "max_runtime");
    assert_eq!(outcome.iterations, 4);
    let left = waits(&recorder.kinds())[0];
    assert!((119_000..=120_000).contains(&left), "{left}");
    assert!(took < Duration::from_secs(121), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn a_resumed_run_keeps_its_limits_unless_overridden() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), Some(3), None, None).await;
    let mut session = Session::read(dir.path()).unwrap();
    session.wait = None;
    assert_eq!(session.max_iterations, Some(3));

    // The stopped run's cap is the resumed run's: nothing is left to run.
    let (outcome, _, _) = run(dir.path(), None, None, Some(session.clone())).await;
    assert_eq!(
        (outcome.reason.as_str(), outcome.iterations),
        ("max_iterations", 3)
    );

    // One given now beats it.
    let (outcome, _, _) = run(dir.path(), Some(4), None, Some(session)).await;
    assert_eq!(outcome.iterations, 4);
}
