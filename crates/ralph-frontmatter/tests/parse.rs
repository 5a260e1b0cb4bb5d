//! Behaviour of `parse`, `render` and `placeholders` through the public API.

use std::time::Duration;

use proptest::prelude::*;
use ralph_frontmatter::{Placeholder, parse, placeholders, render};

fn errors(text: &str) -> Vec<String> {
    match parse("RALPH.md", text) {
        Ok(parsed) => panic!("expected errors, got {parsed:#?}"),
        Err(errors) => errors.errors.iter().map(ToString::to_string).collect(),
    }
}

fn body_of(text: &str) -> String {
    parse("RALPH.md", text).expect("valid file").file.body
}

#[test]
fn minimal_file_gets_the_defaults() {
    let config = parse("RALPH.md", "---\nagent: claude -p\n---\nWork.\n")
        .expect("valid")
        .file
        .config;
    assert_eq!(config.agent_argv, ["claude", "-p"]);
    assert_eq!(config.delay, Duration::ZERO);
    assert_eq!(config.idle, None);
    assert_eq!(config.escalation, None);
    assert_eq!(config.convergence.max_attempts, 6);
    assert!(config.commands.is_empty() && config.args.is_empty() && config.done_when.is_empty());
}

#[test]
fn bom_and_crlf_parse_like_plain_lf() {
    let plain = parse("RALPH.md", "---\nagent: a\n---\nline one\nline two\n").expect("valid");
    let windows = parse(
        "RALPH.md",
        "\u{feff}---\r\nagent: a\r\n---\r\nline one\r\nline two\r\n",
    )
    .expect("valid");
    assert_eq!(plain, windows);
}

#[test]
fn error_display_is_file_line_column_path_message() {
    assert_eq!(
        errors("---\nagent: claude\nidle:\n  delay: 30s\n  backoff: fast\n---\n"),
        ["RALPH.md:5:12: idle.backoff: expected a number >= 1.0, got \"fast\""]
    );
}

#[test]
fn every_error_of_a_file_is_reported_together_in_file_order() {
    let found = errors("---\nmax_iterations: 0\nagent: claude 'x\ncredit: 2\n---\n");
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].starts_with("RALPH.md:2:17: max_iterations:"));
    assert!(found[1].starts_with("RALPH.md:3:8: agent:"));
    assert!(found[2].starts_with("RALPH.md:4:9: credit:"));
}

#[test]
fn unknown_key_suggests_the_nearest_known_key() {
    assert_eq!(
        errors("---\nagent: a\nidle: {max_dealy: 5m}\n---\n"),
        ["RALPH.md:3:8: idle.max_dealy: unknown key; did you mean `max_delay`?"]
    );
}

/// ralphify ignores keys it does not use, and its named ralphs were documented with
/// `description:` and `enabled:`; such a file runs unchanged here, with a warning per key.
#[test]
fn ralphify_description_and_enabled_are_accepted_with_a_warning() {
    let text =
        "---\ndescription: Raise test coverage\nenabled: true\nagent: claude -p\n---\nWork.\n";
    let parsed = parse("RALPH.md", text).expect("a ralphify file parses");
    assert_eq!(parsed.file.config.agent_argv, ["claude", "-p"]);
    let warnings: Vec<String> = parsed.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "RALPH.md:2:1: description: ignored: a ralphify key ralph has no use for",
            "RALPH.md:3:1: enabled: ignored: a ralphify key ralph has no use for",
        ]
    );
    // Their values are never checked: ralphify did not check them either.
    assert!(parse("RALPH.md", "---\nagent: a\ndescription: [1, 2]\n---\n").is_ok());
    // A typo of a real key is still an error.
    assert_eq!(
        errors("---\nagent: a\nmax_iteration: 5\n---\n"),
        ["RALPH.md:3:1: max_iteration: unknown key; did you mean `max_iterations`?"]
    );
}

#[test]
fn missing_agent_points_at_the_opening_delimiter() {
    let found = errors("---\nmax_iterations: 3\n---\n");
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("RALPH.md:1:1: agent: missing required key"));
}

#[test]
fn yaml_syntax_error_is_reported_on_file_lines() {
    let found = errors("---\nagent: a\ncommands:\n  - name: x\n     run: y\n---\n");
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("RALPH.md:5:"), "{found:?}");
}

#[test]
fn idle_is_off_when_absent_and_on_with_defaults_when_empty_or_bare() {
    let idle = |frontmatter: &str| {
        parse("RALPH.md", &format!("---\nagent: a\n{frontmatter}---\n"))
            .expect("valid")
            .file
            .config
            .idle
    };
    assert_eq!(idle(""), None);
    assert_eq!(idle("idle: {}\n"), Some(Default::default()));
    assert_eq!(idle("idle:\n"), Some(Default::default()));
}

#[test]
fn idle_delay_above_the_default_cap_raises_max_delay() {
    let idle = parse("RALPH.md", "---\nagent: a\nidle: {delay: 10m}\n---\n")
        .expect("valid")
        .file
        .config
        .idle
        .expect("idle on");
    assert_eq!(idle.max_delay, Duration::from_secs(600));
}

#[test]
fn bare_numbers_are_seconds_and_strings_are_humantime() {
    let config = parse(
        "RALPH.md",
        "---\nagent: a\ntimeout: 1h 30m\ndelay: 1.5\npty: {idle_timeout: 250ms}\n---\n",
    )
    .expect("valid")
    .file
    .config;
    assert_eq!(config.timeout, Some(Duration::from_secs(5400)));
    assert_eq!(config.delay, Duration::from_millis(1500));
    assert_eq!(config.idle_timeout, Some(Duration::from_millis(250)));
}

/// `idle_timeout` is every agent run's no-output limit; `pty.idle_timeout` its old spelling,
/// which means the same, and is refused beside it.
#[test]
fn idle_timeout_is_one_setting_with_its_old_spelling_under_pty() {
    let idle = |text: &str| {
        parse("RALPH.md", &format!("---\nagent: a\n{text}\n---\n"))
            .map(|parsed| parsed.file.config.idle_timeout)
    };
    assert_eq!(
        idle("idle_timeout: 2m").unwrap(),
        Some(Duration::from_secs(120))
    );
    assert_eq!(idle("idle_timeout: 0").unwrap(), Some(Duration::ZERO));
    assert_eq!(
        idle("pty: {idle_timeout: 45s}").unwrap(),
        Some(Duration::from_secs(45))
    );
    assert_eq!(idle("pty: {}").unwrap(), None);
    let both = idle("idle_timeout: 1m\npty: {idle_timeout: 45s}")
        .unwrap_err()
        .errors[0]
        .to_string();
    assert!(
        both.contains("pty.idle_timeout: is the old spelling of the top-level `idle_timeout`"),
        "{both}"
    );
}

#[test]
fn comment_alone_on_a_line_disappears_with_its_line() {
    assert_eq!(
        body_of("---\nagent: a\n---\nfirst\n<!-- note -->\nsecond\n"),
        "first\nsecond"
    );
}

#[test]
fn ralph_marker_comment_stays_in_the_prompt() {
    assert_eq!(
        body_of("---\nagent: a\n---\nWrite <!-- ralph:state idle --> when done.\n"),
        "Write <!-- ralph:state idle --> when done."
    );
}

#[test]
fn unknown_placeholder_is_a_located_warning_unless_inside_a_note() {
    let parsed = parse(
        "RALPH.md",
        "---\nagent: a\n---\n<!-- {{ commands.old }} -->\nSee {{ commands.tests }}.\n",
    )
    .expect("valid");
    let warnings: Vec<String> = parsed.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        ["RALPH.md:5:5: commands.tests: no command of that name is declared (none are declared)"]
    );
}

#[test]
fn agent_is_split_like_a_shell_would() {
    let config = parse(
        "RALPH.md",
        "---\nagent: agent --prompt \"{prompt}\" --label 'two words'\n---\n",
    )
    .expect("valid")
    .file
    .config;
    assert_eq!(
        config.agent_argv,
        ["agent", "--prompt", "{prompt}", "--label", "two words"]
    );
}

#[test]
fn render_leaves_an_unresolved_placeholder_as_written() {
    assert_eq!(render("a {{  args.x }} b", |_| None), "a {{  args.x }} b");
}

#[test]
fn render_never_scans_inserted_text_again() {
    let out = render("{{ commands.a }}{{ commands.b }}", |p| match p.name {
        "a" => Some("{{ commands.b }}".to_owned()),
        _ => Some("B".to_owned()),
    });
    assert_eq!(out, "{{ commands.b }}B");
}

#[test]
fn placeholders_are_listed_in_order() {
    assert_eq!(
        placeholders("{{ ralph.iteration }} then {{commands.git-log}}"),
        [
            Placeholder {
                namespace: "ralph",
                name: "iteration"
            },
            Placeholder {
                namespace: "commands",
                name: "git-log"
            }
        ]
    );
}

/// Lines of the file as editors count them, after the normalization `parse` applies.
fn file_lines(text: &str) -> Vec<usize> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .split('\n')
        .map(|line| line.chars().count())
        .collect()
}

fn assert_located_within(text: &str) {
    let widths = file_lines(text);
    let reports = match parse("RALPH.md", text) {
        Ok(parsed) => parsed.warnings,
        Err(errors) => {
            assert!(!errors.errors.is_empty(), "an Err without errors");
            errors.errors
        }
    };
    for report in reports {
        assert!(
            report.line >= 1 && report.line <= widths.len(),
            "{report} in {text:?}"
        );
        let width = widths[report.line - 1];
        assert!(
            report.column >= 1 && report.column <= width + 1,
            "{report} (line width {width}) in {text:?}"
        );
    }
}

/// Fragments that make frontmatter-like text: valid and broken YAML, comments, markers.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("---".to_owned()),
        Just("agent: claude -p".to_owned()),
        Just("agent: 'x".to_owned()),
        Just("commands:".to_owned()),
        Just("  - name: tests".to_owned()),
        Just("    run: cargo test".to_owned()),
        Just("- name: a".to_owned()),
        Just("idle:".to_owned()),
        Just("idle: {delay: 30s, backoff: fast".to_owned()),
        Just("  backoff: 0.5".to_owned()),
        Just("  max_dealy: 1m".to_owned()),
        Just("args: [a, b, a]".to_owned()),
        Just("done_when: [\"x\", {y: 1}]".to_owned()),
        Just("max_iterations: 0".to_owned()),
        Just("timeout: -1".to_owned()),
        Just("pty: {mode: x, idle_timeout: .nan}".to_owned()),
        Just("? complex".to_owned()),
        Just("&anchor key: *alias".to_owned()),
        Just("!!str 5: |".to_owned()),
        Just("\"quoted: key\": >-".to_owned()),
        Just("é: ü{{ ralph.x }}".to_owned()),
        Just("<!-- note".to_owned()),
        Just("-->".to_owned()),
        Just("<!-- ralph:state idle -->".to_owned()),
        Just("```".to_owned()),
        Just("{{ commands.nope }} {{ a.b }}".to_owned()),
        Just("\t".to_owned()),
        Just(String::new()),
        "[ -~\t]{0,16}",
        "[a-z_:{}\\[\\], '\"#&*!|>-]{0,12}",
    ]
}

fn document() -> impl Strategy<Value = String> {
    (
        prop::bool::ANY,
        prop::bool::ANY,
        prop::bool::weighted(0.85),
        prop::collection::vec(fragment(), 0..14),
    )
        .prop_map(|(bom, crlf, opened, lines)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = if bom {
                "\u{feff}".to_owned()
            } else {
                String::new()
            };
            // Most inputs open a frontmatter, so that the YAML and body paths are exercised.
            if opened {
                text.push_str("---");
                text.push_str(eol);
            }
            text.push_str(&lines.join(eol));
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_and_locates_every_report_in_the_file(text in document()) {
        assert_located_within(&text);
    }

    #[test]
    fn parse_never_panics_on_any_text(text in any::<String>()) {
        assert_located_within(&text);
        assert_located_within(&format!("---\n{text}\n---\n{text}"));
    }
}

#[test]
fn max_output_takes_bytes_or_a_size_with_a_unit() {
    let sizes = |value: &str| -> u64 {
        let text =
            format!("---\nagent: a\ncommands: [{{name: c, run: x, max_output: {value}}}]\n---\n");
        parse("RALPH.md", &text)
            .expect("valid")
            .file
            .config
            .commands[0]
            .max_output
    };
    assert_eq!(sizes("4096"), 4096);
    assert_eq!(sizes("64KiB"), 64 * 1024);
    assert_eq!(sizes("\"1 MB\""), 1_000_000);
    assert_eq!(sizes("2mib"), 2 * 1024 * 1024);
    assert_eq!(sizes("10B"), 10);
    let default = parse(
        "RALPH.md",
        "---\nagent: a\ncommands: [{name: c, run: x}]\n---\n",
    )
    .expect("valid")
    .file
    .config
    .commands[0]
        .max_output;
    assert_eq!(default, ralph_frontmatter::schema::DEFAULT_MAX_OUTPUT);
}

#[test]
fn a_bad_max_output_is_a_located_error_that_names_the_units() {
    assert_eq!(
        errors("---\nagent: a\ncommands:\n  - name: c\n    run: x\n    max_output: lots\n---\n"),
        [
            "RALPH.md:6:17: commands[0].max_output: expected a size such as \"64KiB\", \"1MB\" \
             or a number of bytes (units: B, KB, KiB, MB, MiB, GB, GiB), got \"lots\""
        ]
    );
    assert_eq!(
        errors("---\nagent: a\ncommands: [{name: c, run: x, max_output: 0}]\n---\n"),
        ["RALPH.md:3:42: commands[0].max_output: expected a size >= 1 bytes, got 0"]
    );
}

/// A caller's own problem is located like the parser's, list items included: at the value,
/// or at the key for a whole setting.
#[test]
fn error_at_and_error_at_key_locate_indexed_fields() {
    let text =
        "---\nagent: x\ncommands:\n  - name: a\n    run: one\n  - name: b\n    run: two\n---\n";
    let value = ralph_frontmatter::error_at("RALPH.md", text, "commands[1].run", "m");
    assert_eq!((value.line, value.column), (7, 10));
    let key = ralph_frontmatter::error_at_key("RALPH.md", text, "commands[1].run", "m");
    assert_eq!((key.line, key.column), (7, 5));
    let item = ralph_frontmatter::error_at_key("RALPH.md", text, "commands[0]", "m");
    assert_eq!((item.line, item.column), (4, 3));
}
