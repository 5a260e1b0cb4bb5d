//! RALPH.md `land:`'s pull-request keys (`pr`, `repo`, `remote`, `draft`): read, checked and
//! described for the schema here; the `land` section itself is `ralph-parallel`'s, which hands
//! these keys over ([`check_key`]), so a single `--task` loop and a parallel run read them alike.

use ralph_frontmatter::SectionProblem;
use serde_json::Value;

use crate::tasks_config::describe;

/// The remote a task's branch is pushed to when `land.remote` is not set.
pub const DEFAULT_REMOTE: &str = "origin";

/// The keys of `land` this module reads.
pub const KEYS: [&str; 4] = ["pr", "repo", "remote", "draft"];

/// Which forge the pull request is opened on (`land.pr`). Exhaustive on purpose: a program
/// that lands tasks must say how it lands on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forge {
    /// GitHub: a pull request.
    Github,
    /// GitLab: a merge request.
    Gitlab,
}

impl Forge {
    /// Every forge, as `land.pr` names it.
    pub const ALL: [Forge; 2] = [Forge::Github, Forge::Gitlab];

    /// Its name in `land.pr`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Forge::Github => "github",
            Forge::Gitlab => "gitlab",
        }
    }
}

/// `land.pr` and its companions: a task that passes is pushed as `ralph/<id>` and opened as a
/// pull request instead of landing on the base.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrSettings {
    /// `pr`: the forge.
    pub forge: Forge,
    /// `repo`: `owner/repo` (GitLab: `group/project`); `None`: from the task list's repository
    /// or the remote's URL.
    pub repo: Option<String>,
    /// `remote`: the git remote pushed to.
    pub remote: String,
    /// `draft`: opened as a draft.
    pub draft: bool,
}

impl PrSettings {
    /// The settings the `land` section `land` asks for; `None` without `land.pr` (or where
    /// the section does not pass [`check_key`], which the parser has already reported).
    #[must_use]
    pub fn from_section(land: Option<&Value>) -> Option<Self> {
        let land = land?;
        let forge = land
            .get("pr")
            .and_then(Value::as_str)
            .and_then(|name| Forge::ALL.into_iter().find(|f| f.as_str() == name))?;
        let text = |key: &str| land.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(Self {
            forge,
            repo: text("repo"),
            remote: text("remote").unwrap_or_else(|| DEFAULT_REMOTE.to_owned()),
            draft: land.get("draft").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// The problems of `land`'s key `key` (its value `value`, the whole section `land`), or `None`
/// when the key is not one of [`KEYS`].
#[must_use]
pub fn check_key(key: &str, value: &Value, land: &Value) -> Option<Vec<SectionProblem>> {
    let mut problems = Vec::new();
    match key {
        "pr" => {
            if !value
                .as_str()
                .is_some_and(|name| Forge::ALL.iter().any(|f| f.as_str() == name))
            {
                let choices = Forge::ALL.map(|f| format!("`{}`", f.as_str())).join(", ");
                problems.push(SectionProblem::at_value(
                    "pr",
                    format!("expected one of {choices}, got {}", describe(value)),
                ));
            }
        }
        "repo" => {
            let well_formed = value.as_str().is_some_and(|repo| {
                let parts: Vec<&str> = repo.split('/').collect();
                parts.len() >= 2 && parts.iter().all(|p| !p.trim().is_empty())
            });
            if !well_formed {
                problems.push(SectionProblem::at_value(
                    "repo",
                    format!(
                        "expected `owner/repo` (GitLab: `group/project`), got {}",
                        describe(value)
                    ),
                ));
            }
        }
        "remote" => {
            if !value.as_str().is_some_and(is_remote_name) {
                problems.push(SectionProblem::at_value(
                    "remote",
                    format!(
                        "expected the name of a git remote such as `origin`, got {}",
                        describe(value)
                    ),
                ));
            }
        }
        "draft" => {
            if value.as_bool().is_none() {
                problems.push(SectionProblem::at_value(
                    "draft",
                    format!("expected `true` or `false`, got {}", describe(value)),
                ));
            }
        }
        _ => return None,
    }
    if key != "pr" && land.get("pr").is_none() {
        problems.push(SectionProblem::at_key(
            key,
            format!("`{key}` goes with `pr` (such as `land: {{pr: github}}`)"),
        ));
    }
    Some(problems)
}

/// A remote's name as git takes it: no spaces, no leading `-`, not empty.
fn is_remote_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The JSON Schema of [`KEYS`], for `land`'s schema.
#[must_use]
pub fn json_schema_properties() -> serde_json::Map<String, serde_json::Value> {
    let schema = serde_json::json!({
        "pr": {
            "enum": Forge::ALL.map(Forge::as_str),
            "description": "Land a passing task as a pull request (GitHub) or merge request \
                            (GitLab): its branch ralph/<id> pushed and a request opened to the \
                            base, which stays as it was. See docs/forges.md."
        },
        "repo": {
            "type": "string",
            "description": "owner/repo (GitLab: group/project); default: the task list's \
                            repository, or the remote's URL."
        },
        "remote": {
            "type": "string",
            "default": DEFAULT_REMOTE,
            "description": "The git remote the task's branch is pushed to."
        },
        "draft": {
            "type": "boolean",
            "default": false,
            "description": "Open the request as a draft."
        }
    });
    match schema {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(yaml: &str) -> Value {
        serde_norway::from_str(yaml).unwrap()
    }

    fn problems(yaml: &str) -> Vec<String> {
        let land = section(yaml);
        let map = land.as_object().unwrap();
        map.iter()
            .filter_map(|(k, v)| check_key(k, v, &land))
            .flatten()
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect()
    }

    #[test]
    fn pr_is_read_with_its_defaults() {
        let land = section("pr: github");
        let settings = PrSettings::from_section(Some(&land)).unwrap();
        assert_eq!(settings.forge, Forge::Github);
        assert_eq!(settings.remote, "origin");
        assert_eq!(settings.repo, None);
        assert!(!settings.draft);
        let land = section("pr: gitlab\nrepo: g/sub/p\nremote: up\ndraft: true");
        let settings = PrSettings::from_section(Some(&land)).unwrap();
        assert_eq!(settings.forge, Forge::Gitlab);
        assert_eq!(settings.repo.as_deref(), Some("g/sub/p"));
        assert_eq!(settings.remote, "up");
        assert!(settings.draft);
        assert!(problems("pr: gitlab\nrepo: g/sub/p\nremote: up\ndraft: true").is_empty());
        assert_eq!(
            PrSettings::from_section(Some(&section("history: squash"))),
            None
        );
    }

    #[test]
    fn bad_values_name_what_is_allowed() {
        assert_eq!(
            problems("pr: bitbucket\nrepo: lonely\nremote: -x\ndraft: maybe"),
            [
                "pr: expected one of `github`, `gitlab`, got \"bitbucket\"",
                "repo: expected `owner/repo` (GitLab: `group/project`), got \"lonely\"",
                "remote: expected the name of a git remote such as `origin`, got \"-x\"",
                "draft: expected `true` or `false`, got \"maybe\"",
            ]
        );
        assert_eq!(
            problems("draft: true"),
            ["draft: `draft` goes with `pr` (such as `land: {pr: github}`)"]
        );
    }
}
