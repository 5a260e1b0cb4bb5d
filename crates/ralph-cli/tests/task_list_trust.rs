//! A task list's loose ends in a single loop: a blocked task's mark committed so the next task
//! starts on a clean tree, an `ask` that waits even when the checks pass, and a run that ends
//! with tasks it cannot start saying work is left.

use crate::common;

use std::time::{Duration, Instant};

use common::{code, git, show, stderr, story_repo, todo_repo};

/// The clean-tree check docs/getting-started.md recommends.
const CLEAN_TREE: &str = "done_when:\n  - 'test -z \"$(git status --porcelain)\"'\n\
     convergence: {max_attempts: 2, backoff: 10ms, max_backoff: 10ms}\n\
     failure: {delay: 10ms, max_delay: 10ms}";

#[test]
fn a_blocked_task_is_committed_so_the_next_passes_a_clean_tree_check() {
    let agent = r#"case "$(cat)" in
*"TITLE=Give up"*) echo '<!-- ralph:state blocked reason="needs a person" -->' ;;
*) echo b > b.txt; git add b.txt && git commit -qm b ;;
esac
"#;
    let p = todo_repo(
        &format!("agent: sh agent.sh\ntasks:\n  markdown: TODO.md\n{CLEAN_TREE}"),
        "TITLE={{ task.title }}\n",
        agent,
        "- [ ] Give up\n- [ ] Write b\n",
    );
    let dir = p.path();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_blocked");
    let blocked = p.events_of("STORY_BLOCKED");
    assert_eq!(blocked.len(), 1, "{:#?}", p.events());
    let id = blocked[0]["story_id"].as_str().unwrap().to_owned();
    // The other task passed on its first attempt, its work kept.
    assert_eq!(p.events_of("STORY_PASSED").len(), 1, "{:#?}", p.events());
    assert_eq!(show(dir, "HEAD", "b.txt").unwrap(), b"b\n");
    // The block is a commit of its own holding the mark and the progress.txt entry.
    let subjects = git(dir, &["log", "--format=%s"]);
    assert!(
        subjects.contains(&format!("ralph: {id} blocked")),
        "{subjects}"
    );
    let files = git(
        dir,
        &[
            "show",
            "--name-only",
            "--format=",
            &format!(":/ralph: {id} blocked"),
        ],
    );
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        ["TODO.md", "progress.txt"]
    );
    let todo = String::from_utf8(show(dir, "HEAD", "TODO.md").unwrap()).unwrap();
    assert!(todo.contains("Give up <!-- ralph: blocked"), "{todo}");
    assert!(todo.contains("- [x] Write b"), "{todo}");
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
}

/// Asks on its first iteration; with the answer in its prompt, writes `web.txt` and commits.
const ASKING_AGENT: &str = r#"prompt=$(cat)
case "$prompt" in
*"ANSWER=Use axum."*) echo web > web.txt; git add web.txt && git commit -qm web ;;
*) echo '<!-- ralph:state ask question="Which framework?" -->' ;;
esac
"#;

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 30s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_ask_waits_for_its_answer_even_when_the_checks_pass_and_is_not_an_attempt() {
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\ndone_when:\n  - 'true'",
        "ANSWER={{ task.answer }}\n",
        ASKING_AGENT,
        "- [ ] Build the web app\n",
    );
    let dir = p.path();
    let mut child = p.spawn(&["run"]);
    wait_until("a wait for the answer", || {
        p.events_of("WAIT_STARTED")
            .iter()
            .any(|w| w["reason"] == "task")
            || !p.events_of("RUN_ENDED").is_empty()
    });
    assert!(p.events_of("RUN_ENDED").is_empty(), "{:#?}", p.events());
    // Asking is not an attempt: no checks judged it.
    assert!(p.events_of("ATTEMPT_ENDED").is_empty(), "{:#?}", p.events());

    std::fs::write(
        dir.join("TODO.md"),
        "- [ ] Build the web app\n  <!-- ralph: question: Which framework? -->\n  Use axum.\n",
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(p.run_ended()["reason"], "stories_done");
    let started = p.events_of("STORY_STARTED");
    assert_eq!(started.last().unwrap()["attempt"], 1, "{started:#?}");
    let attempts = p.events_of("ATTEMPT_ENDED");
    assert_eq!(attempts.len(), 1, "{attempts:#?}");
    assert_eq!(attempts[0]["attempt"], 1);
    assert_eq!(show(dir, "HEAD", "web.txt").unwrap(), b"web\n");
}

#[test]
fn an_ask_nothing_is_asked_for_goes_on_past_passing_checks_and_ends_with_work_left() {
    // `ask` without a question puts nothing to a person, as with a list that cannot ask: the
    // loop goes on, never `converged` with the task left.
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\ndone_when:\n  - 'true'",
        "x\n",
        "echo '<!-- ralph:state ask -->'\n",
        "- [ ] Build the web app\n",
    );
    let out = p.run(&["run", "-n", "3"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "max_iterations_work_left");
    assert_eq!(p.events_of("ITERATION_STARTED").len(), 3);
    assert_eq!(ended["stories"]["remaining"], 1, "{ended:#}");
}

#[test]
fn stories_waiting_on_a_blocked_dependency_end_the_run_with_work_left() {
    // US-001 is blocked at once; the other three depend on it and can never start.
    let p = story_repo(
        "echo '<!-- ralph:state blocked reason=\"needs a person\" -->'\n",
        &["Base", "Two", "Three", "Four", "Five"],
    );
    let dir = p.path();
    let mut prd: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("prd.json")).unwrap()).unwrap();
    for i in 1..4 {
        prd["userStories"][i]["dependsOn"] = serde_json::json!(["US-001"]);
    }
    prd["userStories"][4]["dependsOn"] = serde_json::json!(["US-999"]);
    std::fs::write(
        dir.join("prd.json"),
        serde_json::to_string_pretty(&prd).unwrap(),
    )
    .unwrap();
    common::commit_all(dir, "dependencies");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "work_left", "{ended:#}");
    assert_eq!(ended["exit_code"], 1);
    assert_eq!(ended["stories"]["remaining"], 4, "{ended:#}");
    assert_eq!(ended["stories"]["blocked"], 1, "{ended:#}");
}
