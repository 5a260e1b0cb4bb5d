//! `Git`'s save and restore in real temporary repositories: a revert never loses work and never
//! rewrites a branch other than the one the checkpoint is on.

use std::path::Path;
use std::process::Command;

use ralph_escalation::Git;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn commit_file(dir: &Path, name: &str, text: &str, message: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    git(dir, &["add", name]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    dir
}

/// The agent checked out one of the user's own branches and committed there: the revert goes
/// back to the checkpoint on the checkpoint's branch and leaves the user's branch as it was.
#[test]
fn a_revert_after_the_agent_switched_branches_leaves_the_other_branch_alone() {
    let dir = repo();
    let top = dir.path();
    let checkpoint = commit_file(top, "a.txt", "a\n", "a");
    git(top, &["branch", "feature"]);
    git(top, &["checkout", "-q", "feature"]);
    let users = commit_file(top, "f.txt", "user work\n", "user's own commit");
    git(top, &["checkout", "-q", "main"]);

    let repo = Git::open(top).unwrap();
    let branch = repo.head_branch().unwrap();
    assert_eq!(branch.as_deref(), Some("refs/heads/main"));

    // The attempt: the agent moves to `feature` and commits on top of the user's work.
    git(top, &["checkout", "-q", "feature"]);
    let agents = commit_file(top, "g.txt", "agent work\n", "agent's commit");

    let saved = repo.save("refs/ralph/attempts/x", "saved", &[]).unwrap();
    repo.restore(&checkpoint, branch.as_deref(), &[], &saved)
        .unwrap();
    let saved = saved.refname;

    assert_eq!(
        git(top, &["rev-parse", "feature"]),
        agents,
        "feature was rewritten"
    );
    assert_eq!(git(top, &["rev-parse", &format!("{saved}^")]), agents);
    assert_eq!(git(top, &["rev-parse", "--verify", "-q", &users]), users);
    assert_eq!(git(top, &["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(git(top, &["rev-parse", "HEAD"]), checkpoint);
    assert!(!top.join("f.txt").exists() && !top.join("g.txt").exists());
    assert_eq!(git(top, &["status", "--porcelain"]), "");
}

/// A checkpoint taken on a detached HEAD is restored as a detached HEAD: no branch moves.
#[test]
fn a_revert_from_a_detached_head_moves_no_branch() {
    let dir = repo();
    let top = dir.path();
    let checkpoint = commit_file(top, "a.txt", "a\n", "a");
    git(top, &["checkout", "-q", "--detach"]);
    let repo = Git::open(top).unwrap();
    let branch = repo.head_branch().unwrap();
    assert_eq!(branch, None);

    git(top, &["checkout", "-q", "main"]);
    let agents = commit_file(top, "g.txt", "agent work\n", "agent's commit on main");
    let saved = repo.save("refs/ralph/attempts/x", "saved", &[]).unwrap();
    repo.restore(&checkpoint, branch.as_deref(), &[], &saved)
        .unwrap();

    assert_eq!(
        git(top, &["rev-parse", "main"]),
        agents,
        "main was rewritten"
    );
    assert_eq!(git(top, &["rev-parse", "HEAD"]), checkpoint);
    assert!(
        Command::new("git")
            .arg("-C")
            .arg(top)
            .args(["symbolic-ref", "-q", "HEAD"])
            .status()
            .unwrap()
            .code()
            == Some(1),
        "HEAD is detached again"
    );
}

/// The usual case: the agent committed on the checkpoint's own branch; the branch goes back to
/// the checkpoint and the commits stay reachable from the saved ref.
#[test]
fn a_revert_on_the_same_branch_resets_it_and_keeps_the_commits_under_the_ref() {
    let dir = repo();
    let top = dir.path();
    let checkpoint = commit_file(top, "a.txt", "a\n", "a");
    let repo = Git::open(top).unwrap();
    let branch = repo.head_branch().unwrap();
    let agents = commit_file(top, "g.txt", "agent work\n", "agent");
    std::fs::write(top.join("untracked.txt"), "u\n").unwrap();
    let saved = repo.save("refs/ralph/attempts/x", "saved", &[]).unwrap();
    repo.restore(&checkpoint, branch.as_deref(), &[], &saved)
        .unwrap();
    let saved = saved.refname;

    assert_eq!(git(top, &["rev-parse", "main"]), checkpoint);
    assert_eq!(git(top, &["rev-parse", &format!("{saved}^")]), agents);
    assert_eq!(git(top, &["show", &format!("{saved}:untracked.txt")]), "u");
    assert!(!top.join("untracked.txt").exists());
}

/// A file staged in one version and changed again in the working tree: both versions are saved,
/// the working tree as the saved commit, the staged one as its second parent (as `git stash`
/// does), so the revert loses neither.
#[test]
fn save_keeps_a_staged_version_that_differs_from_the_working_tree() {
    let dir = repo();
    let top = dir.path();
    commit_file(top, "a.txt", "a\n", "a");
    let repo = Git::open(top).unwrap();
    std::fs::write(top.join("a.txt"), "staged\n").unwrap();
    git(top, &["add", "a.txt"]);
    std::fs::write(top.join("a.txt"), "working\n").unwrap();

    let saved = repo
        .save("refs/ralph/attempts/x", "saved", &[])
        .unwrap()
        .refname;
    assert_eq!(git(top, &["show", &format!("{saved}:a.txt")]), "working");
    assert_eq!(git(top, &["show", &format!("{saved}^2:a.txt")]), "staged");
    // The user's index is as it was.
    assert_eq!(git(top, &["show", ":a.txt"]), "staged");
}

/// `git clean -fd` with a pathspec that excludes a file inside an untracked folder removes the
/// whole folder: a revert must keep the protected file and remove only the rest.
#[test]
fn a_revert_keeps_a_protected_file_inside_an_untracked_folder() {
    let dir = repo();
    let top = dir.path();
    let checkpoint = commit_file(top, "a.txt", "a\n", "a");
    let repo = Git::open(top).unwrap();
    let branch = repo.head_branch().unwrap();
    std::fs::create_dir_all(top.join("out/deep")).unwrap();
    std::fs::write(top.join("out/events.jsonl"), "{}\n").unwrap();
    std::fs::write(top.join("out/agent.txt"), "agent\n").unwrap();
    std::fs::write(top.join("out/deep/agent.txt"), "agent\n").unwrap();
    let protected = [std::path::PathBuf::from("out/events.jsonl")];

    let saved = repo
        .save("refs/ralph/attempts/x", "saved", &protected)
        .unwrap();
    repo.restore(&checkpoint, branch.as_deref(), &protected, &saved)
        .unwrap();

    assert_eq!(
        std::fs::read_to_string(top.join("out/events.jsonl")).unwrap(),
        "{}\n"
    );
    assert!(!top.join("out/agent.txt").exists());
    assert!(!top.join("out/deep").exists(), "emptied folders go too");
    let refname = &saved.refname;
    assert_eq!(
        git(top, &["show", &format!("{refname}:out/deep/agent.txt")]),
        "agent"
    );
    assert!(
        Command::new("git")
            .arg("-C")
            .arg(top)
            .args(["cat-file", "-e", &format!("{refname}:out/events.jsonl")])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .code()
            != Some(0),
        "ralph's own file is not in the saved work"
    );
}

/// A pass commit built in a temporary index: what the user staged on a path left out stays
/// staged and out of the commit; the rest of the index follows the commit.
#[test]
fn commit_all_leaves_what_the_user_staged_on_an_excluded_path_staged() {
    let dir = repo();
    let top = dir.path();
    commit_file(top, "a.txt", "a\n", "a");
    let repo = Git::open(top).unwrap();
    std::fs::write(top.join("mine.txt"), "mine\n").unwrap();
    git(top, &["add", "mine.txt"]);
    std::fs::write(top.join("work.txt"), "work\n").unwrap();

    let head = repo
        .commit_all("ralph: X passes", &["mine.txt".into()], None)
        .unwrap();
    assert_eq!(git(top, &["rev-parse", "HEAD"]), head);
    let files = git(top, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert_eq!(files, "a.txt\nwork.txt");
    assert_eq!(git(top, &["diff", "--cached", "--name-only"]), "mine.txt");
    assert_eq!(git(top, &["status", "--porcelain"]), "A  mine.txt");
}
