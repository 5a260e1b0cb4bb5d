//! Trust 0.4, item 17: small things a person saw go wrong, each through the real binary.

mod common;

use common::{code, git, stderr, story_repo};

/// The agent deletes the branch ralph runs on (HEAD left unborn): ralph says the branch is gone,
/// names it and the last commit it knows, not "the repository has no commit yet".
#[test]
fn an_agent_deleting_its_branch_is_named_not_called_a_repository_with_no_commit() {
    let p = story_repo("git update-ref -d refs/heads/main\n", &["Only"]);
    let dir = p.path();
    let checkpoint = git(dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let out = p.run(&["run"]);
    let err = stderr(&out);
    assert_ne!(code(&out), 0, "{err}");
    assert!(!err.contains("no commit yet"), "{err}");
    assert!(
        err.contains("refs/heads/main") || err.contains("`main`"),
        "{err}"
    );
    assert!(err.contains(&checkpoint[..12]), "{err}");
    assert!(err.contains("gone"), "{err}");
}
