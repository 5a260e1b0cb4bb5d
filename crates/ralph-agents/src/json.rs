//! Reading JSON Lines leniently: what the JSON adapters share.
//!
//! Agents' JSON changes between versions; a field of an unexpected type (a count written as a
//! string, a number with a fraction) is read as well as it can be or dropped, and never makes
//! an event unreadable: a final answer skipped for its statistics would lose its markers.

use serde_json::Value;

use super::{AdapterOutput, Usage};
use crate::Stream;

/// Lines that were not JSON, for one warning at the first and a summary at the end.
#[derive(Debug, Default)]
pub(crate) struct NotJson(u64);

impl NotJson {
    /// Warns once more when more than one line was not JSON.
    pub(crate) fn summarise(&self, format: &str, out: &mut dyn AdapterOutput) {
        if self.0 > 1 {
            out.warn(format!(
                "{} lines of the agent's output were not {format}",
                self.0
            ));
        }
    }
}

/// One line as a JSON object. A line that is not JSON (a warning the CLI printed before its
/// JSON, say) is shown as text, never fatal; JSON that is not an object is skipped.
pub(crate) fn object(
    line: &[u8],
    format: &str,
    not_json: &mut NotJson,
    out: &mut dyn AdapterOutput,
) -> Option<serde_json::Map<String, Value>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => None,
        Err(err) => {
            not_json.0 += 1;
            if not_json.0 == 1 {
                out.warn(format!(
                    "the agent printed a line that is not {format} ({err}); shown as text"
                ));
            }
            out.show(Stream::Stdout, line);
            out.show(Stream::Stdout, b"\n");
            None
        }
    }
}

/// `v` as a string, if it is one.
pub(crate) fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// `v` as a count: a whole number, a number with a fraction (rounded) or either written as a
/// string; `None` for anything else, negative numbers included.
pub(crate) fn count(v: Option<&Value>) -> Option<u64> {
    let n = match v? {
        Value::Number(n) => match n.as_u64() {
            Some(n) => return Some(n),
            None => n.as_f64()?,
        },
        Value::String(s) => match s.trim().parse::<u64>() {
            Ok(n) => return Some(n),
            Err(_) => s.trim().parse().ok()?,
        },
        _ => return None,
    };
    // `as` saturates; the bound keeps a float past u64 out rather than pinned at the top.
    (n.is_finite() && n >= 0.0 && n < u64::MAX as f64).then(|| n.round() as u64)
}

/// `v` as an amount (a number, or one written as a string).
pub(crate) fn amount(v: Option<&Value>) -> Option<f64> {
    let n = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    n.is_finite().then_some(n)
}

/// Adds `b` to `a`, when `b` is known.
pub(crate) fn add(a: &mut Option<u64>, b: Option<u64>) {
    if let Some(b) = b {
        *a = Some(a.unwrap_or(0).saturating_add(b));
    }
}

/// Adds input token counts as an agent splits them (fresh, read from the prompt cache,
/// written to it) to `usage`, whose input counts all three and whose cached input the reads.
pub(crate) fn add_input(
    usage: &mut Usage,
    fresh: Option<u64>,
    cache_read: Option<u64>,
    cache_written: Option<u64>,
) {
    for n in [fresh, cache_read, cache_written] {
        add(&mut usage.input_tokens, n);
    }
    add(&mut usage.cached_input_tokens, cache_read);
}

/// The argument that says what a tool call is about, from its input object.
pub(crate) fn main_argument(input: Option<&Value>) -> Option<&str> {
    let input = input?.as_object()?;
    [
        "command",
        "cmd",
        "file_path",
        "filePath",
        "absolute_path",
        "notebook_path",
        "pattern",
        "url",
        "query",
        "path",
        "dir_path",
        "description",
    ]
    .iter()
    .find_map(|key| match input.get(*key)? {
        Value::String(s) => Some(s.as_str()),
        // A command given as a list of words (Codex, some MCP tools): its last word is the
        // script, which says the most.
        Value::Array(words) => words.last().and_then(Value::as_str),
        _ => None,
    })
}

/// A message from an error that may be a string or an object with a `message` (maybe nested
/// in `data`, as opencode writes it).
pub(crate) fn error_message(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => text(map.get("message"))
            .or_else(|| text(map.get("data").and_then(|d| d.get("message"))))
            .map(str::to_owned)
            .or_else(|| text(map.get("name")).map(str::to_owned)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn counts_and_amounts_are_read_leniently() {
        assert_eq!(count(Some(&json!(3))), Some(3));
        assert_eq!(count(Some(&json!("12"))), Some(12));
        assert_eq!(count(Some(&json!(2.6))), Some(3));
        assert_eq!(count(Some(&json!(-1))), None);
        assert_eq!(count(Some(&json!([1]))), None);
        assert_eq!(amount(Some(&json!("0.25"))), Some(0.25));
        assert_eq!(amount(Some(&json!(null))), None);
        assert_eq!(
            main_argument(Some(&json!({"command": ["bash", "-lc", "cargo test"]}))),
            Some("cargo test")
        );
        assert_eq!(
            error_message(Some(
                &json!({"name": "APIError", "data": {"message": "overloaded"}})
            )),
            Some("overloaded".to_owned())
        );
    }
}
