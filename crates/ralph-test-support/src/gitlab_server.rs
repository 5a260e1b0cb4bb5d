//! A fake GitLab for the task-source and merge-request tests: a small HTTP/1.1 server on
//! 127.0.0.1 that speaks the REST (v4) endpoints ralph uses (a project's open issues by label,
//! page by page with `link` and `x-next-page`; one issue; its notes; a note; closing and
//! labelling by `PUT`; merge requests by source branch, opened, updated), keeps them in memory,
//! checks the `PRIVATE-TOKEN`, says whose it is (`GET /user`: [`USERNAME`]), and records every
//! request. A test queues faults (a rate limit, a 5xx, a malformed answer, a hang-up) for the
//! next matching request, and acts as a person meanwhile (a note, closing an issue). The HTTP
//! itself is `http_server`'s. `ralph-gitlab`'s tests and the CLI's use it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::fake_api::{Clock, FaultQueue, Page, message, wait_until};
use crate::http_server::{Ending, HttpServer, Reply, Request, query};

/// The token the server accepts (as `PRIVATE-TOKEN`).
pub const TOKEN: &str = "glpat-fake-token-for-tests";
/// The project it serves: in a subgroup, so its id is `acme%2Ftools%2Fwidgets`.
pub const PROJECT: &str = "acme/tools/widgets";
/// The project's path as the API's id.
pub const PROJECT_ID: &str = "acme%2Ftools%2Fwidgets";
/// The account [`TOKEN`] acts for: the author of every note ralph posts.
pub const USERNAME: &str = "ralph-bot";

/// What a queued fault answers.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `ratelimit-remaining: 0` and a `ratelimit-reset` this many seconds from now
    /// (GitLab's headers; no `retry-after`).
    RateLimitReset(u64),
    /// 429 with `retry-after`.
    RetryAfter(u64),
    /// This status, with a JSON message.
    Status(u16),
    /// A 200 whose body is not JSON (an HTML page from a proxy).
    Malformed,
    /// The connection closes with no answer at all.
    Hangup,
}

/// An issue as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeIssue {
    /// Its number in the project, from 1.
    pub iid: u64,
    /// Its title.
    pub title: String,
    /// Its description (empty: `null` on the wire).
    pub description: String,
    /// Whether it is open (`opened`).
    pub open: bool,
    /// Its labels.
    pub labels: Vec<String>,
    /// When it was opened, by the server's clock.
    pub created_at: String,
}

/// A note as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeNote {
    /// Its id, from 5000.
    pub id: u64,
    /// The issue it is on.
    pub issue: u64,
    /// Its text.
    pub body: String,
    /// Who wrote it.
    pub author: String,
    /// When it was written, by the server's clock.
    pub created_at: String,
    /// Whether GitLab wrote it (closing, a label added), not a person.
    pub system: bool,
}

/// A merge request as the server keeps it.
#[derive(Debug, Clone)]
pub struct FakeMergeRequest {
    /// Its number in the project, from 1.
    pub iid: u64,
    /// Its title (`Draft: ...` for a draft).
    pub title: String,
    /// Its description.
    pub description: String,
    /// The branch it would merge.
    pub source_branch: String,
    /// The branch it would merge into.
    pub target_branch: String,
    /// `opened`, `closed` or `merged`.
    pub state: String,
}

#[derive(Default)]
struct State {
    issues: Vec<FakeIssue>,
    notes: Vec<FakeNote>,
    merge_requests: Vec<FakeMergeRequest>,
    requests: Vec<Request>,
    /// Keyed by what a request line must contain.
    faults: FaultQueue<Fault>,
    /// Close an issue, as a person, when a request whose line contains the text comes in.
    close_on: Vec<(String, u64)>,
    per_page_cap: Option<usize>,
    /// Pages name their next only by `x-next-page`, without a `link` header.
    page_numbers_only: bool,
    /// The next page is named on another host.
    foreign_next: bool,
    clock: Clock,
}

impl State {
    fn close(&mut self, iid: u64, by: &str) {
        if self.issues[iid as usize - 1].open {
            self.issues[iid as usize - 1].open = false;
            add_note(self, iid, by, "closed", true);
        }
    }
}

/// The fake GitLab, on its own port until it is dropped.
pub struct GitlabServer {
    http: HttpServer,
    state: Arc<Mutex<State>>,
}

impl GitlabServer {
    /// A fake GitLab on a free port of 127.0.0.1, with no issues yet.
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let http = HttpServer::start(move |port, request| {
            let mut state = shared.lock().unwrap();
            let reply = answer(&mut state, port, &request);
            state.requests.push(request);
            reply
        });
        Self { http, state }
    }

    /// The API address, for `GITLAB_API_URL` (as a self-managed instance's `/api/v4`).
    pub fn url(&self) -> String {
        format!("{}/api/v4", self.http.url())
    }

    /// Opens an issue (a person's), returning its number in the project.
    pub fn open_issue(&self, title: &str, description: &str, labels: &[&str]) -> u64 {
        let mut state = self.state.lock().unwrap();
        let iid = state.issues.len() as u64 + 1;
        let created_at = state.clock.tick(".000Z");
        state.issues.push(FakeIssue {
            iid,
            title: title.into(),
            description: description.into(),
            open: true,
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
            created_at,
        });
        iid
    }

    /// A person's note on an issue.
    pub fn note_as(&self, issue: u64, author: &str, body: &str) {
        let mut state = self.state.lock().unwrap();
        add_note(&mut state, issue, author, body, false);
    }

    /// A person closes the issue (GitLab adds its system note).
    pub fn close(&self, issue: u64) {
        self.state.lock().unwrap().close(issue, "a-person");
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

    /// Pages hold at most `n` items, whatever `per_page` asks.
    pub fn cap_pages(&self, n: usize) {
        self.state.lock().unwrap().per_page_cap = Some(n);
    }

    /// Pages name their next by `x-next-page` only.
    pub fn page_numbers_only(&self) {
        self.state.lock().unwrap().page_numbers_only = true;
    }

    /// Pages name their next on another host.
    pub fn next_page_elsewhere(&self) {
        self.state.lock().unwrap().foreign_next = true;
    }

    /// A merge request opened by a person (or an earlier run), in `state`.
    pub fn add_merge_request(&self, source: &str, target: &str, title: &str, state: &str) -> u64 {
        let mut s = self.state.lock().unwrap();
        let iid = s.merge_requests.len() as u64 + 1;
        s.merge_requests.push(FakeMergeRequest {
            iid,
            title: title.into(),
            description: String::new(),
            source_branch: source.into(),
            target_branch: target.into(),
            state: state.into(),
        });
        iid
    }

    /// The merge requests, oldest first.
    pub fn merge_requests(&self) -> Vec<FakeMergeRequest> {
        self.state.lock().unwrap().merge_requests.clone()
    }

    /// Issue `iid` as it is now.
    pub fn issue(&self, iid: u64) -> FakeIssue {
        self.state.lock().unwrap().issues[iid as usize - 1].clone()
    }

    /// The notes on `issue` people and ralph wrote (GitLab's system notes left out).
    pub fn notes(&self, issue: u64) -> Vec<FakeNote> {
        let state = self.state.lock().unwrap();
        state
            .notes
            .iter()
            .filter(|n| n.issue == issue && !n.system)
            .cloned()
            .collect()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Waits (up to `timeout`) until `done` holds for the notes on `issue`.
    pub fn wait_for_notes(
        &self,
        issue: u64,
        timeout: Duration,
        done: impl Fn(&[FakeNote]) -> bool,
    ) -> Vec<FakeNote> {
        wait_until(
            &format!("the notes of #{issue}"),
            timeout,
            || self.notes(issue),
            |notes| done(notes),
        )
    }
}

fn add_note(state: &mut State, issue: u64, author: &str, body: &str, system: bool) -> FakeNote {
    let created_at = state.clock.tick(".000Z");
    let note = FakeNote {
        id: 5000 + state.notes.len() as u64,
        issue,
        body: body.into(),
        author: author.into(),
        created_at,
        system,
    };
    state.notes.push(note.clone());
    note
}

fn issue_json(port: u16, issue: &FakeIssue) -> Value {
    json!({
        "id": 90_000 + issue.iid,
        "iid": issue.iid,
        "project_id": 7,
        "title": issue.title,
        "description": if issue.description.is_empty() { Value::Null } else { json!(issue.description) },
        "web_url": format!("https://gitlab.example/{PROJECT}/-/issues/{}", issue.iid),
        "state": if issue.open { "opened" } else { "closed" },
        "created_at": issue.created_at,
        "labels": issue.labels,
        "author": {"username": "a-person", "id": 2},
        "_links": {"self": format!("http://127.0.0.1:{port}/api/v4/projects/7/issues/{}", issue.iid)},
    })
}

fn note_json(note: &FakeNote) -> Value {
    json!({
        "id": note.id,
        "body": note.body,
        "author": {"username": note.author},
        "created_at": note.created_at,
        "system": note.system,
        "noteable_iid": note.issue,
    })
}

fn merge_request_json(mr: &FakeMergeRequest) -> Value {
    json!({
        "iid": mr.iid,
        "title": mr.title,
        "description": mr.description,
        "state": mr.state,
        "draft": mr.title.starts_with("Draft:"),
        "source_branch": mr.source_branch,
        "target_branch": mr.target_branch,
        "web_url": format!("https://gitlab.example/{PROJECT}/-/merge_requests/{}", mr.iid),
    })
}

/// One page of `items`, naming the next by `link` and `x-next-page` (or by the number only).
fn page(state: &State, port: u16, path: &str, items: Vec<Value>) -> Reply {
    let page = Page::of(path, items, 20, state.per_page_cap);
    let host = match state.foreign_next {
        true => "http://gitlab.elsewhere.example".to_owned(),
        false => format!("http://127.0.0.1:{port}"),
    };
    let next = page.has_next().then(|| page.next_link(&host, path));
    let reply = Reply::json(200, &Value::Array(page.items))
        .header("x-page", &page.number.to_string())
        .header("x-per-page", &page.per_page.to_string())
        .header("x-total", &page.total.to_string());
    let Some(link) = next else {
        return reply.header("x-next-page", "");
    };
    let reply = reply.header("x-next-page", &(page.number + 1).to_string());
    match state.page_numbers_only {
        true => reply,
        false => reply.header("link", &link),
    }
}

/// The answer to `request` (`None`: hang up).
fn answer(state: &mut State, port: u16, request: &Request) -> Option<Reply> {
    let line = request.line();
    if let Some(at) = state
        .close_on
        .iter()
        .position(|(t, _)| line.contains(t.as_str()))
    {
        let (_, issue) = state.close_on.remove(at);
        state.close(issue, "a-person");
    }
    let fault = state.faults.take(|key| line.contains(key));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Some(match fault {
        Some(Fault::RateLimitReset(secs)) => message(429, "Retry later")
            .header("ratelimit-remaining", "0")
            .header("ratelimit-reset", &(now + secs).to_string()),
        Some(Fault::RetryAfter(secs)) => {
            message(429, "Retry later").header("retry-after", &secs.to_string())
        }
        Some(Fault::Status(status)) => message(status, "500 Internal Server Error"),
        Some(Fault::Malformed) => Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html><body>Sign in</body></html>".to_vec(),
            ending: Ending::Whole,
        },
        Some(Fault::Hangup) => return None,
        None => route(state, port, request),
    })
}

/// The API's answer to `request`.
fn route(state: &mut State, port: u16, request: &Request) -> Reply {
    if request.header("private-token") != Some(TOKEN) {
        return message(401, "401 Unauthorized");
    }
    let path = request.path.split('?').next().unwrap_or_default();
    let Some(path) = path.strip_prefix("/api/v4") else {
        return message(404, "404 Not Found");
    };
    if request.method == "GET" && path == "/user" {
        return Reply::json(200, &json!({"id": 1, "username": USERNAME}));
    }
    let Some(rest) = path.strip_prefix(&format!("/projects/{PROJECT_ID}")) else {
        return message(404, "404 Project Not Found");
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match parts.first().copied() {
        Some("issues") => issues(state, port, request, &parts[1..]),
        Some("merge_requests") => merge_requests(state, port, request, &parts[1..]),
        _ => message(404, "404 Not Found"),
    }
}

fn issues(state: &mut State, port: u16, request: &Request, parts: &[&str]) -> Reply {
    let iid = parts.first().and_then(|n| n.parse::<u64>().ok());
    if iid.is_some_and(|n| n == 0 || n as usize > state.issues.len()) {
        return message(404, "404 Issue Not Found");
    }
    match (request.method.as_str(), iid, parts.get(1).copied()) {
        ("GET", None, None) => {
            let wanted: Vec<String> = query(&request.path, "labels")
                .map(|l| l.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            let opened = query(&request.path, "state").as_deref() == Some("opened");
            let items = state
                .issues
                .iter()
                .filter(|i| (!opened || i.open) && wanted.iter().all(|w| i.labels.contains(w)))
                .map(|i| issue_json(port, i))
                .collect();
            page(state, port, &request.path, items)
        }
        ("GET", Some(n), None) => {
            Reply::json(200, &issue_json(port, &state.issues[n as usize - 1]))
        }
        ("PUT", Some(n), None) => {
            let body = request.json();
            if body.get("state_event").and_then(Value::as_str) == Some("close") {
                state.close(n, USERNAME);
            }
            if let Some(labels) = body.get("add_labels").and_then(Value::as_str) {
                for label in labels.split(',') {
                    let issue = &mut state.issues[n as usize - 1];
                    if !issue.labels.iter().any(|l| l == label) {
                        issue.labels.push(label.to_owned());
                        add_note(state, n, USERNAME, &format!("added ~{label} label"), true);
                    }
                }
            }
            Reply::json(200, &issue_json(port, &state.issues[n as usize - 1]))
        }
        ("GET", Some(n), Some("notes")) => {
            let items = state
                .notes
                .iter()
                .filter(|c| c.issue == n)
                .map(note_json)
                .collect();
            page(state, port, &request.path, items)
        }
        ("POST", Some(n), Some("notes")) => {
            let Some(body) = request
                .json()
                .get("body")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return Reply::json(400, &json!({"error": "body is missing"}));
            };
            let note = add_note(state, n, USERNAME, &body, false);
            Reply::json(201, &note_json(&note))
        }
        _ => message(404, "404 Not Found"),
    }
}

fn merge_requests(state: &mut State, _port: u16, request: &Request, parts: &[&str]) -> Reply {
    let iid = parts.first().and_then(|n| n.parse::<u64>().ok());
    if iid.is_some_and(|n| n == 0 || n as usize > state.merge_requests.len()) {
        return message(404, "404 Not found");
    }
    match (request.method.as_str(), iid) {
        ("GET", None) => {
            let source = query(&request.path, "source_branch");
            let wanted = query(&request.path, "state").unwrap_or_else(|| "all".into());
            let mut items: Vec<Value> = state
                .merge_requests
                .iter()
                .filter(|mr| source.as_ref().is_none_or(|s| *s == mr.source_branch))
                .filter(|mr| wanted == "all" || wanted == mr.state)
                .map(merge_request_json)
                .collect();
            items.reverse();
            page(state, _port, &request.path, items)
        }
        ("GET", Some(n)) => Reply::json(
            200,
            &merge_request_json(&state.merge_requests[n as usize - 1]),
        ),
        ("POST", None) => {
            let body = request.json();
            let field = |name: &str| body.get(name).and_then(Value::as_str).map(str::to_owned);
            let (Some(title), Some(source), Some(target)) = (
                field("title"),
                field("source_branch"),
                field("target_branch"),
            ) else {
                return Reply::json(
                    400,
                    &json!({"error": "title, source_branch, target_branch are missing"}),
                );
            };
            if let Some(open) = state
                .merge_requests
                .iter()
                .find(|mr| mr.source_branch == source && mr.state == "opened")
            {
                return Reply::json(
                    409,
                    &json!({"message": [format!("Another open merge request already exists for this source branch: !{}", open.iid)]}),
                );
            }
            let iid = state.merge_requests.len() as u64 + 1;
            state.merge_requests.push(FakeMergeRequest {
                iid,
                title,
                description: field("description").unwrap_or_default(),
                source_branch: source,
                target_branch: target,
                state: "opened".into(),
            });
            Reply::json(
                201,
                &merge_request_json(&state.merge_requests[iid as usize - 1]),
            )
        }
        ("PUT", Some(n)) => {
            let body = request.json();
            let mr = &mut state.merge_requests[n as usize - 1];
            if let Some(title) = body.get("title").and_then(Value::as_str) {
                mr.title = title.to_owned();
            }
            if let Some(description) = body.get("description").and_then(Value::as_str) {
                mr.description = description.to_owned();
            }
            Reply::json(200, &merge_request_json(mr))
        }
        _ => message(404, "404 Not Found"),
    }
}
