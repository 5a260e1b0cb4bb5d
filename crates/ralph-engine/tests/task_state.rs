//! A task source's typed `State` goes through the session file: a resumed run gets back the
//! value its source saved, and a saved state of another shape is a `WARNING` and a fresh start.

use std::path::Path;
use std::sync::{Arc, Mutex};

use ralph_engine::{
    Engine, EngineOptions, Event, EventKind, EventSink, IterationReport, NextTask, Session, Task,
    TaskContext, TaskDecision, TaskSource, WarningKind,
};
use serde::{Deserialize, Serialize};

/// What [`Counting`] keeps: how many iterations it saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    iterations: u64,
}

/// Counts the iterations it judges, across a resume; `restored` is what `restore` got.
#[derive(Clone, Default)]
struct Counting {
    seen: u64,
    restored: Arc<Mutex<Option<Seen>>>,
}

impl TaskSource for Counting {
    type State = Seen;

    fn next_task(&mut self, _cx: &mut TaskContext<'_>) -> NextTask {
        NextTask::Work(Task::new("count"))
    }

    fn iteration_ended(
        &mut self,
        _report: &IterationReport<'_>,
        _cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        self.seen += 1;
        TaskDecision::Continue
    }

    fn snapshot(&self, _ending: bool) -> Option<Seen> {
        Some(Seen {
            iterations: self.seen,
        })
    }

    fn restore(&mut self, state: Seen, _cx: &mut TaskContext<'_>) {
        self.seen = state.iterations;
        *self.restored.lock().unwrap() = Some(state);
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<EventKind>>>);

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.0.lock().unwrap().push(event.kind.clone());
    }
}

async fn run(dir: &Path, source: Counting, resume: Option<Session>) -> Vec<EventKind> {
    let parsed = ralph_frontmatter::parse("RALPH.md", "---\nagent: 'true'\n---\nx\n")
        .expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    options.log_dir = Some(dir.to_path_buf());
    options.overrides.max_iterations = Some(2);
    if let Some(session) = resume {
        options.run_id = session.run_id.clone();
        options.overrides.max_iterations = Some(3);
        options.resume = Some(session);
    }
    let mut engine = Engine::new(options);
    engine.set_task_source(source);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());
    engine.run().await.expect("the run ends");
    recorder.0.lock().unwrap().clone()
}

fn warnings(kinds: &[EventKind]) -> Vec<(WarningKind, String)> {
    kinds
        .iter()
        .filter_map(|k| match k {
            EventKind::Warning { kind, message } => Some((*kind, message.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_resumed_source_gets_back_the_state_it_saved() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), Counting::default(), None).await;
    let session = Session::read(dir.path()).unwrap();
    assert_eq!(session.task, Some(serde_json::json!({"iterations": 2})));

    let resumed = Counting::default();
    let kinds = run(dir.path(), resumed.clone(), Some(session)).await;
    assert_eq!(warnings(&kinds), []);
    assert_eq!(
        *resumed.restored.lock().unwrap(),
        Some(Seen { iterations: 2 })
    );
    let session = Session::read(dir.path()).unwrap();
    assert_eq!(session.task, Some(serde_json::json!({"iterations": 3})));
}

#[tokio::test(start_paused = true)]
async fn a_saved_state_of_another_shape_is_a_warning_and_a_fresh_start() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), Counting::default(), None).await;
    let mut session = Session::read(dir.path()).unwrap();
    session.task = Some(serde_json::json!({"iterations": "two"}));

    let resumed = Counting::default();
    let kinds = run(dir.path(), resumed.clone(), Some(session)).await;
    let warnings = warnings(&kinds);
    assert!(
        matches!(&warnings[..], [(WarningKind::UnreadableState, w)]
            if w.starts_with("the session's task source state is unreadable")),
        "{warnings:?}"
    );
    assert_eq!(*resumed.restored.lock().unwrap(), None);
    // Started afresh: the one iteration left is the only one it saw.
    let session = Session::read(dir.path()).unwrap();
    assert_eq!(session.task, Some(serde_json::json!({"iterations": 1})));
}
