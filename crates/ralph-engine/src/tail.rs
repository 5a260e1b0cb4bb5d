//! A bounded tail of a process's output: the last N bytes, in the order they were written.

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
