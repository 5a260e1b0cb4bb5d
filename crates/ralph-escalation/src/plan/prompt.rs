//! The planning prompt: built in ([`BUILT_IN`], documented in docs/plan.md), or a file the
//! RALPH.md names (`plan: {prompt: PLAN.md}`), with `{{ plan.* }}` placeholders filled.

use ralph_tasks::ListedTask;

use super::PlanFormat;

/// The names a planning prompt fills in under `{{ plan.* }}`.
pub const PLAN_PLACEHOLDERS: &[&str] = &["spec", "format", "tasks", "errors"];

/// The built-in planning prompt.
pub const BUILT_IN: &str = "\
You are planning the work for an AI coding agent that runs in a loop, one task per run, with \
no memory of earlier runs. Turn the spec below into a task list. Do not write code, and do \
not change any file: only answer with the plan.

A good task:
- is small: one agent run can finish it (an hour of a person's work at most);
- has one checkable outcome, said in its acceptance criteria as things a command or a \
reader can check (a test that passes, a command's output, a file that exists);
- comes after what it builds on: order the tasks so that each one builds on the ones \
before it, and name those in its dependencies;
- says what to do, not how the whole project works: the agent reads the code itself.

# Spec

{{ plan.spec }}

# Tasks already in the list

{{ plan.tasks }}

# How to answer

{{ plan.format }}

{{ plan.errors }}";

/// The built-in prompt of `ralph plan --split ID`: `{{ plan.spec }}` holds the blocked task,
/// why it was blocked, the failing check's last output and the saved attempts.
pub const BUILT_IN_SPLIT: &str = "\
You are helping an AI coding agent that runs in a loop, one task per run. It could not \
finish the task below: it was blocked after attempts that failed. Split it into smaller \
tasks, each one small enough for one run, with one checkable outcome, in the order they \
build on each other, that together do what the task asked. Do not write code, and do not \
change any file: only answer with the smaller tasks.

# The task that keeps failing

{{ plan.spec }}

# Tasks already in the list

{{ plan.tasks }}

# How to answer

{{ plan.format }}

{{ plan.errors }}";

/// What `{{ plan.format }}` says for each list.
pub fn format(format: PlanFormat) -> &'static str {
    match format {
        PlanFormat::Prd | PlanFormat::Github => {
            "Answer with one fenced ```json block holding the new tasks as prd.json user \
stories, in the order to do them. Each has a unique \"id\" (not one already in the list), a \
one-line \"title\", a short \"description\", \"acceptanceCriteria\" (a list of checkable \
outcomes, at least one) and \"dependsOn\" (the ids of the tasks that must be done first, of \
the plan or of the list; [] when none):

```json
{\"userStories\": [
  {\"id\": \"US-001\", \"title\": \"Parse the config file\", \"description\": \"Read \
config.toml into a Config struct.\", \"acceptanceCriteria\": [\"cargo test config passes\"], \
\"dependsOn\": []},
  {\"id\": \"US-002\", \"title\": \"Report a bad config value\", \"description\": \"Name the \
field and the value allowed.\", \"acceptanceCriteria\": [\"cargo test config_errors passes\"], \
\"dependsOn\": [\"US-001\"]}
]}
```"
        }
        PlanFormat::Markdown => {
            "Answer with one fenced ```markdown block holding the new tasks as a checklist, \
in the order to do them: each task a `- [ ] Title` line (a one-line title no task in the list \
has), then, indented under it, a short description and its acceptance criteria as `- ` items \
(checkable outcomes, at least one):

```markdown
- [ ] Parse the config file
  Read config.toml into a Config struct.
  - cargo test config passes
- [ ] Report a bad config value
  Name the field and the value allowed.
  - cargo test config_errors passes
```"
        }
    }
}

/// `{{ plan.tasks }}`: the list's tasks, one a line, or that it has none.
pub fn tasks(existing: &[ListedTask]) -> String {
    if existing.is_empty() {
        return "None: the list is empty.".to_owned();
    }
    existing
        .iter()
        .map(|t| {
            let deps = match t.depends_on.is_empty() {
                true => String::new(),
                false => format!(" (after {})", t.depends_on.join(", ")),
            };
            format!("- {} [{}] {}{deps}", t.id, t.state.as_str(), t.title)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `{{ plan.errors }}`: what was wrong with the last answer, or nothing before the first.
pub fn errors(errors: &[String]) -> String {
    if errors.is_empty() {
        return String::new();
    }
    let list: Vec<String> = errors.iter().map(|e| format!("- {e}")).collect();
    format!(
        "# Your last answer could not be used\n\nNothing was written. Answer again with the \
         whole plan, fixing these:\n{}\n",
        list.join("\n")
    )
}

/// `template` with its `{{ plan.* }}` placeholders filled; the errors go at the end when it
/// has no place for them.
pub fn render(
    template: &str,
    spec: &str,
    format_of: PlanFormat,
    existing: &[ListedTask],
    last_errors: &[String],
) -> String {
    let errors = errors(last_errors);
    let mut prompt = ralph_frontmatter::render(template, |p| match (p.namespace, p.name) {
        ("plan", "spec") => Some(spec.trim_end().to_owned()),
        ("plan", "format") => Some(format(format_of).to_owned()),
        ("plan", "tasks") => Some(tasks(existing)),
        ("plan", "errors") => Some(errors.clone()),
        _ => None,
    });
    let placed = ralph_frontmatter::placeholders(template)
        .iter()
        .any(|p| p.namespace == "plan" && p.name == "errors");
    if !placed && !errors.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&errors);
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_prompt_holds_the_spec_the_list_and_the_format() {
        let existing = [ListedTask::new("US-001", "Old one")];
        let prompt = render(BUILT_IN, "Build a CLI.\n", PlanFormat::Prd, &existing, &[]);
        assert!(
            prompt.contains("# Spec\n\nBuild a CLI.\n\n# Tasks"),
            "{prompt}"
        );
        assert!(prompt.contains("- US-001 [pending] Old one"), "{prompt}");
        assert!(prompt.contains("```json\n{\"userStories\""), "{prompt}");
        assert!(!prompt.contains("could not be used"));
        assert!(!prompt.contains("{{"), "{prompt}");
    }

    #[test]
    fn the_errors_go_where_the_prompt_says_or_at_the_end() {
        let errors = ["task A: no title".to_owned()];
        let prompt = render(BUILT_IN, "x", PlanFormat::Markdown, &[], &errors);
        assert!(
            prompt.ends_with("fixing these:\n- task A: no title\n"),
            "{prompt}"
        );
        let own = render(
            "Plan {{ plan.spec }}",
            "x",
            PlanFormat::Markdown,
            &[],
            &errors,
        );
        assert!(own.starts_with("Plan x\n\n# Your last answer"), "{own}");
    }

    #[test]
    fn docs_plan_md_holds_the_prompts_as_they_are() {
        let docs = include_str!("../../../../docs/plan.md");
        for text in [
            BUILT_IN,
            BUILT_IN_SPLIT,
            format(PlanFormat::Prd),
            format(PlanFormat::Markdown),
        ] {
            assert!(docs.contains(text), "docs/plan.md lacks:\n{text}");
        }
    }
}
