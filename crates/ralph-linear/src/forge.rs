//! The forge-neutral pieces under the Linear client, none of which knows Linear: a secret that
//! never shows, the clock a reset time is read against, one HTTP exchange (made on a thread of
//! its own when the program counts its interrupts, so a Ctrl+C never waits out a timeout), and
//! the arithmetic of a wait until a reset. Kept apart so that they can join the crate the
//! forges share.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant, SystemTime};

/// How long a request may take, answer included, before it counts as a network failure.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a request goes without an answer before the slow notice says so.
pub(crate) const SLOW: Duration = Duration::from_secs(5);

/// How often a request made on a thread of its own looks at the interrupt count.
const INTERRUPT_POLL: Duration = Duration::from_millis(20);

/// A key or token. Its `Debug` hides it, and it has no `Display`: it reaches no message,
/// event or log.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret given as text.
    #[must_use]
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The text itself, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// Where the client's time comes from: the wall clock a rate limit's reset time is read
/// against. Tests pass a fixed one.
pub trait Clock: Send {
    /// The time now.
    fn now(&self) -> SystemTime;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The HTTP agent every request goes through: statuses are answers (not errors), one global
/// timeout.
pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(concat!("ralph/", env!("CARGO_PKG_VERSION")))
        .timeout_global(Some(REQUEST_TIMEOUT))
        .build()
        .new_agent()
}

/// One request, owned, so that it can be made on a thread of its own.
pub(crate) struct Exchange {
    pub(crate) agent: ureq::Agent,
    pub(crate) method: &'static str,
    pub(crate) url: String,
    /// Sent as given, the secret's header among them.
    pub(crate) headers: Vec<(&'static str, String)>,
    /// A JSON body, when there is one.
    pub(crate) body: Option<String>,
}

/// An answer as it came: status, headers (names in lower case) and text.
#[derive(Debug)]
pub(crate) struct RawReply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl RawReply {
    /// The first header named `name` (lower case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Exchange {
    /// The request, tried once: the answer, whatever its status, or the network's failure in
    /// words.
    fn run(self) -> Result<RawReply, String> {
        let mut request = ureq::http::Request::builder()
            .method(self.method)
            .uri(self.url.as_str());
        for (name, value) in &self.headers {
            request = request.header(*name, value.as_str());
        }
        let sent = match self.body {
            Some(body) => request
                .header("content-type", "application/json")
                .body(body)
                .map_err(|err| err.to_string())
                .and_then(|r| self.agent.run(r).map_err(|err| err.to_string())),
            None => request
                .body(())
                .map_err(|err| err.to_string())
                .and_then(|r| self.agent.run(r).map_err(|err| err.to_string())),
        };
        let mut response = sent?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some((
                    name.as_str().to_lowercase(),
                    value.to_str().ok()?.to_owned(),
                ))
            })
            .collect();
        let body = response
            .body_mut()
            .read_to_string()
            .map_err(|err| format!("HTTP {status}, reading the answer: {err}"))?;
        Ok(RawReply {
            status,
            headers,
            body,
        })
    }
}

/// What one try came to.
pub(crate) enum Sent {
    /// An answer, whatever its status.
    Reply(RawReply),
    /// Given up: the program was interrupted while it waited for the answer.
    Interrupted,
}

/// How a request waits for its answer: given up at an interrupt, said to be slow after
/// [`SLOW`].
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Patience {
    /// A count of the program's interrupts: a request under way when it grows is given up.
    pub(crate) interrupts: Option<&'static AtomicU64>,
    /// Told once of a request without an answer after [`SLOW`].
    pub(crate) on_slow: Option<fn(&str)>,
}

impl Patience {
    /// `exchange` made once. Without interrupts to watch, on this thread; with them, on a
    /// thread of its own, given up as soon as the count grows (the thread is left to end at
    /// the timeout). `describe` names the request for the slow notice.
    pub(crate) fn send(
        &self,
        exchange: Exchange,
        describe: impl Fn() -> String,
    ) -> Result<Sent, String> {
        let Some(interrupts) = self.interrupts else {
            return exchange.run().map(Sent::Reply);
        };
        let before = interrupts.load(Ordering::SeqCst);
        let started = Instant::now();
        let mut told = false;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(exchange.run());
        });
        loop {
            match rx.recv_timeout(INTERRUPT_POLL) {
                Ok(reply) => return reply.map(Sent::Reply),
                Err(RecvTimeoutError::Timeout) if interrupts.load(Ordering::SeqCst) == before => {
                    if let (Some(tell), false) = (self.on_slow, told) {
                        if started.elapsed() >= SLOW {
                            told = true;
                            tell(&format!(
                                "{}: no answer after {}",
                                describe(),
                                humantime::format_duration(SLOW)
                            ));
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(Sent::Interrupted),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("the request's thread ended without an answer".to_owned());
                }
            }
        }
    }
}

/// The wait until `reset`, read against `now`: none when it has passed, at most `longest` (a
/// reset further away is a clock gone wrong).
pub(crate) fn wait_until(reset: SystemTime, now: SystemTime, longest: Duration) -> Duration {
    reset
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
        .min(longest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_shows_in_debug_output() {
        assert_eq!(format!("{:?}", Secret::new("lin_api_secret")), "Secret(…)");
    }

    #[test]
    fn a_wait_until_a_reset_is_none_once_past_and_capped() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let hour = Duration::from_secs(3600);
        let soon = now + Duration::from_millis(1500);
        assert_eq!(wait_until(soon, now, hour), Duration::from_millis(1500));
        let past = now - Duration::from_secs(5);
        assert_eq!(wait_until(past, now, hour), Duration::ZERO);
        let far = now + Duration::from_secs(86_400);
        assert_eq!(wait_until(far, now, hour), hour);
    }
}
