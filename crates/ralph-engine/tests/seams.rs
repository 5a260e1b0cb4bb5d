//! The loop's two backoffs are seams an embedder replaces: the idle one (a handler registered
//! as `idle`, which keeps `ITERATION_IDLE`) and the failure one (`Engine::set_failure_backoff`).

use std::time::Duration;

use ralph_engine::{
    Engine, EngineOptions, FailureBackoff, FailureDecision, StateContext, StateDecision,
    StateHandler, StateWait, WaitReason,
};

/// The run's events, from its log folder.
fn events(outcome: &ralph_engine::RunOutcome) -> Vec<serde_json::Value> {
    std::fs::read_to_string(outcome.log_dir.as_ref().unwrap().join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Idle waits of 5 ms, without emitting anything itself.
struct QuietIdle;

impl StateHandler for QuietIdle {
    type State = ();

    fn on_state(&mut self, _cx: &mut StateContext<'_>) -> StateDecision {
        StateDecision::Wait(StateWait::new(Duration::from_millis(5)).reason(WaitReason::Idle))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_handler_of_ones_own_keeps_iteration_idle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("RALPH.md"),
        "---\nagent: echo '<!-- ralph:state idle -->'\nmax_iterations: 3\n---\nGo.\n",
    )
    .unwrap();
    let mut engine = Engine::new(
        EngineOptions::load(dir.path())
            .unwrap()
            .in_folder(dir.path()),
    );
    engine.state_handlers().register("idle", QuietIdle);
    let outcome = engine.run().await.unwrap();
    assert_eq!(outcome.idle_iterations, 3);
    let idle: Vec<(u64, u64)> = events(&outcome)
        .iter()
        .filter(|e| e["type"] == "ITERATION_IDLE")
        .map(|e| {
            assert_eq!(e["next_delay_ms"], 5);
            (
                e["iteration"].as_u64().unwrap(),
                e["consecutive_idle"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(idle, [(1, 1), (2, 2), (3, 3)]);
}

/// 7 ms after each failure; the loop ends at the third in a row.
struct ThreeStrikes;

impl FailureBackoff for ThreeStrikes {
    fn after_failure(&mut self, consecutive: u64) -> FailureDecision {
        match consecutive {
            3.. => FailureDecision::Stop { consecutive },
            _ => FailureDecision::Wait {
                delay: Duration::from_millis(7),
                consecutive,
            },
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_backoff_of_ones_own_decides_the_waits_and_the_end() {
    let dir = tempfile::tempdir().unwrap();
    // The file's policy would wait 30 s and give up after 10.
    std::fs::write(
        dir.path().join("RALPH.md"),
        "---\nagent: 'false'\nfailure: {delay: 30s, max_consecutive: 10}\n---\nGo.\n",
    )
    .unwrap();
    let mut engine = Engine::new(
        EngineOptions::load(dir.path())
            .unwrap()
            .in_folder(dir.path()),
    );
    engine.set_failure_backoff(ThreeStrikes);
    let outcome = engine.run().await.unwrap();
    assert_eq!(outcome.reason.as_str(), "agent_failing");
    assert_eq!((outcome.iterations, outcome.exit_code), (3, 1));
    let waits: Vec<serde_json::Value> = events(&outcome)
        .iter()
        .filter(|e| e["type"] == "ITERATION_FAILED")
        .map(|e| e["next_delay_ms"].clone())
        .collect();
    assert_eq!(waits, [7.into(), 7.into(), serde_json::Value::Null]);
}
