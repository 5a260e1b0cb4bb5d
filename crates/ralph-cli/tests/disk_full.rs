//! A disk that fills during a story run (Trust 0.4, item 17): the run ends resumable, saying
//! so, and once there is room `ralph run --resume` goes on with the work left in the tree,
//! instead of leaving `--allow-dirty` (which sets the work aside) as the only way on.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::parallel::repo;
use common::{Project, code, stderr};

/// A `git` first on `PATH` that, while `full` exists, fails every command that writes the
/// repository as git does on a full disk, and otherwise is git.
fn git_on_a_full_disk(bin: &Path, full: &Path) {
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let script = format!(
        "#!/bin/sh\nif [ -e '{full}' ]; then\n  for a in \"$@\"; do case \"$a\" in\n    \
         add|commit|commit-tree|write-tree|update-ref|update-index|hash-object|stash|reset|checkout)\n      \
         echo 'fatal: unable to write new index file: No space left on device' >&2; exit 128;;\n  \
         esac; done\nfi\nexec '{real}' \"$@\"\n",
        full = full.display(),
        real = real.trim()
    );
    let path = bin.join("git");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn run_with_path(p: &Project, bin: &Path, args: &[&str]) -> Output {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    p.ralph(args)
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_disk_full_during_a_pass_ends_resumable_and_resume_lands_the_work() {
    let bin = tempfile::tempdir().unwrap();
    let flag = tempfile::tempdir().unwrap();
    let full = flag.path().join("full");
    git_on_a_full_disk(bin.path(), &full);
    // The agent does its story's work; then the disk fills.
    let agent = format!(
        "story=$(cat | grep -o 'STORY=[A-Z0-9-]*' | cut -d= -f2)\necho work > \"$story.txt\"\n\
         touch '{}'\n",
        full.display()
    );
    let p = repo(&agent, "ls US-*.txt >/dev/null 2>&1\n", &["US-001"], &[]);
    let out = run_with_path(&p, bin.path(), &["run"]);
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    assert_eq!(p.run_ended()["reason"], "escalation_failed", "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("ralph run --resume"), "{err}");
    let status = run_with_path(&p, bin.path(), &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&common::stdout(&status)).unwrap();
    assert_eq!(status["resumable"], true, "{status}");

    // Room again: the run goes on and the story lands with its work.
    std::fs::remove_file(&full).unwrap();
    let out = run_with_path(&p, bin.path(), &["run", "--resume"]);
    assert_eq!(code(&out), 0, "{}\n{}", common::stdout(&out), stderr(&out));
    let log = common::git(p.path(), &["log", "--format=%s"]);
    assert!(log.contains("US-001"), "{log}");
    assert_eq!(
        common::git(p.path(), &["show", "HEAD:US-001.txt"]).trim(),
        "work"
    );
}
