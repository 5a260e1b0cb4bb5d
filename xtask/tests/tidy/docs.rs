//! The docs and manifests checks: every crate documented and described, every link in the
//! docs resolving, every test ARCHITECTURE.md names existing.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use super::{assert_none, read, relative, root, rust_files};

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

/// The markdown helpers themselves: a link or an anchor they cannot read is a check that
/// proves nothing.
#[test]
fn the_markdown_helpers_read_headings_and_links() {
    assert_eq!(slug("`commands` and Co."), "commands-and-co");
    assert_eq!(
        link_targets("see [a](b.md#c) and [d](<e f.md>)"),
        ["b.md#c", "e f.md"]
    );
}
