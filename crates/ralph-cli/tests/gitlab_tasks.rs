//! GitLab issues as story mode's tasks, end to end: the real `ralph` binary, real git, and the
//! project's fake GitLab (`common/gitlab_server.rs`) on 127.0.0.1, with everything
//! `tasks: github` does (the order, notes, closing or labelling, blocking, asking a person),
//! GitLab's waits (rate limits, 5xx) as the run's, and the token kept out of every output and
//! every child's environment.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::gitlab_server::{Fault, GitlabServer, PROJECT, TOKEN};
use common::{Project, git, git_repo, show};

/// A git repository whose RALPH.md takes its tasks from the fake GitLab's issues labelled
/// `ralph`, with `agent.sh` as the agent, all committed.
fn issues_repo(extra: &str, agent: &str) -> Project {
    let p = Project::new(
        &format!("agent: sh agent.sh\ntasks:\n  gitlab: {PROJECT}\n  label: ralph\n{extra}"),
        "ISSUE={{ task.id }}\nTITLE={{ task.title }}\nURL={{ task.url }}\nBODY={{ task.body }}\nCOMMENTS:\n{{ task.comments }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\nprompts.txt\n").unwrap();
    git_repo(dir);
    p
}

/// `ralph ARGS` against the fake GitLab.
fn ralph(p: &Project, server: &GitlabServer, args: &[&str]) -> std::process::Command {
    let mut cmd = p.ralph(args);
    cmd.env("GITLAB_API_URL", server.url())
        .env("GITLAB_TOKEN", TOKEN)
        .stdin(std::process::Stdio::null());
    cmd
}

fn run(p: &Project, server: &GitlabServer, args: &[&str]) -> std::process::Output {
    ralph(p, server, args).output().expect("ralph runs")
}

fn shown(out: &std::process::Output) -> String {
    format!("{}{}", common::stdout(out), common::stderr(out))
}

/// Each issue: a file of its own, committed by ralph's pass; the prompt kept in prompts.txt.
const WORKING_AGENT: &str = r#"prompt=$(cat)
printf '%s\n=== end ===\n' "$prompt" >> prompts.txt
n=$(printf '%s\n' "$prompt" | sed -n 's/^ISSUE=//p')
echo "work for $n" > "issue-$n.txt"
echo '<!-- ralph:state done -->'
"#;

/// The run's `failure:` backoff in milliseconds.
const FAST_FAILURE: &str = "failure:\n  delay: 10ms\n  max_delay: 40ms\n  max_consecutive: 10\n";

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `WAIT_STARTED` events whose `why` contains `text`, each checked to be the task list's.
fn task_waits(p: &Project, text: &str) -> Vec<serde_json::Value> {
    let waits: Vec<serde_json::Value> = p
        .events_of("WAIT_STARTED")
        .into_iter()
        .filter(|w| w["why"].as_str().unwrap_or_default().contains(text))
        .collect();
    for wait in &waits {
        assert_eq!(wait["reason"], "task", "{wait}");
    }
    waits
}

fn file_commit(dir: &Path, file: &str) -> String {
    git(dir, &["log", "-1", "--format=%h", "--", file])
        .trim()
        .to_owned()
}

#[test]
fn each_labelled_issue_passes_in_order_over_pages_with_a_note_naming_commit_and_branch_then_closes()
{
    let server = GitlabServer::start();
    let older = server.open_issue("Older", "first body", &["ralph"]);
    let unlabelled = server.open_issue("Not for ralph", "", &[]);
    let urgent = server.open_issue("Urgent", "", &["ralph", "priority:1"]);
    let newest = server.open_issue("Newest", "", &["ralph"]);
    server.note_as(older, "a-person", "mind the docs");
    // Two issues a page: the list is three labelled issues, over two pages.
    server.cap_pages(2);
    let p = issues_repo("", WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", shown(&out));
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let order: Vec<&str> = prompts
        .lines()
        .filter_map(|l| l.strip_prefix("ISSUE="))
        .collect();
    assert_eq!(
        order,
        [urgent.to_string(), older.to_string(), newest.to_string()]
    );
    assert!(prompts.contains("BODY=first body"), "{prompts}");
    assert!(prompts.contains("a-person ("), "{prompts}");
    assert!(prompts.contains("mind the docs"), "{prompts}");
    assert!(
        prompts.contains(&format!(
            "URL=https://gitlab.example/{PROJECT}/-/issues/{older}"
        )),
        "{prompts}"
    );
    for issue in [urgent, older, newest] {
        assert!(!server.issue(issue).open, "#{issue} closed");
        let sha = file_commit(p.path(), &format!("issue-{issue}.txt"));
        let notes: Vec<_> = server
            .notes(issue)
            .into_iter()
            .filter(|n| n.author == "ralph-bot")
            .collect();
        assert_eq!(notes.len(), 1, "{notes:#?}");
        assert!(
            notes[0].body.contains(&sha) && notes[0].body.contains("`main`"),
            "{notes:#?}"
        );
    }
    assert!(server.issue(unlabelled).open);
    assert!(server.notes(unlabelled).is_empty());
    assert_eq!(p.run_ended()["reason"], "stories_done");
}

#[test]
fn close_false_keeps_a_passed_issue_open_with_the_done_label() {
    let server = GitlabServer::start();
    let n = server.open_issue("Keep open", "", &["ralph"]);
    let p = issues_repo("  close: false\n", WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", shown(&out));
    let issue = server.issue(n);
    assert!(issue.open);
    assert!(issue.labels.contains(&"ralph:done".to_owned()), "{issue:?}");
    assert_eq!(server.notes(n).len(), 1);
}

#[test]
fn a_blocked_issue_gets_the_label_and_a_note_with_the_reason_and_the_saved_ref() {
    let server = GitlabServer::start();
    let n = server.open_issue("Needs a key", "", &["ralph"]);
    let p = issues_repo(
        "",
        "cat > /dev/null\necho half-done > half.txt\necho '<!-- ralph:state blocked reason=\"needs an API key\" -->'\n",
    );

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 1, "{}", shown(&out));
    let issue = server.issue(n);
    assert!(issue.open, "a blocked issue stays open");
    assert!(
        issue.labels.contains(&"ralph:blocked".to_owned()),
        "{issue:?}"
    );
    let notes = server.notes(n);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].body.contains("needs an API key"), "{notes:#?}");
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(notes[0].body.contains(&saved), "{notes:#?}");
    assert_eq!(show(p.path(), &saved, "half.txt").unwrap(), b"half-done\n");
}

#[test]
fn a_rate_limit_is_the_engines_wait_capped_by_max_wait_and_a_5xx_the_failure_backoffs() {
    let server = GitlabServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    server.fail_later("GET /api/v4/projects", 0, 3, Fault::RateLimitReset(30));
    server.fail_next("POST /api/v4/projects", Fault::Status(500));
    let p = issues_repo(
        &format!("rate_limit:\n  max_wait: 50ms\n{FAST_FAILURE}"),
        WORKING_AGENT,
    );

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", shown(&out));
    assert!(!server.issue(n).open);
    let limits = task_waits(&p, "GitLab rate limit (HTTP 429)");
    assert!(!limits.is_empty(), "{:#?}", p.events());
    for wait in &limits {
        assert_eq!(wait["delay_ms"], 50, "rate_limit.max_wait caps it: {wait}");
    }
    let failures = task_waits(&p, "HTTP 500");
    assert_eq!(failures.len(), 1, "{:#?}", p.events_of("WAIT_STARTED"));
    assert_eq!(failures[0]["delay_ms"], 10, "failure.delay");
    assert_eq!(server.notes(n).len(), 1, "the note posted once");
    assert_eq!(p.run_ended()["reason"], "stories_done");
}

#[test]
fn a_bad_token_a_missing_one_and_a_malformed_answer_are_clear_errors_at_the_start() {
    let server = GitlabServer::start();
    server.open_issue("Task", "", &["ralph"]);
    let p = issues_repo("", "touch agent-ran\necho '<!-- ralph:state done -->'\n");

    let refused = ralph(&p, &server, &["run"])
        .env("GITLAB_TOKEN", "glpat-revoked-secret")
        .output()
        .unwrap();
    let missing = ralph(&p, &server, &["run"])
        .env_remove("GITLAB_TOKEN")
        .output()
        .unwrap();
    server.fail_next("GET /api/v4/projects", Fault::Malformed);
    let malformed = run(&p, &server, &["run"]);

    assert_ne!(common::code(&refused), 0);
    let said = shown(&refused);
    assert!(said.contains("HTTP 401"), "{said}");
    assert!(said.contains("check GITLAB_TOKEN"), "{said}");
    assert!(!said.contains("glpat-revoked-secret"), "{said}");
    assert_eq!(common::code(&missing), 2, "{}", shown(&missing));
    assert!(
        shown(&missing).contains("tasks.gitlab: no GitLab token: set GITLAB_TOKEN"),
        "{}",
        shown(&missing)
    );
    assert_ne!(common::code(&malformed), 0);
    let said = shown(&malformed);
    assert!(
        said.contains("GitLab's answer is not what its REST API documents")
            && said.contains("/projects/acme%2Ftools%2Fwidgets/issues"),
        "{said}"
    );
    assert!(!p.path().join("agent-ran").exists(), "no agent ran");
}

#[test]
fn an_issue_closed_by_a_person_while_its_task_runs_is_dropped_and_its_work_saved() {
    let server = GitlabServer::start();
    let closed = server.open_issue("Closed meanwhile", "", &["ralph"]);
    let next = server.open_issue("Next", "", &["ralph"]);
    // The first issue's agent leaves work and waits for the test to close its issue.
    let agent = r#"n=$(sed -n 's/^ISSUE=//p')
if [ "$n" = 1 ]; then
    echo abandoned > abandoned.txt
    touch started
    while [ ! -f go ]; do sleep 0.05; done
else
    echo "work for $n" > "issue-$n.txt"
fi
echo '<!-- ralph:state done -->'
"#;
    let p = issues_repo("", agent);
    std::fs::write(p.path().join(".git/info/exclude"), "started\ngo\n").unwrap();
    let mut child = ralph(&p, &server, &["run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the agent to start", || p.path().join("started").exists());
    server.close(closed);
    std::fs::write(p.path().join("go"), "").unwrap();
    let status = child.wait().unwrap();

    assert!(status.success(), "{:#?}", p.events());
    assert!(server.notes(closed).is_empty(), "no word on a closed issue");
    assert!(!server.issue(next).open, "the next issue passed");
    assert!(!p.path().join("abandoned.txt").exists());
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        show(p.path(), &saved, "abandoned.txt").unwrap(),
        b"abandoned\n"
    );
    let warnings = p.events_of("WARNING");
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().unwrap_or_default().contains("closed")),
        "{warnings:#?}"
    );
}

/// Asks once, then, with the answer in its prompt, does the work.
const ASKING_AGENT: &str = r#"prompt=$(cat)
printf '%s\n=== end ===\n' "$prompt" >> prompts.txt
if printf '%s' "$prompt" | grep -q 'Use Postgres'; then
    echo postgres > db.txt
    echo '<!-- ralph:state done -->'
else
    echo '<!-- ralph:state ask question="Postgres or SQLite?" -->'
fi
"#;

#[test]
fn a_question_is_a_note_on_the_issue_and_a_persons_reply_reaches_the_next_prompt() {
    let server = GitlabServer::start();
    let n = server.open_issue("Pick a database", "", &["ralph"]);
    let p = issues_repo("", ASKING_AGENT);
    let mut child = ralph(&p, &server, &["run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    let asked = server.wait_for_notes(n, Duration::from_secs(60), |c| !c.is_empty());
    assert!(asked[0].body.contains("Postgres or SQLite?"), "{asked:#?}");
    let at = format!(
        "https://gitlab.example/{PROJECT}/-/issues/{n}#note_{}",
        asked[0].id
    );
    wait_until("status to say it waits", || {
        common::stdout(&ralph(&p, &server, &["status"]).output().unwrap())
            .contains(&format!("waiting for an answer on {at}"))
    });
    server.note_as(n, "a-person", "Use Postgres");
    let status = child.wait().unwrap();

    assert!(status.success(), "{:#?}", p.events());
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let last = prompts.split("=== end ===").nth(1).unwrap();
    assert!(last.contains("Use Postgres"), "{prompts}");
    assert!(!server.issue(n).open);
    assert_eq!(show(p.path(), "HEAD", "db.txt").unwrap(), b"postgres\n");
}

#[test]
fn no_child_has_the_gitlab_token_nor_an_address_holding_one() {
    let server = GitlabServer::start();
    let n = server.open_issue("Do it", "", &["ralph"]);
    let secret = "glpat-secret-in-the-url";
    let url = server
        .url()
        .replacen("://", &format!("://oauth2:{secret}@"), 1);
    server.fail_next("GET /api/v4/projects", Fault::Status(502));
    let p = issues_repo(
        "failure:\n  delay: 10ms\n",
        "env > env-agent.txt\necho work > work.txt\necho '<!-- ralph:state done -->'\n",
    );
    std::fs::write(p.path().join(".git/info/exclude"), "env-agent.txt\n").unwrap();

    let out = ralph(&p, &server, &["run"])
        .env("GITLAB_API_URL", &url)
        .output()
        .unwrap();

    assert_eq!(common::code(&out), 0, "{}", shown(&out));
    assert!(!server.issue(n).open, "the token reached GitLab");
    let env = std::fs::read_to_string(p.path().join("env-agent.txt")).unwrap();
    assert!(env.contains("RALPH_RUN_ID="), "{env}");
    assert!(!env.contains(TOKEN) && !env.contains(secret), "{env}");
    let printed = format!(
        "{}{}",
        shown(&out),
        std::fs::read_to_string(p.events_path()).unwrap()
    );
    assert!(printed.contains("http://***@127.0.0.1:"), "{printed}");
    assert!(
        !printed.contains(secret) && !printed.contains(TOKEN),
        "{printed}"
    );
}

#[test]
fn a_run_stopped_while_waiting_for_an_answer_resumes_waiting_and_reads_it() {
    let server = GitlabServer::start();
    let n = server.open_issue("Pick a database", "", &["ralph"]);
    let p = issues_repo("", ASKING_AGENT);
    let child = ralph(&p, &server, &["run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_notes(n, Duration::from_secs(60), |c| !c.is_empty());
    p.wait_for("WAIT_STARTED", 1);
    common::send_signal(child.id(), libc::SIGTERM);
    let mut child = child;
    child.wait().unwrap();

    server.note_as(n, "a-person", "Use Postgres");
    let out = run(&p, &server, &["run", "--resume"]);

    assert_eq!(common::code(&out), 0, "{}", shown(&out));
    assert_eq!(
        server.notes(n).len(),
        3,
        "the question once, the answer, the pass"
    );
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    assert!(prompts.contains("Use Postgres"), "{prompts}");
    assert!(!server.issue(n).open);
}

#[test]
fn an_issue_closed_while_ralph_waits_for_its_answer_drops_its_task_and_the_next_runs() {
    let server = GitlabServer::start();
    let one = server.open_issue("Pick a database", "", &["ralph"]);
    let two = server.open_issue("Write the README", "", &["ralph"]);
    let p = issues_repo(
        "",
        r#"case "$(cat)" in
*"ISSUE=1"*) echo started > one.txt; echo '<!-- ralph:state ask question="Postgres or SQLite?" -->' ;;
*) echo '<!-- ralph:state done -->' ;;
esac
"#,
    );
    let mut child = ralph(&p, &server, &["run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_notes(one, Duration::from_secs(60), |c| !c.is_empty());
    p.wait_for("WAIT_STARTED", 1);
    server.close(one);
    let status = child.wait().unwrap();

    assert!(status.success(), "{:#?}", p.events());
    let warnings = p.events_of("WARNING");
    assert!(
        warnings.iter().any(|w| w["message"]
            .as_str()
            .unwrap_or_default()
            .contains("is no longer in the list")),
        "{warnings:#?}"
    );
    assert_eq!(show(p.path(), "HEAD", "one.txt"), None);
    assert!(!server.issue(two).open);
    let passed: Vec<String> = p
        .events_of("STORY_PASSED")
        .iter()
        .map(|e| e["story_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(passed, [two.to_string()]);
}
