//! The GraphQL client: one request at a time, never a wait of its own (a rate limit or a
//! failure comes back as an [`Error`] saying how long, for the caller's loop to wait), and the
//! operations a task source makes, each a named GraphQL operation.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, UNIX_EPOCH};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::forge::{self, Clock, Exchange, Patience, RawReply, Secret, Sent, SystemClock};
use crate::{DEFAULT_API_URL, Error};

/// The variable the API key is read from.
pub const KEY_VARIABLE: &str = "LINEAR_API_KEY";
/// The variable that replaces the API address (a test server, a proxy).
pub const URL_VARIABLE: &str = "LINEAR_API_URL";

/// A rate limit that names no reset waits a minute.
const UNNAMED_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// Linear's limits are per hour: a longer wait is a clock gone wrong.
const LONGEST_RATE_LIMIT_WAIT: Duration = Duration::from_secs(3600);
/// The shortest wait after a rate limit, so a reset already past is not asked at once in a
/// tight loop.
const SHORTEST_RATE_LIMIT_WAIT: Duration = Duration::from_secs(1);
/// The most pages one listing reads: past 1,000 pages of 100 the pages are taken as endless.
const MAX_PAGES: usize = 1000;

/// A named GraphQL operation: Linear (and the tests' fake) know it by its name.
#[derive(Debug, Clone, Copy)]
struct Operation {
    name: &'static str,
    query: &'static str,
}

/// The fields ralph reads of an issue.
const ISSUE_FIELDS: &str = "fragment IssueFields on Issue { id identifier title description \
     url priority createdAt state { id name type position } labels(first: 100) { nodes { id name } } }";

const VIEWER: Operation = Operation {
    name: "Viewer",
    query: "query Viewer { viewer { id name } }",
};
const TEAMS: Operation = Operation {
    name: "Teams",
    query: "query Teams($after: String) { teams(first: 100, after: $after) { nodes { id key \
            name } pageInfo { hasNextPage endCursor } } }",
};
const TEAM_STATES: Operation = Operation {
    name: "TeamStates",
    query: "query TeamStates($teamId: String!, $after: String) { team(id: $teamId) { \
            states(first: 100, after: $after) { nodes { id name type position } pageInfo { \
            hasNextPage endCursor } } } }",
};
const ISSUES: Operation = Operation {
    name: "Issues",
    query: "query Issues($filter: IssueFilter!, $after: String) { issues(filter: $filter, \
            first: 100, after: $after) { nodes { ...IssueFields } pageInfo { hasNextPage \
            endCursor } } }",
};
const ISSUE: Operation = Operation {
    name: "Issue",
    query: "query Issue($id: String!) { issue(id: $id) { ...IssueFields } }",
};
const COMMENTS: Operation = Operation {
    name: "Comments",
    query: "query Comments($id: String!, $after: String) { issue(id: $id) { comments(first: \
            100, after: $after) { nodes { id body createdAt url user { id name } } pageInfo { \
            hasNextPage endCursor } } } }",
};
const COMMENT_CREATE: Operation = Operation {
    name: "CommentCreate",
    query: "mutation CommentCreate($issueId: String!, $body: String!) { commentCreate(input: \
            { issueId: $issueId, body: $body }) { success comment { id body createdAt url user \
            { id name } } } }",
};
const ISSUE_MOVE: Operation = Operation {
    name: "IssueMove",
    query: "mutation IssueMove($id: String!, $stateId: String!) { issueUpdate(id: $id, input: \
            { stateId: $stateId }) { success } }",
};
const LABELS: Operation = Operation {
    name: "Labels",
    query: "query Labels($name: String!, $after: String) { issueLabels(filter: { name: { eq: \
            $name } }, first: 100, after: $after) { nodes { id name team { id } } pageInfo { \
            hasNextPage endCursor } } }",
};
const LABEL_CREATE: Operation = Operation {
    name: "LabelCreate",
    query: "mutation LabelCreate($teamId: String!, $name: String!) { issueLabelCreate(input: \
            { teamId: $teamId, name: $name }) { success issueLabel { id name } } }",
};
const ISSUE_ADD_LABEL: Operation = Operation {
    name: "IssueAddLabel",
    query: "mutation IssueAddLabel($id: String!, $labelId: String!) { issueAddLabel(id: $id, \
            labelId: $labelId) { success } }",
};

/// The account the API key acts for: the author of ralph's comments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct User {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
}

/// A team, as the API key sees it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Team {
    /// Its id.
    pub id: String,
    /// Its key, the prefix of its issues' identifiers (`ENG`).
    pub key: String,
    /// Its name.
    pub name: String,
}

/// A workflow state of a team.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct WorkflowState {
    /// Its id.
    pub id: String,
    /// Its name (`Todo`, `Done`).
    pub name: String,
    /// Its type: `triage`, `backlog`, `unstarted`, `started`, `completed` or `canceled`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its place in the team's workflow (the board's column order).
    #[serde(default)]
    pub position: f64,
}

/// An issue label.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Label {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
}

/// An issue, as the task source reads it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Issue {
    /// Its id.
    pub id: String,
    /// Its identifier, as people name it (`ENG-12`): the task's id.
    pub identifier: String,
    /// Its title.
    pub title: String,
    /// Its description (empty when it has none).
    pub description: String,
    /// Its page on Linear.
    pub url: String,
    /// 0 none, 1 urgent, 2 high, 3 medium, 4 low.
    pub priority: u8,
    /// When it was created (ISO 8601, as Linear writes it; sorts as time does).
    pub created_at: String,
    /// Its workflow state.
    pub state: WorkflowState,
    /// Its labels' names.
    pub labels: Vec<String>,
}

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Comment {
    /// Its id.
    pub id: String,
    /// Its text (Markdown).
    pub body: String,
    /// Its author's id (empty for an integration's comment, which has no user).
    pub author_id: String,
    /// Its author's name.
    pub author: String,
    /// When it was written (ISO 8601).
    pub created_at: String,
    /// Its address on Linear.
    pub url: String,
}

#[derive(Deserialize)]
struct Nodes<T> {
    nodes: Vec<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireIssue {
    id: String,
    identifier: String,
    title: String,
    description: Option<String>,
    url: String,
    #[serde(default)]
    priority: f64,
    created_at: String,
    state: WorkflowState,
    labels: Nodes<Label>,
}

impl From<WireIssue> for Issue {
    fn from(wire: WireIssue) -> Self {
        Self {
            id: wire.id,
            identifier: wire.identifier,
            title: wire.title,
            description: wire.description.unwrap_or_default(),
            url: wire.url,
            // Linear's priorities are the whole numbers 0 to 4.
            priority: wire.priority.clamp(0.0, 4.0) as u8,
            created_at: wire.created_at,
            state: wire.state,
            labels: wire.labels.nodes.into_iter().map(|l| l.name).collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireComment {
    id: String,
    body: Option<String>,
    created_at: String,
    url: Option<String>,
    user: Option<User>,
}

impl From<WireComment> for Comment {
    fn from(wire: WireComment) -> Self {
        let (author_id, author) = wire.user.map(|u| (u.id, u.name)).unwrap_or_default();
        Self {
            id: wire.id,
            body: wire.body.unwrap_or_default(),
            author_id,
            author,
            created_at: wire.created_at,
            url: wire.url.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
struct IdOnly {
    id: String,
}

#[derive(Deserialize)]
struct WireLabel {
    id: String,
    name: String,
    team: Option<IdOnly>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    nodes: Vec<Value>,
    page_info: PageInfo,
}

/// A synchronous client for Linear's GraphQL API.
pub struct Client {
    agent: ureq::Agent,
    url: String,
    key: Secret,
    clock: Box<dyn Clock>,
    patience: Patience,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for the API at `url` (see [`api_url_from_env`]) with the API key `key`, on the
    /// system clock.
    #[must_use]
    pub fn new(url: impl Into<String>, key: Secret) -> Self {
        Self {
            agent: forge::agent(),
            url: url.into(),
            key,
            clock: Box::new(SystemClock),
            patience: Patience::default(),
        }
    }

    /// A client with the key and API address the environment gives ([`KEY_VARIABLE`],
    /// [`URL_VARIABLE`]), as `ralph run` makes it.
    ///
    /// # Errors
    /// [`Error::NoKey`] or [`Error::BadApiUrl`], each saying what to set.
    pub fn from_env() -> Result<Self, Error> {
        let var = |name: &str| std::env::var(name).ok();
        let url = api_url_from_env(var)?;
        let key = key_from_env(var)?;
        Ok(Self::new(url, key))
    }

    /// The same client on another clock.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// The same client giving up a request under way as soon as `interrupts` grows: a program
    /// counts there the interrupts it receives (Ctrl+C, SIGTERM), so that none waits on a
    /// request Linear does not answer (until the one-minute timeout).
    #[must_use]
    pub fn with_interrupts(mut self, interrupts: &'static AtomicU64) -> Self {
        self.patience.interrupts = Some(interrupts);
        self
    }

    /// The same client telling `tell`, once a request, of one Linear has not answered after
    /// 5 s (`Issues at https://api.linear.app/graphql: no answer after 5s`). Only with
    /// [`with_interrupts`](Self::with_interrupts), where requests are made on a thread of
    /// their own.
    #[must_use]
    pub fn with_slow_notice(mut self, tell: fn(&str)) -> Self {
        self.patience.on_slow = Some(tell);
        self
    }

    /// The API address.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The account the key acts for; the first request a run makes, so a bad key is said at
    /// the start.
    ///
    /// # Errors
    /// See [`Error`]: [`Error::BadKey`] when Linear refuses the key.
    pub fn viewer(&mut self) -> Result<User, Error> {
        let data = self.request(VIEWER, json!({}))?;
        self.parse(VIEWER, data, &["viewer"])
    }

    /// The team whose key is `key` (compared as Linear shows keys, ignoring case).
    ///
    /// # Errors
    /// [`Error::NoSuchTeam`], naming the teams the key sees; see [`Error`].
    pub fn team(&mut self, key: &str) -> Result<Team, Error> {
        let teams: Vec<Team> = self.all_pages(TEAMS, json!({}), &["teams"])?;
        let known: Vec<String> = teams.iter().map(|t| t.key.clone()).collect();
        teams
            .into_iter()
            .find(|t| t.key.eq_ignore_ascii_case(key))
            .ok_or_else(|| Error::NoSuchTeam {
                team: key.to_owned(),
                known,
            })
    }

    /// The team's workflow states.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn states(&mut self, team_id: &str) -> Result<Vec<WorkflowState>, Error> {
        self.all_pages(
            TEAM_STATES,
            json!({ "teamId": team_id }),
            &["team", "states"],
        )
    }

    /// The team's issues in a state of type `unstarted`, with `label` when given, every page.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn unstarted_issues(
        &mut self,
        team_id: &str,
        label: Option<&str>,
    ) -> Result<Vec<Issue>, Error> {
        let mut filter = json!({
            "team": { "id": { "eq": team_id } },
            "state": { "type": { "eq": "unstarted" } },
        });
        if let Some(label) = label {
            filter["labels"] = json!({ "some": { "name": { "eq": label } } });
        }
        let wires: Vec<WireIssue> =
            self.all_pages(ISSUES, json!({ "filter": filter }), &["issues"])?;
        Ok(wires.into_iter().map(Issue::from).collect())
    }

    /// One issue, by id or identifier, whatever its state.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn issue(&mut self, id: &str) -> Result<Issue, Error> {
        let data = self.request(ISSUE, json!({ "id": id }))?;
        self.parse::<WireIssue>(ISSUE, data, &["issue"])
            .map(Issue::from)
    }

    /// An issue's comments, oldest first, every page.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn comments(&mut self, issue_id: &str) -> Result<Vec<Comment>, Error> {
        let wires: Vec<WireComment> =
            self.all_pages(COMMENTS, json!({ "id": issue_id }), &["issue", "comments"])?;
        let mut comments: Vec<Comment> = wires.into_iter().map(Comment::from).collect();
        comments.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        Ok(comments)
    }

    /// Posts `body` as a comment on the issue.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn post_comment(&mut self, issue_id: &str, body: &str) -> Result<Comment, Error> {
        let variables = json!({ "issueId": issue_id, "body": body });
        let data = self.request(COMMENT_CREATE, variables)?;
        self.succeeded(COMMENT_CREATE, &data, "commentCreate")?;
        self.parse::<WireComment>(COMMENT_CREATE, data, &["commentCreate", "comment"])
            .map(Comment::from)
    }

    /// Moves the issue to the workflow state `state_id`.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn move_issue(&mut self, issue_id: &str, state_id: &str) -> Result<(), Error> {
        let variables = json!({ "id": issue_id, "stateId": state_id });
        let data = self.request(ISSUE_MOVE, variables)?;
        self.succeeded(ISSUE_MOVE, &data, "issueUpdate")
    }

    /// The label named `name` the team's issues may carry: the team's own, else the
    /// workspace's.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn label(&mut self, team_id: &str, name: &str) -> Result<Option<Label>, Error> {
        let labels: Vec<WireLabel> =
            self.all_pages(LABELS, json!({ "name": name }), &["issueLabels"])?;
        let mut usable: Vec<WireLabel> = labels
            .into_iter()
            .filter(|l| l.name == name)
            .filter(|l| l.team.as_ref().is_none_or(|t| t.id == team_id))
            .collect();
        // The team's own first.
        usable.sort_by_key(|l| l.team.is_none());
        Ok(usable.into_iter().next().map(|l| Label {
            id: l.id,
            name: l.name,
        }))
    }

    /// Creates the label `name` in the team.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn create_label(&mut self, team_id: &str, name: &str) -> Result<Label, Error> {
        let variables = json!({ "teamId": team_id, "name": name });
        let data = self.request(LABEL_CREATE, variables)?;
        self.succeeded(LABEL_CREATE, &data, "issueLabelCreate")?;
        self.parse(LABEL_CREATE, data, &["issueLabelCreate", "issueLabel"])
    }

    /// Adds the label `label_id` to the issue.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn add_label(&mut self, issue_id: &str, label_id: &str) -> Result<(), Error> {
        let variables = json!({ "id": issue_id, "labelId": label_id });
        let data = self.request(ISSUE_ADD_LABEL, variables)?;
        self.succeeded(ISSUE_ADD_LABEL, &data, "issueAddLabel")
    }
}

impl Client {
    /// Every page of the connection at `path` in `operation`'s data, by its `after` cursor.
    fn all_pages<T: DeserializeOwned>(
        &mut self,
        operation: Operation,
        mut variables: Value,
        path: &[&str],
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut cursors = BTreeSet::new();
        for pages in 1..=MAX_PAGES {
            let data = self.request(operation, variables.clone())?;
            let page: Page = self.parse(operation, data, path)?;
            for node in page.nodes {
                items.push(self.parse(operation, node, &[])?);
            }
            if !page.page_info.has_next_page {
                return Ok(items);
            }
            let Some(cursor) = page.page_info.end_cursor else {
                return Err(self.bad_answer(operation, "hasNextPage is true and endCursor null"));
            };
            if !cursors.insert(cursor.clone()) {
                return Err(Error::EndlessPages {
                    operation: operation.name,
                    url: self.url.clone(),
                    pages,
                    why: format!("the cursor {cursor:?} comes back"),
                });
            }
            variables["after"] = Value::String(cursor);
        }
        Err(Error::EndlessPages {
            operation: operation.name,
            url: self.url.clone(),
            pages: MAX_PAGES,
            why: format!("more than {MAX_PAGES} pages"),
        })
    }

    /// The value at `path` in `data`, as a `T`.
    fn parse<T: DeserializeOwned>(
        &self,
        operation: Operation,
        data: Value,
        path: &[&str],
    ) -> Result<T, Error> {
        let mut value = data;
        for (depth, key) in path.iter().enumerate() {
            value = match value {
                Value::Object(mut map) => map.remove(*key).unwrap_or(Value::Null),
                _ => Value::Null,
            };
            if value.is_null() {
                let at = path[..=depth].join(".");
                return Err(self.bad_answer(operation, &format!("no `{at}` in the data")));
            }
        }
        serde_json::from_value(value).map_err(|err| self.bad_answer(operation, &err.to_string()))
    }

    /// A mutation's `success`: false is Linear refusing it.
    fn succeeded(&self, operation: Operation, data: &Value, field: &str) -> Result<(), Error> {
        match data
            .get(field)
            .and_then(|f| f.get("success"))
            .and_then(Value::as_bool)
        {
            Some(true) => Ok(()),
            Some(false) => Err(Error::Refused {
                operation: operation.name,
                url: self.url.clone(),
                messages: format!("{field} answered success: false"),
            }),
            None => Err(self.bad_answer(operation, &format!("no `{field}.success` in the data"))),
        }
    }

    fn bad_answer(&self, operation: Operation, reason: &str) -> Error {
        Error::BadAnswer {
            operation: operation.name,
            url: self.url.clone(),
            reason: reason.to_owned(),
        }
    }

    /// `operation` with `variables`, tried once: its `data`, or the error sorted by what the
    /// caller does next (wait on a rate limit, retry a network error or a 5xx, stop on the
    /// rest).
    fn request(&mut self, operation: Operation, variables: Value) -> Result<Value, Error> {
        let query = if operation.query.contains("...IssueFields") {
            format!("{} {ISSUE_FIELDS}", operation.query)
        } else {
            operation.query.to_owned()
        };
        let body = json!({
            "query": query,
            "operationName": operation.name,
            "variables": variables,
        });
        let exchange = Exchange {
            agent: self.agent.clone(),
            method: "POST",
            url: self.url.clone(),
            headers: vec![("authorization", self.key.expose().to_owned())],
            body: Some(body.to_string()),
        };
        let described = format!("{} at {}", operation.name, self.url);
        let reply = match self.patience.send(exchange, || described.clone()) {
            Ok(Sent::Reply(reply)) => reply,
            Ok(Sent::Interrupted) => {
                return Err(Error::Interrupted {
                    operation: operation.name,
                    url: self.url.clone(),
                });
            }
            Err(reason) => {
                return Err(Error::Unreachable {
                    operation: operation.name,
                    url: self.url.clone(),
                    reason,
                });
            }
        };
        self.sort(operation, reply)
    }

    /// What an answer means: its data, or the error it says.
    fn sort(&self, operation: Operation, reply: RawReply) -> Result<Value, Error> {
        let status = reply.status;
        let parsed: Result<Value, _> = serde_json::from_str(&reply.body);
        let json = parsed.as_ref().ok();
        let errors: Vec<&Value> = json
            .and_then(|j| j.get("errors"))
            .and_then(Value::as_array)
            .map(|e| e.iter().collect())
            .unwrap_or_default();
        let has_code = |code: &str| {
            errors
                .iter()
                .any(|e| e.pointer("/extensions/code").and_then(Value::as_str) == Some(code))
        };
        let messages = errors
            .iter()
            .map(|e| {
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
            })
            .collect::<Vec<_>>()
            .join("; ");
        let url = self.url.clone();
        let name = operation.name;
        if status == 429 || has_code("RATELIMITED") {
            let now = self.clock.now();
            let wait = rate_limit_wait(&reply, now);
            return Err(Error::RateLimited {
                operation: name,
                url,
                wait,
                until: now + wait,
            });
        }
        if status == 401 || has_code("AUTHENTICATION_ERROR") {
            return Err(Error::BadKey {
                operation: name,
                url,
                message: if messages.is_empty() {
                    format!("HTTP {status}")
                } else {
                    messages
                },
            });
        }
        if status >= 500 {
            // A proxy's HTML error page is a failure to retry, not a bad answer.
            let said = if messages.is_empty() {
                String::new()
            } else {
                format!(": {messages}")
            };
            return Err(Error::Unreachable {
                operation: name,
                url,
                reason: format!("HTTP {status}{said}"),
            });
        }
        if !errors.is_empty() {
            return Err(Error::Refused {
                operation: name,
                url,
                messages,
            });
        }
        if !(200..300).contains(&status) {
            return Err(Error::Status {
                operation: name,
                url,
                status,
                message: reply.body.chars().take(200).collect(),
            });
        }
        let json = parsed.map_err(|err| self.bad_answer(operation, &format!("not JSON: {err}")))?;
        match json.get("data") {
            Some(data) if data.is_object() => Ok(data.clone()),
            _ => Err(self.bad_answer(operation, "no `data` object")),
        }
    }
}

/// How long to wait after a rate limit: until `x-ratelimit-requests-reset` (a Unix time in
/// milliseconds), else `x-ratelimit-complexity-reset`, at least a second and at most an hour;
/// a minute when neither is given.
fn rate_limit_wait(reply: &RawReply, now: std::time::SystemTime) -> Duration {
    let reset = ["x-ratelimit-requests-reset", "x-ratelimit-complexity-reset"]
        .iter()
        .find_map(|name| reply.header(name)?.trim().parse::<u64>().ok());
    match reset {
        Some(ms) => forge::wait_until(
            UNIX_EPOCH + Duration::from_millis(ms),
            now,
            LONGEST_RATE_LIMIT_WAIT,
        )
        .max(SHORTEST_RATE_LIMIT_WAIT),
        None => UNNAMED_RATE_LIMIT_WAIT,
    }
}

/// The API key from [`KEY_VARIABLE`], trimmed. `var` reads a variable (`std::env::var` in a
/// program, a map in a test).
///
/// # Errors
/// [`Error::NoKey`] when it is not set or blank.
pub fn key_from_env(var: impl Fn(&str) -> Option<String>) -> Result<Secret, Error> {
    var(KEY_VARIABLE)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .map(Secret::new)
        .ok_or(Error::NoKey)
}

/// The API address: [`URL_VARIABLE`] (a test server, a proxy), or [`DEFAULT_API_URL`].
///
/// # Errors
/// [`Error::BadApiUrl`] when the variable is set to something that is not http(s).
pub fn api_url_from_env(var: impl Fn(&str) -> Option<String>) -> Result<String, Error> {
    match var(URL_VARIABLE).filter(|v| !v.trim().is_empty()) {
        None => Ok(DEFAULT_API_URL.to_owned()),
        Some(value) => {
            let url = value.trim();
            if url.starts_with("https://") || url.starts_with("http://") {
                Ok(url.to_owned())
            } else {
                Err(Error::BadApiUrl { value })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(headers: &[(&str, &str)]) -> RawReply {
        RawReply {
            status: 400,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: String::new(),
        }
    }

    const NOW_MS: u64 = 1_800_000_000_000;

    fn now() -> std::time::SystemTime {
        UNIX_EPOCH + Duration::from_millis(NOW_MS)
    }

    #[test]
    fn a_rate_limit_waits_until_the_requests_reset_in_milliseconds() {
        let reset = (NOW_MS + 90_500).to_string();
        let limited = reply(&[("x-ratelimit-requests-reset", &reset)]);
        assert_eq!(
            rate_limit_wait(&limited, now()),
            Duration::from_millis(90_500)
        );
        let complexity = reply(&[("x-ratelimit-complexity-reset", &reset)]);
        assert_eq!(
            rate_limit_wait(&complexity, now()),
            Duration::from_millis(90_500)
        );
    }

    #[test]
    fn a_rate_limit_waits_a_second_at_least_an_hour_at_most_and_a_minute_unnamed() {
        let past = (NOW_MS - 5_000).to_string();
        let passed = reply(&[("x-ratelimit-requests-reset", &past)]);
        assert_eq!(rate_limit_wait(&passed, now()), SHORTEST_RATE_LIMIT_WAIT);
        let far = (NOW_MS + 86_400_000).to_string();
        let far = reply(&[("x-ratelimit-requests-reset", &far)]);
        assert_eq!(rate_limit_wait(&far, now()), LONGEST_RATE_LIMIT_WAIT);
        assert_eq!(rate_limit_wait(&reply(&[]), now()), UNNAMED_RATE_LIMIT_WAIT);
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_key_is_the_variable_trimmed_and_a_blank_one_is_none() {
        let set = [(KEY_VARIABLE, " lin_api_x\n")];
        assert_eq!(key_from_env(env(&set)).unwrap(), Secret::new("lin_api_x"));
        let blank = [(KEY_VARIABLE, "  ")];
        assert!(matches!(key_from_env(env(&blank)), Err(Error::NoKey)));
        assert!(matches!(key_from_env(env(&[])), Err(Error::NoKey)));
    }

    #[test]
    fn the_api_url_is_the_variable_or_linears() {
        assert_eq!(api_url_from_env(env(&[])).unwrap(), DEFAULT_API_URL);
        let set = [(URL_VARIABLE, "http://127.0.0.1:9/graphql")];
        assert_eq!(
            api_url_from_env(env(&set)).unwrap(),
            "http://127.0.0.1:9/graphql"
        );
        let bad = [(URL_VARIABLE, "api.linear.app")];
        let err = api_url_from_env(env(&bad)).unwrap_err().to_string();
        assert!(err.contains("LINEAR_API_URL=\"api.linear.app\""), "{err}");
    }
}
