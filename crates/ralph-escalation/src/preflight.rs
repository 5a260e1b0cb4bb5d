//! Preflight: the machine's checks of the engine's settings (`machine`), each a warning
//! located at the setting it is about, and what `ralph run` would refuse to start on (a
//! prd.json it cannot read, a tree or repository escalation cannot work in), found by the very
//! checks the run makes. What `ralph check` prints; an embedder can show the same before it runs
//! a loop.

use std::path::Path;

use ralph_frontmatter::{ConfigError, RalphFile, error_at_key};
use ralph_tasks::TaskList;

use crate::{Escalation, EscalationError, Options};

mod machine;

/// Every preflight warning for `file` (whose text is `text`, shown as `shown`), checked from
/// `cwd`, where the loop would run: the `idle` block without the idle marker in the prompt, an
/// agent or `done_when` programs that cannot be found, a command script without `#!` that would
/// run without a shell, a `max_cost` that cannot be reached. Each is located at the setting it
/// is about, in the order of the checks.
pub fn warnings(shown: &str, text: &str, file: &RalphFile, cwd: &Path) -> Vec<ConfigError> {
    machine::warnings(shown, text, file, cwd)
}

/// Why `ralph run` (without `--allow-dirty`) would refuse to start in `cwd`, located at the
/// setting that asks for what is missing: escalation opened as the run opens it
/// ([`Escalation::check_open`]: prd.json read, never written; with `revert`, a git repository
/// with a commit, no submodules, the means to commit and a clean tree), changing nothing.
/// `tasks` is the task list the run would work from (`None`: prd.json when `escalation.prd`
/// is set).
pub fn refusals(
    shown: &str,
    text: &str,
    file: &RalphFile,
    cwd: &Path,
    tasks: Option<Box<dyn TaskList>>,
) -> Vec<ConfigError> {
    let mut options = Options::new(cwd);
    options.tasks = tasks;
    let Err(err) = Escalation::check_open(&file.config, options) else {
        return Vec::new();
    };
    let key = match &err {
        // `--task`'s refusals: check_open is never given a task.
        EscalationError::Prd(_)
        | EscalationError::NotStoryMode { .. }
        | EscalationError::NoSuchTask { .. } => match file.sections.contains_key("tasks") {
            true => "tasks.prd",
            false => "escalation.prd",
        },
        EscalationError::Tasks(_) => "tasks",
        EscalationError::Progress(_) | EscalationError::ProgressPath(_) => "escalation.progress",
        EscalationError::Git(_)
        | EscalationError::DirtyTree { .. }
        | EscalationError::Journal(_)
        | EscalationError::ChangedWhileStopped { .. } => "escalation.revert",
        EscalationError::Push(_) => "land.pr",
    };
    vec![error_at_key(
        shown,
        text,
        key,
        format!("{err}; `ralph run` would refuse to start"),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> RalphFile {
        ralph_frontmatter::parse("RALPH.md", text)
            .expect("valid RALPH.md")
            .file
    }

    #[test]
    fn revert_outside_a_git_repository_is_a_refusal_at_its_key() {
        let text = "---\nagent: sh\nescalation:\n  revert: true\n---\nx\n";
        let outside = tempfile::tempdir().unwrap();
        let found = refusals("RALPH.md", text, &file(text), outside.path(), None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "escalation.revert");
        assert_eq!((found[0].line, found[0].column), (4, 3));
        assert!(
            found[0].message.contains("not a git repository"),
            "{found:?}"
        );
        let without = "---\nagent: sh\nescalation:\n  revert: false\n---\nx\n";
        assert!(refusals("RALPH.md", without, &file(without), outside.path(), None).is_empty());
    }

    #[test]
    fn a_prd_json_the_run_cannot_read_is_a_refusal_at_its_key() {
        let text = "---\nagent: sh\nescalation:\n  prd: prd.json\n  revert: false\n---\nx\n";
        let here = tempfile::tempdir().unwrap();
        let found = refusals("RALPH.md", text, &file(text), here.path(), None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "escalation.prd");
        assert!(found[0].message.contains("prd.json"), "{found:?}");
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
