//! Every RALPH.md in `fixtures/ralph-md/` parses to its snapshot: for `valid-*` files the config,
//! the prompt body and the warnings; for `err-*` files the rendered error lines.

use std::fs;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ralph-md")
}

fn render_outcome(name: &str, text: &str) -> String {
    match ralph_frontmatter::parse("RALPH.md", text) {
        Ok(parsed) => {
            assert!(
                name.starts_with("valid-"),
                "{name} parsed, but only valid-* fixtures should"
            );
            let warnings = if parsed.warnings.is_empty() {
                "(none)".to_owned()
            } else {
                parsed
                    .warnings
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            format!(
                "config: {:#?}\n\nbody:\n{}\n\nwarnings:\n{warnings}\n",
                parsed.file.config, parsed.file.body
            )
        }
        Err(errors) => {
            assert!(
                name.starts_with("err-"),
                "{name} failed, but only err-* fixtures should:\n{errors:#?}"
            );
            assert!(!errors.errors.is_empty(), "{name}: no errors listed");
            let mut lines: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
            lines.insert(0, errors.to_string());
            lines.join("\n") + "\n"
        }
    }
}

#[test]
fn every_fixture_matches_its_snapshot() {
    let mut paths: Vec<PathBuf> = fs::read_dir(fixtures_dir())
        .expect("fixtures/ralph-md exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 30, "expected at least 30 fixtures");
    for path in paths {
        let name = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .expect("UTF-8 file name")
            .to_owned();
        let text = fs::read_to_string(&path).expect("UTF-8 fixture");
        let outcome = render_outcome(&name, &text);
        insta::with_settings!({
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => format!("fixtures/ralph-md/{name}.md"),
        }, {
            insta::assert_snapshot!(name, outcome);
        });
    }
}
