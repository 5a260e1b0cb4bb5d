//! Streaming the input in chunks (sizes taken from its first bytes) finds exactly what scanning
//! it whole finds, in both scanner modes, and nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ralph_marker::{Finding, MarkerScanner};

fn streamed(mut scanner: MarkerScanner, text: &[u8], sizes: &[u8]) -> Vec<Finding> {
    let mut found = Vec::new();
    let mut rest = text;
    let mut i = 0;
    while !rest.is_empty() {
        let size = usize::from(sizes.get(i % sizes.len().max(1)).copied().unwrap_or(7)).max(1);
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        scanner.feed(chunk, &mut found);
        rest = tail;
        i += 1;
    }
    scanner.finish(&mut found);
    found
}

fuzz_target!(|data: &[u8]| {
    let (sizes, text) = data.split_at(data.len().min(8));
    assert_eq!(
        streamed(MarkerScanner::new(), text, sizes),
        ralph_marker::scan(text)
    );
    let whole_ansi = streamed(MarkerScanner::skipping_ansi(), text, &[u8::MAX]);
    assert_eq!(streamed(MarkerScanner::skipping_ansi(), text, sizes), whole_ansi);
});
