//! What a process is given: the agent's words with the prompt placed in them, user values
//! quoted for the shell, and the folder and name of the ralph.

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
