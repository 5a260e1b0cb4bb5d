//! The loop held in a state ([`StateDecision::Hold`](crate::StateDecision::Hold)): no agent
//! runs; the state's handler is asked again after each poll until it releases or stops.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use ralph_marker::Marker;
use tokio::time::Instant;

use super::Run;
use super::interrupts::{Phase, Response};
use crate::event::WaitReason;
use crate::hold::{HoldAnswer, HoldVerdict, StateHold};
use crate::outcome::EndReason;
use crate::session::PlannedWait;
use crate::state::{Facts, Requests, millis};

impl Run {
    /// One look while the loop holds in `marker`'s state: waits `hold.poll` (a countdown, Ctrl+C
    /// skips it; `WAIT_STARTED` with the hold's words when `announce`), then asks the handler.
    /// A stop, a spent `max_runtime` and an interrupt are [`HoldVerdict::Stop`].
    pub(super) async fn hold_step(
        &mut self,
        marker: &Marker,
        hold: &StateHold,
        announce: bool,
    ) -> HoldVerdict {
        let iteration = self.tally.iteration;
        let poll = hold.poll.max(super::MIN_POLL);
        // `ralph status` says what the loop waits for, from the session.
        self.save_session(
            false,
            Some(PlannedWait::new(
                WaitReason::State,
                millis(poll),
                SystemTime::now() + poll,
                Some(hold.why.clone()),
            )),
        );
        let announce = announce.then(|| Some(hold.why.clone()));
        if let Some(reason) = self
            .wait_saying(iteration, WaitReason::State, poll, announce)
            .await
        {
            return HoldVerdict::Stop(reason);
        }
        let facts = Facts {
            iteration,
            elapsed: self.elapsed(),
            checks_passed: None,
            task: self.tasks.current_id(),
        };
        let (mut events, mut requests) = (Vec::new(), Requests::default());
        let answer = self
            .engine
            .handlers
            .poll_hold(facts, marker, &mut events, &mut requests);
        events.into_iter().for_each(|e| self.emit(e));
        let verdict = match answer {
            HoldAnswer::Now(verdict) => verdict,
            HoldAnswer::Later(check) => match self.await_check(check).await {
                Some(verdict) => verdict,
                None => return HoldVerdict::Stop(EndReason::Interrupted),
            },
        };
        self.state_requests(iteration, None, Some(marker), requests)
            .await;
        verdict
    }

    /// Awaits a handler's check as the run's interrupts allow: a first Ctrl+C lets it finish
    /// (the loop stops after it, as after a running process), a second or SIGTERM drops it
    /// (`None`).
    async fn await_check(
        &mut self,
        mut check: Pin<Box<dyn Future<Output = HoldVerdict> + Send>>,
    ) -> Option<HoldVerdict> {
        loop {
            tokio::select! {
                verdict = &mut check => return Some(verdict),
                signal = self.engine.signals.recv() => match signal {
                    Some(signal) => {
                        let response =
                            self.interrupts.receive(signal, Phase::Running, Instant::now());
                        if response == Response::StopNow {
                            return None;
                        }
                    }
                    None => return Some(check.await),
                },
            }
        }
    }
}
