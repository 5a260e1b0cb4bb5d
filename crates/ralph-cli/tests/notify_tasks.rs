//! `notify` with a task list: a blocked task and a question are told in words (the reason, the
//! question, where to answer), and a question met again by `ralph run --resume` is not told
//! twice.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http_server::{HttpServer, Reply, Request};
use common::{code, send_signal, stderr, todo_repo};
use serde_json::{Value, json};

/// A JSON webhook recording each body.
fn webhook() -> (HttpServer, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let server = HttpServer::start(move |_, request: Request| {
        record.lock().unwrap().push(request.json());
        Some(Reply::json(200, &json!({})))
    });
    (server, seen)
}

fn notify(server: &HttpServer) -> String {
    format!(
        "notify:\n  webhook: http://127.0.0.1:{}/hook",
        server.port()
    )
}

fn of(seen: &Arc<Mutex<Vec<Value>>>, what: &str) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|b| b["notify"] == what)
        .cloned()
        .collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 30s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_blocked_task_is_told_with_its_reason_and_the_task() {
    let (server, seen) = webhook();
    let p = todo_repo(
        &format!(
            "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\n{}",
            notify(&server)
        ),
        "x\n",
        "cat >/dev/null\necho '<!-- ralph:state blocked reason=\"needs a person\" -->'\n",
        "- [ ] Give up\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let blocked = of(&seen, "blocked");
    assert_eq!(blocked.len(), 1, "{:#?}", seen.lock().unwrap());
    assert_eq!(blocked[0]["type"], "STORY_BLOCKED");
    let message = blocked[0]["message"].as_str().unwrap();
    let id = blocked[0]["story_id"].as_str().unwrap();
    assert!(
        message.starts_with("ralph: a task is blocked: ") && message.contains("needs a person\n"),
        "{message}"
    );
    assert!(message.contains(&format!("\ntask: {id}\n")), "{message}");
    let ended = of(&seen, "ended");
    assert_eq!(ended.len(), 1);
    assert!(
        ended[0]["message"]
            .as_str()
            .unwrap()
            .contains("ralph run --resume"),
        "{}",
        ended[0]["message"]
    );
}

#[test]
fn a_question_is_told_once_even_when_the_run_is_resumed() {
    let (server, seen) = webhook();
    let agent = r#"prompt=$(cat)
case "$prompt" in
*"ANSWER=Use axum."*) echo web > web.txt; git add web.txt && git commit -qm web ;;
*) echo '<!-- ralph:state ask question="Which framework?" -->' ;;
esac
"#;
    let p = todo_repo(
        &format!(
            "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\ndone_when:\n  - 'true'\n{}",
            notify(&server)
        ),
        "ANSWER={{ task.answer }}\n",
        agent,
        "- [ ] Build the web app\n",
    );
    let mut child = p.spawn(&["run"]);
    wait_until("the question told", || !of(&seen, "asked").is_empty());
    send_signal(child.id(), libc::SIGTERM);
    assert!(!child.wait().unwrap().success());

    // Resumed before the answer: the run waits for it again, and says nothing new. (The
    // stopped run's events go first, so the wait seen is the resumed run's.)
    std::fs::remove_file(p.events_path()).unwrap();
    let child = p.spawn(&["run", "--resume"]);
    wait_until("the resumed run waiting", || {
        p.events_of("WAIT_STARTED")
            .iter()
            .any(|w| w["reason"] == "task")
    });
    std::fs::write(
        p.path().join("TODO.md"),
        "- [ ] Build the web app\n  <!-- ralph: question: Which framework? -->\n  Use axum.\n",
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}\n{:#?}", stderr(&out), p.events());

    let asked = of(&seen, "asked");
    assert_eq!(asked.len(), 1, "told once: {asked:#?}");
    let message = asked[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("ralph: the agent asks: \"Which framework?\"\n"),
        "{message}"
    );
    assert!(message.contains("answer it in TODO.md"), "{message}");
    let ended: Vec<_> = of(&seen, "ended")
        .iter()
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(ended.last(), Some(&json!("stories_done")), "{ended:?}");
}
