//! A question answered as people answer: a checklist answer written at column 0 under the
//! question is seen; a question a person deleted ends the wait with a `WARNING`; an issue closed
//! while ralph waits for its answer drops its task, as at any other time.

use crate::common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::github_server::{GithubServer, REPO, TOKEN};
use common::{Project, git_repo, show, todo_repo};

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 30s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `child`'s exit code, once it ends (killed, and the test failed, past 30 s).
fn ended(mut child: Child, p: &Project) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run still waits after 30s: {:#?}", p.events());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the run waits for an answer.
fn waits_for_answer(p: &Project) {
    wait_until("a wait for the answer", || {
        p.events_of("WAIT_STARTED")
            .iter()
            .any(|w| w["reason"] == "task")
            || !p.events_of("RUN_ENDED").is_empty()
    });
    assert!(p.events_of("RUN_ENDED").is_empty(), "{:#?}", p.events());
}

fn warnings(p: &Project) -> Vec<String> {
    p.events_of("WARNING")
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_owned())
        .collect()
}

/// Asks until the answer is in its prompt, then writes `web.txt` and commits.
const ASKING_AGENT: &str = r#"prompt=$(cat)
case "$prompt" in
*"ANSWER=Use axum."*) echo web > web.txt; git add web.txt && git commit -qm web ;;
*) echo '<!-- ralph:state ask question="Which framework?" -->' ;;
esac
"#;

#[test]
fn an_answer_written_at_column_0_under_the_question_is_seen() {
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\ndone_when:\n  - 'test -f web.txt'",
        "ANSWER={{ task.answer }}\n",
        ASKING_AGENT,
        "- [ ] Build the web app\n",
    );
    let dir = p.path();
    let child = p.spawn(&["run"]);
    waits_for_answer(&p);
    let asked = std::fs::read_to_string(dir.join("TODO.md")).unwrap();
    assert_eq!(
        asked,
        "- [ ] Build the web app\n  <!-- ralph: question: Which framework? -->\n"
    );
    // Written as many people write it: at column 0, right under the question.
    std::fs::write(dir.join("TODO.md"), format!("{asked}Use axum.\n")).unwrap();
    assert_eq!(ended(child, &p), 0, "{:#?}", p.events());
    assert_eq!(p.run_ended()["reason"], "stories_done");
    assert_eq!(show(dir, "HEAD", "web.txt").unwrap(), b"web\n");
}

/// Asks on its first iteration only; then does the work, answer or not.
const ASKING_ONCE: &str = r#"if [ -e .asked ]; then
    echo work > work.txt; git add work.txt && git commit -qm work
else
    touch .asked
    echo '<!-- ralph:state ask question="Which framework?" -->'
fi
"#;

#[test]
fn a_question_a_person_deleted_ends_the_wait_with_a_warning() {
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\ndone_when:\n  - 'test -f work.txt'",
        "{{ task.title }}\n",
        ASKING_ONCE,
        "- [ ] Build the web app\n",
    );
    std::fs::write(
        p.path().join(".gitignore"),
        "prompts/\nevents.jsonl\n.asked\n",
    )
    .unwrap();
    common::commit_all(p.path(), "ignore .asked");
    let child = p.spawn(&["run"]);
    waits_for_answer(&p);
    std::fs::write(p.path().join("TODO.md"), "- [ ] Build the web app\n").unwrap();
    assert_eq!(ended(child, &p), 0, "{:#?}", p.events());
    assert_eq!(p.run_ended()["reason"], "stories_done");
    let said = warnings(&p);
    assert!(
        said.iter().any(|m| m
            .contains("TODO.md:2: the question \"Which framework?\" is no longer there")
            && m.contains("the wait for its answer ends")),
        "{said:#?}"
    );
}

/// A git repository whose RALPH.md takes its tasks from the fake GitHub's issues labelled
/// `ralph`, with `agent` as `agent.sh`.
fn issues_repo(agent: &str) -> Project {
    let p = Project::new(
        &format!("agent: sh agent.sh\ntasks:\n  github: {REPO}\n  label: ralph"),
        "ISSUE={{ task.id }}\n",
    );
    std::fs::write(p.path().join("agent.sh"), agent).unwrap();
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\n.asked\n").unwrap();
    git_repo(p.path());
    p
}

fn spawn_against(p: &Project, server: &GithubServer) -> Child {
    p.ralph(&["run"])
        .env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Issue 1's task always asks; any other issue's is done at once.
const ASKING_ON_ONE: &str = r#"case "$(cat)" in
*"ISSUE=1"*) echo started > one.txt; echo '<!-- ralph:state ask question="Postgres or SQLite?" -->' ;;
*) echo '<!-- ralph:state done -->' ;;
esac
"#;

#[test]
fn an_issue_closed_while_ralph_waits_for_its_answer_drops_its_task() {
    let server = GithubServer::start();
    let one = server.open_issue("Pick a database", "", &["ralph"]);
    let two = server.open_issue("Write the README", "", &["ralph"]);
    let p = issues_repo(ASKING_ON_ONE);
    let child = spawn_against(&p, &server);
    server.wait_for_comments(one, Duration::from_secs(30), |c| !c.is_empty());
    waits_for_answer(&p);
    server.close(one);
    assert_eq!(ended(child, &p), 0, "{:#?}", p.events());
    let said = warnings(&p);
    assert!(
        said.iter().any(|m| m.contains("is no longer in the list")),
        "{said:#?}"
    );
    // The asking task's work is saved and reverted; the other task ran and passed.
    assert_eq!(show(p.path(), "HEAD", "one.txt"), None);
    assert!(!server.issue(two).open);
    let passed: Vec<String> = p
        .events_of("STORY_PASSED")
        .iter()
        .map(|e| e["story_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(passed, [two.to_string()]);
}

/// Asks on its first iteration only; then does the work, answer or not.
const ASKING_ONCE_ON_GITHUB: &str = r#"if [ -e .asked ]; then
    echo '<!-- ralph:state done -->'
else
    touch .asked
    echo '<!-- ralph:state ask question="Postgres or SQLite?" -->'
fi
"#;

#[test]
fn a_question_comment_a_person_deleted_ends_the_wait_with_a_warning() {
    let server = GithubServer::start();
    let n = server.open_issue("Pick a database", "", &["ralph"]);
    let p = issues_repo(ASKING_ONCE_ON_GITHUB);
    let child = spawn_against(&p, &server);
    let asked = server.wait_for_comments(n, Duration::from_secs(30), |c| !c.is_empty());
    waits_for_answer(&p);
    server.delete_comment(asked[0].id);
    assert_eq!(ended(child, &p), 0, "{:#?}", p.events());
    let said = warnings(&p);
    assert!(
        said.iter()
            .any(|m| m.contains("the question \"Postgres or SQLite?\" is no longer there")),
        "{said:#?}"
    );
    assert!(!server.issue(n).open);
}
