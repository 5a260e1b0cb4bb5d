//! A landing that the main worktree does not take whole: a person's commit racing the
//! fast-forward, a write failing half-way through it. The person's commit never takes in the
//! task's work, a landing that fails half-way is rolled back, and neither is ever reported as
//! passed.

use crate::common;

use std::path::Path;

use common::parallel::{READ_PROMPT, nothing_left_behind, passes, repo};
use common::{git, show};

/// Writes the story's work, `work.txt` (and `big.txt`, `size` bytes), and commits it.
fn agent(size: usize) -> String {
    format!(
        "{READ_PROMPT}echo \"work of $story\" > work.txt\n\
         head -c {size} /dev/zero | tr '\\0' x > big.txt\n\
         git add -A && git commit -qm \"$story\"\n"
    )
}

/// Passes once the story's work is there.
const CHECK: &str = "test -f work.txt\n";

/// The commits on `main` that `author` made.
fn commits_by(dir: &Path, author: &str) -> Vec<String> {
    git(
        dir,
        &["log", "--format=%H", &format!("--author={author}"), "main"],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// A person commits in the main worktree while a landing brings it forward: a
/// `post-index-change` hook there commits as the person the first time the main worktree's
/// files hold the task's work, which git runs after a fast-forward wrote the index and files
/// and before it moves the base (the moment `git merge --ff-only` let go of the index). The
/// hook stands for a person in another terminal, so it drops what git tells its own hooks
/// (`GIT_INDEX_FILE`).
#[test]
fn a_persons_commit_during_a_landing_never_takes_in_the_tasks_work() {
    let p = repo(&agent(10), CHECK, &["US-001"], &[("notes.txt", "notes\n")]);
    let main = p.path().to_path_buf();
    let marks = tempfile::tempdir().unwrap();
    let m = marks.path().display();
    let hook = main.join(".git/hooks/post-index-change");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n[ -d .git ] && [ -e work.txt ] && [ ! -e {m}/tried ] || exit 0\n\
             touch {m}/tried\nunset GIT_INDEX_FILE\n\
             echo 'the person' >> notes.txt\n\
             git add notes.txt && git -c user.name=Person -c user.email=person@example.com \
             commit -qm 'the person' && touch {m}/committed\nexit 0\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    let out = p.run(&["run", "--parallel", "1"]);
    assert!(marks.path().join("tried").exists(), "the person tried");
    for commit in commits_by(&main, "Person") {
        assert_eq!(
            show(&main, &commit, "work.txt"),
            show(&main, &format!("{commit}^"), "work.txt"),
            "the person's commit {commit} took in the task's work"
        );
        assert_eq!(
            passes(&main, &commit, "US-001"),
            passes(&main, &format!("{commit}^"), "US-001"),
            "the person's commit {commit} took in the task's mark"
        );
    }
    // Told as it is: landed with the base holding it, or not landed and nothing of it there.
    let landed = p.events_of("TASK_LANDED");
    if let [landed] = landed.as_slice() {
        assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
        let commit = landed["commit"].as_str().unwrap();
        git(&main, &["merge-base", "--is-ancestor", commit, "main"]);
        assert_eq!(passes(&main, "main", "US-001"), true);
        assert!(show(&main, "main", "work.txt").is_some());
    } else {
        assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
        assert_eq!(passes(&main, "main", "US-001"), false);
        assert!(
            !main.join("work.txt").exists(),
            "nothing of it in the files"
        );
    }
    // The index is the base's (what the person's next commit starts from), their note aside.
    assert_eq!(git(&main, &["diff", "--cached", "--name-only"]), "");
}

/// A git in `bin` that, once `bin/armed` exists, runs every git of the main worktree `main`
/// with a file size limit of 128 blocks (at most 128 KiB; `SIGXFSZ` ignored): a write past it
/// fails with `EFBIG` as one fails with `ENOSPC` on a full disk, in the same place of git (a
/// file it checks out), the files before it written and those after it too, as on a disk
/// that fills and then has room again. This reproduces a real failed write rather than a
/// wrapper failing a command whole, and whichever git command brings the main worktree
/// forward meets it. Returns PATH with `bin` first.
fn git_with_a_full_disk(bin: &Path, main: &Path) -> String {
    let script = format!(
        "#!/bin/sh\nif [ -e '{bin}/armed' ] && [ \"$(pwd -P)\" = '{main}' ]; then\n\
         trap '' XFSZ; ulimit -f 128\nfi\nexec '{git}' \"$@\"\n",
        bin = bin.display(),
        main = main.canonicalize().unwrap().display(),
        git = common::real_git().display(),
    );
    let path = bin.join("git");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A disk full as a landing brings the main worktree forward ([`git_with_a_full_disk`]): git
/// writes some of the task's files and `passes: true`, fails on one, and leaves them there
/// uncommitted. The run rolls them back, the person's own change kept, says the task is not
/// landed and ends resumable; with room again `--resume` lands it.
#[test]
fn a_landing_cut_short_by_a_full_disk_is_rolled_back_and_never_reported_passed() {
    // Git writes the files in path order and goes on past a failed one: `a-first.txt`, then
    // `big.txt` (1 MiB) fails, then `prd.json` (`passes: true`) and `work.txt`.
    let p = repo(
        &format!("echo first > a-first.txt\n{}", agent(1 << 20)),
        CHECK,
        &["US-001"],
        &[],
    );
    let main = p.path().to_path_buf();
    let base = git(&main, &["rev-parse", "main"]);
    // The person's own uncommitted change, which the rollback keeps.
    std::fs::write(main.join("notes.txt"), "the person's notes\n").unwrap();
    let bin = tempfile::tempdir().unwrap();
    let path = git_with_a_full_disk(bin.path(), &main);
    std::fs::write(bin.path().join("armed"), "").unwrap();

    let out = p
        .ralph(&["run", "--parallel", "1"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    assert!(p.events_of("TASK_LANDED").is_empty(), "{:#?}", p.events());
    assert_eq!(git(&main, &["rev-parse", "main"]), base);
    // Rolled back: the base's files and index, the person's change kept.
    assert_eq!(
        git(&main, &["status", "--porcelain", "-uall"]),
        "?? notes.txt\n"
    );
    assert_eq!(passes(&main, "main", "US-001"), false);
    let prd: serde_json::Value =
        serde_json::from_slice(&std::fs::read(main.join("prd.json")).unwrap()).unwrap();
    assert_eq!(prd["userStories"][0]["passes"], false);
    let said = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(said.contains("not landed"), "{said}");
    assert!(said.contains("--resume"), "{said}");

    // The disk has room again: the resume lands it, the person's change still theirs.
    std::fs::remove_file(bin.path().join("armed")).unwrap();
    let out = p
        .ralph(&["run", "--resume"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.events_of("TASK_LANDED").len(), 1, "{:#?}", p.events());
    assert_eq!(passes(&main, "main", "US-001"), true);
    assert_eq!(
        std::fs::read(main.join("big.txt")).unwrap().len(),
        1 << 20,
        "every file of the landing"
    );
    assert_eq!(
        git(&main, &["status", "--porcelain", "-uall"]),
        "?? notes.txt\n"
    );
    nothing_left_behind(&main);
}
