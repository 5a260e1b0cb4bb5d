//! The REST client: one request at a time, never a wait of its own (a rate limit or a failure
//! comes back as an [`Error`] saying how long, for the caller's loop to wait), and the five
//! calls a task source makes.

use std::fmt;
use std::sync::atomic::AtomicU64;

use ralph_rest::{Answer, Clock, PageStop, Pages, Reply, Transport, encode_query_value};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Error, Repo, Token};

/// GitHub's largest page.
const PER_PAGE: u32 = 100;

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
    transport: Transport,
    repo: Repo,
    /// The token, for the one header a push to GitHub carries (its requests carry it through
    /// `transport`).
    token: Token,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.transport.base())
            .field("repo", &self.repo)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `repo` at the API address `base` (see [`crate::api_url_from_env`]), with
    /// the system clock.
    #[must_use]
    pub fn new(base: impl Into<String>, token: Token, repo: Repo) -> Self {
        let authorization = Token::new(format!("Bearer {}", token.secret()));
        let transport = Transport::new(
            base,
            "application/vnd.github+json",
            ("authorization", authorization),
            vec![("x-github-api-version", "2022-11-28")],
        );
        Self {
            transport,
            repo,
            token,
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
        self.transport.set_clock(clock);
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
            self.transport.base(),
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
            let url = format!("{}/user", client.transport.base());
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
        match ralph_rest::userinfo(self.transport.base()) {
            Some(userinfo) => result.map_err(|err| err.hiding(userinfo)),
            None => result,
        }
    }

    pub(crate) fn all_pages<T: for<'de> Deserialize<'de>>(
        &mut self,
        first: String,
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut pages = Pages::new(self.transport.base());
        let mut url = first;
        loop {
            let answer = self.send("GET", &url, None)?;
            items.extend(parse::<Vec<T>>(&url, answer.json)?);
            match pages.follow(&url, answer.next) {
                Ok(None) => return Ok(items),
                Ok(Some(next)) => url = next,
                Err(PageStop::Endless { pages, why }) => {
                    return Err(Error::EndlessPages { url, pages, why });
                }
                Err(PageStop::Foreign { next }) => {
                    return Err(Error::ForeignLink {
                        url,
                        next,
                        base: self.transport.base().to_owned(),
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
        let reason = match self.transport.send_once(method, url, body) {
            Ok(Reply::Answer(answer)) => return Ok(answer),
            Ok(Reply::RateLimited {
                status,
                wait,
                until,
            }) => {
                return Err(Error::RateLimited {
                    method: method.to_owned(),
                    url: url.to_owned(),
                    status,
                    wait,
                    until,
                });
            }
            Ok(Reply::ServerError(reason)) | Err(reason) => reason,
            Ok(Reply::Refused { status, message }) => {
                return Err(Error::Status {
                    method: method.to_owned(),
                    url: url.to_owned(),
                    status,
                    message,
                    hint: Error::hint_for(status),
                });
            }
            Ok(Reply::Interrupted) => {
                return Err(Error::Interrupted {
                    method: method.to_owned(),
                    url: url.to_owned(),
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

    /// The same client giving up a request under way as soon as `interrupts` grows: a program
    /// counts there the interrupts it receives (Ctrl+C, SIGTERM), so that none waits on a
    /// request GitHub does not answer (until the one-minute timeout).
    #[must_use]
    pub fn with_interrupts(mut self, interrupts: &'static AtomicU64) -> Self {
        self.transport.set_interrupts(interrupts);
        self
    }

    /// The same client telling `tell`, once a request, of one GitHub has not answered after
    /// 5 s (`GET https://api.github.com/repos/o/r/issues: no answer after 5s`), the
    /// address's user and password hidden. Only with
    /// [`with_interrupts`](Self::with_interrupts), where requests are made on a thread of
    /// their own.
    #[must_use]
    pub fn with_slow_notice(mut self, tell: fn(&str)) -> Self {
        self.transport.set_slow_notice(tell);
        self
    }
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
