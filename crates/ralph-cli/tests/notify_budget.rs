//! `notify` on `budget` (issue 41, item 1): a run stopped by its budget sends one message that
//! says so, with the cost, in place of the `ended` one.

use crate::common;

use std::sync::{Arc, Mutex};

use common::http_server::{HttpServer, Reply, Request};
use common::{Project, code, stderr};
use serde_json::json;

fn webhook() -> (HttpServer, Arc<Mutex<Vec<Request>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let server = HttpServer::start(move |_, request| {
        record.lock().unwrap().push(request);
        Some(Reply::json(200, &json!({"ok": true})))
    });
    (server, seen)
}

#[test]
fn a_run_stopped_by_max_cost_sends_the_budget_message() {
    let (server, seen) = webhook();
    // Claude Code's result line: $0.60 a run, so a $1 budget is spent after two.
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\noutput: claude-stream-json\nmax_cost: 1\n\
             notify:\n  on: [ended, budget]\n  webhook: http://127.0.0.1:{}/hook",
            server.port()
        ),
        "x\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        "cat >/dev/null\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\
         \"result\":\"ok\",\"total_cost_usd\":0.6}'\n",
    )
    .unwrap();
    let out = p.run(&["run", "-n", "5"]);
    assert_eq!(code(&out), 1, "a budget ending: {}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "max_cost");

    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "one message, not also `ended`: {got:#?}");
    let body = got[0].json();
    assert_eq!(
        (&body["type"], &body["notify"], &body["reason"]),
        (&json!("RUN_ENDED"), &json!("budget"), &json!("max_cost"))
    );
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("the run stopped at its budget (max_cost) after 2 iteration(s)"),
        "{message}"
    );
    assert!(message.contains("$1.20"), "the cost so far: {message}");
}
