//! Parsing any text never panics, and every error points inside the file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Lines as the parser counts them: CRLF, LF and a lone CR each end one.
    let lines = text.replace("\r\n", "\n").replace('\r', "\n").lines().count().max(1) + 1;
    match ralph_frontmatter::parse("RALPH.md", text) {
        Ok(parsed) => {
            for w in parsed.warnings {
                assert!(w.line >= 1 && w.line <= lines && w.column >= 1);
            }
        }
        Err(errors) => {
            for e in errors.errors {
                assert!(e.line >= 1 && e.line <= lines && e.column >= 1, "{e}");
            }
        }
    }
});
