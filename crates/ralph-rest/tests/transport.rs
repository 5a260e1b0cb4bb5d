//! One exchange against a real local HTTP server: the secret header sent, answers sorted.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ralph_rest::{Clock, Reply, Token, Transport};
use ralph_test_support::http_server::{HttpServer, Reply as HttpReply};
use serde_json::json;

struct Fixed(SystemTime);

impl Clock for Fixed {
    fn now(&self) -> SystemTime {
        self.0
    }
}

const NOW: u64 = 1_800_000_000;

fn transport(server: &HttpServer) -> Transport {
    let mut transport = Transport::new(
        server.url(),
        "application/json",
        ("private-token", Token::new("glpat-secret")),
        vec![("x-extra", "1")],
    );
    transport.set_clock(Fixed(UNIX_EPOCH + Duration::from_secs(NOW)));
    transport
}

#[test]
fn the_secret_header_and_the_extra_ones_are_sent_and_a_page_number_is_read() {
    let server = HttpServer::start(|_, request| {
        let ok = request.header("private-token") == Some("glpat-secret")
            && request.header("x-extra") == Some("1");
        Some(HttpReply::json(if ok { 200 } else { 401 }, &json!([1, 2])).header("x-next-page", "2"))
    });
    let reply = transport(&server)
        .send_once("GET", &format!("{}/x", server.url()), None)
        .unwrap();
    let Reply::Answer(answer) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(answer.json, json!([1, 2]));
    assert_eq!(answer.next_page.as_deref(), Some("2"));
    assert_eq!(answer.next, None);
}

#[test]
fn gitlabs_rate_limit_headers_are_a_wait_until_the_reset() {
    let server = HttpServer::start(|_, _| {
        Some(
            HttpReply::json(429, &json!({"message": "Retry later"}))
                .header("ratelimit-remaining", "0")
                .header("ratelimit-reset", &(NOW + 30).to_string()),
        )
    });
    let reply = transport(&server)
        .send_once("GET", &format!("{}/x", server.url()), None)
        .unwrap();
    let Reply::RateLimited { status, wait, .. } = reply else {
        panic!("{reply:?}")
    };
    assert_eq!((status, wait), (429, Duration::from_secs(31)));
}

#[test]
fn a_5xx_is_a_server_error_a_401_a_refusal_and_a_2xx_not_json_is_unparsed() {
    let server = HttpServer::start(|_, request| {
        Some(match request.path.as_str() {
            "/502" => HttpReply::json(502, &json!({"message": "Bad gateway"})),
            "/401" => HttpReply::json(401, &json!({"message": "401 Unauthorized"})),
            _ => HttpReply {
                status: 200,
                headers: vec![],
                body: b"<html>".to_vec(),
                ending: ralph_test_support::http_server::Ending::Whole,
            },
        })
    });
    let t = transport(&server);
    let at = |p: &str| format!("{}{p}", server.url());
    assert!(matches!(
        t.send_once("GET", &at("/502"), None),
        Ok(Reply::ServerError(reason)) if reason.contains("502")
    ));
    assert!(matches!(
        t.send_once("GET", &at("/401"), None),
        Ok(Reply::Refused { status: 401, message }) if message == "401 Unauthorized"
    ));
    let Ok(Reply::Answer(answer)) = t.send_once("GET", &at("/ok"), None) else {
        panic!("a 2xx")
    };
    assert!(answer.unparsed().is_some());
}

#[test]
fn the_token_never_shows_in_the_transports_debug_output() {
    let server = HttpServer::start(|_, _| None);
    let shown = format!("{:?}", transport(&server));
    assert!(!shown.contains("glpat-secret"), "{shown}");
}
