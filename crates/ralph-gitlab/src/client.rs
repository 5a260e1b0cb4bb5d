//! The REST client: one request at a time, never a wait of its own (a rate limit or a failure
//! comes back as an [`Error`] saying how long, for the caller's loop to wait), and the calls a
//! task source makes. The merge-request calls are in `merge_requests`.

use std::fmt;
use std::sync::atomic::AtomicU64;

use ralph_rest::{Answer, Clock, PageStop, Pages, Reply, Transport, encode_query_value};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Error, Project, Token};

/// GitLab's largest page.
const PER_PAGE: u32 = 100;

/// Whether an issue is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub enum IssueState {
    /// Open (`opened`): a task to do.
    #[serde(rename = "opened")]
    Open,
    /// Closed, by anyone.
    #[serde(rename = "closed")]
    Closed,
}

/// An issue, as the task source reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Issue {
    /// Its number in the project (GitLab's `iid`, shown as `#N`).
    pub iid: u64,
    /// Its title.
    pub title: String,
    /// Its text (empty when it has none).
    pub description: String,
    /// Its page on GitLab.
    pub url: String,
    /// Open or closed.
    pub state: IssueState,
    /// When it was opened (RFC 3339, as GitLab writes it; sorts as time does).
    pub created_at: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// Who opened it (a username).
    pub author: String,
}

/// A note (a comment) on an issue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Note {
    /// Its id.
    pub id: u64,
    /// Its text.
    pub body: String,
    /// Who wrote it (a username).
    pub author: String,
    /// When it was written (RFC 3339).
    pub created_at: String,
    /// GitLab's own note of a change (closed, labelled), which no person wrote.
    pub system: bool,
}

#[derive(Deserialize)]
struct WireUser {
    username: String,
}

#[derive(Deserialize)]
struct WireIssue {
    iid: u64,
    title: String,
    description: Option<String>,
    web_url: String,
    state: IssueState,
    created_at: String,
    #[serde(default)]
    labels: Vec<String>,
    author: Option<WireUser>,
}

#[derive(Deserialize)]
struct WireNote {
    id: u64,
    body: Option<String>,
    author: Option<WireUser>,
    created_at: String,
    #[serde(default)]
    system: bool,
}

impl From<WireIssue> for Issue {
    fn from(wire: WireIssue) -> Self {
        Self {
            iid: wire.iid,
            title: wire.title,
            description: wire.description.unwrap_or_default(),
            url: wire.web_url,
            state: wire.state,
            created_at: wire.created_at,
            labels: wire.labels,
            author: wire.author.map(|u| u.username).unwrap_or_default(),
        }
    }
}

impl From<WireNote> for Note {
    fn from(wire: WireNote) -> Self {
        Self {
            id: wire.id,
            body: wire.body.unwrap_or_default(),
            author: wire.author.map(|u| u.username).unwrap_or_default(),
            created_at: wire.created_at,
            system: wire.system,
        }
    }
}

/// A synchronous client for one project's issues and merge requests.
pub struct Client {
    transport: Transport,
    project: Project,
    /// The token, for the one header a push to GitLab carries (its requests carry it through
    /// `transport`).
    token: Token,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.transport.hide(self.transport.base()))
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `project` at the API address `base` (see [`crate::api_url_from_env`]),
    /// with the system clock. The token goes in each request's `PRIVATE-TOKEN` header.
    #[must_use]
    pub fn new(base: impl Into<String>, token: Token, project: Project) -> Self {
        let transport = Transport::new(
            base,
            "application/json",
            ("private-token", token.clone()),
            vec![],
        );
        Self {
            transport,
            project,
            token,
        }
    }

    /// A client for `project` (`group/project`) with the token and API address the environment
    /// gives ([`crate::token_from_env`], [`crate::api_url_from_env`]), as `ralph run` makes it.
    ///
    /// # Errors
    /// [`Error::BadProject`], [`Error::BadApiUrl`] or [`Error::NoToken`], each saying what to set.
    pub fn from_env(project: &str) -> Result<Self, Error> {
        let var = |name: &str| std::env::var(name).ok();
        let project: Project = project.parse()?;
        let base = crate::api_url_from_env(var)?;
        let token = crate::token_from_env(var)?;
        Ok(Self::new(base, token, project))
    }

    /// The token, for the one header a push to GitLab carries ([`crate::GitlabMergeRequests`]).
    pub(crate) fn token(&self) -> &Token {
        &self.token
    }

    /// The same client on another clock.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.transport.set_clock(clock);
        self
    }

    /// The same client giving up a request under way as soon as `interrupts` grows: a program
    /// counts there the interrupts it receives (Ctrl+C, SIGTERM), so that none waits on a
    /// request GitLab does not answer (until the one-minute timeout).
    #[must_use]
    pub fn with_interrupts(mut self, interrupts: &'static AtomicU64) -> Self {
        self.transport.set_interrupts(interrupts);
        self
    }

    /// The same client telling `tell`, once a request, of one GitLab has not answered after
    /// 5 s, the address's user and password hidden. Only with
    /// [`with_interrupts`](Self::with_interrupts).
    #[must_use]
    pub fn with_slow_notice(mut self, tell: fn(&str)) -> Self {
        self.transport.set_slow_notice(tell);
        self
    }

    /// The project this client reads.
    #[must_use]
    pub fn project(&self) -> &Project {
        &self.project
    }

    pub(crate) fn project_url(&self, rest: &str) -> String {
        format!(
            "{}/projects/{}{rest}",
            self.transport.base(),
            self.project.id()
        )
    }

    /// The username of the account the token acts for (`GET /user`): who ralph's notes are
    /// written by. The first request of a run: a refused token is an error here, at the start.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn username(&mut self) -> Result<String, Error> {
        let url = format!("{}/user", self.transport.base());
        let answer = self.send("GET", &url, None)?;
        self.parse::<WireUser>(&url, answer.json)
            .map(|user| user.username)
    }

    /// The open issues, with `label` when given, oldest first, every page.
    ///
    /// # Errors
    /// See [`Error`]: a refused token, an unknown project, the network down.
    pub fn open_issues(&mut self, label: Option<&str>) -> Result<Vec<Issue>, Error> {
        let mut query = format!("?state=opened&order_by=created_at&sort=asc&per_page={PER_PAGE}");
        if let Some(label) = label {
            query.push_str("&labels=");
            query.push_str(&encode_query_value(label));
        }
        let url = self.project_url(&format!("/issues{query}"));
        let wires: Vec<WireIssue> = self.all_pages(url)?;
        Ok(wires.into_iter().map(Issue::from).collect())
    }

    /// One issue, open or closed, by its number in the project.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn issue(&mut self, iid: u64) -> Result<Issue, Error> {
        let url = self.project_url(&format!("/issues/{iid}"));
        let answer = self.send("GET", &url, None)?;
        self.parse::<WireIssue>(&url, answer.json).map(Issue::from)
    }

    /// An issue's notes, oldest first, every page (GitLab's own system notes among them).
    ///
    /// # Errors
    /// See [`Error`].
    pub fn notes(&mut self, iid: u64) -> Result<Vec<Note>, Error> {
        let url = self.project_url(&format!(
            "/issues/{iid}/notes?order_by=created_at&sort=asc&per_page={PER_PAGE}"
        ));
        let wires: Vec<WireNote> = self.all_pages(url)?;
        Ok(wires.into_iter().map(Note::from).collect())
    }

    /// Posts `body` as a note on the issue.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn post_note(&mut self, iid: u64, body: &str) -> Result<Note, Error> {
        let url = self.project_url(&format!("/issues/{iid}/notes"));
        let answer = self.send("POST", &url, Some(&json!({ "body": body })))?;
        self.parse::<WireNote>(&url, answer.json).map(Note::from)
    }

    /// Closes the issue.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn close_issue(&mut self, iid: u64) -> Result<(), Error> {
        self.edit_issue(iid, &json!({ "state_event": "close" }))
    }

    /// Adds `label` to the issue (GitLab creates the label in the project if it is new).
    ///
    /// # Errors
    /// See [`Error`].
    pub fn add_label(&mut self, iid: u64, label: &str) -> Result<(), Error> {
        self.edit_issue(iid, &json!({ "add_labels": label }))
    }

    fn edit_issue(&mut self, iid: u64, edit: &Value) -> Result<(), Error> {
        let url = self.project_url(&format!("/issues/{iid}"));
        let answer = self.send("PUT", &url, Some(edit))?;
        self.parse::<WireIssue>(&url, answer.json).map(drop)
    }

    /// Every page of a listing from `first`: the `link` header's next page, else the
    /// `x-next-page` number (GitLab sends both; a proxy may keep only one).
    pub(crate) fn all_pages<T: for<'de> Deserialize<'de>>(
        &mut self,
        first: String,
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut pages = Pages::new(self.transport.base());
        let mut url = first;
        loop {
            let answer = self.send("GET", &url, None)?;
            let next = answer.next.clone().or_else(|| {
                answer
                    .next_page
                    .as_deref()
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(|n| with_page(&url, n))
            });
            items.extend(self.parse::<Vec<T>>(&url, answer.json)?);
            match pages.follow(&url, next) {
                Ok(None) => return Ok(items),
                Ok(Some(next)) => url = next,
                Err(PageStop::Endless { pages, why }) => {
                    return Err(Error::EndlessPages {
                        url: self.transport.hide(&url),
                        pages,
                        why: self.transport.hide(&why),
                    });
                }
                Err(PageStop::Foreign { next }) => {
                    return Err(Error::ForeignLink {
                        url: self.transport.hide(&url),
                        next: self.transport.hide(&next),
                        base: self.transport.hide(self.transport.base()),
                    });
                }
            }
        }
    }

    /// One request, tried once: a rate limit ([`Error::RateLimited`]) and a network error or a
    /// 5xx ([`Error::Unreachable`]) come back for the caller to wait and ask again. Every
    /// address in an error has its user and password hidden.
    pub(crate) fn send(
        &mut self,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, Error> {
        let hide = |text: &str| self.transport.hide(text);
        let (method, shown) = (method.to_owned(), hide(url));
        match self.transport.send_once(&method, url, body) {
            Ok(Reply::Answer(answer)) => Ok(answer),
            Ok(Reply::RateLimited {
                status,
                wait,
                until,
            }) => Err(Error::RateLimited {
                method,
                url: shown,
                status,
                wait,
                until,
            }),
            Ok(Reply::ServerError(reason)) | Err(reason) => Err(Error::Unreachable {
                method,
                url: shown,
                reason: hide(&reason),
            }),
            Ok(Reply::Refused { status, message }) => Err(Error::Status {
                method,
                url: shown,
                status,
                message: hide(&message),
                hint: Error::hint_for(status),
            }),
            Ok(Reply::Interrupted) => Err(Error::Interrupted { method, url: shown }),
        }
    }

    /// The answer's JSON as `T`, or [`Error::BadAnswer`] saying what did not fit.
    pub(crate) fn parse<T: for<'de> Deserialize<'de>>(
        &self,
        url: &str,
        json: Value,
    ) -> Result<T, Error> {
        let bad = |reason: String| Error::BadAnswer {
            url: self.transport.hide(url),
            reason,
        };
        if let Some(reason) = json.get("unparsed").and_then(Value::as_str) {
            return Err(bad(format!("not JSON ({reason})")));
        }
        serde_json::from_value(json).map_err(|err| bad(err.to_string()))
    }
}

/// `url` with its `page` parameter set to `page`.
fn with_page(url: &str, page: &str) -> String {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("page="))
        .collect();
    let page = format!("page={}", encode_query_value(page));
    params.push(&page);
    format!("{path}?{}", params.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_page_number_replaces_the_page_parameter() {
        assert_eq!(
            with_page("http://h/x?a=1&page=2", "3"),
            "http://h/x?a=1&page=3"
        );
        assert_eq!(with_page("http://h/x", "2"), "http://h/x?page=2");
    }
}
