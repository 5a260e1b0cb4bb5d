//! What crosses a crate's edge: no source file of one crate compiled into another by
//! `#[path]`, and the shared test code (`ralph-test-support`) test-only and standing on no
//! ralph crate.

use std::path::{Component, Path, PathBuf};

use super::{assert_none, read, relative, root, rust_files, workspace_dependencies};

const TEST_SUPPORT: &str = "ralph-test-support";

/// `path` with its `.` and `..` taken out, without asking the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The files the `#[path = "..."]` attributes of `text` name, `text` being the file at `file`:
/// relative to its folder, as rustc reads them outside an inline module.
fn path_attributes(file: &Path, text: &str) -> Vec<(usize, PathBuf)> {
    let dir = file.parent().unwrap_or(Path::new(""));
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let value = line.trim_start().strip_prefix("#[path = \"")?;
            let value = value.split('"').next()?;
            Some((n + 1, normalize(&dir.join(value))))
        })
        .collect()
}

/// A crate's folder (the nearest one above `file` with a `Cargo.toml`).
fn crate_folder(file: &Path) -> PathBuf {
    file.ancestors()
        .skip(1)
        .find(|dir| dir.join("Cargo.toml").exists())
        .map_or_else(root, Path::to_path_buf)
}

/// Code shared between crates is a crate the others depend on (`ralph-loop`'s library,
/// `ralph-test-support`), not a file of one compiled into another by `#[path]`: such a file
/// would be built under the other crate's lints and dependencies, and its own crate could not
/// tell it is used there.
#[test]
fn no_path_attribute_reaches_into_another_crate() {
    let root = root();
    let mut files = rust_files(&root.join("crates"));
    files.extend(rust_files(&root.join("xtask")));
    files.extend(rust_files(&root.join("fuzz")));
    let mut problems = Vec::new();
    for file in files {
        let folder = crate_folder(&file);
        for (line, target) in path_attributes(&file, &read(&file)) {
            if !target.starts_with(&folder) {
                problems.push(format!(
                    "{}:{line}: `#[path]` takes {} from another crate: depend on that crate \
                     (ralph-test-support for test servers and helpers)",
                    relative(&file),
                    relative(&target)
                ));
            }
        }
    }
    assert_none(
        "a file is compiled into another crate by `#[path]`",
        &problems,
    );
}

/// `ralph-test-support` depends on no ralph crate (a crate's tests can use it without building
/// the crates above it), and no package builds with it: only tests may.
#[test]
fn test_support_is_for_tests_only_and_depends_on_no_ralph_crate() {
    let graph = workspace_dependencies();
    let mut problems = Vec::new();
    let deps = graph
        .get(TEST_SUPPORT)
        .unwrap_or_else(|| panic!("{TEST_SUPPORT} is not a workspace package"));
    for dep in deps.iter().filter(|dep| dep.starts_with("ralph-")) {
        problems.push(format!(
            "crates/{TEST_SUPPORT}/Cargo.toml: depends on {dep}; it stands on no ralph crate"
        ));
    }
    for (package, deps) in &graph {
        if deps.iter().any(|dep| dep == TEST_SUPPORT) {
            problems.push(format!(
                "{package}: builds with {TEST_SUPPORT}; only [dev-dependencies] may name it"
            ));
        }
    }
    problems.sort();
    assert_none("test support outside tests", &problems);
}

/// The `#[path]` reader resolves as rustc does: a reach into a sibling crate leaves the folder.
#[test]
fn path_attributes_resolve_against_the_files_folder() {
    let file = Path::new("/w/crates/a/tests/main.rs");
    let text = "mod x;\n#[path = \"../../b/tests/common/s.rs\"]\nmod s;\n\
                #[path = \"../examples/e.rs\"]\nmod e;\n";
    assert_eq!(
        path_attributes(file, text),
        [
            (2, PathBuf::from("/w/crates/b/tests/common/s.rs")),
            (4, PathBuf::from("/w/crates/a/examples/e.rs")),
        ]
    );
}
