//! The RALPH.md `tasks:` section: where story mode's tasks live. Checked by the parser through
//! the plug vocabulary ([`check`]), read into a [`TasksConfig`] by whoever builds the list.

use std::path::PathBuf;

use ralph_frontmatter::SectionProblem;
use serde_json::Value;

/// The kinds of list `tasks:` takes, one key each.
pub const TASK_SOURCES: &[&str] = &["markdown", "prd", "github", "gitlab", "linear"];

/// The sources that take `label`: issues of a forge or a tracker.
const LABEL_SOURCES: &[&str] = &["github", "gitlab", "linear"];

/// The sources that take `close`: a forge's issues, which can be closed (a Linear issue moves
/// to its team's done state instead).
const CLOSE_SOURCES: &[&str] = &["github", "gitlab"];

/// Every key `tasks` takes.
const ALL_KEYS: [&str; 7] = [
    "markdown", "prd", "github", "gitlab", "linear", "label", "close",
];

/// Where the tasks live, as `tasks:` says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TasksConfig {
    /// A Markdown checklist: `tasks: {markdown: TODO.md}`.
    Markdown(PathBuf),
    /// A prd.json: `tasks: {prd: prd.json}`, the same as `escalation.prd`.
    Prd(PathBuf),
    /// Open issues of a GitHub repository: `tasks: {github: owner/repo, label: ralph}`.
    Github {
        /// `owner/repo`.
        repo: String,
        /// Only issues with this label.
        label: Option<String>,
        /// Close an issue when its task passes (`false`: label it `ralph:done`).
        close: bool,
    },
    /// Open issues of a GitLab project: `tasks: {gitlab: group/project, label: ralph}`.
    Gitlab {
        /// `group/project` (or `group/subgroup/project`).
        project: String,
        /// Only issues with this label.
        label: Option<String>,
        /// Close an issue when its task passes (`false`: label it `ralph:done`).
        close: bool,
    },
    /// Unstarted issues of a Linear team: `tasks: {linear: ENG, label: ralph}`.
    Linear {
        /// The team's key (`ENG`).
        team: String,
        /// Only issues with this label.
        label: Option<String>,
    },
}

impl TasksConfig {
    /// The `tasks` section as written, `None` when it does not pass [`check`].
    pub fn from_section(value: &Value) -> Option<Self> {
        if !check(value).is_empty() {
            return None;
        }
        let map = value.as_object()?;
        let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
        if let Some(path) = text("markdown") {
            return Some(Self::Markdown(PathBuf::from(path)));
        }
        if let Some(path) = text("prd") {
            return Some(Self::Prd(PathBuf::from(path)));
        }
        let label = text("label");
        let close = map.get("close").and_then(Value::as_bool).unwrap_or(true);
        if let Some(project) = text("gitlab") {
            return Some(Self::Gitlab {
                project,
                label,
                close,
            });
        }
        if let Some(team) = text("linear") {
            return Some(Self::Linear { team, label });
        }
        Some(Self::Github {
            repo: text("github")?,
            label,
            close,
        })
    }

    /// The key that names the source (`markdown`, `prd`, `github`, `gitlab`, `linear`).
    pub fn key(&self) -> &'static str {
        match self {
            Self::Markdown(_) => "markdown",
            Self::Prd(_) => "prd",
            Self::Github { .. } => "github",
            Self::Gitlab { .. } => "gitlab",
            Self::Linear { .. } => "linear",
        }
    }
}

/// The `tasks` section's problems: exactly one source key, a non-empty path or `owner/repo`,
/// `group/project`, `label`/`close` only with `github` or `gitlab`, nothing else.
pub fn check(value: &Value) -> Vec<SectionProblem> {
    let Some(map) = value.as_object() else {
        return vec![SectionProblem::at_value(
            "",
            format!(
                "expected a mapping with one of {}, such as `tasks: {{markdown: TODO.md}}`, got {}",
                one_of(TASK_SOURCES),
                describe(value)
            ),
        )];
    };
    let mut problems = Vec::new();
    let mut sources = Vec::new();
    for (key, item) in map {
        let key = key.as_str();
        match key {
            "markdown" | "prd" => {
                sources.push(key);
                if item.as_str().is_none_or(|s| s.trim().is_empty()) {
                    problems.push(SectionProblem::at_value(
                        key,
                        format!("expected a path to a file, got {}", describe(item)),
                    ));
                }
            }
            "github" => {
                sources.push(key);
                if !item.as_str().is_some_and(is_owner_repo) {
                    problems.push(SectionProblem::at_value(
                        key,
                        format!(
                            "expected a repository as `owner/repo`, got {}",
                            describe(item)
                        ),
                    ));
                }
            }
            "linear" => {
                sources.push(key);
                if !item.as_str().is_some_and(is_team_key) {
                    problems.push(SectionProblem::at_value(
                        key,
                        format!(
                            "expected a Linear team's key, such as `ENG` (letters and digits), \
                             got {}",
                            describe(item)
                        ),
                    ));
                }
            }
            "gitlab" => {
                sources.push(key);
                if !item.as_str().is_some_and(is_group_project) {
                    problems.push(SectionProblem::at_value(
                        key,
                        format!(
                            "expected a project as `group/project` (or \
                             `group/subgroup/project`), got {}",
                            describe(item)
                        ),
                    ));
                }
            }
            "label" if item.as_str().is_none_or(|s| s.trim().is_empty()) => {
                problems.push(SectionProblem::at_value(
                    key,
                    format!("expected a label name, got {}", describe(item)),
                ));
            }
            "close" if item.as_bool().is_none() => problems.push(SectionProblem::at_value(
                key,
                format!("expected true or false, got {}", describe(item)),
            )),
            "label" | "close" => {}
            other => problems.push(SectionProblem::at_key(
                other,
                format!(
                    "unknown key `{other}`; `tasks` takes one of {}{}",
                    one_of(TASK_SOURCES),
                    match ralph_frontmatter::nearest(other, &ALL_KEYS) {
                        Some(near) => format!("; did you mean `{near}`?"),
                        None => " (and `label` with `github`, `gitlab` or `linear`, `close` \
                                 with `github` or `gitlab`)"
                            .to_owned(),
                    }
                ),
            )),
        }
    }
    match sources.as_slice() {
        [] => problems.push(SectionProblem::at_value(
            "",
            format!(
                "names no task source; expected one of {}",
                one_of(TASK_SOURCES)
            ),
        )),
        [_] => {}
        [first, rest @ ..] => {
            for second in rest {
                problems.push(SectionProblem::at_key(
                    *second,
                    format!("`{first}` is already the task source; `tasks` takes one source"),
                ));
            }
        }
    }
    if !sources.iter().any(|s| LABEL_SOURCES.contains(s)) && map.contains_key("label") {
        problems.push(SectionProblem::at_key(
            "label",
            "`label` is a setting of `github`, `gitlab` and `linear` tasks only".to_owned(),
        ));
    }
    if !sources.iter().any(|s| CLOSE_SOURCES.contains(s)) && map.contains_key("close") {
        let words = match sources.contains(&"linear") {
            // A passed Linear issue always moves to the team's done state.
            true => {
                "`close` is a setting of `github` and `gitlab` tasks only; a passed Linear \
                 issue moves to the team's first completed state"
            }
            false => "`close` is a setting of `github` and `gitlab` tasks only",
        };
        problems.push(SectionProblem::at_key("close", words.to_owned()));
    }
    problems
}

/// The JSON Schema of the `tasks` section, for `docs/ralph.schema.json`.
pub fn json_schema() -> serde_json::Value {
    serde_json::json!({
        "description": "Where story mode's tasks live: one of `markdown` (a checklist), `prd` \
                        (a prd.json, the same as escalation.prd), `github` or `gitlab` (open \
                        issues) or `linear` (a Linear team's unstarted issues). \
                        See docs/tasks.md.",
        "type": "object",
        "properties": {
            "markdown": {"type": "string", "minLength": 1, "description": "A Markdown checklist: every `- [ ]` line is a task."},
            "prd": {"type": "string", "minLength": 1, "description": "A prd.json; the same as escalation.prd."},
            "github": {"type": "string", "pattern": "^[^/\\s]+/[^/\\s]+$", "description": "Open issues of this repository, `owner/repo`."},
            "gitlab": {"type": "string", "pattern": "^[^/\\s]+(/[^/\\s]+)+$", "description": "Open issues of this GitLab project, `group/project` (or `group/subgroup/project`)."},
            "linear": {"type": "string", "pattern": "^[A-Za-z0-9]+$", "description": "Unstarted issues of the Linear team with this key (ENG); LINEAR_API_KEY must be set."},
            "label": {"type": "string", "minLength": 1, "description": "github, gitlab, linear: only issues with this label."},
            "close": {"type": "boolean", "default": true, "description": "github, gitlab: close an issue when its task passes (false: label it ralph:done)."}
        },
        "additionalProperties": false,
        "oneOf": [
            {"required": ["markdown"], "not": {"anyOf": [{"required": ["prd"]}, {"required": ["github"]}, {"required": ["gitlab"]}, {"required": ["linear"]}, {"required": ["label"]}, {"required": ["close"]}]}},
            {"required": ["prd"], "not": {"anyOf": [{"required": ["markdown"]}, {"required": ["github"]}, {"required": ["gitlab"]}, {"required": ["linear"]}, {"required": ["label"]}, {"required": ["close"]}]}},
            {"required": ["github"], "not": {"anyOf": [{"required": ["markdown"]}, {"required": ["prd"]}, {"required": ["gitlab"]}, {"required": ["linear"]}]}},
            {"required": ["gitlab"], "not": {"anyOf": [{"required": ["markdown"]}, {"required": ["prd"]}, {"required": ["github"]}, {"required": ["linear"]}]}},
            {"required": ["linear"], "not": {"anyOf": [{"required": ["markdown"]}, {"required": ["prd"]}, {"required": ["github"]}, {"required": ["gitlab"]}, {"required": ["close"]}]}}
        ]
    })
}

fn is_owner_repo(text: &str) -> bool {
    let mut parts = text.split('/');
    let ok = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && !p.contains(char::is_whitespace));
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// A Linear team key: letters and digits, as Linear allows them.
fn is_team_key(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric())
}

/// GitLab's project path: a namespace of one or more groups, then the project.
fn is_group_project(text: &str) -> bool {
    let parts: Vec<&str> = text.split('/').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && !p.contains(char::is_whitespace))
}

fn one_of(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A section's value as a message names it: a string quoted, a number or boolean as written,
/// a collection by its kind. Plug sections' checks share it.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "nothing".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a mapping".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(yaml: &str) -> Vec<String> {
        let value: Value = serde_norway::from_str(yaml).unwrap();
        check(&value)
            .into_iter()
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect()
    }

    #[test]
    fn each_source_parses() {
        let value: Value = serde_norway::from_str("markdown: TODO.md").unwrap();
        assert_eq!(
            TasksConfig::from_section(&value),
            Some(TasksConfig::Markdown("TODO.md".into()))
        );
        let value: Value =
            serde_norway::from_str("github: a/b\nlabel: ralph\nclose: false").unwrap();
        assert_eq!(
            TasksConfig::from_section(&value),
            Some(TasksConfig::Github {
                repo: "a/b".into(),
                label: Some("ralph".into()),
                close: false
            })
        );
    }

    #[test]
    fn wrong_sections_say_what_is_allowed() {
        assert_eq!(
            problems("markdown: TODO.md\nprd: prd.json"),
            ["prd: `markdown` is already the task source; `tasks` takes one source"]
        );
        assert_eq!(
            problems("github: nope"),
            ["github: expected a repository as `owner/repo`, got \"nope\""]
        );
        assert_eq!(
            problems("markdown: TODO.md\nlabel: x"),
            ["label: `label` is a setting of `github`, `gitlab` and `linear` tasks only"]
        );
        assert_eq!(
            problems("markdwn: TODO.md"),
            [
                "markdwn: unknown key `markdwn`; `tasks` takes one of `markdown`, `prd`, \
                 `github`, `gitlab`, `linear`; did you mean `markdown`?",
                ": names no task source; expected one of `markdown`, `prd`, `github`, `gitlab`, \
                 `linear`"
            ]
        );
        assert_eq!(
            problems("TODO.md"),
            [
                ": expected a mapping with one of `markdown`, `prd`, `github`, `gitlab`, `linear`, \
                 such as \
              `tasks: {markdown: TODO.md}`, got \"TODO.md\""
            ]
        );
        assert_eq!(
            problems("github: a/b\nclose: yes please"),
            ["close: expected true or false, got \"yes please\""]
        );
    }

    #[test]
    fn gitlab_takes_a_project_path_with_label_and_close_as_github_does() {
        let value: Value =
            serde_norway::from_str("gitlab: acme/tools/widgets\nlabel: ralph\nclose: false")
                .unwrap();
        let config = TasksConfig::from_section(&value).unwrap();
        assert_eq!(
            config,
            TasksConfig::Gitlab {
                project: "acme/tools/widgets".into(),
                label: Some("ralph".into()),
                close: false
            }
        );
        assert_eq!(config.key(), "gitlab");
        assert_eq!(
            problems("gitlab: widgets"),
            [
                "gitlab: expected a project as `group/project` (or `group/subgroup/project`), \
                 got \"widgets\""
            ]
        );
        assert_eq!(
            problems("gitlab: a/b\nclose: yes please"),
            ["close: expected true or false, got \"yes please\""]
        );
        assert_eq!(
            problems("gitlab: a/b\ngithub: a/b"),
            ["github: `gitlab` is already the task source; `tasks` takes one source"]
        );
        assert_eq!(
            problems("gitlab: a/b\nlabel: \"\""),
            ["label: expected a label name, got \"\""]
        );
    }

    #[test]
    fn a_linear_team_with_a_label_parses() {
        let value: Value = serde_norway::from_str("linear: ENG\nlabel: ralph").unwrap();
        assert_eq!(
            TasksConfig::from_section(&value),
            Some(TasksConfig::Linear {
                team: "ENG".into(),
                label: Some("ralph".into()),
            })
        );
        assert_eq!(TasksConfig::from_section(&value).unwrap().key(), "linear");
    }

    #[test]
    fn a_wrong_linear_section_says_what_is_allowed() {
        assert_eq!(
            problems("linear: acme/eng"),
            [
                "linear: expected a Linear team's key, such as `ENG` (letters and digits), got \
                 \"acme/eng\""
            ]
        );
        assert_eq!(
            problems("linear: 12.5"),
            ["linear: expected a Linear team's key, such as `ENG` (letters and digits), got 12.5"]
        );
        assert_eq!(
            problems("linear: ENG\nclose: false"),
            [
                "close: `close` is a setting of `github` and `gitlab` tasks only; a passed Linear \
                 issue moves to the team's first completed state"
            ]
        );
        assert_eq!(
            problems("linear: ENG\ngithub: a/b"),
            ["github: `linear` is already the task source; `tasks` takes one source"]
        );
        assert_eq!(
            problems("linear: ENG\nlabel: ''"),
            ["label: expected a label name, got \"\""]
        );
        assert_eq!(
            problems("linaer: ENG"),
            [
                "linaer: unknown key `linaer`; `tasks` takes one of `markdown`, `prd`, \
                 `github`, `gitlab`, `linear`; did you mean `linear`?",
                ": names no task source; expected one of `markdown`, `prd`, `github`, `gitlab`, \
                 `linear`"
            ]
        );
    }
}
