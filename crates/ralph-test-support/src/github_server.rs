//! A fake GitHub for the task-source tests: a small HTTP/1.1 server on 127.0.0.1 that speaks
//! the REST endpoints ralph uses (list open issues by label, page by page with `link`; one
//! issue; its comments; post a comment; close; add labels), keeps issues, comments and labels in
//! memory, checks the token, says whose it is (`GET /user`: [`LOGIN`], who ralph's comments are
//! by), and records every request. A test can queue faults (a rate limit,
//! a 500) for the next matching request, and act as a person meanwhile (comment, close).
//! The HTTP itself is `http_server`'s. `ralph-github`'s tests and the CLI's use it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::fake_api::{Answered, Clock, FaultQueue, Page, message, wait_until};
use crate::github_pulls;
pub use crate::github_pulls::FakePull;
use crate::http_server::{HttpServer, Reply, Request, query};

/// The token the server accepts.
pub const TOKEN: &str = "ghp_fake_token_for_tests";
/// The repository it serves.
pub const REPO: &str = "acme/widgets";
/// The account [`TOKEN`] acts for: the author of every comment ralph posts.
pub const LOGIN: &str = "ralph-bot";

/// What a queued fault answers.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 403 with `x-ratelimit-remaining: 0` and a reset this many seconds from now.
    RateLimitReset(u64),
    /// 429 with `retry-after`.
    RetryAfter(u64),
    /// This status, with a JSON message.
    Status(u16),
    /// The connection closes with no answer at all.
    Hangup,
    /// No answer for this long, then the connection closes.
    Stall(Duration),
}

/// An issue as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeIssue {
    /// Its number, from 1.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its body (empty: `null` on the wire).
    pub body: String,
    /// Whether it is open.
    pub open: bool,
    /// Its labels' names.
    pub labels: Vec<String>,
    /// When it was opened, by the server's clock.
    pub created_at: String,
    /// Who opened it.
    pub author: String,
    /// Whether it is a pull request (which GitHub lists among issues).
    pub pull_request: bool,
}

/// A comment as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeComment {
    /// Its id, from 1000.
    pub id: u64,
    /// The issue it is on.
    pub issue: u64,
    /// Its text.
    pub body: String,
    /// Who wrote it.
    pub author: String,
    /// When it was written, by the server's clock.
    pub created_at: String,
}

#[derive(Default)]
struct State {
    issues: Vec<FakeIssue>,
    comments: Vec<FakeComment>,
    requests: Vec<Request>,
    /// Keyed by what a request line must contain.
    faults: FaultQueue<Fault>,
    /// Close an issue, as a person, when a request whose line contains the text comes in.
    close_on: Vec<(String, u64)>,
    per_page_cap: Option<usize>,
    /// Every list of issues links to itself as its next page, as a broken proxy might.
    self_link: bool,
    clock: Clock,
    /// Pull requests (`github_pulls`).
    pulls: Vec<FakePull>,
}

/// The fake GitHub, on its own port until it is dropped.
pub struct GithubServer {
    http: HttpServer,
    state: Arc<Mutex<State>>,
}

impl GithubServer {
    /// A fake GitHub on a free port of 127.0.0.1, with no issues yet.
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let http = HttpServer::start(move |port, request| {
            let mut state = shared.lock().unwrap();
            let answered = answer(&mut state, port, &request);
            state.requests.push(request);
            drop(state);
            answered.send()
        });
        Self { http, state }
    }

    /// The API address, for `GITHUB_API_URL`.
    pub fn url(&self) -> String {
        self.http.url()
    }

    /// Opens an issue (a person's), returning its number.
    pub fn open_issue(&self, title: &str, body: &str, labels: &[&str]) -> u64 {
        let mut state = self.state.lock().unwrap();
        let number = state.issues.len() as u64 + 1;
        let created_at = state.clock.tick("Z");
        state.issues.push(FakeIssue {
            number,
            title: title.into(),
            body: body.into(),
            open: true,
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
            created_at,
            author: "a-person".into(),
            pull_request: false,
        });
        number
    }

    /// Opens a pull request, which the issues endpoint lists too.
    pub fn open_pull_request(&self, title: &str, labels: &[&str]) -> u64 {
        let number = self.open_issue(title, "", labels);
        self.state.lock().unwrap().issues[number as usize - 1].pull_request = true;
        number
    }

    /// A person's comment on an issue.
    pub fn comment_as(&self, issue: u64, author: &str, body: &str) {
        let mut state = self.state.lock().unwrap();
        add_comment(&mut state, issue, author, body);
    }

    /// A person deletes comment `id`.
    pub fn delete_comment(&self, id: u64) {
        self.state.lock().unwrap().comments.retain(|c| c.id != id);
    }

    /// A person closes the issue.
    pub fn close(&self, issue: u64) {
        self.state.lock().unwrap().issues[issue as usize - 1].open = false;
    }

    /// Closes `issue`, as a person, when the first request whose `METHOD path` contains
    /// `trigger` arrives (before it is answered).
    pub fn close_on(&self, trigger: &str, issue: u64) {
        let mut state = self.state.lock().unwrap();
        state.close_on.push((trigger.into(), issue));
    }

    /// Answers the next request whose `METHOD path` contains `matching` with `fault`.
    pub fn fail_next(&self, matching: &str, fault: Fault) {
        self.fail_later(matching, 0, 1, fault);
    }

    /// Lets `skip` requests whose `METHOD path` contains `matching` through, then answers the
    /// `times` after them with `fault`.
    pub fn fail_later(&self, matching: &str, skip: usize, times: usize, fault: Fault) {
        let mut state = self.state.lock().unwrap();
        state.faults.push(matching, skip, times, fault);
    }

    /// Drops the faults still queued: GitHub answers again.
    pub fn clear_faults(&self) {
        self.state.lock().unwrap().faults.clear();
    }

    /// Pages hold at most `n` items, whatever `per_page` asks.
    pub fn cap_pages(&self, n: usize) {
        self.state.lock().unwrap().per_page_cap = Some(n);
    }

    /// From now on every list of issues names itself as its next page.
    pub fn link_pages_to_themselves(&self) {
        self.state.lock().unwrap().self_link = true;
    }

    /// Issue `number` as it is now.
    pub fn issue(&self, number: u64) -> FakeIssue {
        self.state.lock().unwrap().issues[number as usize - 1].clone()
    }

    /// The comments on `issue`, oldest first.
    pub fn comments(&self, issue: u64) -> Vec<FakeComment> {
        let state = self.state.lock().unwrap();
        state
            .comments
            .iter()
            .filter(|c| c.issue == issue)
            .cloned()
            .collect()
    }

    /// The pull requests, oldest first.
    pub fn pulls(&self) -> Vec<FakePull> {
        self.state.lock().unwrap().pulls.clone()
    }

    /// A person closes pull request `number`, merged or not.
    pub fn close_pull(&self, number: u64, merged: bool) {
        let mut state = self.state.lock().unwrap();
        if let Some(pull) = state.pulls.iter_mut().find(|p| p.number == number) {
            pull.state = "closed".to_owned();
            pull.merged = merged;
        }
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Waits (up to `timeout`) until `done` holds for the server's comments on `issue`.
    pub fn wait_for_comments(
        &self,
        issue: u64,
        timeout: Duration,
        done: impl Fn(&[FakeComment]) -> bool,
    ) -> Vec<FakeComment> {
        wait_until(
            &format!("the comments of #{issue}"),
            timeout,
            || self.comments(issue),
            |comments| done(comments),
        )
    }
}

fn add_comment(state: &mut State, issue: u64, author: &str, body: &str) -> FakeComment {
    let created_at = state.clock.tick("Z");
    let comment = FakeComment {
        id: 1000 + state.comments.len() as u64,
        issue,
        body: body.into(),
        author: author.into(),
        created_at,
    };
    state.comments.push(comment.clone());
    comment
}

fn issue_json(port: u16, issue: &FakeIssue) -> Value {
    let mut value = json!({
        "number": issue.number,
        "title": issue.title,
        "body": if issue.body.is_empty() { Value::Null } else { json!(issue.body) },
        "html_url": format!("https://github.com/{REPO}/issues/{}", issue.number),
        "url": format!("http://127.0.0.1:{port}/repos/{REPO}/issues/{}", issue.number),
        "state": if issue.open { "open" } else { "closed" },
        "created_at": issue.created_at,
        "labels": issue.labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
        "user": {"login": issue.author},
    });
    if issue.pull_request {
        value["pull_request"] = json!({"url": "https://example.invalid/pull"});
    }
    value
}

fn comment_json(comment: &FakeComment) -> Value {
    json!({
        "id": comment.id,
        "body": comment.body,
        "user": {"login": comment.author},
        "created_at": comment.created_at,
        "html_url": format!(
            "https://github.com/{REPO}/issues/{}#issuecomment-{}",
            comment.issue, comment.id
        ),
    })
}

/// One page of `items` and its `link` header.
fn page(port: u16, path: &str, items: Vec<Value>, cap: Option<usize>) -> Reply {
    let page = Page::of(path, items, 30, cap);
    let next = page
        .has_next()
        .then(|| page.next_link(&format!("http://127.0.0.1:{port}"), path));
    let reply = Reply::json(200, &Value::Array(page.items));
    match next {
        Some(link) => reply.header("link", &link),
        None => reply,
    }
}

/// The answer to `request`.
fn answer(state: &mut State, port: u16, request: &Request) -> Answered {
    let line = request.line();
    if let Some(at) = state
        .close_on
        .iter()
        .position(|(t, _)| line.contains(t.as_str()))
    {
        let (_, issue) = state.close_on.remove(at);
        state.issues[issue as usize - 1].open = false;
    }
    if let Some(fault) = state.faults.take(|key| line.contains(key)) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        return match fault {
            Fault::RateLimitReset(secs) => Answered::Reply(
                message(403, "API rate limit exceeded for user ID 1.")
                    .header("x-ratelimit-remaining", "0")
                    .header("x-ratelimit-reset", &(now + secs).to_string()),
            ),
            Fault::RetryAfter(secs) => Answered::Reply(
                message(429, "You have exceeded a secondary rate limit.")
                    .header("retry-after", &secs.to_string()),
            ),
            Fault::Status(status) => Answered::Reply(message(status, "Server Error")),
            Fault::Hangup => Answered::Hangup,
            Fault::Stall(time) => Answered::Stall(time),
        };
    }
    Answered::Reply(route(state, port, request))
}

/// The API's answer to `request`.
fn route(state: &mut State, port: u16, request: &Request) -> Reply {
    if request.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
        return message(401, "Bad credentials");
    }
    let path = request.path.split('?').next().unwrap_or_default();
    if request.method == "GET" && path == "/user" {
        return Reply::json(200, &json!({"login": LOGIN, "type": "User"}));
    }
    if let Some(rest) = path.strip_prefix(&format!("/repos/{REPO}/pulls")) {
        return github_pulls::route(&mut state.pulls, rest, request);
    }
    let Some(rest) = path.strip_prefix(&format!("/repos/{REPO}/issues")) else {
        return message(404, "Not Found");
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let number = parts.first().and_then(|n| n.parse::<u64>().ok());
    if number.is_some_and(|n| n == 0 || n as usize > state.issues.len()) {
        return message(404, "Not Found");
    }
    match (request.method.as_str(), number, parts.get(1).copied()) {
        ("GET", None, None) => {
            let wanted: Vec<String> = query(&request.path, "labels")
                .map(|l| l.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            let items = state
                .issues
                .iter()
                .filter(|i| i.open && wanted.iter().all(|w| i.labels.contains(w)))
                .map(|i| issue_json(port, i))
                .collect();
            let reply = page(port, &request.path, items, state.per_page_cap);
            match state.self_link {
                true => reply.header(
                    "link",
                    &format!("<http://127.0.0.1:{port}{}>; rel=\"next\"", request.path),
                ),
                false => reply,
            }
        }
        ("GET", Some(n), None) => {
            Reply::json(200, &issue_json(port, &state.issues[n as usize - 1]))
        }
        ("POST", None, None) => {
            let body = request.json();
            let Some(title) = body.get("title").and_then(Value::as_str) else {
                return message(422, "Validation Failed: title");
            };
            let number = state.issues.len() as u64 + 1;
            let created_at = state.clock.tick("Z");
            state.issues.push(FakeIssue {
                number,
                title: title.to_owned(),
                body: body["body"].as_str().unwrap_or_default().to_owned(),
                open: true,
                labels: body["labels"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l.as_str().map(str::to_owned))
                    .collect(),
                created_at,
                author: LOGIN.into(),
                pull_request: false,
            });
            Reply::json(201, &issue_json(port, &state.issues[number as usize - 1]))
        }
        ("PATCH", Some(n), None) => {
            let body = request.json();
            let issue = &mut state.issues[n as usize - 1];
            if let Some(s) = body.get("state").and_then(Value::as_str) {
                issue.open = s == "open";
            }
            Reply::json(200, &issue_json(port, issue))
        }
        ("GET", Some(n), Some("comments")) => {
            let items = state
                .comments
                .iter()
                .filter(|c| c.issue == n)
                .map(comment_json)
                .collect();
            page(port, &request.path, items, state.per_page_cap)
        }
        ("POST", Some(n), Some("comments")) => {
            let Some(body) = request
                .json()
                .get("body")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return message(422, "Validation Failed: body");
            };
            let comment = add_comment(state, n, LOGIN, &body);
            Reply::json(201, &comment_json(&comment))
        }
        ("POST", Some(n), Some("labels")) => {
            let body = request.json();
            let issue = &mut state.issues[n as usize - 1];
            for label in body["labels"].as_array().into_iter().flatten() {
                if let Some(label) = label.as_str() {
                    if !issue.labels.iter().any(|l| l == label) {
                        issue.labels.push(label.to_owned());
                    }
                }
            }
            let labels: Vec<Value> = issue.labels.iter().map(|l| json!({"name": l})).collect();
            Reply::json(200, &Value::Array(labels))
        }
        _ => message(404, "Not Found"),
    }
}
