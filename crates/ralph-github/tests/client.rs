//! The client against the project's fake GitHub (`ralph-cli/tests/common/github_server.rs`):
//! real HTTP, real JSON, a clock that only records its waits.

#[path = "../../ralph-cli/tests/common/github_server.rs"]
mod github_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use github_server::{Fault, GithubServer, REPO, TOKEN};
use ralph_github::{Client, Clock, Error, IssueState, Notice, Token};

/// A clock whose sleeps return at once and are written down.
#[derive(Clone, Default)]
struct RecordingClock {
    waits: Arc<Mutex<Vec<Duration>>>,
}

impl Clock for RecordingClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&mut self, duration: Duration) {
        self.waits.lock().unwrap().push(duration);
    }
}

fn client(server: &GithubServer) -> (Client, RecordingClock) {
    let clock = RecordingClock::default();
    let client = Client::new(server.url(), Token::new(TOKEN), REPO.parse().unwrap())
        .with_clock(clock.clone());
    (client, clock)
}

#[test]
fn open_issues_with_the_label_come_oldest_first_over_every_page_without_pull_requests() {
    let server = GithubServer::start();
    let first = server.open_issue("first", "do the first thing", &["ralph"]);
    server.open_issue("unlabelled", "", &[]);
    server.open_pull_request("a pull request", &["ralph"]);
    let second = server.open_issue("second", "", &["ralph", "priority:1"]);
    let closed = server.open_issue("closed", "", &["ralph"]);
    server.close(closed);
    let third = server.open_issue("third", "", &["ralph"]);
    server.cap_pages(2);
    let (mut client, _) = client(&server);

    let issues = client.open_issues(Some("ralph")).unwrap();

    let numbers: Vec<u64> = issues.iter().map(|i| i.number).collect();
    assert_eq!(numbers, [first, second, third]);
    assert_eq!(issues[0].body, "do the first thing");
    assert_eq!(issues[0].state, IssueState::Open);
    assert_eq!(issues[1].labels, ["ralph", "priority:1"]);
    assert_eq!(
        issues[0].url,
        format!("https://github.com/{REPO}/issues/{first}")
    );
    let pages = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("labels=ralph"))
        .count();
    assert_eq!(
        pages, 2,
        "four listed items (a pull request among them), two a page"
    );
}

#[test]
fn comments_are_read_written_and_the_issue_labelled_and_closed() {
    let server = GithubServer::start();
    let n = server.open_issue("task", "", &[]);
    server.comment_as(n, "a-person", "please hurry");
    let (mut client, _) = client(&server);

    let posted = client
        .post_comment(n, "Done in abc123 on branch main")
        .unwrap();
    client.add_label(n, "ralph:done").unwrap();
    client.close_issue(n).unwrap();
    let comments = client.comments(n).unwrap();

    assert_eq!(posted.body, "Done in abc123 on branch main");
    let bodies: Vec<(&str, &str)> = comments
        .iter()
        .map(|c| (c.author.as_str(), c.body.as_str()))
        .collect();
    assert_eq!(
        bodies,
        [
            ("a-person", "please hurry"),
            ("ralph-bot", "Done in abc123 on branch main")
        ]
    );
    let issue = server.issue(n);
    assert!(!issue.open);
    assert_eq!(issue.labels, ["ralph:done"]);
    assert_eq!(client.issue(n).unwrap().state, IssueState::Closed);
    let every = server.requests();
    assert!(every.iter().all(|r| {
        r.header("authorization") == Some(&format!("Bearer {TOKEN}"))
            && r.header("user-agent")
                .is_some_and(|ua| ua.starts_with("ralph/"))
    }));
}

#[test]
fn a_rate_limit_is_waited_out_until_its_reset_and_reported_before_the_wait() {
    let server = GithubServer::start();
    let n = server.open_issue("task", "", &[]);
    server.fail_next("GET /repos", Fault::RateLimitReset(120));
    server.fail_next("GET /repos", Fault::RetryAfter(7));
    let reported = Arc::new(Mutex::new(Vec::new()));
    let (client, clock) = client(&server);
    let seen = Arc::clone(&reported);
    let mut client = client.on_notice(move |notice| seen.lock().unwrap().push(notice.clone()));

    let issues = client.open_issues(None).unwrap();

    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].number, n);
    let waits = clock.waits.lock().unwrap().clone();
    assert_eq!(waits.len(), 2, "{waits:?}");
    // The reset is 120 s after the server's clock read; ours read a moment later.
    assert!(
        waits[0] > Duration::from_secs(110) && waits[0] <= Duration::from_secs(121),
        "{waits:?}"
    );
    assert_eq!(waits[1], Duration::from_secs(7));
    let notices = client.take_notices();
    assert_eq!(notices, *reported.lock().unwrap());
    assert!(
        matches!(&notices[0], Notice::RateLimited { status: 403, url, .. } if url.contains("/issues")),
        "{notices:?}"
    );
    let said = notices[0].to_string();
    assert!(
        said.contains("rate limit") && said.ends_with('Z'),
        "the reset in UTC: {said}"
    );
    assert!(matches!(
        &notices[1],
        Notice::RateLimited { status: 429, .. }
    ));
}

#[test]
fn a_500_and_a_dropped_connection_are_retried_with_backoff() {
    let server = GithubServer::start();
    let n = server.open_issue("task", "", &[]);
    server.fail_next("POST /repos", Fault::Status(500));
    server.fail_next("POST /repos", Fault::Hangup);
    let (mut client, clock) = client(&server);

    client.post_comment(n, "hello").unwrap();

    assert_eq!(server.comments(n).len(), 1, "posted once");
    assert_eq!(
        *clock.waits.lock().unwrap(),
        [Duration::from_secs(2), Duration::from_secs(4)]
    );
    let notices = client.take_notices();
    assert!(
        matches!(&notices[0], Notice::Retrying { attempt: 2, reason, .. } if reason.contains("500")),
        "{notices:?}"
    );
}

#[test]
fn failures_past_the_last_attempt_name_the_url_and_what_to_check() {
    let server = GithubServer::start();
    for _ in 0..5 {
        server.fail_next("GET /repos", Fault::Status(502));
    }
    let (mut client, _) = client(&server);

    let err = client.open_issues(None).unwrap_err();

    assert!(
        matches!(err, Error::Unreachable { attempts: 5, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("{}/repos/{REPO}/issues", server.url())),
        "{text}"
    );
    assert!(text.contains("502") && text.contains("network"), "{text}");
}

#[test]
fn a_refused_token_and_an_unknown_repository_are_errors_at_once_that_say_what_to_do() {
    let server = GithubServer::start();
    let clock = RecordingClock::default();
    let mut wrong_token = Client::new(server.url(), Token::new("nope"), REPO.parse().unwrap())
        .with_clock(clock.clone());
    let err = wrong_token.open_issues(None).unwrap_err().to_string();
    assert!(err.contains("401") && err.contains("GITHUB_TOKEN"), "{err}");

    let mut unknown = Client::new(
        server.url(),
        Token::new(TOKEN),
        "acme/nothing".parse().unwrap(),
    )
    .with_clock(clock.clone());
    let err = unknown.open_issues(None).unwrap_err().to_string();
    assert!(err.contains("404") && err.contains("owner/name"), "{err}");
    assert!(clock.waits.lock().unwrap().is_empty(), "nothing retried");
}

#[test]
fn a_next_page_on_another_host_is_not_followed_with_the_token() {
    let server = GithubServer::start();
    server.open_issue("one", "", &[]);
    server.open_issue("two", "", &[]);
    server.cap_pages(1);
    // The client is told the API lives under a prefix the server's links do not carry.
    let base = format!("{}/", server.url().replace("127.0.0.1", "localhost"));
    let mut client = Client::new(base, Token::new(TOKEN), REPO.parse().unwrap())
        .with_clock(RecordingClock::default());

    let err = client.open_issues(None).unwrap_err();

    assert!(matches!(err, Error::ForeignLink { .. }), "{err:?}");
    assert_eq!(server.requests().len(), 1);
}
