//! Property tests: how output is split into chunks never changes what the scanner finds, and
//! no input makes it panic.

use proptest::prelude::*;
use proptest::sample::Index;
use ralph_marker::{Finding, MarkerScanner, scan};

/// Pieces that make near-markers, markers, escapes and their mistakes likely.
const FRAGMENTS: &[&[u8]] = &[
    b"<",
    b"<!",
    b"<!--",
    b"<!-- ",
    b"-->",
    b"--",
    b"-",
    b">",
    b" ",
    b"\n",
    b"\t",
    b"ralph:",
    b"RALPH:",
    b"rAlph:",
    b"ralph",
    b"state",
    b"idle",
    b"Blocked",
    b"9x",
    b"reason=",
    b"k=",
    b"=",
    b"\"",
    b"\\",
    b"\\\"",
    b"\\\\",
    b"x",
    "\u{e9}".as_bytes(),
    b"\xff",
    b"\x1b",
    b"\x1b[",
    b"\x1b[1m",
    b"\x1b[0m",
    b"\x1b[38;5;12m",
    b"\x1b]",
    b"\x1b]0;title\x07",
    b"\x07",
    b"\x1b\\",
    b"\x1b(B",
    b"m",
    b";",
    b"<!-- ralph:state idle -->",
    b"<!-- ralph:state blocked reason=\"a \\\"b\\\"\" n=1 -->",
];

fn text(long: bool) -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        12 => prop::sample::select(FRAGMENTS).prop_map(<[u8]>::to_vec),
        2 => prop::collection::vec(any::<u8>(), 0..8),
        // Long enough to cross the 4 KiB limit, and the carry, at any point.
        if long { 1 } else { 0 } => (4070usize..4110).prop_map(|n| vec![b' '; n]),
    ];
    prop::collection::vec(fragment, 0..48).prop_map(|parts| parts.concat())
}

fn scanner(ansi: bool) -> MarkerScanner {
    if ansi {
        MarkerScanner::skipping_ansi()
    } else {
        MarkerScanner::new()
    }
}

fn whole(text: &[u8], ansi: bool) -> Vec<Finding> {
    chunked(text, &[], ansi)
}

/// Scans `text` split at `splits` (positions in any order).
fn chunked(text: &[u8], splits: &[Index], ansi: bool) -> Vec<Finding> {
    let mut cuts: Vec<usize> = splits.iter().map(|i| i.index(text.len() + 1)).collect();
    cuts.push(text.len());
    cuts.sort_unstable();
    let mut scanner = scanner(ansi);
    let mut found = Vec::new();
    let mut start = 0;
    for cut in cuts {
        scanner.feed(&text[start..cut], &mut found);
        start = cut;
    }
    scanner.finish(&mut found);
    assert_eq!(scanner.bytes_seen(), text.len() as u64);
    found
}

fn byte_by_byte(text: &[u8], ansi: bool) -> Vec<Finding> {
    let mut scanner = scanner(ansi);
    let mut found = Vec::new();
    for b in text {
        scanner.feed(std::slice::from_ref(b), &mut found);
    }
    scanner.finish(&mut found);
    found
}

fn without_esc(mut text: Vec<u8>) -> Vec<u8> {
    text.retain(|&b| b != 0x1b);
    text
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        // Integration tests have no lib.rs next to them to store regressions by.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_chunking_finds_what_scan_finds(
        text in text(true),
        splits in prop::collection::vec(any::<Index>(), 0..24),
    ) {
        prop_assert_eq!(chunked(&text, &splits, false), scan(&text));
    }

    #[test]
    fn any_chunking_finds_the_same_when_skipping_ansi(
        text in text(true),
        splits in prop::collection::vec(any::<Index>(), 0..24),
    ) {
        prop_assert_eq!(chunked(&text, &splits, true), whole(&text, true));
    }

    #[test]
    fn byte_by_byte_feeding_finds_what_scan_finds(text in text(false), ansi in any::<bool>()) {
        prop_assert_eq!(byte_by_byte(&text, ansi), whole(&text, ansi));
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        text in prop::collection::vec(any::<u8>(), 0..512),
        splits in prop::collection::vec(any::<Index>(), 0..8),
        ansi in any::<bool>(),
    ) {
        let found = chunked(&text, &splits, ansi);
        prop_assert_eq!(found, whole(&text, ansi));
    }

    #[test]
    fn findings_are_in_offset_order(text in text(true), ansi in any::<bool>()) {
        let found = whole(&text, ansi);
        prop_assert!(found.windows(2).all(|w| w[0].offset() < w[1].offset()));
    }

    #[test]
    fn skipping_ansi_changes_nothing_without_escapes(text in text(true)) {
        let text = without_esc(text);
        prop_assert_eq!(whole(&text, true), scan(&text));
    }

    /// Colouring the output (SGR sequences between any bytes) moves offsets, nothing else.
    #[test]
    fn inserted_escapes_are_ignored(
        text in text(false),
        inserts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        const SGR: &[u8] = b"\x1b[1;31m";
        // Short enough that no window reaches the 4 KiB limit, coloured or not.
        let mut text = without_esc(text);
        text.truncate(3000);
        let mut at: Vec<usize> = inserts.iter().map(|i| i.index(text.len() + 1)).collect();
        at.sort_unstable();
        let mut coloured = Vec::new();
        let mut shift = Vec::with_capacity(text.len());
        let mut next = at.iter().peekable();
        for (i, b) in text.iter().enumerate() {
            while next.next_if(|&&p| p == i).is_some() {
                coloured.extend_from_slice(SGR);
            }
            shift.push((coloured.len() - i) as u64);
            coloured.push(*b);
        }
        coloured.extend(std::iter::repeat_n(SGR, next.count()).flatten());
        let expected: Vec<Finding> = scan(&text)
            .into_iter()
            .map(|mut f| {
                match &mut f {
                    Finding::Marker(m) => m.offset += shift[m.offset as usize],
                    Finding::Diagnostic(d) => d.offset += shift[d.offset as usize],
                }
                f
            })
            .collect();
        prop_assert_eq!(whole(&coloured, true), expected);
    }
}
