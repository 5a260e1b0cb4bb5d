//! The REST client: one request at a time, never a wait of its own (a rate limit or a failure
//! comes back as an [`Error`] saying how long, for the caller's loop to wait), and the five
//! calls a task source makes.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Error, Repo, Token};

/// GitHub asks for at least a minute when a rate limit names no reset.
const UNNAMED_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// GitHub's primary limit resets within the hour: a longer wait is a clock gone wrong.
const LONGEST_RATE_LIMIT_WAIT: Duration = Duration::from_secs(3600);
/// The reset time is whole seconds: a second more and the first request after the wait counts.
const RESET_MARGIN: Duration = Duration::from_secs(1);
/// The most pages one listing reads: 1,000 pages of 100 open issues (or comments) is more than
/// a task list holds; past it the pages are taken as endless.
const MAX_PAGES: usize = 1000;

/// GitHub's largest page.
const PER_PAGE: u32 = 100;

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

/// Whether an issue is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum IssueState {
    /// Open: a task to do.
    Open,
    /// Closed, by anyone.
    Closed,
}

/// An issue, as the task source reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Issue {
    /// Its number in the repository.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its text (empty when it has none).
    pub body: String,
    /// Its page on GitHub.
    pub url: String,
    /// Open or closed.
    pub state: IssueState,
    /// When it was opened (RFC 3339, as GitHub writes it; sorts as time does).
    pub created_at: String,
    /// Its labels' names.
    pub labels: Vec<String>,
    /// Who opened it.
    pub author: String,
}

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Comment {
    /// Its id.
    pub id: u64,
    /// Its text.
    pub body: String,
    /// Who wrote it.
    pub author: String,
    /// When it was written (RFC 3339).
    pub created_at: String,
    /// Its address on GitHub.
    pub url: String,
}

#[derive(Deserialize)]
struct WireUser {
    login: String,
}

#[derive(Deserialize)]
struct WireLabel {
    name: String,
}

#[derive(Deserialize)]
struct WireIssue {
    number: u64,
    title: String,
    body: Option<String>,
    html_url: String,
    state: IssueState,
    created_at: String,
    #[serde(default)]
    labels: Vec<WireLabel>,
    user: Option<WireUser>,
    /// Set on pull requests, which the issues endpoint lists too.
    pull_request: Option<Value>,
}

#[derive(Deserialize)]
struct WireComment {
    id: u64,
    body: Option<String>,
    user: Option<WireUser>,
    created_at: String,
    html_url: String,
}

impl From<WireIssue> for Issue {
    fn from(wire: WireIssue) -> Self {
        Self {
            number: wire.number,
            title: wire.title,
            body: wire.body.unwrap_or_default(),
            url: wire.html_url,
            state: wire.state,
            created_at: wire.created_at,
            labels: wire.labels.into_iter().map(|l| l.name).collect(),
            author: wire.user.map(|u| u.login).unwrap_or_default(),
        }
    }
}

impl From<WireComment> for Comment {
    fn from(wire: WireComment) -> Self {
        Self {
            id: wire.id,
            body: wire.body.unwrap_or_default(),
            author: wire.user.map(|u| u.login).unwrap_or_default(),
            created_at: wire.created_at,
            url: wire.html_url,
        }
    }
}

/// A synchronous client for one repository's issues.
pub struct Client {
    agent: ureq::Agent,
    base: String,
    token: Token,
    repo: Repo,
    clock: Box<dyn Clock>,
    /// A count of the program's interrupts: a request under way when it grows is given up.
    interrupts: Option<&'static AtomicU64>,
    /// Told once of a request without an answer after `SLOW` (5 s): a person never watches a
    /// silent wait for up to the minute a request may take.
    on_slow: Option<fn(&str)>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("repo", &self.repo)
            .finish_non_exhaustive()
    }
}

/// One answer: its JSON and the next page's address, if any.
pub(crate) struct Answer {
    pub(crate) json: Value,
    next: Option<String>,
}

impl Client {
    /// A client for `repo` at the API address `base` (see [`crate::api_url_from_env`]), with
    /// the system clock.
    #[must_use]
    pub fn new(base: impl Into<String>, token: Token, repo: Repo) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .user_agent(concat!("ralph/", env!("CARGO_PKG_VERSION")))
            .accept("application/vnd.github+json")
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        Self {
            agent,
            base: base.into().trim_end_matches('/').to_owned(),
            token,
            repo,
            clock: Box::new(SystemClock),
            interrupts: None,
            on_slow: None,
        }
    }

    /// A client for `repo` (`owner/name`) with the token and API address the environment gives
    /// ([`crate::token_from_env`], [`crate::api_url_from_env`]), as `ralph run` makes it.
    ///
    /// # Errors
    /// [`Error::BadRepo`], [`Error::BadApiUrl`] or [`Error::NoToken`], each saying what to set.
    pub fn from_env(repo: &str) -> Result<Self, Error> {
        let var = |name: &str| std::env::var(name).ok();
        let repo: Repo = repo.parse()?;
        let base = crate::api_url_from_env(var)?;
        let token = crate::token_from_env(var)?;
        Ok(Self::new(base, token, repo))
    }

    /// The same client on another clock.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// The repository this client reads.
    #[must_use]
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// The token, for the one header a push to GitHub carries ([`crate::GithubPulls`]).
    pub(crate) fn token(&self) -> &Token {
        &self.token
    }

    pub(crate) fn repo_url(&self, rest: &str) -> String {
        format!(
            "{}/repos/{}/{}{rest}",
            self.base,
            self.repo.owner(),
            self.repo.name()
        )
    }

    /// The login of the account the token acts for (`GET /user`): who ralph's comments are
    /// written by.
    ///
    /// # Errors
    /// See [`Error`]: a GitHub App's token (GitHub Actions' `GITHUB_TOKEN`) may not read its
    /// user, a [`Error::Status`] 403.
    pub fn login(&mut self) -> Result<String, Error> {
        self.hiding(|client| {
            let url = format!("{}/user", client.base);
            let answer = client.send("GET", &url, None)?;
            parse::<WireUser>(&url, answer.json).map(|user| user.login)
        })
    }

    /// The open issues, with `label` when given, oldest first, every page; pull requests are
    /// left out.
    ///
    /// # Errors
    /// See [`Error`]: a refused token, an unknown repository, the network down through every retry.
    pub fn open_issues(&mut self, label: Option<&str>) -> Result<Vec<Issue>, Error> {
        self.hiding(|client| client.list_open_issues(label))
    }

    fn list_open_issues(&mut self, label: Option<&str>) -> Result<Vec<Issue>, Error> {
        let mut query = format!("?state=open&sort=created&direction=asc&per_page={PER_PAGE}");
        if let Some(label) = label {
            query.push_str("&labels=");
            query.push_str(&encode_query_value(label));
        }
        let url = self.repo_url(&format!("/issues{query}"));
        let wires: Vec<WireIssue> = self.all_pages(url)?;
        Ok(wires
            .into_iter()
            .filter(|w| w.pull_request.is_none())
            .map(Issue::from)
            .collect())
    }

    /// One issue, open or closed.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn issue(&mut self, number: u64) -> Result<Issue, Error> {
        self.hiding(|client| {
            let url = client.repo_url(&format!("/issues/{number}"));
            let answer = client.send("GET", &url, None)?;
            parse::<WireIssue>(&url, answer.json).map(Issue::from)
        })
    }

    /// An issue's comments, oldest first, every page.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn comments(&mut self, number: u64) -> Result<Vec<Comment>, Error> {
        self.hiding(|client| {
            let url = client.repo_url(&format!("/issues/{number}/comments?per_page={PER_PAGE}"));
            let wires: Vec<WireComment> = client.all_pages(url)?;
            Ok(wires.into_iter().map(Comment::from).collect())
        })
    }

    /// Posts `body` as a comment on the issue.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn post_comment(&mut self, number: u64, body: &str) -> Result<Comment, Error> {
        self.hiding(|client| {
            let url = client.repo_url(&format!("/issues/{number}/comments"));
            let answer = client.send("POST", &url, Some(&json!({ "body": body })))?;
            parse::<WireComment>(&url, answer.json).map(Comment::from)
        })
    }

    /// Opens an issue with `title`, `body` and, when given, `label`.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn open_issue(
        &mut self,
        title: &str,
        body: &str,
        label: Option<&str>,
    ) -> Result<Issue, Error> {
        self.hiding(|client| {
            let url = client.repo_url("/issues");
            let mut request = json!({ "title": title, "body": body });
            if let Some(label) = label {
                request["labels"] = json!([label]);
            }
            let answer = client.send("POST", &url, Some(&request))?;
            parse::<WireIssue>(&url, answer.json).map(Issue::from)
        })
    }

    /// Closes the issue as completed.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn close_issue(&mut self, number: u64) -> Result<(), Error> {
        self.hiding(|client| {
            let url = client.repo_url(&format!("/issues/{number}"));
            let body = json!({ "state": "closed", "state_reason": "completed" });
            client.send("PATCH", &url, Some(&body)).map(drop)
        })
    }

    /// Adds `label` to the issue (GitHub creates the label in the repository if it is new).
    ///
    /// # Errors
    /// See [`Error`].
    pub fn add_label(&mut self, number: u64, label: &str) -> Result<(), Error> {
        self.hiding(|client| {
            let url = client.repo_url(&format!("/issues/{number}/labels"));
            client
                .send("POST", &url, Some(&json!({ "labels": [label] })))
                .map(drop)
        })
    }

    /// `call`'s result, with a user and password in the API address (`https://USER:TOKEN@HOST`)
    /// replaced by `***` wherever its error shows the address: errors are printed, and go into
    /// events (`WAIT_STARTED.why`, `WARNING`).
    pub(crate) fn hiding<T>(
        &mut self,
        call: impl FnOnce(&mut Self) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let result = call(self);
        match crate::token::userinfo(&self.base) {
            Some(userinfo) => result.map_err(|err| err.hiding(userinfo)),
            None => result,
        }
    }

    pub(crate) fn all_pages<T: for<'de> Deserialize<'de>>(
        &mut self,
        first: String,
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut read = std::collections::HashSet::new();
        let mut url = first;
        loop {
            let answer = self.send("GET", &url, None)?;
            items.extend(parse::<Vec<T>>(&url, answer.json)?);
            read.insert(url.clone());
            let endless = |url: String, why: String| Error::EndlessPages {
                url,
                pages: read.len(),
                why,
            };
            match answer.next {
                None => return Ok(items),
                Some(next) if read.contains(&next) => {
                    return Err(endless(
                        url,
                        format!("the next page, {next}, was read already"),
                    ));
                }
                Some(_) if read.len() >= MAX_PAGES => {
                    return Err(endless(url, format!("more than {MAX_PAGES} pages")));
                }
                Some(next) if next.starts_with(&format!("{}/", self.base)) => url = next,
                Some(next) => {
                    return Err(Error::ForeignLink {
                        url,
                        next,
                        base: self.base.clone(),
                    });
                }
            }
        }
    }

    /// One request, tried once: a rate limit ([`Error::RateLimited`]) and a network error or a
    /// 5xx ([`Error::Unreachable`]) come back for the caller to wait and ask again.
    pub(crate) fn send(
        &mut self,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, Error> {
        let reason = match self.send_once(method, url, body) {
            Ok(Reply::Answer(answer)) => return Ok(answer),
            Ok(Reply::RateLimited { status, wait }) => {
                return Err(Error::RateLimited {
                    method: method.to_owned(),
                    url: url.to_owned(),
                    status,
                    wait,
                    until: self.clock.now() + wait,
                });
            }
            Ok(Reply::ServerError(reason)) | Err(reason) => reason,
            Ok(Reply::Interrupted) => {
                return Err(Error::Interrupted {
                    method: method.to_owned(),
                    url: url.to_owned(),
                });
            }
            Ok(Reply::Refused { status, message }) => {
                return Err(Error::Status {
                    method: method.to_owned(),
                    url: url.to_owned(),
                    status,
                    message,
                    hint: Error::hint_for(status),
                });
            }
        };
        Err(Error::Unreachable {
            method: method.to_owned(),
            url: url.to_owned(),
            reason,
            status_page: "https://www.githubstatus.com",
        })
    }

    /// One try: GitHub's answer sorted, or the network's failure in words. With
    /// [`with_interrupts`](Self::with_interrupts), the try is made on a thread of its own and
    /// given up ([`Reply::Interrupted`]) as soon as the count grows.
    fn send_once(&self, method: &str, url: &str, body: Option<&Value>) -> Result<Reply, String> {
        let exchange = Exchange {
            agent: self.agent.clone(),
            authorization: format!("Bearer {}", self.token.secret()),
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
                            tell(&self.slow_words(method, url));
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

    /// The same client giving up a request under way as soon as `interrupts` grows: a program
    /// counts there the interrupts it receives (Ctrl+C, SIGTERM), so that none waits on a
    /// request GitHub does not answer (until the one-minute timeout).
    #[must_use]
    pub fn with_interrupts(mut self, interrupts: &'static AtomicU64) -> Self {
        self.interrupts = Some(interrupts);
        self
    }

    /// The same client telling `tell`, once a request, of one GitHub has not answered after
    /// 5 s (`GET https://api.github.com/repos/o/r/issues: no answer after 5s`), the
    /// address's user and password hidden. Only with
    /// [`with_interrupts`](Self::with_interrupts), where requests are made on a thread of
    /// their own.
    #[must_use]
    pub fn with_slow_notice(mut self, tell: fn(&str)) -> Self {
        self.on_slow = Some(tell);
        self
    }

    fn slow_words(&self, method: &str, url: &str) -> String {
        let url = match crate::token::userinfo(&self.base) {
            Some(userinfo) => url.replace(userinfo, crate::token::HIDDEN),
            None => url.to_owned(),
        };
        format!(
            "{method} {url}: no answer after {}",
            humantime::format_duration(SLOW)
        )
    }
}

/// How long a request goes without an answer before [`Client::with_slow_notice`] says so.
const SLOW: Duration = Duration::from_secs(5);

/// How often a request made on a thread of its own looks at the interrupt count.
const INTERRUPT_POLL: Duration = Duration::from_millis(20);

/// One request, owned, so that it can be made on a thread of its own.
struct Exchange {
    agent: ureq::Agent,
    authorization: String,
    method: String,
    url: String,
    body: Option<String>,
    /// The time a rate limit's reset is read against.
    now: SystemTime,
}

impl Exchange {
    fn run(self) -> Result<Reply, String> {
        let request = ureq::http::Request::builder()
            .method(self.method.as_str())
            .uri(self.url.as_str())
            .header("authorization", self.authorization.as_str())
            .header("x-github-api-version", "2022-11-28");
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
        let remaining = header("x-ratelimit-remaining");
        let reset = header("x-ratelimit-reset");
        let next = header("link").and_then(|link| next_link(&link));
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
                    }));
                }
                Err(_) => json!({ "message": text.chars().take(200).collect::<String>() }),
            }
        };
        let message = json
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if (200..300).contains(&status) {
            return Ok(Reply::Answer(Answer { json, next }));
        }
        let limits = RateLimitHeaders {
            retry_after: retry_after.as_deref(),
            remaining: remaining.as_deref(),
            reset: reset.as_deref(),
            message: &message,
        };
        if let Some(wait) = rate_limit_wait(status, &limits, self.now) {
            return Ok(Reply::RateLimited { status, wait });
        }
        if status >= 500 {
            return Ok(Reply::ServerError(format!("HTTP {status} {message}")));
        }
        Ok(Reply::Refused { status, message })
    }
}

/// One try's answer, sorted by what the request loop does next.
enum Reply {
    Answer(Answer),
    RateLimited {
        status: u16,
        wait: Duration,
    },
    ServerError(String),
    Refused {
        status: u16,
        message: String,
    },
    /// Given up: the program was interrupted while it waited for the answer.
    Interrupted,
}

pub(crate) fn parse<T: for<'de> Deserialize<'de>>(url: &str, json: Value) -> Result<T, Error> {
    if let Some(reason) = json.get("unparsed").and_then(Value::as_str) {
        return Err(Error::BadAnswer {
            url: url.to_owned(),
            reason: reason.to_owned(),
        });
    }
    serde_json::from_value(json).map_err(|err| Error::BadAnswer {
        url: url.to_owned(),
        reason: err.to_string(),
    })
}

/// The rate-limit headers of an answer, as text.
struct RateLimitHeaders<'a> {
    retry_after: Option<&'a str>,
    remaining: Option<&'a str>,
    reset: Option<&'a str>,
    message: &'a str,
}

/// How long to wait when an answer is a rate limit, by GitHub's documented rules: a 403 or 429
/// with `retry-after` waits that many seconds; with `x-ratelimit-remaining: 0`, until
/// `x-ratelimit-reset` (a Unix time) and a second; a 429, or a 403 whose message says "rate
/// limit", with neither, a minute. A 403 without these is a permission refused: no wait.
fn rate_limit_wait(
    status: u16,
    headers: &RateLimitHeaders<'_>,
    now: SystemTime,
) -> Option<Duration> {
    if status != 403 && status != 429 {
        return None;
    }
    let wait = if let Some(secs) = headers
        .retry_after
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Duration::from_secs(secs.max(1))
    } else if let (Some("0"), Some(reset)) = (
        headers.remaining.map(str::trim),
        headers.reset.and_then(|v| v.trim().parse::<u64>().ok()),
    ) {
        let reset = UNIX_EPOCH + Duration::from_secs(reset);
        reset.duration_since(now).unwrap_or(Duration::ZERO) + RESET_MARGIN
    } else if status == 429 || headers.message.to_lowercase().contains("rate limit") {
        UNNAMED_RATE_LIMIT_WAIT
    } else {
        return None;
    };
    Some(wait.min(LONGEST_RATE_LIMIT_WAIT))
}

/// The `rel="next"` address of a `link` header.
fn next_link(link: &str) -> Option<String> {
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

/// Percent-encodes a query value: everything but RFC 3986's unreserved characters.
pub(crate) fn encode_query_value(value: &str) -> String {
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

    fn limits<'a>(
        retry_after: Option<&'a str>,
        remaining: Option<&'a str>,
        reset: Option<&'a str>,
        message: &'a str,
    ) -> RateLimitHeaders<'a> {
        RateLimitHeaders {
            retry_after,
            remaining,
            reset,
            message,
        }
    }

    const NOW: u64 = 1_800_000_000;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(NOW)
    }

    #[test]
    fn retry_after_is_waited_as_given() {
        let headers = limits(Some("30"), None, None, "");
        assert_eq!(
            rate_limit_wait(429, &headers, now()),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            rate_limit_wait(403, &headers, now()),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn a_spent_limit_waits_until_its_reset_and_a_second() {
        let reset = (NOW + 90).to_string();
        let headers = limits(None, Some("0"), Some(&reset), "API rate limit exceeded");
        assert_eq!(
            rate_limit_wait(403, &headers, now()),
            Some(Duration::from_secs(91))
        );
        let past = (NOW - 5).to_string();
        let headers = limits(None, Some("0"), Some(&past), "");
        assert_eq!(
            rate_limit_wait(403, &headers, now()),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn a_403_with_requests_left_is_a_refusal_not_a_wait() {
        let reset = (NOW + 90).to_string();
        let headers = limits(None, Some("4999"), Some(&reset), "Resource not accessible");
        assert_eq!(rate_limit_wait(403, &headers, now()), None);
        assert_eq!(
            rate_limit_wait(404, &limits(Some("5"), None, None, ""), now()),
            None
        );
    }

    #[test]
    fn a_limit_without_a_reset_waits_a_minute_and_none_waits_past_an_hour() {
        let secondary = limits(None, None, None, "You have exceeded a secondary rate limit");
        assert_eq!(
            rate_limit_wait(403, &secondary, now()),
            Some(UNNAMED_RATE_LIMIT_WAIT)
        );
        let far = (NOW + 86_400).to_string();
        let headers = limits(None, Some("0"), Some(&far), "");
        assert_eq!(
            rate_limit_wait(403, &headers, now()),
            Some(LONGEST_RATE_LIMIT_WAIT)
        );
    }

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
    }
}
