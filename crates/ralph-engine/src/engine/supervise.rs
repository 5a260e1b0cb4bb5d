//! Supervision of a running process on the loop's behalf: where its output goes (the log, the
//! agent's adapter and marker scanners, the sinks, or a buffer for a command's output), and the
//! interrupts that arrive meanwhile, which [`Interrupts`] rules on.

use std::time::SystemTime;

use ralph_marker::{Finding, MarkerScanner};
use tokio::time::Instant;

use super::interrupts::{Interrupts, Phase, Response};
use crate::event::{Event, EventKind, EventSink, Stream, WarningKind};
use crate::logs::IterationLog;
use crate::outcome::InterruptSignal;
use crate::tail::{HeadTail, Tail};
use ralph_agents::{AdapterOutput, AgentRetry, OutputAdapter};
use ralph_process::Supervision;

/// An interrupt while a process runs (agent, command or check), as [`Phase::Running`]: `true`
/// stops it now; a first Ctrl+C emits `STOP_REQUESTED` and lets it finish.
fn while_running(
    interrupts: &mut Interrupts,
    signal: InterruptSignal,
    iteration: u64,
    sinks: &mut [Box<dyn EventSink>],
    run_id: &str,
) -> bool {
    match interrupts.receive(signal, Phase::Running, Instant::now()) {
        Response::StopNow => true,
        Response::StopAfterIteration => {
            emit(sinks, run_id, EventKind::StopRequested { iteration });
            false
        }
        Response::SkipWait | Response::Continue => false,
    }
}

/// Sends one event, stamped now, to every sink.
pub(super) fn emit(sinks: &mut [Box<dyn EventSink>], run_id: &str, kind: EventKind) {
    let event = Event {
        ts: SystemTime::now(),
        run_id: run_id.to_owned(),
        kind,
    };
    for sink in sinks.iter_mut() {
        sink.event(&event);
    }
    // A sink that failed cannot say so itself: the others hear it, once. One pass, so a sink
    // that fails on the warning itself is told of at the next event.
    for failed in 0..sinks.len() {
        let Some(message) = sinks[failed].take_failure() else {
            continue;
        };
        let warning = Event {
            ts: SystemTime::now(),
            run_id: run_id.to_owned(),
            kind: EventKind::Warning {
                kind: WarningKind::SinkFailed,
                message,
            },
        };
        for (i, sink) in sinks.iter_mut().enumerate() {
            if i != failed {
                sink.event(&warning);
            }
        }
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
    /// The end of its answer (the adapter's result text on standard output), for the task
    /// source ([`IterationReport::answer`](crate::IterationReport::answer)).
    pub(super) answer: Tail,
    /// The agent's own retries so far in this run.
    pub(super) retries: AgentRetries,
}

/// An agent run's own retries (`AGENT_RETRYING`), which count toward the failure policy: one
/// retrying more than `failure.max_consecutive` times is stopped, a failed run.
#[derive(Debug, Clone, Default)]
pub(super) struct AgentRetries {
    /// Retries so far.
    pub(super) count: u64,
    /// The last one, as the status line shows it (`529 overloaded_error (3/10)`).
    pub(super) last: Option<String>,
    /// Retries past this many stop the agent.
    pub(super) limit: u64,
}

impl AgentRetries {
    /// No retries yet; more than `limit` stop the agent.
    pub(super) fn new(limit: u64) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Whether the agent retried more than its limit.
    pub(super) fn exceeded(&self) -> bool {
        self.count > self.limit
    }
}

/// Where an adapter's display goes (the sinks) and its result text (the scanners).
pub(super) struct AgentOutput<'a> {
    pub(super) iteration: u64,
    pub(super) sinks: &'a mut Vec<Box<dyn EventSink>>,
    pub(super) run_id: &'a str,
    pub(super) scanners: &'a mut [MarkerScanner; 2],
    pub(super) findings: &'a mut Vec<Finding>,
    /// Where the answer's end is kept.
    pub(super) answer: &'a mut Tail,
    /// Where the agent's retries are counted.
    pub(super) retries: &'a mut AgentRetries,
}

impl AdapterOutput for AgentOutput<'_> {
    fn show(&mut self, stream: Stream, bytes: &[u8]) {
        for sink in self.sinks.iter_mut() {
            sink.output(self.iteration, stream, bytes);
        }
    }

    fn result_text(&mut self, stream: Stream, bytes: &[u8]) {
        let i = match stream {
            Stream::Stdout => {
                self.answer.push(bytes);
                0
            }
            Stream::Stderr => 1,
        };
        self.scanners[i].feed(bytes, self.findings);
    }

    fn warn(&mut self, message: String) {
        // Named after its iteration, as a malformed marker's warning is: the log to look in.
        let message = format!("iteration {}: {message}", self.iteration);
        let kind = EventKind::Warning {
            kind: WarningKind::Agent,
            message,
        };
        emit(self.sinks, self.run_id, kind);
    }

    fn retrying(&mut self, retry: AgentRetry) {
        self.retries.count += 1;
        self.retries.last = Some(retry.describe());
        let kind = EventKind::AgentRetrying {
            iteration: self.iteration,
            reason: retry.reason,
            attempt: retry.attempt,
            max_attempts: retry.max_attempts,
            delay_ms: retry.delay_ms,
        };
        emit(self.sinks, self.run_id, kind);
    }
}

/// The agent's stream a process's chunk came from: ralph-process and ralph-agents each name
/// the two streams, neither depending on the other.
fn agent_stream(stream: ralph_process::Stream) -> Stream {
    match stream {
        ralph_process::Stream::Stdout => Stream::Stdout,
        ralph_process::Stream::Stderr => Stream::Stderr,
    }
}

impl Supervision for Collector<'_> {
    fn output(&mut self, stream: ralph_process::Stream, bytes: &[u8]) {
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
                agent_stream(stream),
                bytes,
                &mut AgentOutput {
                    iteration: self.iteration,
                    sinks: self.sinks,
                    run_id: self.run_id,
                    scanners: agent.scanners,
                    findings: &mut agent.findings,
                    answer: &mut agent.answer,
                    retries: &mut agent.retries,
                },
            );
        }
    }

    fn give_up(&mut self) -> bool {
        self.agent.as_ref().is_some_and(|a| a.retries.exceeded())
    }

    fn interrupt(&mut self, signal: InterruptSignal) -> bool {
        while_running(
            self.interrupts,
            signal,
            self.iteration,
            self.sinks,
            self.run_id,
        )
    }

    fn interrupt_interactive(&mut self, signal: InterruptSignal) -> bool {
        // The user drives the agent: one Ctrl+C is theirs to give it, two within a second stop
        // the loop now.
        let response = self
            .interrupts
            .receive(signal, Phase::Interactive, Instant::now());
        response == Response::StopNow
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
    fn output(&mut self, _stream: ralph_process::Stream, bytes: &[u8]) {
        self.tail.push(bytes);
    }

    fn interrupt(&mut self, signal: InterruptSignal) -> bool {
        // As for the agent: a first Ctrl+C lets the checks finish and the verdict be recorded.
        while_running(
            self.interrupts,
            signal,
            self.iteration,
            self.sinks,
            self.run_id,
        )
    }
}
