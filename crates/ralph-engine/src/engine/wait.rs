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
