use super::*;

const SAMPLE: &str = r#"{
  "project": "Shop",
  "branchName": "ralph/cart",
  "description": "A cart",
  "userStories": [
    {
      "id": "US-002",
      "title": "Totals",
      "description": "Show totals",
      "acceptanceCriteria": [
        "total shown",
        "typecheck passes"
      ],
      "priority": 2,
      "passes": false,
      "notes": "",
      "x-owner": {
        "team": "web",
        "since": 2024
      }
    },
    {
      "id": "US-001",
      "title": "Add to cart",
      "description": "Add items",
      "acceptanceCriteria": [],
      "priority": 1,
      "passes": true,
      "notes": ""
    },
    {
      "priority": 2,
      "id": "US-003",
      "title": "Remove",
      "passes": false
    }
  ],
  "zeta": [
    1,
    2.5,
    null
  ],
  "alpha": true
}
"#;

fn sample() -> Prd {
    Prd::parse(Path::new("prd.json"), SAMPLE).unwrap()
}

#[test]
fn a_question_goes_in_the_notes_and_the_lines_a_person_adds_under_it_answer_it() {
    let mut prd = sample();
    let asked = prd.ask("US-003", "Which\nframework?").unwrap();
    assert_eq!(asked, "ralph: question: Which framework?");
    // Only the notes change (added, as the story had none); `passes` stays.
    let text = prd.to_text();
    assert_eq!(
            text,
            SAMPLE.replace(
                "\"passes\": false\n    }\n  ],",
                "\"passes\": false,\n      \"notes\": \"ralph: question: Which framework?\"\n    }\n  ],"
            )
        );
    assert_eq!(prd.answer("US-003", &asked).unwrap(), None);
    let answered = text.replace(
        "Which framework?\"",
        "Which framework?\\n\\nUse axum.\\nWe know it.\"",
    );
    let prd = Prd::parse(Path::new("prd.json"), &answered).unwrap();
    assert_eq!(
        prd.answer("US-003", &asked).unwrap().as_deref(),
        Some("Use axum.\nWe know it.")
    );
    // A person's notes stay ahead of a second question, which the old answer does not
    // answer.
    let mut prd = prd;
    let again = prd.ask("US-003", "Which database?").unwrap();
    assert_eq!(prd.answer("US-003", &again).unwrap(), None);
    // A question a person deleted answers nothing, and says so.
    assert!(matches!(
        prd.answer("US-003", "ralph: question: Which cache?"),
        Err(PrdError::NoSuchQuestion { ref question, .. }) if question == "Which cache?"
    ));
    assert!(prd.to_text().contains(
            "ralph: question: Which framework?\\n\\nUse axum.\\nWe know it.\\n\\nralph: question: Which database?"
        ));
}

#[test]
fn a_mark_applied_again_changes_nothing_more() {
    let blocked = Mark::Blocked {
        story_id: "US-002".to_owned(),
        notes: "blocked by ralph".to_owned(),
        reason: "same error 3 times".to_owned(),
        saved_ref: None,
    };
    let passed = Mark::passed("US-003");
    let mut prd = sample();
    assert!(blocked.apply(&mut prd).unwrap());
    assert!(passed.apply(&mut prd).unwrap());
    let once = prd.to_text();
    assert!(!blocked.apply(&mut prd).unwrap());
    assert!(!passed.apply(&mut prd).unwrap());
    assert_eq!(prd.to_text(), once);
    let gone = Mark::passed("US-404");
    assert!(matches!(
        gone.apply(&mut prd),
        Err(PrdError::NoSuchStory { .. })
    ));
}

#[test]
fn an_untouched_file_is_written_back_byte_for_byte() {
    assert_eq!(sample().to_text(), SAMPLE);
}

#[test]
fn the_current_story_is_the_lowest_priority_not_passing_first_in_file_order() {
    let mut prd = sample();
    assert_eq!(prd.current().unwrap().id, "US-002");
    prd.set("US-002", Passes::Blocked, Some("stuck")).unwrap();
    assert_eq!(prd.current().unwrap().id, "US-003");
    prd.set("US-003", Passes::Yes, None).unwrap();
    assert!(prd.current().is_none());
    assert_eq!(prd.counts(), (2, 1, 0));
}

#[test]
fn a_rewrite_changes_only_passes_and_notes() {
    let mut prd = sample();
    prd.set("US-002", Passes::Blocked, Some("see progress.txt:3"))
        .unwrap();
    prd.set("US-003", Passes::Yes, Some("done")).unwrap();
    let expected = SAMPLE
        .replacen(
            "\"passes\": false,\n      \"notes\": \"\",",
            "\"passes\": \"blocked\",\n      \"notes\": \"see progress.txt:3\",",
            1,
        )
        .replace(
            "\"title\": \"Remove\",\n      \"passes\": false\n",
            "\"title\": \"Remove\",\n      \"passes\": true,\n      \"notes\": \"done\"\n",
        );
    assert_eq!(prd.to_text(), expected);
    let again = Prd::parse(Path::new("prd.json"), &prd.to_text()).unwrap();
    assert_eq!(again.story("US-002").unwrap().passes, Passes::Blocked);
}

#[test]
fn a_rewrite_keeps_the_users_own_formatting() {
    // 4-space indentation, one-line arrays, number spellings and escapes: all survive.
    let text = "{\n    \"project\": \"Caf\\u00e9\",\n    \"version\": 1.50,\n    \"userStories\": [\n        {\"id\": \"A\", \"priority\": 1e0, \"acceptanceCriteria\": [\"x\", \"y\"], \"passes\": false},\n        {\n            \"id\": \"B\",\n            \"priority\": 2,\n            \"passes\": false\n        }\n    ]\n}";
    let mut prd = Prd::parse(Path::new("prd.json"), text).unwrap();
    prd.set("A", Passes::Yes, Some("done, \"really\"")).unwrap();
    prd.set("B", Passes::Blocked, Some("stuck")).unwrap();
    let expected = text
        .replace(
            "\"passes\": false},",
            "\"passes\": true, \"notes\": \"done, \\\"really\\\"\"},",
        )
        .replace(
            "\"passes\": false\n",
            "\"passes\": \"blocked\",\n            \"notes\": \"stuck\"\n",
        );
    assert_eq!(prd.to_text(), expected);
    let again = Prd::parse(Path::new("prd.json"), &prd.to_text()).unwrap();
    assert_eq!(again.story("A").unwrap().passes, Passes::Yes);
    assert_eq!(again.story("B").unwrap().passes, Passes::Blocked);
}

#[test]
fn story_json_keeps_unknown_fields() {
    let prd = sample();
    let json = &prd.story("US-002").unwrap().json;
    assert!(json.contains("\"x-owner\""), "{json}");
    assert_eq!(
        prd.story("US-002").unwrap().acceptance_criteria,
        ["total shown", "typecheck passes"]
    );
}

#[test]
fn a_syntax_error_names_line_and_column() {
    let err = Prd::parse(Path::new("prd.json"), "{\n  \"userStories\": [,]\n}").unwrap_err();
    assert_eq!(err.to_string(), "prd.json:2:19: expected value");
}

#[test]
fn a_wrong_passes_value_is_located() {
    let text = "{\"userStories\": [\n  {\"id\": \"A\", \"priority\": 1, \"passes\": \"maybe\"}\n]}";
    let err = Prd::parse(Path::new("p.json"), text).unwrap_err();
    let PrdError::Malformed { line, message, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(*line, 2);
    assert!(
        message.contains("expected true, false or \"blocked\""),
        "{message}"
    );
}

#[test]
fn a_missing_field_is_named() {
    let err = Prd::parse(Path::new("p.json"), "{\"userStories\": [{\"id\": \"A\"}]}").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("p.json:1:18: userStories[0]: missing \"priority\" (a number"),
        "{err}"
    );
}

#[test]
fn duplicate_ids_are_refused_at_the_second_one() {
    let text = r#"{"userStories": [{"id": "A", "priority": 1, "passes": false},
            {"id": "A", "priority": 2, "passes": false}]}"#;
    let err = Prd::parse(Path::new("p.json"), text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "p.json:2:20: userStories[1].id: \"A\" is also the id of userStories[0]; each story \
             needs its own id"
    );
}

/// `count` one-line stories, ids `S0`, `S1`, ..., every third one passed.
fn many(count: usize) -> String {
    let stories: Vec<String> = (0..count)
        .map(|i| {
            format!(
                "  {{\"id\": \"S{i}\", \"priority\": {}, \"passes\": {}}}",
                i % 7,
                i % 3 == 0
            )
        })
        .collect();
    format!("{{\"userStories\": [\n{}\n]}}\n", stories.join(",\n"))
}

#[test]
fn a_hundred_thousand_stories_load_with_their_ids_checked() {
    // Correctness only; the load time is measured by `examples/prd_load.rs`.
    let text = many(100_000);
    let prd = Prd::parse(Path::new("p.json"), &text).unwrap();
    assert_eq!(prd.stories().len(), 100_000);
    assert_eq!(prd.counts(), (33_334, 0, 66_666));
    assert_eq!(prd.current().unwrap().id, "S7");
    let repeated = text.replace("\"S99999\"", "\"S5\"");
    let err = Prd::parse(Path::new("p.json"), &repeated).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "p.json:100001:10: userStories[99999].id: \"S5\" is also the id of userStories[5]"
        ),
        "{err}"
    );
}

#[test]
fn the_cache_parses_again_only_when_the_bytes_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prd.json");
    fs::write(&path, SAMPLE).unwrap();
    let mut cache = Cache::default();
    let mut prd = cache.load(&path).unwrap();
    prd.set("US-003", Passes::Yes, None).unwrap();
    cache.save(&prd).unwrap();
    assert_eq!(
        cache.load(&path).unwrap().story("US-003").unwrap().passes,
        Passes::Yes
    );
    // Another writer (the agent), even with a text of the same length: read again.
    let edited = fs::read_to_string(&path).unwrap().replacen(
        "\"passes\": true,\n      \"notes\": \"\"",
        "\"passes\": 1234,\n      \"notes\": \"\"",
        1,
    );
    fs::write(&path, edited).unwrap();
    let err = cache.load(&path).unwrap_err();
    assert!(err.to_string().contains("passes: expected true"), "{err}");
}

#[test]
fn a_byte_order_mark_is_accepted_and_kept() {
    let text = format!("{BOM}{SAMPLE}");
    let mut prd = Prd::parse(Path::new("prd.json"), &text).unwrap();
    assert_eq!(prd.to_text(), text);
    prd.set("US-003", Passes::Yes, Some("done")).unwrap();
    assert!(prd.to_text().starts_with(BOM));
    assert_eq!(prd.to_text().matches(BOM).count(), 1);
    let again = Prd::parse(Path::new("prd.json"), &prd.to_text()).unwrap();
    assert_eq!(again.story("US-003").unwrap().passes, Passes::Yes);
}

#[test]
fn crlf_line_endings_survive_every_rewrite() {
    let text = SAMPLE.replace('\n', "\r\n");
    let mut prd = Prd::parse(Path::new("prd.json"), &text).unwrap();
    // US-003 has no notes: the field is added on a line of its own.
    prd.block("US-003", "blocked by ralph").unwrap();
    prd.set("US-002", Passes::Yes, Some("done")).unwrap();
    let written = prd.to_text();
    assert_eq!(
        written.matches('\n').count(),
        written.matches("\r\n").count()
    );
    assert!(
        written.contains("\"passes\": \"blocked\",\r\n      \"notes\": \"blocked by ralph\"\r\n")
    );
    // The fallback rewrite, taken when an edit in place cannot be trusted, too.
    prd.text = prd
        .text
        .replace("\"passes\": \"blocked\"", "\"passes\" : \"blocked\"");
    prd.value["userStories"][2]["x"] = Value::from(1);
    prd.set("US-003", Passes::No, None).unwrap();
    let written = prd.to_text();
    assert!(written.contains("\"x\": 1"), "{written}");
    assert_eq!(
        written.matches('\n').count(),
        written.matches("\r\n").count()
    );
    assert!(written.ends_with("}\r\n"));
}

#[test]
fn blocking_keeps_a_persons_notes_and_adds_the_reason_after_a_blank_line() {
    let text = r#"{"userStories": [
  {"id": "A", "priority": 1, "passes": false, "notes": "ask Kim about the API"},
  {"id": "B", "priority": 2, "passes": false, "notes": ""},
  {"id": "C", "priority": 3, "passes": false, "notes": ["one", "two"]}
]}"#;
    let mut prd = Prd::parse(Path::new("p.json"), text).unwrap();
    prd.block("A", "blocked by ralph at T: same error").unwrap();
    prd.block("B", "blocked by ralph at T: same error").unwrap();
    prd.block("C", "blocked by ralph").unwrap();
    let again: Value = serde_json::from_str(&prd.to_text()).unwrap();
    let notes = |i: usize| {
        again["userStories"][i]["notes"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        notes(0),
        "ask Kim about the API\n\nblocked by ralph at T: same error"
    );
    assert_eq!(notes(1), "blocked by ralph at T: same error");
    assert_eq!(notes(2), "[\"one\",\"two\"]\n\nblocked by ralph");
    // Blocked again later (after a person reset it): the history stays.
    prd.set("A", Passes::No, None).unwrap();
    prd.block("A", "blocked by ralph at U").unwrap();
    let again = Prd::parse(Path::new("p.json"), &prd.to_text()).unwrap();
    assert!(again.story("A").unwrap().json.contains(
        "ask Kim about the API\\n\\nblocked by ralph at T: same error\\n\\nblocked by ralph at U"
    ));
}

#[test]
fn priorities_may_be_words_or_digits_in_a_string() {
    let text = r#"{"userStories": [
  {"id": "low", "priority": "low", "passes": false},
  {"id": "two", "priority": "2", "passes": false},
  {"id": "medium", "priority": "Medium", "passes": false},
  {"id": "high", "priority": "high", "passes": false},
  {"id": "one", "priority": 1, "passes": false},
  {"id": "half", "priority": 0.5, "passes": false}
]}"#;
    let prd = Prd::parse(Path::new("p.json"), text).unwrap();
    let priority = |id: &str| prd.story(id).unwrap().priority;
    assert_eq!(
        ["low", "two", "medium", "high", "one", "half"].map(priority),
        [3.0, 2.0, 2.0, 1.0, 1.0, 0.5]
    );
    let mut order = Vec::new();
    let mut prd = prd;
    while let Some(story) = prd.current() {
        let id = story.id.clone();
        prd.set(&id, Passes::Yes, None).unwrap();
        order.push(id);
    }
    // Equal priorities go in file order: "2" before "Medium", "high" before 1.
    assert_eq!(order, ["half", "high", "one", "two", "medium", "low"]);
}

/// The message for `text` as the user sees it.
fn error(text: &str) -> String {
    Prd::parse(Path::new("prd.json"), text)
        .unwrap_err()
        .to_string()
}

#[test]
fn messages_name_the_file_the_place_and_what_is_allowed() {
    let story = |priority: &str| {
        format!(
            "{{\n  \"userStories\": [\n    {{\"id\": \"A\", \"priority\": {priority}, \"passes\": false}}\n  ]\n}}\n"
        )
    };
    let cases = [
            ("top-level array", "[\n  {\"id\": \"A\", \"priority\": 1, \"passes\": false}\n]\n".to_owned()),
            ("nested array", "{\"userStories\": [[{\"id\": \"A\", \"priority\": 1, \"passes\": false}]]}".to_owned()),
            ("stories not a list", "{\"userStories\": {\"A\": {}}}".to_owned()),
            ("no userStories", "{\"stories\": []}".to_owned()),
            ("priority 1e309", story("1e309")),
            ("priority 1e308", story("1e308")),
            ("priority beyond 64 bits", story("18446744073709551616")),
            ("priority word", story("\"urgent\"")),
            ("priority digits too large", story("\"99999999999999999999\"")),
            ("priority negative digits", story("\"-1\"")),
            ("priority null", story("null")),
            ("id a number", "{\"userStories\": [{\"id\": 7, \"priority\": 1, \"passes\": false}]}".to_owned()),
            ("passes maybe", "{\"userStories\": [{\"id\": \"A\", \"priority\": 1, \"passes\": \"maybe\"}]}".to_owned()),
            ("criteria not strings", "{\"userStories\": [{\"id\": \"A\", \"priority\": 1, \"passes\": false,\n  \"acceptanceCriteria\": [\"ok\", {\"text\": \"no\"}]}]}".to_owned()),
            ("title a list", "{\"userStories\": [{\"id\": \"A\", \"priority\": 1, \"passes\": false, \"title\": [\"x\"]}]}".to_owned()),
            ("long string", "{\"userStories\": [{\"id\": \"A\", \"priority\": 1, \"passes\": \"this is a long value that goes on and on and on\"}]}".to_owned()),
            ("syntax", "{\n  \"userStories\": [,]\n}".to_owned()),
        ];
    let report: String = cases
        .iter()
        .map(|(name, text)| format!("{name}:\n  {}\n", error(text)))
        .collect();
    insta::assert_snapshot!(report);
}

#[test]
fn a_byte_order_mark_does_not_shift_error_columns() {
    let text =
        "\u{feff}{\"userStories\": [{\"id\": \"A\", \"priority\": true, \"passes\": false}]}";
    assert!(
        error(text).starts_with("prd.json:1:42: userStories[0].priority:"),
        "{}",
        error(text)
    );
}

#[test]
fn bytes_that_are_not_utf8_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prd.json");
    fs::write(&path, b"{\"userStories\": [\n  {\"id\": \"caf\xe9\"}]}").unwrap();
    let err = Prd::load(&path).unwrap_err().to_string();
    assert!(
        err.ends_with("prd.json:2:14: byte 0xe9 is not UTF-8; prd.json must be UTF-8 text"),
        "{err}"
    );
}

#[test]
fn save_replaces_the_file_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prd.json");
    fs::write(&path, SAMPLE).unwrap();
    let mut prd = Prd::load(&path).unwrap();
    prd.set("US-003", Passes::Yes, None).unwrap();
    prd.save().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), prd.to_text());
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(names.len(), 1);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-zA-Z0-9 éü\"\\\\\n]{0,12}".prop_map(Value::String),
        ]
    }

    fn json() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z_-]{1,8}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// `value` written compact, or pretty with `indent`.
    fn format(value: &Value, indent: &str) -> String {
        if indent.is_empty() {
            return serde_json::to_string(value).unwrap();
        }
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        serde::Serialize::serialize(value, &mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    proptest! {
        #[test]
        fn unknown_fields_order_indentation_line_endings_and_notes_survive_a_rewrite(
            extra in prop::collection::vec(("[a-z]{1,6}", json()), 0..4),
            story_extra in prop::collection::vec(("x[a-z]{1,6}", json()), 0..3),
            passes in prop_oneof![Just(Passes::Yes), Just(Passes::No), Just(Passes::Blocked)],
            indent in prop_oneof![Just(""), Just("  "), Just("    "), Just("\t")],
            notes in proptest::option::of("[a-z \"\\\\\n]{0,12}"),
            existing in proptest::option::of(prop_oneof![Just(String::new()), "kim: [a-z \"\\\\\n]{0,8}"]),
            block in any::<bool>(),
            crlf in any::<bool>(),
        ) {
            let mut story = serde_json::Map::new();
            story.insert("id".into(), "S1".into());
            story.insert("priority".into(), 1.into());
            for (k, v) in &story_extra {
                story.insert(k.clone(), v.clone());
            }
            if let Some(existing) = &existing {
                story.insert("notes".into(), existing.as_str().into());
            }
            story.insert("passes".into(), false.into());
            let mut root = serde_json::Map::new();
            for (k, v) in &extra {
                if k != "userStories" {
                    root.insert(k.clone(), v.clone());
                }
            }
            root.insert("userStories".into(), Value::Array(vec![Value::Object(story)]));
            // Built with LF, then (for CRLF) every line break turned into CRLF: JSON escapes
            // the line breaks inside strings, so only the file's own ones change.
            let lf = format(&Value::Object(root), indent) + "\n";
            let eol = if crlf { "\r\n" } else { "\n" };
            let text = lf.replace('\n', eol);
            let mut prd = Prd::parse(Path::new("p.json"), &text).unwrap();
            prop_assert_eq!(prd.to_text(), text.clone());
            let reason = "blocked by ralph: same error";
            let (passes, notes) = match block {
                false => {
                    prd.set("S1", passes, notes.as_deref()).unwrap();
                    (passes, notes)
                }
                true => {
                    prd.block("S1", reason).unwrap();
                    let notes = match &existing {
                        Some(old) if !old.is_empty() => format!("{old}{eol}{eol}{reason}"),
                        _ => reason.to_owned(),
                    };
                    (Passes::Blocked, Some(notes))
                }
            };
            let colon = if indent.is_empty() { ":" } else { ": " };
            let mut expected = lf.replace(
                &format!("\"passes\"{colon}false"),
                &format!("\"passes\"{colon}{}", passes.to_value()),
            );
            match (&notes, &existing) {
                (None, _) => {}
                (Some(notes), Some(old)) => {
                    // Replaced where it stands.
                    expected = expected.replace(
                        &format!("\"notes\"{colon}{}", Value::from(old.as_str())),
                        &format!("\"notes\"{colon}{}", Value::from(notes.as_str())),
                    );
                }
                (Some(notes), None) => {
                    // Added after the story's last field (`passes`), indented like it.
                    let line = expected[..expected.find("\"passes\"").unwrap()]
                        .rsplit('\n')
                        .next()
                        .unwrap()
                        .to_owned();
                    let separator = if indent.is_empty() { ", ".to_owned() } else { format!(",\n{line}") };
                    let passes_text = format!("\"passes\"{colon}{}", passes.to_value());
                    expected = expected.replace(
                        &passes_text,
                        &format!("{passes_text}{separator}\"notes\": {}", Value::from(notes.as_str())),
                    );
                }
            }
            prop_assert_eq!(prd.to_text(), expected.replace('\n', eol));
        }
    }
}
