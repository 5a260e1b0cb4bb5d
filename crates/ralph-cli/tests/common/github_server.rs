//! A fake GitHub for the task-source tests: a small HTTP/1.1 server on 127.0.0.1 that speaks
//! the REST endpoints ralph uses (list open issues by label, page by page with `link`; one
//! issue; its comments; post a comment; close; add labels), keeps issues, comments and labels in
//! memory, checks the token, says whose it is (`GET /user`: [`LOGIN`], who ralph's comments are
//! by), and records every request. A test can queue faults (a rate limit,
//! a 500) for the next matching request, and act as a person meanwhile (comment, close).
//! The HTTP itself is `http_server`'s. `ralph-github`'s own tests include this file too, and
//! `http_server.rs` beside it.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::github_pulls::{self, FakePull};
use super::http_server::{HttpServer, Reply, Request};

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
    pub number: u64,
    pub title: String,
    pub body: String,
    pub open: bool,
    pub labels: Vec<String>,
    pub created_at: String,
    pub author: String,
    pub pull_request: bool,
}

/// A comment as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeComment {
    pub id: u64,
    pub issue: u64,
    pub body: String,
    pub author: String,
    pub created_at: String,
}

#[derive(Default)]
struct State {
    issues: Vec<FakeIssue>,
    comments: Vec<FakeComment>,
    requests: Vec<Request>,
    /// Each: what a request line must contain, how many such requests to let through first,
    /// and the fault.
    faults: Vec<(String, usize, Fault)>,
    /// Close an issue, as a person, when a request whose line contains the text comes in.
    close_on: Vec<(String, u64)>,
    per_page_cap: Option<usize>,
    /// Every list of issues links to itself as its next page, as a broken proxy might.
    self_link: bool,
    clock: u64,
    /// Pull requests (`github_pulls`).
    pulls: Vec<FakePull>,
}

impl State {
    /// Strictly increasing times, one per thing created, so "oldest first" is well defined.
    fn tick(&mut self) -> String {
        self.clock += 1;
        let secs = self.clock;
        format!(
            "2026-01-01T{:02}:{:02}:{:02}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

/// The fake GitHub, on its own port until it is dropped.
pub struct GithubServer {
    http: HttpServer,
    state: Arc<Mutex<State>>,
}

impl GithubServer {
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let http = HttpServer::start(move |port, request| {
            let mut state = shared.lock().unwrap();
            let reply = answer(&mut state, port, &request);
            state.requests.push(request);
            drop(state);
            match reply {
                Answered::Reply(reply) => Some(reply),
                Answered::Hangup => None,
                Answered::Stall(time) => {
                    std::thread::sleep(time);
                    None
                }
            }
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
        let created_at = state.tick();
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
        for _ in 0..times {
            state.faults.push((matching.into(), skip, fault.clone()));
        }
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

    pub fn issue(&self, number: u64) -> FakeIssue {
        self.state.lock().unwrap().issues[number as usize - 1].clone()
    }

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
        let start = Instant::now();
        loop {
            let comments = self.comments(issue);
            if done(&comments) {
                return comments;
            }
            assert!(
                start.elapsed() < timeout,
                "timed out waiting on the comments of #{issue}: {comments:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn add_comment(state: &mut State, issue: u64, author: &str, body: &str) -> FakeComment {
    let created_at = state.tick();
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

/// GitHub's error shape: `{"message": ...}`.
fn message(status: u16, message: &str) -> Reply {
    Reply::json(status, &json!({"message": message}))
}

fn query(path: &str, name: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| decode(value))
    })
}

fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&value[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One page of `items` and its `link` header.
fn page(port: u16, path: &str, items: Vec<Value>, cap: Option<usize>) -> Reply {
    let per_page = query(path, "per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30usize)
        .min(cap.unwrap_or(usize::MAX))
        .max(1);
    let number: usize = query(path, "page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let total = items.len();
    let shown: Vec<Value> = items
        .into_iter()
        .skip((number - 1) * per_page)
        .take(per_page)
        .collect();
    let reply = Reply::json(200, &Value::Array(shown));
    if number * per_page < total {
        let base = path.split('?').next().unwrap_or(path);
        let mut query: Vec<String> = path
            .split_once('?')
            .map(|(_, q)| {
                q.split('&')
                    .filter(|p| !p.starts_with("page="))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        query.push(format!("page={}", number + 1));
        let next = format!(
            "<http://127.0.0.1:{port}{base}?{}>; rel=\"next\"",
            query.join("&")
        );
        return reply.header("link", &next);
    }
    reply
}

/// What the server does with a request.
enum Answered {
    Reply(Reply),
    Hangup,
    /// Nothing for this long (the state unlocked meanwhile), then a hang-up.
    Stall(Duration),
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
    let matching = state
        .faults
        .iter()
        .position(|(m, _, _)| line.contains(m.as_str()));
    let fault = match matching {
        Some(at) if state.faults[at].1 == 0 => Some(state.faults.remove(at).2),
        Some(_) => {
            // Every queued fault for this line lets one more request through.
            for (m, skip, _) in &mut state.faults {
                if line.contains(m.as_str()) {
                    *skip = skip.saturating_sub(1);
                }
            }
            None
        }
        None => None,
    };
    if let Some(fault) = fault {
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
        return github_pulls::route(&mut state.pulls, rest, request, |name| {
            query(&request.path, name)
        });
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
            let created_at = state.tick();
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
