//! The ralph marker protocol: agents report state through HTML comments such as
//! `<!-- ralph:state idle -->` in their output.
//!
//! This crate owns the grammar and a streaming scanner. It never does I/O, never panics on any
//! input, and keeps bounded memory whatever the size of the output it is fed.

/// A marker found in agent output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The marker kind, lowercase (`state` today).
    pub kind: String,
    /// The marker name, lowercase (`idle`, `blocked`, ...).
    pub name: String,
    /// `KEY=VALUE` attributes in order of appearance, values unescaped.
    pub attrs: Vec<(String, String)>,
    /// Byte offset of the marker's `<!--` in the whole output.
    pub offset: u64,
}

impl Marker {
    /// The value of attribute `key`, if present (the last one wins).
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this is a `state` marker.
    pub fn is_state(&self) -> bool {
        self.kind == "state"
    }
}

/// A malformed marker: something that starts like a marker but does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Byte offset of the `<!--` in the whole output.
    pub offset: u64,
    /// What is wrong, in a short sentence.
    pub message: String,
}

/// One thing the scanner found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A well-formed marker.
    Marker(Marker),
    /// A malformed marker.
    Diagnostic(Diagnostic),
}

/// A streaming marker scanner.
#[derive(Debug, Default)]
pub struct MarkerScanner {
    seen: u64,
}

impl MarkerScanner {
    /// A scanner for plain output.
    pub fn new() -> Self {
        Self::default()
    }

    /// A scanner that ignores ANSI escape sequences (for terminal output).
    pub fn skipping_ansi() -> Self {
        Self::default()
    }

    /// Feeds the next chunk of output; findings completed by it are pushed to `found`.
    pub fn feed(&mut self, chunk: &[u8], found: &mut Vec<Finding>) {
        let _ = found;
        self.seen += chunk.len() as u64;
    }

    /// Ends the output; an unterminated marker candidate is reported if it matters.
    pub fn finish(&mut self, found: &mut Vec<Finding>) {
        let _ = found;
    }

    /// Total bytes fed so far.
    pub fn bytes_seen(&self) -> u64 {
        self.seen
    }
}

/// Scans a whole text at once.
pub fn scan(text: &[u8]) -> Vec<Finding> {
    let mut scanner = MarkerScanner::new();
    let mut found = Vec::new();
    scanner.feed(text, &mut found);
    scanner.finish(&mut found);
    found
}

/// The last `state` marker among `findings`: the state of an iteration.
pub fn last_state(findings: &[Finding]) -> Option<&Marker> {
    findings.iter().rev().find_map(|f| match f {
        Finding::Marker(m) if m.is_state() => Some(m),
        _ => None,
    })
}
