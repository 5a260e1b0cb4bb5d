use super::*;

fn path(text: &str) -> FieldPath {
    let mut segs = Vec::new();
    for part in text.split('.') {
        let (name, rest) = part.split_once('[').unwrap_or((part, ""));
        if !name.is_empty() {
            segs.push(Seg::Key(name.to_owned()));
        }
        if let Some(index) = rest.strip_suffix(']') {
            segs.push(Seg::Index(index.parse().unwrap()));
        }
    }
    FieldPath(segs)
}

fn at(line: usize, column: usize) -> Pos {
    Pos { line, column }
}

fn locator(text: &str) -> Locator {
    Locator::new(text, 2, at(1, 1))
}

#[test]
fn text_inside_a_value_is_located_from_the_value_on() {
    let text = "agent: x {{ args.x }}\ncommands:\n  - name: a\n    run: |\n      \
                cat {{ args.x }}\n      echo {{ args.x }}\n";
    let loc = locator(text);
    let run = path("commands[0].run");
    assert_eq!(loc.within_value(&run, "{{ args.x }}", 0), at(6, 11));
    assert_eq!(loc.within_value(&run, "{{ args.x }}", 1), at(7, 12));
    // Not found as written: the value's own position.
    assert_eq!(loc.within_value(&run, "{{ args.y }}", 0), loc.value(&run));
}

#[test]
fn block_mapping_values_are_located_on_file_lines() {
    let loc = locator("agent: claude -p\nmax_iterations: 5\n");
    assert_eq!(loc.key(&path("agent")), at(2, 1));
    assert_eq!(loc.value(&path("agent")), at(2, 8));
    assert_eq!(loc.value(&path("max_iterations")), at(3, 17));
    assert_eq!(loc.raw(&path("max_iterations")), Some("5"));
}

#[test]
fn nested_block_mapping_is_located() {
    let loc = locator("idle:\n  delay: 30s   # first wait\n  backoff: fast\n");
    assert_eq!(loc.key(&path("idle.backoff")), at(4, 3));
    assert_eq!(loc.value(&path("idle.backoff")), at(4, 12));
    assert_eq!(loc.raw(&path("idle.delay")), Some("30s"));
    assert_eq!(loc.value(&path("idle")), at(3, 3));
}

#[test]
fn sequence_of_mappings_is_located_per_item() {
    let text = "commands:\n  - name: tests\n    run: cargo test\n  - name: lint\n    run: x\n";
    let loc = locator(text);
    assert_eq!(loc.key(&path("commands[0]")), at(3, 3));
    assert_eq!(loc.value(&path("commands[0].name")), at(3, 11));
    assert_eq!(loc.value(&path("commands[1].run")), at(6, 10));
    assert_eq!(loc.key(&path("commands[1]")), at(5, 3));
}

#[test]
fn sequence_at_the_keys_indentation_is_located() {
    let loc = locator("commands:\n- name: a\n  run: b\nargs:\n- x\n- y\n");
    assert_eq!(loc.value(&path("commands[0].run")), at(4, 8));
    assert_eq!(loc.value(&path("args[1]")), at(7, 3));
}

#[test]
fn flow_mapping_on_one_line_is_located() {
    let loc = locator("idle: {delay: 30s, backoff: \"fast\", max: 1h}\n");
    assert_eq!(loc.key(&path("idle.backoff")), at(2, 20));
    assert_eq!(loc.value(&path("idle.backoff")), at(2, 29));
    assert_eq!(loc.raw(&path("idle.backoff")), Some("\"fast\""));
    assert_eq!(loc.value(&path("idle.max")), at(2, 42));
}

#[test]
fn flow_sequence_items_are_located() {
    let loc = locator("args: [dir, focus]\ndone_when: ['cargo test', \"make\"]\n");
    assert_eq!(loc.value(&path("args[1]")), at(2, 13));
    assert_eq!(loc.value(&path("done_when[1]")), at(3, 27));
}

#[test]
fn flow_collection_spanning_lines_is_located() {
    let loc = locator("idle: {\n  delay: 1m,\n  max: 2h\n}\ntimeout: 5m\n");
    assert_eq!(loc.value(&path("idle.max")), at(4, 8));
    assert_eq!(loc.value(&path("timeout")), at(6, 10));
}

#[test]
fn block_scalar_lines_are_skipped() {
    let loc = locator("agent: |\n  claude -p\n  --verbose\ntimeout: 5m\n");
    assert_eq!(loc.value(&path("agent")), at(2, 8));
    assert_eq!(loc.value(&path("timeout")), at(5, 10));
}

#[test]
fn quoted_keys_are_unquoted() {
    let loc = locator("\"agent\": x\n'max_iterations': 3\n");
    assert_eq!(loc.value(&path("max_iterations")), at(3, 19));
}

#[test]
fn unknown_path_falls_back_to_its_parent() {
    let loc = locator("idle:\n  delay: 30s\n");
    assert_eq!(loc.value(&path("idle.max")), at(2, 1));
    assert_eq!(loc.value(&path("pty.mode")), at(2, 1));
}

#[test]
fn columns_count_characters_not_bytes() {
    let loc = locator("agent: \"é\"\ntimeout: x\n");
    assert_eq!(loc.value(&path("timeout")), at(3, 10));
    let loc = locator("done_when: [\"é\", x]\n");
    assert_eq!(loc.value(&path("done_when[1]")), at(2, 18));
}

#[test]
fn repeated_key_is_reported_with_both_positions() {
    let loc = locator("agent: a\nidle:\n  delay: 1s\n  delay: 2s\n");
    assert_eq!(
        loc.duplicates(),
        [Duplicate {
            path: path("idle.delay"),
            first: at(4, 3),
            again: at(5, 3)
        }]
    );
}

#[test]
fn path_is_displayed_with_dots_and_indices() {
    assert_eq!(path("commands[1].name").to_string(), "commands[1].name");
    assert_eq!(FieldPath::default().to_string(), "frontmatter");
}

// The shapes below are where spans and the text around them disagree, or where the scanner this
// module replaced lost its place.

#[test]
fn a_block_scalars_value_is_its_indicator_not_its_first_line() {
    let loc = locator("agent: >-  # folded\n\n  claude -p\nrun: |\ntimeout: 5m\n");
    assert_eq!(loc.value(&path("agent")), at(2, 8));
    // Empty content: the indicator still, and the next key where it is.
    assert_eq!(loc.value(&path("run")), at(5, 6));
    assert_eq!(loc.value(&path("timeout")), at(6, 10));
}

#[test]
fn a_block_scalar_item_is_located_at_its_indicator_and_its_dash() {
    let loc = locator("done_when:\n  - |\n    make test\n  - x\n");
    assert_eq!(loc.value(&path("done_when[0]")), at(3, 5));
    assert_eq!(loc.key(&path("done_when[0]")), at(3, 3));
    assert_eq!(loc.key(&path("done_when[1]")), at(5, 3));
    assert_eq!(loc.value(&path("done_when")), at(3, 3));
}

#[test]
fn an_items_dash_may_stand_alone_on_the_line_above() {
    let text = "commands:\n  - # tests first\n    name: tests\n  -\n\n    name: lint\n";
    let loc = locator(text);
    assert_eq!(loc.key(&path("commands[0]")), at(3, 3));
    assert_eq!(loc.value(&path("commands[0].name")), at(4, 11));
    assert_eq!(loc.key(&path("commands[1]")), at(5, 3));
    assert_eq!(loc.value(&path("commands[1]")), at(7, 5));
}

#[test]
fn nested_sequences_on_one_line_have_a_dash_each() {
    let loc = locator("args:\n- - a\n  - b\n- c\n");
    assert_eq!(loc.key(&path("args[0]")), at(3, 1));
    assert_eq!(loc.key(&path("args[0]").index(0)), at(3, 3));
    assert_eq!(loc.value(&path("args[0]").index(1)), at(4, 5));
    assert_eq!(loc.key(&path("args[1]")), at(5, 1));
}

#[test]
fn anchors_tags_and_aliases_are_stepped_over() {
    let text = "timeout: &t 5m\nidle:\n  max: *t\nmax_iterations: !!int 3\nstop: &s\n  x: 1\n";
    let loc = locator(text);
    assert_eq!(loc.value(&path("timeout")), at(2, 13));
    assert_eq!(loc.raw(&path("timeout")), Some("5m"));
    assert_eq!(loc.value(&path("idle.max")), at(4, 8));
    assert_eq!(loc.raw(&path("idle.max")), Some("*t"));
    assert_eq!(loc.value(&path("max_iterations")), at(5, 23));
    assert_eq!(loc.raw(&path("max_iterations")), Some("3"));
    // An anchored mapping starts below its anchor: at its first key.
    assert_eq!(loc.value(&path("stop")), at(7, 3));
}

#[test]
fn a_key_without_a_value_is_located_at_the_key() {
    let loc = locator("agent:\ntimeout: ~\nargs:\n-\n- x\n");
    assert_eq!(loc.value(&path("agent")), at(2, 1));
    assert_eq!(loc.value(&path("timeout")), at(3, 10));
    assert_eq!(loc.value(&path("args[0]")), at(5, 1));
    assert_eq!(loc.key(&path("args[1]")), at(6, 1));
}

#[test]
fn scalars_are_kept_as_written_quotes_and_escapes_included() {
    let loc = locator("a: 'it''s'\nb: \"\\u00e9\\n\"\nc: yes  # comment\n");
    assert_eq!(loc.raw(&path("a")), Some("'it''s'"));
    assert_eq!(loc.raw(&path("b")), Some("\"\\u00e9\\n\""));
    assert_eq!(loc.raw(&path("c")), Some("yes"));
}

#[test]
fn keys_after_a_quoted_scalar_spanning_lines_are_located() {
    let loc = locator("done_when: [\"a\n  b\", c]\ntimeout: 1m\n");
    assert_eq!(loc.value(&path("done_when[1]")), at(3, 7));
    assert_eq!(loc.value(&path("timeout")), at(4, 10));
}

#[test]
fn a_key_that_is_not_a_scalar_is_stepped_over() {
    let loc = locator("? [a, b]\n: x\ntimeout: 1m\n");
    assert_eq!(loc.value(&path("timeout")), at(4, 10));
    assert!(loc.duplicates().is_empty());
}

#[test]
fn repeated_keys_are_found_per_mapping_in_file_order() {
    let loc = locator("idle: {delay: 1s, delay: 2s}\nagent: a\nagent: b\n");
    let found: Vec<_> = loc
        .duplicates()
        .iter()
        .map(|d| (d.path.to_string(), d.first, d.again))
        .collect();
    assert_eq!(
        found,
        [
            ("idle.delay".to_owned(), at(2, 8), at(2, 19)),
            ("agent".to_owned(), at(3, 1), at(4, 1)),
        ]
    );
    // The same key in two items of a list is no repetition, nor a key under a repeated key.
    let loc = locator("commands:\n- name: a\n- name: b\nidle:\n  max: 1\nidle:\n  max: 2\n");
    let found: Vec<_> = loc
        .duplicates()
        .iter()
        .map(|d| d.path.to_string())
        .collect();
    assert_eq!(found, ["idle"]);
}

#[test]
fn what_comes_before_a_syntax_error_is_located() {
    let loc = locator("agent: a\nagent: b\ntimeout: [1m\n");
    assert_eq!(loc.duplicates().len(), 1);
    assert_eq!(loc.value(&path("agent")), at(3, 8));
    assert_eq!(loc.value(&path("timeout")), at(4, 10));
}

#[test]
fn the_root_is_where_the_content_starts() {
    assert_eq!(locator("# a comment\n\n  - a\n").root(), at(4, 3));
    assert_eq!(locator("# only a comment\n").root(), at(1, 1));
}

#[test]
fn deep_nesting_is_read_without_recursion() {
    let nested = |depth: usize| format!("a: {}{}\nb: x\n", "[".repeat(depth), "]".repeat(depth));
    let loc = locator(&nested(200));
    assert_eq!(loc.value(&path("b")), at(3, 4));
    assert_eq!(loc.value(&path("a[0]")), at(2, 5));
    // Past the parser's limit: an error, no overflow; serde_norway reports it.
    let loc = locator(&nested(100_000));
    assert_eq!(loc.value(&path("a")), at(2, 4));
}
