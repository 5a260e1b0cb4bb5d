//! Any prd.json ralph accepts, any sequence of story edits: the text ralph writes parses back,
//! with exactly the `passes` and `notes` that were set and every other value unchanged.
//!
//! The input is the file's text, then a NUL, then the edits, two bytes each (story index,
//! passes, or a block as escalation does it); an odd edit byte count adds notes to each edit. A prd.json with `\0` appended is a
//! useful seed (`cargo fuzz run prd_rewrite corpus/prd_rewrite ../crates/ralph-cli/templates`).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ralph_escalation::{Passes, Prd};

fuzz_target!(|data: &[u8]| {
    let (text, edits) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, &[1, 2][..]),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let path = Path::new("prd.json");
    let Ok(mut prd) = Prd::parse(path, text) else {
        return;
    };
    if prd.stories().is_empty() {
        return;
    }
    let notes = (edits.len() % 2 == 1).then_some("tried \"twice\"\n\\ see progress.txt:3");
    for edit in edits.chunks_exact(2) {
        let id = prd.stories()[usize::from(edit[0]) % prd.stories().len()].id.clone();
        // A fourth choice blocks the story the way escalation does, adding to its notes.
        let passes = match usize::from(edit[1]) % 4 {
            3 => {
                prd.block(&id, "blocked by ralph: same error").unwrap();
                Passes::Blocked
            }
            n => {
                let passes = [Passes::Yes, Passes::No, Passes::Blocked][n];
                prd.set(&id, passes, notes).unwrap();
                passes
            }
        };
        let written = prd.to_text();
        let again = Prd::parse(path, &written).expect("ralph's own rewrite parses");
        assert_eq!(again.story(&id).unwrap().passes, passes);
        let before: Vec<_> = prd.stories().iter().map(|s| (&s.id, s.passes, &s.json)).collect();
        let after: Vec<_> = again.stories().iter().map(|s| (&s.id, s.passes, &s.json)).collect();
        assert_eq!(before, after);
    }
});
