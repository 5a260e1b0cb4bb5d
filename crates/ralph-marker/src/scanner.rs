//! The streaming scanner: finds `<`, then decides each candidate from a bounded window.

use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::ansi::{self, Esc};
use crate::{Diagnostic, Finding, MAX_MARKER_LEN, Marker, grammar};

const OPEN: &[u8; 4] = b"<!--";
const PREFIX: &[u8; 6] = b"ralph:";

/// A streaming marker scanner.
///
/// Feed it output in chunks of any size with [`feed`](Self::feed), then call
/// [`finish`](Self::finish) at the end of the output. The findings, their offsets and their
/// order do not depend on how the output was split: they are exactly what [`scan`](crate::scan)
/// finds in the whole text.
///
/// Memory is bounded: the scanner keeps at most [`MAX_MARKER_LEN`] bytes of an undecided
/// candidate between chunks, and allocates only to report a finding (and once, for that
/// buffer).
///
/// ```
/// use ralph_marker::{MarkerScanner, last_state};
///
/// let mut scanner = MarkerScanner::new();
/// let mut found = Vec::new();
/// for chunk in [&b"working... <!-- ral"[..], b"ph:state id", b"le -->\n"] {
///     scanner.feed(chunk, &mut found);
/// }
/// scanner.finish(&mut found);
/// let state = last_state(&found).unwrap();
/// assert_eq!((state.name.as_str(), state.offset), ("idle", 11));
/// ```
#[derive(Debug, Clone, Default)]
pub struct MarkerScanner {
    /// Whether ANSI escape sequences are skipped.
    ansi: bool,
    /// Bytes fed so far.
    seen: u64,
    /// ANSI state at the end of the input scanned so far (outside the carry).
    esc: Esc,
    /// The undecided candidate: the last `carry.len()` bytes fed, starting with its `<`.
    carry: Vec<u8>,
    /// How far the decision on `carry` has got, so a byte-by-byte feed stays linear.
    probe: Probe,
}

impl MarkerScanner {
    /// A scanner for plain output: every byte is text.
    pub fn new() -> Self {
        Self::default()
    }

    /// A scanner for terminal (PTY) output: ANSI escape sequences are ignored wherever they
    /// occur, even inside a marker (`<!-- ralph:\x1b[1mstate\x1b[0m idle -->` is `state idle`).
    ///
    /// Recognised sequences: CSI (`ESC [`, parameter and intermediate bytes `0x20..=0x3F`, final
    /// byte `0x40..=0x7E`), OSC (`ESC ]` up to `BEL` or `ESC \`), and the other `ESC` sequences
    /// (`ESC`, intermediate bytes `0x20..=0x2F`, one final byte; this covers two-byte `ESC x`
    /// and `ESC ( B`). A byte that cannot continue a CSI or intermediate sequence ends it and is
    /// read as text. Offsets are still offsets in the raw output, and the 4 KiB limit counts raw
    /// bytes, escape sequences included.
    pub fn skipping_ansi() -> Self {
        Self {
            ansi: true,
            ..Self::default()
        }
    }

    /// Feeds the next chunk of output; findings completed by it are pushed to `found`.
    pub fn feed(&mut self, chunk: &[u8], found: &mut Vec<Finding>) {
        let base = self.seen;
        self.seen += chunk.len() as u64;
        let mut pos = 0;
        if !self.carry.is_empty() {
            match self.drain_carry(chunk, base, false, found) {
                Some(resume) => pos = resume,
                None => return,
            }
        }
        while pos < chunk.len() {
            let Some(i) = self.next_lt(&chunk[pos..]) else {
                return;
            };
            let at = pos + i;
            let window = &chunk[at..];
            let mut probe = Probe::default();
            match probe.run(window, self.ansi, false) {
                Step::NeedMore => {
                    // The window is shorter than MAX_MARKER_LEN, or the probe would have decided.
                    if self.carry.capacity() == 0 {
                        self.carry.reserve_exact(MAX_MARKER_LEN);
                    }
                    self.carry.extend_from_slice(window);
                    self.probe = probe;
                    return;
                }
                Step::Done(verdict) => {
                    pos = at + self.conclude(verdict, window, base + at as u64, found);
                }
            }
        }
    }

    /// Ends the output: an unterminated candidate is reported now.
    ///
    /// The scanner can be fed again afterwards: the next output is scanned as a new stream (no
    /// candidate spans the two) whose offsets continue from [`bytes_seen`](Self::bytes_seen).
    pub fn finish(&mut self, found: &mut Vec<Finding>) {
        if !self.carry.is_empty() {
            self.drain_carry(&[], self.seen, true, found);
        }
        self.carry.clear();
        self.probe = Probe::default();
        self.esc = Esc::Ground;
    }

    /// Total bytes fed so far.
    pub fn bytes_seen(&self) -> u64 {
        self.seen
    }

    /// Capacity of the carry buffer, for tests of the memory bound.
    #[cfg(test)]
    pub(crate) fn carry_capacity(&self) -> usize {
        self.carry.capacity()
    }

    /// The next `<` that may open a marker (outside escape sequences in ANSI mode).
    ///
    /// In plain mode only a `<` that starts `<!--`, or a prefix of it cut by the end of
    /// `bytes`, can open one; skipping the others changes nothing, since they would be
    /// decided [`Verdict::NotCandidate`], and it is much faster on text full of `<`.
    fn next_lt(&mut self, bytes: &[u8]) -> Option<usize> {
        if self.ansi {
            return ansi::find_lt(&mut self.esc, bytes);
        }
        static OPEN_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(OPEN));
        if let Some(i) = OPEN_FINDER.find(bytes) {
            return Some(i);
        }
        let tail = bytes.len().saturating_sub(OPEN.len() - 1);
        (tail..bytes.len()).find(|&i| OPEN.starts_with(&bytes[i..]))
    }

    /// Decides the carried candidate with the bytes of `chunk` (which starts at stream offset
    /// `base`), then any other candidate that starts in the carry. Returns where scanning
    /// resumes in `chunk`, or `None` if more input is needed.
    fn drain_carry(
        &mut self,
        chunk: &[u8],
        base: u64,
        eof: bool,
        found: &mut Vec<Finding>,
    ) -> Option<usize> {
        // Invariant: `carry` holds the stream bytes just before `chunk[taken..]`.
        let mut taken = 0;
        loop {
            let add = (MAX_MARKER_LEN - self.carry.len()).min(chunk.len() - taken);
            self.carry.extend_from_slice(&chunk[taken..taken + add]);
            taken += add;
            let verdict = match self.probe.run(&self.carry, self.ansi, eof) {
                Step::NeedMore => return None,
                Step::Done(verdict) => verdict,
            };
            let start = base + taken as u64 - self.carry.len() as u64;
            // Moved out for the borrow checker; this does not allocate.
            let mut carry = std::mem::take(&mut self.carry);
            let resume = self.conclude(verdict, &carry, start, found);
            // Bytes of the carry that came before `chunk`.
            let before = carry.len() - taken;
            let next = if resume < before {
                self.next_lt(&carry[resume..before])
            } else {
                None
            };
            match next {
                Some(i) => {
                    carry.drain(..resume + i);
                    self.carry = carry;
                    self.probe = Probe::default();
                }
                None => {
                    carry.clear();
                    self.carry = carry;
                    return Some(resume.saturating_sub(before));
                }
            }
        }
    }

    /// Reports the finding of a decided candidate that starts at stream offset `offset` with
    /// `window`; returns where scanning resumes, relative to the start of `window`.
    fn conclude(
        &mut self,
        verdict: Verdict,
        window: &[u8],
        offset: u64,
        found: &mut Vec<Finding>,
    ) -> usize {
        // The `<` and the `>` that bound every resume point are text.
        self.esc = Esc::Ground;
        let diagnostic = |message: String| Finding::Diagnostic(Diagnostic { offset, message });
        match verdict {
            Verdict::NotCandidate => 1,
            Verdict::TooLong => {
                found.push(diagnostic(format!(
                    "marker is longer than {MAX_MARKER_LEN} bytes (no `-->` in time)"
                )));
                1
            }
            Verdict::Unterminated => {
                found.push(diagnostic(
                    "unterminated marker: no `-->` before the end of the output".to_owned(),
                ));
                window.len()
            }
            Verdict::Closed { body_start, end } => {
                let parsed = if self.ansi {
                    let mut esc = Esc::Ground;
                    let mut text: Vec<u8> = window[body_start..end]
                        .iter()
                        .copied()
                        .filter(|&b| esc.step(b))
                        .collect();
                    text.truncate(text.len() - 3);
                    grammar::parse(&text)
                } else {
                    grammar::parse(&window[body_start..end - 3])
                };
                found.push(match parsed {
                    Ok(body) => Finding::Marker(Marker {
                        kind: body.kind,
                        name: body.name,
                        attrs: body.attrs,
                        offset,
                    }),
                    Err(message) => diagnostic(message),
                });
                end
            }
        }
    }
}

/// How far the opening `<!-- ralph:` has been matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// `n` bytes of `<!--` matched.
    Open(usize),
    /// `<!--` matched, skipping whitespace.
    Space,
    /// `n` bytes of `ralph:` matched (case-insensitively).
    Prefix(usize),
    /// A candidate: looking for `-->`; `dashes` counts the `-` just read (at most 2).
    Body { dashes: u8 },
}

/// The decision on the window that starts at a `<`, resumable as bytes arrive.
///
/// It depends only on the first [`MAX_MARKER_LEN`] bytes of the window and on whether the
/// output ends there, which is what makes chunked and whole-text scanning agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Probe {
    /// Window bytes already read.
    pos: usize,
    /// ANSI state after `pos` bytes (ANSI mode only).
    esc: Esc,
    stage: Stage,
    /// Where the body starts (just after `ralph:`), once in [`Stage::Body`].
    body_start: usize,
}

impl Default for Probe {
    fn default() -> Self {
        Self {
            pos: 0,
            esc: Esc::Ground,
            stage: Stage::Open(0),
            body_start: 0,
        }
    }
}

enum Step {
    NeedMore,
    Done(Verdict),
}

enum Verdict {
    /// Not `<!--` ws* `ralph:` (within the window).
    NotCandidate,
    /// A candidate closed by the `-->` that ends just before `end`.
    Closed { body_start: usize, end: usize },
    /// A candidate with no `-->` in a full window.
    TooLong,
    /// A candidate with no `-->` before the end of the output.
    Unterminated,
}

impl Probe {
    /// Reads `window[self.pos..]` (up to [`MAX_MARKER_LEN`]); `window` must extend what the
    /// previous calls saw.
    fn run(&mut self, window: &[u8], ansi: bool, eof: bool) -> Step {
        let limit = window.len().min(MAX_MARKER_LEN);
        while self.pos < limit {
            if let Stage::Body { dashes } = &mut self.stage {
                if !ansi {
                    // Plain text: jump from `>` to `>`.
                    let mut from = self.pos;
                    while let Some(i) = memchr::memchr(b'>', &window[from..limit]) {
                        let gt = from + i;
                        if gt >= self.body_start + 2 && window[gt - 2..gt] == *b"--" {
                            self.pos = gt + 1;
                            return self.closed();
                        }
                        from = gt + 1;
                    }
                    self.pos = limit;
                    break;
                }
                let b = window[self.pos];
                self.pos += 1;
                if self.esc.step(b) {
                    match b {
                        b'-' => *dashes = (*dashes + 1).min(2),
                        b'>' if *dashes == 2 => return self.closed(),
                        _ => *dashes = 0,
                    }
                }
                continue;
            }
            let b = window[self.pos];
            self.pos += 1;
            if ansi && !self.esc.step(b) {
                continue;
            }
            let lower = b.to_ascii_lowercase();
            self.stage = match self.stage {
                Stage::Open(n) if b == OPEN[n] => {
                    if n + 1 == OPEN.len() {
                        Stage::Space
                    } else {
                        Stage::Open(n + 1)
                    }
                }
                Stage::Space if b.is_ascii_whitespace() => Stage::Space,
                Stage::Space if lower == PREFIX[0] => Stage::Prefix(1),
                Stage::Prefix(n) if lower == PREFIX[n] => {
                    if n + 1 == PREFIX.len() {
                        self.body_start = self.pos;
                        Stage::Body { dashes: 0 }
                    } else {
                        Stage::Prefix(n + 1)
                    }
                }
                _ => return Step::Done(Verdict::NotCandidate),
            };
        }
        let full = self.pos >= MAX_MARKER_LEN;
        if !full && !eof {
            return Step::NeedMore;
        }
        Step::Done(match self.stage {
            Stage::Body { .. } if full => Verdict::TooLong,
            Stage::Body { .. } => Verdict::Unterminated,
            _ => Verdict::NotCandidate,
        })
    }

    fn closed(&self) -> Step {
        Step::Done(Verdict::Closed {
            body_start: self.body_start,
            end: self.pos,
        })
    }
}
