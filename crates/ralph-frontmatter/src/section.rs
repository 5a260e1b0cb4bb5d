//! A plug's section as the plug reads it: JSON (`serde_json::Value`), so that the plug API
//! names no YAML crate. The file is read as YAML, and a section is converted once, before its
//! plug's check sees it; what JSON cannot hold is an error located like any other.

use serde_json::{Map, Number, Value as Json};
use serde_norway::Value;

use crate::vocabulary::SectionProblem;

/// What a section may hold, for the error messages.
const ALLOWED: &str = "a plug's section holds JSON values: strings, finite numbers, true/false, \
                       null, lists, and mappings with string keys";

/// `value`, a section as written, as JSON; `Err` with every part JSON cannot hold (a key that
/// is not a string, a YAML tag, a non-finite float), each at its field inside the section.
pub(crate) fn to_json(value: &Value) -> Result<Json, Vec<SectionProblem>> {
    let mut problems = Vec::new();
    let json = convert(value, "", &mut problems);
    match problems.is_empty() {
        true => Ok(json),
        false => Err(problems),
    }
}

fn convert(value: &Value, field: &str, problems: &mut Vec<SectionProblem>) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Number(n) => {
            let json = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => Some(Number::from(u)),
                (None, Some(i), _) => Some(Number::from(i)),
                (None, None, Some(f)) => Number::from_f64(f),
                (None, None, None) => None,
            };
            json.map(Json::Number).unwrap_or_else(|| {
                let message = format!("expected a finite number, got {n}; {ALLOWED}");
                problems.push(SectionProblem::at_value(field, message));
                Json::Null
            })
        }
        Value::String(text) => Json::String(text.clone()),
        Value::Sequence(items) => Json::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| convert(item, &format!("{field}[{i}]"), problems))
                .collect(),
        ),
        Value::Mapping(mapping) => {
            let mut object = Map::new();
            for (key, item) in mapping {
                match key {
                    Value::String(key) => {
                        let json = convert(item, &inner(field, key), problems);
                        object.insert(key.clone(), json);
                    }
                    key => problems.push(key_problem(field, key)),
                }
            }
            Json::Object(object)
        }
        Value::Tagged(tagged) => {
            let message = format!(
                "expected a value without a YAML tag, got one tagged `{}`; {ALLOWED}: remove the \
                 tag",
                tagged.tag
            );
            problems.push(SectionProblem::at_value(field, message));
            Json::Null
        }
    }
}

/// The field `key` of the mapping at `field`.
fn inner(field: &str, key: &str) -> String {
    match field {
        "" => key.to_owned(),
        _ => format!("{field}.{key}"),
    }
}

/// The problem with `key`, a mapping key that is not a string, located at the key itself when
/// it is a scalar (as written: `1`, `true`, `null`), else at its mapping.
fn key_problem(field: &str, key: &Value) -> SectionProblem {
    let scalar = match key {
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".to_owned()),
        _ => None,
    };
    match scalar {
        Some(written) => SectionProblem::at_key(
            inner(field, &written),
            format!(
                "expected a string key, got {written}; {ALLOWED}: write the key in quotes \
                 (\"{written}\")"
            ),
        ),
        None => {
            let kind = match key {
                Value::Sequence(_) => "a list",
                Value::Mapping(_) => "a mapping",
                _ => "a tagged value",
            };
            SectionProblem::at_value(
                field,
                format!("expected string keys, got {kind} as a key; {ALLOWED}"),
            )
        }
    }
}
