//! What the fake GitHub, GitLab and Linear share: faults queued for the requests to come, a
//! clock of strictly increasing times, numbered pages and their `link` to the next, the
//! `{"message": ...}` error, a reply that stalls or hangs up, and a wait for what a test
//! expects of the server's state.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_server::Reply;

/// Faults queued for the requests to come, each under a key (a piece of the request line, an
/// operation's name) that the server matches its requests against.
#[derive(Debug)]
pub(crate) struct FaultQueue<F> {
    /// Each: the key, how many matching requests to let through first, and the fault.
    queued: Vec<(String, usize, F)>,
}

impl<F> Default for FaultQueue<F> {
    fn default() -> Self {
        Self { queued: Vec::new() }
    }
}

impl<F: Clone> FaultQueue<F> {
    /// Queues `fault` for `times` requests matching `key`, after `skip` of them go through.
    pub(crate) fn push(&mut self, key: &str, skip: usize, times: usize, fault: F) {
        for _ in 0..times {
            self.queued.push((key.into(), skip, fault.clone()));
        }
    }

    /// Drops every fault still queued.
    pub(crate) fn clear(&mut self) {
        self.queued.clear();
    }

    /// The fault a request answers with, given which keys it `matches`: the first queued for
    /// it, once that one has let its requests through.
    pub(crate) fn take(&mut self, matches: impl Fn(&str) -> bool) -> Option<F> {
        let at = self.queued.iter().position(|(key, _, _)| matches(key))?;
        if self.queued[at].1 == 0 {
            return Some(self.queued.remove(at).2);
        }
        // Every queued fault for this request lets one more request through.
        for (key, skip, _) in &mut self.queued {
            if matches(key) {
                *skip = skip.saturating_sub(1);
            }
        }
        None
    }
}

/// Strictly increasing times, one per thing created, so "oldest first" is well defined.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    seconds: u64,
}

impl Clock {
    /// The next time, `2026-01-01THH:MM:SS` and then `ending` (`Z`, `.000Z`).
    pub(crate) fn tick(&mut self, ending: &str) -> String {
        self.seconds += 1;
        let secs = self.seconds;
        format!(
            "2026-01-01T{:02}:{:02}:{:02}{ending}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

/// One page of a list whose pages are numbered (`page`, `per_page` in the query).
pub(crate) struct Page {
    /// Its items.
    pub(crate) items: Vec<Value>,
    /// Its number, from 1.
    pub(crate) number: usize,
    pub(crate) per_page: usize,
    /// How many items the whole list holds.
    pub(crate) total: usize,
}

impl Page {
    /// The page of `items` that `path`'s query asks for: `per_page` of them (`default` when it
    /// does not say, at most `cap`).
    pub(crate) fn of(path: &str, items: Vec<Value>, default: usize, cap: Option<usize>) -> Self {
        let per_page = crate::http_server::query(path, "per_page")
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
            .min(cap.unwrap_or(usize::MAX))
            .max(1);
        let number: usize = crate::http_server::query(path, "page")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        let total = items.len();
        let items = items
            .into_iter()
            .skip((number - 1) * per_page)
            .take(per_page)
            .collect();
        Self {
            items,
            number,
            per_page,
            total,
        }
    }

    /// Whether a page follows this one.
    pub(crate) fn has_next(&self) -> bool {
        self.number * self.per_page < self.total
    }

    /// The `link` header naming the next page: `path` on `host` with the next `page=`.
    pub(crate) fn next_link(&self, host: &str, path: &str) -> String {
        let base = path.split('?').next().unwrap_or(path);
        let mut params: Vec<String> = path
            .split_once('?')
            .map(|(_, q)| {
                q.split('&')
                    .filter(|p| !p.starts_with("page="))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        params.push(format!("page={}", self.number + 1));
        format!("<{host}{base}?{}>; rel=\"next\"", params.join("&"))
    }
}

/// The REST forges' error shape: `{"message": ...}`.
pub(crate) fn message(status: u16, message: &str) -> Reply {
    Reply::json(status, &json!({"message": message}))
}

/// What a fake does with a request.
pub(crate) enum Answered {
    Reply(Reply),
    /// The connection closes with no answer at all.
    Hangup,
    /// Nothing for this long, then a hang-up.
    Stall(Duration),
}

impl Answered {
    /// What the HTTP core sends, after a stall's wait. Called with the fake's state unlocked,
    /// so other requests are answered meanwhile.
    pub(crate) fn send(self) -> Option<Reply> {
        match self {
            Self::Reply(reply) => Some(reply),
            Self::Hangup => None,
            Self::Stall(time) => {
                std::thread::sleep(time);
                None
            }
        }
    }
}

/// Waits (up to `timeout`) until `done` holds for what `read` returns, and returns it; panics
/// naming `what` when it never does.
pub(crate) fn wait_until<T: Debug>(
    what: &str,
    timeout: Duration,
    read: impl Fn() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    let start = Instant::now();
    loop {
        let value = read();
        if done(&value) {
            return value;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out waiting on {what}: {value:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
