//! The `states` block: each name a new marker meaning, with what the loop does on it.

use std::collections::BTreeMap;

use serde_norway::Value;

use super::{Checker, block, key_text, keys, optional, present, unquotable_args};
use crate::locate::FieldPath;
use crate::schema::{BUILT_IN_STATES, RUN_STATUS_WORDS, STATE_THEN};
use crate::{StateSpec, StateThen, Vocabulary};

/// The `states` mapping: each name a new marker meaning, none of the built-in states.
pub(super) fn states(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
    vocabulary: &Vocabulary,
) -> Option<BTreeMap<String, StateSpec>> {
    let mapping = checker.mapping(path, value)?;
    let end_reasons = vocabulary.end_reasons();
    let mut specs = BTreeMap::new();
    let mut ok = true;
    for (key, entry) in mapping {
        let name = key_text(key);
        let state_path = path.key(&name);
        if BUILT_IN_STATES.contains(&name.as_str()) {
            checker.key_error(
                &state_path,
                format!(
                    "`{name}` is built in and cannot be redefined (built-in states: {})",
                    BUILT_IN_STATES.join(", ")
                ),
            );
            ok = false;
            continue;
        }
        if end_reasons.contains(&name.as_str()) {
            checker.key_error(
                &state_path,
                format!(
                    "`{name}` is a reason ralph gives for ending a run (RUN_ENDED), and a stop in \
                     this state would read as that ending; pick another name (reserved: {})",
                    end_reasons.join(", ")
                ),
            );
            ok = false;
            continue;
        }
        if RUN_STATUS_WORDS.contains(&name.as_str()) {
            checker.key_error(
                &state_path,
                format!(
                    "`{name}` is what `ralph runs` and `ralph status` say of a run {}, and a stop \
                     in this state would read so; pick another name (reserved: {})",
                    match name.as_str() {
                        "killed" => "that ended without a word",
                        _ => "that still runs",
                    },
                    RUN_STATUS_WORDS.join(", ")
                ),
            );
            ok = false;
            continue;
        }
        if let Some(plug) = vocabulary.reserving_plug(&name) {
            checker.key_error(
                &state_path,
                format!("`{name}` is a state `{plug}` gives a meaning to; pick another name"),
            );
            ok = false;
            continue;
        }
        if !is_state_name(&name) {
            checker.key_error(
                &state_path,
                format!(
                    "expected a state name: a lowercase letter, then lowercase letters, digits, \
                     `-` and `_` (markers are read lowercase), got {name:?}"
                ),
            );
            ok = false;
            continue;
        }
        match state(checker, &state_path, entry) {
            Some(spec) => {
                specs.insert(name, spec);
            }
            None => ok = false,
        }
    }
    ok.then_some(specs)
}

/// Whether `name` can be declared: what the marker grammar reads, lowercase.
fn is_state_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// One entry of `states`; with no value, a state that only continues.
fn state(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<StateSpec> {
    let Some(mapping) = block(checker, path, value, &keys("states"))? else {
        return Some(StateSpec {
            run: None,
            timeout: None,
            then: StateThen::Continue,
        });
    };
    let run =
        present(mapping, "run").map(|v| checker.string(&path.key("run"), v, "a shell command"));
    let mut ok = true;
    if let Some(Some(hook)) = &run {
        ok = unquotable_args(checker, &path.key("run"), hook);
    }
    let timeout =
        present(mapping, "timeout").map(|v| checker.duration(&path.key("timeout"), v, true));
    let then = present(mapping, "then").map(|v| checker.choice(&path.key("then"), v, STATE_THEN));
    let wait = present(mapping, "wait").map(|v| checker.duration(&path.key("wait"), v, true));
    let poll = present(mapping, "poll").map(|v| checker.duration(&path.key("poll"), v, true));
    let exit_code = present(mapping, "exit_code")
        .map(|v| checker.integer_in(&path.key("exit_code"), v, 0, 255));
    let (run, then, wait, poll, exit_code) = (
        optional(run),
        optional(then),
        optional(wait),
        optional(poll),
        optional(exit_code),
    );
    let then_name = then.flatten().unwrap_or("continue");
    // A key that only another `then` uses is a mistake, not something to ignore.
    let misplaced = |key: &str, wanted: &str| {
        format!("`{key}` applies only with `then: {wanted}` (`then` is \"{then_name}\")")
    };
    if then.is_some() {
        if present(mapping, "wait").is_some() && then_name != "wait" {
            checker.key_error(&path.key("wait"), misplaced("wait", "wait"));
            ok = false;
        }
        if present(mapping, "exit_code").is_some() && then_name != "stop" {
            checker.key_error(&path.key("exit_code"), misplaced("exit_code", "stop"));
            ok = false;
        }
        if present(mapping, "poll").is_some() && then_name != "hold" {
            checker.key_error(&path.key("poll"), misplaced("poll", "hold"));
            ok = false;
        }
        if then_name == "hold"
            && (present(mapping, "poll").is_none() || present(mapping, "run").is_none())
        {
            checker.value_error(
                &path.key("then"),
                "`then: hold` needs `run`, the check that says when to go on (exit 0), and \
                 `poll`, how often it runs, such as `poll: 1m`"
                    .to_owned(),
            );
            ok = false;
        }
        if then_name == "wait" && present(mapping, "wait").is_none() {
            checker.value_error(
                &path.key("then"),
                "`then: wait` needs `wait`: how long to wait, such as `wait: 30m`".to_owned(),
            );
            ok = false;
        }
    }
    let (run, timeout, then, wait, poll, exit_code) =
        (run?, optional(timeout)?, then?, wait?, poll?, exit_code?);
    if !ok {
        return None;
    }
    let then = match then {
        Some("stop") => StateThen::Stop {
            exit_code: exit_code.and_then(|n| u8::try_from(n).ok()).unwrap_or(0),
        },
        Some("wait") => StateThen::Wait(wait?),
        Some("hold") => StateThen::Hold { poll: poll? },
        _ => StateThen::Continue,
    };
    Some(StateSpec { run, timeout, then })
}
