//! Preflight with escalation: the engine's checks ([`ralph_engine::preflight`]) and those of
//! prd.json and git, each a warning located at the setting it is about. What `ralph check`
//! prints; an embedder can show the same before it runs a loop.

use std::path::Path;

use ralph_engine::frontmatter::{ConfigError, RalphFile, error_at_key};

/// Every preflight warning for `file` (whose text is `text`, shown as `shown`), checked from
/// `cwd`, where the loop would run: [`ralph_engine::preflight::warnings`], a prd.json that
/// `ralph run` would refuse (read, never written), `revert` outside a git repository.
pub fn warnings(shown: &str, text: &str, file: &RalphFile, cwd: &Path) -> Vec<ConfigError> {
    let config = &file.config;
    let key = |path: &str, message: String| error_at_key(shown, text, path, message);
    let mut warnings = ralph_engine::preflight::warnings(shown, text, file, cwd);

    if config.escalation.as_ref().is_some_and(|e| e.prd.is_some()) {
        // Read as `ralph run` reads it, never written. Paths are relative to where ralph runs.
        if let Err(err) = crate::Escalation::preview(config, Path::new(".")) {
            warnings.push(key(
                "escalation.prd",
                format!("{err}; `ralph run` would refuse to start"),
            ));
        }
    }

    if let Some(escalation) = &config.escalation {
        if escalation.revert && !in_git_repo(cwd) {
            warnings.push(key(
                "escalation.revert",
                format!(
                    "revert is on, but {} is not inside a git repository, so there is no \
                     checkpoint to revert to; run from a git checkout or set `revert: false`",
                    cwd.display()
                ),
            ));
        }
    }
    warnings
}

/// Whether `dir` or a folder above it is a git work tree (`.git` folder, or file for worktrees
/// and submodules).
fn in_git_repo(dir: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() {
        return true;
    }
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors().any(|d| d.join(".git").exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> RalphFile {
        ralph_engine::frontmatter::parse("RALPH.md", text)
            .expect("valid RALPH.md")
            .file
    }

    #[test]
    fn revert_outside_a_git_repository_is_a_warning_at_its_key() {
        let text = "---\nagent: sh\nescalation:\n  revert: true\n---\nx\n";
        let outside = tempfile::tempdir().unwrap();
        assert!(
            !in_git_repo(outside.path()),
            "the temp folder is in no checkout"
        );
        let found = warnings("RALPH.md", text, &file(text), outside.path());
        let revert: Vec<_> = found
            .iter()
            .filter(|w| w.path == "escalation.revert")
            .collect();
        assert_eq!(revert.len(), 1, "{found:?}");
        assert_eq!((revert[0].line, revert[0].column), (4, 3));
    }

    #[test]
    fn the_engines_checks_come_along() {
        let text = "---\nagent: no-such-agent-xyz -p\n---\nx\n";
        let found = warnings("RALPH.md", text, &file(text), Path::new("/"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "agent");
        assert!(
            found[0]
                .message
                .starts_with("`no-such-agent-xyz` is not found on PATH"),
            "{found:?}"
        );
    }
}
