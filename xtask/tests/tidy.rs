//! `tidy`: the rules ARCHITECTURE.md states, checked mechanically over the source tree, as
//! rust-analyzer's `xtask tidy` does. It reads files as text (no build, no network), so it runs
//! in well under a second as part of `cargo test --workspace`.
//!
//! Each check collects every offence as `path:line: what is wrong` and fails once with all of
//! them. What counts as test code (and is exempt from the library rules): files named
//! `tests.rs` or under a `tests` folder, and items behind `#[cfg(test)]`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The crates below the engine: no I/O, no async runtime, no ralph crate above them. The agent
/// adapters are among them: they read bytes they are given (ralph-process, beside them, spawns).
const BASE_CRATES: &[&str] = &[
    "ralph-marker",
    "ralph-frontmatter",
    "ralph-backoff",
    "ralph-agents",
];

/// The library crates, held to "no `unwrap`/`expect` outside tests".
const LIBRARY_CRATES: &[&str] = &[
    "ralph-marker",
    "ralph-frontmatter",
    "ralph-backoff",
    "ralph-agents",
    "ralph-process",
    "ralph-sandbox",
    "ralph-engine",
    "ralph-escalation",
    "ralph-parallel",
    "ralph-github",
    "ralph-linear",
    "ralph-notify",
];

/// `unwrap()`/`expect(` calls in library code that are invariants rather than errors: a file
/// (relative to the repository), a fragment of the line, and why it cannot fail. Keep it short:
/// an error the caller can handle beats an entry here. An entry that matches nothing fails.
const UNWRAP_ALLOWED: &[(&str, &str, &str)] = &[
    (
        "crates/ralph-engine/src/handle.rs",
        r#".expect("a handle is waited for once")"#,
        "`task` is taken only by `wait` and `detach`, which consume the handle",
    ),
    (
        "crates/ralph-frontmatter/src/shell.rs",
        r#"stack.last_mut().expect("the top frame is never popped")"#,
        // Carrying on without a frame would decide quoting with no context: a panic is safer
        // than a wrong "this value is safe here".
        "the lexer starts with the script's own frame and pops only frames it pushed",
    ),
    (
        "crates/ralph-engine/src/engine/attempt.rs",
        r#".expect("attempt runs only with done_when")"#,
        "`attempts` is set whenever `done_when` is, and only then does an attempt run",
    ),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", relative(path)))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Whether a whole file is test code: `tests.rs` (declared under `#[cfg(test)]`) or a file in
/// a `tests` folder.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// The lines of a Rust file that are library code: 1-based line numbers and the text with
/// comments removed; items behind `#[cfg(test)]` are left out.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(at, _)| at + 1))
        .collect();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test") {
            let end = item_end(text, starts[i] + lines[i].len());
            while i < lines.len() && starts[i] < end {
                i += 1;
            }
            continue;
        }
        i += 1;
        if trimmed.starts_with("//") {
            continue;
        }
        out.push((i, strip_comment(lines[i - 1]).to_owned()));
    }
    out
}

/// The byte offset just past the item that starts at `from` (after its attribute): its `;`, or
/// the brace that closes its body. Strings, raw strings, char literals and comments are skipped
/// so a brace inside one does not count.
fn item_end(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i += text[i..].find('\n').unwrap_or(text.len() - i);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += text[i..].find("*/").map_or(text.len() - i, |end| end + 2);
                continue;
            }
            b'r' if matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                && !bytes[..i]
                    .last()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|b| **b == b'#').count();
                if bytes.get(i + 1 + hashes) == Some(&b'"') {
                    let close = format!("\"{}", "#".repeat(hashes));
                    let body = i + 2 + hashes;
                    i = text[body..]
                        .find(&close)
                        .map_or(text.len(), |end| body + end + close.len());
                    continue;
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            // A char literal (`'{'`, `'\\''`), not a lifetime (`'a`).
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// `line` without a trailing `// comment` (a `//` outside a string literal).
fn strip_comment(line: &str) -> &str {
    let mut in_string = false;
    let mut prev = ' ';
    for (at, c) in line.char_indices() {
        match c {
            '"' if prev != '\\' => in_string = !in_string,
            '/' if !in_string && prev == '/' => return &line[..at - 1],
            _ => {}
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    line
}

/// Whether `line` holds `word` not preceded by an identifier character (so `print!` is not
/// found in `eprint!`).
fn has_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Runs `check` over the library lines of every non-test `.rs` file under `dir`, collecting
/// `path:line: message` for each line it objects to.
fn scan(
    dir: &Path,
    problems: &mut Vec<String>,
    mut check: impl FnMut(&Path, &str) -> Option<String>,
) {
    for path in rust_files(dir) {
        if is_test_file(&path) {
            continue;
        }
        for (number, line) in code_lines(&read(&path)) {
            if let Some(message) = check(&path, &line) {
                problems.push(format!("{}:{number}: {message}", relative(&path)));
            }
        }
    }
}

fn assert_none(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "tidy: {what}:\n  {}",
        problems.join("\n  ")
    );
}

/// The dependencies a crate builds with (not its dev-dependencies), with their lines.
fn dependencies(manifest: &str) -> Vec<(usize, String)> {
    let mut section = String::new();
    let mut found = Vec::new();
    for (i, line) in manifest.lines().enumerate() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_owned();
            // `[dependencies.tokio]`, `[target.'cfg(unix)'.dependencies.libc]`
            for table in ["dependencies.", "build-dependencies."] {
                if let Some((_, dep)) = section.split_once(table) {
                    if !section.contains("dev-dependencies.") {
                        found.push((i + 1, dep.to_owned()));
                    }
                }
            }
            continue;
        }
        let builds = section == "dependencies"
            || section == "build-dependencies"
            || section.ends_with(".dependencies")
            || section.ends_with(".build-dependencies");
        if builds && !line.is_empty() && !line.starts_with('#') {
            if let Some(name) = line.split(['=', '.']).next() {
                found.push((i + 1, name.trim().trim_matches('"').to_owned()));
            }
        }
    }
    found
}

/// Dependencies point one way (marker, frontmatter, backoff, agents, process, sandbox <-
/// engine <- escalation <- github, parallel <- cli), the agent adapters, process supervision
/// and the sandbox know nothing of each other, and nothing below the engine but process
/// supervision and the sandbox's proxy uses an async runtime.
#[test]
fn dependencies_point_one_way() {
    let above_base = [
        "ralph-process",
        "ralph-sandbox",
        "ralph-engine",
        "ralph-escalation",
        "ralph-parallel",
        "ralph-github",
        "ralph-linear",
        "ralph-cli",
    ];
    let runtimes = ["tokio", "async-std", "smol"];
    let forbidden: HashMap<&str, Vec<&str>> = BASE_CRATES
        .iter()
        .map(|c| (*c, above_base.iter().chain(&runtimes).copied().collect()))
        .chain([
            (
                "ralph-sandbox",
                vec![
                    "ralph-agents",
                    "ralph-process",
                    "ralph-engine",
                    "ralph-escalation",
                    "ralph-parallel",
                    "ralph-github",
                    "ralph-linear",
                    "ralph-cli",
                ],
            ),
            (
                "ralph-process",
                vec![
                    "ralph-sandbox",
                    "ralph-agents",
                    "ralph-engine",
                    "ralph-escalation",
                    "ralph-parallel",
                    "ralph-github",
                    "ralph-linear",
                    "ralph-cli",
                ],
            ),
            (
                "ralph-engine",
                vec![
                    "ralph-escalation",
                    "ralph-github",
                    "ralph-linear",
                    "ralph-parallel",
                    "ralph-notify",
                    "ralph-cli",
                ],
            ),
            (
                "ralph-escalation",
                vec![
                    "ralph-github",
                    "ralph-linear",
                    "ralph-parallel",
                    "ralph-cli",
                ],
            ),
            (
                "ralph-github",
                vec!["ralph-linear", "ralph-parallel", "ralph-cli"],
            ),
            (
                "ralph-linear",
                vec!["ralph-github", "ralph-parallel", "ralph-cli"],
            ),
            (
                "ralph-parallel",
                vec!["ralph-github", "ralph-linear", "ralph-cli"],
            ),
            (
                "ralph-notify",
                vec![
                    "ralph-escalation",
                    "ralph-github",
                    "ralph-linear",
                    "ralph-parallel",
                    "ralph-cli",
                ],
            ),
        ])
        .collect();
    let mut problems = Vec::new();
    for (krate, banned) in &forbidden {
        let path = root().join("crates").join(krate).join("Cargo.toml");
        for (line, dep) in dependencies(&read(&path)) {
            if banned.contains(&dep.as_str()) {
                problems.push(format!(
                    "{}:{line}: {krate} must not depend on {dep}",
                    relative(&path)
                ));
            }
        }
    }
    problems.sort();
    assert_none("a dependency points the wrong way", &problems);
}

/// The crates below the engine do no I/O and start no process: the caller reads and writes.
#[test]
fn base_crates_do_no_io() {
    let mut problems = Vec::new();
    for krate in BASE_CRATES {
        scan(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |_, line| {
                ["std::fs", "std::process", "std::net", "tokio"]
                    .into_iter()
                    .find(|word| has_word(line, word))
                    .map(|word| format!("`{word}` in {krate}, which does no I/O"))
            },
        );
    }
    assert_none("I/O below the engine", &problems);
}

/// The engine never prints: everything it says is an event to its sinks. Nor do the crates it
/// plugs in below it: the agent adapters hand what they read to an output, process supervision
/// hands chunks to its caller.
#[test]
fn the_engine_never_prints() {
    let mut problems = Vec::new();
    for krate in [
        "ralph-engine",
        "ralph-agents",
        "ralph-process",
        "ralph-sandbox",
    ] {
        scan(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |_, line| {
                [
                    "println!",
                    "eprintln!",
                    "print!",
                    "eprint!",
                    "dbg!",
                    "stdout()",
                    "stderr()",
                ]
                .into_iter()
                .find(|word| has_word(line, word))
                .map(|word| format!("`{word}`: the engine emits events, it never prints"))
            },
        );
    }
    assert_none("the engine prints", &problems);
}

/// Adapters say "rate limited" (`OutputAdapter::rate_limit`): the engine reads their verdict and
/// no agent's words itself, so an agent whose adapter ralph does not ship is not held to Claude
/// Code's messages.
#[test]
fn the_engine_reads_no_rate_limit_words() {
    let mut problems = Vec::new();
    scan(
        &root().join("crates/ralph-engine/src"),
        &mut problems,
        |_, line| {
            line.contains("rate_limit::detect").then(|| {
                "`rate_limit::detect`: the agent's adapter reads its words for a rate limit \
                 (`OutputAdapter::rate_limit`); the engine reads the verdict"
                    .to_owned()
            })
        },
    );
    assert_none("the engine parses rate-limit words", &problems);
}

/// The engine knows no stories: they are ralph-escalation's, which brings them as a task
/// source's fields and events (`Task::fields`, `TaskEvent`), and reads them back from a run
/// folder itself. Doc comments may name escalation's as an example; code may not.
#[test]
fn the_engine_knows_no_story_vocabulary() {
    let mut problems = Vec::new();
    scan(
        &root().join("crates/ralph-engine/src"),
        &mut problems,
        |_, line| {
            ["STORY_", "story_id"]
                .into_iter()
                .find(|word| line.contains(word))
                .map(|word| {
                    format!(
                        "`{word}`: stories are ralph-escalation's; the engine keeps a task \
                         source's fields and events without naming them"
                    )
                })
        },
    );
    assert_none("the engine names stories", &problems);
}

/// The parser knows ralph's own words; story mode's placeholders and endings are its own,
/// registered as a plug's (`ralph_escalation::vocabulary`).
#[test]
fn the_parser_knows_no_story_vocabulary() {
    let mut problems = Vec::new();
    scan(
        &root().join("crates/ralph-frontmatter/src"),
        &mut problems,
        |_, line| {
            [
                "STORY_",
                "\"story\"",
                "stories_",
                "circuit_open",
                "escalation_failed",
            ]
            .into_iter()
            .find(|word| line.contains(word))
            .map(|word| {
                format!(
                    "`{word}`: story mode's words are ralph-escalation's, registered with \
                         the parser as a plug's"
                )
            })
        },
    );
    assert_none("the parser names story mode's words", &problems);
}

/// Idle is a handler like any other: the loop (`engine/`) reads what a state's handler decided
/// (a `StateWait`'s reason and streak), never the state's name, nor the idle handler's events.
#[test]
fn the_engine_loop_does_not_count_idle_by_name() {
    let mut problems = Vec::new();
    scan(
        &root().join("crates/ralph-engine/src/engine"),
        &mut problems,
        |_, line| {
            [r#""idle""#, "IterationIdle"]
                .into_iter()
                .find(|word| line.contains(word))
                .map(|word| {
                    format!(
                        "`{word}`: the idle handler says what its waits are (`StateWait`); the \
                         loop reads that, not the state's name or the handler's events"
                    )
                })
        },
    );
    assert_none("the engine loop names the idle state", &problems);
}

/// Only ralph-process starts the agent, commands and checks; escalation's `git` module starts
/// git, ralph-github's `token` module asks `gh auth token` for a token and ralph-notify's
/// delivery thread runs `notify.command` (a thread of its own, no async runtime): no other place
/// starts a process; the engine, the agent adapters and the CLI start none.
#[test]
fn only_the_process_module_and_git_start_processes() {
    let starts = [
        "Command::new",
        "process::Command",
        "tokio::process",
        "libc::fork",
        "libc::vfork",
        "libc::exec",
        "posix_spawn",
    ];
    let allowed = |path: &Path| {
        let path = relative(path);
        path.starts_with("crates/ralph-process/src/")
            || path == "crates/ralph-escalation/src/git.rs"
            || path == "crates/ralph-parallel/src/git.rs"
            || path == "crates/ralph-github/src/token.rs"
            || path == "crates/ralph-notify/src/deliver.rs"
    };
    let mut problems = Vec::new();
    for krate in [
        "ralph-process",
        "ralph-sandbox",
        "ralph-agents",
        "ralph-engine",
        "ralph-escalation",
        "ralph-parallel",
        "ralph-github",
        "ralph-linear",
        "ralph-notify",
        "ralph-cli",
    ] {
        scan(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |path, line| {
                if allowed(path) {
                    return None;
                }
                starts
                    .into_iter()
                    .find(|word| has_word(line, word))
                    .map(|word| {
                        format!(
                            "`{word}`: only ralph-process (and escalation's and parallel's \
                             `git`, ralph-github's `token`) start processes"
                        )
                    })
            },
        );
    }
    assert_none("a process started outside ralph-process", &problems);
}

/// Library code returns errors rather than panicking on them.
#[test]
fn library_code_does_not_unwrap() {
    let mut problems = Vec::new();
    let mut used = vec![false; UNWRAP_ALLOWED.len()];
    for krate in LIBRARY_CRATES {
        scan(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |path, line| {
                if !line.contains(".unwrap()") && !line.contains(".expect(") {
                    return None;
                }
                let path = relative(path);
                let allowed = UNWRAP_ALLOWED
                    .iter()
                    .position(|(file, fragment, _)| path == *file && line.contains(fragment));
                match allowed {
                    Some(i) => {
                        used[i] = true;
                        None
                    }
                    None => Some(
                        "`unwrap()`/`expect(` in library code: return an error, or name the \
                         invariant in tidy's UNWRAP_ALLOWED"
                            .to_owned(),
                    ),
                }
            },
        );
    }
    for ((file, fragment, _), used) in UNWRAP_ALLOWED.iter().zip(used) {
        if !used {
            problems.push(format!(
                "xtask/tests/tidy.rs: UNWRAP_ALLOWED entry {file} `{fragment}` matches nothing"
            ));
        }
    }
    assert_none("library code unwraps", &problems);
}

/// Every library crate opens with a `//!` paragraph, and every crate's manifest has what
/// crates.io shows (directly or inherited from the workspace).
#[test]
fn crates_are_documented_and_described() {
    let mut problems = Vec::new();
    let mut crates: Vec<PathBuf> = fs::read_dir(root().join("crates"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    crates.sort();
    assert!(!crates.is_empty(), "tidy: no crates found");
    for dir in crates {
        let lib = dir.join("src/lib.rs");
        if lib.exists() && !read(&lib).starts_with("//! ") {
            problems.push(format!(
                "{}:1: a library crate opens with a `//!` paragraph saying what it is",
                relative(&lib)
            ));
        }
        let manifest = dir.join("Cargo.toml");
        let text = read(&manifest);
        let package: Vec<&str> = text
            .lines()
            .skip_while(|l| l.trim() != "[package]")
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with('['))
            .collect();
        for key in [
            "description",
            "license",
            "repository",
            "readme",
            "rust-version",
        ] {
            let present = package.iter().any(|l| {
                let l = l.trim_start();
                l.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with(['=', '.']))
            });
            if !present {
                problems.push(format!(
                    "{}:1: [package] has no `{key}` (nor `{key}.workspace = true`)",
                    relative(&manifest)
                ));
            }
        }
    }
    assert_none("a crate is not described", &problems);
}

/// GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown file's headings (a repeated one as `name-1`, `name-2`, ...).
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line) in markdown_lines(text, true) {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        // `[text](url)` shows as its text.
        let title = link_texts(title);
        let base = slug(&title);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// `text` with each `[label](target)` replaced by its label.
fn link_texts(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let Some(close) = rest[at..].find(')') else {
            break;
        };
        out.push_str(&rest[..at].replace('[', ""));
        rest = &rest[at + close + 1..];
    }
    out.push_str(&rest.replace('[', ""));
    out
}

/// A markdown file's lines outside fenced code blocks: with inline code spans removed, or with
/// only their backticks removed (`keep_code`, for headings, whose anchor keeps the code's text).
fn markdown_lines(text: &str, keep_code: bool) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut prose = String::new();
        for (n, part) in line.split('`').enumerate() {
            if keep_code || n % 2 == 0 {
                prose.push_str(part);
            }
        }
        out.push((i + 1, prose));
    }
    out
}

/// The targets of a line's inline links `[text](target)` and of a reference definition
/// `[name]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(inside) = rest.strip_prefix('<') {
            // `[text](<a path with spaces.md>)`
            let end = inside.find('>').unwrap_or(inside.len());
            targets.push(inside[..end].to_owned());
            rest = &inside[end..];
            continue;
        }
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.to_owned());
        rest = &rest[end..];
    }
    let trimmed = line.trim_start();
    if trimmed.starts_with('[') {
        if let Some((_, target)) = trimmed.split_once("]: ") {
            if let Some(target) = target.split_whitespace().next() {
                targets.push(target.to_owned());
            }
        }
    }
    targets
}

/// Every relative link in README.md, ARCHITECTURE.md and docs/*.md names a file that exists,
/// and every `#anchor` a heading of the file it points into.
#[test]
fn docs_links_resolve() {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    docs.retain(|p| p.extension().is_some_and(|e| e == "md"));
    docs.sort();
    files.extend(docs);
    let mut problems = Vec::new();
    for file in &files {
        let text = read(file);
        let dir = file.parent().unwrap_or(&root);
        for (number, line) in markdown_lines(&text, false) {
            for target in link_targets(&line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    dir.join(path)
                };
                let at = format!("{}:{number}", relative(file));
                if !linked.exists() {
                    problems.push(format!("{at}: link to {target}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else {
                    continue;
                };
                if linked.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&linked)).iter().any(|a| a == anchor)
                {
                    problems.push(format!(
                        "{at}: link to {target}: {} has no heading `#{anchor}`",
                        relative(&linked)
                    ));
                }
            }
        }
    }
    assert_none("a docs link does not resolve", &problems);
}

/// The backticked spans of a markdown text, with their 1-based line numbers; a span may run
/// over a line break, as a long test path does in ARCHITECTURE.md.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    let mut line = 1;
    let mut open: Option<(usize, String)> = None;
    for c in text.chars() {
        match (c, open.as_mut()) {
            ('`', None) => open = Some((line, String::new())),
            ('`', Some(_)) => spans.extend(open.take()),
            (c, Some((_, span))) if c != '\n' => span.push(c),
            _ => {}
        }
        if c == '\n' {
            line += 1;
        }
    }
    spans
}

/// The Rust files a name in ARCHITECTURE.md may mean: `tests/x.rs` or `ralph-engine/tests/x.rs`
/// (a file in a crate's `tests`, the CLI's when no crate is named), `tidy.rs` (any file of
/// that name), or a module path (`process::watchdog`: `.../process/watchdog.rs` or
/// `.../process/watchdog/mod.rs`, any crate, or the crate `ralph-process`'s
/// `src/watchdog.rs`; `process` alone is that crate's `src/lib.rs`).
fn files_named(name: &str, files: &[PathBuf]) -> Vec<PathBuf> {
    let root = root();
    if let Some(file) = name.strip_suffix(".rs") {
        if let Some((krate, rest)) = file.split_once("/tests/") {
            let krate = if krate == "xtask" {
                root.join(krate)
            } else {
                root.join("crates").join(krate)
            };
            return vec![krate.join(format!("tests/{rest}.rs"))];
        }
        if file.starts_with("tests/") {
            return vec![root.join(format!("crates/ralph-cli/{file}.rs"))];
        }
        let wanted = format!("/{file}.rs");
        return files
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(&wanted))
            .cloned()
            .collect();
    }
    let module = name.replace("::", "/");
    let endings = [format!("/{module}.rs"), format!("/{module}/mod.rs")];
    let mut found: Vec<PathBuf> = files
        .iter()
        .filter(|f| {
            let f = f.to_string_lossy();
            endings.iter().any(|e| f.ends_with(e.as_str()))
        })
        .cloned()
        .collect();
    // A module that became a crate of its own: `process::watchdog` is ralph-process's.
    let (krate, inner) = module.split_once('/').unwrap_or((&module, ""));
    let src = root
        .join("crates")
        .join(format!("ralph-{krate}"))
        .join("src");
    found.extend(if inner.is_empty() {
        vec![src.join("lib.rs")]
    } else {
        vec![
            src.join(format!("{inner}.rs")),
            src.join(inner).join("mod.rs"),
        ]
    });
    found
}

/// ARCHITECTURE.md names the tests that defend each invariant (`tests/resume.rs`,
/// `tidy.rs::dependencies_point_one_way`, `process::supervisor::tests`): each file, module and
/// test it names exists, so the document cannot point at a test that was renamed or removed.
#[test]
fn architecture_names_only_tests_that_exist() {
    let root = root();
    let text = read(&root.join("ARCHITECTURE.md"));
    let Some(start) = text.find("## Invariants the tests defend") else {
        panic!("ARCHITECTURE.md has no `## Invariants the tests defend` section");
    };
    let first_line = text[..start].lines().count();
    let mut files = rust_files(&root.join("crates"));
    files.extend(rust_files(&root.join("xtask")));
    let mut problems = Vec::new();
    let mut checked = 0;
    for (number, span) in code_spans(&text[start..]) {
        let at = format!("ARCHITECTURE.md:{}", first_line + number);
        // `file.rs::test`, `module::tests::test`, `module::tests`; other spans are not names.
        let (place, item) = if let Some((file, item)) = span.split_once(".rs::") {
            (format!("{file}.rs"), Some(item.to_owned()))
        } else if let Some((module, rest)) = span.split_once("::tests") {
            let item = rest.strip_prefix("::").map(str::to_owned);
            (module.to_owned(), item)
        } else if span.ends_with(".rs") && span.contains("tests/") {
            (span.clone(), None)
        } else {
            continue;
        };
        if place.contains(char::is_whitespace) {
            continue;
        }
        let candidates: Vec<PathBuf> = files_named(&place, &files)
            .into_iter()
            .filter(|f| f.exists())
            .collect();
        checked += 1;
        if candidates.is_empty() {
            problems.push(format!("{at}: `{span}`: no file for `{place}`"));
            continue;
        }
        let Some(item) = item else { continue };
        // `file.rs::tests::name` names the test `name`.
        let item = item.rsplit("::").next().unwrap_or(&item);
        let defined = candidates.iter().any(|file| {
            let mut sources = vec![read(file)];
            // A module's tests may live in a file of their own (`#[cfg(test)] mod tests;`).
            let dir = file.with_extension("");
            for sibling in [dir.join("tests.rs"), file.with_file_name("tests.rs")] {
                if sibling.exists() {
                    sources.push(read(&sibling));
                }
            }
            sources.iter().any(|source| {
                source.contains(&format!("fn {item}("))
                    || source.contains(&format!("mod {item} "))
                    || source.contains(&format!("fn {item}<"))
            })
        });
        if !defined {
            problems.push(format!("{at}: `{span}`: no test `{item}` there"));
        }
    }
    assert_none(
        "ARCHITECTURE.md names a test that does not exist",
        &problems,
    );
    assert!(
        checked >= 30,
        "only {checked} test names found: is the parsing wrong?"
    );
}

/// The tidy helpers themselves: a check that cannot see an offence proves nothing.
#[test]
fn the_scanner_sees_library_code_and_skips_tests_and_comments() {
    let text = "\
fn a() { x.unwrap(); } // y.expect(\"no\")
/// z.unwrap()
#[cfg(test)]
mod tests {
    fn b() { q.unwrap(); }
}
#[cfg(test)]
use std::fs;
fn c() { let u = \"http://x\"; }
#[cfg(test)]
mod more {
    const J: &str = r#\"{
}\"#;
    const B: char = '}';
    fn d() {}
}
fn e() {}
";
    let lines = code_lines(text);
    let numbers: Vec<usize> = lines.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [1, 9, 17]);
    assert_eq!(lines[0].1, "fn a() { x.unwrap(); } ");
    assert_eq!(lines[1].1, "fn c() { let u = \"http://x\"; }");
    assert!(has_word("print!(\"x\")", "print!"));
    assert!(!has_word("eprint!(\"x\")", "print!"));
    assert_eq!(slug("`commands` and Co."), "commands-and-co");
    assert_eq!(
        link_targets("see [a](b.md#c) and [d](<e f.md>)"),
        ["b.md#c", "e f.md"]
    );
    let deps = dependencies(
        "[dependencies]\ntokio.workspace = true\n[dev-dependencies]\nx = 1\n[dependencies.serde]\n",
    );
    assert_eq!(deps, [(2, "tokio".to_owned()), (5, "serde".to_owned())]);
}
