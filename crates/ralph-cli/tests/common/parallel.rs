//! Parallel runs' test support: a story-mode repository with an agent and a check of the
//! test's, what the base says of a story, and what a run must not leave behind.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Project, git, git_repo, show};

/// A story-mode repository: prd.json with `ids` (priority in order, none passed), `agent.sh`
/// as the agent, `check.sh` as the one `done_when` check, `files` beside them, all committed
/// on `main`. The prompt is `STORY={{ story.id }}` and, after it, the conflict placeholder.
pub fn repo(agent: &str, check: &str, ids: &[&str], files: &[(&str, &str)]) -> Project {
    let stories: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            serde_json::json!({
                "id": id, "title": format!("story {id}"), "description": "Do it",
                "acceptanceCriteria": ["ok"], "priority": i + 1, "passes": false, "notes": ""
            })
        })
        .collect();
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - sh check.sh\n\
         convergence: {max_attempts: 5, backoff: 10ms, max_backoff: 10ms}\n\
         failure: {delay: 10ms, max_delay: 10ms}\n\
         escalation:\n  prd: prd.json\n  same_error_limit: 3",
        "STORY={{ story.id }}\n{{ story.conflict }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join("check.sh"), check).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let prd = serde_json::json!({"project": "Shop", "userStories": stories});
    std::fs::write(
        dir.join("prd.json"),
        serde_json::to_string_pretty(&prd).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    p
}

/// A repository whose RALPH.md takes its tasks from TODO.md (`todo`), `agent.sh` as the agent
/// and `ls *.done` as the check, all committed on `main`. The prompt is `ID={{ task.id }}` and `TITLE={{ task.title }}`.
pub fn todo_repo(agent: &str, todo: &str) -> Project {
    todo_repo_prompting(agent, todo, "ID={{ task.id }}\nTITLE={{ task.title }}\n")
}

/// [`todo_repo`] with `prompt` as the RALPH.md's prompt.
pub fn todo_repo_prompting(agent: &str, todo: &str, prompt: &str) -> Project {
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - 'ls *.done >/dev/null 2>&1'\n\
         convergence: {max_attempts: 5, backoff: 10ms, max_backoff: 10ms}\n\
         failure: {delay: 10ms, max_delay: 10ms}\n\
         tasks:\n  markdown: TODO.md",
        prompt,
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join("TODO.md"), todo).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    p
}

/// Each task's work is a file named by its id; "Refuse" is refused as blocked.
pub const TODO_AGENT: &str = r#"prompt=$(cat)
id=$(printf '%s\n' "$prompt" | sed -n 's/^ID=//p')
title=$(printf '%s\n' "$prompt" | sed -n 's/^TITLE=//p')
case "$title" in
Refuse*) echo '<!-- ralph:state blocked reason="not mine" -->' ;;
*) echo "work of $title" > "$id.done" ;;
esac
"#;

/// The story id in the prompt on stdin, as `$story`, and the whole prompt as `$prompt`.
pub const READ_PROMPT: &str =
    "prompt=$(cat); story=$(printf '%s' \"$prompt\" | grep -o 'STORY=[A-Z0-9-]*' | cut -d= -f2)\n";

pub fn passes(dir: &Path, rev: &str, id: &str) -> Value {
    let prd: Value = serde_json::from_slice(&show(dir, rev, "prd.json").unwrap()).unwrap();
    prd["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap()["passes"]
        .clone()
}

/// No worktree but the main one, no `ralph/*` branch left, and `git fsck` finds no error.
pub fn nothing_left_behind(dir: &Path) {
    let worktrees = git(dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1,
        "only the main worktree: {worktrees}"
    );
    assert_eq!(git(dir, &["branch", "--list", "ralph/*"]), "");
    git(dir, &["fsck", "--no-progress"]);
    assert!(
        !dir.join(".ralph/worktrees")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some())
    );
}

/// `TASK_LANDED`'s commit holds the story's work and `passes: true`; its parent does not say
/// the story passed: `passes` reaches the base with the code, never before.
pub fn landed_with_its_passes(dir: &Path, events: &[Value], id: &str, work: &str) {
    let landed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "TASK_LANDED" && e["task_id"] == id)
        .collect();
    assert_eq!(landed.len(), 1, "{id} landed once: {events:#?}");
    let commit = landed[0]["commit"].as_str().unwrap();
    assert_eq!(passes(dir, commit, id), true);
    assert!(
        show(dir, commit, work).is_some(),
        "{work} is in {id}'s landing"
    );
    assert_eq!(passes(dir, &format!("{commit}^"), id), false);
}

/// Waits up to 30 s for `path` to exist.
pub fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
