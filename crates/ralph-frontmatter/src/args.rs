//! User arguments (`ralph run . --dir src tests`): named and positional values matched against a
//! file's declared `args`, with the same errors (and "did you mean") for every front end.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

use crate::RalphFile;

/// Why user values could not be matched to a file's `args`. Each message names what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// `--name` names no declared arg and no placeholder.
    #[error(
        "unknown argument --{name} ({}){}",
        allowed(declared),
        did_you_mean(suggestion)
    )]
    Unknown {
        /// The name given.
        name: String,
        /// The file's declared `args`.
        declared: Vec<String>,
        /// The closest known name, if one is close.
        suggestion: Option<String>,
    },
    /// `--name` came without a value.
    #[error(
        "--{name} needs a value (--{name} VALUE, or --{name}=VALUE for a value that starts with --)"
    )]
    MissingValue {
        /// The name given.
        name: String,
    },
    /// More positional values than declared `args` left to fill.
    #[error(
        "too many values: \"{value}\" has no arg to go to ({})",
        allowed(declared)
    )]
    TooMany {
        /// The first value with nowhere to go (lossily decoded).
        value: String,
        /// The file's declared `args`.
        declared: Vec<String>,
    },
    /// A value is not UTF-8; it would go into a prompt or a command, which are text.
    #[error("argument {arg}: value is not valid UTF-8 (\"{value}\"); user values must be text")]
    NotUtf8 {
        /// `--name` for a named value, the arg's name for a positional one.
        arg: String,
        /// The value, lossily decoded.
        value: String,
    },
}

fn allowed(declared: &[String]) -> String {
    if declared.is_empty() {
        "this RALPH.md declares no args".to_owned()
    } else {
        let names: Vec<String> = declared.iter().map(|a| format!("--{a}")).collect();
        format!("declared args: {}", names.join(", "))
    }
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|near| format!("; did you mean --{near}?"))
        .unwrap_or_default()
}

/// The names of the `{{ args.NAME }}` placeholders in `file`'s prompt and commands.
pub fn used_args(file: &RalphFile) -> Vec<String> {
    std::iter::once(file.body.as_str())
        .chain(file.config.commands.iter().map(|c| c.run.as_str()))
        .flat_map(crate::placeholders)
        .filter(|p| p.namespace == "args")
        .map(|p| p.name.to_owned())
        .collect()
}

/// Matches named values and positional values (in declaration order) against `file`'s
/// declared `args`; the result is what `EngineOptions::args` takes.
///
/// A named value may also go to an undeclared name that a placeholder uses
/// ([`used_args`]), as in ralphify, where `args` is only needed for positional values; a name
/// nothing uses is refused, so a mistyped `--name` is caught. `other_options` are the front
/// end's own option names (without `--`): a mistyped one (`--dryrun`) is suggested too.
pub fn match_args(
    file: &RalphFile,
    named: &[(String, Option<OsString>)],
    positional: &[OsString],
    other_options: &[String],
) -> Result<BTreeMap<String, String>, ArgsError> {
    match_names(
        &file.config.args,
        &used_args(file),
        named,
        positional,
        other_options,
    )
}

fn match_names(
    declared: &[String],
    used: &[String],
    named: &[(String, Option<OsString>)],
    positional: &[OsString],
    other_options: &[String],
) -> Result<BTreeMap<String, String>, ArgsError> {
    let mut values = BTreeMap::new();
    for (name, value) in named {
        if !declared.contains(name) && !used.contains(name) {
            let candidates: Vec<&str> = declared
                .iter()
                .chain(used)
                .chain(other_options)
                .map(String::as_str)
                .collect();
            return Err(ArgsError::Unknown {
                name: name.clone(),
                declared: declared.to_vec(),
                suggestion: crate::nearest(name, &candidates).map(str::to_owned),
            });
        }
        let Some(value) = value else {
            return Err(ArgsError::MissingValue { name: name.clone() });
        };
        values.insert(name.clone(), utf8(&format!("--{name}"), value)?);
    }
    let mut free = declared.iter().filter(|d| !values.contains_key(*d));
    let mut matched = BTreeMap::new();
    for value in positional {
        let Some(name) = free.next() else {
            return Err(ArgsError::TooMany {
                value: value.to_string_lossy().into_owned(),
                declared: declared.to_vec(),
            });
        };
        matched.insert(name.clone(), utf8(name, value)?);
    }
    values.extend(matched);
    Ok(values)
}

/// A user value as text: it goes into the prompt and into commands, which are text.
fn utf8(arg: &str, value: &OsStr) -> Result<String, ArgsError> {
    value
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| ArgsError::NotUtf8 {
            arg: arg.to_owned(),
            value: value.to_string_lossy().into_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> Vec<String> {
        vec!["dir".into(), "focus".into()]
    }

    fn named(pairs: &[(&str, &str)]) -> Vec<(String, Option<OsString>)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), Some(OsString::from(v))))
            .collect()
    }

    fn values(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn named_args_are_matched_by_name() {
        let got = match_names(
            &declared(),
            &[],
            &named(&[("focus", "tests"), ("dir", "src")]),
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(got["dir"], "src");
        assert_eq!(got["focus"], "tests");
    }

    #[test]
    fn positional_args_fill_the_declared_order_after_named_ones() {
        let got = match_names(
            &declared(),
            &[],
            &named(&[("dir", "src")]),
            &values(&["tests"]),
            &[],
        )
        .unwrap();
        assert_eq!(got["dir"], "src");
        assert_eq!(got["focus"], "tests");
    }

    #[test]
    fn unknown_arg_names_the_declared_ones() {
        let err = match_names(&declared(), &[], &named(&[("nope", "x")]), &[], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown argument --nope (declared args: --dir, --focus)"
        );
    }

    #[test]
    fn a_mistyped_name_is_matched_against_args_and_the_front_ends_options() {
        let options = vec!["dry-run".to_owned()];
        let err =
            match_names(&declared(), &[], &named(&[("dryrun", "")]), &[], &options).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown argument --dryrun (declared args: --dir, --focus); did you mean --dry-run?"
        );
        let err = match_names(&[], &[], &named(&[("focsu", "x")]), &[], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown argument --focsu (this RALPH.md declares no args)"
        );
    }

    #[test]
    fn an_undeclared_name_a_placeholder_uses_takes_a_named_value() {
        let text = "---\nagent: x\n---\nWork on {{ args.extra }}\n";
        let file = crate::parse("RALPH.md", text).unwrap().file;
        assert_eq!(used_args(&file), ["extra"]);
        let got = match_args(&file, &named(&[("extra", "x")]), &[], &[]).unwrap();
        assert_eq!(got["extra"], "x");
    }

    #[test]
    fn a_name_without_a_value_says_how_to_give_one() {
        let err = match_names(&declared(), &[], &[("dir".to_owned(), None)], &[], &[]).unwrap_err();
        assert_eq!(err, ArgsError::MissingValue { name: "dir".into() });
    }

    #[test]
    fn too_many_positional_values_is_an_error() {
        let err = match_names(&declared(), &[], &[], &values(&["a", "b", "c"]), &[]).unwrap_err();
        assert!(err.to_string().starts_with("too many values: \"c\""));
    }

    #[test]
    fn a_value_that_is_not_utf8_is_named() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'a', 0xff]);
        let named = [("dir".to_owned(), Some(bad.clone()))];
        let err = match_names(&declared(), &[], &named, &[], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "argument --dir: value is not valid UTF-8 (\"a\u{fffd}\"); user values must be text"
        );
        let err = match_names(&declared(), &[], &[], &[bad], &[]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("argument dir: value is not valid UTF-8")
        );
    }
}
