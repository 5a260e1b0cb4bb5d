//! The Linear client against the project's fake Linear: pages by cursor, the answers that are
//! waits (rate limits, 5xx, a hang-up) and those that are errors (a bad key, GraphQL errors,
//! malformed answers), each saying what it concerns.

use ralph_test_support::linear_server;

use std::time::{Duration, SystemTime};

use linear_server::{Fault, KEY, LinearServer, TEAM};
use ralph_linear::{Client, Clock, Error, Secret};

fn client(server: &LinearServer) -> Client {
    Client::new(server.url(), Secret::new(KEY))
}

/// A clock stopped at a given time.
struct Stopped(SystemTime);

impl Clock for Stopped {
    fn now(&self) -> SystemTime {
        self.0
    }
}

#[test]
fn every_page_of_issues_is_read_by_its_cursor() {
    let server = LinearServer::start();
    for n in 0..5 {
        server.open_issue(&format!("issue {n}"), "", &["ralph"], 0);
    }
    server.open_issue("unlabelled", "", &[], 0);
    server.cap_pages(2);
    let mut client = client(&server);

    let team = client.team(TEAM).unwrap();
    let issues = client.unstarted_issues(&team.id, Some("ralph")).unwrap();

    let titles: Vec<&str> = issues.iter().map(|i| i.title.as_str()).collect();
    assert_eq!(
        titles,
        ["issue 0", "issue 1", "issue 2", "issue 3", "issue 4"]
    );
    let afters: Vec<serde_json::Value> = server
        .asked()
        .into_iter()
        .filter(|a| a.operation == "Issues")
        .map(|a| a.variables["after"].clone())
        .collect();
    assert_eq!(
        afters,
        [
            serde_json::Value::Null,
            "cursor-2".into(),
            "cursor-4".into()
        ]
    );
}

#[test]
fn a_cursor_that_comes_back_is_endless_pages_not_a_loop() {
    let server = LinearServer::start();
    server.open_issue("one", "", &[], 0);
    server.repeat_cursors();
    let mut client = client(&server);

    let err = client.unstarted_issues("team-eng", None).unwrap_err();

    assert!(
        matches!(err, Error::EndlessPages { pages: 2, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("the cursor \"cursor-0\" comes back"),
        "{err}"
    );
}

#[test]
fn linears_rate_limit_waits_until_its_reset_in_milliseconds() {
    let server = LinearServer::start();
    server.fail_next("Viewer", Fault::RateLimited(90_000));
    let now = SystemTime::now();
    let mut client = client(&server).with_clock(Stopped(now));

    let err = client.viewer().unwrap_err();

    let Error::RateLimited { wait, until, .. } = err else {
        panic!("expected a rate limit, got {err:?}");
    };
    // The server read its own clock a little after this test read the stopped one.
    assert!(
        wait >= Duration::from_secs(90) && wait < Duration::from_secs(95),
        "{wait:?}"
    );
    assert_eq!(until, now + wait);
}

#[test]
fn a_429_without_a_reset_waits_a_minute() {
    let server = LinearServer::start();
    server.fail_next("Viewer", Fault::TooManyRequests);
    let mut client = client(&server);

    let err = client.viewer().unwrap_err();

    assert!(
        matches!(err, Error::RateLimited { wait, .. } if wait == Duration::from_secs(60)),
        "{err:?}"
    );
}

#[test]
fn a_5xx_and_a_hang_up_are_worth_another_try() {
    let server = LinearServer::start();
    server.fail_next("Viewer", Fault::Status(502));
    server.fail_next("Viewer", Fault::Hangup);
    let mut client = client(&server);

    for _ in 0..2 {
        let err = client.viewer().unwrap_err();
        assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
        assert!(
            err.to_string().starts_with("Viewer at http://127.0.0.1:"),
            "{err}"
        );
    }
    assert_eq!(client.viewer().unwrap().name, linear_server::VIEWER_NAME);
}

#[test]
fn graphql_errors_and_malformed_answers_are_errors_naming_the_operation() {
    let server = LinearServer::start();
    server.fail_next(
        "Viewer",
        Fault::GraphqlError("Argument Validation Error".into()),
    );
    server.fail_next("Viewer", Fault::NotJson);
    server.fail_next("Viewer", Fault::NoData);
    let mut client = client(&server);

    let refused = client.viewer().unwrap_err();
    let not_json = client.viewer().unwrap_err();
    let no_data = client.viewer().unwrap_err();

    assert!(
        matches!(&refused, Error::Refused { messages, .. } if messages == "Argument Validation Error"),
        "{refused:?}"
    );
    for (err, words) in [(not_json, "not JSON"), (no_data, "no `viewer` in the data")] {
        assert!(
            matches!(
                err,
                Error::BadAnswer {
                    operation: "Viewer",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains(words), "{err}");
    }
}

#[test]
fn a_bad_key_is_refused_and_shown_nowhere() {
    let server = LinearServer::start();
    let secret = "lin_api_mistyped_secret";
    let mut client = Client::new(server.url(), Secret::new(secret));

    let err = client.viewer().unwrap_err();

    assert!(matches!(err, Error::BadKey { .. }), "{err:?}");
    let said = format!("{err} {err:?} {client:?}");
    assert!(said.contains("check LINEAR_API_KEY"), "{said}");
    assert!(!said.contains(secret), "{said}");
    let sent = &server.asked()[0].request;
    assert_eq!(
        sent.header("authorization"),
        Some(secret),
        "sent as Linear asks"
    );
}

#[test]
fn the_team_is_found_by_its_key_in_any_case_and_an_unknown_one_names_the_known() {
    let server = LinearServer::start();
    let mut client = client(&server);

    assert_eq!(client.team("eng").unwrap().key, TEAM);
    let err = client.team("NOPE").unwrap_err();

    assert_eq!(
        err.to_string(),
        "no Linear team with the key \"NOPE\"; the API key sees ENG, OPS"
    );
}
