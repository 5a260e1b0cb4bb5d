//! The ANSI escape-sequence recogniser used by [`MarkerScanner::skipping_ansi`] and
//! [`strip_ansi`].
//!
//! It is a byte-at-a-time state machine so that a sequence split over chunks, or over the
//! carry buffer and the next chunk, is recognised exactly as it would be in one piece.
//!
//! [`MarkerScanner::skipping_ansi`]: crate::MarkerScanner::skipping_ansi

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// Where the recogniser is inside an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Esc {
    /// Ordinary text.
    #[default]
    Ground,
    /// Just after `ESC`.
    Escape,
    /// After `ESC` and one or more intermediate bytes (`ESC ( B`).
    Intermediate,
    /// Inside a CSI sequence (`ESC [`), waiting for the final byte.
    Csi,
    /// Inside an OSC string (`ESC ]`), waiting for `BEL` or `ESC \`.
    Osc,
}

impl Esc {
    /// Feeds one byte; returns whether it is text (as opposed to part of an escape sequence).
    ///
    /// A byte that cannot continue the current sequence ends it and is then read as if in
    /// [`Esc::Ground`], the way terminals recover from malformed sequences; this keeps a stray
    /// `ESC` from swallowing the text after it.
    #[inline]
    pub(crate) fn step(&mut self, b: u8) -> bool {
        match *self {
            Esc::Ground => {
                if b == ESC {
                    *self = Esc::Escape;
                    false
                } else {
                    true
                }
            }
            Esc::Escape => {
                *self = match b {
                    b'[' => Esc::Csi,
                    b']' => Esc::Osc,
                    0x20..=0x2f => Esc::Intermediate,
                    // `ESC ESC`: the first one is dropped, the second starts a new sequence.
                    ESC => Esc::Escape,
                    // Two-byte `ESC x`.
                    _ => Esc::Ground,
                };
                false
            }
            Esc::Intermediate => match b {
                0x20..=0x2f => false,
                0x30..=0x7e => {
                    *self = Esc::Ground;
                    false
                }
                _ => {
                    *self = Esc::Ground;
                    self.step(b)
                }
            },
            Esc::Csi => match b {
                0x20..=0x3f => false,
                0x40..=0x7e => {
                    *self = Esc::Ground;
                    false
                }
                _ => {
                    *self = Esc::Ground;
                    self.step(b)
                }
            },
            Esc::Osc => {
                match b {
                    BEL => *self = Esc::Ground,
                    // Either the `ESC \` terminator or a new sequence: both start with `ESC`.
                    ESC => *self = Esc::Escape,
                    _ => {}
                }
                false
            }
        }
    }
}

/// `text` without its ANSI escape sequences (colours, cursor moves, window titles, links), each
/// recognised exactly as [`MarkerScanner::skipping_ansi`] recognises it.
///
/// [`MarkerScanner::skipping_ansi`]: crate::MarkerScanner::skipping_ansi
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\x1b') {
        return text.to_owned();
    }
    let mut esc = Esc::Ground;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // Sequences are ASCII: any other char acts as a byte that cannot continue one (and is
        // dropped with the sequence only where a terminal would drop it, after `ESC` or in an
        // OSC string).
        let byte = if c.is_ascii() { c as u8 } else { 0x80 };
        if esc.step(byte) {
            out.push(c);
        }
    }
    out
}

/// Finds the next `<` that is text and may open a marker, starting in state `esc`; `esc` is
/// left as the state just before the returned `<` (always [`Esc::Ground`]), or at the end of
/// `bytes` if there is none.
pub(crate) fn find_lt(esc: &mut Esc, bytes: &[u8]) -> Option<usize> {
    let mut pos = 0;
    while pos < bytes.len() {
        match *esc {
            Esc::Ground => {
                let i = pos + memchr::memchr2(b'<', ESC, &bytes[pos..])?;
                if bytes[i] == b'<' {
                    // A `<` followed by text other than `!` opens nothing: skip it here,
                    // which is much cheaper than deciding so from its window.
                    match bytes.get(i + 1) {
                        Some(&next) if next != b'!' && next != ESC => pos = i + 1,
                        _ => return Some(i),
                    }
                    continue;
                }
                *esc = Esc::Escape;
                pos = i + 1;
            }
            // OSC payloads (titles, hyperlinks) can be long: jump over them.
            Esc::Osc => match memchr::memchr2(BEL, ESC, &bytes[pos..]) {
                Some(i) => {
                    esc.step(bytes[pos + i]);
                    pos += i + 1;
                }
                None => return None,
            },
            _ => {
                let b = bytes[pos];
                if esc.step(b) && b == b'<' {
                    // Only reachable when `b` ended a sequence and is itself text.
                    return Some(pos);
                }
                pos += 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::strip_ansi;

    #[test]
    fn strip_ansi_removes_colours_titles_links_and_charsets_and_keeps_the_text() {
        assert_eq!(strip_ansi("plain ünïcode"), "plain ünïcode");
        assert_eq!(
            strip_ansi("\x1b[1m\x1b[38;5;9merror\x1b[0m: bad"),
            "error: bad"
        );
        assert_eq!(strip_ansi("\x1b]0;title\x07ok"), "ok");
        assert_eq!(
            strip_ansi("see \x1b]8;;http://x\x1b\\here\x1b]8;;\x1b\\ now"),
            "see here now"
        );
        assert_eq!(strip_ansi("\x1b(Bé\x1b[2K\r"), "é\r");
        assert_eq!(strip_ansi("cut at the end\x1b["), "cut at the end");
    }
}
