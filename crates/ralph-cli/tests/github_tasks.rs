//! GitHub issues as story mode's tasks, end to end: the real `ralph` binary, real git, and the
//! project's fake GitHub (`common/github_server.rs`) on 127.0.0.1.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::github_server::{Fault, GithubServer, REPO, TOKEN};
use common::{Project, git, git_repo, show};

/// A git repository whose RALPH.md takes its tasks from the fake GitHub's issues labelled
/// `ralph`, with `agent.sh` as the agent, all committed. The prompt names the issue and shows
/// its comments.
fn issues_repo(server: &GithubServer, extra: &str, agent: &str) -> Project {
    let p = Project::new(
        &format!("agent: sh agent.sh\ntasks:\n  github: {REPO}\n  label: ralph\n{extra}"),
        "ISSUE={{ task.id }}\nTITLE={{ task.title }}\nURL={{ task.url }}\nBODY={{ task.body }}\nCOMMENTS:\n{{ task.comments }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\nprompts.txt\n").unwrap();
    git_repo(dir);
    let _ = server;
    p
}

/// `ralph ARGS` against the fake GitHub.
fn ralph(p: &Project, server: &GithubServer, args: &[&str]) -> std::process::Command {
    let mut cmd = p.ralph(args);
    cmd.env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN");
    cmd
}

fn run(p: &Project, server: &GithubServer, args: &[&str]) -> std::process::Output {
    ralph(p, server, args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ralph runs")
}

/// Each issue: a file of its own, committed by ralph's pass; the prompt kept in prompts.txt.
const WORKING_AGENT: &str = r#"prompt=$(cat)
printf '%s\n=== end ===\n' "$prompt" >> prompts.txt
n=$(printf '%s\n' "$prompt" | sed -n 's/^ISSUE=//p')
echo "work for $n" > "issue-$n.txt"
echo '<!-- ralph:state done -->'
"#;

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pass_commits(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%H %s"])
        .lines()
        .filter(|l| l.contains("passes"))
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

#[test]
fn each_labelled_issue_passes_in_order_with_a_comment_naming_commit_and_branch_then_closes() {
    let server = GithubServer::start();
    let older = server.open_issue("Older", "first body", &["ralph"]);
    let unlabelled = server.open_issue("Not for ralph", "", &[]);
    let urgent = server.open_issue("Urgent", "", &["ralph", "priority:1"]);
    let p = issues_repo(&server, "", WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let order: Vec<&str> = prompts
        .lines()
        .filter_map(|l| l.strip_prefix("ISSUE="))
        .collect();
    assert_eq!(order, [urgent.to_string(), older.to_string()]);
    assert!(prompts.contains("BODY=first body"), "{prompts}");
    assert!(
        prompts.contains(&format!("URL=https://github.com/{REPO}/issues/{older}")),
        "{prompts}"
    );
    let commits = pass_commits(p.path());
    assert_eq!(commits.len(), 2, "one pass commit per issue");
    for (issue, file) in [(urgent, "issue-3.txt"), (older, "issue-1.txt")] {
        assert!(!server.issue(issue).open, "#{issue} closed");
        let comments = server.comments(issue);
        assert_eq!(comments.len(), 1, "{comments:#?}");
        let sha = git(p.path(), &["log", "-1", "--format=%h", "--", file]);
        assert!(
            comments[0].body.contains(sha.trim()) && comments[0].body.contains("`main`"),
            "{comments:#?}"
        );
    }
    assert!(server.issue(unlabelled).open);
    assert!(server.comments(unlabelled).is_empty());
}

#[test]
fn close_false_keeps_a_passed_issue_open_with_the_done_label() {
    let server = GithubServer::start();
    let n = server.open_issue("Keep open", "", &["ralph"]);
    let p = issues_repo(&server, "  close: false\n", WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let issue = server.issue(n);
    assert!(issue.open);
    assert!(issue.labels.contains(&"ralph:done".to_owned()), "{issue:?}");
    assert_eq!(server.comments(n).len(), 1);
}

#[test]
fn a_blocked_issue_gets_the_label_and_a_comment_with_the_reason_and_the_saved_ref() {
    let server = GithubServer::start();
    let n = server.open_issue("Needs a key", "", &["ralph"]);
    let p = issues_repo(
        &server,
        "",
        "cat > /dev/null\necho half-done > half.txt\necho '<!-- ralph:state blocked reason=\"needs an API key\" -->'\n",
    );

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let issue = server.issue(n);
    assert!(issue.open, "a blocked issue stays open");
    assert!(
        issue.labels.contains(&"ralph:blocked".to_owned()),
        "{issue:?}"
    );
    let comments = server.comments(n);
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
    assert!(!p.path().join("half.txt").exists());
}

/// The run's `failure:` backoff in milliseconds: GitHub's network errors and 5xx use it.
const FAST_FAILURE: &str = "failure:\n  delay: 10ms\n  max_delay: 40ms\n  max_consecutive: 10\n";

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
fn a_rate_limit_is_the_engines_wait_capped_by_max_wait_and_the_run_goes_on() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    // The looks for counts only (the opening, after writing marks) go on without them; the
    // first pick, the third look, waits.
    server.fail_later("GET /repos", 0, 3, Fault::RetryAfter(30));
    let p = issues_repo(&server, "rate_limit:\n  max_wait: 50ms\n", WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(!server.issue(n).open);
    let waits = task_waits(&p, "rate limit");
    assert!(!waits.is_empty(), "{:#?}", p.events());
    for wait in &waits {
        assert_eq!(wait["delay_ms"], 50, "rate_limit.max_wait caps it: {wait}");
    }
}

#[test]
fn a_500_is_retried_after_the_runs_failure_backoff_and_the_comment_is_posted_once() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    server.fail_next("POST /repos", Fault::Status(500));
    let p = issues_repo(&server, FAST_FAILURE, WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(!server.issue(n).open);
    assert_eq!(server.comments(n).len(), 1);
    let posts = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/comments"))
        .count();
    assert_eq!(posts, 2, "the 500, then the comment");
    let waits = task_waits(&p, "500");
    assert_eq!(waits.len(), 1, "{:#?}", p.events_of("WAIT_STARTED"));
    assert_eq!(waits[0]["delay_ms"], 10, "failure.delay");
    assert_eq!(p.run_ended()["reason"], "stories_done");
}

#[test]
fn ctrl_c_during_a_rate_limit_wait_stops_the_run_at_once_and_it_resumes() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    // An hour's wait, over and over: only a Ctrl+C ends it in the test's time.
    server.fail_later("GET /repos", 0, 20, Fault::RateLimitReset(3600));
    let p = issues_repo(&server, "", WORKING_AGENT);
    let mut child = ralph(&p, &server, &["run"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    p.wait_for("WAIT_STARTED", 1);
    assert_eq!(task_waits(&p, "rate limit").len(), 1);
    // The session is written behind the events: ask until it says so.
    wait_until(
        "ralph status to show the wait",
        Duration::from_secs(30),
        || {
            let status = run(&p, &server, &["status"]);
            String::from_utf8_lossy(&status.stdout).contains("rate limit")
        },
    );

    // Ctrl+C skips the wait, and a second within the grace stops the run. One that comes
    // later (a loaded machine) skips the next look's wait instead: press again.
    let mut skipped = 0;
    let stopped = loop {
        common::send_signal(child.id(), libc::SIGINT);
        let mut exited = None;
        wait_until(
            "the run to stop or skip the wait",
            Duration::from_secs(30),
            || {
                exited = child.try_wait().unwrap();
                exited.is_some() || p.events_of("WAIT_SKIPPED").len() > skipped
            },
        );
        if let Some(status) = exited {
            break status;
        }
        skipped = p.events_of("WAIT_SKIPPED").len();
        assert!(skipped < 20, "Ctrl+C never stopped the run");
    };

    assert_eq!(stopped.code(), Some(130));
    assert_eq!(p.run_ended()["reason"], "interrupted");
    assert_eq!(p.events_of("ITERATION_STARTED").len(), 0, "no agent ran");
    assert!(server.issue(n).open);
    server.clear_faults();
    let out = run(&p, &server, &["run", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(!server.issue(n).open, "passed once resumed");
}

#[test]
fn an_issue_closed_by_a_person_while_its_task_runs_is_dropped_and_its_work_saved() {
    let server = GithubServer::start();
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
    let p = issues_repo(&server, "", agent);
    std::fs::write(p.path().join(".git/info/exclude"), "started\ngo\n").unwrap();
    let mut child = ralph(&p, &server, &["run"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the agent to start", Duration::from_secs(30), || {
        p.path().join("started").exists()
    });
    server.close(closed);
    std::fs::write(p.path().join("go"), "").unwrap();
    let status = child.wait().unwrap();

    assert!(status.success(), "{:#?}", p.events());
    assert!(
        server.comments(closed).is_empty(),
        "no word on a closed issue"
    );
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
    assert_eq!(show(p.path(), "HEAD", "abandoned.txt"), None);
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
fn a_question_is_posted_on_the_issue_and_a_persons_answer_reaches_the_next_prompt() {
    let server = GithubServer::start();
    let n = server.open_issue("Pick a database", "", &["ralph"]);
    let p = issues_repo(&server, "", ASKING_AGENT);
    let mut child = ralph(&p, &server, &["run"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    let asked = server.wait_for_comments(n, Duration::from_secs(30), |c| !c.is_empty());
    assert!(asked[0].body.contains("Postgres or SQLite?"), "{asked:#?}");
    let url = format!("https://github.com/{REPO}/issues/{n}");
    wait_until("status to say it waits", Duration::from_secs(30), || {
        common::stdout(&ralph(&p, &server, &["status"]).output().unwrap())
            .contains(&format!("waiting for an answer on {url}"))
    });
    server.comment_as(n, "a-person", "Use Postgres");
    let status = child.wait().unwrap();

    assert!(status.success(), "{:#?}", p.events());
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    let last = prompts.split("=== end ===").nth(1).unwrap();
    assert!(last.contains("Use Postgres"), "{prompts}");
    assert!(!server.issue(n).open);
    assert_eq!(show(p.path(), "HEAD", "db.txt").unwrap(), b"postgres\n");
}

#[test]
fn a_run_stopped_while_waiting_for_an_answer_resumes_waiting_and_reads_it() {
    let server = GithubServer::start();
    let n = server.open_issue("Pick a database", "", &["ralph"]);
    let p = issues_repo(&server, "", ASKING_AGENT);
    let child = ralph(&p, &server, &["run"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_comments(n, Duration::from_secs(30), |c| !c.is_empty());
    p.wait_for("WAIT_STARTED", 1);
    common::send_signal(child.id(), libc::SIGTERM);
    let mut child = child;
    child.wait().unwrap();

    server.comment_as(n, "a-person", "Use Postgres");
    let out = run(&p, &server, &["run", "--resume"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        server.comments(n).len(),
        3,
        "the question once, the answer, the pass"
    );
    let prompts = std::fs::read_to_string(p.path().join("prompts.txt")).unwrap();
    assert!(prompts.contains("Use Postgres"), "{prompts}");
    assert!(!server.issue(n).open);
}

#[test]
fn github_out_of_reach_as_a_task_passes_does_not_end_the_run() {
    let server = GithubServer::start();
    let n = server.open_issue("Task", "", &["ralph"]);
    // The looks at the list before the iteration (opening, marks, the pick) get through; the
    // five after it fail (the run waits its `failure:` backoff between them); then GitHub
    // answers again.
    server.fail_later("GET /repos/acme/widgets/issues?", 3, 5, Fault::Status(503));
    let p = issues_repo(&server, FAST_FAILURE, WORKING_AGENT);

    let out = run(&p, &server, &["run"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_done");
    assert!(!server.issue(n).open, "passed, then closed");
    assert_eq!(server.comments(n).len(), 1);
    assert_eq!(pass_commits(p.path()).len(), 1);
    assert!(
        !task_waits(&p, "503").is_empty(),
        "the retries are waits: {:#?}",
        p.events_of("WAIT_STARTED")
    );
}

#[test]
fn issues_run_in_parallel_and_each_closes_with_a_comment_naming_its_landing_commit() {
    let server = GithubServer::start();
    let first = server.open_issue("First", "", &["ralph"]);
    let second = server.open_issue("Second", "", &["ralph"]);
    let p = issues_repo(&server, "done_when:\n  - 'ls issue-*.txt'\n", WORKING_AGENT);
    let dir = p.path();
    let out = run(&p, &server, &["run", "--parallel", "2"]);
    assert_eq!(
        common::code(&out),
        0,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = p.events();
    for n in [first, second] {
        let landed: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| {
                e["type"] == "TASK_LANDED" && e["task_id"].as_str() == Some(&*n.to_string())
            })
            .collect();
        assert_eq!(landed.len(), 1, "{n}: {events:#?}");
        let commit = landed[0]["commit"].as_str().unwrap();
        assert!(show(dir, commit, &format!("issue-{n}.txt")).is_some());
        assert!(!server.issue(n).open, "issue {n} closed");
        let comments = server.comments(n);
        assert!(
            comments
                .iter()
                .any(|c| c.body.contains(commit) && c.body.contains("main")),
            "issue {n}'s comment names {commit} on main: {:#?}",
            comments.iter().map(|c| &c.body).collect::<Vec<_>>()
        );
    }
    let worktrees = git(dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1
    );
}

#[test]
fn a_blocked_issue_in_a_parallel_run_gets_the_label_and_a_comment_and_the_other_lands() {
    let server = GithubServer::start();
    let refused = server.open_issue("Needs a key", "", &["ralph"]);
    let done = server.open_issue("Easy", "", &["ralph"]);
    let agent = r#"prompt=$(cat)
n=$(printf '%s\n' "$prompt" | sed -n 's/^ISSUE=//p')
case "$prompt" in
*"TITLE=Needs a key"*)
    echo half-done > half.txt
    echo '<!-- ralph:state blocked reason="needs an API key" -->' ;;
*)
    echo "work for $n" > "issue-$n.txt"
    echo '<!-- ralph:state done -->' ;;
esac
"#;
    let p = issues_repo(&server, "done_when:\n  - 'ls issue-*.txt'\n", agent);
    let dir = p.path();
    let out = run(&p, &server, &["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let events = p.events();
    let ended = events.last().unwrap();
    assert_eq!(
        (
            ended["reason"].as_str(),
            ended["landed"].as_u64(),
            ended["blocked"].as_u64()
        ),
        (Some("stories_blocked"), Some(1), Some(1)),
        "{events:#?}"
    );
    let blocked: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "TASK_BLOCKED")
        .collect();
    assert_eq!(blocked.len(), 1, "{events:#?}");
    assert_eq!(blocked[0]["task_id"], refused.to_string());

    let issue = server.issue(refused);
    assert!(issue.open, "a blocked issue stays open");
    assert!(
        issue.labels.contains(&"ralph:blocked".to_owned()),
        "{issue:?}"
    );
    let comments = server.comments(refused);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let saved = format!("refs/ralph/attempts/{refused}/");
    assert!(
        comments[0].body.contains("needs an API key") && comments[0].body.contains(&saved),
        "{comments:#?}"
    );
    // The abandoned work is under the ref the comment names; nothing of it reached the base.
    let saved = comments[0].body[comments[0].body.find(&saved).unwrap()..]
        .split(|c: char| c.is_whitespace() || c == '`' || c == ')' || c == ';')
        .next()
        .unwrap()
        .trim_end_matches('.')
        .to_owned();
    assert_eq!(show(dir, &saved, "half.txt").unwrap(), b"half-done\n");
    assert_eq!(show(dir, "main", "half.txt"), None);
    assert!(
        !server.issue(done).open,
        "the other issue landed and closed"
    );
    // A list outside git is marked on GitHub, never in a commit.
    let subjects = git(dir, &["log", "--format=%s", "main"]);
    assert!(!subjects.contains(" blocked"), "{subjects}");
}

#[test]
fn run_task_takes_an_issue_number_and_passes_it_alone_on_its_branch() {
    let server = GithubServer::start();
    let first = server.open_issue("First", "", &["ralph"]);
    let second = server.open_issue("Second", "", &["ralph"]);
    let p = issues_repo(&server, "", WORKING_AGENT);
    let id = second.to_string();

    let out = run(&p, &server, &["run", "--task", &id]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    let branch = format!("ralph/{id}");
    let head = git(p.path(), &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(head.trim(), branch);
    assert!(!server.issue(second).open, "passed and closed");
    assert!(server.issue(first).open, "the other issue is not taken up");
    let comments = server.comments(second);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].body.contains(&branch), "{comments:#?}");
    assert!(!p.path().join(format!("issue-{first}.txt")).exists());
}

#[test]
fn run_task_with_a_number_github_does_not_have_is_refused_naming_the_repository() {
    let server = GithubServer::start();
    let n = server.open_issue("Only", "", &["ralph"]);
    let p = issues_repo(&server, "", WORKING_AGENT);

    let out = run(&p, &server, &["run", "--task", "999"]);

    assert_eq!(common::code(&out), 2, "nothing ran");
    let err = common::stderr(&out);
    assert!(err.contains(REPO) && err.contains("\"999\""), "{err}");
    assert!(err.contains(&n.to_string()), "the ids it has: {err}");
    assert!(git(p.path(), &["branch", "--list", "ralph/*"]).is_empty());
}

/// The lines of `out`'s stdout that say the run's wait for the task list (`⏸ why`).
fn said_waits(out: &std::process::Output) -> Vec<String> {
    common::stdout(out)
        .lines()
        .filter(|l| l.starts_with('⏸'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_rate_limit_while_run_task_checks_the_issue_is_waited_for_then_the_task_runs() {
    let server = GithubServer::start();
    let n = server.open_issue("Only", "", &["ralph"]);
    // The looks of the check (`--task`): the first only counts, the second is the check's.
    server.fail_later("GET /repos", 0, 2, Fault::RetryAfter(30));
    let p = issues_repo(&server, "rate_limit:\n  max_wait: 50ms\n", WORKING_AGENT);
    let id = n.to_string();

    let out = run(&p, &server, &["run", "--task", &id]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    assert!(!server.issue(n).open, "passed and closed");
    let head = git(p.path(), &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(head.trim(), format!("ralph/{id}"));
    let waits = said_waits(&out);
    assert!(
        waits.iter().any(|w| w.contains("rate limit")),
        "{}",
        common::stdout(&out)
    );
}

#[test]
fn a_rate_limit_while_a_killed_runs_pass_is_finished_is_waited_for_then_the_run_goes_on() {
    let server = GithubServer::start();
    let n = server.open_issue("Only", "", &["ralph"]);
    let agent = format!("{WORKING_AGENT}: > \"$ARM\"\n");
    let p = issues_repo(&server, "rate_limit:\n  max_wait: 50ms\n", &agent);
    let bin = tempfile::tempdir().unwrap();
    let path_env = common::killing_git(bin.path(), "commit-tree", 1, common::When::After);
    let out = ralph(&p, &server, &["run"])
        .env("ARM", bin.path().join("armed"))
        .env("PATH", &path_env)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        bin.path().join("killed").exists() && out.status.code().is_none(),
        "killed during the pass: {}",
        common::stderr(&out)
    );
    assert!(server.issue(n).open);

    // The start's looks at the issues: the first only counts, the second is the pass's.
    server.fail_later("GET /repos", 0, 2, Fault::RetryAfter(30));
    let out = ralph(&p, &server, &["run", "--resume"])
        .env("ARM", bin.path().join("unused"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(!server.issue(n).open, "the pass was finished: closed");
    assert_eq!(server.comments(n).len(), 1, "{:#?}", server.comments(n));
    assert_eq!(pass_commits(p.path()).len(), 1);
    let waits = said_waits(&out);
    assert!(
        waits.iter().any(|w| w.contains("rate limit")),
        "{}",
        common::stdout(&out)
    );
}

#[test]
fn ctrl_c_while_run_task_waits_for_a_rate_limit_looks_again_and_twice_stops_with_nothing_run() {
    let server = GithubServer::start();
    let n = server.open_issue("Only", "", &["ralph"]);
    // An hour's wait, over and over: only a Ctrl+C ends it in the test's time.
    server.fail_later("GET /repos", 0, 40, Fault::RateLimitReset(3600));
    let p = issues_repo(&server, "", WORKING_AGENT);
    let outs = tempfile::tempdir().unwrap();
    let out_path = outs.path().join("stdout.txt");
    let out_file = std::fs::File::create(&out_path).unwrap();
    let mut child = ralph(&p, &server, &["run", "--task", &n.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(out_file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waits_said = || {
        std::fs::read_to_string(&out_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with('⏸') && l.contains("rate limit"))
            .count()
    };
    wait_until("the wait before the run", Duration::from_secs(30), || {
        waits_said() > 0
    });

    // A Ctrl+C looks again at once: a new wait, ralph still there.
    common::send_signal(child.id(), libc::SIGINT);
    wait_until("ralph to look again", Duration::from_secs(30), || {
        waits_said() > 1
    });
    assert!(
        child.try_wait().unwrap().is_none(),
        "one Ctrl+C does not stop"
    );

    // Twice stops. Two that reach ralph as one (a loaded machine) only look again: press
    // twice again.
    let stopped = loop {
        let said = waits_said();
        common::send_signal(child.id(), libc::SIGINT);
        std::thread::sleep(Duration::from_millis(100));
        common::send_signal(child.id(), libc::SIGINT);
        let mut exited = None;
        wait_until(
            "ralph to stop or look again",
            Duration::from_secs(30),
            || {
                exited = child.try_wait().unwrap();
                exited.is_some() || waits_said() > said
            },
        );
        if let Some(status) = exited {
            break status;
        }
        assert!(waits_said() < 20, "Ctrl+C twice never stopped ralph");
    };

    assert_eq!(stopped.code(), Some(130));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("nothing ran"), "{err}");
    assert!(p.events().is_empty(), "no run started");
    assert!(
        git(p.path(), &["branch", "--list", "ralph/*"]).is_empty(),
        "HEAD stayed where it was"
    );
    assert!(server.issue(n).open);
}

#[test]
fn a_parallel_run_killed_as_the_base_moved_is_resumed_and_the_issue_closed_with_one_comment() {
    let server = GithubServer::start();
    let n = server.open_issue("Only", "", &["ralph"]);
    let p = issues_repo(&server, "done_when:\n  - 'ls issue-*.txt'\n", WORKING_AGENT);
    let dir = p.path();
    // git holds once the base has moved to the landing: ralph is killed before it tells GitHub.
    let held = common::HeldGit::install(
        dir,
        "committed",
        "refs/heads/main",
        "git log -1 --format=%s \"$new\" | grep -q '^ralph: land '",
    );
    let mut child = ralph(&p, &server, &["run", "--parallel", "1"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    held.wait_held();
    child.kill().unwrap();
    child.wait().unwrap();
    held.release();
    let landing = git(dir, &["rev-parse", "main"]);
    let landing = landing.trim();
    assert!(server.issue(n).open, "killed before GitHub was told");
    assert!(server.comments(n).is_empty());

    let out = run(&p, &server, &["run", "--parallel", "1", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(!server.issue(n).open, "closed by the resumed run");
    let comments = server.comments(n);
    assert_eq!(
        comments.len(),
        1,
        "{:#?}",
        comments.iter().map(|c| &c.body).collect::<Vec<_>>()
    );
    assert!(comments[0].body.contains(landing), "{}", comments[0].body);
    assert_eq!(
        git(dir, &["rev-parse", "main"]).trim(),
        landing,
        "landed once"
    );
    let landed = p.events_of("TASK_LANDED");
    assert_eq!(landed.len(), 1, "{landed:#?}");
    assert_eq!(landed[0]["commit"], landing);
}

#[test]
fn a_rate_limit_as_a_parallel_run_reads_its_issues_is_waited_for_then_the_run_goes_on() {
    let server = GithubServer::start();
    let n = server.open_issue("Only", "", &["ralph"]);
    server.fail_next("GET /repos", Fault::RetryAfter(30));
    let p = issues_repo(
        &server,
        "done_when:\n  - 'ls issue-*.txt'\nrate_limit:\n  max_wait: 50ms\n",
        WORKING_AGENT,
    );

    let out = run(&p, &server, &["run", "--parallel", "2"]);

    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(!server.issue(n).open, "landed and closed");
    assert_eq!(p.events_of("TASK_LANDED").len(), 1);
    let waits = said_waits(&out);
    assert!(
        waits.iter().any(|w| w.contains("rate limit")),
        "{}",
        common::stdout(&out)
    );
}
