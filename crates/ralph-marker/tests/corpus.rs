//! The fixture corpus in `fixtures/markers/`: each file's findings are pinned by a snapshot
//! named after the file. Files named `ansi-*` are scanned as terminal output.

use std::path::Path;

use ralph_marker::{Finding, MarkerScanner};

fn scan_file(text: &[u8], ansi: bool, chunk: usize) -> Vec<Finding> {
    let mut scanner = if ansi {
        MarkerScanner::skipping_ansi()
    } else {
        MarkerScanner::new()
    };
    let mut found = Vec::new();
    for piece in text.chunks(chunk) {
        scanner.feed(piece, &mut found);
    }
    scanner.finish(&mut found);
    found
}

#[test]
fn corpus_findings_match_their_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/markers");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/markers is readable")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the corpus lost files: {files:?}");
    for path in files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("UTF-8 name");
        let text = std::fs::read(&path).expect("fixture is readable");
        let ansi = name.starts_with("ansi-");
        let findings = scan_file(&text, ansi, text.len().max(1));
        // Streaming must agree with the whole-text scan on every fixture.
        for chunk in [1, 2, 3, 7, 4096] {
            assert_eq!(
                scan_file(&text, ansi, chunk),
                findings,
                "{name}, chunks of {chunk}"
            );
        }
        insta::assert_debug_snapshot!(name, findings);
    }
}
