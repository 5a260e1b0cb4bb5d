//! Reading the tasks out of the agent's answer, in the list's own format: the last fenced
//! `json` block for prd.json stories and GitHub issues, the last fenced `markdown` block for a
//! checklist. What cannot be read is said in words the agent can act on.

use ralph_tasks::TaskState;
use serde_json::Value;

use super::{PlanFormat, PlannedTask};

/// The tasks of `answer`, in its order, or every reason they cannot be read.
pub fn read(format: PlanFormat, answer: &str) -> Result<Vec<PlannedTask>, Vec<String>> {
    match format {
        PlanFormat::Prd | PlanFormat::Github => {
            let block = last_block(answer, &["json"]).ok_or_else(|| {
                vec![
                    "the answer has no fenced ```json block; give the tasks in one, as \
                     {\"userStories\": [...]}"
                        .to_owned(),
                ]
            })?;
            stories(&block)
        }
        PlanFormat::Markdown => {
            let block = last_block(answer, &["markdown", "md"]).ok_or_else(|| {
                vec![
                    "the answer has no fenced ```markdown block; give the checklist in one, \
                     each task a `- [ ] Title` line"
                        .to_owned(),
                ]
            })?;
            checklist(&block)
        }
    }
}

/// The content of the last fenced code block whose info string starts with one of `infos`.
fn last_block(text: &str, infos: &[&str]) -> Option<String> {
    let mut found = None;
    let mut open: Option<(char, usize, bool, Vec<&str>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut open {
            Some((fence, len, wanted, lines)) => {
                let run = trimmed.chars().take_while(|c| c == fence).count();
                if run >= *len && trimmed[run * fence.len_utf8()..].trim().is_empty() {
                    if *wanted {
                        found = Some(lines.join("\n"));
                    }
                    open = None;
                } else {
                    lines.push(line);
                }
            }
            None => {
                let Some(fence) = trimmed.chars().next().filter(|c| *c == '`' || *c == '~') else {
                    continue;
                };
                let len = trimmed.chars().take_while(|c| *c == fence).count();
                if len < 3 {
                    continue;
                }
                let info = trimmed[len..].trim().to_ascii_lowercase();
                let word = info.split_whitespace().next().unwrap_or_default();
                open = Some((fence, len, infos.contains(&word), Vec::new()));
            }
        }
    }
    found
}

/// prd.json's stories: `{"userStories": [...]}` or the list alone.
fn stories(block: &str) -> Result<Vec<PlannedTask>, Vec<String>> {
    let value: Value = serde_json::from_str(block).map_err(|err| {
        vec![format!(
            "the ```json block is not JSON: {err}; give {{\"userStories\": [...]}}"
        )]
    })?;
    let list = match &value {
        Value::Array(list) => list,
        Value::Object(top) => match top.get("userStories") {
            Some(Value::Array(list)) => list,
            _ => {
                return Err(vec![
                    "the ```json block has no \"userStories\" list; give {\"userStories\": [...]}"
                        .to_owned(),
                ]);
            }
        },
        _ => {
            return Err(vec![
                "the ```json block is not {\"userStories\": [...]}".to_owned(),
            ]);
        }
    };
    let mut errors = Vec::new();
    let mut tasks = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let at = format!("userStories[{i}]");
        let Value::Object(fields) = item else {
            errors.push(format!("{at}: expected a story (an object), got {item}"));
            continue;
        };
        let mut text = |name: &str| match fields.get(name) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.trim().to_owned(),
            Some(other) => {
                errors.push(format!("{at}.{name}: expected a string, got {other}"));
                String::new()
            }
        };
        let mut task = PlannedTask::new(text("id"), text("title"));
        task.description = text("description");
        task.acceptance_criteria = strings(fields.get("acceptanceCriteria"), || {
            format!("{at}.acceptanceCriteria")
        })
        .unwrap_or_else(|e| {
            errors.push(e);
            Vec::new()
        });
        task.depends_on = match fields.get("dependsOn") {
            Some(Value::String(id)) => vec![id.clone()],
            other => strings(other, || format!("{at}.dependsOn")).unwrap_or_else(|e| {
                errors.push(e);
                Vec::new()
            }),
        };
        tasks.push(task);
    }
    match errors.is_empty() {
        true => Ok(tasks),
        false => Err(errors),
    }
}

/// A list of strings, or none; `at` names the field for the error.
fn strings(value: Option<&Value>, at: impl Fn() -> String) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.trim().to_owned()),
                other => Err(format!("{}: expected strings, got {other}", at())),
            })
            .collect(),
        Some(other) => Err(format!("{}: expected a list of strings, got {other}", at())),
    }
}

/// A checklist: each `- [ ] Title` item, its `- ` sub-items the acceptance criteria and its
/// other lines the description.
fn checklist(block: &str) -> Result<Vec<PlannedTask>, Vec<String>> {
    let mut errors = Vec::new();
    let tasks = ralph_tasks::markdown::items(block)
        .into_iter()
        .map(|item| {
            if item.state != TaskState::Pending {
                errors.push(format!(
                    "\"{}\": a new task is not done yet; write it `- [ ] {0}`",
                    item.title
                ));
            }
            let mut task = PlannedTask::new(item.id, item.title);
            let mut description = Vec::new();
            for line in &item.body {
                let line = line.trim();
                match line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
                    Some(criterion) => task.acceptance_criteria.push(criterion.trim().to_owned()),
                    None if !line.is_empty() => description.push(line.to_owned()),
                    None => {}
                }
            }
            task.description = description.join("\n");
            task
        })
        .collect();
    match errors.is_empty() {
        true => Ok(tasks),
        false => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_json_block_holds_the_stories() {
        let answer = "Here is a draft:\n```json\n{\"userStories\": []}\n```\nAnd the plan:\n\
                      ```json\n{\"userStories\": [{\"id\": \"US-1\", \"title\": \"Parse\", \
                      \"acceptanceCriteria\": [\"cargo test parse passes\"], \"dependsOn\": \"US-0\"}]}\n```\n";
        let tasks = read(PlanFormat::Prd, answer).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].id, "US-1");
        assert_eq!(tasks[0].acceptance_criteria, ["cargo test parse passes"]);
        assert_eq!(tasks[0].depends_on, ["US-0"]);
    }

    #[test]
    fn an_answer_without_a_block_or_with_wrong_types_says_what_to_fix() {
        assert_eq!(
            read(PlanFormat::Prd, "no plan").unwrap_err(),
            [
                "the answer has no fenced ```json block; give the tasks in one, as {\"userStories\": [...]}"
            ]
        );
        let answer =
            "```json\n[{\"id\": 3, \"title\": \"x\", \"acceptanceCriteria\": \"one\"}]\n```";
        assert_eq!(
            read(PlanFormat::Prd, answer).unwrap_err(),
            [
                "userStories[0].id: expected a string, got 3",
                "userStories[0].acceptanceCriteria: expected a list of strings, got \"one\""
            ]
        );
    }

    #[test]
    fn a_checklist_item_s_bullets_are_its_criteria_and_its_text_the_description() {
        let answer = "```markdown\n# Plan\n\n- [ ] Add the parser\n  Reads the input.\n  - \
                      cargo test parser passes\n- [ ] Print\n  - output is printed\n```\n";
        let tasks = read(PlanFormat::Markdown, answer).unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[0].title, "Add the parser");
        assert_eq!(tasks[0].description, "Reads the input.");
        assert_eq!(tasks[0].acceptance_criteria, ["cargo test parser passes"]);
        assert_eq!(tasks[0].id, ralph_tasks::markdown::id_of("Add the parser"));
        let done = read(PlanFormat::Markdown, "```md\n- [x] Done already\n```").unwrap_err();
        assert_eq!(
            done,
            ["\"Done already\": a new task is not done yet; write it `- [ ] Done already`"]
        );
    }
}
