//! A fake Linear for the task-source tests: a small GraphQL server on 127.0.0.1 that knows
//! ralph's operations by their names (`Viewer`, `Teams`, `TeamStates`, `Issues`, `Issue`,
//! `Comments`, `CommentCreate`, `IssueMove`, `Labels`, `LabelCreate`, `IssueAddLabel`), reads
//! their variables, keeps one workspace (two teams, a workflow, issues, comments, labels) in
//! memory, pages every connection by cursor, checks the API key and records every request. A
//! test can queue faults for the next requests of an operation (a rate limit, a 5xx, a
//! malformed answer, a hang-up) and act as a person meanwhile (comment, move an issue).
//! The HTTP itself is `http_server`'s. `ralph-linear`'s tests and the CLI's use it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::fake_api::{Answered, Clock, FaultQueue, wait_until};
use crate::http_server::{Ending, HttpServer, Reply, Request};

/// The API key the server accepts.
pub const KEY: &str = "lin_api_fake_key_for_tests";
/// The team the tests take their tasks from.
pub const TEAM: &str = "ENG";
/// The other team the key sees.
pub const OTHER_TEAM: &str = "OPS";
/// The account [`KEY`] acts for: the author of every comment ralph posts.
pub const VIEWER_ID: &str = "user-ralph";
/// Its name.
pub const VIEWER_NAME: &str = "ralph-bot";
/// The team's workflow, in board order: (id, name, type). Two `completed` states: a pass
/// moves to the first, `Done`.
pub const STATES: [(&str, &str, &str); 6] = [
    ("state-backlog", "Backlog", "backlog"),
    ("state-todo", "Todo", "unstarted"),
    ("state-doing", "In Progress", "started"),
    ("state-done", "Done", "completed"),
    ("state-shipped", "Shipped", "completed"),
    ("state-canceled", "Canceled", "canceled"),
];

/// What a queued fault answers.
#[derive(Debug, Clone)]
pub enum Fault {
    /// HTTP 400 with the `RATELIMITED` GraphQL error and `x-ratelimit-requests-reset` this
    /// many milliseconds from now, as Linear answers a spent limit.
    RateLimited(u64),
    /// HTTP 429 with no reset header.
    TooManyRequests,
    /// This status, with a GraphQL error.
    Status(u16),
    /// HTTP 200 whose body is not JSON.
    NotJson,
    /// HTTP 200 whose `data` lacks what was asked.
    NoData,
    /// A GraphQL error (not a rate limit): Linear refusing the request.
    GraphqlError(String),
    /// The connection closes with no answer at all.
    Hangup,
    /// No answer for this long, then the connection closes.
    Stall(Duration),
}

/// An issue as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeIssue {
    /// Its id (`issue-N`).
    pub id: String,
    /// What a person calls it (`ENG-N`).
    pub identifier: String,
    /// Its team's id.
    pub team: String,
    /// Its title.
    pub title: String,
    /// Its description (empty: `null` on the wire).
    pub description: String,
    /// The id of its workflow state (one of [`STATES`]).
    pub state: String,
    /// Its labels' names.
    pub labels: Vec<String>,
    /// Linear's priority: 0 none, 1 urgent ... 4 low.
    pub priority: u8,
    /// When it was opened, by the server's clock.
    pub created_at: String,
}

/// A comment as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeComment {
    /// Its id (`comment-N`).
    pub id: String,
    /// The id of the issue it is on.
    pub issue: String,
    /// Its text.
    pub body: String,
    /// Its author's id.
    pub user_id: String,
    /// Its author's name.
    pub user_name: String,
    /// When it was written, by the server's clock.
    pub created_at: String,
}

/// A label as the server keeps it: the team's id, or none for the workspace's.
#[derive(Debug, Clone)]
pub struct FakeLabel {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The team's id, or none for the workspace's label.
    pub team: Option<String>,
}

/// One request: its operation's name and variables.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The operation's name (`operationName`).
    pub operation: String,
    /// Its variables (`Null` when none).
    pub variables: Value,
    /// The HTTP request it came in.
    pub request: Request,
}

#[derive(Default)]
struct State {
    issues: Vec<FakeIssue>,
    comments: Vec<FakeComment>,
    labels: Vec<FakeLabel>,
    asked: Vec<Asked>,
    /// Keyed by the operation's name.
    faults: FaultQueue<Fault>,
    /// Move an issue (identifier) to a state (name), as a person, when a request of the
    /// operation comes in.
    move_on: Vec<(String, String, String)>,
    page_cap: Option<usize>,
    /// Every page of issues names the same cursor, as a broken proxy might.
    repeat_cursor: bool,
    /// The workflow has no state of type `completed`.
    no_completed: bool,
    clock: Clock,
}

/// The fake Linear, on its own port until it is dropped.
pub struct LinearServer {
    http: HttpServer,
    state: Arc<Mutex<State>>,
}

impl LinearServer {
    /// A fake Linear on a free port of 127.0.0.1, with the workspace's `ralph` label and no issues yet.
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            labels: vec![FakeLabel {
                id: "label-ralph".into(),
                name: "ralph".into(),
                team: None,
            }],
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        let http = HttpServer::start(move |_port, request| {
            let answered = answer(&mut shared.lock().unwrap(), request);
            answered.send()
        });
        Self { http, state }
    }

    /// The API address, for `LINEAR_API_URL`.
    pub fn url(&self) -> String {
        format!("{}/graphql", self.http.url())
    }

    /// Opens an issue (a person's) in the team, in `Todo`, with `labels` and Linear's
    /// `priority` (0 none, 1 urgent ... 4 low), returning its identifier.
    pub fn open_issue(
        &self,
        title: &str,
        description: &str,
        labels: &[&str],
        priority: u8,
    ) -> String {
        let mut state = self.state.lock().unwrap();
        let number = state.issues.len() + 1;
        let created_at = state.clock.tick(".000Z");
        let identifier = format!("{TEAM}-{number}");
        state.issues.push(FakeIssue {
            id: format!("issue-{number}"),
            identifier: identifier.clone(),
            team: team_id(TEAM),
            title: title.into(),
            description: description.into(),
            state: "state-todo".into(),
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
            priority,
            created_at,
        });
        identifier
    }

    /// A person moves the issue to the state named `state`.
    pub fn move_issue(&self, identifier: &str, state: &str) {
        let mut shared = self.state.lock().unwrap();
        move_to(&mut shared, identifier, state);
    }

    /// Moves the issue to `state`, as a person, when the first request of `operation` arrives
    /// (before it is answered).
    pub fn move_on(&self, operation: &str, identifier: &str, state: &str) {
        let mut shared = self.state.lock().unwrap();
        shared
            .move_on
            .push((operation.into(), identifier.into(), state.into()));
    }

    /// A person's comment on an issue.
    pub fn comment_as(&self, identifier: &str, user: &str, body: &str) {
        let mut state = self.state.lock().unwrap();
        let issue = issue_id(&state, identifier).expect("an issue of the fake");
        add_comment(&mut state, &issue, &format!("user-{user}"), user, body);
    }

    /// Answers the next request of `operation` with `fault`.
    pub fn fail_next(&self, operation: &str, fault: Fault) {
        self.fail_later(operation, 0, 1, fault);
    }

    /// Lets `skip` requests of `operation` through, then answers the `times` after them with
    /// `fault`.
    pub fn fail_later(&self, operation: &str, skip: usize, times: usize, fault: Fault) {
        let mut state = self.state.lock().unwrap();
        state.faults.push(operation, skip, times, fault);
    }

    /// Pages hold at most `n` nodes, whatever `first` asks.
    pub fn cap_pages(&self, n: usize) {
        self.state.lock().unwrap().page_cap = Some(n);
    }

    /// The team's workflow loses its `completed` states.
    pub fn drop_completed_states(&self) {
        self.state.lock().unwrap().no_completed = true;
    }

    /// From now on every page of issues says there is a next one, at the same cursor.
    pub fn repeat_cursors(&self) {
        self.state.lock().unwrap().repeat_cursor = true;
    }

    /// The issue `identifier` names, as it is now.
    pub fn issue(&self, identifier: &str) -> FakeIssue {
        let state = self.state.lock().unwrap();
        state
            .issues
            .iter()
            .find(|i| i.identifier == identifier)
            .cloned()
            .expect("an issue of the fake")
    }

    /// The name of the issue's state.
    pub fn state_of(&self, identifier: &str) -> &'static str {
        let issue = self.issue(identifier);
        STATES
            .iter()
            .find(|(id, _, _)| *id == issue.state)
            .map(|(_, name, _)| *name)
            .unwrap_or("?")
    }

    /// The comments on the issue `identifier` names, oldest first.
    pub fn comments(&self, identifier: &str) -> Vec<FakeComment> {
        let state = self.state.lock().unwrap();
        let Some(issue) = issue_id(&state, identifier) else {
            return Vec::new();
        };
        state
            .comments
            .iter()
            .filter(|c| c.issue == issue)
            .cloned()
            .collect()
    }

    /// A label a person made: the workspace's (`team` none) or a team's (by key).
    pub fn make_label(&self, name: &str, team: Option<&str>) {
        let mut state = self.state.lock().unwrap();
        let id = format!("label-{}", state.labels.len() + 1);
        state.labels.push(FakeLabel {
            id,
            name: name.into(),
            team: team.map(team_id),
        });
    }

    /// Every label, the workspace's and the teams'.
    pub fn labels(&self) -> Vec<FakeLabel> {
        self.state.lock().unwrap().labels.clone()
    }

    /// Every request, in order.
    pub fn asked(&self) -> Vec<Asked> {
        self.state.lock().unwrap().asked.clone()
    }

    /// The names of the operations asked, in order.
    pub fn operations(&self) -> Vec<String> {
        self.asked().into_iter().map(|a| a.operation).collect()
    }

    /// Waits (up to `timeout`) until `done` holds for the server's comments on the issue.
    pub fn wait_for_comments(
        &self,
        identifier: &str,
        timeout: Duration,
        done: impl Fn(&[FakeComment]) -> bool,
    ) -> Vec<FakeComment> {
        wait_until(
            &format!("the comments of {identifier}"),
            timeout,
            || self.comments(identifier),
            |comments| done(comments),
        )
    }
}

fn team_id(key: &str) -> String {
    format!("team-{}", key.to_lowercase())
}

fn issue_id(state: &State, id_or_identifier: &str) -> Option<String> {
    state
        .issues
        .iter()
        .find(|i| i.id == id_or_identifier || i.identifier == id_or_identifier)
        .map(|i| i.id.clone())
}

fn move_to(state: &mut State, identifier: &str, name: &str) {
    let target = STATES
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(id, _, _)| (*id).to_owned())
        .expect("a state of the fake's workflow");
    let issue = state
        .issues
        .iter_mut()
        .find(|i| i.identifier == identifier)
        .expect("an issue of the fake");
    issue.state = target;
}

fn add_comment(
    state: &mut State,
    issue: &str,
    user_id: &str,
    user_name: &str,
    body: &str,
) -> FakeComment {
    let created_at = state.clock.tick(".000Z");
    let comment = FakeComment {
        id: format!("comment-{}", state.comments.len() + 1),
        issue: issue.into(),
        body: body.into(),
        user_id: user_id.into(),
        user_name: user_name.into(),
        created_at,
    };
    state.comments.push(comment.clone());
    comment
}

fn state_json(id: &str) -> Value {
    let (position, (id, name, kind)) = STATES
        .iter()
        .enumerate()
        .find(|(_, (i, _, _))| *i == id)
        .expect("a state of the fake's workflow");
    json!({"id": id, "name": name, "type": kind, "position": position as f64})
}

fn issue_json(state: &State, issue: &FakeIssue) -> Value {
    let labels: Vec<Value> = issue
        .labels
        .iter()
        .map(|name| {
            let id = state
                .labels
                .iter()
                .find(|l| &l.name == name)
                .map_or_else(|| format!("label-{name}"), |l| l.id.clone());
            json!({"id": id, "name": name})
        })
        .collect();
    json!({
        "id": issue.id,
        "identifier": issue.identifier,
        "title": issue.title,
        "description": if issue.description.is_empty() { Value::Null } else { json!(issue.description) },
        "url": format!("https://linear.app/acme/issue/{}", issue.identifier.to_lowercase()),
        "priority": issue.priority,
        "createdAt": issue.created_at,
        "state": state_json(&issue.state),
        "labels": {"nodes": labels},
    })
}

fn comment_json(comment: &FakeComment) -> Value {
    json!({
        "id": comment.id,
        "body": comment.body,
        "createdAt": comment.created_at,
        "url": format!("https://linear.app/acme/comment/{}", comment.id),
        "user": {"id": comment.user_id, "name": comment.user_name},
    })
}

/// A GraphQL error answer with `status`.
fn errors(status: u16, message: &str, code: &str) -> Reply {
    Reply::json(
        status,
        &json!({"errors": [{"message": message, "extensions": {"code": code}}]}),
    )
}

/// One page of `nodes` after the cursor `after`, at most `first` (or the cap) long.
fn connection(state: &State, nodes: Vec<Value>, variables: &Value, first: usize) -> Value {
    let start: usize = variables["after"]
        .as_str()
        .and_then(|c| c.strip_prefix("cursor-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let size = first.min(state.page_cap.unwrap_or(usize::MAX)).max(1);
    let total = nodes.len();
    let shown: Vec<Value> = nodes.into_iter().skip(start).take(size).collect();
    let end = start + shown.len();
    let (more, cursor) = if state.repeat_cursor {
        (true, "cursor-0".to_owned())
    } else {
        (end < total, format!("cursor-{end}"))
    };
    json!({"nodes": shown, "pageInfo": {"hasNextPage": more, "endCursor": cursor}})
}

/// The answer to one HTTP request.
fn answer(state: &mut State, request: Request) -> Answered {
    let body = request.json();
    let operation = body["operationName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let variables = body.get("variables").cloned().unwrap_or(Value::Null);
    state.asked.push(Asked {
        operation: operation.clone(),
        variables: variables.clone(),
        request: request.clone(),
    });
    if let Some(at) = state.move_on.iter().position(|(op, _, _)| *op == operation) {
        let (_, identifier, to) = state.move_on.remove(at);
        move_to(state, &identifier, &to);
    }
    if let Some(fault) = state.faults.take(|key| key == operation) {
        return fault_reply(fault);
    }
    if request.header("authorization") != Some(KEY) {
        return Answered::Reply(errors(
            400,
            "Authentication required, not authenticated",
            "AUTHENTICATION_ERROR",
        ));
    }
    Answered::Reply(match operate(state, &operation, &variables) {
        Ok(data) => Reply::json(200, &json!({"data": data})),
        Err(message) => errors(400, &message, "INVALID_INPUT"),
    })
}

fn fault_reply(fault: Fault) -> Answered {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    Answered::Reply(match fault {
        Fault::RateLimited(ms) => errors(400, "Rate limit exceeded", "RATELIMITED")
            .header("x-ratelimit-requests-remaining", "0")
            .header("x-ratelimit-requests-reset", &(now_ms + ms).to_string()),
        Fault::TooManyRequests => Reply::json(429, &json!({"error": "too many requests"})),
        Fault::Status(status) => errors(status, "Internal server error", "INTERNAL_SERVER_ERROR"),
        Fault::NotJson => Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html>a captive portal</html>".to_vec(),
            ending: Ending::Whole,
        },
        Fault::NoData => Reply::json(200, &json!({"data": {}})),
        Fault::GraphqlError(message) => errors(400, &message, "INVALID_INPUT"),
        Fault::Hangup => return Answered::Hangup,
        Fault::Stall(time) => return Answered::Stall(time),
    })
}

/// The `data` of a known operation, or the error message of a refused one.
fn operate(state: &mut State, operation: &str, v: &Value) -> Result<Value, String> {
    let text = |name: &str| v[name].as_str().unwrap_or_default().to_owned();
    match operation {
        "Viewer" => Ok(json!({"viewer": {"id": VIEWER_ID, "name": VIEWER_NAME}})),
        "Teams" => {
            let teams = [TEAM, OTHER_TEAM]
                .iter()
                .map(|k| json!({"id": team_id(k), "key": k, "name": format!("{k} team")}))
                .collect();
            Ok(json!({"teams": connection(state, teams, v, 100)}))
        }
        "TeamStates" => {
            if text("teamId") != team_id(TEAM) && text("teamId") != team_id(OTHER_TEAM) {
                return Err("Entity not found: Team".into());
            }
            let states = STATES
                .iter()
                .filter(|(_, _, kind)| !(state.no_completed && *kind == "completed"))
                .map(|(id, _, _)| state_json(id))
                .collect();
            Ok(json!({"team": {"states": connection(state, states, v, 100)}}))
        }
        "Issues" => {
            let filter = &v["filter"];
            let team = filter.pointer("/team/id/eq").and_then(Value::as_str);
            let kind = filter.pointer("/state/type/eq").and_then(Value::as_str);
            let label = filter
                .pointer("/labels/some/name/eq")
                .and_then(Value::as_str);
            let issues = state
                .issues
                .iter()
                .filter(|i| team.is_none_or(|t| i.team == t))
                .filter(|i| kind.is_none_or(|k| state_json(&i.state)["type"] == k))
                .filter(|i| label.is_none_or(|l| i.labels.iter().any(|n| n == l)))
                .map(|i| issue_json(state, i))
                .collect();
            Ok(json!({"issues": connection(state, issues, v, 100)}))
        }
        "Issue" => {
            let id = issue_id(state, &text("id")).ok_or("Entity not found: Issue")?;
            let issue = state.issues.iter().find(|i| i.id == id).unwrap();
            Ok(json!({"issue": issue_json(state, issue)}))
        }
        "Comments" => {
            let id = issue_id(state, &text("id")).ok_or("Entity not found: Issue")?;
            let comments = state
                .comments
                .iter()
                .filter(|c| c.issue == id)
                .map(comment_json)
                .collect();
            Ok(json!({"issue": {"comments": connection(state, comments, v, 100)}}))
        }
        "CommentCreate" => {
            let id = issue_id(state, &text("issueId")).ok_or("Entity not found: Issue")?;
            let comment = add_comment(state, &id, VIEWER_ID, VIEWER_NAME, &text("body"));
            Ok(json!({"commentCreate": {"success": true, "comment": comment_json(&comment)}}))
        }
        "IssueMove" => {
            let id = issue_id(state, &text("id")).ok_or("Entity not found: Issue")?;
            let target = text("stateId");
            if !STATES.iter().any(|(s, _, _)| *s == target) {
                return Err("Entity not found: WorkflowState".into());
            }
            let issue = state.issues.iter_mut().find(|i| i.id == id).unwrap();
            issue.state = target;
            Ok(json!({"issueUpdate": {"success": true}}))
        }
        "Labels" => {
            let name = text("name");
            let labels = state
                .labels
                .iter()
                .filter(|l| l.name == name)
                .map(|l| {
                    let team = l.team.as_ref().map(|t| json!({"id": t}));
                    json!({"id": l.id, "name": l.name, "team": team})
                })
                .collect();
            Ok(json!({"issueLabels": connection(state, labels, v, 100)}))
        }
        "LabelCreate" => {
            let name = text("name");
            if state.labels.iter().any(|l| l.name == name) {
                return Err(format!("a label named {name} already exists"));
            }
            let label = FakeLabel {
                id: format!("label-{}", state.labels.len() + 1),
                name: name.clone(),
                team: Some(text("teamId")),
            };
            state.labels.push(label.clone());
            Ok(
                json!({"issueLabelCreate": {"success": true, "issueLabel": {"id": label.id, "name": name}}}),
            )
        }
        "IssueAddLabel" => {
            let id = issue_id(state, &text("id")).ok_or("Entity not found: Issue")?;
            let label_id = text("labelId");
            let name = state
                .labels
                .iter()
                .find(|l| l.id == label_id)
                .map(|l| l.name.clone())
                .ok_or("Entity not found: IssueLabel")?;
            let issue = state.issues.iter_mut().find(|i| i.id == id).unwrap();
            if !issue.labels.contains(&name) {
                issue.labels.push(name);
            }
            Ok(json!({"issueAddLabel": {"success": true}}))
        }
        other => Err(format!("Unknown operation {other:?}")),
    }
}
