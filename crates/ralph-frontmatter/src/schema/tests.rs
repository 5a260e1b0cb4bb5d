use std::time::Duration;

use super::*;

fn field<'a>(fields: &'a [Field], name: &str) -> &'a Field {
    fields.iter().find(|f| f.name == name).unwrap()
}

fn duration(fields: &[Field], name: &str) -> Duration {
    match field(fields, name).default {
        Some(DefaultValue::Duration(text)) => humantime::parse_duration(text).unwrap(),
        other => panic!("{name}: not a duration default: {other:?}"),
    }
}

fn integer(fields: &[Field], name: &str) -> u64 {
    match field(fields, name).default {
        Some(DefaultValue::Integer(n)) => n,
        other => panic!("{name}: not an integer default: {other:?}"),
    }
}

fn boolean(fields: &[Field], name: &str) -> bool {
    match field(fields, name).default {
        Some(DefaultValue::Bool(b)) => b,
        other => panic!("{name}: not a bool default: {other:?}"),
    }
}

/// The table's defaults are the ones validation fills in.
#[test]
fn every_output_value_names_one_format() {
    let names: Vec<&str> = crate::OutputFormat::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(names, OUTPUT_FORMATS);
    for name in OUTPUT_FORMATS {
        assert_eq!(
            crate::OutputFormat::from_name(name).map(|f| f.name()),
            Some(*name)
        );
    }
}

#[test]
fn defaults_match_what_validation_fills_in() {
    let text = "---\nagent: x\nidle:\nescalation:\npty:\n---\n";
    let config = crate::parse("RALPH.md", text).unwrap().file.config;
    assert!(config.commands.is_empty() && config.args.is_empty());
    assert!(config.done_when.is_empty());
    assert_eq!(config.delay, duration(FIELDS, "delay"));
    assert!(config.fallback.is_empty());
    assert_eq!(config.fallback_after, duration(FIELDS, "fallback_after"));

    let idle = config.idle.unwrap();
    assert_eq!(idle.delay, duration(IDLE_FIELDS, "delay"));
    assert_eq!(idle.max_delay, duration(IDLE_FIELDS, "max_delay"));
    assert_eq!(
        field(IDLE_FIELDS, "backoff").default,
        Some(DefaultValue::Number(idle.backoff))
    );

    let c = &config.convergence;
    assert_eq!(c.max_attempts, integer(CONVERGENCE_FIELDS, "max_attempts"));
    assert_eq!(c.retry.backoff, duration(CONVERGENCE_FIELDS, "backoff"));
    assert_eq!(
        c.retry.max_backoff,
        duration(CONVERGENCE_FIELDS, "max_backoff")
    );
    assert_eq!(c.feedback, boolean(CONVERGENCE_FIELDS, "feedback"));
    assert_eq!(
        c.check_timeout,
        duration(CONVERGENCE_FIELDS, "check_timeout")
    );

    let text = "---\nagent: x\ncommands: [{name: a, run: b}]\n---\n";
    let command = &crate::parse("RALPH.md", text).unwrap().file.config.commands[0];
    assert_eq!(
        field(COMMAND_FIELDS, "max_output").default,
        Some(DefaultValue::Bytes(command.max_output))
    );

    let e = config.escalation.unwrap();
    match field(ESCALATION_FIELDS, "progress").default {
        Some(DefaultValue::Text(path)) => assert_eq!(e.progress, std::path::Path::new(path)),
        other => panic!("progress: not a path default: {other:?}"),
    }
    assert_eq!(
        e.same_error_limit,
        integer(ESCALATION_FIELDS, "same_error_limit")
    );
    assert_eq!(e.revert, boolean(ESCALATION_FIELDS, "revert"));
    assert_eq!(e.split, boolean(ESCALATION_FIELDS, "split"));

    let pty = config.pty.unwrap();
    assert_eq!(config.idle_timeout, None);
    assert_eq!(
        crate::Config::default_idle_timeout(true),
        duration(PTY_FIELDS, "idle_timeout")
    );
    assert_eq!(
        crate::Config::default_idle_timeout(false),
        duration(FIELDS, "idle_timeout")
    );
    assert_eq!(
        field(PTY_FIELDS, "mode").default,
        Some(DefaultValue::Choice("autonomous"))
    );
    assert_eq!(pty.mode, crate::PtyMode::Autonomous);
}

/// The command timeout's default is the table's, as text and as a `Duration`.
#[test]
fn the_command_timeout_default_is_the_tables() {
    assert_eq!(
        duration(COMMAND_FIELDS, "timeout"),
        default_command_timeout()
    );
    assert_eq!(
        field(COMMAND_FIELDS, "timeout").default,
        Some(DefaultValue::Duration(DEFAULT_COMMAND_TIMEOUT))
    );
    assert!(!default_command_timeout().is_zero());
}

/// `--pty` without a `pty:` block (`PtyConfig::default`) gets what an empty block gets.
#[test]
fn the_pty_default_is_an_empty_block() {
    let text = "---\nagent: x\npty:\n---\n";
    let config = crate::parse("RALPH.md", text).unwrap().file.config;
    assert_eq!(config.pty, Some(crate::PtyConfig::default()));
}

/// Every key the table lists is accepted, so a file the schema allows is not rejected for
/// its keys.
#[test]
fn every_listed_key_is_accepted() {
    for (block, fields) in [
        ("idle", IDLE_FIELDS),
        ("convergence", CONVERGENCE_FIELDS),
        ("escalation", ESCALATION_FIELDS),
        ("pty", PTY_FIELDS),
        ("failure", FAILURE_FIELDS),
        ("rate_limit", RATE_LIMIT_FIELDS),
        ("env", ENV_FIELDS),
        ("sandbox", SANDBOX_FIELDS),
    ] {
        for f in fields {
            let text = format!("---\nagent: x\n{block}:\n  {}:\n---\n", f.name);
            assert!(
                crate::parse("RALPH.md", &text).is_ok(),
                "{block}.{}",
                f.name
            );
        }
    }
    // `notify` alone sends nothing, an error: it needs a webhook or a command.
    for f in FIELDS.iter().filter(|f| !f.required && f.name != "notify") {
        let text = format!("---\nagent: x\n{}:\n---\n", f.name);
        assert!(crate::parse("RALPH.md", &text).is_ok(), "{}", f.name);
    }
}

/// `failure` and `rate_limit` are always on, with the table's defaults, written once.
#[test]
fn failure_and_rate_limit_defaults_come_from_the_table() {
    let config = crate::parse("RALPH.md", "---\nagent: x\n---\n")
        .unwrap()
        .file
        .config;
    let f = config.failure;
    assert_eq!(f.delay, duration(FAILURE_FIELDS, "delay"));
    assert_eq!(f.delay, Duration::from_secs(5));
    assert_eq!(f.max_delay, duration(FAILURE_FIELDS, "max_delay"));
    assert_eq!(
        f.max_consecutive,
        integer(FAILURE_FIELDS, "max_consecutive")
    );
    assert_eq!(
        field(FAILURE_FIELDS, "backoff").default,
        Some(DefaultValue::Number(f.backoff))
    );
    assert_eq!(
        config.rate_limit.max_wait,
        duration(RATE_LIMIT_FIELDS, "max_wait")
    );
    assert_eq!(config.rate_limit.max_wait, Duration::from_secs(6 * 3600));
    assert_eq!((config.max_cost, config.max_runtime), (None, None));
}

/// Every duration default in the tables parses, so `default_duration` never falls back.
#[test]
fn every_duration_default_parses() {
    let blocks = FIELDS.iter().filter_map(|f| match f.kind {
        Kind::Block(fields) | Kind::Table(fields) => Some(fields),
        _ => None,
    });
    for f in blocks.flatten().chain(FIELDS) {
        if let Some(DefaultValue::Duration(text)) = f.default {
            assert!(
                humantime::parse_duration(text).is_ok(),
                "{}: {text}",
                f.name
            );
        }
    }
}

/// A default of a choice is one of its values.
#[test]
fn choice_defaults_are_allowed_values() {
    for f in FIELDS.iter().chain(PTY_FIELDS) {
        if let (Kind::Choice(allowed), Some(DefaultValue::Choice(value))) = (f.kind, f.default) {
            assert!(allowed.contains(&value), "{}", f.name);
        }
    }
}
