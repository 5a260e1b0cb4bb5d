//! The embedder's run API on real processes and real folders: `EngineOptions::load`,
//! `in_folder` and `resume` refuse what `ralph run --resume` refuses, `Engine::run` refuses a
//! session it must not take up before it writes anything, and a `RunHandle` is a stream of
//! events that cancels its run when dropped.

use std::path::Path;
use std::pin::Pin;
use std::time::{Duration, Instant};

use ralph_engine::{Engine, EngineError, EngineOptions, EventKind, ResumeError, RunHandle};

fn folder_with(ralph_md: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("RALPH.md"), ralph_md).unwrap();
    dir
}

fn in_folder(dir: &Path) -> EngineOptions {
    EngineOptions::load(dir).unwrap().in_folder(dir)
}

/// Waits for `run`'s first agent to start.
async fn until_agent_runs(run: &mut RunHandle) {
    while let Some(event) = run.next_event().await {
        if matches!(event.kind, EventKind::IterationStarted { .. }) {
            return;
        }
    }
    panic!("the run ended before its agent started");
}

fn events_of(log_dir: &Path) -> String {
    std::fs::read_to_string(log_dir.join("events.jsonl")).unwrap()
}

const DONE: &str = "---\nagent: echo '<!-- ralph:state done -->'\n---\nWork.\n";
const SLOW: &str = "---\nagent: sleep 60\n---\nWork.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_where_no_run_started_has_nothing_to_resume() {
    let dir = folder_with(DONE);
    let err = in_folder(dir.path()).resume(None).unwrap_err();
    assert!(matches!(err, ResumeError::NoRun { .. }), "{err}");
    let err = in_folder(dir.path())
        .resume(Some("../elsewhere"))
        .unwrap_err();
    assert!(matches!(err, ResumeError::NotARunId { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ended_by_itself_is_not_resumed_and_not_rerun() {
    let dir = folder_with(DONE);
    let outcome = Engine::new(in_folder(dir.path())).run().await.unwrap();
    assert_eq!(outcome.reason.as_str(), "agent_done");
    assert!(!outcome.resumable);
    let err = in_folder(dir.path()).resume(None).unwrap_err();
    match &err {
        ResumeError::Ended {
            run_id,
            reason,
            exit_code,
            ..
        } => {
            assert_eq!(
                (run_id, reason.as_str(), *exit_code),
                (&outcome.run_id, "agent_done", 0)
            );
        }
        other => panic!("{other}"),
    }
    // Handed the session anyway, the engine refuses it and writes nothing.
    let log_dir = outcome.log_dir.unwrap();
    let before = events_of(&log_dir);
    let mut options = in_folder(dir.path());
    options.run_id.clone_from(&outcome.run_id);
    options.log_dir = Some(log_dir.clone());
    options.resume = Some(ralph_events::session::Session::read(&log_dir).unwrap());
    let refused = Engine::new(options).run().await.unwrap_err();
    assert!(
        matches!(refused, EngineError::Resume(ResumeError::Ended { .. })),
        "{refused}"
    );
    assert_eq!(
        events_of(&log_dir),
        before,
        "the run's history is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_folders_session_is_refused_and_its_history_untouched() {
    let home = folder_with("---\nagent: echo\nmax_iterations: 1\n---\nWork.\n");
    let outcome = Engine::new(in_folder(home.path())).run().await.unwrap();
    assert!(outcome.resumable, "max_iterations may go on");
    let log_dir = outcome.log_dir.unwrap();
    let before = events_of(&log_dir);

    let other = folder_with("---\nagent: echo\n---\nWork.\n");
    let mut options = in_folder(other.path());
    options.log_dir = Some(log_dir.clone());
    options.resume = Some(ralph_events::session::Session::read(&log_dir).unwrap());
    let refused = Engine::new(options).run().await.unwrap_err();
    match refused {
        EngineError::Resume(ResumeError::OtherFolder { run_id, folder }) => {
            assert_eq!(run_id, outcome.run_id);
            assert_eq!(folder, std::fs::canonicalize(home.path()).unwrap());
        }
        other => panic!("{other}"),
    }
    assert_eq!(events_of(&log_dir), before, "no RUN_ENDED written into it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_at_its_iteration_limit_needs_a_higher_one() {
    let dir = folder_with("---\nagent: echo\nmax_iterations: 1\n---\nWork.\n");
    let first = Engine::new(in_folder(dir.path())).run().await.unwrap();
    let err = in_folder(dir.path()).resume(None).unwrap_err();
    assert!(
        matches!(err, ResumeError::AtIterationLimit { limit: 1, .. }),
        "{err}"
    );
    let mut options = in_folder(dir.path());
    options.overrides.max_iterations = Some(2);
    let resumed = options.resume(None).unwrap();
    assert_eq!(resumed.run_id, first.run_id);
    let outcome = Engine::new(resumed).run().await.unwrap();
    assert_eq!((outcome.run_id, outcome.iterations), (first.run_id, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_run_is_not_resumed_and_its_folder_not_taken() {
    let dir = folder_with(SLOW);
    let mut run = Engine::new(in_folder(dir.path())).spawn();
    until_agent_runs(&mut run).await;
    let err = in_folder(dir.path()).resume(None).unwrap_err();
    match err {
        ResumeError::Running { run_id, pid } => {
            assert_eq!(run_id, run.run_id());
            assert_eq!(pid, std::process::id());
        }
        other => panic!("{other}"),
    }
    let second = Engine::new(in_folder(dir.path())).run().await.unwrap_err();
    assert!(matches!(second, EngineError::Lock(_)), "{second}");
    assert!(second.to_string().contains(run.run_id()), "{second}");
    run.cancel();
    assert_eq!(run.wait().await.unwrap().reason.as_str(), "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_handle_cancels_its_run() {
    let dir = folder_with(SLOW);
    let mut run = Engine::new(in_folder(dir.path())).spawn();
    let log_dir = run.log_dir().unwrap().to_path_buf();
    until_agent_runs(&mut run).await;
    drop(run);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !events_of(&log_dir).contains("\"RUN_ENDED\"") {
        assert!(
            Instant::now() < deadline,
            "the run went on: {}",
            events_of(&log_dir)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(events_of(&log_dir).contains("\"reason\":\"cancelled\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canceller_outlives_its_handle_and_a_detached_run_goes_on() {
    let dir = folder_with("---\nagent: sleep 60\nmax_iterations: 1\n---\nWork.\n");
    let mut run = Engine::new(in_folder(dir.path())).spawn();
    let log_dir = run.log_dir().unwrap().to_path_buf();
    let canceller = run.canceller();
    until_agent_runs(&mut run).await;
    run.detach();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !events_of(&log_dir).contains("\"RUN_ENDED\""),
        "detached, the run goes on"
    );
    std::thread::spawn(move || canceller.cancel())
        .join()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !events_of(&log_dir).contains("\"reason\":\"cancelled\"") {
        assert!(Instant::now() < deadline, "{}", events_of(&log_dir));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_is_a_stream_of_its_events_and_the_outcome_names_the_run() {
    use futures_core::Stream;
    let dir = folder_with("---\nagent: echo\nmax_iterations: 2\n---\nWork.\n");
    let mut run = Engine::new(in_folder(dir.path())).spawn();
    let id = run.run_id().to_owned();
    let mut kinds = Vec::new();
    while let Some(event) = std::future::poll_fn(|cx| Pin::new(&mut run).poll_next(cx)).await {
        assert_eq!(event.run_id, id);
        kinds.push(event.kind);
    }
    assert!(matches!(kinds.first(), Some(EventKind::RunStarted { .. })));
    assert!(matches!(kinds.last(), Some(EventKind::RunEnded { .. })));
    let outcome = run.wait().await.unwrap();
    assert_eq!(outcome.run_id, id);
    assert_eq!(
        outcome.log_dir.as_deref(),
        Some(dir.path().join(".ralph/runs").join(&id).as_path())
    );
    assert!(outcome.resumable, "a max_iterations ending may go on");
    assert_eq!(outcome.cost_usd, None, "a text agent reports no cost");
}
