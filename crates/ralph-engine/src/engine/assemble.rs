//! What a process is given: the agent's words with the prompt placed in them, a command's line
//! as the log shows it, and the folder and name of the ralph.

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
            if let Some(make) = prompt_file.take() {
                path = Some(make().display().to_string());
            }
            word = word.replace("{prompt_file}", path.as_deref().unwrap_or_default());
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

/// A command line as the log shows it: the script, or the words quoted as a shell would need.
pub(super) fn shown_command(line: &ralph_frontmatter::CommandLine) -> String {
    match line {
        ralph_frontmatter::CommandLine::Shell(script) => script.clone(),
        ralph_frontmatter::CommandLine::Words(words) => words
            .iter()
            .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
            .collect::<Vec<_>>()
            .join(" "),
    }
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

    #[test]
    fn words_are_shown_quoted() {
        let line = ralph_frontmatter::CommandLine::Words(vec!["ls".into(), "a b".into()]);
        assert_eq!(shown_command(&line), "ls 'a b'");
    }
}
