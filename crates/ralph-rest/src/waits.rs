//! What a forge's answer means to escalation: a rate limit is a wait until its reset, a
//! network error or a 5xx a wait from the run's `failure:` backoff, an interrupt a short wait;
//! the rest ends the run.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ralph_backoff::{FailureDecision, FailurePolicy, FailureStreak};
use ralph_tasks::TaskListError;

/// Failures in a row (network errors, 5xx answers) that a run's lists share.
pub type SharedFailures = Arc<Mutex<FailureStreak>>;

/// The wait a client's error asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitKind {
    /// A rate limit: this long, by the forge's word.
    RateLimited(Duration),
    /// The network failed, or a 5xx: the failure backoff's next wait.
    Unreachable,
    /// Given up at an interrupt: a short wait, for the interrupt to be answered as during one.
    Interrupted,
    /// Nothing waiting changes.
    Never,
}

/// A client's error, sorted by the wait it asks for.
pub trait Waitable: std::error::Error + Send + Sync + Sized + 'static {
    /// The wait this error asks for.
    fn wait_kind(&self) -> WaitKind;
}

/// The wait after a request given up at an interrupt.
const AFTER_INTERRUPT: Duration = Duration::from_secs(1);

/// A task list's waits: the run's `failure:` backoff, its failures in a row (shared by the
/// lists a run makes of one forge), its longest rate-limit wait (`rate_limit.max_wait`).
#[derive(Debug)]
pub struct Waits {
    failure: FailurePolicy,
    failures: SharedFailures,
    max_wait: Duration,
}

impl Waits {
    /// Waits by `failure` and at most `max_wait`, counting failures on their own.
    #[must_use]
    pub fn new(failure: FailurePolicy, max_wait: Duration) -> Self {
        Self {
            failure,
            failures: Arc::default(),
            max_wait,
        }
    }

    /// Counts failures in a row in `failures`, with the other lists of the run: a run's start
    /// makes more than one (`--task` checks the task, then opens the run), and each try is one
    /// more of the run's, its wait the backoff's next.
    pub fn share_failures(&mut self, failures: SharedFailures) {
        self.failures = failures;
    }

    /// What `outcome` means to escalation. A client error `E` (boxed in
    /// [`TaskListError::Failed`]) that is a rate limit is a wait until its reset (at most
    /// `max_wait`); a network error or a 5xx is a wait from the run's `failure:` backoff, and
    /// at `failure.max_consecutive` in a row the list cannot be read now (a mark waits in the
    /// session, no task is marked for it, and the next look ends the run). Every other error
    /// ends the run, saying why.
    ///
    /// # Errors
    /// The outcome's error, sorted as above.
    pub fn settle<T, E: Waitable>(
        &self,
        outcome: Result<T, TaskListError>,
    ) -> Result<T, TaskListError> {
        let err = match outcome {
            Ok(value) => {
                self.streak().record_success();
                return Ok(value);
            }
            Err(TaskListError::Failed(err)) => err,
            Err(other) => return Err(other),
        };
        let err = match err.downcast::<E>() {
            Ok(err) => *err,
            Err(other) => return Err(TaskListError::Failed(other)),
        };
        match err.wait_kind() {
            WaitKind::RateLimited(wait) => {
                let wait = wait.min(self.max_wait);
                Err(TaskListError::RetryAfter {
                    wait,
                    why: format!("{err}; asking again in {}", seconds(wait)),
                })
            }
            WaitKind::Unreachable => match self.streak().record_failure(&self.failure) {
                FailureDecision::Wait { delay, consecutive } => Err(TaskListError::RetryAfter {
                    wait: delay,
                    why: format!(
                        "{err}; try {} of {} in {}",
                        consecutive + 1,
                        self.failure.max_consecutive.max(1),
                        seconds(delay)
                    ),
                }),
                FailureDecision::Stop { consecutive } => {
                    Err(TaskListError::Unreadable(Box::new(Unreachable {
                        err: Box::new(err),
                        tries: consecutive,
                    })))
                }
            },
            // A wait like any other, for the interrupt to be answered as during a wait: a
            // Ctrl+C looks again at once, a second stops the run, a SIGTERM stops it.
            WaitKind::Interrupted => Err(TaskListError::RetryAfter {
                wait: AFTER_INTERRUPT,
                why: format!("{err}; asking again in {}", seconds(AFTER_INTERRUPT)),
            }),
            WaitKind::Never => Err(TaskListError::Failed(Box::new(err))),
        }
    }

    fn streak(&self) -> std::sync::MutexGuard<'_, FailureStreak> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A forge unreachable through every try `failure.max_consecutive` allows.
#[derive(Debug, thiserror::Error)]
#[error("{err}, {tries} times in a row (failure.max_consecutive)")]
struct Unreachable {
    err: Box<dyn std::error::Error + Send + Sync>,
    tries: u64,
}

/// A wait in words: `2s`, `250ms`.
fn seconds(wait: Duration) -> String {
    humantime::format_duration(wait).to_string()
}
