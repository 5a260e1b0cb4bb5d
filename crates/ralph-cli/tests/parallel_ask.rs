//! A lane's agent asks a person (`ask`) in `ralph run --parallel`: its lane waits while the
//! others go on, the merge queue puts the question where the task lives (committed under its
//! checklist item on the base, a comment on its issue), `ralph status` shows it, and the
//! person's answer, written where one loop reads it, reaches the lane's next prompt.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::github_server::{GithubServer, REPO, TOKEN};
use common::parallel::{READ_PROMPT, nothing_left_behind, passes, repo, todo_repo_prompting};
use common::{Project, code, commit_all, git, git_repo, show, stderr, stdout};

/// "Ask …" asks which framework until its prompt has an answer (`{{ task.answer }}` stays as
/// written until there is one), then writes the answer as its work; any other task is done at
/// once.
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

/// [`ASKING_AGENT`] in Node, run as the agent itself (no shell before it, which would fix
/// `PWD`): it writes its work where `$PWD` says it is, as opencode does, so a lane's `PWD` must
/// be its worktree.
const ASKING_NODE_AGENT: &str = r#"const fs = require("fs");
const path = require("path");
const prompt = fs.readFileSync(0, "utf8");
const field = (name) => (prompt.match(new RegExp("^" + name + "=(.*)$", "m")) || [])[1] || "";
const [id, title, answer] = ["ID", "TITLE", "ANSWER"].map(field);
const work = (text) => fs.writeFileSync(path.join(process.env.PWD, id + ".done"), text + "\n");
if (!title.startsWith("Ask")) {
  work("work of " + title);
} else if (answer === "" || answer.startsWith("{{")) {
  console.log('<!-- ralph:state ask question="Which framework?" -->');
} else {
  work(answer);
}
"#;

const QUESTION: &str = "  <!-- ralph: question: Which framework? -->\n";

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 60s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `ralph ARGS` in `p` against the fake GitHub.
fn against(server: &GithubServer, p: &Project, args: &[&str]) -> std::process::Command {
    let mut cmd = p.ralph(args);
    cmd.env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN");
    cmd
}

/// The base's TODO.md.
fn todo_on_main(dir: &Path) -> String {
    String::from_utf8(show(dir, "main", "TODO.md").unwrap()).unwrap()
}

#[test]
fn a_lane_that_asks_waits_for_the_answer_in_the_checklist_while_the_other_task_lands() {
    let todo = "- [ ] Add the cart\n- [ ] Ask about the framework\n";
    let p = todo_repo_prompting(
        ASKING_AGENT,
        todo,
        "ID={{ task.id }}\nTITLE={{ task.title }}\nANSWER={{ task.answer }}\n",
    );
    let dir = p.path();
    // The agent is Node, started in each lane's worktree with ralph's own PWD the checkout's.
    std::fs::write(dir.join("agent.js"), ASKING_NODE_AGENT).unwrap();
    let ralph_md = std::fs::read_to_string(dir.join("RALPH.md")).unwrap();
    std::fs::write(
        dir.join("RALPH.md"),
        ralph_md.replace("agent: sh agent.sh", "agent: node agent.js"),
    )
    .unwrap();
    commit_all(dir, "a Node agent");
    let mut command = p.ralph(&["run", "--parallel", "2"]);
    let mut child = command
        .env("PWD", dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // The other task lands; the question is committed under its task on the base.
    wait_until("the cart to land and the question to be on main", || {
        !p.events_of("TASK_LANDED").is_empty() && todo_on_main(dir).contains(QUESTION)
    });
    assert_eq!(
        todo_on_main(dir),
        format!("- [x] Add the cart\n- [ ] Ask about the framework\n{QUESTION}")
    );
    let log = git(dir, &["log", "--format=%s", "main"]);
    assert!(
        log.lines()
            .any(|l| l.starts_with("ralph: ask-about-the-framework-")
                && l.ends_with(" asks a person")),
        "{log}"
    );
    let asked = p.events_of("LANE_ASKED");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["question"], "Which framework?");
    assert_eq!(asked[0]["at"], "TODO.md:3");
    // The main worktree has it as committed: nothing of the run's left uncommitted there.
    assert_eq!(git(dir, &["status", "--porcelain", "--", "TODO.md"]), "");

    // `ralph status` shows the lane waiting, with its question and where to answer.
    wait_until("status to show the question", || {
        let text = stdout(&p.run(&["status"]));
        text.contains("asking")
            && text.contains("asks \"Which framework?\": waiting for an answer in TODO.md:3")
    });
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&p.run(&["status", "--json"]))).unwrap();
    let asking = json["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["question"] == "Which framework?")
        .unwrap_or_else(|| panic!("a lane with the question: {json:#}"));
    assert_eq!(asking["answer_at"], "TODO.md:3");
    assert!(
        p.events_of("TASK_LANDED").len() == 1 && child.try_wait().unwrap().is_none(),
        "the asking task waits: {:#?}",
        p.events()
    );

    // A person answers under the question, as for one loop (uncommitted).
    let answered =
        format!("- [x] Add the cart\n- [ ] Ask about the framework\n{QUESTION}  Use axum.\n");
    std::fs::write(dir.join("TODO.md"), &answered).unwrap();

    let status = child.wait().unwrap();
    assert!(status.success(), "{:#?}", p.events());
    let landed = p.events_of("TASK_LANDED");
    assert_eq!(landed.len(), 2, "{landed:#?}");
    let asked_id = landed[1]["task_id"].as_str().unwrap();
    assert!(
        asked_id.starts_with("ask-about-the-framework-"),
        "{asked_id}"
    );
    // The answer reached the lane's prompt: its work is the answer.
    assert_eq!(
        show(dir, "main", &format!("{asked_id}.done")).unwrap(),
        b"Use axum.\n"
    );
    assert_eq!(
        todo_on_main(dir),
        format!("- [x] Add the cart\n- [x] Ask about the framework\n{QUESTION}")
    );
    // The person's answer is theirs: kept, uncommitted, with the task ticked.
    assert_eq!(
        std::fs::read_to_string(dir.join("TODO.md")).unwrap(),
        answered.replace("- [ ] Ask", "- [x] Ask")
    );
    let out = p.run(&["status"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).contains("asks"), "{}", stdout(&out));
    // The report has the question among the merge queue's steps.
    let out = p.run(&["report", "-o", "-"]);
    assert!(
        stdout(&out).contains("asks a person \"Which framework?\": answer in TODO.md:3"),
        "{}",
        stdout(&out)
    );
    nothing_left_behind(dir);
}

#[test]
fn a_lane_that_asks_on_its_issue_waits_for_a_persons_comment_while_the_other_issue_lands() {
    let server = GithubServer::start();
    let asking = server.open_issue("Ask about the framework", "", &["ralph"]);
    let other = server.open_issue("Add the cart", "", &["ralph"]);
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ndone_when:\n  - 'ls *.done >/dev/null 2>&1'\n\
             convergence: {{max_attempts: 5, backoff: 10ms, max_backoff: 10ms}}\n\
             failure: {{delay: 10ms, max_delay: 10ms}}\n\
             tasks:\n  github: {REPO}\n  label: ralph"
        ),
        "ID={{ task.id }}\nTITLE={{ task.title }}\nANSWER={{ task.answer }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), ASKING_AGENT).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    let mut child = against(&server, &p, &["run", "--parallel", "2"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    // The question is a comment on the issue; the other issue lands and closes meanwhile.
    let asked = server.wait_for_comments(asking, Duration::from_secs(60), |c| !c.is_empty());
    assert!(asked[0].body.contains("Which framework?"), "{asked:#?}");
    wait_until("the other issue to land", || !server.issue(other).open);
    let url = format!("https://github.com/{REPO}/issues/{asking}");
    wait_until("status to show the question", || {
        stdout(&against(&server, &p, &["status"]).output().unwrap()).contains(&format!(
            "asks \"Which framework?\": waiting for an answer on {url}"
        ))
    });
    assert!(server.issue(asking).open);
    assert!(child.try_wait().unwrap().is_none(), "the asking lane waits");

    server.comment_as(asking, "a-person", "Use Postgres");
    let status = child.wait().unwrap();
    assert!(status.success(), "{:#?}", p.events());
    // The answer reached the lane's prompt: its work is the answer.
    assert_eq!(
        show(dir, "main", &format!("{asking}.done")).unwrap(),
        b"Use Postgres\n"
    );
    assert!(!server.issue(asking).open);
    // Nothing of the run's is committed for a question on an issue.
    let log = git(dir, &["log", "--format=%s", "main"]);
    assert!(!log.contains("asks a person"), "{log}");
    nothing_left_behind(dir);
}

/// US-002 asks which framework until its prompt has an answer, then writes the answer as its
/// work; any other story is done at once.
const ASKING_STORY_AGENT: &str = r#"answer=$(printf '%s\n' "$prompt" | sed -n 's/^ANSWER=//p')
case "$story:$answer" in
US-002: | "US-002:{{"*) echo '<!-- ralph:state ask question="Which framework?" -->' ;;
US-002:*) echo "$answer" > "$story.done" ;;
*) echo "work of $story" > "$story.done" ;;
esac
"#;

#[test]
fn a_lane_that_asks_in_prd_json_waits_for_the_answer_in_the_storys_notes() {
    let agent = format!("{READ_PROMPT}{ASKING_STORY_AGENT}");
    let p = repo(
        &agent,
        "ls *.done >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    let dir = p.path();
    let ralph_md = std::fs::read_to_string(dir.join("RALPH.md")).unwrap();
    std::fs::write(
        dir.join("RALPH.md"),
        format!("{ralph_md}ANSWER={{{{ task.answer }}}}\n"),
    )
    .unwrap();
    commit_all(dir, "the prompt has the answer");
    let mut child = p.spawn(&["run", "--parallel", "2"]);

    let notes = |rev: &str| -> String {
        let prd: serde_json::Value =
            serde_json::from_slice(&show(dir, rev, "prd.json").unwrap()).unwrap();
        prd["userStories"][1]["notes"].as_str().unwrap().to_owned()
    };
    wait_until("US-001 to land and the question to be on main", || {
        passes(dir, "main", "US-001") == true
            && notes("main") == "ralph: question: Which framework?"
    });
    wait_until("status to show the question", || {
        stdout(&p.run(&["status"])).contains(
            "asks \"Which framework?\": waiting for an answer in prd.json (US-002's notes)",
        )
    });
    assert!(
        child.try_wait().unwrap().is_none(),
        "the asking story waits"
    );

    // A person answers under the question in the story's notes (uncommitted).
    let text = std::fs::read_to_string(dir.join("prd.json")).unwrap();
    let answered = text.replace(
        "\"ralph: question: Which framework?\"",
        "\"ralph: question: Which framework?\\nUse axum.\"",
    );
    assert_ne!(text, answered);
    std::fs::write(dir.join("prd.json"), &answered).unwrap();

    let status = child.wait().unwrap();
    assert!(status.success(), "{:#?}", p.events());
    assert_eq!(show(dir, "main", "US-002.done").unwrap(), b"Use axum.\n");
    assert_eq!(passes(dir, "main", "US-002"), true);
    assert_eq!(notes("main"), "ralph: question: Which framework?");
    nothing_left_behind(dir);
}
