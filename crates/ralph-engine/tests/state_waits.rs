//! Idle is a handler like any other: a wait is what its handler calls it, with the streak the
//! handler keeps, whatever the state is named. The loop counts idle iterations and idle time
//! from the handler's word, never from the name `idle`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ralph_engine::{
    Engine, EngineOptions, Event, EventKind, EventSink, RunOutcome, StateContext, StateDecision,
    StateHandler, StateWait, WaitProgress, WaitReason,
};

/// Collects events and the streak of every wait's first countdown report.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<EventKind>>>,
    streaks: Arc<Mutex<Vec<(WaitReason, u64)>>>,
}

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.events.lock().unwrap().push(event.kind.clone());
    }

    fn wait_progress(&mut self, progress: &WaitProgress) {
        if progress.remaining == progress.total {
            let streak = (progress.reason, progress.consecutive_idle);
            self.streaks.lock().unwrap().push(streak);
        }
    }
}

impl Recorder {
    fn wait_reasons(&self) -> Vec<WaitReason> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter_map(|k| match k {
                EventKind::WaitStarted { reason, .. } => Some(*reason),
                _ => None,
            })
            .collect()
    }
}

/// Naps for a second each time and calls its waits idle, keeping its own streak.
#[derive(Default)]
struct Napping {
    naps: u64,
}

impl StateHandler for Napping {
    type State = ();

    fn on_state(&mut self, _cx: &mut StateContext<'_>) -> StateDecision {
        self.naps += 1;
        let wait = StateWait::new(Duration::from_secs(1))
            .reason(WaitReason::Idle)
            .streak(self.naps);
        StateDecision::Wait(wait)
    }

    fn on_other_state(&mut self) {
        self.naps = 0;
    }
}

/// Polls again in a second: a plain state wait.
struct Polling;

impl StateHandler for Polling {
    type State = ();

    fn on_state(&mut self, _cx: &mut StateContext<'_>) -> StateDecision {
        StateDecision::wait(Duration::from_secs(1))
    }
}

/// Three iterations of an agent that reports `state`, with `handler` registered for it.
async fn run(state: &str, handler: impl StateHandler + 'static) -> (RunOutcome, Recorder) {
    let text = format!(
        "---\nagent: sh -c 'cat >/dev/null; echo \"<!-- ralph:state {state} -->\"'\n\
         max_iterations: 3\n---\nx\n"
    );
    let parsed = ralph_frontmatter::parse("RALPH.md", &text).expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    let mut engine = Engine::new(options);
    engine.state_handlers().register(state, handler);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());
    let outcome = engine.run().await.expect("the run ends");
    (outcome, recorder)
}

#[tokio::test(start_paused = true)]
async fn a_state_of_any_name_whose_handler_calls_its_waits_idle_is_idle() {
    let (outcome, recorder) = run("napping", Napping::default()).await;
    assert_eq!(outcome.idle_iterations, 3);
    assert_eq!(outcome.idle_time, Duration::from_secs(2));
    assert_eq!(
        recorder.wait_reasons(),
        [WaitReason::Idle, WaitReason::Idle]
    );
    let streaks = recorder.streaks.lock().unwrap().clone();
    assert_eq!(streaks, [(WaitReason::Idle, 1), (WaitReason::Idle, 2)]);
}

#[tokio::test(start_paused = true)]
async fn the_idle_state_with_a_handler_that_waits_plainly_is_not_idle() {
    let (outcome, recorder) = run("idle", Polling).await;
    assert_eq!(outcome.idle_iterations, 0);
    assert_eq!(outcome.idle_time, Duration::ZERO);
    assert_eq!(
        recorder.wait_reasons(),
        [WaitReason::State, WaitReason::State]
    );
    let streaks = recorder.streaks.lock().unwrap().clone();
    assert_eq!(streaks, [(WaitReason::State, 0), (WaitReason::State, 0)]);
}
