//! [`Lines`]: the bounded line splitter every JSON Lines adapter reads its agent with, and
//! [`ReadsLines`], the `feed`/`finish` an adapter builds on it.

use crate::{AdapterOutput, MAX_JSON_LINE, Stream};

/// A line buffer grown past this is given back after the line is handled, so one long line
/// does not hold memory for the rest of the run.
pub(crate) const KEPT_LINE_CAPACITY: usize = 64 * 1024;

/// Splits standard output into lines, holding at most [`MAX_JSON_LINE`] bytes: what every JSON
/// adapter reads its events with, an embedder's too ([`ReadsLines`] does the splitting for an
/// adapter that says what one line means). A longer line is announced by [`Piece::Overlong`], then
/// handed over as [`Piece::Raw`] pieces, as they arrive, to be shown and never parsed.
#[derive(Debug, Default)]
pub struct Lines {
    /// The current line, until its newline arrives.
    line: Vec<u8>,
    /// The current line passed [`MAX_JSON_LINE`]: the rest of it is raw.
    overlong: bool,
}

/// What [`Lines`] hands over.
pub enum Piece<'a> {
    /// One whole line, without its newline (or the unfinished last one, at the end).
    Line(&'a [u8]),
    /// Part of a line too long to parse, newline included when it ends here.
    Raw(&'a [u8]),
    /// The current line just passed [`MAX_JSON_LINE`]: its pieces follow as [`Piece::Raw`].
    /// The adapter says so ([`overlong_warning`]): the line's event is lost to it.
    Overlong,
}

/// The warning for a line past [`MAX_JSON_LINE`] ([`Piece::Overlong`]).
pub fn overlong_warning() -> String {
    format!(
        "the agent printed a line longer than {} MiB; shown as text, not parsed",
        MAX_JSON_LINE / (1024 * 1024)
    )
}

impl Lines {
    /// Bytes held right now, buffer capacity included.
    pub fn retained_bytes(&self) -> usize {
        self.line.capacity()
    }

    /// Splits `bytes`, handing each whole line (or raw piece) to `each`, in order.
    pub fn feed(&mut self, bytes: &[u8], each: &mut dyn FnMut(Piece<'_>)) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let newline = memchr::memchr(b'\n', rest);
            if self.overlong {
                let end = newline.map_or(rest.len(), |i| i + 1);
                each(Piece::Raw(&rest[..end]));
                self.overlong = newline.is_none();
                rest = &rest[end..];
                continue;
            }
            let Some(i) = newline else {
                if self.line.len() + rest.len() > MAX_JSON_LINE {
                    self.overflow(rest, each);
                    self.overlong = true;
                } else {
                    self.hold(rest);
                }
                return;
            };
            let (piece, after) = (&rest[..i], &rest[i + 1..]);
            if self.line.len() + piece.len() > MAX_JSON_LINE {
                self.overflow(&rest[..=i], each);
            } else if self.line.is_empty() {
                // The whole line is in this chunk: hand it over where it is, no copy.
                each(Piece::Line(piece));
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(piece);
                each(Piece::Line(&line));
                self.line = line;
                self.clear();
            }
            rest = after;
        }
    }

    /// The output ended: hands over the unfinished last line, if any (a truncated event, or a
    /// last one whole without its newline); a raw line is ended with a newline.
    pub fn finish(&mut self, each: &mut dyn FnMut(Piece<'_>)) {
        if self.overlong {
            each(Piece::Raw(b"\n"));
            self.overlong = false;
        } else if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            each(Piece::Line(&line));
        }
    }

    /// The line grew past [`MAX_JSON_LINE`]: hand over what was held and go on raw.
    fn overflow(&mut self, more: &[u8], each: &mut dyn FnMut(Piece<'_>)) {
        each(Piece::Overlong);
        if !self.line.is_empty() {
            each(Piece::Raw(&self.line));
        }
        each(Piece::Raw(more));
        self.clear();
    }

    /// Appends to the current line. The buffer grows by doubling but never past
    /// [`MAX_JSON_LINE`], which default `Vec` growth would overshoot up to twice.
    fn hold(&mut self, bytes: &[u8]) {
        let needed = self.line.len() + bytes.len();
        if needed > self.line.capacity() {
            let grown = needed.max(self.line.capacity() * 2).min(MAX_JSON_LINE);
            self.line.reserve_exact(grown - self.line.len());
        }
        self.line.extend_from_slice(bytes);
    }

    fn clear(&mut self) {
        self.line.clear();
        if self.line.capacity() > KEPT_LINE_CAPACITY {
            self.line.shrink_to(KEPT_LINE_CAPACITY);
        }
    }
}

/// An adapter reading standard output as JSON Lines through [`Lines`]: what its `feed` and
/// `finish` share. Implement [`lines`](ReadsLines::lines) and [`line`](ReadsLines::line), then
/// call [`feed_lines`](ReadsLines::feed_lines) from [`OutputAdapter::feed`](crate::OutputAdapter::feed) and
/// [`finish_lines`](ReadsLines::finish_lines) from [`OutputAdapter::finish`](crate::OutputAdapter::finish): memory stays
/// bounded whatever the agent prints, and a line too long to parse is shown, not lost.
pub trait ReadsLines {
    /// Its line splitter.
    fn lines(&mut self) -> &mut Lines;

    /// One whole line of standard output, without its newline.
    fn line(&mut self, line: &[u8], out: &mut dyn AdapterOutput);

    /// Standard error is shown as is; standard output is split into lines.
    fn feed_lines(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        if stream == Stream::Stderr {
            out.show(stream, bytes);
            return;
        }
        let mut lines = std::mem::take(self.lines());
        lines.feed(bytes, &mut |piece| match piece {
            Piece::Line(line) => self.line(line, out),
            Piece::Raw(raw) => out.show(Stream::Stdout, raw),
            Piece::Overlong => out.warn(overlong_warning()),
        });
        *self.lines() = lines;
    }

    /// Hands over the unfinished last line and lets go of the line buffer.
    fn finish_lines(&mut self, out: &mut dyn AdapterOutput) {
        std::mem::take(self.lines()).finish(&mut |piece| match piece {
            Piece::Line(line) => self.line(line, out),
            Piece::Raw(raw) => out.show(Stream::Stdout, raw),
            Piece::Overlong => out.warn(overlong_warning()),
        });
    }
}
