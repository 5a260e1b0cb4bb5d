//! An escalation refuses, as it opens, a progress file that a symlink makes the prd.json or puts
//! inside `.git`: the checks the RALPH.md's text alone cannot make, done for every embedder.

use std::os::unix::fs::symlink;
use std::path::Path;

use ralph_escalation::{Escalation, EscalationError};
use ralph_frontmatter::{Config, parse};

fn config(progress: &str) -> Config {
    let text = format!(
        "---\nagent: x\nescalation:\n  prd: prd.json\n  progress: {progress}\n  revert: false\n---\nx\n"
    );
    parse("RALPH.md", &text).unwrap().file.config
}

fn opened(dir: &Path, progress: &str) -> Result<(), String> {
    match Escalation::preview(&config(progress), dir) {
        Ok(_) => Ok(()),
        Err(EscalationError::ProgressPath(conflict)) => Err(conflict.to_string()),
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn a_progress_file_that_leads_to_the_prd_or_into_git_is_refused_when_escalation_opens() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    std::fs::write(
        at("prd.json"),
        r#"{"userStories": [{"id": "A", "priority": 1, "passes": false}]}"#,
    )
    .unwrap();
    std::fs::create_dir(at(".git")).unwrap();
    symlink(at("prd.json"), at("log.txt")).unwrap();
    symlink(at(".git"), at("logs")).unwrap();

    let err = opened(dir.path(), "log.txt").unwrap_err();
    assert!(
        err.starts_with("escalation.progress: \"")
            && err.contains("is the same file as escalation.prd"),
        "{err}"
    );
    let err = opened(dir.path(), "logs/progress.txt").unwrap_err();
    assert!(err.contains("leads inside .git"), "{err}");
    assert_eq!(opened(dir.path(), "progress.txt"), Ok(()));
    assert!(!at("progress.txt").exists(), "opening writes nothing");
}
