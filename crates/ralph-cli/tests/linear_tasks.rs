//! A Linear team's issues as story mode's tasks, end to end: the real `ralph` binary, real git,
//! and the project's fake Linear (`common/linear_server.rs`) on 127.0.0.1.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::linear_server::{Fault, KEY, LinearServer, TEAM};
use common::{Project, git, git_repo, show};

/// A git repository whose RALPH.md takes its tasks from the fake Linear team's issues labelled
/// `ralph`, with `agent.sh` as the agent, all committed. The prompt names the issue and shows
/// its comments.
fn linear_repo(extra: &str, agent: &str) -> Project {
    let p = Project::new(
        &format!("agent: sh agent.sh\ntasks:\n  linear: {TEAM}\n  label: ralph\n{extra}"),
        "ISSUE={{ task.id }}\nTITLE={{ task.title }}\nURL={{ task.url }}\nBODY={{ task.body }}\nCOMMENTS:\n{{ task.comments }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\nprompts.txt\n").unwrap();
    git_repo(dir);
    p
}

/// `ralph ARGS` against the fake Linear, with its key.
fn ralph(p: &Project, server: &LinearServer, args: &[&str]) -> Command {
    let mut cmd = p.ralph(args);
    cmd.env("LINEAR_API_URL", server.url())
        .env("LINEAR_API_KEY", KEY)
        .stdin(Stdio::null());
    cmd
}

fn run(p: &Project, server: &LinearServer, args: &[&str]) -> Output {
    ralph(p, server, args).output().expect("ralph runs")
}

/// Each issue: a file of its own, committed by ralph's pass; the prompt kept in prompts.txt.
const WORKING_AGENT: &str = r#"prompt=$(cat)
printf '%s\n=== end ===\n' "$prompt" >> prompts.txt
n=$(printf '%s\n' "$prompt" | sed -n 's/^ISSUE=//p')
echo "work for $n" > "issue-$n.txt"
echo '<!-- ralph:state done -->'
"#;

/// The run's `failure:` backoff in milliseconds: Linear's network errors and 5xx use it.
const FAST_FAILURE: &str = "failure:\n  delay: 10ms\n  max_delay: 40ms\n  max_consecutive: 10\n";

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn order_of(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.path().join("prompts.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("ISSUE="))
        .map(str::to_owned)
        .collect()
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

#[test]
fn unstarted_labelled_issues_pass_by_priority_each_moved_to_done_with_a_comment() {
    let server = LinearServer::start();
    let plain = server.open_issue("No priority", "first body", &["ralph"], 0);
    let unlabelled = server.open_issue("Not for ralph", "", &[], 1);
    let urgent = server.open_issue("Urgent", "", &["ralph"], 1);
    let parked = server.open_issue("In the backlog", "", &["ralph"], 1);
    server.move_issue(&parked, "Backlog");
    let medium = server.open_issue("Medium", "", &["ralph"], 3);
    // One issue a page: the list is read by its cursors.
    server.cap_pages(1);
    let p = linear_repo("", WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        order_of(&p),
        [urgent.clone(), medium.clone(), plain.clone()]
    );
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    assert!(prompts.contains("BODY=first body"), "{prompts}");
    assert!(
        prompts.contains("URL=https://linear.app/acme/issue/eng-1"),
        "{prompts}"
    );
    for issue in [&urgent, &medium, &plain] {
        assert_eq!(
            server.state_of(issue),
            "Done",
            "{issue}: the first completed state"
        );
        let comments = server.comments(issue);
        assert_eq!(comments.len(), 1, "{comments:#?}");
        let sha = git(
            p.path(),
            &[
                "log",
                "-1",
                "--format=%h",
                "--",
                &format!("issue-{issue}.txt"),
            ],
        );
        assert!(
            comments[0].body.contains(sha.trim()) && comments[0].body.contains("`main`"),
            "{comments:#?}"
        );
    }
    for untouched in [&unlabelled, &parked] {
        assert!(server.comments(untouched).is_empty());
        assert_ne!(server.state_of(untouched), "Done");
    }
    let pages = server
        .asked()
        .iter()
        .filter(|a| a.operation == "Issues" && a.variables["after"].is_string())
        .count();
    assert!(pages >= 2, "the pages after the first are asked by cursor");
}

#[test]
fn a_blocked_issue_gets_a_comment_and_the_blocked_label_made_in_the_team() {
    let server = LinearServer::start();
    let n = server.open_issue("Needs a key", "", &["ralph"], 0);
    let p = linear_repo(
        "",
        "cat > /dev/null\necho half-done > half.txt\necho '<!-- ralph:state blocked reason=\"needs an API key\" -->'\n",
    );

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let issue = server.issue(&n);
    assert_eq!(
        server.state_of(&n),
        "Todo",
        "a blocked issue stays where it was"
    );
    assert!(
        issue.labels.contains(&"ralph:blocked".to_owned()),
        "{issue:?}"
    );
    let made = server.labels();
    assert!(
        made.iter()
            .any(|l| l.name == "ralph:blocked" && l.team.as_deref() == Some("team-eng")),
        "{made:#?}"
    );
    let comments = server.comments(&n);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(
        comments[0].body.contains("needs an API key"),
        "{comments:#?}"
    );
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(comments[0].body.contains(&saved), "{comments:#?}");
    assert_eq!(show(p.path(), &saved, "half.txt").unwrap(), b"half-done\n");
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
fn a_question_is_a_comment_and_a_persons_reply_reaches_the_next_prompt() {
    let server = LinearServer::start();
    let n = server.open_issue("Pick a database", "", &["ralph"], 0);
    let p = linear_repo("", ASKING_AGENT);
    let mut child = ralph(&p, &server, &["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    let asked = server.wait_for_comments(&n, Duration::from_secs(30), |c| !c.is_empty());
    assert!(asked[0].body.contains("Postgres or SQLite?"), "{asked:#?}");
    let url = "https://linear.app/acme/issue/eng-1";
    wait_until("status to say it waits", || {
        common::stdout(&ralph(&p, &server, &["status"]).output().unwrap())
            .contains(&format!("waiting for an answer on {url}"))
    });
    server.comment_as(&n, "a-person", "Use Postgres");
    let status = child.wait().unwrap();

    assert!(status.success(), "{:#?}", p.events());
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let last = prompts.split("=== end ===").nth(1).unwrap();
    assert!(last.contains("Use Postgres"), "{prompts}");
    assert_eq!(server.state_of(&n), "Done");
    assert_eq!(show(p.path(), "HEAD", "db.txt").unwrap(), b"postgres\n");
    assert_eq!(
        server.comments(&n).len(),
        3,
        "the question, the answer, the pass"
    );
}

#[test]
fn a_bad_key_is_a_clear_error_at_the_start_and_the_key_is_never_shown() {
    let server = LinearServer::start();
    server.open_issue("Task", "", &["ralph"], 0);
    let p = linear_repo("", WORKING_AGENT);
    let wrong = "lin_api_wrong_key_never_shown";

    let out = ralph(&p, &server, &["run"])
        .env("LINEAR_API_KEY", wrong)
        .output()
        .unwrap();

    let said = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_ne!(common::code(&out), 0, "{said}");
    assert!(
        said.contains("Linear refused the API key") && said.contains("check LINEAR_API_KEY"),
        "{said}"
    );
    assert_eq!(
        server.operations(),
        ["Viewer"],
        "the key is the first thing asked"
    );
    assert!(!p.path().join("prompts.txt").exists(), "no agent ran");
    let events = std::fs::read_to_string(p.events_path()).unwrap_or_default();
    for text in [&said, &events] {
        assert!(!text.contains(wrong), "the key shown: {text}");
    }

    let out = ralph(&p, &server, &["run"])
        .env_remove("LINEAR_API_KEY")
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("tasks.linear: no Linear API key: set LINEAR_API_KEY"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn a_team_the_key_does_not_see_is_named_with_the_teams_it_does() {
    let server = LinearServer::start();
    let p = Project::new(
        "agent: sh agent.sh\ntasks:\n  linear: DESIGN\n",
        "{{ task.title }}\n",
    );
    std::fs::write(p.path().join("agent.sh"), WORKING_AGENT).unwrap();
    git_repo(p.path());

    let out = run(&p, &server, &["run"]);

    assert_ne!(common::code(&out), 0);
    assert!(
        common::stderr(&out)
            .contains("no Linear team with the key \"DESIGN\"; the API key sees ENG, OPS"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn rate_limits_and_5xx_are_waits_and_the_run_goes_on() {
    let server = LinearServer::start();
    let n = server.open_issue("Task", "", &["ralph"], 0);
    // Linear's own rate limit (the RATELIMITED error, its reset a minute away), a bare 429,
    // then a 503 and a hang-up: each a wait, then Linear answers again.
    server.fail_next("Issues", Fault::RateLimited(60_000));
    server.fail_next("Issues", Fault::TooManyRequests);
    server.fail_next("Comments", Fault::Status(503));
    server.fail_next("CommentCreate", Fault::Hangup);
    let p = linear_repo(
        &format!("rate_limit:\n  max_wait: 50ms\n{FAST_FAILURE}"),
        WORKING_AGENT,
    );

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_done");
    assert_eq!(server.state_of(&n), "Done");
    assert_eq!(server.comments(&n).len(), 1, "the pass comment once");
    let limits = task_waits(&p, "Linear rate limit");
    assert_eq!(limits.len(), 2, "{:#?}", p.events_of("WAIT_STARTED"));
    for wait in &limits {
        assert_eq!(wait["delay_ms"], 50, "rate_limit.max_wait caps it: {wait}");
    }
    assert!(
        !task_waits(&p, "HTTP 503").is_empty(),
        "{:#?}",
        p.events_of("WAIT_STARTED")
    );
}

#[test]
fn a_malformed_answer_ends_the_run_naming_the_operation() {
    let server = LinearServer::start();
    server.open_issue("Task", "", &["ralph"], 0);
    server.fail_next("Issues", Fault::NotJson);
    let p = linear_repo("", WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_ne!(common::code(&out), 0);
    let said = common::stderr(&out);
    assert!(
        said.contains("Issues at http://127.0.0.1:")
            && said.contains("Linear's answer is not what its GraphQL API documents: not JSON"),
        "{said}"
    );
    assert!(!p.path().join("prompts.txt").exists(), "no agent ran");
}

#[test]
fn an_issue_a_person_moves_while_its_task_runs_is_dropped_and_its_work_saved() {
    let server = LinearServer::start();
    let moved = server.open_issue("Moved meanwhile", "", &["ralph"], 1);
    let next = server.open_issue("Next", "", &["ralph"], 2);
    // The first issue's agent leaves work and waits for the test to move its issue.
    let agent = r#"n=$(sed -n 's/^ISSUE=//p')
if [ "$n" = ENG-1 ]; then
    echo abandoned > abandoned.txt
    touch started
    while [ ! -f go ]; do sleep 0.05; done
else
    echo "work for $n" > "issue-$n.txt"
fi
echo '<!-- ralph:state done -->'
"#;
    let p = linear_repo("", agent);
    std::fs::write(p.path().join(".git/info/exclude"), "started\ngo\n").unwrap();
    let mut child = ralph(&p, &server, &["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the agent to start", || p.path().join("started").exists());
    server.move_issue(&moved, "Canceled");
    std::fs::write(p.path().join("go"), "").unwrap();
    let status = child.wait().unwrap();

    assert!(status.success(), "{:#?}", p.events());
    assert!(
        server.comments(&moved).is_empty(),
        "no word on a cancelled issue"
    );
    assert_eq!(
        server.state_of(&moved),
        "Canceled",
        "left as the person put it"
    );
    assert_eq!(server.state_of(&next), "Done", "the next issue passed");
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        show(p.path(), &saved, "abandoned.txt").unwrap(),
        b"abandoned\n"
    );
    assert_eq!(show(p.path(), "HEAD", "abandoned.txt"), None);
}

#[test]
fn the_agent_runs_without_the_linear_key_unless_the_ralph_md_passes_it_on() {
    let server = LinearServer::start();
    let n = server.open_issue("Task", "", &["ralph"], 0);
    // The issue's text is the agent's prompt: the key that reads and writes the team stays
    // with ralph.
    let agent = "cat > /dev/null\necho \"key=${LINEAR_API_KEY:-none}\" > \"$KEY_SEEN\"\necho '<!-- ralph:state done -->'\n";
    let outside = tempfile::tempdir().unwrap();
    let seen = outside.path().join("seen");
    let p = linear_repo("", agent);

    let out = ralph(&p, &server, &["run"])
        .env("KEY_SEEN", &seen)
        .output()
        .unwrap();

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "key=none\n");
    assert_eq!(server.state_of(&n), "Done");

    let passing = linear_repo("env:\n  pass: [LINEAR_API_KEY]\n", agent);
    server.open_issue("Another", "", &["ralph"], 0);
    let out = ralph(&passing, &server, &["run"])
        .env("KEY_SEEN", &seen)
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        format!("key={KEY}\n")
    );
}

#[test]
fn run_task_takes_an_identifier_and_passes_that_issue_alone_on_its_branch() {
    let server = LinearServer::start();
    let first = server.open_issue("First", "", &["ralph"], 1);
    let second = server.open_issue("Second", "", &["ralph"], 4);
    let p = linear_repo("", WORKING_AGENT);

    let out = run(&p, &server, &["run", "--task", &second]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    let branch = format!("ralph/{second}");
    let head = git(p.path(), &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(head.trim(), branch);
    assert_eq!(server.state_of(&second), "Done");
    assert_eq!(
        server.state_of(&first),
        "Todo",
        "the other issue is not taken up"
    );
    let comments = server.comments(&second);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].body.contains(&branch), "{comments:#?}");

    let out = run(&p, &server, &["run", "--task", "ENG-99"]);
    assert_eq!(common::code(&out), 2, "nothing ran");
    let err = common::stderr(&out);
    assert!(
        err.contains("Linear team ENG") && err.contains("\"ENG-99\""),
        "{err}"
    );
}

#[test]
fn issues_run_in_parallel_and_each_moves_to_done_with_a_comment_naming_its_landing_commit() {
    let server = LinearServer::start();
    let first = server.open_issue("First", "", &["ralph"], 0);
    let second = server.open_issue("Second", "", &["ralph"], 0);
    let p = linear_repo("done_when:\n  - 'ls issue-*.txt'\n", WORKING_AGENT);

    let out = run(&p, &server, &["run", "--parallel", "2"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    for n in [&first, &second] {
        let landed: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["type"] == "TASK_LANDED" && e["task_id"].as_str() == Some(n))
            .collect();
        assert_eq!(landed.len(), 1, "{n}: {events:#?}");
        let commit = landed[0]["commit"].as_str().unwrap();
        assert!(show(p.path(), commit, &format!("issue-{n}.txt")).is_some());
        assert_eq!(server.state_of(n), "Done");
        let comments = server.comments(n);
        assert!(
            comments.iter().any(|c| c.body.contains(commit)),
            "{n}'s comment names {commit}: {comments:#?}"
        );
    }
}

#[test]
fn a_run_stopped_while_waiting_for_an_answer_resumes_waiting_and_reads_it() {
    let server = LinearServer::start();
    let n = server.open_issue("Pick a database", "", &["ralph"], 0);
    let p = linear_repo("", ASKING_AGENT);
    let mut child = ralph(&p, &server, &["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_comments(&n, Duration::from_secs(30), |c| !c.is_empty());
    p.wait_for("WAIT_STARTED", 1);
    common::send_signal(child.id(), libc::SIGTERM);
    child.wait().unwrap();

    server.comment_as(&n, "a-person", "Use Postgres");
    let out = run(&p, &server, &["run", "--resume"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        server.comments(&n).len(),
        3,
        "the question once, the answer, the pass"
    );
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    assert!(prompts.contains("Use Postgres"), "{prompts}");
    assert_eq!(server.state_of(&n), "Done");
}

#[test]
fn ralph_plan_says_it_cannot_write_into_linear_and_runs_nothing() {
    let server = LinearServer::start();
    let p = linear_repo("", WORKING_AGENT);

    let out = run(&p, &server, &["plan", "-m", "Build the shop"]);

    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("`ralph plan` cannot write tasks into Linear (team ENG) yet"),
        "{}",
        common::stderr(&out)
    );
    assert!(!p.path().join("prompts.txt").exists(), "no agent ran");
    assert!(server.asked().is_empty(), "Linear is not asked");
}

#[test]
fn ctrl_c_during_a_request_linear_does_not_answer_gives_it_up_and_looks_again_at_once() {
    let server = LinearServer::start();
    let n = server.open_issue("Task", "", &["ralph"], 0);
    // A 502 first: the run's own wait takes the signals from then on.
    server.fail_next("Issues", Fault::Status(502));
    server.fail_next("Issues", Fault::Stall(Duration::from_secs(120)));
    let p = linear_repo(FAST_FAILURE, WORKING_AGENT);
    let child = ralph(&p, &server, &["run"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the request Linear does not answer", || {
        server
            .operations()
            .iter()
            .filter(|o| *o == "Issues")
            .count()
            >= 2
    });
    // In the request.
    std::thread::sleep(Duration::from_millis(200));
    let interrupted = Instant::now();
    common::send_signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();

    let shown = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(common::code(&out), 0, "{shown}");
    // The request's own timeout is a minute; the stall two.
    assert!(
        interrupted.elapsed() < Duration::from_secs(45),
        "the request was waited out: {shown}"
    );
    assert!(
        shown.contains("Issues at http://127.0.0.1:")
            && shown.contains("given up, ralph was interrupted"),
        "{shown}"
    );
    assert_eq!(server.state_of(&n), "Done");
}

/// A request Linear does not answer is no silent minute: after 5 s ralph says, once, what it
/// waits for.
#[test]
fn a_request_without_an_answer_is_said_after_five_seconds_without_the_key() {
    let server = LinearServer::start();
    server.open_issue("Task", "", &["ralph"], 0);
    server.fail_next("Viewer", Fault::Stall(Duration::from_secs(120)));
    let p = linear_repo("", WORKING_AGENT);
    let said = tempfile::NamedTempFile::new().unwrap();
    let mut child = ralph(&p, &server, &["run"])
        .stdout(Stdio::null())
        .stderr(said.reopen().unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !std::fs::read_to_string(said.path())
        .unwrap()
        .contains("waiting for Linear")
    {
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "nothing said while Linear did not answer"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    common::send_signal(child.id(), libc::SIGINT);
    child.wait().unwrap();

    let text = std::fs::read_to_string(said.path()).unwrap();
    assert_eq!(text.matches("waiting for Linear").count(), 1, "{text}");
    assert!(
        text.contains(&format!("Viewer at {}: no answer after 5s", server.url())),
        "{text}"
    );
    assert!(text.contains("Ctrl+C stops"), "{text}");
    assert!(!text.contains(KEY), "{text}");
}
