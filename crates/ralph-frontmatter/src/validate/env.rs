//! The `env` block: which withheld variables the child processes get all the same.

use serde_norway::Value;

use super::{Checker, block, keys, present};
use crate::EnvConfig;
use crate::locate::FieldPath;
use crate::schema::WITHHELD_VARIABLES;

/// The `env` block; absent, nothing withheld is passed on.
pub(super) fn env(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: Option<&Value>,
) -> Option<EnvConfig> {
    let Some(value) = value else {
        return Some(EnvConfig::default());
    };
    let Some(mapping) = block(checker, path, value, &keys("env"))? else {
        return Some(EnvConfig::default());
    };
    let Some(list) = present(mapping, "pass") else {
        return Some(EnvConfig::default());
    };
    let path = path.key("pass");
    let Value::Sequence(items) = list else {
        checker.expected(
            &path,
            list,
            &format!(
                "a list of variable names, such as [{}]",
                WITHHELD_VARIABLES[0]
            ),
        );
        return None;
    };
    let mut pass = Vec::new();
    let mut ok = true;
    for (index, item) in items.iter().enumerate() {
        let at = path.index(index);
        let name = match item {
            Value::String(name) => name,
            _ => {
                checker.expected(&at, item, "a variable name");
                ok = false;
                continue;
            }
        };
        if !WITHHELD_VARIABLES.contains(&name.as_str()) {
            let got = checker.describe(&at, item);
            checker.value_error(
                &at,
                format!(
                    "expected one of {}, got {got}: only these are withheld from the agent, \
                     commands and checks; every other variable reaches them anyway",
                    WITHHELD_VARIABLES.join(", ")
                ),
            );
            ok = false;
        } else if pass.contains(name) {
            checker.value_error(&at, format!("{name} is listed twice"));
            ok = false;
        } else {
            pass.push(name.clone());
        }
    }
    ok.then_some(EnvConfig { pass })
}

#[cfg(test)]
mod tests {
    fn parse(env: &str) -> Result<crate::EnvConfig, String> {
        crate::parse("RALPH.md", &format!("---\nagent: x\n{env}---\n"))
            .map(|parsed| parsed.file.config.env)
            .map_err(|err| {
                let lines: Vec<String> = err.errors.iter().map(ToString::to_string).collect();
                lines.join("\n")
            })
    }

    #[test]
    fn tokens_are_passed_on_by_name_only() {
        assert!(parse("").unwrap().pass.is_empty());
        assert!(parse("env:\n").unwrap().pass.is_empty());
        let env = parse("env:\n  pass: [GH_TOKEN]\n").unwrap();
        assert_eq!(env.pass, ["GH_TOKEN"]);
        let none = |_: &str| None;
        assert_eq!(
            env.withheld(none),
            ["GITHUB_TOKEN", "GITLAB_TOKEN", "LINEAR_API_KEY"]
        );
        let with_user = |_: &str| Some("https://me:ghp_x@ghe.example/api/v3".to_owned());
        assert_eq!(
            env.withheld(with_user),
            [
                "GITHUB_TOKEN",
                "GITHUB_API_URL",
                "GITLAB_TOKEN",
                "GITLAB_API_URL",
                "LINEAR_API_KEY"
            ]
        );
        let plain = |_: &str| Some("https://ghe.example/api/v3?a=b@c".to_owned());
        assert_eq!(
            env.withheld(plain),
            ["GITHUB_TOKEN", "GITLAB_TOKEN", "LINEAR_API_KEY"]
        );
    }

    #[test]
    fn a_name_that_is_not_withheld_or_twice_is_refused_at_its_place() {
        let err = parse("env:\n  pass: [PATH]\n").unwrap_err();
        assert!(err.contains("RALPH.md:4:10: env.pass[0]"), "{err}");
        assert!(
            err.contains("GITHUB_TOKEN, GH_TOKEN, GITHUB_API_URL"),
            "{err}"
        );
        let err = parse("env:\n  pass: [GH_TOKEN, GH_TOKEN]\n").unwrap_err();
        assert!(err.contains("GH_TOKEN is listed twice"), "{err}");
        let err = parse("env:\n  pass: GH_TOKEN\n").unwrap_err();
        assert!(err.contains("expected a list of variable names"), "{err}");
        let err = parse("env:\n  keep: [GH_TOKEN]\n").unwrap_err();
        assert!(err.contains("unknown key"), "{err}");
    }
}
