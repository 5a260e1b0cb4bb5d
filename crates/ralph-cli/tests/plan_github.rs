//! `ralph plan` for `tasks: github`: the plan is shown as the issues it would open, and opened
//! on the fake GitHub only with `--apply`.

use crate::common;

use common::github_server::{GithubServer, REPO, TOKEN};
use common::{Project, code, stderr, stdout};

const ANSWER: &str = r#"```json
{"userStories": [
  {"id": "A", "title": "Add the cart", "description": "A Cart type.", "acceptanceCriteria": ["cart test passes"]},
  {"id": "B", "title": "Add checkout", "acceptanceCriteria": ["checkout test passes"], "dependsOn": ["A"]}
]}
```"#;

fn plan(p: &Project, server: &GithubServer, args: &[&str]) -> std::process::Output {
    p.ralph(args)
        .env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ralph runs")
}

#[test]
fn planned_issues_are_shown_and_opened_only_with_apply() {
    let server = GithubServer::start();
    let p = Project::new(
        &format!("agent: cat answer.txt\ntasks:\n  github: {REPO}\n  label: ralph"),
        "x\n",
    );
    std::fs::write(p.path().join("answer.txt"), ANSWER).unwrap();

    let out = plan(&p, &server, &["plan", "-m", "a shop"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\"title\": \"Add checkout\""),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("shown and not opened (`--apply` opens them)"));
    let posts = |server: &GithubServer| {
        server
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count()
    };
    assert_eq!(posts(&server), 0, "nothing opened");

    let out = plan(&p, &server, &["plan", "-m", "a shop", "--apply"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "opened #1 Add the cart\nopened #2 Add checkout\n"
    );
    let first = server.issue(1);
    assert_eq!(first.title, "Add the cart");
    assert_eq!(first.labels, ["ralph"]);
    assert_eq!(
        first.body,
        "A Cart type.\n\nAcceptance criteria:\n- cart test passes\n"
    );
    assert!(
        server.issue(2).body.ends_with("\nDepends on: #1\n"),
        "{}",
        server.issue(2).body
    );
}
