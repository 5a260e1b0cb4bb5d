//! Errors located in front matter shapes where the YAML's own spans and the text around them
//! disagree, or where the scanner that located them before saphyr-parser lost its place.

use ralph_frontmatter::parse;

fn errors(text: &str) -> Vec<String> {
    match parse("RALPH.md", text) {
        Ok(parsed) => panic!("expected errors, got {parsed:#?}"),
        Err(errors) => errors.errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn a_value_after_a_quoted_string_spanning_lines_is_located_where_it_is_written() {
    let text = "---\nagent: x\nargs: [\"a\n  b\", 5]\n---\n";
    let expected = "expected a name made of letters, digits, `-` and `_` (like \"git-log\")";
    assert_eq!(
        errors(text),
        [
            format!("RALPH.md:3:8: args[0]: {expected}, got \"a b\""),
            format!("RALPH.md:4:7: args[1]: {expected}, got 5"),
        ]
    );
}

#[test]
fn a_key_that_is_a_list_does_not_hide_the_keys_after_it() {
    let text = "---\nagent: x\n? [a, b]\n: c\ntimeout: soon\n---\n";
    let errors = errors(text);
    let timeout = errors.iter().find(|e| e.contains("timeout:"));
    assert!(
        timeout.is_some_and(|e| e.starts_with("RALPH.md:5:10: timeout: expected a duration")),
        "{errors:#?}"
    );
}

#[test]
fn a_key_repeated_under_a_repeated_key_is_not_blamed_first() {
    let text = "---\nagent: x\nidle:\n  max: 1h\nidle:\n  max: 2h\n---\n";
    assert_eq!(
        errors(text),
        ["RALPH.md:5:1: idle: key written twice; first on line 3"]
    );
}

#[test]
fn a_repeated_key_in_a_list_item_is_located() {
    let text =
        "---\nagent: x\ncommands:\n  - # the tests\n    name: a\n    run: b\n    name: c\n---\n";
    assert_eq!(
        errors(text),
        ["RALPH.md:7:5: commands[0].name: key written twice; first on line 5"]
    );
}

#[test]
fn a_repeated_key_before_a_syntax_error_is_reported_as_serde_norway_meets_it() {
    let text = "---\nagent: x\nagent: y\ntimeout: [1m\n---\n";
    assert_eq!(
        errors(text),
        ["RALPH.md:3:1: agent: key written twice; first on line 2"]
    );
}
