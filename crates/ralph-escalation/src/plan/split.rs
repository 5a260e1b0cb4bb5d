//! `ralph plan --split ID`: a task that keeps failing, split into smaller ones. The prompt gets
//! the task, why it was blocked, the failing check's last output (its progress.txt entry) and
//! the saved attempts' diffstat; the smaller tasks take its place in prd.json: inserted after
//! it at its priority, every task that depended on it depending on them, and the task itself
//! kept, marked passed with a note naming them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use ralph_tasks::{Passes, Prd};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{PlanError, PlannedTask};

/// The note the split task gets, naming the tasks that took its place.
pub fn note(ids: &[String]) -> String {
    format!("ralph: split into {} (ralph plan --split)", ids.join(", "))
}

/// `{{ plan.spec }}` for splitting task `id` of `prd`: the story, its notes (the block reason),
/// the last progress.txt entry about it, and the diffstat of each saved attempt.
pub fn context(
    prd: &Prd,
    id: &str,
    progress: Option<&str>,
    attempts: &[(String, String)],
) -> String {
    let mut out = String::new();
    if let Some(story) = prd.story(id) {
        let _ = writeln!(
            out,
            "Task {id} of {}:\n\n```json\n{}\n```\n",
            prd.path().display(),
            story.json
        );
        let notes = serde_json::from_str::<Value>(&story.json)
            .ok()
            .and_then(|v| v.get("notes").and_then(Value::as_str).map(str::to_owned));
        if let Some(notes) = notes {
            let _ = writeln!(out, "## Why it was blocked\n\n{}\n", notes.trim());
        }
    }
    if let Some(entry) = progress.and_then(|text| last_entry(text, id)) {
        let _ = writeln!(
            out,
            "## The failing check's last output (progress.txt)\n\n```\n{}\n```\n",
            entry.trim_end()
        );
    }
    if !attempts.is_empty() {
        let _ = writeln!(out, "## The attempts saved (what each changed)\n");
        for (refname, stat) in attempts {
            let _ = writeln!(out, "{refname}:\n```\n{}\n```\n", stat.trim_end());
        }
    }
    out
}

/// The last progress.txt entry (`## <time> · <id> "<title>" · ...` to the next `## `) about
/// task `id`.
fn last_entry<'t>(text: &'t str, id: &str) -> Option<&'t str> {
    let titled = format!("{id} \"");
    let about = |header: &str| {
        header
            .split(" · ")
            .nth(1)
            .is_some_and(|what| what == id || what.starts_with(&titled))
    };
    let start = text
        .match_indices("## ")
        .filter(|(at, _)| *at == 0 || text[..*at].ends_with('\n'))
        .map(|(at, _)| at)
        .filter(|at| text[*at..].lines().next().is_some_and(about))
        .last()?;
    let rest = &text[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 4);
    Some(&rest[..end])
}

/// Replaces task `id` of the prd.json at `path` with `tasks` (see the [module](self)); with
/// `dry_run`, only checks that it can. Every byte of the file outside the split story's
/// `passes` and `notes`, the dependents' `dependsOn` and the inserted stories is kept.
pub fn replace(
    path: &Path,
    id: &str,
    tasks: &[PlannedTask],
    dry_run: bool,
) -> Result<(), PlanError> {
    let list_error = |message: String| PlanError::List {
        path: path.to_path_buf(),
        message,
    };
    let edit = |bytes: &[u8]| -> Result<Vec<u8>, PlanError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| list_error("not UTF-8 text; nothing is split".to_owned()))?;
        edited(path, text, id, tasks)
            .map(String::into_bytes)
            .ok_or_else(|| {
                list_error(format!(
                    "cannot split {id}: the list does not read back with the new tasks"
                ))
            })
    };
    if dry_run {
        let bytes = std::fs::read(path).map_err(|cause| PlanError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        return edit(&bytes).map(drop);
    }
    match ralph_atomic::update(path, |bytes| edit(bytes).map(Some)) {
        Ok(_) => Ok(()),
        Err(ralph_atomic::UpdateError::Edit(err)) => Err(err),
        Err(ralph_atomic::UpdateError::Io(cause)) => Err(PlanError::Write {
            path: path.to_path_buf(),
            cause,
        }),
        Err(_) => Err(list_error(
            "it kept changing while ralph split the task; nothing was changed".to_owned(),
        )),
    }
}

/// `text` with task `id` split into `tasks`, or `None` when it cannot be done exactly.
fn edited(path: &Path, text: &str, id: &str, tasks: &[PlannedTask]) -> Option<String> {
    let prd = Prd::parse(path, text).ok()?;
    let split = prd.story(id)?;
    let before = prd.stories().len();
    let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
    let inserted = super::write::prd_insert(text, Some(id), tasks, |_| split.priority)?;
    let rewired = rewire(&inserted, id, &ids)?;
    let mut prd = Prd::parse(path, &rewired).ok()?;
    let notes = match serde_json::from_str::<Value>(&prd.story(id)?.json)
        .ok()?
        .get("notes")
    {
        Some(Value::String(old)) if !old.trim().is_empty() => format!("{old}\n\n{}", note(&ids)),
        _ => note(&ids),
    };
    prd.set(id, Passes::Yes, Some(&notes)).ok()?;
    let out = prd.to_text();
    let check = Prd::parse(path, &out).ok()?;
    (check.stories().len() == before + tasks.len()).then_some(out)
}

/// `text` with every story's `dependsOn` naming `id` naming `ids` instead, in place.
fn rewire(text: &str, id: &str, ids: &[String]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(borrow, rename = "userStories")]
        user_stories: Vec<&'a RawValue>,
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let skip = text.len() - body.len();
    let top: Top<'_> = serde_json::from_str(body).ok()?;
    let mut edits = Vec::new();
    for story in top.user_stories {
        let fields: BTreeMap<String, &RawValue> = serde_json::from_str(story.get()).ok()?;
        let Some(raw) = fields.get("dependsOn") else {
            continue;
        };
        let deps: Vec<String> = match serde_json::from_str::<Value>(raw.get()).ok()? {
            Value::String(dep) => vec![dep],
            Value::Array(deps) => deps
                .into_iter()
                .filter_map(|d| d.as_str().map(str::to_owned))
                .collect(),
            _ => continue,
        };
        if !deps.iter().any(|d| d == id) {
            continue;
        }
        let mut new: Vec<String> = Vec::new();
        for dep in deps {
            match dep == id {
                true => new.extend(ids.iter().cloned()),
                false => new.push(dep),
            }
        }
        let start = skip + (raw.get().as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
        if text.get(start..start + raw.get().len()) != Some(raw.get()) {
            return None;
        }
        edits.push((
            start,
            start + raw.get().len(),
            serde_json::to_string(&new).ok()?,
        ));
    }
    let mut out = text.to_owned();
    for (start, end, replacement) in edits.into_iter().rev() {
        out.replace_range(start..end, &replacement);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, deps: &[&str]) -> PlannedTask {
        let mut t = PlannedTask::new(id, format!("Do {id}"));
        t.acceptance_criteria = vec!["it works".to_owned()];
        t.depends_on = deps.iter().map(|d| (*d).to_owned()).collect();
        t
    }

    #[test]
    fn the_smaller_tasks_take_the_blocked_one_s_place() {
        let text = r#"{"userStories": [
  {"id": "A", "priority": 1, "passes": "blocked", "notes": "same error 3 times"},
  {"id": "B", "priority": 2, "passes": false, "dependsOn": ["A"]}
]}
"#;
        let out = edited(
            "prd.json".as_ref(),
            text,
            "A",
            &[task("A1", &[]), task("A2", &["A1"])],
        )
        .unwrap();
        let prd = Prd::parse("prd.json".as_ref(), &out).unwrap();
        let ids: Vec<&str> = prd.stories().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["A", "A1", "A2", "B"], "{out}");
        assert_eq!(prd.story("A").unwrap().passes, Passes::Yes);
        assert!(
            prd.story("A")
                .unwrap()
                .json
                .contains("same error 3 times\\n\\nralph: split into A1, A2")
        );
        assert_eq!(prd.story("A1").unwrap().priority, 1.0);
        assert!(out.contains(r#""dependsOn": ["A1","A2"]"#), "{out}");
    }

    #[test]
    fn the_last_progress_entry_about_the_task_is_found() {
        let text = "## t1 · A · blocked\nold\n\n## t2 · B · blocked\nb\n\n## t3 · A \"Big\" · \
                    tripped\nnew tail\n## t4 · AB · x\n";
        assert_eq!(
            last_entry(text, "A"),
            Some("## t3 · A \"Big\" · tripped\nnew tail\n")
        );
        assert_eq!(last_entry(text, "B"), Some("## t2 · B · blocked\nb\n\n"));
        assert_eq!(last_entry(text, "C"), None);
    }
}
