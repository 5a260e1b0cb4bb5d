//! One child's supervision, for pipes and terminals alike: the timeouts, the stop (SIGTERM,
//! then SIGKILL after a grace), the kill of what the child left in its group, and the drain of
//! its output after it exited.
//!
//! [`Supervisor`] is the whole of the rules as a pure state machine: it takes what happened
//! (with the time it happened) and answers what to do; it never touches a process or a clock.
//! [`drive`] is the thin async loop that feeds it from a real child and a [`Reader`].

use std::process::ExitStatus;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{GroupGuard, Supervision, signal_group, sleep_until_opt};
use crate::{InterruptSignal, Stream, Termination};

/// How long to keep reading after the child exited and its group was killed. A process that
/// left the group (setsid) can hold a pipe or the terminal open forever; ralph does not wait
/// for it.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// What happened to a supervised child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Input {
    /// The child was reaped.
    Exited,
    /// A chunk of output arrived.
    Output,
    /// Every stream reached its end.
    Eof,
    /// The caller decided that an interrupt stops the child.
    Interrupted,
    /// The caller gave up on the child (it retries without end).
    GaveUp,
    /// The time of [`Supervisor::deadline`] came.
    Deadline,
}

/// What to do about it, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    /// Send the stop signals to the group (SIGTERM; on a terminal SIGHUP first).
    Terminate,
    /// SIGKILL to the group: the grace after the stop signals is over.
    Kill,
    /// The child was reaped: SIGKILL what it left in its group, and forget the group.
    ReleaseGroup,
    /// Stop reading: the streams are held open by a process that escaped the group.
    StopReading,
    /// Supervision is over; the child ended this way (`None`: ralph did not stop it).
    Finish(Option<Termination>),
}

/// The supervision rules of one child, on a clock the caller gives.
#[derive(Debug, Clone)]
pub(super) struct Supervisor {
    kill_grace: Duration,
    timeout_at: Option<Instant>,
    idle_timeout: Option<Duration>,
    last_output: Instant,
    /// Why ralph stops the child, once it does.
    stopping: Option<Termination>,
    kill_at: Option<Instant>,
    exited: bool,
    drain_until: Option<Instant>,
    reading: bool,
}

impl Supervisor {
    /// A child started at `started`, stopped after `timeout`, or after `idle_timeout` without
    /// output; `kill_grace` is the time between SIGTERM and SIGKILL.
    pub(super) fn new(
        started: Instant,
        timeout: Option<Duration>,
        idle_timeout: Option<Duration>,
        kill_grace: Duration,
    ) -> Self {
        Self {
            kill_grace,
            timeout_at: timeout.map(|t| started + t),
            idle_timeout,
            last_output: started,
            stopping: None,
            kill_at: None,
            exited: false,
            drain_until: None,
            reading: true,
        }
    }

    /// Neither exited nor being stopped: interrupts and timeouts still apply.
    pub(super) fn running(&self) -> bool {
        self.stopping.is_none() && !self.exited
    }

    /// Whether the child was reaped.
    pub(super) fn exited(&self) -> bool {
        self.exited
    }

    /// When [`Input::Deadline`] is due next, if ever.
    pub(super) fn deadline(&self) -> Option<Instant> {
        let running = self.running();
        let idle_at = self.idle_timeout.map(|idle| self.last_output + idle);
        [
            self.timeout_at.filter(|_| running),
            idle_at.filter(|_| running),
            self.kill_at.filter(|_| !self.exited),
            self.drain_until,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Takes `input`, which happened at `now`; returns what to do.
    pub(super) fn step(&mut self, input: Input, now: Instant) -> Vec<Action> {
        let mut actions = Vec::new();
        match input {
            Input::Output => self.last_output = now,
            Input::Interrupted => self.stop(Termination::Interrupted, now, &mut actions),
            Input::GaveUp => {
                self.last_output = now;
                self.stop(Termination::RetryLimit, now, &mut actions);
            }
            Input::Exited => {
                self.exited = true;
                self.kill_at = None;
                // Whatever the child left behind in its group goes with it.
                actions.push(Action::ReleaseGroup);
                self.drain_until = Some(now + DRAIN_AFTER_EXIT);
            }
            Input::Eof => self.reading = false,
            Input::Deadline => {
                let due = |at: Option<Instant>| at.is_some_and(|at| at <= now);
                let idle_at = self.idle_timeout.map(|idle| self.last_output + idle);
                if due(self.timeout_at) {
                    self.stop(Termination::Timeout, now, &mut actions);
                } else if due(idle_at) {
                    self.stop(Termination::IdleTimeout, now, &mut actions);
                }
                if !self.exited && due(self.kill_at) {
                    self.kill_at = None;
                    actions.push(Action::Kill);
                }
                if due(self.drain_until) {
                    self.drain_until = None;
                    if self.reading {
                        self.reading = false;
                        actions.push(Action::StopReading);
                    }
                }
            }
        }
        if self.exited && !self.reading {
            actions.push(Action::Finish(self.stopping));
        }
        actions
    }

    fn stop(&mut self, why: Termination, now: Instant, actions: &mut Vec<Action>) {
        if self.running() {
            self.stopping = Some(why);
            self.kill_at = Some(now + self.kill_grace);
            actions.push(Action::Terminate);
        }
    }
}

/// What [`Reader::next`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Read {
    /// `n` bytes of `stream`, in [`Reader::chunk`].
    Chunk(Stream, usize),
    /// Every stream reached its end; reported once.
    Eof,
}

/// A child's output side: its pipes or its terminal.
pub(super) trait Reader {
    /// Signals that ask the child's group to stop, in order.
    const STOP_SIGNALS: &'static [i32];

    /// The next chunk, or the end of the output. Cancel-safe. `running` and `exited` are the
    /// supervisor's, for what else the reader serves meanwhile (a terminal's input and size).
    async fn next(&mut self, running: bool, exited: bool) -> Read;

    /// The bytes of the chunk `next` just reported.
    fn chunk(&self, stream: Stream, n: usize) -> &[u8];

    /// Stops reading, for good.
    fn close(&mut self);

    /// An interrupt arrived while the child runs; `true` stops it.
    fn interrupt(&mut self, supervision: &mut dyn Supervision, signal: InterruptSignal) -> bool {
        supervision.interrupt(signal)
    }
}

/// Supervises `child` (whose group is `pgid`, held by `group`) to its end, output from `reader`
/// to `supervision`, interrupts from `signals`. Returns how it exited and why ralph stopped it,
/// if it did.
pub(super) async fn drive<R: Reader>(
    child: &mut tokio::process::Child,
    pgid: Option<i32>,
    group: &mut GroupGuard,
    reader: &mut R,
    mut supervisor: Supervisor,
    supervision: &mut dyn Supervision,
    signals: &mut mpsc::UnboundedReceiver<InterruptSignal>,
) -> std::io::Result<(ExitStatus, Option<Termination>)> {
    let mut status = None;
    let mut signals_open = true;
    loop {
        let input = tokio::select! {
            read = reader.next(supervisor.running(), supervisor.exited()) => match read {
                Read::Chunk(stream, n) => {
                    supervision.output(stream, reader.chunk(stream, n));
                    match supervisor.running() && supervision.give_up() {
                        true => Input::GaveUp,
                        false => Input::Output,
                    }
                }
                Read::Eof => Input::Eof,
            },
            exit = child.wait(), if status.is_none() => {
                status = Some(exit?);
                Input::Exited
            }
            () = sleep_until_opt(supervisor.deadline()) => Input::Deadline,
            signal = signals.recv(), if signals_open && supervisor.running() => match signal {
                Some(signal) if reader.interrupt(supervision, signal) => Input::Interrupted,
                Some(_) => continue,
                None => {
                    signals_open = false;
                    continue;
                }
            },
        };
        for action in supervisor.step(input, Instant::now()) {
            match action {
                Action::Terminate => {
                    if let Some(pgid) = pgid {
                        R::STOP_SIGNALS.iter().for_each(|&s| signal_group(pgid, s));
                    }
                }
                Action::Kill => {
                    if let Some(pgid) = pgid {
                        signal_group(pgid, libc::SIGKILL);
                    }
                }
                Action::ReleaseGroup => group.kill(),
                Action::StopReading => reader.close(),
                Action::Finish(stopping) => {
                    // Finish comes only after the child was reaped.
                    let status = status.ok_or_else(|| {
                        std::io::Error::other("the child ended without an exit status")
                    })?;
                    return Ok((status, stopping));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(3);

    /// A fake child on a fake clock: the supervisor's actions are recorded, time only moves
    /// when the test says.
    struct Fake {
        supervisor: Supervisor,
        now: Instant,
    }

    impl Fake {
        fn new(timeout: Option<u64>, idle: Option<u64>) -> Self {
            let now = Instant::now();
            Self {
                supervisor: Supervisor::new(
                    now,
                    timeout.map(Duration::from_secs),
                    idle.map(Duration::from_secs),
                    GRACE,
                ),
                now,
            }
        }

        fn at(&mut self, secs_later: f64, input: Input) -> Vec<Action> {
            self.now += Duration::from_secs_f64(secs_later);
            self.supervisor.step(input, self.now)
        }

        /// Moves to the next deadline and takes it.
        fn wait(&mut self) -> Vec<Action> {
            let at = self.supervisor.deadline().expect("a deadline");
            assert!(at >= self.now, "a deadline in the past");
            self.now = at;
            self.supervisor.step(Input::Deadline, at)
        }

        fn secs_to_deadline(&self) -> Option<f64> {
            self.supervisor
                .deadline()
                .map(|at| (at - self.now).as_secs_f64())
        }
    }

    #[test]
    fn a_child_that_ends_by_itself_finishes_naturally_once_its_output_ends() {
        let mut child = Fake::new(Some(60), None);
        assert_eq!(child.at(1.0, Input::Output), vec![]);
        assert_eq!(child.at(1.0, Input::Exited), vec![Action::ReleaseGroup]);
        assert_eq!(child.at(0.1, Input::Output), vec![]);
        assert_eq!(child.at(0.1, Input::Eof), vec![Action::Finish(None)]);
    }

    #[test]
    fn output_that_ended_before_the_exit_finishes_at_the_exit() {
        let mut child = Fake::new(None, None);
        assert_eq!(child.at(1.0, Input::Eof), vec![]);
        assert_eq!(child.secs_to_deadline(), None);
        assert_eq!(
            child.at(1.0, Input::Exited),
            vec![Action::ReleaseGroup, Action::Finish(None)]
        );
    }

    #[test]
    fn a_timeout_terminates_then_kills_after_the_grace() {
        let mut child = Fake::new(Some(10), None);
        assert_eq!(child.secs_to_deadline(), Some(10.0));
        assert_eq!(child.wait(), vec![Action::Terminate]);
        assert!(!child.supervisor.running());
        assert_eq!(child.secs_to_deadline(), Some(GRACE.as_secs_f64()));
        assert_eq!(child.wait(), vec![Action::Kill]);
        assert_eq!(child.secs_to_deadline(), None);
        assert_eq!(child.at(0.0, Input::Exited), vec![Action::ReleaseGroup]);
        assert_eq!(
            child.at(0.0, Input::Eof),
            vec![Action::Finish(Some(Termination::Timeout))]
        );
    }

    #[test]
    fn a_child_that_exits_within_the_grace_is_not_killed() {
        let mut child = Fake::new(Some(10), None);
        assert_eq!(child.wait(), vec![Action::Terminate]);
        assert_eq!(child.at(1.0, Input::Exited), vec![Action::ReleaseGroup]);
        // Only the drain is left to wait for, not the kill.
        assert_eq!(
            child.secs_to_deadline(),
            Some(DRAIN_AFTER_EXIT.as_secs_f64())
        );
        assert_eq!(
            child.wait(),
            vec![
                Action::StopReading,
                Action::Finish(Some(Termination::Timeout))
            ]
        );
    }

    #[test]
    fn output_held_open_after_the_exit_is_read_only_until_the_drain_deadline() {
        let mut child = Fake::new(None, None);
        assert_eq!(child.at(5.0, Input::Exited), vec![Action::ReleaseGroup]);
        assert_eq!(child.at(0.2, Input::Output), vec![]);
        assert!(child.secs_to_deadline().is_some_and(|s| s < 0.31));
        assert_eq!(
            child.wait(),
            vec![Action::StopReading, Action::Finish(None)]
        );
    }

    #[test]
    fn an_interrupt_stops_a_running_child_once() {
        let mut child = Fake::new(Some(60), None);
        assert_eq!(child.at(1.0, Input::Interrupted), vec![Action::Terminate]);
        // Being stopped already: neither a second interrupt nor the timeout signals again.
        assert_eq!(child.at(1.0, Input::Interrupted), vec![]);
        assert_eq!(child.secs_to_deadline(), Some(GRACE.as_secs_f64() - 1.0));
        assert_eq!(child.wait(), vec![Action::Kill]);
        assert_eq!(child.at(0.0, Input::Exited), vec![Action::ReleaseGroup]);
        assert_eq!(
            child.at(0.0, Input::Eof),
            vec![Action::Finish(Some(Termination::Interrupted))]
        );
    }

    #[test]
    fn an_exited_child_is_neither_stopped_nor_timed_out() {
        let mut child = Fake::new(Some(1), Some(1));
        assert_eq!(child.at(0.5, Input::Exited), vec![Action::ReleaseGroup]);
        assert_eq!(child.at(0.0, Input::Interrupted), vec![]);
        // The only deadline left is the drain's, before the timeout.
        assert_eq!(
            child.secs_to_deadline(),
            Some(DRAIN_AFTER_EXIT.as_secs_f64())
        );
        assert_eq!(
            child.wait(),
            vec![Action::StopReading, Action::Finish(None)]
        );
    }

    #[test]
    fn silence_past_the_idle_timeout_stops_the_child_and_output_resets_the_clock() {
        let mut child = Fake::new(Some(100), Some(5));
        assert_eq!(child.at(4.0, Input::Output), vec![]);
        assert_eq!(child.secs_to_deadline(), Some(5.0));
        assert_eq!(child.wait(), vec![Action::Terminate]);
        assert_eq!(child.at(0.0, Input::Exited), vec![Action::ReleaseGroup]);
        assert_eq!(
            child.at(0.0, Input::Eof),
            vec![Action::Finish(Some(Termination::IdleTimeout))]
        );
    }

    #[test]
    fn giving_up_stops_the_child_as_a_retry_limit_with_the_grace() {
        let mut child = Fake::new(None, None);
        assert_eq!(child.at(1.0, Input::GaveUp), vec![Action::Terminate]);
        assert_eq!(child.secs_to_deadline(), Some(3.0));
        assert_eq!(child.at(0.0, Input::Exited), vec![Action::ReleaseGroup]);
        assert_eq!(
            child.at(0.0, Input::Eof),
            vec![Action::Finish(Some(Termination::RetryLimit))]
        );
    }

    #[test]
    fn a_zero_grace_kills_at_the_next_deadline_without_waiting() {
        let now = Instant::now();
        let mut supervisor = Supervisor::new(now, Some(Duration::ZERO), None, Duration::ZERO);
        assert_eq!(supervisor.deadline(), Some(now));
        assert_eq!(
            supervisor.step(Input::Deadline, now),
            vec![Action::Terminate, Action::Kill]
        );
    }
}
