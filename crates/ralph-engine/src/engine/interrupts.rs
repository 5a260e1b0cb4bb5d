//! What Ctrl+C, SIGTERM and SIGHUP mean, wherever the loop is: the one place for those rules.
//!
//! SIGTERM and SIGHUP stop the loop now. A first Ctrl+C stops it after the running iteration,
//! skips a wait, or, in PTY interactive mode, is a key for the agent; a second one within
//! [`DOUBLE_PRESS`] stops the loop now. Pure: the time of each interrupt is a parameter.
//! Public so that a supervisor of many loops (`ralph-parallel`'s coordinator) rules on the
//! interrupts it forwards to them by the same rules.

use std::time::Duration;

use tokio::time::Instant;

use crate::outcome::InterruptSignal;

/// Two Ctrl+C within this window stop the loop; after a Ctrl+C skips a wait, nothing starts for
/// this long.
pub const DOUBLE_PRESS: Duration = Duration::from_secs(1);

/// Where the loop is when an interrupt arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// A process runs: the agent, a command or a check.
    Running,
    /// The agent runs in PTY interactive mode: the user drives it.
    Interactive,
    /// A wait between iterations counts down.
    Waiting,
    /// A Ctrl+C skipped a wait; the next iteration has not started yet.
    Grace,
    /// Nothing could take it when it came (a process ended, its iteration was being wound up):
    /// it was meant for the iteration that is over. `interactive`: PTY interactive mode, where
    /// a single Ctrl+C was a key for the agent that has ended.
    Between {
        /// PTY interactive mode.
        interactive: bool,
    },
}

/// What the loop does about an interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Response {
    /// Stop the loop now, and whatever runs.
    StopNow,
    /// A first Ctrl+C while a process runs: it finishes, the loop stops after this iteration.
    StopAfterIteration,
    /// Skip the wait; the next iteration starts after the [`Phase::Grace`].
    SkipWait,
    /// Nothing now: a key for the agent in interactive mode, or noted for the double press
    /// (and, outside interactive mode, for a stop before the next iteration).
    Continue,
}

/// Ctrl+C bookkeeping shared by waits and running processes.
#[derive(Debug, Default)]
pub struct Interrupts {
    /// When the last Ctrl+C that did not stop the loop arrived, for the double press.
    last_int: Option<Instant>,
    /// A first Ctrl+C while a process ran: the loop stops after this iteration.
    pub(super) stop_requested: bool,
    /// The loop stops now, and why.
    pub(super) stop_now: Option<InterruptSignal>,
}

impl Interrupts {
    /// Takes `signal`, which arrived at `now` while the loop was in `phase` (`now` a tokio or
    /// a std `Instant`).
    pub fn receive(
        &mut self,
        signal: InterruptSignal,
        phase: Phase,
        now: impl Into<Instant>,
    ) -> Response {
        let now = now.into();
        let second = self
            .last_int
            .is_some_and(|t| now.saturating_duration_since(t) <= DOUBLE_PRESS);
        let response = match (signal, phase) {
            (InterruptSignal::Term | InterruptSignal::Hup | InterruptSignal::Cancel, _)
            | (_, Phase::Grace) => Response::StopNow,
            _ if second => Response::StopNow,
            (_, Phase::Running) if self.stop_requested => Response::StopNow,
            (_, Phase::Running) => {
                self.stop_requested = true;
                Response::StopAfterIteration
            }
            (_, Phase::Interactive) => Response::Continue,
            (_, Phase::Waiting) => Response::SkipWait,
            (_, Phase::Between { interactive }) => {
                self.stop_requested |= !interactive;
                Response::Continue
            }
        };
        match response {
            Response::StopNow => self.stop_now = Some(signal),
            _ => self.last_int = Some(now),
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use InterruptSignal::{Hup, Int, Term};

    /// A clock that only moves when the test says.
    struct Clock(Instant);

    impl Clock {
        fn after_ms(&mut self, ms: u64) -> Instant {
            self.0 += Duration::from_millis(ms);
            self.0
        }
    }

    fn clock() -> Clock {
        Clock(Instant::now())
    }

    #[test]
    fn sigterm_and_sighup_stop_now_wherever_the_loop_is() {
        let phases = [
            Phase::Running,
            Phase::Interactive,
            Phase::Waiting,
            Phase::Grace,
            Phase::Between { interactive: false },
            Phase::Between { interactive: true },
        ];
        for signal in [Term, Hup] {
            for phase in phases {
                let mut interrupts = Interrupts::default();
                let now = Instant::now();
                assert_eq!(
                    interrupts.receive(signal, phase, now),
                    Response::StopNow,
                    "{signal:?} in {phase:?}"
                );
                assert_eq!(interrupts.stop_now, Some(signal));
            }
        }
    }

    #[test]
    fn a_first_ctrl_c_while_running_stops_after_the_iteration_and_any_second_one_stops_now() {
        let mut clock = clock();
        let mut interrupts = Interrupts::default();
        let first = interrupts.receive(Int, Phase::Running, clock.after_ms(0));
        assert_eq!(first, Response::StopAfterIteration);
        assert!(interrupts.stop_requested);
        assert_eq!(interrupts.stop_now, None);
        // Long after the double press window still: a stop was already asked for.
        let second = interrupts.receive(Int, Phase::Running, clock.after_ms(5_000));
        assert_eq!(second, Response::StopNow);
        assert_eq!(interrupts.stop_now, Some(Int));
    }

    #[test]
    fn in_interactive_mode_one_ctrl_c_is_the_agents_and_two_within_a_second_stop_now() {
        let mut clock = clock();
        let mut interrupts = Interrupts::default();
        let key = |i: &mut Interrupts, at| i.receive(Int, Phase::Interactive, at);
        assert_eq!(key(&mut interrupts, clock.after_ms(0)), Response::Continue);
        // More than a second apart: each one is a key.
        assert_eq!(
            key(&mut interrupts, clock.after_ms(1_001)),
            Response::Continue
        );
        assert!(!interrupts.stop_requested);
        assert_eq!(
            key(&mut interrupts, clock.after_ms(1_000)),
            Response::StopNow
        );
        assert_eq!(interrupts.stop_now, Some(Int));
    }

    #[test]
    fn a_ctrl_c_skips_a_wait_and_a_second_one_within_a_second_stops_now() {
        let mut clock = clock();
        let mut interrupts = Interrupts::default();
        let at = clock.after_ms(0);
        assert_eq!(
            interrupts.receive(Int, Phase::Waiting, at),
            Response::SkipWait
        );
        assert_eq!(interrupts.stop_now, None);
        let at = clock.after_ms(999);
        assert_eq!(
            interrupts.receive(Int, Phase::Waiting, at),
            Response::StopNow
        );
    }

    #[test]
    fn a_ctrl_c_in_the_grace_after_a_skipped_wait_stops_now() {
        let mut clock = clock();
        let mut interrupts = Interrupts::default();
        interrupts.receive(Int, Phase::Waiting, clock.after_ms(0));
        let at = clock.after_ms(5_000);
        assert_eq!(interrupts.receive(Int, Phase::Grace, at), Response::StopNow);
        assert_eq!(interrupts.stop_now, Some(Int));
    }

    #[test]
    fn a_ctrl_c_between_iterations_stops_before_the_next_except_in_interactive_mode() {
        let mut clock = clock();
        let mut interrupts = Interrupts::default();
        let between = Phase::Between { interactive: false };
        assert_eq!(
            interrupts.receive(Int, between, clock.after_ms(0)),
            Response::Continue
        );
        assert!(interrupts.stop_requested);
        assert_eq!(interrupts.stop_now, None);

        let mut interactive = Interrupts::default();
        let between = Phase::Between { interactive: true };
        let at = clock.after_ms(0);
        assert_eq!(interactive.receive(Int, between, at), Response::Continue);
        assert!(!interactive.stop_requested);
        // It still counts towards a double press.
        let at = clock.after_ms(500);
        assert_eq!(interactive.receive(Int, between, at), Response::StopNow);
    }

    #[test]
    fn the_double_press_window_is_one_second_inclusive() {
        let mut clock = clock();
        let mut interrupts = Interrupts::default();
        interrupts.receive(Int, Phase::Interactive, clock.after_ms(0));
        let at = clock.after_ms(1_000);
        assert_eq!(
            interrupts.receive(Int, Phase::Interactive, at),
            Response::StopNow
        );
    }
}
