//! The client against the project's fake GitHub (`ralph-test-support`'s `github_server`):
//! real HTTP, real JSON; the client never waits, so nothing here does.

use ralph_test_support::github_server;

use std::time::{Duration, SystemTime};

use github_server::{Fault, GithubServer, REPO, TOKEN};
use ralph_github::{Client, Clock, Error, IssueState, Token};

/// The system's time, as a replaced clock.
#[derive(Clone, Default)]
struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

fn client(server: &GithubServer) -> (Client, WallClock) {
    let client =
        Client::new(server.url(), Token::new(TOKEN), REPO.parse().unwrap()).with_clock(WallClock);
    (client, WallClock)
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
fn a_rate_limit_comes_back_at_once_saying_how_long_until_its_reset() {
    let server = GithubServer::start();
    let n = server.open_issue("task", "", &[]);
    server.fail_next("GET /repos", Fault::RateLimitReset(120));
    server.fail_next("GET /repos", Fault::RetryAfter(7));
    let (mut client, _) = client(&server);

    let first = client.open_issues(None).unwrap_err();
    let second = client.open_issues(None).unwrap_err();
    let issues = client.open_issues(None).unwrap();

    // The reset is 120 s after the server's clock read, in whole seconds, and the client adds
    // its second of margin; the client may have read its clock just before the server read
    // its own (seen: 121.002 s).
    assert!(
        matches!(&first, Error::RateLimited { status: 403, url, wait, .. }
            if url.contains("/issues") && *wait > Duration::from_secs(110)
                && *wait <= Duration::from_secs(122)),
        "{first:?}"
    );
    let said = first.to_string();
    assert!(
        said.contains("rate limit") && said.ends_with('Z'),
        "the reset in UTC: {said}"
    );
    assert!(
        matches!(&second, Error::RateLimited { status: 429, wait, .. } if *wait == Duration::from_secs(7)),
        "{second:?}"
    );
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].number, n);
}

#[test]
fn a_500_and_a_dropped_connection_come_back_at_once_naming_the_url_and_what_to_check() {
    let server = GithubServer::start();
    let n = server.open_issue("task", "", &[]);
    server.fail_next("POST /repos", Fault::Status(502));
    server.fail_next("POST /repos", Fault::Hangup);
    let (mut client, _) = client(&server);

    let first = client.post_comment(n, "hello").unwrap_err();
    let second = client.post_comment(n, "hello").unwrap_err();
    client.post_comment(n, "hello").unwrap();

    assert!(matches!(first, Error::Unreachable { .. }), "{first:?}");
    let text = first.to_string();
    assert!(
        text.contains(&format!(
            "{}/repos/{REPO}/issues/{n}/comments",
            server.url()
        )),
        "{text}"
    );
    assert!(text.contains("502") && text.contains("network"), "{text}");
    assert!(matches!(second, Error::Unreachable { .. }), "{second:?}");
    assert_eq!(server.comments(n).len(), 1, "posted once");
}

/// A GitHub that is not there at all (the fake stops listening when dropped): the connection
/// is refused, which is the network's failure too.
#[test]
fn a_github_that_refuses_the_connection_is_unreachable() {
    let server = GithubServer::start();
    let n = server.open_issue("task", "", &[]);
    let (mut client, _) = client(&server);
    drop(server);

    let refused = client.post_comment(n, "hello").unwrap_err();
    assert!(matches!(refused, Error::Unreachable { .. }), "{refused:?}");
}

#[test]
fn a_refused_token_and_an_unknown_repository_are_errors_at_once_that_say_what_to_do() {
    let server = GithubServer::start();
    let mut wrong_token =
        Client::new(server.url(), Token::new("nope"), REPO.parse().unwrap()).with_clock(WallClock);
    let err = wrong_token.open_issues(None).unwrap_err().to_string();
    assert!(err.contains("401") && err.contains("GITHUB_TOKEN"), "{err}");

    let mut unknown = Client::new(
        server.url(),
        Token::new(TOKEN),
        "acme/nothing".parse().unwrap(),
    )
    .with_clock(WallClock);
    let err = unknown.open_issues(None).unwrap_err().to_string();
    assert!(err.contains("404") && err.contains("owner/name"), "{err}");
}

#[test]
fn a_next_page_on_another_host_is_not_followed_with_the_token() {
    let server = GithubServer::start();
    server.open_issue("one", "", &[]);
    server.open_issue("two", "", &[]);
    server.cap_pages(1);
    // The client is told the API lives under a prefix the server's links do not carry.
    let base = format!("{}/", server.url().replace("127.0.0.1", "localhost"));
    let mut client =
        Client::new(base, Token::new(TOKEN), REPO.parse().unwrap()).with_clock(WallClock);

    let err = client.open_issues(None).unwrap_err();

    assert!(matches!(err, Error::ForeignLink { .. }), "{err:?}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_next_page_link_to_a_page_already_read_ends_the_listing_with_an_error() {
    let server = GithubServer::start();
    server.open_issue("one", "", &[]);
    server.link_pages_to_themselves();
    let (mut client, _) = client(&server);

    let err = client.open_issues(None).unwrap_err();

    assert!(
        matches!(err, Error::EndlessPages { pages: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("was read already"), "{err}");
    assert_eq!(server.requests().len(), 1, "no page asked twice");
}
