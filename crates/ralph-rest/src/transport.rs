//! One HTTP request at a time, tried once, its answer sorted by what the caller does next: a
//! [`Reply`]. Never a wait of its own: a rate limit and a failure come back saying so.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::{Clock, RateLimitHeaders, SystemClock, Token, rate_limit_wait};

/// How long a request goes without an answer before [`Transport::with_slow_notice`] says so.
const SLOW: Duration = Duration::from_secs(5);

/// How often a request made on a thread of its own looks at the interrupt count.
const INTERRUPT_POLL: Duration = Duration::from_millis(20);

/// One answer in 2xx: its JSON and the next page's address, if any.
#[derive(Debug)]
#[non_exhaustive]
pub struct Answer {
    /// The body; `Null` when empty, `{"unparsed": reason}` when it is not JSON.
    pub json: Value,
    /// The `link` header's `rel="next"` address.
    pub next: Option<String>,
    /// The `x-next-page` header (GitLab's next page number; blank on the last page).
    pub next_page: Option<String>,
}

impl Answer {
    /// Why the body is not JSON, when it is not.
    #[must_use]
    pub fn unparsed(&self) -> Option<&str> {
        self.json.get("unparsed").and_then(Value::as_str)
    }
}

/// One try's answer, sorted by what the caller does next. Matched whole by each forge's
/// client, so that a new kind of answer is one each must handle.
#[derive(Debug)]
pub enum Reply {
    /// A 2xx.
    Answer(Answer),
    /// A rate limit: ask again after `wait`.
    RateLimited {
        /// 403 or 429.
        status: u16,
        /// How long, by the forge's word (at most an hour).
        wait: Duration,
        /// When it ends, by the transport's clock.
        until: SystemTime,
    },
    /// A 5xx: worth asking again after a wait.
    ServerError(String),
    /// A status that retrying will not change, with the forge's message.
    Refused {
        /// The status.
        status: u16,
        /// The forge's message, from the body.
        message: String,
    },
    /// Given up: the program was interrupted while it waited for the answer.
    Interrupted,
}

/// A synchronous HTTP client for one API address, carrying one secret header (the token).
pub struct Transport {
    agent: ureq::Agent,
    base: String,
    /// The header that carries the token, and its whole value (`Bearer TOKEN`, or the token).
    secret_header: (&'static str, Token),
    /// Headers every request carries (an API version).
    headers: Vec<(&'static str, &'static str)>,
    clock: Box<dyn Clock>,
    /// A count of the program's interrupts: a request under way when it grows is given up.
    interrupts: Option<&'static AtomicU64>,
    /// Told once of a request without an answer after [`SLOW`] (5 s): a person never watches
    /// a silent wait for up to the minute a request may take.
    on_slow: Option<fn(&str)>,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A transport to the API address `base` (its trailing `/` dropped), asking for `accept`,
    /// sending `secret_header` (its value kept hidden) and `headers` with every request, with
    /// the system clock and a one-minute timeout.
    #[must_use]
    pub fn new(
        base: impl Into<String>,
        accept: &str,
        secret_header: (&'static str, Token),
        headers: Vec<(&'static str, &'static str)>,
    ) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .user_agent(concat!("ralph/", env!("CARGO_PKG_VERSION")))
            .accept(accept)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        Self {
            agent,
            base: base.into().trim_end_matches('/').to_owned(),
            secret_header,
            headers,
            clock: Box::new(SystemClock),
            interrupts: None,
            on_slow: None,
        }
    }

    /// The API address, without its trailing `/`.
    #[must_use]
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The time now, by the transport's clock.
    #[must_use]
    pub fn now(&self) -> SystemTime {
        self.clock.now()
    }

    /// Reads the time from `clock` from now on.
    pub fn set_clock(&mut self, clock: impl Clock + 'static) {
        self.clock = Box::new(clock);
    }

    /// Gives up a request under way as soon as `interrupts` grows: a program counts there the
    /// interrupts it receives (Ctrl+C, SIGTERM), so that none waits on a request the forge does
    /// not answer (until the one-minute timeout).
    pub fn set_interrupts(&mut self, interrupts: &'static AtomicU64) {
        self.interrupts = Some(interrupts);
    }

    /// Tells `tell`, once a request, of one not answered after 5 s (`GET URL: no answer after
    /// 5s`), the address's user and password hidden. Only with
    /// [`set_interrupts`](Self::set_interrupts), where requests are made on a thread of their own.
    pub fn set_slow_notice(&mut self, tell: fn(&str)) {
        self.on_slow = Some(tell);
    }

    /// `text` with the user and password of the API address (`https://USER:TOKEN@HOST`), if it
    /// has them, shown as `***`: for every error that shows an address.
    #[must_use]
    pub fn hide(&self, text: &str) -> String {
        match crate::userinfo(&self.base) {
            Some(userinfo) => text.replace(userinfo, crate::HIDDEN),
            None => text.to_owned(),
        }
    }

    /// One try: the forge's answer sorted, or the network's failure in words. With
    /// [`set_interrupts`](Self::set_interrupts), the try is made on a thread of its own and
    /// given up ([`Reply::Interrupted`]) as soon as the count grows.
    ///
    /// # Errors
    /// The network's failure (no connection, a timeout, a body cut short), in words.
    pub fn send_once(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Reply, String> {
        let exchange = Exchange {
            agent: self.agent.clone(),
            secret_header: (
                self.secret_header.0,
                self.secret_header.1.secret().to_owned(),
            ),
            headers: self.headers.clone(),
            method: method.to_owned(),
            url: url.to_owned(),
            body: body.map(Value::to_string),
            now: self.clock.now(),
        };
        let Some(interrupts) = self.interrupts else {
            return exchange.run();
        };
        let before = interrupts.load(Ordering::SeqCst);
        let started = std::time::Instant::now();
        let mut told = false;
        let (tx, rx) = std::sync::mpsc::channel();
        // Left to finish alone when given up: it ends at the agent's timeout at the latest.
        std::thread::spawn(move || {
            let _ = tx.send(exchange.run());
        });
        loop {
            match rx.recv_timeout(INTERRUPT_POLL) {
                Ok(reply) => return reply,
                Err(RecvTimeoutError::Timeout) if interrupts.load(Ordering::SeqCst) == before => {
                    if let (Some(tell), false) = (self.on_slow, told) {
                        if started.elapsed() >= SLOW {
                            told = true;
                            tell(&format!(
                                "{method} {}: no answer after {}",
                                self.hide(url),
                                humantime::format_duration(SLOW)
                            ));
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(Reply::Interrupted),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("the request's thread ended without an answer".to_owned());
                }
            }
        }
    }
}

/// One request, owned, so that it can be made on a thread of its own.
struct Exchange {
    agent: ureq::Agent,
    secret_header: (&'static str, String),
    headers: Vec<(&'static str, &'static str)>,
    method: String,
    url: String,
    body: Option<String>,
    /// The time a rate limit's reset is read against.
    now: SystemTime,
}

impl Exchange {
    fn run(self) -> Result<Reply, String> {
        let mut request = ureq::http::Request::builder()
            .method(self.method.as_str())
            .uri(self.url.as_str())
            .header(self.secret_header.0, self.secret_header.1.as_str());
        for (name, value) in &self.headers {
            request = request.header(*name, *value);
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
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = header("retry-after");
        let remaining = header("x-ratelimit-remaining").or_else(|| header("ratelimit-remaining"));
        let reset = header("x-ratelimit-reset").or_else(|| header("ratelimit-reset"));
        let next = header("link").and_then(|link| next_link(&link));
        let next_page = header("x-next-page");
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|err| format!("HTTP {status}, reading the answer: {err}"))?;
        let json: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            match serde_json::from_str(&text) {
                Ok(json) => json,
                // A proxy's HTML error page on a 5xx is a failure to retry, not a bad answer.
                Err(_) if status >= 500 => Value::Null,
                Err(err) if (200..300).contains(&status) => {
                    return Ok(Reply::Answer(Answer {
                        json: json!({ "unparsed": err.to_string() }),
                        next: None,
                        next_page: None,
                    }));
                }
                Err(_) => json!({ "message": text.chars().take(200).collect::<String>() }),
            }
        };
        if (200..300).contains(&status) {
            return Ok(Reply::Answer(Answer {
                json,
                next,
                next_page,
            }));
        }
        let message = message(&json);
        let limits = RateLimitHeaders {
            retry_after: retry_after.as_deref(),
            remaining: remaining.as_deref(),
            reset: reset.as_deref(),
            message: &message,
        };
        if let Some(wait) = rate_limit_wait(status, &limits, self.now) {
            return Ok(Reply::RateLimited {
                status,
                wait,
                until: self.now + wait,
            });
        }
        if status >= 500 {
            return Ok(Reply::ServerError(format!("HTTP {status} {message}")));
        }
        Ok(Reply::Refused { status, message })
    }
}

/// An error answer's message: GitHub's and GitLab's `message` (GitLab's may be an object of
/// fields and their problems), or OAuth's `error_description` / `error`.
fn message(json: &Value) -> String {
    match json.get("message") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => ["error_description", "error"]
            .iter()
            .find_map(|key| json.get(key).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned(),
        Some(other) => other.to_string(),
    }
}

/// The `rel="next"` address of a `link` header.
#[must_use]
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"")
            .then(|| {
                target
                    .trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
    })
}

/// Percent-encodes a query value or a path segment: everything but RFC 3986's unreserved
/// characters.
#[must_use]
pub fn encode_query_value(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_page_is_read_from_the_link_header() {
        let link = r#"<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://api.github.com/repositories/1/issues?page=2")
        );
        assert_eq!(next_link(r#"<https://x/?page=1>; rel="prev""#), None);
    }

    #[test]
    fn a_label_is_encoded_for_the_query() {
        assert_eq!(encode_query_value("ralph"), "ralph");
        assert_eq!(
            encode_query_value("good first issue"),
            "good%20first%20issue"
        );
        assert_eq!(encode_query_value("a&b=c"), "a%26b%3Dc");
        assert_eq!(
            encode_query_value("group/sub/project"),
            "group%2Fsub%2Fproject"
        );
    }

    #[test]
    fn an_error_message_is_read_from_either_forges_shape() {
        assert_eq!(
            message(&json!({"message": "Bad credentials"})),
            "Bad credentials"
        );
        assert_eq!(
            message(&json!({"message": {"title": ["can't be blank"]}})),
            r#"{"title":["can't be blank"]}"#
        );
        assert_eq!(
            message(&json!({"error": "invalid_token", "error_description": "Token was revoked"})),
            "Token was revoked"
        );
        assert_eq!(message(&Value::Null), "");
    }
}
