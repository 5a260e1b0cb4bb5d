use super::*;

fn scan_ansi(text: &[u8]) -> Vec<Finding> {
    let mut scanner = MarkerScanner::skipping_ansi();
    let mut found = Vec::new();
    scanner.feed(text, &mut found);
    scanner.finish(&mut found);
    found
}

fn markers(findings: &[Finding]) -> Vec<&Marker> {
    findings
        .iter()
        .filter_map(|f| match f {
            Finding::Marker(m) => Some(m),
            Finding::Diagnostic(_) => None,
        })
        .collect()
}

/// The only finding, which must be a diagnostic.
fn diagnostic(text: &[u8]) -> Diagnostic {
    match &scan(text)[..] {
        [Finding::Diagnostic(d)] => d.clone(),
        other => panic!("expected one diagnostic, got {other:?}"),
    }
}

/// The only finding, which must be a marker.
fn marker(text: &[u8]) -> Marker {
    match &scan(text)[..] {
        [Finding::Marker(m)] => m.clone(),
        other => panic!("expected one marker, got {other:?}"),
    }
}

fn attrs(m: &Marker) -> Vec<(&str, &str)> {
    m.attrs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[test]
fn state_marker_is_found_with_its_offset() {
    let m = marker(b"hello\n<!-- ralph:state idle -->\n");
    assert_eq!(
        (m.kind.as_str(), m.name.as_str(), m.offset),
        ("state", "idle", 6)
    );
    assert!(m.is_state());
    assert!(m.attrs.is_empty());
}

#[test]
fn attributes_keep_their_order_and_last_duplicate_wins() {
    let m = marker(b"<!-- ralph:state blocked reason=db retry=2 reason=\"no db\" -->");
    assert_eq!(
        attrs(&m),
        [("reason", "db"), ("retry", "2"), ("reason", "no db")]
    );
    assert_eq!(m.attr("reason"), Some("no db"));
    assert_eq!(m.attr("missing"), None);
}

#[test]
fn quoted_value_unescapes_quote_and_backslash() {
    let m = marker(br#"<!-- ralph:state blocked reason="say \"hi\" C:\\tmp" -->"#);
    assert_eq!(m.attr("reason"), Some(r#"say "hi" C:\tmp"#));
}

#[test]
fn kind_name_and_keys_are_case_insensitive_and_reported_lowercase() {
    let m = marker(b"<!--RALPH:State IDLE Reason=Later-->");
    assert_eq!((m.kind.as_str(), m.name.as_str()), ("state", "idle"));
    assert_eq!(attrs(&m), [("reason", "Later")]);
}

#[test]
fn newlines_and_tabs_count_as_whitespace() {
    let m = marker(b"<!--\n\tralph:state\n  blocked\r\n reason=x\n-->");
    assert_eq!((m.name.as_str(), m.attr("reason")), ("blocked", Some("x")));
}

#[test]
fn plain_html_comment_is_neither_marker_nor_diagnostic() {
    assert!(
        scan(b"<!-- note --> <!-- ralph is great --> <!--ralph --> <!-- state idle -->").is_empty()
    );
}

#[test]
fn other_kinds_are_reported_but_are_not_states() {
    let found = scan(b"<!-- ralph:progress step n=3 -->");
    let m = &markers(&found)[0];
    assert_eq!((m.kind.as_str(), m.name.as_str()), ("progress", "step"));
    assert!(!m.is_state());
    assert!(last_state(&found).is_none());
}

#[test]
fn last_state_marker_wins() {
    let found =
        scan(b"<!-- ralph:state blocked --> work <!-- ralph:state idle --> <!-- ralph:note x -->");
    assert_eq!(last_state(&found).map(|m| m.name.as_str()), Some("idle"));
}

#[test]
fn malformed_candidate_is_never_taken_as_a_state() {
    let found = scan(b"<!-- ralph:state idle --> <!-- ralph:state 9x -->");
    assert_eq!(found.len(), 2);
    assert_eq!(last_state(&found).map(|m| m.offset), Some(0));
}

#[test]
fn missing_name_is_a_diagnostic() {
    let d = diagnostic(b"ab<!-- ralph:state -->");
    assert_eq!(d.offset, 2);
    assert_eq!(
        d.message,
        "expected a name after `ralph:state`, found the end of the marker"
    );
}

#[test]
fn name_starting_with_a_digit_is_a_diagnostic() {
    let d = diagnostic(b"<!-- ralph:state 9x -->");
    assert_eq!(d.message, "expected a name after `ralph:state`, found `9`");
}

#[test]
fn kind_glued_to_name_is_a_diagnostic() {
    let d = diagnostic(b"<!-- ralph:state.idle -->");
    assert_eq!(
        d.message,
        "expected whitespace after `ralph:state`, found `.`"
    );
}

#[test]
fn space_after_prefix_is_a_diagnostic() {
    let d = diagnostic(b"<!-- ralph: state idle -->");
    assert_eq!(
        d.message,
        "expected a marker kind after `ralph:`, found whitespace"
    );
}

#[test]
fn unclosed_quote_is_a_diagnostic() {
    let d = diagnostic(b"<!-- ralph:state blocked reason=\"oops -->");
    assert_eq!(d.message, "unclosed quote in the value of `reason`");
}

#[test]
fn unknown_escape_is_a_diagnostic() {
    let d = diagnostic(br#"<!-- ralph:state blocked reason="a\nb" -->"#);
    assert!(d.message.starts_with("invalid escape `\\n`"), "{d}");
}

#[test]
fn attribute_without_equals_is_a_diagnostic() {
    let d = diagnostic(b"<!-- ralph:state blocked reason -->");
    assert_eq!(
        d.message,
        "expected `=` after attribute `reason`, found whitespace"
    );
}

#[test]
fn empty_bare_value_is_a_diagnostic_but_empty_quoted_value_is_not() {
    assert!(
        diagnostic(b"<!-- ralph:state blocked reason= -->")
            .message
            .starts_with("expected a value after `reason=`")
    );
    assert_eq!(
        marker(b"<!-- ralph:state blocked reason=\"\" -->").attr("reason"),
        Some("")
    );
}

#[test]
fn candidate_ends_at_first_close_even_inside_quotes() {
    let found = scan(b"<!-- ralph:state blocked reason=\"a --> b\" --> <!-- ralph:state idle -->");
    assert!(matches!(&found[0], Finding::Diagnostic(d) if d.message.starts_with("unclosed quote")));
    assert_eq!(last_state(&found).map(|m| m.offset), Some(46));
}

#[test]
fn open_inside_a_candidate_does_not_start_another() {
    let found = scan(b"<!-- ralph:state <!-- ralph:state idle -->");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].offset(), 0);
    assert!(matches!(&found[0], Finding::Diagnostic(_)));
}

#[test]
fn marker_of_exactly_4096_bytes_is_a_marker() {
    let head = b"<!-- ralph:state blocked reason=\"";
    let tail = b"\" -->";
    let mut text = head.to_vec();
    text.resize(MAX_MARKER_LEN - tail.len(), b'x');
    text.extend_from_slice(tail);
    assert_eq!(text.len(), MAX_MARKER_LEN);
    assert_eq!(marker(&text).name, "blocked");
}

#[test]
fn marker_over_4kib_is_not_a_marker() {
    let mut text = b"<!-- ralph:state blocked reason=\"".to_vec();
    text.resize(MAX_MARKER_LEN - 4, b'x');
    // The `-->` ends one byte past the limit; a real marker follows.
    text.extend_from_slice(b"\" -->");
    text.extend_from_slice(b"<!-- ralph:state idle -->");
    let found = scan(&text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        found[0],
        Finding::Diagnostic(Diagnostic {
            offset: 0,
            message: "marker is longer than 4096 bytes (no `-->` in time)".to_owned(),
        })
    );
    assert_eq!(last_state(&found).map(|m| m.offset), Some(4097));
}

#[test]
fn marker_nested_in_a_too_long_candidate_is_found() {
    let mut text = b"<!-- ralph:state x ".to_vec();
    text.extend_from_slice(b"<!-- ralph:state idle -->");
    text.resize(5000, b' ');
    let found = scan(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(matches!(&found[0], Finding::Diagnostic(d) if d.offset == 0));
    let found = scan(&[&text[..], b"<!-- ralph:state idle -->"].concat());
    assert_eq!(markers(&found).len(), 1);
}

#[test]
fn unterminated_candidate_is_reported_at_finish() {
    let mut scanner = MarkerScanner::new();
    let mut found = Vec::new();
    scanner.feed(b"text <!-- ralph:state idle", &mut found);
    assert!(found.is_empty());
    scanner.finish(&mut found);
    assert_eq!(
        found,
        [Finding::Diagnostic(Diagnostic {
            offset: 5,
            message: "unterminated marker: no `-->` before the end of the output".to_owned(),
        })]
    );
}

#[test]
fn unterminated_plain_comment_is_not_reported() {
    assert!(scan(b"<!-- note").is_empty());
    assert!(scan(b"<!-- ral").is_empty());
    assert!(scan(b"<!").is_empty());
}

#[test]
fn long_whitespace_before_prefix_makes_no_candidate() {
    let mut text = b"<!--".to_vec();
    text.resize(MAX_MARKER_LEN + 10, b' ');
    text.extend_from_slice(b"ralph:state idle -->");
    assert!(scan(&text).is_empty());
}

#[test]
fn invalid_utf8_in_a_value_is_replaced() {
    let m = marker(b"<!-- ralph:state blocked reason=\"caf\xc3\xa9 \xff\" -->");
    assert_eq!(m.attr("reason"), Some("caf\u{e9} \u{fffd}"));
}

#[test]
fn invalid_utf8_in_a_name_is_a_diagnostic() {
    let d = diagnostic(b"<!-- ralph:state \xff -->");
    assert_eq!(
        d.message,
        "expected a name after `ralph:state`, found `\\xff`"
    );
}

#[test]
fn ansi_escapes_inside_a_marker_are_ignored() {
    let text = b"\x1b[32m<\x1b[0m!-- ralph:\x1b[1mstate\x1b[0m \x1b]0;title\x07idle -\x1b[m->";
    let found = scan_ansi(text);
    let m = &markers(&found)[0];
    assert_eq!((m.name.as_str(), m.offset), ("idle", 5));
}

#[test]
fn plain_scanner_does_not_skip_ansi() {
    let found = scan(b"<!-- ralph:\x1b[1mstate\x1b[0m idle -->");
    assert!(matches!(&found[..], [Finding::Diagnostic(_)]));
}

#[test]
fn osc_payload_is_not_text() {
    assert!(scan_ansi(b"\x1b]0;<!-- ralph:state idle -->\x1b\\").is_empty());
    assert_eq!(scan_ansi(b"\x1b]0;t\x07<!-- ralph:state idle -->").len(), 1);
}

#[test]
fn ansi_escape_split_over_chunks_is_ignored() {
    let text = b"<!-- ralph:\x1b[38;5;12mstate\x1b]8;;http://x\x1b\\ idle -->";
    let mut scanner = MarkerScanner::skipping_ansi();
    let mut found = Vec::new();
    for b in text {
        scanner.feed(&[*b], &mut found);
    }
    scanner.finish(&mut found);
    assert_eq!(found, scan_ansi(text));
    assert_eq!(markers(&found)[0].name, "idle");
}

#[test]
fn byte_by_byte_feeding_finds_what_scan_finds() {
    let text = b"<<!<!-- x --><!-- ralph:state a --> <!-- RALPH:state b k=\"v\" --> <!-- ralph:";
    let mut scanner = MarkerScanner::new();
    let mut found = Vec::new();
    for b in text {
        scanner.feed(&[*b], &mut found);
    }
    scanner.finish(&mut found);
    assert_eq!(found, scan(text));
    assert_eq!(found.len(), 3);
    assert_eq!(scanner.bytes_seen(), text.len() as u64);
}

#[test]
fn scanner_is_reusable_after_finish_and_offsets_continue() {
    let mut scanner = MarkerScanner::new();
    let mut found = Vec::new();
    scanner.feed(b"<!-- ralph:state idle", &mut found);
    scanner.finish(&mut found);
    scanner.feed(b" --><!-- ralph:state idle -->", &mut found);
    scanner.finish(&mut found);
    assert!(matches!(&found[0], Finding::Diagnostic(d) if d.offset == 0));
    assert_eq!(found[1].offset(), 25);
    assert_eq!(found.len(), 2);
}

#[test]
fn carry_stays_bounded_whatever_the_output() {
    let mut scanner = MarkerScanner::skipping_ansi();
    let mut found = Vec::new();
    let chunk = b"<!-- ralph:state idle ".repeat(50);
    for _ in 0..200 {
        scanner.feed(&chunk, &mut found);
        assert!(scanner.carry_capacity() <= MAX_MARKER_LEN);
    }
    // Each too-long candidate is reported once, nested ones included.
    assert!(found.iter().all(|f| matches!(f, Finding::Diagnostic(_))));
}

#[test]
fn display_writes_a_marker_that_scans_back() {
    let m = marker(br#"<!-- ralph:state blocked reason="a \"b\" \\" code=7 empty="" -->"#);
    let text = m.to_string();
    assert_eq!(
        text,
        r#"<!-- ralph:state blocked reason="a \"b\" \\" code=7 empty="" -->"#
    );
    assert_eq!(marker(text.as_bytes()), m);
    let d = diagnostic(b"<!-- ralph:x-->");
    assert_eq!(
        d.to_string(),
        "byte 0: expected a name after `ralph:x`, found the end of the marker"
    );
}
