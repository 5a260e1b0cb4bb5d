//! Supervision of a running process on the loop's behalf: where its output goes (the log, the
//! agent's adapter and marker scanners, the sinks, or a buffer for a command's output) and what
//! Ctrl+C and SIGTERM mean while it runs (stop after this iteration, stop now, or, in PTY
//! interactive mode, a key for the agent).

use std::time::{Duration, SystemTime};

use ralph_marker::{Finding, MarkerScanner};
use tokio::time::Instant;

use crate::adapter::{AdapterOutput, OutputAdapter};
use crate::event::{Event, EventKind, EventSink, Stream};
use crate::logs::IterationLog;
use crate::outcome::InterruptSignal;
use crate::process::Supervision;
use crate::tail::{HeadTail, Tail};

/// Two Ctrl+C within this window stop the loop; after a Ctrl+C skips a wait, nothing starts for
/// this long.
pub(super) const DOUBLE_PRESS: Duration = Duration::from_secs(1);

/// Ctrl+C bookkeeping shared by waits and running processes.
#[derive(Debug, Default)]
pub(super) struct Interrupts {
    /// When the last Ctrl+C arrived, for the double press.
    pub(super) last_int: Option<Instant>,
    /// A first Ctrl+C while a process ran: the loop stops after this iteration.
    pub(super) stop_requested: bool,
    /// The loop stops now, and why.
    pub(super) stop_now: Option<InterruptSignal>,
}

impl Interrupts {
    /// Whether a Ctrl+C at `now` is the second of a double press.
    pub(super) fn within_double_press(&self, now: Instant) -> bool {
        self.last_int
            .is_some_and(|t| now.saturating_duration_since(t) <= DOUBLE_PRESS)
    }

    /// An interrupt that arrived between iterations, when no process ran and no wait was under
    /// way to take it: the loop stops before the next iteration, now for SIGTERM and SIGHUP
    /// (and a double Ctrl+C), as after this iteration for a single Ctrl+C. In PTY interactive
    /// mode a single Ctrl+C was a key for the agent that has ended: it only counts towards a
    /// double press.
    pub(super) fn between_iterations(&mut self, signal: InterruptSignal, interactive: bool) {
        let now = Instant::now();
        match signal {
            InterruptSignal::Int if !self.within_double_press(now) => {
                self.stop_requested |= !interactive;
                self.last_int = Some(now);
            }
            signal => self.stop_now = Some(signal),
        }
    }

    /// An interrupt while a process runs (agent, command or check): SIGTERM, a second Ctrl+C
    /// or a double press stop now (`true`); a first Ctrl+C asks the loop to stop after this
    /// iteration and emits `STOP_REQUESTED`.
    fn while_running(
        &mut self,
        signal: InterruptSignal,
        iteration: u64,
        sinks: &mut [Box<dyn EventSink>],
        run_id: &str,
    ) -> bool {
        let now = Instant::now();
        match signal {
            InterruptSignal::Term | InterruptSignal::Hup => {
                self.stop_now = Some(signal);
                true
            }
            InterruptSignal::Int if self.stop_requested || self.within_double_press(now) => {
                self.stop_now = Some(InterruptSignal::Int);
                true
            }
            InterruptSignal::Int => {
                self.stop_requested = true;
                self.last_int = Some(now);
                emit(sinks, run_id, EventKind::StopRequested { iteration });
                false
            }
        }
    }
}

/// Sends one event, stamped now, to every sink.
pub(super) fn emit(sinks: &mut [Box<dyn EventSink>], run_id: &str, kind: EventKind) {
    let event = Event {
        ts: SystemTime::now(),
        run_id: run_id.to_owned(),
        kind,
    };
    for sink in sinks {
        sink.event(&event);
    }
}

/// Handles a running process's output and the interrupts that arrive meanwhile.
pub(super) struct Collector<'a> {
    pub(super) iteration: u64,
    /// For commands: their output for the prompt, cut to `max_output`. `None` for the agent.
    pub(super) output: Option<HeadTail>,
    pub(super) log: &'a mut IterationLog,
    pub(super) sinks: &'a mut Vec<Box<dyn EventSink>>,
    pub(super) run_id: &'a str,
    /// For the agent: its output goes through an adapter to the sinks and the marker scanners.
    /// `None` for commands, whose output is kept (cut to its cap) instead.
    pub(super) agent: Option<AgentReader<'a>>,
    pub(super) interrupts: &'a mut Interrupts,
}

/// The agent's output on its way through an adapter: one marker scanner per stream and what
/// they found.
pub(super) struct AgentReader<'a> {
    pub(super) adapter: &'a mut dyn OutputAdapter,
    pub(super) scanners: &'a mut [MarkerScanner; 2],
    pub(super) findings: Vec<Finding>,
    /// The end of the agent's raw output, for a failed run's words.
    pub(super) tail: Tail,
}

/// Where an adapter's display goes (the sinks) and its result text (the scanners).
pub(super) struct AgentOutput<'a> {
    pub(super) iteration: u64,
    pub(super) sinks: &'a mut Vec<Box<dyn EventSink>>,
    pub(super) scanners: &'a mut [MarkerScanner; 2],
    pub(super) findings: &'a mut Vec<Finding>,
}

impl AdapterOutput for AgentOutput<'_> {
    fn show(&mut self, stream: Stream, bytes: &[u8]) {
        for sink in self.sinks.iter_mut() {
            sink.output(self.iteration, stream, bytes);
        }
    }

    fn result_text(&mut self, stream: Stream, bytes: &[u8]) {
        let i = match stream {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        };
        self.scanners[i].feed(bytes, self.findings);
    }
}

impl Supervision for Collector<'_> {
    fn output(&mut self, stream: Stream, bytes: &[u8]) {
        let logged = match &mut self.output {
            // A command's log section gets its head as it comes and the rest, cut as in the
            // prompt, at its end: one printing without end fills neither memory nor the disk.
            Some(kept) => kept.push(bytes),
            None => bytes,
        };
        self.log.write(logged);
        if let Some(agent) = &mut self.agent {
            agent.tail.push(bytes);
            agent.adapter.feed(
                stream,
                bytes,
                &mut AgentOutput {
                    iteration: self.iteration,
                    sinks: self.sinks,
                    scanners: agent.scanners,
                    findings: &mut agent.findings,
                },
            );
        }
    }

    fn interrupt(&mut self, signal: InterruptSignal) -> bool {
        self.interrupts
            .while_running(signal, self.iteration, self.sinks, self.run_id)
    }

    fn interrupt_interactive(&mut self, signal: InterruptSignal) -> bool {
        // The user drives the agent: one Ctrl+C is theirs to give it, two within a second stop
        // the loop now.
        let now = Instant::now();
        match signal {
            InterruptSignal::Int if !self.interrupts.within_double_press(now) => {
                self.interrupts.last_int = Some(now);
                false
            }
            signal => {
                self.interrupts.stop_now = Some(signal);
                true
            }
        }
    }
}

/// Keeps a check's output tail and handles interrupts while it runs.
pub(super) struct TailCollector<'a> {
    pub(super) tail: Tail,
    pub(super) iteration: u64,
    pub(super) sinks: &'a mut Vec<Box<dyn EventSink>>,
    pub(super) run_id: &'a str,
    pub(super) interrupts: &'a mut Interrupts,
}

impl Supervision for TailCollector<'_> {
    fn output(&mut self, _stream: Stream, bytes: &[u8]) {
        self.tail.push(bytes);
    }

    fn interrupt(&mut self, signal: InterruptSignal) -> bool {
        // As for the agent: a first Ctrl+C lets the checks finish and the verdict be recorded.
        self.interrupts
            .while_running(signal, self.iteration, self.sinks, self.run_id)
    }
}
