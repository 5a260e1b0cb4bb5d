//! `notify` in a parallel run (issue 41, item 2): the coordinator's events (a lane's task
//! blocked, the run's end) send messages through the same path as a single run's, each blocked
//! task named once, and a burst of lanes blocking goes as few messages, never one per lane
//! more than once.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http_server::{HttpServer, Reply, Request};
use common::parallel::TODO_AGENT;
use common::{Project, stderr};
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

/// A repository taking its tasks from TODO.md (`todo`), `agent` as the agent (sh), and a
/// `notify` block posting in Slack's format to `server`.
fn todo_repo(server: &HttpServer, agent: &str, todo: &str) -> Project {
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ndone_when:\n  - 'ls *.done >/dev/null 2>&1'\n\
             convergence: {{max_attempts: 5, backoff: 10ms, max_backoff: 10ms}}\n\
             failure: {{delay: 10ms, max_delay: 10ms}}\ntasks:\n  markdown: TODO.md\n\
             notify:\n  webhook: http://127.0.0.1:{}/hook\n  format: slack",
            server.port()
        ),
        "ID={{ task.id }}\nTITLE={{ task.title }}\nANSWER={{ task.answer }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join("TODO.md"), todo).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    common::git_repo(dir);
    p
}

fn texts(seen: &Arc<Mutex<Vec<Request>>>) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| r.json()["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn lanes_that_block_and_the_end_of_a_parallel_run_are_notified() {
    let (server, seen) = webhook();
    let p = todo_repo(
        &server,
        TODO_AGENT,
        "- [ ] Refuse one\n- [ ] Refuse two\n- [ ] Refuse three\n- [ ] Do that\n",
    );

    let out = p.run(&["run", "--parallel", "4"]);
    let said = stderr(&out);
    assert!(!said.contains("sends no messages"), "{said}");
    let ended = p.events_of("PARALLEL_ENDED");
    assert_eq!(ended.len(), 1, "{said}");
    assert_eq!(ended[0]["blocked"], 3);

    let posts = texts(&seen);
    let all = posts.join("\n\n");
    assert_eq!(all.matches("a task is blocked: ").count(), 3, "{all}");
    let blocked = p.events_of("TASK_BLOCKED");
    assert_eq!(blocked.len(), 3, "{said}");
    for event in &blocked {
        let id = event["task_id"].as_str().unwrap();
        assert!(all.contains(&format!("task: {id}\n")), "{id}: {all}");
    }
    assert_eq!(
        all.matches("ralph: the parallel run ended: stories_blocked")
            .count(),
        1,
        "{all}"
    );
    // The last post ends with the run's end: the blocks before it, at most one post each.
    assert!(posts.len() <= 4, "{posts:#?}");
    assert!(
        posts.last().unwrap().contains("the parallel run ended"),
        "{posts:#?}"
    );
}

/// "Ask …" asks which framework until its prompt has an answer; any other task is done.
const ASKING_AGENT: &str = r#"prompt=$(cat)
id=$(printf '%s\n' "$prompt" | sed -n 's/^ID=//p')
title=$(printf '%s\n' "$prompt" | sed -n 's/^TITLE=//p')
answer=$(printf '%s\n' "$prompt" | sed -n 's/^ANSWER=//p')
case "$title" in
Ask*)
    case "$answer" in
    "" | "{{"*) echo '<!-- ralph:state ask question="Which framework?" -->' ;;
    *) echo "$answer" > "$id.done" ;;
    esac
    ;;
*) echo "work of $title" > "$id.done" ;;
esac
"#;

#[test]
fn a_lane_that_asks_a_person_is_notified_with_the_question_and_where_to_answer() {
    let (server, seen) = webhook();
    let p = todo_repo(
        &server,
        ASKING_AGENT,
        "- [ ] Add the cart\n- [ ] Ask about the framework\n",
    );
    let mut child = p.spawn(&["run", "--parallel", "2"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !texts(&seen).iter().any(|t| t.contains("the agent asks")) {
        assert!(
            Instant::now() < deadline,
            "no question told within 60s: {:#?}",
            p.events()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The lane waits for the answer: stop the run (Ctrl+C twice).
    common::send_signal(child.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    common::send_signal(child.id(), libc::SIGINT);
    let _ = child.wait();
    let all = texts(&seen).join("\n\n");
    assert_eq!(all.matches("the agent asks").count(), 1, "{all}");
    let asked = &p.events_of("LANE_ASKED")[0];
    let id = asked["task_id"].as_str().unwrap();
    assert!(
        all.contains("ralph: the agent asks: \"Which framework?\"\nfolder: ")
            && all.contains(&format!("task: {id}\n"))
            && all.contains("answer it at TODO.md:3; the lane goes on by itself once answered"),
        "{all}"
    );
}

/// Stops `child` as a person would: Ctrl+C twice.
fn stop(child: &mut std::process::Child) {
    common::send_signal(child.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    common::send_signal(child.id(), libc::SIGINT);
    let _ = child.wait();
}

fn wait_until(what: &str, p: &Project, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} within 60s: {:#?}",
            p.events()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_resumed_parallel_run_does_not_tell_the_same_question_again() {
    let (server, seen) = webhook();
    let p = todo_repo(&server, ASKING_AGENT, "- [ ] Ask about the framework\n");
    let mut child = p.spawn(&["run", "--parallel", "1"]);
    wait_until("the question told", &p, || {
        texts(&seen).iter().any(|t| t.contains("the agent asks"))
    });
    stop(&mut child);

    let mut child = p.spawn(&["run", "--resume"]);
    // The events file is the resumed run's once it says it resumes.
    wait_until("the resumed lane to ask again", &p, || {
        let events = p.events();
        events
            .iter()
            .any(|e| e["type"] == "PARALLEL_STARTED" && e["resumed"] == true)
            && events.iter().any(|e| e["type"] == "LANE_ASKED")
    });
    // A second for the notifier's flush, had it anything to send.
    std::thread::sleep(Duration::from_millis(1500));
    stop(&mut child);
    let all = texts(&seen).join("\n\n");
    assert_eq!(all.matches("the agent asks").count(), 1, "{all}");
}
