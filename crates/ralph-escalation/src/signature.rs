//! Error signatures: what makes two failed attempts "the same error".
//!
//! A failed attempt's signature is the set of its failing checks (command and exit code) with
//! their output tails, normalised so that what changes from run to run without the error
//! changing does not make it look new, then hashed (FNV-1a, 64 bits, stable across Rust
//! versions and machines).
//!
//! Normalisation, line by line:
//!
//! 1. ANSI escape sequences (colours, cursor moves) are removed; `\r` ends a line.
//! 2. A truncated tail loses its first line: where a 4096-byte cut falls moves with the length
//!    of everything before it, so that first line is a fragment that differs between runs.
//! 3. Progress lines of build tools (`Compiling`, `Checking`, `Finished`, `Running`, `Blocking`,
//!    `Downloading`, `Downloaded`, `Updating`, `Locking`, `Fresh`, `Documenting`) are dropped:
//!    they depend on what was cached, not on the error.
//! 4. Temporary paths become `<tmp>`: `/tmp/X`, `/private/tmp/X`, `/dev/shm/X`,
//!    `/var/folders/../../T/X` (macOS), `...\AppData\Local\Temp\X` (Windows), and `.tmpXXXXXX`
//!    names (Rust's tempfile), where `X` is the random first component; the rest of the path
//!    stays.
//! 5. Timestamps become `<ts>`: dates (`2024-05-01`, with an optional `T`/space time, fraction
//!    and zone) and clock times (`12:03:04`, `12:03:04.123`).
//! 6. UUIDs become `<uuid>`; hex ids become `<hex>`: `0x`-prefixed numbers, and words of 7 or
//!    more hex digits holding both a digit and a letter (git hashes, cargo's `-1a2b3c4d...`
//!    suffixes, addresses).
//! 7. Durations become `<dur>`: a number with a unit (`ns`, `us`, `µs`, `ms`, `s`, `sec`,
//!    `secs`, `second(s)`, `m`, `min`, `mins`, `minute(s)`, `h`), with or without a space
//!    (`0.52s`, `12 ms`, jest's `1.234 s`).
//! 8. Numbers become `N`: line and column numbers, counts, pids, sizes. Digits that continue a
//!    word (`E0308`, `test_case_2`, `x86_64`) are part of a name and stay.
//! 9. Runs of spaces and tabs become one space; lines are trimmed, blank lines dropped; runs of
//!    three or more of the same `=`, `-`, `_`, `*` or `~` (rules padded to the terminal width)
//!    become three.
//!
//! Checks are sorted by command, so the signature is a set, not a sequence.

use std::fmt::Write as _;

use ralph_engine::CheckResult;

/// A failed attempt's signature: the hash and the normalised text it was computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// 16 lowercase hex digits.
    pub hash: String,
    /// The normalised failing checks the hash covers.
    pub text: String,
}

/// The signature of an attempt's failing checks; `None` when none failed.
pub fn signature(results: &[CheckResult]) -> Option<Signature> {
    let mut failing: Vec<&CheckResult> = results.iter().filter(|r| !r.passed()).collect();
    if failing.is_empty() {
        return None;
    }
    failing.sort_by(|a, b| a.command.cmp(&b.command));
    let mut text = String::new();
    for r in failing {
        let _ = writeln!(text, "$ {} ({})", r.command, r.status());
        text.push_str(&normalize(r.tail.as_deref().unwrap_or(""), r.truncated));
    }
    Some(Signature {
        hash: format!("{:016x}", fnv1a(text.as_bytes())),
        text,
    })
}

/// Normalises a check's output tail (see the module documentation); one line per kept line,
/// each ending in `\n`.
pub fn normalize(tail: &str, truncated: bool) -> String {
    let clean = ralph_marker::strip_ansi(tail);
    let mut lines = clean.split(['\n', '\r']);
    if truncated {
        lines.next();
    }
    let mut out = String::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() || is_progress(line) {
            continue;
        }
        let line = squeeze(&tokens(&temp_paths(line)));
        if !line.is_empty() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The line of a failed check's output a person reads as its error: the first that says
/// `error`, `fail` or `panic`, else the first; build tools' progress lines, blank lines and a
/// truncated tail's cut first line left out; cut to 100 characters. `None` when there is none.
pub fn error_line(result: &CheckResult) -> Option<String> {
    const MAX: usize = 100;
    let clean = ralph_marker::strip_ansi(result.tail.as_deref()?);
    let mut lines = clean.split(['\n', '\r']);
    if result.truncated {
        lines.next();
    }
    let lines: Vec<&str> = lines
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_progress(l))
        .collect();
    let says_error = |l: &&&str| {
        let lower = l.to_lowercase();
        ["error", "fail", "panic"].iter().any(|w| lower.contains(w))
    };
    let line = lines.iter().find(says_error).or(lines.first())?;
    Some(match line.chars().count() > MAX {
        true => format!("{}…", line.chars().take(MAX - 1).collect::<String>()),
        false => (*line).to_owned(),
    })
}

pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

const PROGRESS: &[&str] = &[
    "Compiling ",
    "Checking ",
    "Finished ",
    "Running ",
    "Blocking ",
    "Downloading ",
    "Downloaded ",
    "Updating ",
    "Locking ",
    "Fresh ",
    "Documenting ",
];

fn is_progress(line: &str) -> bool {
    PROGRESS.iter().any(|p| line.starts_with(p))
}

fn is_path_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '/' | '\\' | ':' | '"' | '\'' | '(' | ')' | ',' | '`')
}

/// Replaces temporary-folder prefixes and their random first component with `<tmp>`.
fn temp_paths(line: &str) -> String {
    const ROOTS: &[(&str, usize)] = &[
        // (root, components after it that are random)
        ("/private/var/folders/", 4),
        ("/var/folders/", 4),
        ("/private/tmp/", 1),
        ("/tmp/", 1),
        ("/dev/shm/", 1),
        ("\\AppData\\Local\\Temp\\", 1),
    ];
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    'scan: while !rest.is_empty() {
        for (root, components) in ROOTS {
            if let Some(after) = rest.strip_prefix(root) {
                // A Windows path starts with its drive and user folder, already copied to
                // `out`: drop them back to the last word boundary.
                if root.starts_with('\\') {
                    let keep = out
                        .rfind(|c: char| c.is_whitespace() || c == '"' || c == '(')
                        .map_or(0, |i| i + 1);
                    out.truncate(keep);
                }
                let sep = if root.contains('\\') { '\\' } else { '/' };
                let mut after = after;
                for i in 0..*components {
                    let end = after.find(|c| !is_path_char(c)).unwrap_or(after.len());
                    after = &after[end..];
                    if i + 1 < *components {
                        match after.strip_prefix(sep) {
                            Some(a) => after = a,
                            None => break,
                        }
                    }
                }
                out.push_str("<tmp>");
                rest = after;
                continue 'scan;
            }
        }
        if let Some(after) = rest.strip_prefix(".tmp") {
            let n = after
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .count();
            if n == 6 && !out.ends_with(|c: char| c.is_alphanumeric()) {
                out.push_str("<tmp>");
                rest = &after[n..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

const UNITS: &[&str] = &[
    "seconds", "second", "minutes", "minute", "mins", "secs", "min", "sec", "ms", "us", "µs", "ns",
    "s", "m", "h",
];

/// Timestamps, ids, durations and numbers (steps 5 to 8).
fn tokens(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        let boundary = i == 0 || !is_word(chars[i - 1]);
        if boundary && chars[i].is_ascii_alphanumeric() {
            if let Some(n) = timestamp(&chars[i..]) {
                out.push_str("<ts>");
                i += n;
                continue;
            }
            if let Some(n) = uuid(&chars[i..]) {
                out.push_str("<uuid>");
                i += n;
                continue;
            }
            if let Some(n) = hex_id(&chars[i..]) {
                out.push_str("<hex>");
                i += n;
                continue;
            }
            if chars[i].is_ascii_digit() {
                let n = number(&chars[i..]);
                if let Some(u) = unit(&chars[i + n..]) {
                    out.push_str("<dur>");
                    i += n + u;
                } else {
                    out.push('N');
                    i += n;
                }
                continue;
            }
        }
        // Copy the rest of a word whole, so digits inside it stay.
        if is_word(chars[i]) {
            while i < chars.len() && is_word(chars[i]) {
                out.push(chars[i]);
                i += 1;
            }
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn digits(chars: &[char], at: usize, min: usize, max: usize) -> Option<usize> {
    let n = chars[at.min(chars.len())..]
        .iter()
        .take(max)
        .take_while(|c| c.is_ascii_digit())
        .count();
    (n >= min).then_some(n)
}

fn is(chars: &[char], at: usize, c: char) -> bool {
    chars.get(at) == Some(&c)
}

/// `YYYY-MM-DD[(T| )HH:MM[:SS[.f+]]][Z|±HH[:]MM]` or `H:MM:SS[.f+]`; the length matched.
fn timestamp(chars: &[char]) -> Option<usize> {
    let time = |at: usize| -> Option<usize> {
        let h = digits(chars, at, 1, 2)?;
        let mut i = at + h;
        if !is(chars, i, ':') {
            return None;
        }
        i += 1 + digits(chars, i + 1, 2, 2)?;
        if is(chars, i, ':') {
            i += 1 + digits(chars, i + 1, 2, 2)?;
            if is(chars, i, '.') || is(chars, i, ',') {
                if let Some(f) = digits(chars, i + 1, 1, 9) {
                    i += 1 + f;
                }
            }
        }
        Some(i)
    };
    if digits(chars, 0, 4, 4) == Some(4)
        && is(chars, 4, '-')
        && digits(chars, 5, 2, 2).is_some()
        && is(chars, 7, '-')
        && digits(chars, 8, 2, 2).is_some()
    {
        let mut i = 10;
        if (is(chars, i, 'T') || is(chars, i, ' '))
            && chars.get(i + 1).is_some_and(char::is_ascii_digit)
        {
            if let Some(end) = time(i + 1) {
                i = end;
                if is(chars, i, 'Z') {
                    i += 1;
                } else if (is(chars, i, '+') || is(chars, i, '-'))
                    && digits(chars, i + 1, 2, 2).is_some()
                {
                    i += 3;
                    if is(chars, i, ':') {
                        i += 1;
                    }
                    i += digits(chars, i, 2, 2).unwrap_or(0);
                }
            }
        }
        return Some(i);
    }
    // A clock time needs its seconds, so `12:5` (line:column) stays two numbers.
    let end = time(0)?;
    let colons = chars[..end].iter().filter(|c| **c == ':').count();
    (colons == 2
        && !chars
            .get(end)
            .is_some_and(|c| c.is_ascii_digit() || *c == ':'))
    .then_some(end)
}

fn hex_run(chars: &[char], at: usize) -> usize {
    chars[at.min(chars.len())..]
        .iter()
        .take_while(|c| c.is_ascii_hexdigit())
        .count()
}

/// 8-4-4-4-12 hex digits.
fn uuid(chars: &[char]) -> Option<usize> {
    let mut i = 0;
    for (k, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if k > 0 {
            if !is(chars, i, '-') {
                return None;
            }
            i += 1;
        }
        if hex_run(chars, i) != len {
            return None;
        }
        i += len;
    }
    Some(i)
}

/// `0x` + hex digits, or a whole word of >= 7 hex digits mixing digits and letters.
fn hex_id(chars: &[char]) -> Option<usize> {
    if is(chars, 0, '0') && (is(chars, 1, 'x') || is(chars, 1, 'X')) {
        let n = hex_run(chars, 2);
        if n > 0 && !chars.get(2 + n).is_some_and(|c| is_word(*c)) {
            return Some(2 + n);
        }
    }
    let n = hex_run(chars, 0);
    let word_ends = !chars.get(n).is_some_and(|c| is_word(*c));
    let digit = chars[..n].iter().any(char::is_ascii_digit);
    let letter = chars[..n].iter().any(char::is_ascii_alphabetic);
    (n >= 7 && word_ends && digit && letter).then_some(n)
}

/// Digits, with an optional fraction; the length matched.
fn number(chars: &[char]) -> usize {
    let mut n = chars.iter().take_while(|c| c.is_ascii_digit()).count();
    if is(chars, n, '.') && chars.get(n + 1).is_some_and(char::is_ascii_digit) {
        n += 1 + chars[n + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
    }
    n
}

/// A duration unit right after a number (one optional space), ending its word.
fn unit(chars: &[char]) -> Option<usize> {
    let space = usize::from(is(chars, 0, ' '));
    UNITS.iter().find_map(|u| {
        let u: Vec<char> = u.chars().collect();
        let end = space + u.len();
        (chars.len() >= end
            && chars[space..end] == u[..]
            && !chars.get(end).is_some_and(|c| is_word(*c)))
        .then_some(end)
    })
}

/// Step 9: spaces and rules.
fn squeeze(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut run: Option<(char, usize)> = None;
    for c in line.chars() {
        let c = if c == '\t' { ' ' } else { c };
        match run {
            Some((r, n)) if r == c => {
                run = Some((r, n + 1));
                let limit = if c == ' ' {
                    1
                } else if "=-_*~".contains(c) {
                    3
                } else {
                    usize::MAX
                };
                if n + 1 > limit {
                    continue;
                }
            }
            _ => run = Some((c, 1)),
        }
        out.push(c);
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(command: &str, tail: &str) -> CheckResult {
        CheckResult {
            command: command.into(),
            exit_code: Some(101),
            duration_ms: 10,
            tail: Some(tail.into()),
            truncated: false,
            timed_out: false,
        }
    }

    fn same(a: &str, b: &str) {
        assert_eq!(normalize(a, false), normalize(b, false));
        assert_eq!(
            signature(&[check("cargo test", a)]),
            signature(&[check("cargo test", b)])
        );
    }

    const RUSTC_1: &str = "\u{1b}[0m\u{1b}[1m\u{1b}[38;5;9merror[E0308]\u{1b}[0m\u{1b}[0m\u{1b}[1m: mismatched types\u{1b}[0m
   Compiling cart v0.1.0 (/tmp/.tmpA1b2C3/cart)
error[E0308]: mismatched types
  --> src/cart.rs:42:18
   |
42 |     let total: u32 = price * 1.5;
   |                ---   ^^^^^^^^^^^ expected `u32`, found `f64`
   |                |
   |                expected due to this

For more information about this error, try `rustc --explain E0308`.
error: could not compile `cart` (lib) due to 1 previous error
";

    const RUSTC_2: &str = "\u{1b}[0m\u{1b}[1m\u{1b}[38;5;9merror[E0308]\u{1b}[0m\u{1b}[0m\u{1b}[1m: mismatched types\u{1b}[0m
   Compiling cart v0.1.0 (/tmp/.tmpZz9Yy8/cart)
error[E0308]: mismatched types
  --> src/cart.rs:57:18
   |
57 |     let total: u32 = price * 1.5;
   |                ---   ^^^^^^^^^^^ expected `u32`, found `f64`
   |                |
   |                expected due to this

For more information about this error, try `rustc --explain E0308`.
error: could not compile `cart` (lib) due to 1 previous error
";

    #[test]
    fn rustc_errors_that_moved_lines_are_the_same() {
        same(RUSTC_1, RUSTC_2);
        let n = normalize(RUSTC_1, false);
        assert!(n.contains("error[E0308]: mismatched types"), "{n}");
        assert!(n.contains("--> src/cart.rs:N:N"), "{n}");
        assert!(!n.contains("Compiling"), "{n}");
    }

    #[test]
    fn a_different_rustc_error_is_different() {
        let other = RUSTC_1.replace("E0308", "E0425").replace(
            "mismatched types",
            "cannot find value `price` in this scope",
        );
        assert_ne!(
            signature(&[check("cargo build", RUSTC_1)]),
            signature(&[check("cargo build", &other)])
        );
    }

    const CARGO_TEST_1: &str =
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.52s
     Running unittests src/lib.rs (target/debug/deps/cart-1a2b3c4d5e6f7a8b)

running 3 tests
test tests::adds ... ok
test tests::totals ... FAILED
test tests::removes ... ok

failures:

---- tests::totals stdout ----
thread 'tests::totals' panicked at src/lib.rs:88:9:
assertion `left == right` failed
  left: 31
 right: 30
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::totals

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--lib`
";

    #[test]
    fn cargo_test_failures_with_new_timings_hashes_and_lines_are_the_same() {
        let second = CARGO_TEST_1
            .replace("0.52s", "1.07s")
            .replace("1a2b3c4d5e6f7a8b", "9f8e7d6c5b4a3928")
            .replace("src/lib.rs:88:9", "src/lib.rs:102:9")
            .replace("finished in 0.00s", "finished in 0.13s")
            .replace("left: 31", "left: 32");
        same(CARGO_TEST_1, &second);
        let n = normalize(CARGO_TEST_1, false);
        assert!(n.contains("test tests::totals ... FAILED"), "{n}");
        assert!(n.contains("finished in <dur>"), "{n}");
        assert!(
            n.contains("thread 'tests::totals' panicked at src/lib.rs:N:N:"),
            "{n}"
        );
    }

    #[test]
    fn a_different_failing_test_is_different() {
        let other = CARGO_TEST_1.replace("tests::totals", "tests::removes");
        assert_ne!(
            signature(&[check("cargo test", CARGO_TEST_1)]),
            signature(&[check("cargo test", &other)])
        );
    }

    const PYTEST_1: &str =
        "============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0
rootdir: /home/ann/shop
collected 4 items

tests/test_cart.py ..F.                                                  [100%]

=================================== FAILURES ===================================
________________________________ test_total ____________________________________

tmp_path = PosixPath('/tmp/pytest-of-ann/pytest-12/test_total0')

    def test_total(tmp_path):
>       assert total([1, 2]) == 4
E       assert 3 == 4
E        +  where 3 = total([1, 2])

tests/test_cart.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total - assert 3 == 4
========================= 1 failed, 3 passed in 0.12s ==========================
";

    #[test]
    fn pytest_failures_with_new_tmp_dirs_and_timings_are_the_same() {
        let second = PYTEST_1
            .replace("pytest-12", "pytest-13")
            .replace("in 0.12s =", "in 1.50s =")
            .replace("test_cart.py:14", "test_cart.py:19");
        same(PYTEST_1, &second);
        let n = normalize(PYTEST_1, false);
        assert!(
            n.contains("tmp_path = PosixPath('<tmp>/pytest-N/test_total0')"),
            "{n}"
        );
        assert!(n.contains("=== N failed, N passed in <dur> ==="), "{n}");
    }

    const JEST_1: &str = " FAIL  src/sum.test.js
  ● sum › adds two numbers

    expect(received).toBe(expected) // Object.is equality

    Expected: 4
    Received: 5

      3 | test('adds two numbers', () => {
    > 4 |   expect(sum(2, 2)).toBe(4);
        |                     ^
      5 | });

      at Object.toBe (src/sum.test.js:4:21)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 total
Snapshots:   0 total
Time:        1.234 s
Ran all test suites.
";

    #[test]
    fn jest_failures_with_new_timings_are_the_same() {
        let second = JEST_1
            .replace("1.234 s", "0.871 s")
            .replace(":4:21", ":6:21");
        same(JEST_1, &second);
        assert!(normalize(JEST_1, false).contains("Time: <dur>"));
    }

    #[test]
    fn timestamps_uuids_and_addresses_are_normalised() {
        let n = normalize(
            "[2026-11-23T08:45:12.123Z] job 3f2a1b9c-0d4e-4f5a-8b6c-7d8e9f0a1b2c crashed at 0x7ffd5e8c; commit a1b2c3d at 12:03:04\n",
            false,
        );
        assert_eq!(
            n,
            "[<ts>] job <uuid> crashed at <hex>; commit <hex> at <ts>\n"
        );
    }

    #[test]
    fn digits_inside_names_stay() {
        assert_eq!(
            normalize("error[E0425] in test_case_2 on x86_64 line 7\n", false),
            "error[E0425] in test_case_2 on x86_64 line N\n"
        );
    }

    #[test]
    fn other_temp_dirs_are_normalised() {
        assert_eq!(
            normalize(
                "/var/folders/x1/abc123/T/.tmpQ1w2E3/a.rs C:\\Users\\ann\\AppData\\Local\\Temp\\xyz9\\b.py\n",
                false
            ),
            "<tmp>/a.rs <tmp>\\b.py\n"
        );
    }

    #[test]
    fn a_truncated_tail_drops_its_partial_first_line() {
        assert_eq!(
            normalize("rt of a cut line\nerror: boom\n", true),
            normalize("e part of a cut line\nerror: boom\n", true)
        );
    }

    #[test]
    fn the_signature_is_a_set_of_checks() {
        let a = check("a", "x failed");
        let b = check("b", "y failed");
        assert_eq!(
            signature(&[a.clone(), b.clone()]),
            signature(&[b.clone(), a.clone()])
        );
        assert_ne!(signature(std::slice::from_ref(&a)), signature(&[a, b]));
    }

    #[test]
    fn passing_checks_have_no_signature() {
        let ok = CheckResult {
            exit_code: Some(0),
            tail: None,
            ..check("t", "")
        };
        assert_eq!(signature(&[ok]), None);
    }

    #[test]
    fn the_hash_is_stable() {
        // Pinned: a signature must not change between ralph versions for the same output.
        assert_eq!(
            signature(&[check("t", "boom at line 3\n")]).unwrap().hash,
            format!("{:016x}", fnv1a(b"$ t (exit 101)\nboom at line N\n"))
        );
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
