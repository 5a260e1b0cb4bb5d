//! `land.history`: what a parallel run's landings add to the base. `merge` (the default) merges
//! the base into each task's branch and adds a landing commit; `rebase` replays the task's
//! commits on the base, linear; `squash` lands each task as one commit titled after it. In
//! every case the checks ran on the tree that lands, and a conflict goes back to its loop.

use crate::common;

use common::parallel::{READ_PROMPT, nothing_left_behind, passes, repo};
use common::{Project, commit_all, git, show};

/// Stories `US-001` and `US-002` landed with `land: {history: HISTORY}`; each story's agent
/// commits its own file, and with `conflict` appends to `shared.txt` too, so the second to land
/// conflicts with the first and goes back to its loop once.
fn stories(history: &str, conflict: bool) -> Project {
    let append = if conflict {
        "echo \"$story was here\" >> shared.txt\n"
    } else {
        ""
    };
    let agent = format!(
        "{READ_PROMPT}{append}echo ok > \"$story.txt\"\n\
         git add -A && git commit -qm \"work on $story\"\n"
    );
    let p = repo(
        &agent,
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[("shared.txt", "start\n")],
    );
    let ralph_md = p.path().join("RALPH.md");
    let text = std::fs::read_to_string(&ralph_md).unwrap();
    let text = text.replacen("---\n", &format!("---\nland: {{history: {history}}}\n"), 1);
    std::fs::write(&ralph_md, text).unwrap();
    commit_all(p.path(), "land");
    p
}

/// The base's commits since the run started, oldest first: `(subject, parents)`.
fn landed_commits(dir: &std::path::Path) -> Vec<(String, usize)> {
    // The commit that set `land:` is the last before the run.
    let since = git(dir, &["log", "--format=%H", "-1", "--grep=^land$"]);
    let since = since.trim();
    git(
        dir,
        &[
            "log",
            "--reverse",
            "--format=%s%x09%P",
            &format!("{since}..HEAD"),
        ],
    )
    .lines()
    .map(|line| {
        let (subject, parents) = line.split_once('\t').unwrap();
        (subject.to_owned(), parents.split_whitespace().count())
    })
    .collect()
}

#[test]
fn squash_lands_each_task_as_one_commit_titled_after_it() {
    let p = stories("squash", true);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let dir = p.path();
    let commits = landed_commits(dir);
    let subjects: Vec<&str> = commits.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(subjects.len(), 2, "one commit a task: {commits:?}");
    assert!(
        subjects.contains(&"story US-001") && subjects.contains(&"story US-002"),
        "{commits:?}"
    );
    assert!(
        commits.iter().all(|(_, parents)| *parents == 1),
        "{commits:?}"
    );
    // Each holds its task's work and mark; the one before it does not.
    for id in ["US-001", "US-002"] {
        let commit = git(
            dir,
            &["log", "--format=%H", "-1", &format!("--grep=^story {id}$")],
        );
        let commit = commit.trim();
        assert_eq!(passes(dir, commit, id), true);
        assert!(show(dir, commit, &format!("{id}.txt")).is_some());
        assert_eq!(passes(dir, &format!("{commit}^"), id), false);
    }
    let shared = std::fs::read_to_string(dir.join("shared.txt")).unwrap();
    assert!(shared.contains("US-001 was here") && shared.contains("US-002 was here"));
    assert_eq!(p.events_of("MERGE_CONFLICT").len(), 1, "{:#?}", p.events());
    nothing_left_behind(dir);
    // The report words the failed merge as failed, not as merged.
    let report = p.run(&["report", "-o", "-"]);
    let html = common::stdout(&report);
    assert!(
        html.contains("merge failed: a conflict in shared.txt"),
        "{html}"
    );
    assert!(!html.contains("merged with the base"), "{html}");
}

#[test]
fn rebase_keeps_the_history_linear_with_the_agents_commits() {
    let p = stories("rebase", true);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let dir = p.path();
    let commits = landed_commits(dir);
    assert!(
        commits.iter().all(|(_, parents)| *parents == 1),
        "linear: {commits:?}"
    );
    let subjects: Vec<&str> = commits.iter().map(|(s, _)| s.as_str()).collect();
    // The task sent back started again from the new base: its second attempt's commit.
    for id in ["US-001", "US-002"] {
        let work = subjects.iter().position(|s| *s == format!("work on {id}"));
        let land = subjects
            .iter()
            .position(|s| *s == format!("ralph: land {id} on main"));
        assert!(
            matches!((work, land), (Some(w), Some(l)) if l == w + 1),
            "{id}'s commit, then its landing: {commits:?}"
        );
    }
    assert_eq!(subjects.len(), 4, "{commits:?}");
    nothing_left_behind(dir);
}

#[test]
fn rebase_replays_a_task_on_a_base_that_moved_without_a_merge_commit() {
    let p = stories("rebase", false);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let commits = landed_commits(p.path());
    assert!(
        commits.iter().all(|(_, parents)| *parents == 1),
        "{commits:?}"
    );
    assert_eq!(
        commits.len(),
        4,
        "a work commit and a landing a task: {commits:?}"
    );
    nothing_left_behind(p.path());
}

#[test]
fn squash_lands_a_task_on_a_base_that_moved_as_one_commit() {
    let p = stories("squash", false);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let commits = landed_commits(p.path());
    let subjects: Vec<&str> = commits.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(subjects.len(), 2, "{commits:?}");
    assert!(
        subjects.iter().all(|s| s.starts_with("story US-00")),
        "{commits:?}"
    );
    nothing_left_behind(p.path());
}

#[test]
fn merge_stays_the_default_with_a_merge_and_a_landing_commit() {
    // The second task to land started from the base the first moved: it is merged.
    let p = stories("merge", false);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let commits = landed_commits(p.path());
    assert!(
        commits.iter().any(|(_, parents)| *parents == 2),
        "{commits:?}"
    );
    assert_eq!(commits.len(), 5, "{commits:?}");
}

#[test]
fn an_unknown_history_is_a_located_error() {
    let p = Project::new("agent: x\nland: {history: linear}", "x\n");
    let out = p.run(&["check"]);
    assert_eq!(common::code(&out), 2);
    let err = common::stderr(&out);
    assert!(
        err.contains("RALPH.md:3:17:")
            && err.contains("land.history")
            && err.contains("expected one of `merge`, `rebase`, `squash`, got \"linear\""),
        "{err}"
    );
}
