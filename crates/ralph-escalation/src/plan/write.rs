//! A valid plan in the list's own text: a new list whole, or the new tasks added to an
//! existing one with every byte of it kept (before the insertion point and after it).

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::PlannedTask;

/// A story object of prd.json for `task`, at `priority`, not passed.
pub fn story(task: &PlannedTask, priority: f64) -> Value {
    let mut object = Map::new();
    object.insert("id".into(), json!(task.id));
    object.insert("title".into(), json!(task.title));
    if !task.description.is_empty() {
        object.insert("description".into(), json!(task.description));
    }
    object.insert("acceptanceCriteria".into(), json!(task.acceptance_criteria));
    object.insert("priority".into(), priority_value(priority));
    object.insert("passes".into(), json!(false));
    if !task.depends_on.is_empty() {
        object.insert("dependsOn".into(), json!(task.depends_on));
    }
    Value::Object(object)
}

/// A whole number as one (`3`, not `3.0`).
#[allow(clippy::cast_possible_truncation)]
fn priority_value(priority: f64) -> Value {
    match priority.fract() == 0.0 && priority.abs() < 9e15 {
        true => json!(priority as i64),
        false => json!(priority),
    }
}

/// A new prd.json holding `tasks`, priorities 1, 2, ... in the plan's order.
pub fn prd_new(tasks: &[PlannedTask]) -> String {
    let stories: Vec<Value> = tasks
        .iter()
        .zip(1..)
        .map(|(t, n)| story(t, f64::from(n)))
        .collect();
    let mut text =
        serde_json::to_string_pretty(&json!({ "userStories": stories })).unwrap_or_default();
    text.push('\n');
    text
}

/// `text`, a prd.json, with `tasks` added at the end of `userStories` after the highest
/// priority there is, in the file's indentation and line ending; every other byte kept.
/// `None` when the file's stories cannot be found.
pub fn prd_append(text: &str, tasks: &[PlannedTask]) -> Option<String> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let highest = ralph_tasks::Prd::parse("prd.json".as_ref(), body)
        .ok()?
        .stories()
        .iter()
        .map(|s| s.priority)
        .fold(0.0_f64, f64::max);
    prd_insert(text, None, tasks, |n| highest + f64::from(n))
}

/// `text`, a prd.json, with `tasks` inserted into `userStories` right after story `after` (at
/// the end without one), the `n`th (from 1) at `priority(n)`; every other byte kept. `None`
/// when the stories, or `after`, cannot be found.
pub(crate) fn prd_insert(
    text: &str,
    after: Option<&str>,
    tasks: &[PlannedTask],
    priority: impl Fn(u32) -> f64,
) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(borrow, rename = "userStories")]
        user_stories: &'a RawValue,
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let skip = text.len() - body.len();
    let top: Top<'_> = serde_json::from_str(body).ok()?;
    let list = top.user_stories.get();
    let list_start = skip + (list.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    if text.get(list_start..list_start + list.len()) != Some(list) {
        return None;
    }
    let items: Vec<&RawValue> = serde_json::from_str(list).ok()?;
    let at_of =
        |raw: &RawValue| list_start + (raw.get().as_ptr() as usize - list.as_ptr() as usize);
    let eol = match text.find('\n') {
        Some(i) if text[..i].ends_with('\r') => "\r\n",
        _ => "\n",
    };
    let line_indent = |at: usize| {
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line = &text[start..at];
        line[..line.len() - line.trim_start().len()].to_owned()
    };
    let after_item = match after {
        Some(id) => Some(*items.iter().find(|raw| {
            serde_json::from_str::<BTreeMap<String, Value>>(raw.get())
                .is_ok_and(|f| f.get("id").and_then(Value::as_str) == Some(id))
        })?),
        None => items.last().copied(),
    };
    // The stories' own indentation, or the list's line's one level deeper.
    let (indent, at) = match after_item {
        Some(item) => (line_indent(at_of(items[0])), at_of(item) + item.get().len()),
        None => (format!("{}  ", line_indent(list_start)), list_start + 1),
    };
    // One level: what the stories are indented past the list's line.
    let outer = line_indent(list_start);
    let unit = indent
        .strip_prefix(outer.as_str())
        .filter(|unit| !unit.is_empty())
        .unwrap_or("  ")
        .to_owned();
    let mut added = String::new();
    for (n, task) in (1..).zip(tasks) {
        let pretty = pretty(&story(task, priority(n)), &unit)?;
        // JSON escapes a line break inside a string: each one here ends a line.
        let pretty = pretty.replace('\n', &format!("{eol}{indent}"));
        let separator = match (n, items.is_empty()) {
            (1, true) => "",
            _ => ",",
        };
        added.push_str(&format!("{separator}{eol}{indent}{pretty}"));
    }
    if items.is_empty() && !text[at..].starts_with(['\n', '\r']) {
        added.push_str(eol);
        added.push_str(&line_indent(list_start));
    }
    let mut out = String::with_capacity(text.len() + added.len());
    out.push_str(&text[..at]);
    out.push_str(&added);
    out.push_str(&text[at..]);
    Some(out)
}

/// `value` pretty-printed with `unit` as one level of indentation.
fn pretty(value: &Value, unit: &str) -> Option<String> {
    use serde::Serialize as _;
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer).ok()?;
    String::from_utf8(out).ok()
}

/// One checklist item for `task`: its description and criteria indented under it.
fn item(task: &PlannedTask, eol: &str) -> String {
    let mut out = format!("- [ ] {}{eol}", task.title);
    for line in task.description.lines().filter(|l| !l.trim().is_empty()) {
        out.push_str(&format!("  {}{eol}", line.trim()));
    }
    for criterion in &task.acceptance_criteria {
        out.push_str(&format!("  - {criterion}{eol}"));
    }
    out
}

/// A new checklist holding `tasks`.
pub fn markdown_new(tasks: &[PlannedTask]) -> String {
    let mut out = "# Tasks\n\n".to_owned();
    for task in tasks {
        out.push_str(&item(task, "\n"));
    }
    out
}

/// `text`, a checklist, with `tasks` added at its end after a blank line, in its line ending;
/// every byte of it kept.
pub fn markdown_append(text: &str, tasks: &[PlannedTask]) -> String {
    let eol = match text.find('\n') {
        Some(i) if text[..i].ends_with('\r') => "\r\n",
        _ => "\n",
    };
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(eol);
    }
    if !out.is_empty() && !out.ends_with(&format!("{eol}{eol}")) {
        out.push_str(eol);
    }
    for task in tasks {
        out.push_str(&item(task, eol));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_tasks::Prd;

    fn task(id: &str, deps: &[&str]) -> PlannedTask {
        let mut t = PlannedTask::new(id, format!("Do {id}"));
        t.acceptance_criteria = vec!["it works".to_owned()];
        t.depends_on = deps.iter().map(|d| (*d).to_owned()).collect();
        t
    }

    #[test]
    fn stories_are_added_after_the_last_with_every_byte_kept() {
        let text = "{\r\n\t\"project\": \"x\",\r\n\t\"userStories\": [\r\n\t\t{\"id\": \"US-001\", \
                    \"priority\": 7, \"passes\": true}   \r\n\t],\r\n\t\"z\": 1\r\n}";
        let out = prd_append(text, &[task("US-002", &["US-001"])]).unwrap();
        let at = text.find("true}").unwrap() + "true}".len();
        assert_eq!(&out[..at], &text[..at]);
        assert!(out.ends_with(&text[at..]), "{out}");
        let prd = Prd::parse("prd.json".as_ref(), &out).unwrap();
        assert_eq!(prd.stories().len(), 2);
        assert_eq!(prd.stories()[1].priority, 8.0);
        assert!(
            out.contains(",\r\n\t\t{\r\n\t\t\t\"id\": \"US-002\""),
            "{out}"
        );
    }

    #[test]
    fn an_empty_list_gets_its_first_stories() {
        for text in ["{\"userStories\": []}", "{\n  \"userStories\": [\n  ]\n}\n"] {
            let out = prd_append(text, &[task("A", &[]), task("B", &["A"])]).unwrap();
            let prd = Prd::parse("prd.json".as_ref(), &out).unwrap();
            let ids: Vec<&str> = prd.stories().iter().map(|s| s.id.as_str()).collect();
            assert_eq!(ids, ["A", "B"], "{out}");
        }
    }

    #[test]
    fn a_checklist_keeps_its_bytes_and_gets_the_items_after_a_blank_line() {
        let text = "# Mine\n\n- [x] Old one";
        let out = markdown_append(text, &[task("x", &[])]);
        assert_eq!(out, "# Mine\n\n- [x] Old one\n\n- [ ] Do x\n  - it works\n");
        let items = ralph_tasks::markdown::items(&out);
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].title, "Do x");
    }
}
