//! A Markdown checklist read as CommonMark reads it: no task inside a code block (fenced, with
//! a fence closed only by one at least as long, or indented) or an HTML comment, no empty item,
//! a title that mentions ralph's blocked comment still a task, and a title on two items said.

use crate::common;

use common::{Project, code, stderr, stdout, todo_repo};
use serde_json::Value;

/// `ralph tasks --json`'s (title, state) pairs, in the list's order.
fn listed(p: &Project) -> Vec<(String, String)> {
    let out = p.run(&["tasks", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["title"].as_str().unwrap().to_owned(),
                t["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

const TRICKY: &str = "# Plan

````markdown
An example checklist, shown in the docs:
```
- [ ] not a task (inside the four-backtick block)
```
````

- [ ] First

<!--
- [ ] commented out
-->

An example in an indented code block:

    - [ ] not a task (indented code)

- [ ]
- [ ] Document the `<!-- ralph: blocked: why -->` comment
- [ ] Last
";

#[test]
fn code_blocks_comments_and_empty_items_hold_no_task() {
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md",
        "{{ task.title }}\n",
        "true\n",
        TRICKY,
    );
    let pending = |t: &str| (t.to_owned(), "pending".to_owned());
    assert_eq!(
        listed(&p),
        [
            pending("First"),
            pending("Document the `` comment"),
            pending("Last"),
        ]
    );
}

#[test]
fn a_title_on_two_items_is_a_warning_when_the_run_loads_the_list() {
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\nmax_iterations: 1",
        "{{ task.title }}\n",
        "true\n",
        "- [ ] Write tests\n- [ ] Fix the bug\n- [ ] Write tests\n",
    );
    let out = p.run(&["run"]);
    assert_ne!(code(&out), 2, "{}", stderr(&out));
    let warnings: Vec<String> = p
        .events_of("WARNING")
        .iter()
        .filter_map(|w| w["message"].as_str().map(str::to_owned))
        .filter(|m| m.contains("Write tests"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:#?}", p.events());
    assert!(
        warnings[0].contains("is on 2 items (lines 1, 3)")
            && warnings[0].contains("a title of its own"),
        "{}",
        warnings[0]
    );
}
