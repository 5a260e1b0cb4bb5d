//! ralph's git works in the repository ralph runs in, whatever the environment says: a
//! person's shell, a git hook or a tool that started ralph may have set `GIT_DIR`,
//! `GIT_WORK_TREE` or `GIT_INDEX_FILE` for another repository, and ralph's commits, refs and
//! merges must not land there.

use crate::common;

use std::path::Path;

use common::{Project, code, git, git_repo};

/// Another repository, with one commit, and the variables that point git at it.
fn other_repository(dir: &Path) -> [(&'static str, String); 3] {
    std::fs::write(dir.join("notes.txt"), "mine\n").unwrap();
    git_repo(dir);
    let git_dir = dir.join(".git");
    [
        ("GIT_DIR", git_dir.display().to_string()),
        ("GIT_WORK_TREE", dir.display().to_string()),
        (
            "GIT_INDEX_FILE",
            git_dir.join("index").display().to_string(),
        ),
    ]
}

/// Everything a repository holds that ralph could change: its refs and its index.
fn state_of(dir: &Path) -> (String, Vec<u8>) {
    (
        git(dir, &["for-each-ref"]),
        std::fs::read(dir.join(".git/index")).unwrap(),
    )
}

#[test]
fn a_story_passes_into_the_repository_ralph_runs_in_not_the_one_git_dir_names() {
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - test -f done.txt\nescalation:\n  prd: prd.json",
        "STORY={{ story.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), "echo done > done.txt\n").unwrap();
    let prd = serde_json::json!({"project": "Shop", "userStories": [{
        "id": "US-001", "title": "One", "description": "Do it", "acceptanceCriteria": ["ok"],
        "priority": 1, "passes": false, "notes": ""
    }]});
    std::fs::write(dir.join("prd.json"), prd.to_string()).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    let commits_before = git(dir, &["rev-list", "--count", "HEAD"]);

    let elsewhere = tempfile::tempdir().unwrap();
    let env = other_repository(elsewhere.path());
    let untouched = state_of(elsewhere.path());

    let out = p
        .ralph(&["run"])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));

    // The pass and its checkpoint are in the project...
    let commits_after = git(dir, &["rev-list", "--count", "HEAD"]);
    assert_ne!(commits_before, commits_after, "no commit in the project");
    assert!(git(dir, &["show", "HEAD:done.txt"]).contains("done"));
    assert!(git(dir, &["for-each-ref"]).contains("refs/ralph/checkpoint"));
    // ... and the other repository is as it was.
    assert_eq!(state_of(elsewhere.path()), untouched);
}
