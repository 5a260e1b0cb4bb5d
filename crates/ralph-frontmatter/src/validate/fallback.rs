//! `fallback` and `fallback_after`: the agents that run while the agent is rate-limited.

use std::time::Duration;

use serde_norway::{Mapping, Value};

use super::{Checker, agent, present};
use crate::AgentLine;
use crate::locate::FieldPath;
use crate::schema::{self, FIELDS};

/// The fallback agents and `fallback_after`; `None` when either has an error. `primary` is the
/// `agent` line, when it is valid: a fallback that repeats it would meet the same limit.
pub(super) fn fallback(
    checker: &mut Checker<'_>,
    top: &FieldPath,
    root: &Mapping,
    primary: Option<&String>,
) -> Option<(Vec<AgentLine>, Duration)> {
    let after_path = top.key("fallback_after");
    let after = match present(root, "fallback_after") {
        Some(value) => checker.duration(&after_path, value, false),
        None => Some(schema::default_duration(FIELDS, "fallback_after")),
    };
    let path = top.key("fallback");
    let lines = match present(root, "fallback") {
        Some(value) => lines(checker, &path, value, primary),
        None => Some(Vec::new()),
    };
    if present(root, "fallback").is_none() && present(root, "fallback_after").is_some() {
        checker.key_warning(
            &after_path,
            "has no effect without `fallback`: no other agent runs while the agent is \
             rate-limited"
                .to_owned(),
        );
    }
    Some((lines?, after?))
}

fn lines(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
    primary: Option<&String>,
) -> Option<Vec<AgentLine>> {
    let items = match value {
        Value::Sequence(items) if !items.is_empty() => items,
        Value::Sequence(_) => {
            checker.value_error(
                path,
                "an empty list runs no other agent; list agent command lines, such as \
                 [\"codex exec --json\"], or remove `fallback`"
                    .to_owned(),
            );
            return None;
        }
        Value::String(text) => {
            let got = checker.describe(path, value);
            checker.value_error(
                path,
                format!("expected a list of agent command lines, got {got}; write `fallback: [{text:?}]`"),
            );
            return None;
        }
        _ => {
            checker.expected(path, value, "a list of agent command lines");
            return None;
        }
    };
    let mut found: Vec<AgentLine> = Vec::new();
    let mut ok = true;
    for (index, item) in items.iter().enumerate() {
        let at = path.index(index);
        let Some((line, argv)) = agent(checker, &at, item) else {
            ok = false;
            continue;
        };
        let repeated = if primary == Some(&line) {
            Some("`agent`".to_owned())
        } else {
            found
                .iter()
                .position(|f| f.line == line)
                .map(|i| format!("fallback[{i}]"))
        };
        if let Some(other) = repeated {
            checker.value_error(
                &at,
                format!("{line:?} is the command line of {other} already: each agent once"),
            );
            ok = false;
            continue;
        }
        found.push(AgentLine { line, argv });
    }
    ok.then_some(found)
}
