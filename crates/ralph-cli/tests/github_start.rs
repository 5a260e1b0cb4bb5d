//! GitHub at the start of a run: the tries after a 5xx are spaced by the run's `failure:`
//! backoff, each wait saying what it waits for, and Ctrl+C or SIGTERM stop ralph during a
//! request that does not answer, instead of after its timeout.

use crate::common;

use std::time::Duration;

use common::github_server::{Fault, GithubServer, REPO, TOKEN};
use common::{Project, git_repo};

const LIST: &str = "GET /repos/acme/widgets/issues?";

/// A GitHub task list with a quick `failure:` backoff of 200 ms, doubling.
fn repo() -> Project {
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ntasks:\n  github: {REPO}\n\
             failure:\n  delay: 200ms\n  backoff: 2\n  max_consecutive: 10\n"
        ),
        "ISSUE={{ task.id }}\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        "echo work > work.txt\necho '<!-- ralph:state done -->'\n",
    )
    .unwrap();
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(p.path());
    p
}

fn ralph(p: &Project, server: &GithubServer, args: &[&str]) -> std::process::Command {
    let mut cmd = p.ralph(args);
    cmd.env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .stdin(std::process::Stdio::null());
    cmd
}

/// The gaps between the requests for the list of issues.
fn gaps(server: &GithubServer) -> Vec<Duration> {
    let times: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.line().starts_with(LIST))
        .map(|r| r.at)
        .collect();
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

fn first_tries_are_spaced_by_the_backoff(args: &[&str]) {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    server.fail_later(LIST, 0, 3, Fault::Status(502));
    let p = repo();

    let out = ralph(&p, &server, args).output().unwrap();

    let shown = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(common::code(&out), 0, "{shown}");
    let gaps = gaps(&server);
    assert!(gaps.len() >= 3, "{gaps:?}");
    // The backoff's waits, 200 ms then 400 ms then 800 ms, at least.
    for (gap, wait) in gaps.iter().zip([200, 400, 800]) {
        assert!(
            *gap >= Duration::from_millis(wait),
            "{args:?}: tries {gaps:?} are not spaced by the backoff: {shown}"
        );
    }
    assert!(shown.contains("HTTP 502"), "each wait says why: {shown}");
}

#[test]
fn the_first_tries_after_a_5xx_as_a_run_starts_are_spaced_by_the_backoff() {
    first_tries_are_spaced_by_the_backoff(&["run"]);
}

#[test]
fn the_first_tries_after_a_5xx_as_a_task_run_starts_are_spaced_by_the_backoff() {
    first_tries_are_spaced_by_the_backoff(&["run", "--task", "1"]);
}

/// `ralph ARGS` meets `faults` for its first requests of the list, and GitHub then takes the
/// next request and never answers: `signal` ends ralph at once, exit `code`, with nothing run.
fn a_signal_during_a_request_github_does_not_answer_ends_ralph(
    args: &[&str],
    faults: &[Fault],
    signal: i32,
    code: i32,
) {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    for fault in faults {
        server.fail_next(LIST, fault.clone());
    }
    server.fail_next(LIST, Fault::Stall(Duration::from_secs(120)));
    let p = repo();
    let child = ralph(&p, &server, args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while server
        .requests()
        .iter()
        .filter(|r| r.line().starts_with(LIST))
        .count()
        < faults.len() + 1
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no second request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // In the request GitHub does not answer.
    std::thread::sleep(Duration::from_millis(200));
    let stopping = std::time::Instant::now();
    common::send_signal(child.id(), signal);
    let out = child.wait_with_output().unwrap();

    let shown = format!("{}{}", common::stdout(&out), common::stderr(&out));
    // Before a wait takes the signals, a signal ends ralph as it ends any program.
    use std::os::unix::process::ExitStatusExt as _;
    match out.status.signal() {
        Some(ended_by) => assert_eq!(ended_by, signal, "{shown}"),
        None => {
            assert_eq!(common::code(&out), code, "{shown}");
            assert!(
                shown.contains("ralph was interrupted") || shown.contains("nothing ran"),
                "{shown}"
            );
        }
    }
    // The request's own timeout is a minute; the stall two.
    assert!(
        stopping.elapsed() < Duration::from_secs(45),
        "ralph ended only when the request gave up: {shown}"
    );
    assert!(!p.path().join("work.txt").exists(), "no agent ran");
}

#[test]
fn ctrl_c_during_a_request_github_does_not_answer_at_the_start_ends_ralph_at_once() {
    let after_a_wait = [Fault::Status(502)];
    a_signal_during_a_request_github_does_not_answer_ends_ralph(
        &["run", "--task", "1"],
        &after_a_wait,
        libc::SIGINT,
        130,
    );
}

#[test]
fn sigterm_during_a_request_github_does_not_answer_at_the_start_ends_ralph_at_once() {
    let after_a_wait = [Fault::Status(502)];
    a_signal_during_a_request_github_does_not_answer_ends_ralph(
        &["run", "--task", "1"],
        &after_a_wait,
        libc::SIGTERM,
        143,
    );
}

#[test]
fn ctrl_c_during_the_first_request_of_a_run_ends_ralph_at_once() {
    a_signal_during_a_request_github_does_not_answer_ends_ralph(&["run"], &[], libc::SIGINT, 130);
}

/// In the run (its first look, after a 5xx as it opened), a request GitHub does not answer is
/// given up at an interrupt, which then counts as one during a wait: a Ctrl+C looks again at
/// once (here GitHub answers, and the run goes on), a SIGTERM stops the run.
fn a_signal_during_a_request_in_the_run(signal: i32) -> (std::process::Output, std::time::Instant) {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    server.fail_next(LIST, Fault::Status(502));
    server.fail_next(LIST, Fault::Stall(Duration::from_secs(120)));
    let p = repo();
    let child = ralph(&p, &server, &["run"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while server
        .requests()
        .iter()
        .filter(|r| r.line().starts_with(LIST))
        .count()
        < 2
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no second request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let stopping = std::time::Instant::now();
    common::send_signal(child.id(), signal);
    (child.wait_with_output().unwrap(), stopping)
}

#[test]
fn ctrl_c_during_a_request_in_the_run_gives_it_up_and_looks_again_at_once() {
    let (out, interrupted) = a_signal_during_a_request_in_the_run(libc::SIGINT);
    let shown = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(common::code(&out), 0, "{shown}");
    assert!(
        interrupted.elapsed() < Duration::from_secs(45),
        "the request was waited out: {shown}"
    );
    assert!(shown.contains("given up, ralph was interrupted"), "{shown}");
}

#[test]
fn sigterm_during_a_request_in_the_run_stops_it_at_once() {
    let (out, interrupted) = a_signal_during_a_request_in_the_run(libc::SIGTERM);
    let shown = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(common::code(&out), 143, "{shown}");
    assert!(
        interrupted.elapsed() < Duration::from_secs(45),
        "the request was waited out: {shown}"
    );
}

/// A request GitHub does not answer is no silent minute: after 5 s ralph says, once, what it
/// waits for, that it gives up at a minute and that Ctrl+C stops it.
#[test]
fn a_request_without_an_answer_is_said_after_five_seconds() {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    server.fail_next(LIST, Fault::Stall(Duration::from_secs(120)));
    let p = repo();
    let said = tempfile::NamedTempFile::new().unwrap();
    let mut child = ralph(&p, &server, &["run"])
        .stdout(std::process::Stdio::null())
        .stderr(said.reopen().unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(said.path()).unwrap();
        if text.contains("waiting for GitHub") {
            break text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "nothing said while GitHub did not answer: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Told once, not again while the same request goes unanswered.
    std::thread::sleep(Duration::from_millis(300));
    common::send_signal(child.id(), libc::SIGINT);
    child.wait().unwrap();
    let text = std::fs::read_to_string(said.path()).unwrap_or(text);
    assert_eq!(text.matches("waiting for GitHub").count(), 1, "{text}");
    assert!(
        text.contains("GET ") && text.contains("/repos/acme/widgets/issues"),
        "{text}"
    );
    assert!(text.contains("no answer after 5s"), "{text}");
    assert!(text.contains("Ctrl+C stops"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
}
