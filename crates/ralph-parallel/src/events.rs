//! A parallel run's own events: the types and their reader are ralph-events' wire types
//! (`ralph_events::parallel`, re-exported here whole); the sinks that take them as the run
//! goes (the events file and the CLI's terminal lines), and the board they are shown with,
//! are the coordinator's.

use std::io::Write;

use ralph_engine::JsonLinesWriter;
pub use ralph_events::parallel::*;

/// A running lane as the terminal shows it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LaneView {
    /// The task.
    pub task_id: String,
    /// The lane's current iteration (0 before the first).
    pub iteration: u64,
    /// `starting`, `running`, the last iteration's state marker (or `ended`), `merging`.
    pub state: String,
    /// When the lane started.
    pub started: std::time::Instant,
    /// Its cost so far, in US dollars.
    pub cost_usd: f64,
}

/// The run at a glance, handed to every sink with each event and every second.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Board {
    /// The lanes running or waiting in the queue, in start order.
    pub lanes: Vec<LaneView>,
    /// Tasks landed in this run.
    pub landed: u64,
    /// Tasks blocked in this run.
    pub blocked: u64,
    /// Tasks waiting to start (no slot, or dependencies not passed).
    pub waiting: u64,
    /// Tasks still to do (neither passed nor blocked), the running and queued ones included.
    pub pending: u64,
    /// Tasks in the merge queue, the one being landed included.
    pub queued: u64,
    /// The task the queue is landing now.
    pub merging: Option<String>,
    /// The lanes' cost, in US dollars: what their agents reported, 0 when none did.
    pub cost_usd: f64,
    /// The lanes' input plus output tokens, as their agents reported them (0 when none did):
    /// an agent that reports no cost (Codex, gemini-cli) still reports these.
    pub tokens: u64,
}

/// Where a parallel run's events go.
pub trait ParallelSink: Send {
    /// An event, and the board after it.
    fn event(&mut self, event: &ParallelEvent, board: &Board);

    /// A second went by: the board, for a live view's clocks.
    fn tick(&mut self, _board: &Board) {}

    /// A failure this sink cannot report to itself (its file could not be written, say), in
    /// words that name the sink; taken once. The run asks after every event and tells the
    /// other sinks as a `WARNING`, as the engine does. `None`, the default: nothing failed.
    fn take_failure(&mut self) -> Option<String> {
        None
    }
}

/// Writes each event as one JSON line, flushed, through the engine's [`JsonLinesWriter`]: a
/// failed write stops the writing and reaches the other sinks as a `WARNING`.
pub struct JsonLinesSink<W: Write + Send>(JsonLinesWriter<W>);

impl<W: Write + Send> JsonLinesSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        Self(JsonLinesWriter::new(out))
    }

    /// Names what `out` is (a path, `stdout`) for the warning if writing to it fails.
    pub fn named(self, name: impl Into<String>) -> Self {
        Self(self.0.named(name))
    }
}

impl<W: Write + Send> ParallelSink for JsonLinesSink<W> {
    fn event(&mut self, event: &ParallelEvent, _board: &Board) {
        // A sink that cannot write must not end the run: the lanes' own files still are.
        self.0.write(event);
    }

    fn take_failure(&mut self) -> Option<String> {
        self.0.take_failure()
    }
}

/// Sends `event` to every sink; a sink that failed is told of to the others as a `WARNING`,
/// once. One pass, so a sink that fails on the warning itself is told of at the next event.
pub(crate) fn send(sinks: &mut [Box<dyn ParallelSink>], event: &ParallelEvent, board: &Board) {
    for sink in sinks.iter_mut() {
        sink.event(event, board);
    }
    for failed in 0..sinks.len() {
        let Some(message) = sinks[failed].take_failure() else {
            continue;
        };
        let warning = ParallelEvent::new(
            std::time::SystemTime::now(),
            event.run_id.clone(),
            ParallelEventKind::Warning {
                message,
                task_id: None,
            },
        );
        for (i, sink) in sinks.iter_mut().enumerate() {
            if i != failed {
                sink.event(&warning, board);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_events::EndReason;

    fn event(kind: ParallelEventKind) -> ParallelEvent {
        ParallelEvent::new(
            humantime::parse_rfc3339("2026-01-01T00:00:01.250Z").unwrap(),
            "20260101-000000-ab12".to_owned(),
            kind,
        )
    }

    /// The lines are what the coordinator writes: each reads back as the value it came from.
    #[test]
    fn every_event_reads_back_as_it_was_written() {
        let task_id = || "US-001".to_owned();
        let kinds = vec![
            ParallelEventKind::ParallelStarted {
                base: "main".into(),
                base_commit: "abc".into(),
                parallel: 2,
                tasks: vec![task_id()],
                resumed: true,
            },
            ParallelEventKind::LaneStarted {
                task_id: task_id(),
                title: "Cart".into(),
                branch: "ralph/US-001".into(),
                worktree: ".ralph/worktrees/US-001".into(),
                lane_run_id: "l1".into(),
                log_dir: ".ralph/worktrees/US-001/.ralph/runs/l1".into(),
                returns: 1,
            },
            ParallelEventKind::LaneIterationStarted {
                task_id: task_id(),
                iteration: 3,
            },
            ParallelEventKind::LaneIterationEnded {
                task_id: task_id(),
                iteration: 3,
                state: Some("idle".into()),
                failed: true,
                cost_usd: Some(0.5),
                tokens: Some(2200),
            },
            ParallelEventKind::LaneRateLimited {
                task_id: task_id(),
                iteration: 3,
                until: "2026-03-02T11:00:00Z".into(),
                wait_ms: Some(3_600_000),
            },
            ParallelEventKind::LaneEnded {
                task_id: task_id(),
                reason: EndReason::MaxCost,
                iterations: 3,
                cost_usd: 0.75,
            },
            ParallelEventKind::MergeQueued {
                task_id: task_id(),
                position: 2,
            },
            ParallelEventKind::MergeStarted {
                task_id: task_id(),
                base_commit: "a".into(),
                branch_commit: "b".into(),
            },
            ParallelEventKind::MergeConflict {
                task_id: task_id(),
                files: vec!["src/cart.rs".into()],
                saved_ref: "refs/ralph/attempts/US-001/1".into(),
            },
            ParallelEventKind::MergeCheckFailed {
                task_id: task_id(),
                checks: vec![FailedCheck::new("cargo test".into(), None)],
                saved_ref: "refs/ralph/attempts/US-001/2".into(),
            },
            ParallelEventKind::MergeHeld {
                task_id: task_id(),
                files: vec!["src/cart.rs".into()],
            },
            ParallelEventKind::TaskLanded {
                task_id: task_id(),
                commit: "c".into(),
            },
            ParallelEventKind::PrOpened {
                task_id: task_id(),
                number: 7,
                url: "https://github.com/o/r/pull/7".into(),
                state: "open".into(),
                branch: "ralph/US-001".into(),
                base: "main".into(),
            },
            ParallelEventKind::LaneAsked {
                task_id: task_id(),
                question: "Which framework?".into(),
                at: "TODO.md:3".into(),
            },
            ParallelEventKind::TaskBlocked {
                task_id: task_id(),
                reason: "too hard".into(),
            },
            ParallelEventKind::Warning {
                message: "careful".into(),
                task_id: Some(task_id()),
            },
            ParallelEventKind::ParallelEnded {
                reason: EndReason::Interrupted,
                landed: 1,
                blocked: 0,
                remaining: 0,
                cost_usd: 0.75,
                exit_code: 0,
            },
        ];
        let mut file = Vec::new();
        for kind in &kinds {
            JsonLinesSink::new(&mut file).event(&event(kind.clone()), &Board::default());
        }
        let read = parse_events(&file);
        let written: Vec<ParallelEvent> = kinds.into_iter().map(event).collect();
        assert_eq!(read, written);
    }

    /// A disk that is full.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("no space left on device"))
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What a sink was sent, shared with the test.
    #[derive(Clone, Default)]
    struct Seen(std::sync::Arc<std::sync::Mutex<Vec<ParallelEventKind>>>);

    impl ParallelSink for Seen {
        fn event(&mut self, event: &ParallelEvent, _board: &Board) {
            self.0.lock().unwrap().push(event.kind.clone());
        }
    }

    /// An events file that cannot be written is a `WARNING` the other sinks see once, naming
    /// the file, and the run goes on without writing there.
    #[test]
    fn a_failed_write_to_the_events_file_is_a_warning_to_the_other_sinks_once() {
        let seen = Seen::default();
        let mut sinks: Vec<Box<dyn ParallelSink>> = vec![
            Box::new(JsonLinesSink::new(Full).named(".ralph/parallel/events.jsonl")),
            Box::new(seen.clone()),
        ];
        let landed = || ParallelEventKind::TaskLanded {
            task_id: "US-001".into(),
            commit: "c".into(),
        };
        send(&mut sinks, &event(landed()), &Board::default());
        send(&mut sinks, &event(landed()), &Board::default());
        let seen = seen.0.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        let ParallelEventKind::Warning { message, task_id } = &seen[1] else {
            panic!("{seen:?}");
        };
        assert_eq!(
            message,
            "cannot write events to .ralph/parallel/events.jsonl: no space left on device; \
             no more are written there"
        );
        assert_eq!(*task_id, None);
        assert_eq!(seen[2], landed());
    }
}
