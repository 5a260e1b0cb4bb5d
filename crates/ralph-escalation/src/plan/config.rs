//! The RALPH.md `plan:` section: `ralph plan`'s settings. Checked by the parser through the
//! plug vocabulary ([`check`]), read into a [`PlanConfig`] by `ralph plan`.

use std::path::PathBuf;

use ralph_frontmatter::SectionProblem;
use serde_json::Value;

/// Every key `plan` takes.
const KEYS: [&str; 1] = ["prompt"];

/// `ralph plan`'s settings, as `plan:` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanConfig {
    /// A file holding the planning prompt, used instead of the built-in one.
    pub prompt: Option<PathBuf>,
}

impl PlanConfig {
    /// The `plan` section as written; the defaults when it does not pass [`check`].
    pub fn from_section(value: Option<&Value>) -> Self {
        let Some(value) = value.filter(|v| check(v).is_empty()) else {
            return Self::default();
        };
        Self {
            prompt: value
                .get("prompt")
                .and_then(Value::as_str)
                .map(PathBuf::from),
        }
    }
}

/// The `plan` section's problems: a mapping whose `prompt` is a path, nothing else.
pub fn check(value: &Value) -> Vec<SectionProblem> {
    let Some(map) = value.as_object() else {
        return vec![SectionProblem::at_value(
            "",
            format!(
                "expected a mapping such as `plan: {{prompt: PLAN.md}}`, got {}",
                crate::tasks_config::describe(value)
            ),
        )];
    };
    let mut problems = Vec::new();
    for (key, item) in map {
        match key.as_str() {
            "prompt" if item.as_str().is_none_or(|s| s.trim().is_empty()) => {
                problems.push(SectionProblem::at_value(
                    "prompt",
                    format!(
                        "expected a path to the planning prompt file, got {}",
                        crate::tasks_config::describe(item)
                    ),
                ));
            }
            "prompt" => {}
            other => problems.push(SectionProblem::at_key(
                other,
                format!(
                    "unknown key `{other}`; `plan` takes `prompt`{}",
                    match ralph_frontmatter::nearest(other, &KEYS) {
                        Some(near) => format!("; did you mean `{near}`?"),
                        None => String::new(),
                    }
                ),
            )),
        }
    }
    problems
}

/// The JSON Schema of the `plan` section, for `docs/ralph.schema.json`.
pub fn json_schema() -> serde_json::Value {
    serde_json::json!({
        "description": "`ralph plan`'s settings. See docs/plan.md.",
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "description": "A file holding the planning prompt, used instead of the built-in one; `{{ plan.spec }}`, `{{ plan.tasks }}`, `{{ plan.format }}` and `{{ plan.errors }}` are filled in."}
        },
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(yaml: &str) -> Vec<String> {
        let value: Value = serde_norway::from_str(yaml).unwrap();
        check(&value).iter().map(|p| format!("{p:?}")).collect()
    }

    #[test]
    fn a_prompt_path_is_all_plan_takes() {
        assert!(problems("prompt: PLAN.md").is_empty());
        let bad = problems("prompt: 3\npromt: x");
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(
            bad[0].contains("expected a path to the planning prompt file, got 3"),
            "{bad:?}"
        );
        assert!(bad[1].contains("did you mean `prompt`?"), "{bad:?}");
        let value = serde_norway::from_str("prompt: P.md").unwrap();
        assert_eq!(
            PlanConfig::from_section(Some(&value)).prompt,
            Some(PathBuf::from("P.md"))
        );
    }
}
