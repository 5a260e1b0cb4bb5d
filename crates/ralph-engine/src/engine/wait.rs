//! Waits between iterations: the countdown, `max_runtime` cutting a wait short, and the grace
//! period after a Ctrl+C skipped one.

use std::time::Duration;

use tokio::time::Instant;

use super::Run;
use super::interrupts::{DOUBLE_PRESS, Phase, Response};
use crate::event::{EventKind, WaitProgress, WaitReason};
use crate::outcome::EndReason;
use crate::state::millis;

/// How often a countdown is refreshed.
const COUNTDOWN_TICK: Duration = Duration::from_secs(1);

impl Run {
    /// Waits `delay`, counting down, cut short at `max_runtime`. Ctrl+C skips the wait, and the
    /// next run starts after a grace period in which a second Ctrl+C stops the loop with no new
    /// run; SIGTERM and SIGHUP stop it. Returns why the loop ends, or `None` to go on.
    pub(super) async fn wait(
        &mut self,
        iteration: u64,
        reason: WaitReason,
        delay: Duration,
    ) -> Option<EndReason> {
        self.wait_saying(iteration, reason, delay, Some(None)).await
    }

    /// [`wait`](Self::wait), announced by a `WAIT_STARTED` with `why` when `announce` is
    /// `Some`: a task source's wait announces a stretch of waiting once, not every look.
    pub(super) async fn wait_saying(
        &mut self,
        iteration: u64,
        reason: WaitReason,
        delay: Duration,
        announce: Option<Option<String>>,
    ) -> Option<EndReason> {
        let start = Instant::now();
        let runtime_end = self
            .settings
            .max_runtime
            .map(|max| start + max.saturating_sub(self.elapsed()));
        let (delay, cut) = match runtime_end {
            Some(end) if start + delay >= end => (end.saturating_duration_since(start), true),
            _ => (delay, false),
        };
        if let Some(why) = announce {
            self.emit(EventKind::WaitStarted {
                iteration,
                reason,
                delay_ms: millis(delay),
                why,
            });
        }
        // The streak of the state whose handler asked for this wait; none for any other wait.
        let streak = match self.state_wait {
            Some(wait) if wait.reason == reason => wait.streak,
            _ => 0,
        };
        let deadline = start + delay;
        let mut end = cut.then_some(EndReason::MaxRuntime);
        let mut skipped = false;
        let mut first_tick = true;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let progress = WaitProgress {
                reason,
                consecutive_idle: streak,
                total: delay,
                // The first report is the whole wait, so a renderer can tell it from the rest.
                remaining: if first_tick { delay } else { deadline - now },
            };
            first_tick = false;
            for sink in &mut self.engine.sinks {
                sink.wait_progress(&progress);
            }
            let tick = (now + COUNTDOWN_TICK).min(deadline);
            tokio::select! {
                () = tokio::time::sleep_until(tick) => {}
                signal = self.engine.signals.recv() => match signal {
                    Some(signal) => {
                        match self.interrupts.receive(signal, Phase::Waiting, Instant::now()) {
                            Response::SkipWait => {
                                end = None;
                                skipped = true;
                                self.emit(EventKind::WaitSkipped {
                                    iteration,
                                    grace_ms: millis(DOUBLE_PRESS),
                                });
                            }
                            _ => end = Some(EndReason::Interrupted),
                        }
                        break;
                    }
                    None => {
                        // No more interrupts can come: finish the wait plainly.
                        tokio::time::sleep_until(deadline).await;
                        break;
                    }
                },
            }
        }
        for sink in &mut self.engine.sinks {
            sink.wait_finished();
        }
        self.waited(reason, start.elapsed());
        if skipped {
            end = self.grace().await;
        }
        end
    }

    /// After a Ctrl+C skipped a wait: nothing starts for [`DOUBLE_PRESS`], so a second Ctrl+C
    /// (the user meant to stop) costs no agent run.
    pub(super) async fn grace(&mut self) -> Option<EndReason> {
        let until = Instant::now() + DOUBLE_PRESS;
        tokio::select! {
            () = tokio::time::sleep_until(until) => None,
            signal = self.engine.signals.recv() => match signal {
                Some(signal) => {
                    self.interrupts.receive(signal, Phase::Grace, Instant::now());
                    Some(EndReason::Interrupted)
                }
                None => {
                    tokio::time::sleep_until(until).await;
                    None
                }
            },
        }
    }
}

/// Waits `delay` before a run has started, as a run waits for its task source
/// ([`NextTask::Wait`](crate::NextTask::Wait)): what prepares the run (a task list's check, a
/// step a killed ralph left half done) was told "not now" by the list's service (a rate
/// limit), and is tried again after it. `sink` counts the wait down
/// ([`EventSink::wait_progress`](crate::EventSink::wait_progress), reason
/// [`WaitReason::Task`]). A Ctrl+C ends the wait early and, after a grace period in which a
/// second one stops, the caller looks again; the second Ctrl+C, SIGTERM or SIGHUP is returned:
/// the run does not start.
pub async fn wait_before_start(
    delay: Duration,
    sink: &mut dyn crate::EventSink,
    signals: &mut tokio::sync::mpsc::UnboundedReceiver<crate::InterruptSignal>,
) -> Result<(), crate::InterruptSignal> {
    let mut interrupts = super::interrupts::Interrupts::default();
    let deadline = Instant::now() + delay;
    let mut first_tick = true;
    let mut skipped = false;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        sink.wait_progress(&WaitProgress {
            reason: WaitReason::Task,
            consecutive_idle: 0,
            total: delay,
            remaining: if first_tick { delay } else { deadline - now },
        });
        first_tick = false;
        let tick = (now + COUNTDOWN_TICK).min(deadline);
        tokio::select! {
            () = tokio::time::sleep_until(tick) => {}
            signal = signals.recv() => match signal {
                Some(signal) => {
                    sink.wait_finished();
                    match interrupts.receive(signal, Phase::Waiting, Instant::now()) {
                        Response::SkipWait => skipped = true,
                        _ => return Err(signal),
                    }
                    break;
                }
                // No more interrupts can come: finish the wait plainly.
                None => {
                    tokio::time::sleep_until(deadline).await;
                    break;
                }
            },
        }
    }
    sink.wait_finished();
    if skipped {
        let until = Instant::now() + DOUBLE_PRESS;
        tokio::select! {
            () = tokio::time::sleep_until(until) => {}
            signal = signals.recv() => match signal {
                Some(signal) => return Err(signal),
                None => tokio::time::sleep_until(until).await,
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, EventSink, InterruptSignal};
    use tokio::sync::mpsc;

    /// The countdown's remaining times, in whole seconds, and how many times it was erased.
    #[derive(Default)]
    struct Countdown {
        remaining: Vec<u64>,
        finished: usize,
    }

    impl EventSink for Countdown {
        fn event(&mut self, _event: &Event) {}

        fn wait_progress(&mut self, progress: &WaitProgress) {
            assert_eq!(progress.reason, WaitReason::Task);
            self.remaining.push(progress.remaining.as_secs());
        }

        fn wait_finished(&mut self) {
            self.finished += 1;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_before_the_start_counts_down_to_its_end() {
        let (_tx, mut rx) = mpsc::unbounded_channel();
        let mut sink = Countdown::default();
        let result = wait_before_start(Duration::from_secs(3), &mut sink, &mut rx).await;
        assert_eq!(result, Ok(()));
        assert_eq!(sink.remaining, [3, 2, 1]);
        assert_eq!(sink.finished, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn ctrl_c_looks_now_and_a_second_in_the_grace_or_sigterm_stops() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut sink = Countdown::default();
        let hour = Duration::from_secs(3600);
        tx.send(InterruptSignal::Int).unwrap();
        let started = Instant::now();
        assert_eq!(wait_before_start(hour, &mut sink, &mut rx).await, Ok(()));
        assert_eq!(started.elapsed(), DOUBLE_PRESS, "no more than the grace");

        tx.send(InterruptSignal::Int).unwrap();
        tx.send(InterruptSignal::Int).unwrap();
        assert_eq!(
            wait_before_start(hour, &mut sink, &mut rx).await,
            Err(InterruptSignal::Int)
        );

        tx.send(InterruptSignal::Term).unwrap();
        assert_eq!(
            wait_before_start(hour, &mut sink, &mut rx).await,
            Err(InterruptSignal::Term)
        );
    }
}
