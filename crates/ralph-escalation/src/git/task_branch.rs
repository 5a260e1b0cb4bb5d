//! `ralph run --task ID`'s branch, and story ids made safe for ref names.

use std::path::Path;

use super::{Git, GitError};

/// The longest story id kept as it is in a ref name component.
const REF_COMPONENT_MAX: usize = 64;

/// The branch `ralph run --task ID` works on: `ralph/ID` (the id made safe as
/// [`ref_component`] makes it).
pub fn task_branch(id: &str) -> String {
    format!("ralph/{}", ref_component(id))
}

/// Where `ralph run --task ID` put HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskBranch {
    /// The branch: [`task_branch`].
    pub name: String,
    /// Whether it was made now, at the commit HEAD was on; else it existed and was checked
    /// out as it was (or HEAD was on it already).
    pub created: bool,
}

/// `ralph run --task ID`: puts the work tree of the repository holding `cwd` on branch
/// [`task_branch`], made at HEAD when it does not exist. `git switch` carries uncommitted
/// changes over or refuses, so nothing is lost either way.
pub fn switch_to_task_branch(cwd: &Path, id: &str) -> Result<TaskBranch, GitError> {
    let git = Git::open(cwd)?;
    git.head()?;
    let name = task_branch(id);
    let full = format!("refs/heads/{name}");
    if git.head_branch()?.as_deref() == Some(full.as_str()) {
        return Ok(TaskBranch {
            name,
            created: false,
        });
    }
    let exists = git.run(&["rev-parse", "--verify", "-q", &full]).is_ok();
    let from = git.head_branch()?;
    match exists {
        true => git.run(&["switch", "-q", &name])?,
        false => git.run(&["switch", "-q", "-c", &name])?,
    };
    // The branch it is made from (or comes back from) is where its pull request lands
    // (`land.pr`): recorded beside git's own settings for the branch.
    if let Some(base) = from.as_deref().and_then(|b| b.strip_prefix("refs/heads/")) {
        super::push::remember_base(&git.top, &name, base).map_err(|err| GitError::Failed {
            args: format!("config branch.{name}.ralphBase {base}"),
            stderr: err.to_string(),
        })?;
    }
    Ok(TaskBranch {
        name,
        created: !exists,
    })
}

/// A story id made safe for one component of a ref name, distinct for distinct ids: an id of
/// letters, digits, `-` and `_`, at most 64 bytes long, is kept as it is; any other is cut to
/// 64 characters, every other character becomes `-`, and `.` and a hash of the whole id are
/// appended (an id kept as it is never holds a `.`, so the two kinds cannot meet).
pub fn ref_component(id: &str) -> String {
    let safe: String = id
        .chars()
        .take(REF_COMPONENT_MAX)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !id.is_empty() && safe == id {
        return safe;
    }
    let prefix = if safe.is_empty() { "story" } else { &safe };
    format!("{prefix}.{:016x}", crate::signature::fnv1a(id.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::ref_component;

    fn valid(component: &str) -> bool {
        std::process::Command::new("git")
            .args(["check-ref-format"])
            .arg(format!("refs/ralph/attempts/{component}/1"))
            .status()
            .expect("git runs")
            .success()
    }

    #[test]
    fn odd_ids_get_valid_distinct_ref_names() {
        let long = "x".repeat(300);
        let ids = [
            "US-001",
            "../x",
            "a..b",
            "a@{b",
            "@",
            long.as_str(),
            "ünïcødé",
            "story.lock",
            "a/b",
            "a b",
            "a-b",
            "",
            ".",
            "-",
            "a\\b",
            "~^:?*[",
        ];
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            let component = ref_component(id);
            assert!(valid(&component), "{id:?} -> {component:?}");
            assert!(component.len() <= 64 + 17, "{id:?} -> {component:?}");
            assert!(
                seen.insert(component.clone()),
                "{id:?} -> {component:?} twice"
            );
        }
    }

    #[test]
    fn plain_ids_are_kept_as_they_are() {
        assert_eq!(ref_component("US-001"), "US-001");
        assert_eq!(ref_component("story_2"), "story_2");
        assert_ne!(ref_component("a/b"), ref_component("a-b"));
        assert!(ref_component("a/b").starts_with("a-b."));
    }
}
