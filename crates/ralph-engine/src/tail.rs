//! Bounded keeps of a process's output: the last N bytes ([`Tail`], a check's failure), or the
//! first and last bytes with the size of the cut between ([`HeadTail`], a command's output for
//! the prompt). Memory is set by the cap, never by how much the process prints.

use std::collections::VecDeque;

/// Keeps the last `cap` bytes fed to it.
#[derive(Debug, Clone)]
pub(crate) struct Tail {
    bytes: VecDeque<u8>,
    cap: usize,
    truncated: bool,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            bytes: VecDeque::with_capacity(cap.min(64 * 1024)),
            cap,
            truncated: false,
        }
    }

    /// A tail that allocates only as bytes come: for what most runs never fill.
    pub(crate) fn growing(cap: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            cap,
            truncated: false,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let keep = &chunk[chunk.len().saturating_sub(self.cap)..];
        if keep.len() < chunk.len() {
            self.truncated = true;
        }
        let overflow = (self.bytes.len() + keep.len()).saturating_sub(self.cap);
        if overflow > 0 {
            self.truncated = true;
            self.bytes.drain(..overflow);
        }
        self.bytes.extend(keep);
    }

    /// The kept bytes as text (invalid UTF-8 replaced), and whether anything was cut.
    pub(crate) fn into_text(self) -> (String, bool) {
        let (a, b) = self.bytes.as_slices();
        let mut v = Vec::with_capacity(a.len() + b.len());
        v.extend_from_slice(a);
        v.extend_from_slice(b);
        (String::from_utf8_lossy(&v).into_owned(), self.truncated)
    }
}

/// Keeps the first half of `cap` bytes fed to it and the last half, and counts what fell
/// between: what a command contributes to the prompt.
#[derive(Debug)]
pub(crate) struct HeadTail {
    cap: u64,
    head: Vec<u8>,
    head_cap: usize,
    tail: Tail,
    total: u64,
}

/// A command's output once cut to its cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// Head, cut notice (when something was cut) and tail, as text (invalid UTF-8 replaced).
    pub(crate) text: String,
    /// What follows the head in `text`: the notice and the tail (the head was already
    /// streamed to the log as it came).
    pub(crate) after_head: String,
}

impl HeadTail {
    pub(crate) fn new(cap: u64) -> Self {
        let cap_bytes = usize::try_from(cap).unwrap_or(usize::MAX);
        let head_cap = cap_bytes / 2;
        Self {
            cap,
            head: Vec::new(),
            head_cap,
            tail: Tail::new(cap_bytes - head_cap),
            total: 0,
        }
    }

    /// Feeds `chunk`; returns the part of it that went to the head.
    pub(crate) fn push<'c>(&mut self, chunk: &'c [u8]) -> &'c [u8] {
        self.total = self.total.saturating_add(chunk.len() as u64);
        let room = self.head_cap - self.head.len();
        let (head, rest) = chunk.split_at(room.min(chunk.len()));
        if !head.is_empty() {
            // Exact growth: a large cap is allocated once, never doubled past itself.
            self.head.reserve_exact(head.len());
            self.head.extend_from_slice(head);
        }
        if !rest.is_empty() {
            self.tail.push(rest);
        }
        head
    }

    /// The kept output, with a notice where the middle was cut.
    pub(crate) fn finish(self) -> Kept {
        let head = String::from_utf8_lossy(&self.head).into_owned();
        let cut = self.total - self.head.len() as u64 - self.tail.bytes.len() as u64;
        let (tail, _) = self.tail.into_text();
        let mut after_head = String::new();
        if cut > 0 {
            after_head.push_str(&cut_notice(cut, self.cap));
        }
        after_head.push_str(&tail);
        Kept {
            text: head + &after_head,
            after_head,
        }
    }
}

/// `\n[... 1234 bytes cut by ralph: max_output 64KiB ...]\n`, on a line of its own.
fn cut_notice(cut: u64, cap: u64) -> String {
    format!(
        "\n[... {cut} bytes cut by ralph: max_output {} ...]\n",
        size_text(cap)
    )
}

/// A size the way a user would write it: `64KiB`, `1MB`, else bytes.
pub(crate) fn size_text(bytes: u64) -> String {
    const UNITS: [(u64, &str); 6] = [
        (1 << 30, "GiB"),
        (1_000_000_000, "GB"),
        (1 << 20, "MiB"),
        (1_000_000, "MB"),
        (1 << 10, "KiB"),
        (1000, "KB"),
    ];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes % unit == 0)
        .map_or_else(
            || format!("{bytes} bytes"),
            |(unit, name)| format!("{}{name}", bytes / unit),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut t = Tail::new(8);
        t.push(b"abc");
        t.push(b"def");
        assert_eq!(t.into_text(), ("abcdef".to_owned(), false));
    }

    #[test]
    fn keeps_the_last_bytes_over_the_cap() {
        let mut t = Tail::new(4);
        t.push(b"abc");
        t.push(b"defgh");
        assert_eq!(t.into_text(), ("efgh".to_owned(), true));
    }

    #[test]
    fn a_single_huge_chunk_is_cut_to_the_cap() {
        let mut t = Tail::new(4096);
        t.push(&vec![b'x'; 10_000]);
        let (text, truncated) = t.into_text();
        assert_eq!(text.len(), 4096);
        assert!(truncated);
    }

    #[test]
    fn exactly_the_cap_is_not_truncated() {
        let mut t = Tail::new(4);
        t.push(b"ab");
        t.push(b"cd");
        assert_eq!(t.into_text(), ("abcd".to_owned(), false));
    }
}

#[cfg(test)]
mod head_tail_tests {
    use super::*;

    fn kept(cap: u64, chunks: &[&[u8]]) -> Kept {
        let mut h = HeadTail::new(cap);
        for chunk in chunks {
            h.push(chunk);
        }
        h.finish()
    }

    #[test]
    fn output_within_the_cap_is_kept_whole_in_any_chunking() {
        assert_eq!(kept(10, &[b"abc", b"defghij"]).text, "abcdefghij");
        assert_eq!(kept(10, &[b"abcdefghij"]).text, "abcdefghij");
        assert_eq!(kept(10, &[]).text, "");
    }

    #[test]
    fn output_past_the_cap_keeps_head_and_tail_and_says_how_much_was_cut() {
        let want = "abcd\n[... 12 bytes cut by ralph: max_output 8 bytes ...]\nqrst";
        assert_eq!(kept(8, &[b"abcdefghijklmnopqrst"]).text, want);
        assert_eq!(
            kept(8, &[b"ab", b"cdefghijklmnop", b"q", b"rst"]).text,
            want
        );
        let k = kept(8, &[b"abcdefghijklmnopqrst"]);
        assert_eq!(format!("abcd{}", k.after_head), k.text);
    }

    #[test]
    fn push_returns_the_part_that_went_to_the_head() {
        let mut h = HeadTail::new(8);
        assert_eq!(h.push(b"ab"), b"ab");
        assert_eq!(h.push(b"cdef"), b"cd");
        assert_eq!(h.push(b"gh"), b"");
    }

    #[test]
    fn sizes_read_as_a_user_would_write_them() {
        assert_eq!(size_text(64 * 1024), "64KiB");
        assert_eq!(size_text(1_000_000), "1MB");
        assert_eq!(size_text(3 << 20), "3MiB");
        assert_eq!(size_text(1500), "1500 bytes");
    }
}
