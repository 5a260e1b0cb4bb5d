//! The RALPH.md `land:` section: how the merge queue puts a task's work on the base. Its words
//! are this crate's, registered with the parser as a plug's ([`vocabulary`]), so the parser
//! names none of them.

use ralph_escalation::pr_config;
use ralph_escalation::tasks_config::describe;
use ralph_frontmatter::{PlugVocabulary, SectionProblem};
use serde_json::Value;

/// What a landing adds to the base's history. Whichever it is, the `done_when` checks ran on
/// exactly the tree that lands (the task list's mark aside, which the landing adds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum History {
    /// The base merged into the task's branch (the agent's commits as they were), then a
    /// landing commit that marks the task: three commits a one-commit task.
    #[default]
    Merge,
    /// The task's commits replayed on the base, then the landing commit: linear history, the
    /// agent's commits kept one by one.
    Rebase,
    /// One commit on the base, titled after the task, holding the whole task and its mark.
    Squash,
}

impl History {
    /// Every choice, as `land.history` names it.
    pub const ALL: [History; 3] = [History::Merge, History::Rebase, History::Squash];

    /// Its name in `land.history`.
    pub fn as_str(self) -> &'static str {
        match self {
            History::Merge => "merge",
            History::Rebase => "rebase",
            History::Squash => "squash",
        }
    }
}

/// The `land:` section as written; every key optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LandConfig {
    /// `history`: what a landing adds to the base's history.
    pub history: History,
}

impl LandConfig {
    /// The section `value` (none: every default); the defaults where it does not pass
    /// [`check`], which the parser has already reported.
    pub fn from_section(value: Option<&Value>) -> Self {
        let history = value
            .and_then(|v| v.get("history"))
            .and_then(Value::as_str)
            .and_then(|name| History::ALL.into_iter().find(|h| h.as_str() == name))
            .unwrap_or_default();
        Self { history }
    }
}

/// The `land` section's problems: a mapping of `history` (one of its choices) and the
/// pull-request keys [`pr_config`] checks.
pub fn check(value: &Value) -> Vec<SectionProblem> {
    let choices = History::ALL.map(|h| format!("`{}`", h.as_str())).join(", ");
    let Some(map) = value.as_object() else {
        return vec![SectionProblem::at_value(
            "",
            format!(
                "expected a mapping such as `land: {{history: squash}}`, got {}",
                describe(value)
            ),
        )];
    };
    let mut problems = Vec::new();
    for (key, item) in map {
        match key.as_str() {
            "history" => {
                let known = item
                    .as_str()
                    .is_some_and(|name| History::ALL.iter().any(|h| h.as_str() == name));
                if !known {
                    problems.push(SectionProblem::at_value(
                        "history",
                        format!("expected one of {choices}, got {}", describe(item)),
                    ));
                }
            }
            other => match pr_config::check_key(other, item, value) {
                Some(found) => problems.extend(found),
                None => problems.push(SectionProblem::at_key(
                    other,
                    format!(
                        "unknown key `{other}`; `land` takes `history`, {}",
                        pr_config::KEYS.map(|k| format!("`{k}`")).join(", ")
                    ),
                )),
            },
        }
    }
    problems
}

/// The JSON Schema of the `land` section, for `docs/ralph.schema.json`.
pub fn json_schema() -> serde_json::Value {
    let mut schema = serde_json::json!({
        "description": "How a task lands: on the base (`ralph run --parallel`, see docs/parallel.md), or as a pull request (`pr`, see docs/forges.md).",
        "type": "object",
        "properties": {
            "history": {
                "enum": History::ALL.map(History::as_str),
                "default": History::default().as_str(),
                "description": "merge: the base merged into the task's branch, then a landing \
                                commit; rebase: the task's commits replayed on the base, then the \
                                landing commit; squash: one commit per task, titled after it."
            }
        },
        "additionalProperties": false
    });
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.extend(pr_config::json_schema_properties());
    }
    schema
}

/// The words parallel runs bring to RALPH.md: the `land` section.
pub fn vocabulary() -> PlugVocabulary {
    PlugVocabulary::new("parallel runs").section("land", check)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(yaml: &str) -> Value {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn history_is_read_with_merge_the_default() {
        assert_eq!(LandConfig::from_section(None).history, History::Merge);
        let squash = section("history: squash");
        assert_eq!(
            LandConfig::from_section(Some(&squash)).history,
            History::Squash
        );
        assert!(check(&squash).is_empty());
    }

    #[test]
    fn an_unknown_choice_or_key_is_a_problem_naming_what_is_allowed() {
        let problems = check(&section("history: linear\nsquash: true"));
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "expected one of `merge`, `rebase`, `squash`, got \"linear\"",
                "unknown key `squash`; `land` takes `history`, `pr`, `repo`, `remote`, `draft`",
            ]
        );
        assert_eq!(problems[0].field, "history");
    }
}
