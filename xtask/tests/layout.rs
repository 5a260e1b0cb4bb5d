//! The test layout: a crate's integration tests are one binary (`tests/main.rs`, `autotests =
//! false`), each file of its `tests/` folder a module of it. A file left out of `main.rs` would
//! never run, and nothing else would say so.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// The `mod NAME;` lines of `main` for files of its folder (not those a `#[path]` takes from
/// elsewhere in the crate, an example say: tidy's `edges.rs` keeps `#[path]` inside the crate).
fn modules(main: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut elsewhere = false;
    for line in main.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) {
            if !elsewhere {
                found.push(name.to_owned());
            }
        }
        elsewhere = line.starts_with("#[path");
    }
    found
}

#[test]
fn every_test_file_is_a_module_of_its_crates_one_test_binary() {
    let mut crates: Vec<PathBuf> = fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    crates.push(root().join("xtask"));
    let mut problems = Vec::new();
    let mut checked = 0;
    for krate in crates {
        let manifest = fs::read_to_string(krate.join("Cargo.toml")).unwrap_or_default();
        let tests = krate.join("tests");
        let files: Vec<String> = fs::read_dir(&tests)
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()?
                            .strip_suffix(".rs")
                            .map(str::to_owned)
                    })
                    .filter(|name| name != "main")
                    .collect()
            })
            .unwrap_or_default();
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        if !manifest.contains("autotests = false") {
            // Without a main.rs, each file is a binary of its own: a few at most.
            if files.len() > 2 {
                problems.push(format!(
                    "{name}: {} test files, each a binary: make them modules of tests/main.rs \
                     (autotests = false)",
                    files.len()
                ));
            }
            continue;
        }
        let main = fs::read_to_string(tests.join("main.rs")).unwrap_or_default();
        let listed = modules(&main);
        for file in &files {
            checked += 1;
            if !listed.contains(file) {
                problems.push(format!(
                    "{name}/tests/{file}.rs is not a module of tests/main.rs"
                ));
            }
        }
        for module in &listed {
            let exists = tests.join(format!("{module}.rs")).exists()
                || tests.join(module).join("mod.rs").exists();
            if !exists {
                problems.push(format!(
                    "{name}/tests/main.rs names `{module}`, which has no file"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked > 50, "the CLI's tests alone are more: {checked}");
}

/// No tracked file keeps a merge's conflict markers: docs/config.md once did, unseen, through
/// a whole release's commits.
#[test]
fn no_file_keeps_a_merges_conflict_markers() {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git runs");
    let mut found = Vec::new();
    for file in out.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let file = String::from_utf8_lossy(file).into_owned();
        let Ok(text) = fs::read_to_string(root().join(&file)) else {
            continue; // binary, or removed in the work tree
        };
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("<<<<<<< ") || line.starts_with(">>>>>>> ") {
                found.push(format!("{file}:{}: {line}", n + 1));
            }
        }
    }
    assert!(found.is_empty(), "conflict markers:\n{}", found.join("\n"));
}
