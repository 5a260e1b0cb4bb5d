//! The fake GitHub's pull requests (`land.pr: github`): list by `head` (`owner:branch`) with
//! `state=all`, open (head, base, title, body, draft), and edit title and body; a person can
//! close one or merge one meanwhile. `github_server` routes `/repos/{REPO}/pulls` here.

use serde_json::{Value, json};

use crate::github_server::REPO;
use crate::http_server::{Reply, Request, query};

/// A pull request as the server keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakePull {
    /// Its number (from 100, apart from the issues').
    pub number: u64,
    /// The branch it would merge.
    pub head: String,
    /// The branch it would merge into.
    pub base: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub body: String,
    /// Whether it was opened as a draft.
    pub draft: bool,
    /// `open` or `closed`.
    pub state: String,
    /// Whether a person merged it (it is `closed` then).
    pub merged: bool,
    /// Times its title or body was edited.
    pub edits: u64,
}

impl FakePull {
    /// Its page, as GitHub names it.
    pub fn url(&self) -> String {
        format!("https://github.com/{REPO}/pull/{}", self.number)
    }

    fn json(&self) -> Value {
        json!({
            "number": self.number,
            "html_url": self.url(),
            "state": self.state,
            "title": self.title,
            "body": self.body,
            "draft": self.draft,
            "merged_at": if self.merged { json!("2026-01-02T00:00:00Z") } else { Value::Null },
            "head": {"ref": self.head},
            "base": {"ref": self.base},
        })
    }
}

/// Numbers are shared with issues on GitHub; here pull requests count from 100, apart.
const FIRST_NUMBER: u64 = 100;

/// The answer to a request under `/repos/{REPO}/pulls`, `rest` the path after it.
pub(crate) fn route(pulls: &mut Vec<FakePull>, rest: &str, request: &Request) -> Reply {
    let number = rest.trim_matches('/').parse::<u64>().ok();
    match (request.method.as_str(), number) {
        ("GET", None) => {
            let owner = REPO.split('/').next().unwrap_or_default();
            let head = query(&request.path, "head");
            let state = query(&request.path, "state").unwrap_or_else(|| "open".to_owned());
            // Newest first, as GitHub lists them.
            let items: Vec<Value> = pulls
                .iter()
                .rev()
                .filter(|p| {
                    head.as_ref()
                        .is_none_or(|h| *h == format!("{owner}:{}", p.head))
                })
                .filter(|p| state == "all" || p.state == state)
                .map(FakePull::json)
                .collect();
            Reply::json(200, &Value::Array(items))
        }
        ("POST", None) => {
            let body = request.json();
            let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
            let (Some(head), Some(base), Some(title)) = (text("head"), text("base"), text("title"))
            else {
                return Reply::json(422, &json!({"message": "Validation Failed"}));
            };
            if pulls.iter().any(|p| p.head == head && p.state == "open") {
                return Reply::json(
                    422,
                    &json!({"message": format!("A pull request already exists for {head}.")}),
                );
            }
            let pull = FakePull {
                number: FIRST_NUMBER + pulls.len() as u64,
                head,
                base,
                title,
                body: text("body").unwrap_or_default(),
                draft: body.get("draft").and_then(Value::as_bool).unwrap_or(false),
                state: "open".to_owned(),
                merged: false,
                edits: 0,
            };
            pulls.push(pull.clone());
            Reply::json(201, &pull.json())
        }
        ("PATCH", Some(n)) => {
            let body = request.json();
            let Some(pull) = pulls.iter_mut().find(|p| p.number == n) else {
                return Reply::json(404, &json!({"message": "Not Found"}));
            };
            if let Some(title) = body.get("title").and_then(Value::as_str) {
                pull.title = title.to_owned();
            }
            if let Some(text) = body.get("body").and_then(Value::as_str) {
                pull.body = text.to_owned();
            }
            pull.edits += 1;
            Reply::json(200, &pull.json())
        }
        _ => Reply::json(404, &json!({"message": "Not Found"})),
    }
}
