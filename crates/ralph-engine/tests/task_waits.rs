//! A task source that has nothing to work on yet (a person's answer is awaited) says
//! `NextTask::Wait`: the engine waits, says so once per stretch of waiting for the same thing,
//! counts no iteration, and asks again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ralph_engine::{
    EndReason, Engine, EngineOptions, Event, EventKind, EventSink, IterationReport, NextTask, Task,
    TaskContext, TaskDecision, TaskSource, TaskWait, WaitReason,
};

#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<EventKind>>>,
}

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.events.lock().unwrap().push(event.kind.clone());
    }
}

/// Waits three looks for an answer, then for something else once, then works once and ends.
#[derive(Default)]
struct Asking {
    looks: u32,
    worked: bool,
}

impl TaskSource for Asking {
    type State = ();

    fn next_task(&mut self, _cx: &mut TaskContext<'_>) -> NextTask {
        self.looks += 1;
        match (self.looks, self.worked) {
            (1..=3, _) => NextTask::Wait(TaskWait::new(
                Duration::from_secs(5),
                "waiting for an answer in TODO.md:3",
            )),
            (4, _) => NextTask::Wait(TaskWait::new(Duration::from_secs(5), "waiting for CI")),
            (_, false) => NextTask::Work(Task::new("t")),
            (_, true) => NextTask::End(EndReason::Task {
                reason: "tasks_done".to_owned(),
                exit_code: 0,
                converged: true,
                resumable: false,
            }),
        }
    }

    fn iteration_ended(
        &mut self,
        _report: &IterationReport<'_>,
        _cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        self.worked = true;
        TaskDecision::NextTask
    }
}

#[tokio::test(start_paused = true)]
async fn a_source_that_waits_is_asked_again_and_the_wait_is_said_once_per_stretch() {
    let text = "---\nagent: 'true'\n---\nx\n";
    let parsed = ralph_frontmatter::parse("RALPH.md", text).expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    let mut engine = Engine::new(options);
    let recorder = Recorder::default();
    engine.add_sink(recorder.clone());
    engine.set_task_source(Asking::default());
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.reason.as_str(), "tasks_done");
    assert_eq!(outcome.iterations, 1, "waiting is no iteration");
    let waits: Vec<(WaitReason, u64, Option<String>)> = recorder
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|k| match k {
            EventKind::WaitStarted {
                reason,
                delay_ms,
                why,
                ..
            } => Some((*reason, *delay_ms, why.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        waits,
        [
            (
                WaitReason::Task,
                5000,
                Some("waiting for an answer in TODO.md:3".to_owned())
            ),
            (WaitReason::Task, 5000, Some("waiting for CI".to_owned())),
        ]
    );
}

/// Nothing to give, five times, each asking to be asked again at once; then done.
#[derive(Default)]
struct Empty {
    looks: u32,
}

impl TaskSource for Empty {
    type State = ();

    fn next_task(&mut self, _cx: &mut TaskContext<'_>) -> NextTask {
        self.looks += 1;
        match self.looks {
            1..=5 => NextTask::Wait(TaskWait::new(Duration::ZERO, "nothing queued")),
            _ => NextTask::End(EndReason::Task {
                reason: "queue_empty".to_owned(),
                exit_code: 0,
                converged: true,
                resumable: false,
            }),
        }
    }

    fn iteration_ended(
        &mut self,
        _report: &IterationReport<'_>,
        _cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        TaskDecision::Continue
    }
}

#[tokio::test(start_paused = true)]
async fn a_source_with_nothing_to_give_does_not_make_the_loop_spin() {
    let parsed = ralph_frontmatter::parse("RALPH.md", "---\nagent: 'true'\n---\nx\n")
        .expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    options.cwd = std::env::temp_dir();
    let mut engine = Engine::new(options);
    engine.set_task_source(Empty::default());
    let start = tokio::time::Instant::now();
    let outcome = engine.run().await.unwrap();
    assert_eq!(
        (outcome.reason.as_str(), outcome.iterations),
        ("queue_empty", 0)
    );
    // Each "ask again at once" waited the engine's shortest poll.
    assert_eq!(start.elapsed(), Duration::from_millis(50));
}
