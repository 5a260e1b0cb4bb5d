//! `notify`: messages to a person through webhooks of the tests' own and a command, sent off
//! the loop's thread, never twice on `--resume`, and the webhook URL never shown anywhere.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http_server::{HttpServer, Reply, Request};
use common::{Project, code, stderr, stdout};
use serde_json::json;

/// A secret part of every webhook path: it must never be seen outside the request itself.
const SECRET: &str = "T0SECRET/B0SECRET/XyZsEcReTtOkEn";

/// A webhook server recording every request, answering each with `status`.
fn webhook(status: u16) -> (HttpServer, Arc<Mutex<Vec<Request>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let server = HttpServer::start(move |_, request| {
        record.lock().unwrap().push(request);
        Some(Reply::json(status, &json!({"ok": status == 200})))
    });
    (server, seen)
}

fn url(server: &HttpServer) -> String {
    format!("http://127.0.0.1:{}/services/{SECRET}", server.port())
}

/// A project whose agent is `script` (sh), with `frontmatter` after the agent line.
fn scripted(script: &str, frontmatter: &str) -> Project {
    let p = Project::new(&format!("agent: sh agent.sh\n{frontmatter}"), "x\n");
    std::fs::write(p.path().join("agent.sh"), script).unwrap();
    p
}

/// An agent rate-limited (Claude Code's usage-limit words) until `reset` (Unix seconds) in the
/// iterations listed, done at once in the others; each iteration touches `iterN`.
fn limited_agent(reset: u64, limited: &[u64]) -> String {
    let cases: Vec<String> = limited.iter().map(u64::to_string).collect();
    format!(
        "cat >/dev/null\ntouch \"iter$RALPH_ITERATION\"\ncase \"$RALPH_ITERATION\" in {}) \
         echo \"Claude AI usage limit reached|{reset}\"; exit 1;; esac\nexit 0\n",
        cases.join("|")
    )
}

fn an_hour_from_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600
}

fn requests(seen: &Arc<Mutex<Vec<Request>>>) -> Vec<Request> {
    seen.lock().unwrap().clone()
}

/// Every file under `dir`, read as text (lossy).
fn every_file(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(every_file(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            files.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    files
}

#[test]
fn each_format_posts_its_own_payload_when_the_run_ends() {
    for format in ["json", "slack", "discord", "ntfy"] {
        let (server, seen) = webhook(200);
        let p = scripted(
            "cat >/dev/null\n",
            &format!("notify:\n  webhook: {}\n  format: {format}", url(&server)),
        );
        let out = p.run(&["run", "-n", "1"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let got = requests(&seen);
        assert_eq!(got.len(), 1, "{format}: one message: {got:#?}");
        let request = &got[0];
        assert_eq!(request.line(), format!("POST /services/{SECRET}"));
        let folder = std::fs::canonicalize(p.path()).unwrap();
        let message = match format {
            "json" => {
                let body = request.json();
                assert_eq!(body["type"], "RUN_ENDED", "{body}");
                assert_eq!(
                    (&body["notify"], &body["reason"]),
                    (&json!("ended"), &json!("max_iterations"))
                );
                body["message"].as_str().unwrap().to_owned()
            }
            "slack" => request.json()["text"].as_str().unwrap().to_owned(),
            "discord" => request.json()["content"].as_str().unwrap().to_owned(),
            _ => {
                assert_eq!(request.header("title"), Some("ralph: max_iterations"));
                assert!(
                    request
                        .header("content-type")
                        .unwrap()
                        .starts_with("text/plain")
                );
                request.body.clone()
            }
        };
        assert!(
            message.starts_with("ralph: the run ended: max_iterations after 1 iteration(s)"),
            "{format}: {message}"
        );
        assert!(
            message.contains(&format!("folder: {}", folder.display()))
                || message.contains(&format!("folder: {}", p.path().display())),
            "{format}: {message}"
        );
    }
}

#[test]
fn a_failed_run_says_how_to_go_on_and_a_command_gets_the_message() {
    let p = scripted(
        "cat >/dev/null\nexit 1\n",
        "failure: {delay: 5ms, max_consecutive: 1}\nnotify:\n  command: printf '%s' \
         \"{{ message }}\" > message.txt",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let message = std::fs::read_to_string(p.path().join("message.txt")).expect("the command ran");
    assert!(
        message.starts_with("ralph: the run ended: agent_failing after 1 iteration(s), exit 1"),
        "{message}"
    );
    assert!(message.contains("--resume"), "{message}");
}

#[test]
fn a_rate_limit_is_told_once_and_not_again_on_resume() {
    let (server, seen) = webhook(200);
    let reset = an_hour_from_now();
    let p = scripted(
        &limited_agent(reset, &[1, 2]),
        &format!(
            "rate_limit: {{max_wait: 10ms}}\nnotify:\n  on: [rate_limited]\n  webhook: {}",
            url(&server)
        ),
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = p.run(&["run", "--resume", "--now", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        p.path().join("iter2").exists(),
        "the resumed run ran iteration 2"
    );
    let got = requests(&seen);
    assert_eq!(got.len(), 1, "the same limit is told once: {got:#?}");
    let body = got[0].json();
    assert_eq!(
        (&body["type"], &body["notify"]),
        (&json!("RATE_LIMITED"), &json!("rate_limited"))
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("the agent is rate-limited until"),
        "{body}"
    );
}

#[test]
fn a_slow_webhook_does_not_hold_the_loop_up() {
    // The webhook answers its first request only once the loop has gone on to iteration 2: a
    // loop that waited for it would see no answer, time out and try again.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let dir = tempfile::tempdir().unwrap();
    let iter2 = dir.path().join("agent-ran-iteration-2");
    let marker = iter2.clone();
    let server = HttpServer::start(move |_, request: Request| {
        record.lock().unwrap().push(request);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !marker.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        Some(Reply::json(200, &json!({"ok": true})))
    });
    let p = scripted(
        &format!(
            "cat >/dev/null\n[ \"$RALPH_ITERATION\" = 2 ] && {{ touch '{}'; exit 0; }}\n\
             echo \"Claude AI usage limit reached|{}\"; exit 1\n",
            iter2.display(),
            an_hour_from_now()
        ),
        &format!(
            "rate_limit: {{max_wait: 10ms}}\nnotify:\n  on: [rate_limited]\n  webhook: {}",
            url(&server)
        ),
    );
    let out = p.run(&["run", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(iter2.exists());
    let got = requests(&seen);
    assert_eq!(
        got.len(),
        1,
        "answered at its first try, which only the loop going on allowed: {got:#?}"
    );
    assert!(
        !stderr(&out).contains("could not be sent"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_failing_webhook_is_one_warning_and_the_run_goes_on() {
    let (server, seen) = webhook(500);
    let p = scripted(
        &limited_agent(an_hour_from_now(), &[1, 2]),
        &format!(
            "rate_limit: {{max_wait: 10ms}}\nnotify:\n  on: [rate_limited, ended]\n  webhook: {}",
            url(&server)
        ),
    );
    let out = p.run(&["run", "-n", "3"]);
    assert_eq!(
        code(&out),
        0,
        "a failing webhook is no failure: {}",
        stderr(&out)
    );
    assert_eq!(p.run_ended()["iterations"], 3);
    assert!(requests(&seen).len() >= 3, "tried again after a 500");
    let warnings: Vec<String> = p
        .events_of("WARNING")
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_owned())
        .chain(
            stderr(&out)
                .lines()
                .filter(|l| l.contains("notification"))
                .map(str::to_owned),
        )
        .filter(|m| m.contains("a notification could not be sent"))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning: {warnings:#?}\n{}",
        stderr(&out)
    );
    assert!(warnings[0].contains("HTTP 500"), "{}", warnings[0]);
}

#[test]
fn the_webhook_url_is_never_shown() {
    let (server, seen) = webhook(500);
    let p = scripted(
        &limited_agent(an_hour_from_now(), &[1]),
        &format!(
            "rate_limit: {{max_wait: 10ms}}\nnotify:\n  on: [rate_limited, ended]\n  webhook: \
             [\"{}\", \"${{RALPH_TEST_WEBHOOK}}\"]\n  format: slack",
            url(&server)
        ),
    );
    let hook = url(&server);
    let mut outputs = Vec::new();
    for args in [
        &["check"][..],
        &["run", "-n", "2", "--log-dir", ".ralph/runs"][..],
        &["notify", "--test"][..],
        &["runs"][..],
        &["status"][..],
        &["report"][..],
    ] {
        let out = p
            .ralph(args)
            .env("RALPH_TEST_WEBHOOK", &hook)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        outputs.push((args.join(" "), stdout(&out), stderr(&out)));
    }
    assert!(requests(&seen).len() >= 4, "both webhooks were tried");
    let check = &outputs[0].1;
    assert!(
        check.contains(&format!(
            "notify          on rate_limited, ended · webhook http://127.0.0.1:{}/… (slack) · \
             webhook ${{RALPH_TEST_WEBHOOK}} (slack)",
            server.port()
        )),
        "{check}"
    );
    for (args, out, err) in &outputs {
        assert!(
            !out.contains("SECRET") && !err.contains("SECRET"),
            "ralph {args}:\n{out}\n{err}"
        );
    }
    for (path, text) in every_file(p.path()) {
        assert!(
            !text.contains("SECRET") || path.ends_with("RALPH.md"),
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_variable_that_is_not_set_is_an_error_before_the_run_starts() {
    let p = scripted(
        "cat >/dev/null\ntouch ran\n",
        "notify:\n  webhook: https://hooks.example.test/${RALPH_TEST_NOT_SET}",
    );
    let out = p
        .ralph(&["run", "-n", "1"])
        .env_remove("RALPH_TEST_NOT_SET")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "RALPH.md: notify.webhook: `${RALPH_TEST_NOT_SET}` is not set in the environment"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!p.path().join("ran").exists());
}

#[test]
fn notify_test_sends_one_test_message() {
    let (server, seen) = webhook(200);
    let p = scripted(
        "cat >/dev/null\n",
        &format!("notify:\n  webhook: {}", url(&server)),
    );
    let out = p.run(&["notify", "--test"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("sent: webhook http://127.0.0.1:{}/…\n", server.port())
    );
    let got = requests(&seen);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json()["type"], "NOTIFY_TEST");
}
