//! What a process is given: the agent's words with the prompt placed in them, user values
//! quoted for the shell, and the folder and name of the ralph.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The agent's words with `{prompt_file}` and `{prompt}` substituted, and whether the prompt
/// went into them (else it goes to stdin). `prompt_file` is called once, at the first
/// `{prompt_file}`: the real run writes the file there, a dry run only names it.
pub(super) fn agent_words(
    argv: &[String],
    prompt: &str,
    prompt_file: impl FnOnce() -> PathBuf,
) -> (Vec<String>, bool) {
    let mut prompt_file = Some(prompt_file);
    let mut path = None::<String>;
    let mut uses_argv = false;
    let mut words = Vec::with_capacity(argv.len());
    for word in argv {
        let mut word = word.clone();
        if word.contains("{prompt_file}") {
            let path = path.get_or_insert_with(|| {
                let make = prompt_file.take().expect("called once");
                make().display().to_string()
            });
            word = word.replace("{prompt_file}", path);
            uses_argv = true;
        }
        if word.contains("{prompt}") {
            word = word.replace("{prompt}", prompt);
            uses_argv = true;
        }
        words.push(word);
    }
    (words, uses_argv)
}

/// `--max-turns N` for `max_turns`, when the agent is `claude -p` (the one agent whose flag ralph
/// knows) and its command line does not set the flag itself.
pub(super) fn max_turns_args(argv: &[String], max_turns: Option<u64>) -> Vec<String> {
    let set = argv
        .iter()
        .any(|a| a == "--max-turns" || a.starts_with("--max-turns="));
    match max_turns {
        Some(n) if ralph_frontmatter::is_claude_print(argv) && !set => {
            vec!["--max-turns".to_owned(), n.to_string()]
        }
        _ => Vec::new(),
    }
}

/// Where a placeholder stands in a shell command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellContext {
    Unquoted,
    SingleQuoted,
    DoubleQuoted,
}

/// Renders a command's `run` string: each `{{ args.NAME }}` becomes the user's value, escaped for
/// where it stands (bare, inside '...' or inside "..."), so it is always one literal string and
/// never shell code; a value not given becomes nothing. Other placeholders are left as written.
///
/// The quote tracking follows sh's rules for quotes and backslashes; it does not look inside
/// `$(...)` or here-documents, where a placeholder should not be put.
pub(super) fn render_command(run: &str, args: &BTreeMap<String, String>) -> String {
    render_shell(run, |namespace, name| {
        (namespace == "args").then(|| args.get(name).map(String::as_str))
    })
}

/// Renders a shell command line as [`render_command`] does, with `value` saying what each
/// placeholder holds: `None` leaves it as written, `Some(None)` is a value not given (nothing),
/// `Some(Some(text))` is `text` quoted for where it stands. A state hook's `{{ state.KEY }}` and
/// `{{ args.NAME }}` are rendered this way.
pub(super) fn render_shell<'v>(
    run: &str,
    value: impl Fn(&str, &str) -> Option<Option<&'v str>>,
) -> String {
    let mut out = String::with_capacity(run.len());
    let mut context = ShellContext::Unquoted;
    let mut copied = 0;
    for (span, placeholder) in ralph_frontmatter::placeholder_spans(run) {
        let literal = &run[copied..span.start];
        context = advance(context, literal);
        out.push_str(literal);
        copied = span.end;
        let Some(given) = value(placeholder.namespace, placeholder.name) else {
            out.push_str(&run[span]);
            continue;
        };
        // A value not given is nothing at all, as in ralphify: `ls {{ args.dir }}` lists the
        // current folder rather than failing on `ls ''`. A value given empty is an empty word.
        let Some(value) = given else {
            continue;
        };
        match context {
            ShellContext::Unquoted => out.push_str(&quote(value)),
            // Close the quote, add the value quoted on its own, reopen: '...'\''...'.
            ShellContext::SingleQuoted => out.push_str(&value.replace('\'', "'\\''")),
            ShellContext::DoubleQuoted => {
                for c in value.chars() {
                    if matches!(c, '\\' | '$' | '`' | '"') {
                        out.push('\\');
                    }
                    out.push(c);
                }
            }
        }
    }
    out.push_str(&run[copied..]);
    out
}

/// The quote context after `text`, starting in `context`.
fn advance(mut context: ShellContext, text: &str) -> ShellContext {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        context = match (context, c) {
            (ShellContext::Unquoted | ShellContext::DoubleQuoted, '\\') => {
                chars.next();
                context
            }
            (ShellContext::Unquoted, '\'') => ShellContext::SingleQuoted,
            (ShellContext::Unquoted, '"') => ShellContext::DoubleQuoted,
            (ShellContext::SingleQuoted, '\'') | (ShellContext::DoubleQuoted, '"') => {
                ShellContext::Unquoted
            }
            (context, _) => context,
        };
    }
    context
}

/// `value` shell-quoted, so it reaches `sh -c` as one word and never as shell code.
pub(super) fn quote(value: &str) -> String {
    // try_quote fails only on NUL bytes, which no shell can take; drop them.
    shlex::try_quote(value)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| {
            shlex::try_quote(&value.replace('\0', ""))
                .unwrap_or_default()
                .into_owned()
        })
}

/// The folder holding the RALPH.md.
pub(super) fn ralph_dir(ralph_file: &Path) -> PathBuf {
    match ralph_file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `{{ ralph.name }}`: the name of the folder holding the RALPH.md, as in ralphify.
pub(super) fn ralph_name(ralph_file: &Path) -> String {
    let dir = ralph_dir(ralph_file);
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh -c` makes of `run` with `dir` set to `value`: the echoed text.
    fn shell_sees(run: &str, value: &str) -> String {
        let args = BTreeMap::from([("dir".to_owned(), value.to_owned())]);
        let command = render_command(run, &args);
        let out = std::process::Command::new("sh")
            .args(["-c", &command])
            .output()
            .expect("sh runs");
        String::from_utf8(out.stdout).unwrap()
    }

    const NASTY: &str = "a'b\"c $(echo INJECTED) `echo INJECTED` \\ $HOME; echo INJECTED";

    #[test]
    fn an_argument_is_one_literal_word_when_bare() {
        assert_eq!(shell_sees("printf %s {{ args.dir }}", NASTY), NASTY);
    }

    #[test]
    fn an_argument_is_literal_inside_double_quotes() {
        assert_eq!(
            shell_sees("printf %s \"<{{ args.dir }}>\"", NASTY),
            format!("<{NASTY}>")
        );
    }

    #[test]
    fn an_argument_is_literal_inside_single_quotes() {
        assert_eq!(
            shell_sees("printf %s '<{{ args.dir }}>'", NASTY),
            format!("<{NASTY}>")
        );
    }

    #[test]
    fn escaped_quotes_do_not_change_the_context() {
        assert_eq!(
            shell_sees(
                "printf %s \\\" {{ args.dir }} \"\\\"{{ args.dir }}\"",
                NASTY
            ),
            format!("\"{NASTY}\"{NASTY}")
        );
    }

    #[test]
    fn other_placeholders_stay_as_written() {
        let args = BTreeMap::new();
        assert_eq!(
            render_command("echo {{ ralph.iteration }}", &args),
            "echo {{ ralph.iteration }}"
        );
    }

    #[test]
    fn an_empty_argument_is_an_empty_word() {
        assert_eq!(shell_sees("printf '[%s]' {{ args.dir }} x", ""), "[][x]");
    }

    #[test]
    fn a_missing_argument_is_no_word() {
        let command = render_command(
            "printf '[%s]' {{ args.dir }} \"{{ args.dir }}\"",
            &BTreeMap::new(),
        );
        assert_eq!(command, "printf '[%s]'  \"\"");
    }
}
