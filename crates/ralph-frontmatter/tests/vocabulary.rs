//! Plugs bring their own words: a task source's placeholder namespace, config section, endings
//! and states, registered in a `Vocabulary` that `parse_with` checks a file against.

use ralph_frontmatter::{
    Namespace, PlugVocabulary, SectionProblem, Vocabulary, VocabularyError, parse, parse_with,
};
use serde_json::Value;

/// A Markdown-checklist task source, as a third party would write it: `{{ task.item }}` and
/// `{{ task.line }}`, a `checklist:` section with a required `file`, one ending of its own and
/// one state it gives a meaning to.
fn checklist() -> PlugVocabulary {
    PlugVocabulary::new("checklist")
        .namespace(Namespace::closed("task", ["item", "line"]))
        .end_reasons(["checklist_done"])
        .reserved_states(["item_done"])
        .section("checklist", check_checklist)
}

fn check_checklist(value: &Value) -> Vec<SectionProblem> {
    let Some(section) = value.as_object() else {
        return vec![SectionProblem::at_value(
            "",
            "expected a mapping with `file`",
        )];
    };
    let mut problems = Vec::new();
    for (key, value) in section {
        match key.as_str() {
            "file" if value.is_string() => {}
            "file" => problems.push(SectionProblem::at_value(
                "file",
                "expected the path of a Markdown checklist",
            )),
            key => problems.push(SectionProblem::at_key(key, "unknown key; expected `file`")),
        }
    }
    problems
}

fn vocabulary() -> Vocabulary {
    Vocabulary::default().with(checklist()).unwrap()
}

fn warnings(text: &str, vocabulary: &Vocabulary) -> Vec<String> {
    let parsed = parse_with("RALPH.md", text, vocabulary).expect("valid file");
    parsed.warnings.iter().map(ToString::to_string).collect()
}

fn errors(text: &str, vocabulary: &Vocabulary) -> Vec<String> {
    match parse_with("RALPH.md", text, vocabulary) {
        Ok(parsed) => panic!("expected errors, got {parsed:#?}"),
        Err(errors) => errors.errors.iter().map(ToString::to_string).collect(),
    }
}

const CHECKLIST_FILE: &str = "---\nagent: claude -p\nchecklist:\n  file: TODO.md\n---\nDo {{ task.item }} (line {{ task.line }}).\n";

#[test]
fn a_task_sources_namespace_and_section_parse_with_its_vocabulary() {
    let parsed = parse_with("RALPH.md", CHECKLIST_FILE, &vocabulary()).expect("valid file");
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let section = &parsed.file.sections["checklist"];
    assert_eq!(section["file"].as_str(), Some("TODO.md"));
    assert_eq!(
        parsed.file.body,
        "Do {{ task.item }} (line {{ task.line }})."
    );
}

#[test]
fn without_the_vocabulary_the_section_is_an_unknown_key() {
    let errors: Vec<String> = parse("RALPH.md", CHECKLIST_FILE)
        .unwrap_err()
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("RALPH.md:3:1: checklist: unknown key; expected one of: agent,"),
        "{errors:?}"
    );
}

#[test]
fn an_unregistered_namespace_names_the_registered_ones() {
    let text = "---\nagent: x\n---\n{{ tsak.item }} {{ env.HOME }}\n";
    assert_eq!(
        warnings(text, &vocabulary()),
        [
            "RALPH.md:4:1: tsak.item: unknown placeholder namespace `tsak`; known: commands, \
             args, ralph, task; did you mean `task`?",
            "RALPH.md:4:17: env.HOME: unknown placeholder namespace `env`; known: commands, \
             args, ralph, task",
        ]
    );
    // A plain parse knows only ralph's own namespaces.
    assert_eq!(
        warnings(text, &Vocabulary::default())[1],
        "RALPH.md:4:17: env.HOME: unknown placeholder namespace `env`; known: commands, args, \
         ralph"
    );
}

#[test]
fn a_name_a_closed_namespace_lacks_is_a_warning_with_its_names() {
    let text = "---\nagent: x\n---\n{{ task.iten }}\n";
    assert_eq!(
        warnings(text, &vocabulary()),
        [
            "RALPH.md:4:1: task.iten: `task` has no such value (known: item, line); did you mean \
             `item`?"
        ]
    );
}

#[test]
fn an_open_namespace_takes_any_name() {
    let env = PlugVocabulary::new("environment").namespace(Namespace::open("env"));
    let vocabulary = Vocabulary::default().with(env).unwrap();
    let text = "---\nagent: x\n---\n{{ env.HOME }} {{ env.ANYTHING_AT_ALL }}\n";
    assert!(warnings(text, &vocabulary).is_empty());
}

#[test]
fn a_namespace_filled_only_in_some_files_says_why_in_the_others() {
    let tasks = PlugVocabulary::new("checklist").namespace(
        Namespace::closed("task", ["item"]).filled_only_if(
            |file| file.sections.contains_key("checklist"),
            "task placeholders are filled only with a `checklist` section",
        ),
    );
    let vocabulary = Vocabulary::default().with(tasks).unwrap();
    assert_eq!(
        warnings("---\nagent: x\n---\n{{ task.item }}\n", &vocabulary),
        ["RALPH.md:4:1: task.item: task placeholders are filled only with a `checklist` section"]
    );
}

#[test]
fn the_plugs_problems_with_its_section_are_located_errors() {
    let text = "---\nagent: x\nchecklist:\n  file: [a, b]\n  fiel: TODO.md\n---\n";
    assert_eq!(
        errors(text, &vocabulary()),
        [
            "RALPH.md:4:9: checklist.file: expected the path of a Markdown checklist",
            "RALPH.md:5:3: checklist.fiel: unknown key; expected `file`",
        ]
    );
    assert_eq!(
        errors("---\nagent: x\nchecklist: TODO.md\n---\n", &vocabulary()),
        ["RALPH.md:3:12: checklist: expected a mapping with `file`"]
    );
}

#[test]
fn a_plugs_section_errors_come_with_ralphs_own_in_file_order() {
    let text = "---\nagent: x\nchecklist:\n  file: 3\ndelay: soon\n---\n";
    let found = errors(text, &vocabulary());
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("RALPH.md:4:9: checklist.file:"),
        "{found:?}"
    );
    assert!(found[1].starts_with("RALPH.md:5:8: delay:"), "{found:?}");
}

#[test]
fn a_state_cannot_take_a_plugs_ending_or_reserved_state() {
    let text = "---\nagent: x\nstates:\n  checklist_done:\n  item_done:\n---\n";
    let reserved = [
        "max_iterations",
        "idle_limit",
        "interrupted",
        "cancelled",
        "agent_failed",
        "agent_failing",
        "agent_done",
        "converged",
        "max_attempts_reached",
        "pty_idle_timeout",
        "max_cost",
        "max_runtime",
        "checklist_done",
    ]
    .join(", ");
    assert_eq!(
        errors(text, &vocabulary()),
        [
            format!(
                "RALPH.md:4:3: states.checklist_done: `checklist_done` is a reason ralph gives \
                 for ending a run (RUN_ENDED), and a stop in this state would read as that \
                 ending; pick another name (reserved: {reserved})"
            ),
            "RALPH.md:5:3: states.item_done: `item_done` is a state `checklist` gives a meaning \
             to; pick another name"
                .to_owned(),
        ]
    );
    // Without the plug, both are names like any other.
    assert!(parse("RALPH.md", text).is_ok());
}

#[test]
fn a_word_ralph_or_another_plug_has_cannot_be_registered() {
    let taken = |plug: PlugVocabulary| Vocabulary::default().with(checklist())?.with(plug);
    assert_eq!(
        taken(PlugVocabulary::new("x").namespace(Namespace::open("ralph"))).unwrap_err(),
        VocabularyError::Namespace {
            plug: "x".into(),
            namespace: "ralph".into(),
            owner: "ralph".into()
        }
    );
    assert_eq!(
        taken(PlugVocabulary::new("x").namespace(Namespace::open("state")))
            .unwrap_err()
            .to_string(),
        "plug `x`: placeholder namespace `state` is ralph's already"
    );
    assert_eq!(
        taken(PlugVocabulary::new("x").namespace(Namespace::open("task")))
            .unwrap_err()
            .to_string(),
        "plug `x`: placeholder namespace `task` is checklist's already"
    );
    assert_eq!(
        taken(PlugVocabulary::new("x").section("idle", |_| Vec::new()))
            .unwrap_err()
            .to_string(),
        "plug `x`: frontmatter key `idle` is ralph's already"
    );
    assert_eq!(
        taken(PlugVocabulary::new("x").section("checklist", |_| Vec::new()))
            .unwrap_err()
            .to_string(),
        "plug `x`: frontmatter key `checklist` is checklist's already"
    );
    assert_eq!(
        taken(PlugVocabulary::new("x").end_reasons(["max_cost"]))
            .unwrap_err()
            .to_string(),
        "plug `x`: `max_cost` is ralph's ending or state already"
    );
    assert_eq!(
        taken(PlugVocabulary::new("x").reserved_states(["checklist_done"]))
            .unwrap_err()
            .to_string(),
        "plug `x`: `checklist_done` is checklist's ending or state already"
    );
}

/// A section as YAML writes it, in the file given: `checklist:` followed by `section`.
fn with_section(section: &str) -> String {
    format!("---\nagent: claude -p\nchecklist:\n{section}---\nDo {{{{ task.item }}}}.\n")
}

#[test]
fn a_section_reads_as_json_with_its_numbers_lists_and_order() {
    let text = with_section("  file: TODO.md\n  weight: 1.5\n  tags: [a, 2, true, null]\n");
    let vocabulary = Vocabulary::default()
        .with(PlugVocabulary::new("checklist").section("checklist", |_| Vec::new()))
        .unwrap();
    let parsed = parse_with("RALPH.md", &text, &vocabulary).expect("valid file");
    assert_eq!(
        parsed.file.sections["checklist"],
        serde_json::json!({"file": "TODO.md", "weight": 1.5, "tags": ["a", 2, true, null]})
    );
}

#[test]
fn a_section_key_that_is_not_a_string_is_an_error_at_the_key() {
    let text = with_section("  file: TODO.md\n  1: first\n");
    assert_eq!(
        errors(&text, &vocabulary()),
        [
            "RALPH.md:5:3: checklist.1: expected a string key, got 1; a plug's section holds JSON \
          values: strings, finite numbers, true/false, null, lists, and mappings with string keys: \
          write the key in quotes (\"1\")"
        ]
    );
}

#[test]
fn a_yaml_tag_in_a_section_is_an_error_at_its_value() {
    let text = with_section("  file: !path TODO.md\n");
    assert_eq!(
        errors(&text, &vocabulary()),
        [
            "RALPH.md:4:15: checklist.file: expected a value without a YAML tag, got one tagged \
          `!path`; a plug's section holds JSON values: strings, finite numbers, true/false, null, \
          lists, and mappings with string keys: remove the tag"
        ]
    );
}

#[test]
fn every_value_json_cannot_hold_is_reported_at_once_with_its_path() {
    let text = with_section("  file: .inf\n  items:\n    - ok\n    - .nan\n  true: yes\n");
    assert_eq!(
        errors(&text, &vocabulary()),
        [
            "RALPH.md:4:9: checklist.file: expected a finite number, got .inf; a plug's section \
             holds JSON values: strings, finite numbers, true/false, null, lists, and mappings \
             with string keys",
            "RALPH.md:7:7: checklist.items[1]: expected a finite number, got .nan; a plug's \
             section holds JSON values: strings, finite numbers, true/false, null, lists, and \
             mappings with string keys",
            "RALPH.md:8:3: checklist.true: expected a string key, got true; a plug's section \
             holds JSON values: strings, finite numbers, true/false, null, lists, and mappings \
             with string keys: write the key in quotes (\"true\")",
        ]
    );
}
