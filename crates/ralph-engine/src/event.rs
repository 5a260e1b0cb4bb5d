//! Events: everything the engine has to say, as typed values handed to [`EventSink`]s.
//!
//! The engine never prints. A terminal renderer, the JSON Lines writer and an embedder's own
//! sink all see the same events. The events themselves are ralph-events' wire types (a reader
//! needs no engine); the sinks, which the running loop feeds, are here.

// The wire types, under the names the engine's modules use for them.
pub(crate) use ralph_events::{
    CheckResult, Event, EventKind, FailureKind, IdleSummary, MarkerRecord, Outcome, Stream,
    SwitchReason, Termination, WaitReason, WarningKind, exit_status,
};

/// A wait in progress, reported about once a second so a terminal can count down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitProgress {
    /// Why the loop waits.
    pub reason: WaitReason,
    /// The streak the state's handler gave with the wait ([`StateWait::streak`]: consecutive
    /// idle iterations for `idle`'s); 0 for every other wait.
    ///
    /// [`StateWait::streak`]: crate::StateWait::streak
    pub consecutive_idle: u64,
    /// The whole wait.
    pub total: std::time::Duration,
    /// What is left of it.
    pub remaining: std::time::Duration,
}

/// Receives a run's events. The terminal renderer, the JSON Lines writer and an embedder's own
/// sinks are peers.
pub trait EventSink: Send {
    /// Called for every event, in order.
    fn event(&mut self, event: &Event);

    /// Called with the agent's output as it arrives. Most sinks ignore it.
    fn output(&mut self, iteration: u64, stream: Stream, bytes: &[u8]) {
        let _ = (iteration, stream, bytes);
    }

    /// Called when a wait starts and about once a second during it.
    fn wait_progress(&mut self, progress: &WaitProgress) {
        let _ = progress;
    }

    /// Called once a wait is over (elapsed or skipped), so a countdown can be erased.
    fn wait_finished(&mut self) {}

    /// A failure this sink cannot report to itself (its file could not be written, say), in
    /// words that name the sink; taken once. The engine asks after every event and tells the
    /// other sinks as a `WARNING`. `None`, the default: nothing failed.
    fn take_failure(&mut self) -> Option<String> {
        None
    }
}

/// Writes values as JSON Lines: one object per line, each line written whole and flushed at
/// once, so a reader (or a crash) never sees half a value except possibly the last. The one
/// writer behind every JSON Lines sink, the engine's [`JsonLinesSink`] and a parallel run's:
/// after a failed write it writes nothing more (rather than lines cut in half) and keeps a
/// failure naming what it writes to, for the sink to hand on as a `WARNING`.
pub struct JsonLinesWriter<W: std::io::Write + Send> {
    out: W,
    /// The line being written, its buffer reused from one value to the next.
    line: Vec<u8>,
    failed: bool,
    /// What `out` is, for the warning when it fails.
    name: String,
    /// The failure, until [`JsonLinesWriter::take_failure`] takes it.
    failure: Option<String>,
}

impl<W: std::io::Write + Send> JsonLinesWriter<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> Self {
        Self {
            out,
            line: Vec::with_capacity(512),
            failed: false,
            name: "the JSON Lines output".to_owned(),
            failure: None,
        }
    }

    /// Names what `out` is (a path, `stdout`) for the warning if writing to it fails.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Writes `value` as one line and flushes it; nothing once a write has failed.
    pub fn write(&mut self, value: &impl serde::Serialize) {
        if self.failed {
            return;
        }
        self.line.clear();
        if serde_json::to_writer(&mut self.line, value).is_err() {
            return;
        }
        self.line.push(b'\n');
        let written = self
            .out
            .write_all(&self.line)
            .and_then(|()| self.out.flush());
        if let Err(err) = written {
            self.failure = Some(format!(
                "cannot write events to {}: {err}; no more are written there",
                self.name
            ));
            self.failed = true;
        }
    }

    /// Whether a write has failed; later values are dropped rather than interleaved
    /// half-written.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// The failure, in words naming what it writes to; taken once.
    pub fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }
}

/// Writes events as JSON Lines through a [`JsonLinesWriter`]; a failed write reaches the
/// other sinks as a `WARNING` ([`EventSink::take_failure`]).
pub struct JsonLinesSink<W: std::io::Write + Send>(JsonLinesWriter<W>);

impl<W: std::io::Write + Send> JsonLinesSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        Self(JsonLinesWriter::new(out))
    }

    /// Names what `out` is (a path, `stdout`) for the warning if writing to it fails.
    pub fn named(self, name: impl Into<String>) -> Self {
        Self(self.0.named(name))
    }

    /// Whether a write has failed; later events are dropped rather than interleaved half-written.
    pub fn failed(&self) -> bool {
        self.0.failed()
    }
}

impl<W: std::io::Write + Send> EventSink for JsonLinesSink<W> {
    fn event(&mut self, event: &Event) {
        self.0.write(event);
    }

    fn take_failure(&mut self) -> Option<String> {
        self.0.take_failure()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that is full.
    struct Full;

    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_json_lines_sink_that_cannot_write_gives_its_failure_once_naming_itself() {
        let mut sink = JsonLinesSink::new(Full).named("events.jsonl");
        assert_eq!(sink.take_failure(), None);
        let event = super::Event {
            ts: std::time::SystemTime::UNIX_EPOCH,
            run_id: "r".to_owned(),
            kind: ralph_events::EventKind::StopRequested { iteration: 1 },
        };
        sink.event(&event);
        sink.event(&event);
        let failure = sink.take_failure().expect("the write failed");
        assert!(
            failure.starts_with("cannot write events to events.jsonl: "),
            "{failure}"
        );
        assert!(sink.failed());
        assert_eq!(sink.take_failure(), None, "once");
    }
}
