//! ralphify's `completion_signal`: a fixed text in the agent's final answer that counts as
//! `<!-- ralph:state done -->`, found as the output streams by, with memory bounded by the
//! text's length (nothing of the output is kept).

use memchr::memmem;
use ralph_marker::{Finding, Marker};

use crate::event::Stream;
use ralph_agents::{AdapterOutput, AgentRetry, OutputAdapter, Usage};

/// Finds one fixed text across any chunking of a stream.
#[derive(Debug, Clone)]
pub(crate) struct SignalMatcher {
    finder: memmem::Finder<'static>,
    /// The last `needle.len() - 1` bytes fed: a match may start in them.
    carry: Vec<u8>,
    found: bool,
}

impl SignalMatcher {
    pub(crate) fn new(needle: &[u8]) -> Self {
        Self {
            finder: memmem::Finder::new(needle).into_owned(),
            carry: Vec::with_capacity(needle.len()),
            found: needle.is_empty(),
        }
    }

    /// Looks at the next chunk.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let n = self.finder.needle().len();
        if self.found || bytes.is_empty() {
            return;
        }
        // A match across the boundary starts in the carry and ends in the chunk's first n-1
        // bytes.
        let held = self.carry.len();
        if held > 0 {
            self.carry
                .extend_from_slice(&bytes[..bytes.len().min(n - 1)]);
            self.found = self.finder.find(&self.carry).is_some();
            self.carry.truncate(held);
        }
        self.found = self.found || self.finder.find(bytes).is_some();
        if self.found {
            return;
        }
        let keep = n - 1;
        if bytes.len() >= keep {
            self.carry.clear();
            self.carry.extend_from_slice(&bytes[bytes.len() - keep..]);
        } else {
            self.carry.extend_from_slice(bytes);
            let excess = self.carry.len().saturating_sub(keep);
            self.carry.drain(..excess);
        }
    }

    /// Whether the text has been seen.
    pub(crate) fn found(&self) -> bool {
        self.found
    }
}

/// What the signal counts as: a `done` state marker, after every marker the agent wrote (so it
/// is the iteration's state), with `source="completion_signal"` to tell it from a real one.
pub(crate) fn done_finding() -> Finding {
    Finding::Marker(Marker {
        kind: "state".to_owned(),
        name: "done".to_owned(),
        attrs: vec![("source".to_owned(), "completion_signal".to_owned())],
        offset: u64::MAX,
    })
}

/// An adapter whose result text on stdout (the final answer) also goes to a [`SignalMatcher`].
pub(crate) struct Watched<'a> {
    inner: &'a mut dyn OutputAdapter,
    matcher: Option<&'a mut SignalMatcher>,
}

impl<'a> Watched<'a> {
    pub(crate) fn new(
        inner: &'a mut dyn OutputAdapter,
        matcher: Option<&'a mut SignalMatcher>,
    ) -> Self {
        Self { inner, matcher }
    }
}

/// The inner adapter's output, with stdout's result text shown to the matcher on its way.
struct Tee<'o, 'm> {
    out: &'o mut dyn AdapterOutput,
    matcher: Option<&'m mut SignalMatcher>,
}

impl AdapterOutput for Tee<'_, '_> {
    fn show(&mut self, stream: Stream, bytes: &[u8]) {
        self.out.show(stream, bytes);
    }

    fn result_text(&mut self, stream: Stream, bytes: &[u8]) {
        if let (Stream::Stdout, Some(matcher)) = (stream, self.matcher.as_deref_mut()) {
            matcher.feed(bytes);
        }
        self.out.result_text(stream, bytes);
    }

    fn warn(&mut self, message: String) {
        self.out.warn(message);
    }

    fn retrying(&mut self, retry: AgentRetry) {
        self.out.retrying(retry);
    }
}

impl OutputAdapter for Watched<'_> {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        let mut tee = Tee {
            out,
            matcher: self.matcher.as_deref_mut(),
        };
        self.inner.feed(stream, bytes, &mut tee);
    }

    fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage> {
        let mut tee = Tee {
            out,
            matcher: self.matcher.as_deref_mut(),
        };
        self.inner.finish(&mut tee)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found_in_chunks(needle: &str, chunks: &[&str]) -> bool {
        let mut m = SignalMatcher::new(needle.as_bytes());
        for chunk in chunks {
            m.feed(chunk.as_bytes());
        }
        m.found()
    }

    #[test]
    fn finds_the_text_however_the_output_is_split() {
        let text = "all good <promise>COMPLETE</promise> bye";
        for a in 0..=text.len() {
            for b in a..=text.len() {
                assert!(
                    found_in_chunks(
                        "<promise>COMPLETE</promise>",
                        &[&text[..a], &text[a..b], &text[b..]]
                    ),
                    "{a} {b}"
                );
            }
        }
        let bytes: Vec<String> = text.chars().map(String::from).collect();
        let one_by_one: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert!(found_in_chunks("<promise>COMPLETE</promise>", &one_by_one));
    }

    #[test]
    fn a_near_miss_is_not_a_match() {
        let text = "<promise>COMPLET</promise> <promise>COMPLETE</promis";
        for a in 0..=text.len() {
            assert!(!found_in_chunks(
                "<promise>COMPLETE</promise>",
                &[&text[..a], &text[a..]]
            ));
        }
    }

    #[test]
    fn memory_stays_within_the_needle() {
        let mut m = SignalMatcher::new(b"<promise>COMPLETE</promise>");
        for _ in 0..1000 {
            m.feed(&[b'x'; 4096]);
            m.feed(b"y");
        }
        assert!(m.carry.len() < 27 && !m.found());
    }

    #[test]
    fn the_signal_is_wrapped_as_the_shell_ralph_writes_it() {
        let text = |signal: &str| {
            let text = "---\nagent: x\ncompletion_signal: SIGNAL\n---\n";
            let text = text.replace("SIGNAL", signal);
            let parsed = ralph_frontmatter::parse("RALPH.md", &text).unwrap();
            parsed.file.config.completion_text().unwrap()
        };
        let mut m = SignalMatcher::new(text("COMPLETE").as_bytes());
        m.feed(b"not COMPLETE yet");
        assert!(!m.found());
        m.feed(b"<promise>COMPLETE</promise>");
        assert!(m.found());
        assert_eq!(text("'<done/>'"), "<done/>");
    }
}
