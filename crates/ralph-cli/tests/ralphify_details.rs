//! Two ralphify compatibility details: `ralph init` honours the umask, and an HTML comment
//! inside inline code stays in the prompt.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use common::{Project, code, fake_agent};

/// Runs `ralph init ARGS` in `dir` with umask 022, through a shell (the test process's own
/// umask is shared by every test thread, so it is not changed here).
fn init_with_umask_022(dir: &std::path::Path, args: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("umask 022 && exec \"$RALPH\" init {args}",))
        .env("RALPH", env!("CARGO_BIN_EXE_ralph"))
        .current_dir(dir)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn init_writes_files_with_the_users_umask() {
    let dir = tempfile::tempdir().unwrap();
    init_with_umask_022(dir.path(), "plain");
    assert_eq!(mode(&dir.path().join("plain/RALPH.md")), 0o644);

    init_with_umask_022(dir.path(), "--prd stories");
    for name in ["RALPH.md", "prd.json", "progress.txt"] {
        assert_eq!(
            mode(&dir.path().join("stories").join(name)),
            0o644,
            "{name}"
        );
    }
}

#[test]
fn html_comment_in_inline_code_reaches_the_agent() {
    let p = Project::new(
        &format!(
            "agent: '{} --save-prompt prompt.txt'\nmax_iterations: 1",
            fake_agent()
        ),
        "Write `<!-- one -->` or ``<!-- `two` -->``. <!-- note for me -->\n",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    let prompt = std::fs::read_to_string(p.path().join("prompt.txt")).unwrap();
    assert!(
        prompt.starts_with("Write `<!-- one -->` or ``<!-- `two` -->``.\n=== end ==="),
        "{prompt}"
    );
}
