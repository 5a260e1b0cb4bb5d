//! The client against the project's fake GitLab (`ralph-test-support`'s `gitlab_server`):
//! real HTTP, real JSON; the client never waits, so nothing here does.

use ralph_test_support::gitlab_server;

use std::time::Duration;

use gitlab_server::{Fault, GitlabServer, PROJECT, PROJECT_ID, TOKEN, USERNAME};
use ralph_gitlab::{Client, Error, IssueState, Token};

fn client(server: &GitlabServer) -> Client {
    Client::new(server.url(), Token::new(TOKEN), PROJECT.parse().unwrap())
}

const ISSUES: &str = "GET /api/v4/projects/acme%2Ftools%2Fwidgets/issues?";

#[test]
fn open_issues_with_the_label_come_over_every_page_by_link_or_by_page_number() {
    let server = GitlabServer::start();
    let first = server.open_issue("first", "do the first thing", &["ralph"]);
    server.open_issue("unlabelled", "", &[]);
    let second = server.open_issue("second", "", &["ralph", "priority:1"]);
    let closed = server.open_issue("closed", "", &["ralph"]);
    server.close(closed);
    let third = server.open_issue("third", "", &["ralph"]);
    server.cap_pages(2);
    let mut client = client(&server);

    let issues = client.open_issues(Some("ralph")).unwrap();
    server.page_numbers_only();
    let again = client.open_issues(Some("ralph")).unwrap();

    let iids: Vec<u64> = issues.iter().map(|i| i.iid).collect();
    assert_eq!(iids, [first, second, third]);
    assert_eq!(again, issues, "x-next-page alone reads the same pages");
    assert_eq!(issues[0].description, "do the first thing");
    assert_eq!(issues[0].state, IssueState::Open);
    assert_eq!(issues[1].labels, ["ralph", "priority:1"]);
    assert_eq!(
        issues[0].url,
        format!("https://gitlab.example/{PROJECT}/-/issues/{first}")
    );
    let requests = server.requests();
    let pages = requests
        .iter()
        .filter(|r| r.line().starts_with(ISSUES) && r.path.contains("labels=ralph"))
        .count();
    assert_eq!(pages, 4, "three issues, two a page, read twice");
    assert!(
        requests.iter().all(
            |r| r.header("private-token") == Some(TOKEN) && r.header("authorization").is_none()
        ),
        "the token goes as PRIVATE-TOKEN only"
    );
}

#[test]
fn notes_are_read_written_and_the_issue_labelled_and_closed() {
    let server = GitlabServer::start();
    let n = server.open_issue("task", "", &[]);
    server.note_as(n, "a-person", "please hurry");
    let mut client = client(&server);

    let posted = client.post_note(n, "Done in abc123").unwrap();
    client.add_label(n, "ralph:done").unwrap();
    client.close_issue(n).unwrap();
    let notes = client.notes(n).unwrap();

    assert_eq!(
        (posted.body.as_str(), posted.author.as_str()),
        ("Done in abc123", USERNAME)
    );
    let people: Vec<(&str, &str)> = notes
        .iter()
        .filter(|n| !n.system)
        .map(|n| (n.author.as_str(), n.body.as_str()))
        .collect();
    assert_eq!(
        people,
        [("a-person", "please hurry"), (USERNAME, "Done in abc123")]
    );
    assert!(
        notes.iter().any(|n| n.system),
        "GitLab's own notes are read, marked"
    );
    let issue = client.issue(n).unwrap();
    assert_eq!(issue.state, IssueState::Closed);
    assert_eq!(issue.labels, ["ralph:done"]);
    assert_eq!(client.username().unwrap(), USERNAME);
}

#[test]
fn a_rate_limit_comes_back_at_once_saying_how_long_by_gitlabs_headers() {
    let server = GitlabServer::start();
    server.open_issue("task", "", &[]);
    server.fail_next(ISSUES, Fault::RateLimitReset(120));
    server.fail_next(ISSUES, Fault::RetryAfter(7));
    let mut client = client(&server);

    let first = client.open_issues(None).unwrap_err();
    let second = client.open_issues(None).unwrap_err();

    let Error::RateLimited { status, wait, .. } = &first else {
        panic!("{first:?}")
    };
    assert_eq!(*status, 429);
    // The reset is whole seconds from the server's clock, read a moment before the client's.
    assert!(
        (Duration::from_secs(119)..=Duration::from_secs(122)).contains(wait),
        "{wait:?}"
    );
    assert!(
        first.to_string().contains("GitLab rate limit (HTTP 429)"),
        "{first}"
    );
    assert!(matches!(second, Error::RateLimited { wait, .. } if wait == Duration::from_secs(7)));
    assert_eq!(client.open_issues(None).unwrap().len(), 1);
}

#[test]
fn a_5xx_and_a_dropped_connection_are_unreachable_and_a_malformed_answer_is_said_clearly() {
    let server = GitlabServer::start();
    let n = server.open_issue("task", "", &[]);
    server.fail_next("POST /api/v4", Fault::Status(502));
    server.fail_next("POST /api/v4", Fault::Hangup);
    server.fail_next("GET /api/v4", Fault::Malformed);
    let mut client = client(&server);

    let five = client.post_note(n, "x").unwrap_err();
    let hangup = client.post_note(n, "x").unwrap_err();
    let malformed = client.issue(n).unwrap_err();

    assert!(matches!(five, Error::Unreachable { .. }), "{five:?}");
    assert!(five.to_string().contains("HTTP 502"), "{five}");
    assert!(matches!(hangup, Error::Unreachable { .. }), "{hangup:?}");
    assert!(
        hangup
            .to_string()
            .contains(&format!("/projects/{PROJECT_ID}/issues/{n}/notes")),
        "{hangup}"
    );
    let shown = malformed.to_string();
    assert!(
        matches!(malformed, Error::BadAnswer { .. }),
        "{malformed:?}"
    );
    assert!(
        shown.contains("not what its REST API documents") && shown.contains("not JSON"),
        "{shown}"
    );
    assert!(server.notes(n).is_empty(), "no note was written");
}

#[test]
fn a_refused_token_and_an_unknown_project_say_what_to_do_and_never_show_the_token() {
    let server = GitlabServer::start();
    server.open_issue("task", "", &[]);
    let mut refused = Client::new(
        server.url(),
        Token::new("glpat-wrong-secret"),
        PROJECT.parse().unwrap(),
    );
    let mut unknown = Client::new(
        server.url(),
        Token::new(TOKEN),
        "acme/nope".parse().unwrap(),
    );

    let bad_token = refused.open_issues(None).unwrap_err();
    let no_project = unknown.open_issues(None).unwrap_err();

    let shown = bad_token.to_string();
    assert!(matches!(bad_token, Error::Status { status: 401, .. }));
    assert!(shown.contains("check GITLAB_TOKEN"), "{shown}");
    assert!(!shown.contains("glpat-wrong-secret"), "{shown}");
    assert!(!format!("{refused:?}{bad_token:?}").contains("glpat-wrong-secret"));
    assert!(
        no_project.to_string().contains("group/project"),
        "{no_project}"
    );
}

#[test]
fn a_user_and_password_in_the_api_address_never_appear_in_an_error() {
    let server = GitlabServer::start();
    let url = server.url().replace("http://", "http://me:glpat-in-url@");
    server.fail_next("GET", Fault::Status(503));
    let mut client = Client::new(url, Token::new(TOKEN), PROJECT.parse().unwrap());

    let err = client.open_issues(None).unwrap_err();

    let shown = format!("{err} {err:?} {client:?}");
    assert!(!shown.contains("glpat-in-url"), "{shown}");
    assert!(shown.contains("***@127.0.0.1"), "{shown}");
}

#[test]
fn a_next_page_on_another_host_is_not_followed_with_the_token() {
    let server = GitlabServer::start();
    for n in 0..3 {
        server.open_issue(&format!("task {n}"), "", &[]);
    }
    server.cap_pages(1);
    server.next_page_elsewhere();
    let mut client = client(&server);

    let err = client.open_issues(None).unwrap_err();

    assert!(matches!(err, Error::ForeignLink { .. }), "{err:?}");
    assert!(
        err.to_string().contains("gitlab.elsewhere.example"),
        "{err}"
    );
}
