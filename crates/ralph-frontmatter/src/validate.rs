//! Strict validation of the frontmatter mapping into a [`Config`].
//!
//! Every check records its error and carries on, so one run reports every problem of the file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_norway::{Mapping, Value};

use crate::locate::{FieldPath, Locator, Pos};
use crate::schema::{self, OUTPUT_FORMATS, PTY_MODES};
use crate::suggest::nearest;
use crate::{
    CommandSpec, Config, ConfigError, ConvergenceConfig, EscalationConfig, FailurePolicy,
    IdlePolicy, OutputFormat, PtyConfig, PtyMode, RateLimitConfig, RetryPolicy,
};

/// The keys of a block, from the field table `cargo xtask schema` also reads.
fn keys(block: &str) -> Vec<&'static str> {
    schema::names(schema::nested(block))
}

const DURATION_SYNTAX: &str =
    "a duration such as \"250ms\", \"30s\", \"5m\" or \"1h 30m\" (a bare number is seconds)";

/// Collects errors while the frontmatter is read.
pub(crate) struct Checker<'a> {
    file: &'a str,
    locator: &'a Locator,
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) warnings: Vec<ConfigError>,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(file: &'a str, locator: &'a Locator) -> Self {
        Self {
            file,
            locator,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn located(&self, pos: Pos, path: &FieldPath, message: String) -> ConfigError {
        ConfigError {
            file: self.file.to_owned(),
            line: pos.line,
            column: pos.column,
            path: path.to_string(),
            message,
        }
    }

    fn error_at(&mut self, pos: Pos, path: &FieldPath, message: String) {
        let error = self.located(pos, path, message);
        self.errors.push(error);
    }

    /// An error about the value at `path`.
    fn value_error(&mut self, path: &FieldPath, message: String) {
        let pos = self.locator.value(path);
        self.error_at(pos, path, message);
    }

    /// An error about the key at `path` (unknown or missing keys).
    fn key_error(&mut self, path: &FieldPath, message: String) {
        let pos = self.locator.key(path);
        self.error_at(pos, path, message);
    }

    /// `expected {expected}, got {what was written}`, at the value.
    fn expected(&mut self, path: &FieldPath, value: &Value, expected: &str) {
        let got = self.describe(path, value);
        self.value_error(path, format!("expected {expected}, got {got}"));
    }

    /// The value as the user wrote it: strings quoted, numbers and booleans verbatim, collections
    /// by kind.
    fn describe(&self, path: &FieldPath, value: &Value) -> String {
        match value {
            Value::String(text) => format!("{text:?}"),
            Value::Number(_) | Value::Bool(_) => match self.locator.raw(path) {
                Some(raw) if !raw.is_empty() => raw.to_owned(),
                _ => yaml_scalar(value),
            },
            Value::Null => "no value".to_owned(),
            Value::Sequence(_) => "a list".to_owned(),
            Value::Mapping(_) => "a mapping".to_owned(),
            Value::Tagged(tagged) => format!("a value tagged `{}`", tagged.tag),
        }
    }

    /// Reports every key of `mapping` that is neither in `known` nor in `ignored`, with a
    /// suggestion from `known` when one is close.
    fn unknown_keys(
        &mut self,
        path: &FieldPath,
        mapping: &Mapping,
        known: &[&str],
        ignored: &[&str],
    ) {
        for key in mapping.keys() {
            let name = key_text(key);
            if known.contains(&name.as_str()) || ignored.contains(&name.as_str()) {
                continue;
            }
            let key_path = path.key(&name);
            let message = match nearest(&name, known) {
                Some(suggestion) => format!("unknown key; did you mean `{suggestion}`?"),
                None => format!("unknown key; expected one of: {}", known.join(", ")),
            };
            self.key_error(&key_path, message);
        }
    }

    fn mapping<'v>(&mut self, path: &FieldPath, value: &'v Value) -> Option<&'v Mapping> {
        match value {
            Value::Mapping(mapping) => Some(mapping),
            _ => {
                self.expected(path, value, "a mapping of `key: value` pairs");
                None
            }
        }
    }

    fn string(&mut self, path: &FieldPath, value: &Value, what: &str) -> Option<String> {
        match value {
            Value::String(text) if !text.trim().is_empty() => Some(text.clone()),
            _ => {
                self.expected(path, value, what);
                None
            }
        }
    }

    fn bool(&mut self, path: &FieldPath, value: &Value) -> Option<bool> {
        match value {
            Value::Bool(flag) => Some(*flag),
            // YAML 1.1's other spellings, which ralphify's PyYAML reads as booleans when they
            // are not quoted.
            Value::String(text) if self.locator.raw(path) == Some(text.as_str()) => {
                match text.as_str() {
                    "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
                    "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
                    _ => {
                        self.expected(path, value, "true or false");
                        None
                    }
                }
            }
            _ => {
                self.expected(path, value, "true or false");
                None
            }
        }
    }

    fn integer_at_least(&mut self, path: &FieldPath, value: &Value, min: u64) -> Option<u64> {
        match value.as_u64() {
            Some(n) if n >= min => Some(n),
            _ => {
                self.expected(path, value, &format!("an integer >= {min}"));
                None
            }
        }
    }

    fn number_at_least(&mut self, path: &FieldPath, value: &Value, min: f64) -> Option<f64> {
        match value.as_f64() {
            Some(n) if n.is_finite() && n >= min => Some(n),
            _ => {
                self.expected(path, value, &format!("a number >= {min:.1}"));
                None
            }
        }
    }

    /// A duration; `positive` rejects zero.
    fn duration(&mut self, path: &FieldPath, value: &Value, positive: bool) -> Option<Duration> {
        let parsed = match value {
            Value::Number(number) => number
                .as_f64()
                .filter(|secs| *secs >= 0.0)
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok()),
            Value::String(text) => humantime::parse_duration(text.trim()).ok(),
            _ => None,
        };
        let bound = if positive { " > 0" } else { "" };
        match parsed {
            Some(duration) if !(positive && duration.is_zero()) => Some(duration),
            Some(_) => {
                self.expected(path, value, &format!("a duration{bound}"));
                None
            }
            None if matches!(value, Value::Number(_)) => {
                self.expected(path, value, "a finite number of seconds >= 0");
                None
            }
            None => {
                self.expected(path, value, DURATION_SYNTAX);
                None
            }
        }
    }

    /// One of `allowed`, with a suggestion when the value is close to one.
    fn choice<'k>(
        &mut self,
        path: &FieldPath,
        value: &Value,
        allowed: &[&'k str],
    ) -> Option<&'k str> {
        let listed = allowed
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(" or ");
        if let Value::String(text) = value {
            if let Some(found) = allowed.iter().find(|a| **a == text) {
                return Some(found);
            }
            if let Some(suggestion) = nearest(text, allowed) {
                let got = self.describe(path, value);
                self.value_error(
                    path,
                    format!("expected {listed}, got {got}; did you mean \"{suggestion}\"?"),
                );
                return None;
            }
        }
        self.expected(path, value, &listed);
        None
    }

    /// A name usable in a placeholder: `[A-Za-z0-9_-]+`.
    fn name(&mut self, path: &FieldPath, value: &Value) -> Option<String> {
        match value {
            Value::String(text) if is_valid_name(text) => Some(text.clone()),
            _ => {
                self.expected(
                    path,
                    value,
                    "a name made of letters, digits, `-` and `_` (like \"git-log\")",
                );
                None
            }
        }
    }
}

/// Whether `name` is made of letters, digits, `-` and `_`.
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A mapping key as text, the way the locator records it.
fn key_text(key: &Value) -> String {
    match key {
        Value::String(text) => text.clone(),
        other => yaml_scalar(other),
    }
}

fn yaml_scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => text.clone(),
        Value::Sequence(_) => "a list".to_owned(),
        Value::Mapping(_) => "a mapping".to_owned(),
        Value::Tagged(tagged) => format!("{}", tagged.tag),
    }
}

/// "on line 4", or "on line 4, column 8" when the duplicate sits on the same line (flow style).
fn first_declared(first: Pos, here: Pos) -> String {
    if first.line == here.line {
        format!("on line {}, column {}", first.line, first.column)
    } else {
        format!("on line {}", first.line)
    }
}

/// An optional field's outcome: `Some(None)` when absent, `None` when present but invalid.
fn optional<T>(field: Option<Option<T>>) -> Option<Option<T>> {
    match field {
        None => Some(None),
        Some(value) => value.map(Some),
    }
}

/// Looks up `key` in `mapping`, treating an explicit null as absent.
fn present<'v>(mapping: &'v Mapping, key: &str) -> Option<&'v Value> {
    mapping.get(key).filter(|value| !value.is_null())
}

/// Validates the frontmatter mapping. Returns the config when no error was found.
pub(crate) fn config(checker: &mut Checker<'_>, root: &Mapping, opening: Pos) -> Option<Config> {
    let top = FieldPath::default();
    let known = schema::names(schema::FIELDS);
    for key in schema::IGNORED_RALPHIFY_KEYS {
        if root.contains_key(*key) {
            let path = top.key(key);
            let warning = checker.located(
                checker.locator.key(&path),
                &path,
                "ignored: a ralphify key ralph has no use for".to_owned(),
            );
            checker.warnings.push(warning);
        }
    }
    checker.unknown_keys(&top, root, &known, schema::IGNORED_RALPHIFY_KEYS);

    let agent_path = top.key("agent");
    let agent = match root.get("agent") {
        None => {
            checker.error_at(
                opening,
                &agent_path,
                "missing required key: add the agent command line, such as \
                 `agent: claude -p --dangerously-skip-permissions`"
                    .to_owned(),
            );
            None
        }
        Some(value) => agent(checker, &agent_path, value),
    };

    let commands = match present(root, "commands") {
        Some(value) => commands(checker, &top.key("commands"), value),
        None => Some(Vec::new()),
    };
    let args = match present(root, "args") {
        Some(value) => args(checker, &top.key("args"), value),
        None => Some(Vec::new()),
    };
    let credit = present(root, "credit").map(|v| checker.bool(&top.key("credit"), v));
    let max_iterations = present(root, "max_iterations")
        .map(|v| checker.integer_at_least(&top.key("max_iterations"), v, 1));
    let timeout = present(root, "timeout").map(|v| checker.duration(&top.key("timeout"), v, true));
    let delay = present(root, "delay").map(|v| checker.duration(&top.key("delay"), v, false));
    let idle = root.get("idle").map(|v| idle(checker, &top.key("idle"), v));
    let done_when = match present(root, "done_when") {
        Some(value) => done_when(checker, &top.key("done_when"), value),
        None => Some(Vec::new()),
    };
    let convergence = match present(root, "convergence") {
        Some(value) => convergence(checker, &top.key("convergence"), value),
        None => Some(ConvergenceConfig::default()),
    };
    let escalation = root
        .get("escalation")
        .map(|v| escalation(checker, &top.key("escalation"), v));
    let pty = root.get("pty").map(|v| pty(checker, &top.key("pty"), v));
    let output = present(root, "output").map(|v| {
        checker
            .choice(&top.key("output"), v, OUTPUT_FORMATS)
            .map(|format| match format {
                "text" => OutputFormat::Text,
                _ => OutputFormat::ClaudeStreamJson,
            })
    });
    let failure = failure(checker, &top.key("failure"), root.get("failure"));
    let rate_limit = rate_limit(checker, &top.key("rate_limit"), root.get("rate_limit"));
    let max_cost =
        present(root, "max_cost").map(|v| checker.number_at_least(&top.key("max_cost"), v, 0.0));
    let max_runtime =
        present(root, "max_runtime").map(|v| checker.duration(&top.key("max_runtime"), v, true));

    let ((agent, agent_argv), commands, args, done_when, convergence) =
        (agent?, commands?, args?, done_when?, convergence?);
    let (failure, rate_limit) = (failure?, rate_limit?);
    Some(Config {
        agent,
        agent_argv,
        commands,
        args,
        credit: optional(credit)?,
        max_iterations: optional(max_iterations)?,
        timeout: optional(timeout)?,
        delay: optional(delay)?.unwrap_or(Duration::ZERO),
        idle: optional(idle)?,
        done_when,
        convergence,
        escalation: optional(escalation)?,
        pty: optional(pty)?,
        output: optional(output)?,
        failure,
        rate_limit,
        max_cost: optional(max_cost)?,
        max_runtime: optional(max_runtime)?,
    })
}

fn agent(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
) -> Option<(String, Vec<String>)> {
    let line = checker.string(path, value, "the agent command line, such as \"claude -p\"")?;
    match shlex::split(&line) {
        None => {
            checker.value_error(
                path,
                format!(
                    "cannot split {line:?} into words: a quote is never closed \
                     (or a backslash ends the line)"
                ),
            );
            None
        }
        Some(argv) if argv.is_empty() => {
            checker.value_error(path, format!("{line:?} holds no command"));
            None
        }
        Some(argv) => Some((line, argv)),
    }
}

fn commands(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
) -> Option<Vec<CommandSpec>> {
    let Value::Sequence(items) = value else {
        checker.expected(path, value, "a list of `{name, run}` entries");
        return None;
    };
    let mut specs = Vec::new();
    let mut ok = true;
    let mut first_seen: HashMap<String, Pos> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let item_path = path.index(index);
        let Some(entry) = checker.mapping(&item_path, item) else {
            ok = false;
            continue;
        };
        checker.unknown_keys(&item_path, entry, &keys("commands"), &[]);
        let name_path = item_path.key("name");
        let name = match entry.get("name") {
            Some(name) => checker.name(&name_path, name),
            None => {
                checker.key_error(
                    &name_path,
                    "missing required key: the name used in `{{ commands.NAME }}`".to_owned(),
                );
                None
            }
        };
        if let Some(name) = &name {
            let here = checker.locator.value(&name_path);
            match first_seen.get(name) {
                Some(first) => {
                    let first = first_declared(*first, here);
                    checker.value_error(
                        &name_path,
                        format!("duplicate command name {name:?}, first declared {first}"),
                    );
                    ok = false;
                }
                None => {
                    first_seen.insert(name.clone(), here);
                }
            }
        }
        let run_path = item_path.key("run");
        let run = match entry.get("run") {
            Some(run) => checker.string(&run_path, run, "a shell command"),
            None => {
                checker.key_error(
                    &run_path,
                    "missing required key: the shell command to run".to_owned(),
                );
                None
            }
        };
        let timeout = present(entry, "timeout")
            .map(|timeout| checker.duration(&item_path.key("timeout"), timeout, true));
        match (name, run, optional(timeout)) {
            (Some(name), Some(run), Some(timeout)) => {
                specs.push(CommandSpec { name, run, timeout })
            }
            _ => ok = false,
        }
    }
    ok.then_some(specs)
}

fn args(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<Vec<String>> {
    let Value::Sequence(items) = value else {
        checker.expected(
            path,
            value,
            "a list of argument names, such as [dir, focus]",
        );
        return None;
    };
    let mut names = Vec::new();
    let mut ok = true;
    let mut first_seen: HashMap<String, Pos> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let item_path = path.index(index);
        let Some(name) = checker.name(&item_path, item) else {
            ok = false;
            continue;
        };
        let here = checker.locator.value(&item_path);
        if let Some(first) = first_seen.get(&name) {
            let first = first_declared(*first, here);
            checker.value_error(
                &item_path,
                format!("duplicate argument name {name:?}, first declared {first}"),
            );
            ok = false;
            continue;
        }
        first_seen.insert(name.clone(), here);
        names.push(name);
    }
    ok.then_some(names)
}

fn done_when(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<Vec<String>> {
    let items = match value {
        Value::Sequence(items) => items,
        Value::String(text) => {
            let got = checker.describe(path, value);
            checker.value_error(
                path,
                format!(
                    "expected a list of shell commands, got {got}; write `done_when: [{text:?}]`"
                ),
            );
            return None;
        }
        _ => {
            checker.expected(path, value, "a list of shell commands");
            return None;
        }
    };
    let mut commands = Vec::new();
    let mut ok = true;
    for (index, item) in items.iter().enumerate() {
        match checker.string(&path.index(index), item, "a shell command") {
            Some(command) => commands.push(command),
            None => ok = false,
        }
    }
    ok.then_some(commands)
}

/// A block that may be written as `key:` with no value, meaning "on, with the defaults".
fn block<'v>(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &'v Value,
    known: &[&str],
) -> Option<Option<&'v Mapping>> {
    if value.is_null() {
        return Some(None);
    }
    let Value::Mapping(mapping) = value else {
        checker.expected(
            path,
            value,
            "a mapping of `key: value` pairs (or no value at all, for the defaults)",
        );
        return None;
    };
    checker.unknown_keys(path, mapping, known, &[]);
    Some(Some(mapping))
}

fn idle(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<IdlePolicy> {
    let defaults = IdlePolicy::default();
    let Some(mapping) = block(checker, path, value, &keys("idle"))? else {
        return Some(defaults);
    };
    let delay = present(mapping, "delay")
        .map(|v| checker.duration(&path.key("delay"), v, true))
        .unwrap_or(Some(defaults.delay));
    let backoff = present(mapping, "backoff")
        .map(|v| checker.number_at_least(&path.key("backoff"), v, 1.0))
        .unwrap_or(Some(defaults.backoff));
    let max_delay = present(mapping, "max_delay")
        .map(|v| {
            checker
                .duration(&path.key("max_delay"), v, true)
                .map(|d| Some((v, d)))
        })
        .unwrap_or(Some(None));
    let max = present(mapping, "max")
        .map(|v| checker.duration(&path.key("max"), v, true).map(Some))
        .unwrap_or(Some(None));
    let max_delay = capped_at_least(
        checker,
        &path.key("max_delay"),
        max_delay?,
        delay?,
        defaults.max_delay,
        "idle.delay",
    );
    let (delay, backoff, max_delay, max) = (delay?, backoff?, max_delay?, max?);
    Some(IdlePolicy {
        delay,
        backoff,
        max_delay,
        max,
    })
}

/// A cap that must be at least `base`. When the cap was left out, it defaults to `default`, raised
/// to `base` if `base` is larger: a user who asks for a long first wait gets it.
fn capped_at_least(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    cap: Option<(&Value, Duration)>,
    base: Duration,
    default: Duration,
    base_name: &str,
) -> Option<Duration> {
    match cap {
        None => Some(default.max(base)),
        Some((_, cap)) if cap >= base => Some(cap),
        Some((value, _)) => {
            let got = checker.describe(path, value);
            checker.value_error(
                path,
                format!(
                    "expected a duration >= {base_name} ({}), got {got}",
                    humantime::format_duration(base)
                ),
            );
            None
        }
    }
}

/// The `failure` block, always on: absent or empty, it has the field table's defaults.
fn failure(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: Option<&Value>,
) -> Option<FailurePolicy> {
    let fields = schema::FAILURE_FIELDS;
    let mapping = match value {
        Some(value) => block(checker, path, value, &keys("failure"))?,
        None => None,
    };
    let get = |key: &str| mapping.and_then(|m| present(m, key));
    let delay = get("delay")
        .map(|v| checker.duration(&path.key("delay"), v, true))
        .unwrap_or(Some(schema::default_duration(fields, "delay")));
    let backoff = get("backoff")
        .map(|v| checker.number_at_least(&path.key("backoff"), v, 1.0))
        .unwrap_or(Some(schema::default_number(fields, "backoff")));
    let max_delay = get("max_delay")
        .map(|v| {
            checker
                .duration(&path.key("max_delay"), v, true)
                .map(|d| Some((v, d)))
        })
        .unwrap_or(Some(None));
    let max_consecutive = get("max_consecutive")
        .map(|v| checker.integer_at_least(&path.key("max_consecutive"), v, 1))
        .unwrap_or(Some(schema::default_integer(fields, "max_consecutive")));
    let max_delay = capped_at_least(
        checker,
        &path.key("max_delay"),
        max_delay?,
        delay?,
        schema::default_duration(fields, "max_delay"),
        "failure.delay",
    );
    Some(FailurePolicy {
        delay: delay?,
        backoff: backoff?,
        max_delay: max_delay?,
        max_consecutive: max_consecutive?,
    })
}

/// The `rate_limit` block, always on.
fn rate_limit(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: Option<&Value>,
) -> Option<RateLimitConfig> {
    let mapping = match value {
        Some(value) => block(checker, path, value, &keys("rate_limit"))?,
        None => None,
    };
    let max_wait = mapping
        .and_then(|m| present(m, "max_wait"))
        .map(|v| checker.duration(&path.key("max_wait"), v, true))
        .unwrap_or(Some(schema::default_duration(
            schema::RATE_LIMIT_FIELDS,
            "max_wait",
        )));
    Some(RateLimitConfig {
        max_wait: max_wait?,
    })
}

fn convergence(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
) -> Option<ConvergenceConfig> {
    let defaults = ConvergenceConfig::default();
    let Some(mapping) = block(checker, path, value, &keys("convergence"))? else {
        return Some(defaults);
    };
    let max_attempts = present(mapping, "max_attempts")
        .map(|v| checker.integer_at_least(&path.key("max_attempts"), v, 1))
        .unwrap_or(Some(defaults.max_attempts));
    let backoff = present(mapping, "backoff")
        .map(|v| checker.duration(&path.key("backoff"), v, true))
        .unwrap_or(Some(defaults.retry.backoff));
    let max_backoff = present(mapping, "max_backoff")
        .map(|v| {
            checker
                .duration(&path.key("max_backoff"), v, true)
                .map(|d| Some((v, d)))
        })
        .unwrap_or(Some(None));
    let feedback = present(mapping, "feedback")
        .map(|v| checker.bool(&path.key("feedback"), v))
        .unwrap_or(Some(defaults.feedback));
    let check_timeout = present(mapping, "check_timeout")
        .map(|v| checker.duration(&path.key("check_timeout"), v, true))
        .unwrap_or(Some(defaults.check_timeout));
    let max_backoff = capped_at_least(
        checker,
        &path.key("max_backoff"),
        max_backoff?,
        backoff?,
        defaults.retry.max_backoff,
        "convergence.backoff",
    );
    let (max_attempts, backoff, max_backoff, feedback, check_timeout) = (
        max_attempts?,
        backoff?,
        max_backoff?,
        feedback?,
        check_timeout?,
    );
    Some(ConvergenceConfig {
        max_attempts,
        retry: RetryPolicy {
            backoff,
            max_backoff,
        },
        feedback,
        check_timeout,
    })
}

fn escalation(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
) -> Option<EscalationConfig> {
    let mut config = EscalationConfig {
        prd: None,
        progress: PathBuf::from("progress.txt"),
        same_error_limit: 3,
        revert: true,
    };
    let Some(mapping) = block(checker, path, value, &keys("escalation"))? else {
        return Some(config);
    };
    let mut ok = true;
    if let Some(v) = present(mapping, "prd") {
        match checker.string(&path.key("prd"), v, "a path to a prd.json file") {
            Some(prd) => config.prd = Some(PathBuf::from(prd)),
            None => ok = false,
        }
    }
    if let Some(v) = present(mapping, "progress") {
        match checker.string(&path.key("progress"), v, "a path to a progress file") {
            Some(progress) => config.progress = PathBuf::from(progress),
            None => ok = false,
        }
    }
    if let Some(v) = present(mapping, "same_error_limit") {
        match checker.integer_at_least(&path.key("same_error_limit"), v, 1) {
            Some(limit) => config.same_error_limit = limit,
            None => ok = false,
        }
    }
    if let Some(v) = present(mapping, "revert") {
        match checker.bool(&path.key("revert"), v) {
            Some(revert) => config.revert = revert,
            None => ok = false,
        }
    }
    ok.then_some(config)
}

fn pty(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<PtyConfig> {
    let mut config = PtyConfig {
        mode: PtyMode::Autonomous,
        idle_timeout: Duration::from_secs(30),
    };
    let Some(mapping) = block(checker, path, value, &keys("pty"))? else {
        return Some(config);
    };
    let mut ok = true;
    if let Some(v) = present(mapping, "mode") {
        match checker.choice(&path.key("mode"), v, PTY_MODES) {
            Some("interactive") => config.mode = PtyMode::Interactive,
            Some(_) => config.mode = PtyMode::Autonomous,
            None => ok = false,
        }
    }
    if let Some(v) = present(mapping, "idle_timeout") {
        match checker.duration(&path.key("idle_timeout"), v, true) {
            Some(timeout) => config.idle_timeout = timeout,
            None => ok = false,
        }
    }
    ok.then_some(config)
}
