//! The GitHub token stays with ralph: the agent, the per-iteration commands, the checks and the
//! state hooks never have `GITHUB_TOKEN` or `GH_TOKEN` (nor a `GITHUB_API_URL` holding one)
//! in their environment unless the RALPH.md passes them on by name (`env: {pass: [...]}`), as
//! an agent's prompt may be issue text anyone can write. A token in `GITHUB_API_URL` is never
//! printed.

use crate::common;

use std::path::Path;

use common::github_server::{Fault, GithubServer, REPO, TOKEN};
use common::{Project, git_repo};

/// The second token, which ralph does not read (GITHUB_TOKEN comes first) but a child could.
const GH_TOKEN: &str = "gho_second_token_for_tests";

/// A GitHub task list whose agent, command, check and a `shown` hook each append their
/// environment to a file of their own in `out` (`env-agent.txt` and so on), wherever they run.
/// The first iteration ends in `shown` (its hook runs, the checks do not), the next passes.
fn repo(server: &GithubServer, out: &Path, extra: &str) -> Project {
    let dump = |who: &str| format!("sh -c 'env >> {}/env-{who}.txt'", out.display());
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ncommands:\n  - name: env\n    run: {}\ndone_when:\n  - {}\n\
             states:\n  shown:\n    run: {}\n    then: continue\n\
             tasks:\n  github: {REPO}\n{extra}",
            dump("command"),
            dump("check"),
            dump("hook"),
        ),
        "ISSUE={{ task.id }}\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        format!(
            "env >> {out}/env-agent.txt\necho 'work' > work.txt\n\
             [ -e {out}/shown ] || {{ : > {out}/shown; echo '<!-- ralph:state shown -->'; }}\n",
            out = out.display()
        ),
    )
    .unwrap();
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(p.path());
    let _ = server;
    p
}

fn run(p: &Project, api_url: &str, args: &[&str]) -> std::process::Output {
    p.ralph(args)
        .env("GITHUB_API_URL", api_url)
        .env("GITHUB_TOKEN", TOKEN)
        .env("GH_TOKEN", GH_TOKEN)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ralph runs")
}

fn env_of(out: &Path, who: &str) -> String {
    std::fs::read_to_string(out.join(format!("env-{who}.txt")))
        .unwrap_or_else(|err| panic!("the {who} ran and wrote its environment: {err}"))
}

#[test]
fn no_child_has_a_github_token_unless_the_ralph_md_passes_it_on() {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    let out_dir = tempfile::tempdir().unwrap();
    let p = repo(&server, out_dir.path(), "");

    let out = run(&p, &server.url(), &["run"]);

    assert_eq!(
        common::code(&out),
        0,
        "{}{}",
        common::stdout(&out),
        common::stderr(&out)
    );
    assert!(!server.issue(1).open, "the token still reached GitHub");
    for who in ["agent", "command", "check", "hook"] {
        let env = env_of(out_dir.path(), who);
        assert!(
            env.contains("RALPH_RUN_ID="),
            "{who}: its environment is ralph's: {env}"
        );
        for secret in [TOKEN, GH_TOKEN] {
            assert!(!env.contains(secret), "{who} has a token: {env}");
        }
        assert!(
            env.contains(&format!("GITHUB_API_URL={}", server.url())),
            "{who}: an address without a user is no secret: {env}"
        );
    }
}

#[test]
fn a_token_passed_on_by_name_reaches_the_children_and_the_other_does_not() {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    let out_dir = tempfile::tempdir().unwrap();
    let p = repo(&server, out_dir.path(), "env:\n  pass: [GH_TOKEN]\n");

    let out = run(&p, &server.url(), &["run"]);

    assert_eq!(
        common::code(&out),
        0,
        "{}{}",
        common::stdout(&out),
        common::stderr(&out)
    );
    for who in ["agent", "command", "check", "hook"] {
        let env = env_of(out_dir.path(), who);
        assert!(
            env.contains(&format!("GH_TOKEN={GH_TOKEN}")),
            "{who}: {env}"
        );
        assert!(
            !env.contains(TOKEN),
            "{who}: GITHUB_TOKEN was not passed on: {env}"
        );
    }
}

#[test]
fn a_parallel_run_keeps_the_token_from_its_lanes_and_its_merge_queue_checks() {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    let out_dir = tempfile::tempdir().unwrap();
    let p = repo(&server, out_dir.path(), "");

    let out = run(&p, &server.url(), &["run", "--parallel", "1"]);

    assert_eq!(
        common::code(&out),
        0,
        "{}{}",
        common::stdout(&out),
        common::stderr(&out)
    );
    // The lane's agent, command, check and hook, and the merge queue's check.
    let checks = env_of(out_dir.path(), "check").matches("\nPWD=").count();
    assert!(checks >= 2, "the lane's check and the queue's: {checks}");
    for who in ["agent", "command", "check", "hook"] {
        let env = env_of(out_dir.path(), who);
        for secret in [TOKEN, GH_TOKEN] {
            assert!(!env.contains(secret), "{who} has a token: {env}");
        }
    }
}

#[test]
fn a_token_in_the_api_address_is_never_printed_nor_passed_on() {
    let server = GithubServer::start();
    server.open_issue("Do it", "", &[]);
    let secret = "ghp_secret_in_the_url";
    let url = server
        .url()
        .replacen("://", &format!("://x-access-token:{secret}@"), 1);
    // One 5xx at the start (a wait whose reason names the address), then a repository
    // GitHub does not know (an error naming it).
    server.fail_next("GET /repos", Fault::Status(502));
    let out_dir = tempfile::tempdir().unwrap();
    let p = repo(&server, out_dir.path(), "failure:\n  delay: 10ms\n");

    let out = run(&p, &url, &["run"]);

    assert_eq!(
        common::code(&out),
        0,
        "{}{}",
        common::stdout(&out),
        common::stderr(&out)
    );
    let printed = format!(
        "{}{}{}",
        common::stdout(&out),
        common::stderr(&out),
        std::fs::read_to_string(p.events_path()).unwrap()
    );
    let lines: Vec<String> = server.requests().iter().map(|r| r.line()).collect();
    assert!(printed.contains("WAIT_STARTED"), "{lines:#?} {printed}");
    assert!(!printed.contains(secret), "{printed}");
    assert!(
        printed.contains("http://***@127.0.0.1:"),
        "the address, hidden: {printed}"
    );
    for who in ["agent", "command", "check", "hook"] {
        let env = env_of(out_dir.path(), who);
        assert!(
            !env.contains(secret),
            "{who} has the address's token: {env}"
        );
    }

    let wrong = Project::new(
        "agent: sh agent.sh\ntasks:\n  github: acme/unknown\n",
        "ISSUE={{ task.id }}\n",
    );
    git_repo(wrong.path());
    let out = run(&wrong, &url, &["run"]);
    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    let printed = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(printed.contains("404"), "{printed}");
    assert!(!printed.contains(secret), "{printed}");
    assert!(printed.contains("http://***@127.0.0.1:"), "{printed}");
}
