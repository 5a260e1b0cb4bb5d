//! `tidy`: the rules ARCHITECTURE.md states, checked mechanically over the source tree, as
//! rust-analyzer's `xtask tidy` does. It reads files (no build, no network), so it runs in
//! seconds as part of `cargo test --workspace`.
//!
//! Each check collects every offence as `path:line: what is wrong` and fails once with all of
//! them. Where a name could hide from a line scan (a `use` tree, a call split over lines), the
//! check reads the code as syntax (`syntax`, with syn); crate edges come from `cargo metadata`.
//! What counts as test code (and is exempt from the library rules): files named `tests.rs` or
//! under a `tests` folder, and items behind `#[cfg(test)]`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

mod docs;
mod edges;
mod syntax;

use syntax::Named;

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
    "ralph-atomic",
    "ralph-marker",
    "ralph-events",
    "ralph-frontmatter",
    "ralph-backoff",
    "ralph-agents",
    "ralph-process",
    "ralph-sandbox",
    "ralph-engine",
    "ralph-tasks",
    "ralph-escalation",
    "ralph-parallel",
    "ralph-rest",
    "ralph-github",
    "ralph-gitlab",
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

/// Runs `check` over what the library code of every non-test `.rs` file under `dir` names
/// (read as syntax: [`syntax::library_names`]), with the line it is on, collecting
/// `path:line: message` for each it objects to. A file syn cannot read is a problem too.
fn scan_names(
    dir: &Path,
    problems: &mut Vec<String>,
    mut check: impl FnMut(&Path, &Named, &str) -> Option<String>,
) {
    for path in rust_files(dir) {
        if is_test_file(&path) {
            continue;
        }
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        match syntax::library_names(&text) {
            Ok(names) => {
                for (number, named) in names {
                    let line = lines.get(number.saturating_sub(1)).copied().unwrap_or("");
                    if let Some(message) = check(&path, &named, line) {
                        problems.push(format!("{}:{number}: {message}", relative(&path)));
                    }
                }
            }
            Err(err) => problems.push(format!("{}: syn cannot read it: {err}", relative(&path))),
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

/// Each workspace package's build dependencies (not its dev-dependencies), by package name, as
/// `cargo metadata` reads the manifests: a renamed, inline-table or target-specific dependency
/// counts as what it is, which a reading of the manifest's text could miss.
fn workspace_dependencies() -> HashMap<String, Vec<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    packages
        .iter()
        .map(|package| {
            let deps = package["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|dep| dep["kind"].as_str() != Some("dev"))
                .map(|dep| dep["name"].as_str().expect("a name").to_owned())
                .collect();
            (package["name"].as_str().expect("a name").to_owned(), deps)
        })
        .collect()
}

/// The workspace packages `krate` builds with, directly or through other workspace packages,
/// and the external crates any of them names directly.
fn reachable(krate: &str, graph: &HashMap<String, Vec<String>>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut stack = vec![krate.to_owned()];
    while let Some(name) = stack.pop() {
        for dep in graph.get(&name).into_iter().flatten() {
            if !seen.contains(dep) {
                seen.push(dep.clone());
                stack.push(dep.clone());
            }
        }
    }
    seen.sort();
    seen
}

/// Dependencies point one way (atomic, marker, frontmatter, backoff, agents, process, sandbox <-
/// engine <- escalation <- parallel <- cli; atomic <- tasks <- escalation, rest <- github,
/// gitlab, linear), the agent adapters, process supervision and the sandbox know nothing of
/// each other, nothing below the engine but process supervision and the sandbox's proxy uses
/// an async runtime, and a task list (the seam, the forges' lists) builds without the loop.
#[test]
fn dependencies_point_one_way() {
    let above_base = [
        "ralph-process",
        "ralph-sandbox",
        "ralph-engine",
        "ralph-tasks",
        "ralph-escalation",
        "ralph-parallel",
        "ralph-github",
        "ralph-loop",
    ];
    let runtimes = ["tokio", "async-std", "smol"];
    // A task list's crate (the forges' and what they share) is a list, not a loop: it builds
    // without the engine, escalation, process supervision or a runtime.
    let beside_the_loop = [
        "ralph-process",
        "ralph-engine",
        "ralph-escalation",
        "ralph-parallel",
        "ralph-loop",
        "pty-process",
        "tokio",
        "async-std",
        "smol",
    ];
    let forbidden: HashMap<&str, Vec<&str>> = BASE_CRATES
        .iter()
        .map(|c| (*c, above_base.iter().chain(&runtimes).copied().collect()))
        .chain([
            // Whole-file writes know no other part of ralph, and need no runtime.
            (
                "ralph-atomic",
                [
                    "ralph-marker",
                    "ralph-frontmatter",
                    "ralph-backoff",
                    "ralph-agents",
                ]
                .iter()
                .chain(&above_base)
                .chain(&runtimes)
                .copied()
                .collect(),
            ),
            // The wire types sit at the bottom: a reader links them without the runtime. The
            // crates that write them depend on it; it depends on no ralph crate but the pure
            // marker rules (a check's last lines are shown without escape sequences).
            (
                "ralph-events",
                [
                    "ralph-atomic",
                    "ralph-frontmatter",
                    "ralph-backoff",
                    "ralph-agents",
                    "ralph-rest",
                    "ralph-gitlab",
                    "ralph-linear",
                    "ralph-notify",
                    "ralph-test-support",
                ]
                .iter()
                .chain(&above_base)
                .chain(&runtimes)
                .chain(&["pty-process", "libc"])
                .copied()
                .collect(),
            ),
            (
                "ralph-sandbox",
                vec![
                    "ralph-agents",
                    "ralph-process",
                    "ralph-engine",
                    "ralph-tasks",
                    "ralph-escalation",
                    "ralph-parallel",
                    "ralph-github",
                    "ralph-loop",
                ],
            ),
            (
                // It takes its own option types: what a process is, not what RALPH.md says.
                "ralph-process",
                vec![
                    "ralph-frontmatter",
                    "ralph-sandbox",
                    "ralph-agents",
                    "ralph-engine",
                    "ralph-tasks",
                    "ralph-escalation",
                    "ralph-parallel",
                    "ralph-github",
                    "ralph-loop",
                ],
            ),
            (
                "ralph-engine",
                vec![
                    "ralph-tasks",
                    "ralph-escalation",
                    "ralph-rest",
                    "ralph-github",
                    "ralph-gitlab",
                    "ralph-linear",
                    "ralph-parallel",
                    "ralph-notify",
                    "ralph-loop",
                ],
            ),
            (
                "ralph-escalation",
                vec![
                    "ralph-rest",
                    "ralph-github",
                    "ralph-gitlab",
                    "ralph-linear",
                    "ralph-parallel",
                    "ralph-loop",
                ],
            ),
            // The task lists' seam and the built-in lists build without the loop: no engine,
            // no escalation, no process supervision, no runtime.
            (
                "ralph-tasks",
                [
                    "ralph-frontmatter",
                    "ralph-agents",
                    "ralph-process",
                    "ralph-sandbox",
                    "ralph-engine",
                    "ralph-escalation",
                    "ralph-parallel",
                    "ralph-rest",
                    "ralph-github",
                    "ralph-gitlab",
                    "ralph-linear",
                    "ralph-notify",
                    "ralph-loop",
                ]
                .iter()
                .chain(&runtimes)
                .copied()
                .collect(),
            ),
            // What every forge client shares knows no forge, and knows the task lists through
            // their seam alone: not the loop (engine, escalation, processes, a runtime).
            (
                "ralph-rest",
                ["ralph-github", "ralph-gitlab", "ralph-linear"]
                    .iter()
                    .chain(&beside_the_loop)
                    .copied()
                    .collect(),
            ),
            // Each forge's crate knows no other forge, nor the loop.
            (
                "ralph-github",
                ["ralph-gitlab", "ralph-linear"]
                    .iter()
                    .chain(&beside_the_loop)
                    .copied()
                    .collect(),
            ),
            (
                "ralph-gitlab",
                ["ralph-github", "ralph-linear"]
                    .iter()
                    .chain(&beside_the_loop)
                    .copied()
                    .collect(),
            ),
            (
                "ralph-linear",
                ["ralph-github", "ralph-gitlab"]
                    .iter()
                    .chain(&beside_the_loop)
                    .copied()
                    .collect(),
            ),
            (
                "ralph-parallel",
                vec!["ralph-github", "ralph-gitlab", "ralph-linear", "ralph-loop"],
            ),
            (
                "ralph-notify",
                vec![
                    "ralph-escalation",
                    "ralph-github",
                    "ralph-gitlab",
                    "ralph-linear",
                    "ralph-parallel",
                    "ralph-loop",
                ],
            ),
        ])
        .collect();
    let graph = workspace_dependencies();
    let mut problems = Vec::new();
    for (krate, banned) in &forbidden {
        assert!(
            graph.contains_key(*krate),
            "{krate} is not a workspace package"
        );
        for dep in reachable(krate, &graph) {
            if banned.contains(&dep.as_str()) {
                problems.push(format!(
                    "crates/{krate}/Cargo.toml: {krate} must not depend on {dep}, directly or \
                     through another crate of the workspace"
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
        scan_names(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |_, named, _| {
                ["std::fs", "std::process", "std::net", "tokio"]
                    .into_iter()
                    .find(|word| named.is(word))
                    .map(|word| format!("`{word}` in {krate}, which does no I/O"))
            },
        );
    }
    assert_none("I/O below the engine", &problems);
}

/// The longest a Rust file may be: past it, a reader can no longer hold the file's shape in
/// mind, and a module's long tests go to a file of their own (`foo/tests.rs`).
const MAX_FILE_LINES: usize = 1000;

/// Files allowed past [`MAX_FILE_LINES`] for now, and why. An entry for a file that is no
/// longer too long fails, so the list only shrinks.
const LONG_FILES_ALLOWED: &[(&str, &str)] = &[];

/// No Rust file of the workspace is longer than [`MAX_FILE_LINES`], tests included.
#[test]
fn no_file_is_too_long_to_read() {
    let mut problems = Vec::new();
    let mut allowed_but_short = Vec::new();
    for dir in ["crates", "xtask"] {
        for path in rust_files(&root().join(dir)) {
            let name = relative(&path);
            let lines = read(&path).lines().count();
            let allowed = LONG_FILES_ALLOWED.iter().any(|(file, _)| *file == name);
            if lines > MAX_FILE_LINES && !allowed {
                problems.push(format!(
                    "{name}: {lines} lines; split it (a module's tests in their own file)"
                ));
            }
            if lines <= MAX_FILE_LINES && allowed {
                allowed_but_short.push(format!(
                    "{name}: {lines} lines; remove it from LONG_FILES_ALLOWED"
                ));
            }
        }
    }
    assert_none("files over 1,000 lines", &problems);
    assert_none(
        "a long file allowed that is no longer long",
        &allowed_but_short,
    );
}

/// A library error says its cause once: a field named `source` is what `Error::source()`
/// returns, so a message that also prints it repeats the cause in any program that prints the
/// chain (`anyhow`'s `{:#}`). Either the message names the cause (in a field not called
/// `source`) or `source()` returns it.
#[test]
fn library_errors_say_their_cause_once() {
    let mut problems = Vec::new();
    for krate in LIBRARY_CRATES {
        scan(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |_, line| {
                (line.contains("#[error(")
                    && (line.contains("{source") || line.contains(".source")))
                .then(|| {
                    "the message prints `source`, which `Error::source()` returns too".to_owned()
                })
            },
        );
    }
    assert_none("an error's cause said twice", &problems);
}

/// The engine never prints: everything it says is an event to its sinks. Nor do the crates it
/// plugs in below it: the agent adapters hand what they read to an output, process supervision
/// hands chunks to its caller.
#[test]
fn the_engine_never_prints() {
    let mut problems = Vec::new();
    for krate in [
        "ralph-atomic",
        "ralph-engine",
        "ralph-agents",
        "ralph-process",
        "ralph-sandbox",
    ] {
        scan_names(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |_, named, _| {
                [
                    "println!",
                    "eprintln!",
                    "print!",
                    "eprint!",
                    "dbg!",
                    "io::stdout",
                    "io::stderr",
                ]
                .into_iter()
                .find(|word| named.is(word))
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

/// The engine's API is the engine's (issue 36): its root re-exports the types its own API names,
/// one by one, never a whole crate (`pub use ralph_agents as agents;`) or another crate's
/// module whole (`pub use ralph_events::session::*;`), and its public modules are the few
/// listed here; utilities live in the crate whose job they are.
#[test]
fn the_engine_re_exports_no_whole_crate() {
    /// Public modules of the engine's root, each a part of the engine's own API.
    const PUBLIC_MODULES: &[&str] = &["interrupts"];
    let file = "crates/ralph-engine/src/lib.rs";
    let text = fs::read_to_string(root().join(file)).expect("the engine's lib.rs");
    let mut problems = Vec::new();
    for (line, public) in syntax::public_items(&text).expect("lib.rs parses") {
        let problem = match &public {
            syntax::Public::Use(path) => {
                let local = ["crate", "self", "super"]
                    .iter()
                    .any(|root| path.split("::").next() == Some(root));
                let whole = !path.contains("::") || path.ends_with("::*");
                (whole && !local).then(|| {
                    format!(
                        "`pub use {path}` re-exports a whole crate or module; re-export the \
                         types the engine's API names, one by one"
                    )
                })
            }
            syntax::Public::Mod(name) => (!PUBLIC_MODULES.contains(&name.as_str())).then(|| {
                format!(
                    "`pub mod {name}`: a public module of the engine; make it private and \
                     re-export what the API names, or move it to the crate whose job it is"
                )
            }),
        };
        problems.extend(problem.map(|problem| format!("{file}:{line}: {problem}")));
    }
    assert_none("the engine exports more than the engine", &problems);
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

/// Only ralph-process starts the agent, commands and checks; escalation's `git::command` starts
/// git, ralph-github's `token` module asks `gh auth token` for a token and ralph-notify's
/// delivery thread runs `notify.command` (a thread of its own, no async runtime): no other place
/// starts a process; the engine, the agent adapters and the CLI start none.
#[test]
fn only_the_process_module_and_git_start_processes() {
    let starts = [
        "Command::new",
        "process::Command",
        "tokio::process",
        "fork",
        "vfork",
        "execv",
        "execve",
        "execvp",
        "posix_spawn",
        "posix_spawnp",
    ];
    let allowed = |path: &Path| {
        let path = relative(path);
        path.starts_with("crates/ralph-process/src/")
            // The one git runner, for escalation, the merge queue and the task lists.
            || path == "crates/ralph-escalation/src/git/command.rs"
            || path == "crates/ralph-github/src/token.rs"
            || path == "crates/ralph-notify/src/deliver.rs"
    };
    let mut problems = Vec::new();
    for krate in [
        "ralph-atomic",
        "ralph-events",
        "ralph-process",
        "ralph-sandbox",
        "ralph-agents",
        "ralph-engine",
        "ralph-tasks",
        "ralph-escalation",
        "ralph-parallel",
        "ralph-rest",
        "ralph-github",
        "ralph-gitlab",
        "ralph-linear",
        "ralph-notify",
        "ralph-cli",
    ] {
        scan_names(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |path, named, _| {
                if allowed(path) {
                    return None;
                }
                starts.into_iter().find(|word| named.is(word)).map(|word| {
                    format!(
                        "`{word}`: only ralph-process (and escalation's `git::command`, \
                             ralph-github's `token`, ralph-notify's `deliver`) start processes"
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
        scan_names(
            &root().join("crates").join(krate).join("src"),
            &mut problems,
            |path, named, line| {
                if !named.is(".unwrap(") && !named.is(".expect(") {
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
    let graph = HashMap::from([
        ("a".to_owned(), vec!["b".to_owned()]),
        ("b".to_owned(), vec!["c".to_owned(), "tokio".to_owned()]),
        ("c".to_owned(), vec!["b".to_owned()]),
    ]);
    assert_eq!(reachable("a", &graph), ["b", "c", "tokio"]);
}
