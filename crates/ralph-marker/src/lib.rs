//! The ralph marker protocol: agents report state through HTML comments such as
//! `<!-- ralph:state idle -->` in their output.
//!
//! This crate owns the grammar and a streaming scanner. It never does I/O, never panics on any
//! input, and keeps bounded memory whatever the size of the output it is fed. It knows no
//! marker kinds or names: `state` and `idle` mean something to the engine, not here, so a new
//! marker needs no change to this crate.
//!
//! ```
//! use ralph_marker::{Finding, last_state, scan};
//!
//! let output = b"done.\n<!-- ralph:state blocked reason=\"tests need a database\" -->\n";
//! let findings = scan(output);
//! let state = last_state(&findings).unwrap();
//! assert_eq!(state.name, "blocked");
//! assert_eq!(state.attr("reason"), Some("tests need a database"));
//! assert_eq!(state.offset, 6);
//!
//! // Something that looks like a marker but is not one is reported, never taken as a state.
//! let findings = scan(b"<!-- ralph:state -->");
//! assert!(matches!(&findings[..], [Finding::Diagnostic(_)]));
//! assert!(last_state(&findings).is_none());
//! ```
//!
//! Output usually arrives in pieces; [`MarkerScanner`] finds the same things in the pieces:
//!
//! ```
//! use ralph_marker::MarkerScanner;
//!
//! let mut scanner = MarkerScanner::new();
//! let mut found = Vec::new();
//! scanner.feed(b"<!-- ralph:state id", &mut found);
//! assert!(found.is_empty());
//! scanner.feed(b"le -->", &mut found);
//! scanner.finish(&mut found);
//! assert_eq!(found, ralph_marker::scan(b"<!-- ralph:state idle -->"));
//! ```
//!
//! # Grammar
//!
//! ```text
//! marker = "<!--" ws? "ralph:" KIND ws NAME (ws KEY "=" VALUE)* ws? "-->"
//! KIND, NAME, KEY = [a-z][a-z0-9_-]*      ASCII, matched case-insensitively, reported lowercase
//! VALUE  = bare | quoted
//! bare   = one or more bytes, none of them whitespace or `"`
//! quoted = `"` ( any byte but `"` and `\` | `\"` | `\\` )* `"`
//! ws     = space, tab, LF, FF or CR, any number (HTML whitespace; newlines included)
//! ```
//!
//! `ralph:` is matched case-insensitively. An empty value must be quoted (`key=""`). A quoted
//! value is followed by whitespace or the end of the marker. Values are decoded as UTF-8 with
//! invalid sequences replaced by U+FFFD. A value cannot contain `-->`, even quoted: as in HTML,
//! the comment ends at the first `-->`.
//!
//! # Scanning
//!
//! A *candidate* is `<!--`, optional whitespace and `ralph:`; any other comment is ignored. The
//! scanner looks at each `<` and decides from the *window* of at most [`MAX_MARKER_LEN`] bytes
//! that starts there, then resumes as follows:
//!
//! - not a candidate (including when `<!--` and the whitespace fill the window before
//!   `ralph:`): nothing is reported; scanning resumes right after the `<` (which is the same
//!   as right after the `<!--`, since `!--` cannot start anything);
//! - a candidate closed by `-->` in the window: a [`Marker`], or a [`Diagnostic`] if it does not
//!   follow the grammar; scanning resumes right after the `-->`, so a `<!--` inside a
//!   candidate never starts a candidate of its own;
//! - a candidate with no `-->` in a full window: a [`Diagnostic`] (too long); scanning resumes
//!   right after the `<`, so markers inside it are still found;
//! - a candidate with no `-->` before the end of the output: a [`Diagnostic`] (unterminated),
//!   reported by [`MarkerScanner::finish`]; scanning stops, since any later candidate lies
//!   inside this one and has no `-->` either.
//!
//! Every rule depends only on the window and on whether the output ends inside it, which is
//! why chunked and whole-text scanning find the same things.

mod ansi;
mod grammar;
mod scanner;

use std::fmt;

pub use ansi::strip_ansi;
pub use scanner::MarkerScanner;

/// The longest marker, in bytes from its `<!--` through its `-->`; a longer candidate is
/// reported as a [`Diagnostic`]. In ANSI mode, escape sequences count.
pub const MAX_MARKER_LEN: usize = 4096;

/// A marker found in agent output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The marker kind, lowercase (`state` today).
    pub kind: String,
    /// The marker name, lowercase (`idle`, `blocked`, ...).
    pub name: String,
    /// `KEY=VALUE` attributes in order of appearance, keys lowercase, values unescaped.
    pub attrs: Vec<(String, String)>,
    /// Byte offset of the marker's `<!--` in the whole output.
    pub offset: u64,
}

impl Marker {
    /// The value of attribute `key` (lowercase), if present (the last one wins).
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

/// The marker as an agent would write it: `<!-- ralph:state blocked reason="no db" -->`.
///
/// Values are quoted when they need it. A value containing `-->` cannot be written back.
impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<!-- ralph:{} {}", self.kind, self.name)?;
        for (key, value) in &self.attrs {
            let bare = !value.is_empty()
                && !value
                    .bytes()
                    .any(|b| b.is_ascii_whitespace() || b == b'"' || b == b'\\');
            if bare {
                write!(f, " {key}={value}")?;
            } else {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                write!(f, " {key}=\"{escaped}\"")?;
            }
        }
        f.write_str(" -->")
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

/// `byte 120: expected a name after `ralph:state`, found the end of the marker`.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

/// One thing the scanner found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A well-formed marker.
    Marker(Marker),
    /// A malformed marker.
    Diagnostic(Diagnostic),
}

impl Finding {
    /// Byte offset of the finding's `<!--` in the whole output.
    pub fn offset(&self) -> u64 {
        match self {
            Finding::Marker(m) => m.offset,
            Finding::Diagnostic(d) => d.offset,
        }
    }
}

/// Scans a whole text at once, as a plain-output [`MarkerScanner`] would.
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

#[cfg(test)]
mod tests;
