//! Strict validation of the frontmatter mapping into a [`Config`].
//!
//! Every check records its error and carries on, so one run reports every problem of the file.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_norway::{Mapping, Value};

use crate::DURATION_SYNTAX;
use crate::locate::{FieldPath, Locator, Pos};
use crate::schema::{self, PTY_MODES};
use crate::suggest::nearest;
use crate::{
    CommandSpec, Config, ConfigError, ConvergenceConfig, FailurePolicy, IdlePolicy, OutputFormat,
    PtyConfig, PtyMode, RateLimitConfig, RetryPolicy, Vocabulary,
};

mod env;
mod escalation;
mod fallback;
mod notify;
mod sandbox;
mod states;

/// The keys of a block, from the field table `cargo xtask schema` also reads.
fn keys(block: &str) -> Vec<&'static str> {
    schema::names(schema::nested(block))
}

const BYTE_SIZE_SYNTAX: &str = "a size such as \"64KiB\", \"1MB\" or a number of bytes \
     (units: B, KB, KiB, MB, MiB, GB, GiB)";

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

    fn integer_in(&mut self, path: &FieldPath, value: &Value, min: u64, max: u64) -> Option<u64> {
        match value.as_u64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.expected(path, value, &format!("an integer from {min} to {max}"));
                None
            }
        }
    }

    /// A warning located at the key `path`.
    fn key_warning(&mut self, path: &FieldPath, message: String) {
        let warning = self.located(self.locator.key(path), path, message);
        self.warnings.push(warning);
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

    /// A size in bytes of at least `min`: an integer, or digits with a unit.
    fn byte_size(&mut self, path: &FieldPath, value: &Value, min: u64) -> Option<u64> {
        let parsed = match value {
            Value::Number(number) => number.as_u64(),
            Value::String(text) => parse_byte_size(text),
            _ => None,
        };
        match parsed {
            Some(n) if n >= min => Some(n),
            Some(_) => {
                self.expected(path, value, &format!("a size >= {min} bytes"));
                None
            }
            None => {
                self.expected(path, value, BYTE_SIZE_SYNTAX);
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
            Value::String(text) => crate::parse_duration(text).ok(),
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
                // 1e308 is finite, but past what a duration holds: say the real bound.
                self.expected(
                    path,
                    value,
                    &format!("a number of seconds from 0 to {}", u64::MAX),
                );
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

/// `64KiB`, `1 MB`, `4096`: digits, then an optional unit, case ignored (KB is 1000 bytes, KiB
/// 1024). `None` for anything else, or a size past `u64`.
fn parse_byte_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "kib" => 1 << 10,
        "mb" => 1000 * 1000,
        "mib" => 1 << 20,
        "gb" => 1000 * 1000 * 1000,
        "gib" => 1 << 30,
        _ => return None,
    };
    number.checked_mul(factor)
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
pub(crate) fn config(
    checker: &mut Checker<'_>,
    root: &Mapping,
    opening: Pos,
    vocabulary: &Vocabulary,
) -> Option<Config> {
    let top = FieldPath::default();
    let mut known = schema::names(schema::FIELDS);
    known.extend(vocabulary.section_keys());
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
    let idle_timeout =
        present(root, "idle_timeout").map(|v| checker.duration(&top.key("idle_timeout"), v, false));
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
        .map(|v| escalation::escalation(checker, &top.key("escalation"), v));
    let states = match present(root, "states") {
        Some(value) => states::states(checker, &top.key("states"), value, vocabulary),
        None => Some(BTreeMap::new()),
    };
    let completion_signal = present(root, "completion_signal").map(|v| {
        checker.string(
            &top.key("completion_signal"),
            v,
            "the text the agent writes as <promise>TEXT</promise> when it is done",
        )
    });
    let stop_on_completion_signal = present(root, "stop_on_completion_signal")
        .map(|v| checker.bool(&top.key("stop_on_completion_signal"), v));
    let max_turns =
        present(root, "max_turns").map(|v| checker.integer_at_least(&top.key("max_turns"), v, 1));
    let max_turns_grace = present(root, "max_turns_grace")
        .map(|v| checker.integer_at_least(&top.key("max_turns_grace"), v, 0));
    let pty = root
        .get("pty")
        .map(|v| pty(checker, &top.key("pty"), v, idle_timeout.is_some()));
    let output_names = vocabulary.output_names();
    let output = present(root, "output").map(|v| {
        checker
            .choice(&top.key("output"), v, &output_names)
            .map(str::to_owned)
    });
    // A built-in format, or a plug's adapter by name.
    let (output, output_adapter) = match optional(output) {
        Some(Some(name)) => match OutputFormat::from_name(&name) {
            Some(format) => (Some(Some(format)), Some(None)),
            None => (Some(None), Some(Some(name))),
        },
        Some(None) => (Some(None), Some(None)),
        None => (None, None),
    };
    let failure = failure(checker, &top.key("failure"), root.get("failure"));
    let rate_limit = rate_limit(checker, &top.key("rate_limit"), root.get("rate_limit"));
    let max_cost =
        present(root, "max_cost").map(|v| checker.number_at_least(&top.key("max_cost"), v, 0.0));
    let max_runtime =
        present(root, "max_runtime").map(|v| checker.duration(&top.key("max_runtime"), v, true));
    let env = env::env(checker, &top.key("env"), root.get("env"));
    let sandbox = root
        .get("sandbox")
        .map(|v| sandbox::sandbox(checker, &top.key("sandbox"), v));
    let fallback = fallback::fallback(checker, &top, root, agent.as_ref().map(|(line, _)| line));

    let notify = root
        .get("notify")
        .map(|v| notify::notify(checker, &top.key("notify"), v));

    let ((agent, agent_argv), commands, args, done_when, convergence) =
        (agent?, commands?, args?, done_when?, convergence?);
    let max_turns = optional(max_turns)?;
    if max_turns.is_some() && !crate::is_claude_print(&agent_argv) {
        checker.key_warning(
            &top.key("max_turns"),
            "has no effect: ralph passes it only to `claude -p` (as `--max-turns`); set the \
             agent's own turn limit in `agent`"
                .to_owned(),
        );
    }
    let max_turns_grace = optional(max_turns_grace)?;
    if max_turns_grace.is_some() {
        checker.key_warning(
            &top.key("max_turns_grace"),
            "has no effect: accepted for ralphify compatibility".to_owned(),
        );
    }
    let (failure, rate_limit) = (failure?, rate_limit?);
    let (fallback, fallback_after) = fallback?;
    let (pty, old_idle_timeout) = match optional(pty)? {
        Some((pty, old)) => (Some(pty), old),
        None => (None, None),
    };
    Some(Config {
        agent,
        agent_argv,
        commands,
        args,
        credit: optional(credit)?,
        max_iterations: optional(max_iterations)?,
        timeout: optional(timeout)?,
        idle_timeout: optional(idle_timeout)?.or(old_idle_timeout),
        delay: optional(delay)?.unwrap_or(Duration::ZERO),
        idle: optional(idle)?,
        done_when,
        convergence,
        states: states?,
        completion_signal: optional(completion_signal)?,
        stop_on_completion_signal: optional(stop_on_completion_signal)?.unwrap_or(true),
        max_turns,
        max_turns_grace,
        escalation: optional(escalation)?,
        pty,
        output: output?,
        output_adapter: output_adapter?,
        failure,
        rate_limit,
        fallback,
        fallback_after,
        max_cost: optional(max_cost)?,
        max_runtime: optional(max_runtime)?,
        env: env?,
        sandbox: optional(sandbox)?.flatten(),
        notify: optional(notify)?,
    })
}

/// An agent command line (`agent`, an item of `fallback`) and its words.
pub(super) fn agent(
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
        if let Some(run) = &run {
            if !unquotable_args(checker, &run_path, run) {
                ok = false;
            }
        }
        let timeout = present(entry, "timeout")
            .map(|timeout| checker.duration(&item_path.key("timeout"), timeout, true));
        let max_output = present(entry, "max_output")
            .map(|max| checker.byte_size(&item_path.key("max_output"), max, 1))
            .unwrap_or(Some(schema::DEFAULT_MAX_OUTPUT));
        match (name, run, optional(timeout), max_output) {
            (Some(name), Some(run), Some(timeout), Some(max_output)) => specs.push(CommandSpec {
                name,
                run,
                timeout,
                max_output,
            }),
            _ => ok = false,
        }
    }
    ok.then_some(specs)
}

/// Refuses every `{{ args.NAME }}` (and a state hook's `{{ state.KEY }}`) in the command `run`
/// that cannot be quoted where it stands,
/// each located at the placeholder; `false` when there was one.
fn unquotable_args(checker: &mut Checker<'_>, path: &FieldPath, run: &str) -> bool {
    let refused = crate::shell::unquotable_args(run);
    for (span, reason) in &refused {
        let written = &run[span.clone()];
        let nth = run[..span.start].matches(written).count();
        let pos = checker.locator.within_value(path, written, nth);
        let (namespace, name) = crate::template::scan(written)
            .first()
            .map_or(("args", "NAME"), |found| {
                (found.placeholder.namespace, found.placeholder.name)
            });
        let placeholder = format!("{{{{ {namespace}.{name} }}}}");
        let explain = reason.explain().replace("{{ args.NAME }}", &placeholder);
        checker.error_at(pos, path, format!("{placeholder} {explain}"));
    }
    refused.is_empty()
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
    Some(IdlePolicy::new(delay, backoff, max_delay).with_max(max))
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
    Some(FailurePolicy::new(
        delay?,
        backoff?,
        max_delay?,
        max_consecutive?,
    ))
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
        retry: RetryPolicy::new(backoff, max_backoff),
        feedback,
        check_timeout,
    })
}

/// The `pty` block, and its `idle_timeout` (the old spelling of the top-level one, refused
/// beside it: `idle_set`).
fn pty(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
    idle_set: bool,
) -> Option<(PtyConfig, Option<Duration>)> {
    let mut config = PtyConfig::default();
    let mut idle_timeout = None;
    let Some(mapping) = block(checker, path, value, &keys("pty"))? else {
        return Some((config, idle_timeout));
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
        let key = path.key("idle_timeout");
        match checker.duration(&key, v, false) {
            Some(_) if idle_set => {
                checker.value_error(
                    &key,
                    "is the old spelling of the top-level `idle_timeout`, which is set too; \
                     keep one"
                        .to_owned(),
                );
                ok = false;
            }
            Some(timeout) => idle_timeout = Some(timeout),
            None => ok = false,
        }
    }
    ok.then_some((config, idle_timeout))
}

#[cfg(test)]
mod tests;
