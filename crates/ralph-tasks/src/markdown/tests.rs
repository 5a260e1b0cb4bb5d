use super::*;

const TODO: &str = "# Work\r\n\r\nSome prose.  \r\n\r\n- [ ] Add a login page\r\n  \
                        needs a form\r\n\t- [ ] nested note\r\n* [x] Done already\r\n1. [ ] \
                        Third\ttask  \r\n\r\n```\r\n- [ ] not a task\r\n```\r\n- [ ] Last";

#[test]
fn items_bodies_and_states_are_found() {
    let found = items(TODO);
    let titles: Vec<(&str, TaskState)> =
        found.iter().map(|i| (i.title.as_str(), i.state)).collect();
    assert_eq!(
        titles,
        [
            ("Add a login page", TaskState::Pending),
            ("Done already", TaskState::Passed),
            ("Third\ttask", TaskState::Pending),
            ("Last", TaskState::Pending),
        ]
    );
    // Indented with spaces and with a tab: nothing in common to take away.
    assert_eq!(
        dedent(&found[0].body),
        "  needs a form\n\t- [ ] nested note"
    );
    assert_eq!(
        dedent(&["  a".to_owned(), String::new(), "    b".to_owned()]),
        "a\n\n  b"
    );
    assert!(
        found[0].id.starts_with("add-a-login-page-"),
        "{}",
        found[0].id
    );
}

#[test]
fn a_pass_changes_exactly_the_checkbox() {
    let id = items(TODO)[2].id.clone();
    let out = apply(TODO, "TODO.md", &Mark::passed(id.clone()))
        .unwrap()
        .unwrap();
    assert_eq!(out, TODO.replacen("1. [ ] Third", "1. [x] Third", 1));
    assert_eq!(apply(&out, "TODO.md", &Mark::passed(id)).unwrap(), None);
}

#[test]
fn a_block_appends_a_comment_before_the_line_ending_and_keeps_the_id() {
    let item = items(TODO)[0].clone();
    let mark = Mark::Blocked {
        story_id: item.id.clone(),
        notes: String::new(),
        reason: "same error 3 times".to_owned(),
        saved_ref: Some("refs/ralph/attempts/x/1".to_owned()),
    };
    let out = apply(TODO, "TODO.md", &mark).unwrap().unwrap();
    assert_eq!(
        out,
        TODO.replacen(
            "- [ ] Add a login page\r\n",
            "- [ ] Add a login page <!-- ralph: blocked: same error 3 times; abandoned \
                 work: git checkout refs/ralph/attempts/x/1 -->\r\n",
            1
        )
    );
    let again = items(&out);
    assert_eq!(again[0].id, item.id);
    assert_eq!(again[0].state, TaskState::Blocked);
    assert_eq!(apply(&out, "TODO.md", &mark).unwrap(), None);
}

#[test]
fn the_same_title_twice_gets_two_ids() {
    let found = items("- [ ] a\n- [ ] a\n");
    assert_eq!(found[1].id, format!("{}-2", found[0].id));
}

/// Titles of the items of `text`, with their states.
fn found(text: &str) -> Vec<(String, TaskState)> {
    items(text)
        .into_iter()
        .map(|i| (i.title, i.state))
        .collect()
}

#[test]
fn a_fence_closes_only_with_a_fence_as_long_of_its_character() {
    let text = "````md\n```\n- [ ] in the outer block\n```\n~~~~\n- [ ] still in\n````\n- [ ] after\n~~~\n```\n- [ ] in tildes\n~~~~\n- [ ] last\n";
    let titles: Vec<String> = found(text).into_iter().map(|(t, _)| t).collect();
    assert_eq!(titles, ["after", "last"]);
    // Backticks after a backtick run: inline code, not a fence.
    assert_eq!(found("``` a ` b\n- [ ] x\n").len(), 1);
}

#[test]
fn no_item_in_an_html_comment_or_an_indented_code_block() {
    let text = "<!--\n- [ ] commented out\n-->\n- [ ] a\n\nProse:\n\n    - [ ] code\n\n    - [ ] code too\n- [ ] b\nText\n    - [ ] lazy text\n<!-- one line --> \n- [ ] c\n";
    let titles: Vec<String> = found(text).into_iter().map(|(t, _)| t).collect();
    assert_eq!(titles, ["a", "b", "c"]);
    // Under a plain list item, four columns in is a nested item.
    let nested = "- Group\n    - [ ] nested\n1. Other\n\n     - [ ] nested too\n";
    let titles: Vec<String> = found(nested).into_iter().map(|(t, _)| t).collect();
    assert_eq!(titles, ["nested", "nested too"]);
}

#[test]
fn an_empty_item_is_not_a_task() {
    assert_eq!(
        found("- [ ]\n- [ ]   \n- [x] <!-- note -->\n- [ ] real\n").len(),
        1
    );
}

#[test]
fn only_ralphs_comment_at_the_end_of_the_line_blocks() {
    let text = "- [ ] Explain `<!-- ralph: blocked: x -->` in the docs\n- [ ] Quote <!-- ralph: blocked: a --> then words\n- [ ] Real <!-- ralph: blocked: same error 3 times -->  \n";
    let states: Vec<TaskState> = found(text).into_iter().map(|(_, s)| s).collect();
    assert_eq!(
        states,
        [TaskState::Pending, TaskState::Pending, TaskState::Blocked]
    );
}

#[test]
fn a_title_on_two_items_is_a_warning_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("TODO.md");
    std::fs::write(&path, "- [ ] a\n- [ ] b\n- [ ]  a \n").unwrap();
    let mut list = MarkdownList::new(path);
    list.load().unwrap();
    let warnings = list.load_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("\"a\" is on 2 items (lines 1, 3)"),
        "{}",
        warnings[0]
    );
}

#[test]
fn not_checklist_lines() {
    for line in [
        "-[ ] x",
        "- [] x",
        "- [ ]x",
        "text - [ ] x",
        "1234567890. [ ] x",
    ] {
        assert!(checkbox(line).is_none(), "{line}");
    }
    for line in ["- [ ]", "+ [X] y", "  10) [ ] z", "\t* [ ] t"] {
        assert!(checkbox(line).is_some(), "{line}");
    }
}

#[test]
fn a_question_goes_under_the_item_and_a_new_line_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("TODO.md");
    std::fs::write(&path, TODO).unwrap();
    let mut list = MarkdownList::new(path.clone());
    let id = list.load().unwrap()[0].id.clone();
    let asked = list.ask(&id, "Which --> framework?").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        TODO.replacen(
            "\t- [ ] nested note\r\n",
            "\t- [ ] nested note\r\n  <!-- ralph: question: Which -- > framework? -->\r\n",
            1
        )
    );
    assert_eq!(asked.at, format!("{}:8", path.display()));
    assert_eq!(list.answer(&asked).unwrap(), None);
    let answered = text.replacen("? -->\r\n", "? -->\r\n\tUse axum.\r\n", 1);
    std::fs::write(&path, answered).unwrap();
    assert_eq!(list.answer(&asked).unwrap().as_deref(), Some("Use axum."));
    assert_eq!(list.load().unwrap()[0].id, id, "the id stays");
}

#[test]
fn an_answer_at_column_0_under_the_question_is_seen_and_a_deleted_question_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("TODO.md");
    std::fs::write(&path, "- [ ] one\n- [ ] two\n").unwrap();
    let mut list = MarkdownList::new(path.clone());
    let id = list.load().unwrap()[0].id.clone();
    let asked = list.ask(&id, "why?").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "- [ ] one\n  <!-- ralph: question: why? -->\n- [ ] two\n"
    );
    // A heading or the next item is no answer.
    std::fs::write(&path, text.replace("-->\n", "-->\n# Notes\n")).unwrap();
    assert_eq!(list.answer(&asked).unwrap(), None);
    std::fs::write(
        &path,
        text.replace("-->\n", "-->\nBecause.\nReally.\n\nProse.\n"),
    )
    .unwrap();
    assert_eq!(
        list.answer(&asked).unwrap().as_deref(),
        Some("Because.\nReally.")
    );
    std::fs::write(&path, "- [ ] one\n- [ ] two\n").unwrap();
    assert!(matches!(
        list.answer(&asked),
        Err(TaskListError::NoSuchQuestion { ref question, .. }) if question == "why?"
    ));
}

#[test]
fn a_question_on_the_last_line_without_an_ending_gets_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("TODO.md");
    std::fs::write(&path, "- [ ] only").unwrap();
    let mut list = MarkdownList::new(path.clone());
    let id = list.load().unwrap()[0].id.clone();
    list.ask(&id, "why?").unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "- [ ] only\n  <!-- ralph: question: why? -->\n"
    );
}

mod props {
    use proptest::prelude::*;

    use super::super::*;

    fn line() -> impl Strategy<Value = String> {
        let prefix = prop_oneof![
            Just(String::new()),
            Just("  ".to_owned()),
            Just("\t".to_owned()),
            Just(" \t ".to_owned())
        ];
        let body = prop_oneof![
            Just("- [ ] ".to_owned()),
            Just("* [x] ".to_owned()),
            Just("1. [ ] ".to_owned()),
            Just("- ".to_owned()),
            Just(String::new()),
            Just("```".to_owned()),
        ];
        let text = "[a-z \t]{0,12}";
        let end = prop_oneof![Just("\n"), Just("\r\n"), Just("  \r\n"), Just("\t\n")];
        (prefix, body, text, end).prop_map(|(p, b, t, e)| format!("{p}{b}{t}{e}"))
    }

    proptest! {
        /// Marking any item changes only its checkbox or appends to its line: every
        /// other byte stays.
        #[test]
        fn marks_change_only_their_line(lines in proptest::collection::vec(line(), 0..20), pick in 0usize..20) {
            let text: String = lines.concat();
            let found = items(&text);
            prop_assume!(!found.is_empty());
            let item = &found[pick % found.len()];
            if item.state == TaskState::Pending {
                let out = apply(&text, "T", &Mark::passed(item.id.clone())).unwrap().unwrap();
                prop_assert_eq!(out.len(), text.len());
                let diff: Vec<usize> = (0..text.len()).filter(|&i| text.as_bytes()[i] != out.as_bytes()[i]).collect();
                prop_assert_eq!(diff, vec![item.checkbox + 1]);
                let blocked = Mark::Blocked { story_id: item.id.clone(), notes: String::new(), reason: "r".into(), saved_ref: None };
                let out = apply(&text, "T", &blocked).unwrap().unwrap();
                prop_assert_eq!(&out[..item.line.end], &text[..item.line.end]);
                prop_assert_eq!(&out[out.len() - (text.len() - item.line.end)..], &text[item.line.end..]);
                let after = items(&out);
                prop_assert_eq!(after.len(), found.len());
                prop_assert_eq!(&after[pick % found.len()].id, &item.id);
            }
        }
    }
}
