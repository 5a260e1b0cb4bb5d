//! Where each frontmatter value sits in the file.
//!
//! serde_norway hands back a `Value` without spans, so error messages would have no position.
//! This module reads the frontmatter a second time with saphyr-parser, a YAML parser whose events
//! carry spans, and records, for every field path, where its key and its value start and which
//! keys a mapping repeats. It never decides what a value *is*: serde_norway does. A path not
//! recorded (past a YAML error, under a key that is not a scalar) resolves to its parent's
//! position, so an odd shape yields a coarser position, never a wrong one.
//!
//! Two positions the events leave out are read from the text around them: the `-` of a block
//! sequence item (an item's span starts at its content) and the `|` or `>` of a block scalar
//! (its span starts at its first content line).

use std::collections::HashMap;
use std::fmt;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Span};

/// A 1-based position in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pos {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    /// A mapping key.
    Key(String),
    /// A 0-based sequence index.
    Index(usize),
}

/// A field path such as `commands[1].name`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct FieldPath(pub(crate) Vec<Seg>);

impl FieldPath {
    /// This path extended by a mapping key.
    pub(crate) fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.to_owned()));
        Self(segs)
    }

    /// This path extended by a sequence index.
    pub(crate) fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        Self(segs)
    }

    fn parent(&self) -> Option<Self> {
        let mut segs = self.0.clone();
        segs.pop().map(|_| Self(segs))
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("frontmatter");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(key) if i == 0 => f.write_str(key)?,
                Seg::Key(key) => write!(f, ".{key}")?,
                Seg::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default)]
struct Node {
    key: Option<Pos>,
    value: Option<Pos>,
    raw: Option<String>,
}

/// Positions of the keys and values of one frontmatter block.
#[derive(Debug, Clone)]
pub(crate) struct Locator {
    nodes: HashMap<FieldPath, Node>,
    duplicates: Vec<Duplicate>,
    root: Pos,
    lines: Vec<Vec<char>>,
    first_line: usize,
}

/// A mapping key written twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Duplicate {
    /// The repeated key's path.
    pub(crate) path: FieldPath,
    /// Where the key is first written.
    pub(crate) first: Pos,
    /// Where it is written again.
    pub(crate) again: Pos,
}

impl Locator {
    /// Reads `frontmatter`, whose first line is file line `first_line`. `root` is where problems
    /// with the frontmatter as a whole are reported when it has no content.
    pub(crate) fn new(frontmatter: &str, first_line: usize, root: Pos) -> Self {
        let lines: Vec<Vec<char>> = frontmatter
            .split('\n')
            .map(|line| line.chars().collect())
            .collect();
        let mut reader = Reader {
            lines: &lines,
            first_line,
            nodes: HashMap::new(),
            duplicates: Vec::new(),
            stack: Vec::new(),
            root: None,
        };
        reader.read(frontmatter);
        Self {
            root: reader.root.unwrap_or(root),
            nodes: reader.nodes,
            duplicates: reader.duplicates,
            lines,
            first_line,
        }
    }

    /// Where the `nth` (0-based) `needle` at or after the start of the value at `path` is
    /// written, for a problem inside a string value (a placeholder in a multi-line `run`).
    /// The value's own position when the text is not found as written.
    pub(crate) fn within_value(&self, path: &FieldPath, needle: &str, nth: usize) -> Pos {
        let start = self.value(path);
        let needle: Vec<char> = needle.chars().collect();
        let mut seen = 0;
        let first = start.line.saturating_sub(self.first_line);
        for (index, line) in self.lines.iter().enumerate().skip(first) {
            let from = if index == first { start.column - 1 } else { 0 };
            for col in from..line.len() {
                if line[col..].starts_with(&needle) {
                    if seen == nth {
                        return Pos {
                            line: self.first_line + index,
                            column: col + 1,
                        };
                    }
                    seen += 1;
                }
            }
        }
        start
    }

    /// Where the value at `path` starts, or the nearest recorded ancestor's position.
    pub(crate) fn value(&self, path: &FieldPath) -> Pos {
        match self.nodes.get(path) {
            Some(Node {
                value: Some(pos), ..
            }) => *pos,
            Some(Node { key: Some(pos), .. }) => *pos,
            _ => self.fallback(path),
        }
    }

    /// Where the key of `path` starts (the `-` for a sequence item), or its value's position.
    pub(crate) fn key(&self, path: &FieldPath) -> Pos {
        match self.nodes.get(path) {
            Some(Node { key: Some(pos), .. }) => *pos,
            Some(Node {
                value: Some(pos), ..
            }) => *pos,
            _ => self.fallback(path),
        }
    }

    /// The scalar at `path` exactly as written (quotes included), when it is a one-line scalar.
    pub(crate) fn raw(&self, path: &FieldPath) -> Option<&str> {
        self.nodes.get(path).and_then(|node| node.raw.as_deref())
    }

    /// Keys written twice in the same mapping, in file order, up to a YAML syntax error: the
    /// first is the one serde_norway stops at, as it reads the events before the error too.
    pub(crate) fn duplicates(&self) -> &[Duplicate] {
        &self.duplicates
    }

    /// Position of the frontmatter's content: where its top-level value starts.
    pub(crate) fn root(&self) -> Pos {
        self.root
    }

    fn fallback(&self, path: &FieldPath) -> Pos {
        match path.parent() {
            Some(parent) if !parent.0.is_empty() => self.key(&parent),
            _ => self.root,
        }
    }
}

/// Deeper nesting than this is not recorded: it bounds the paths' cost, real files stop at 3.
const MAX_DEPTH: usize = 48;

/// A 0-based place in the frontmatter: line and column, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    line: usize,
    col: usize,
}

impl From<Marker> for Place {
    fn from(marker: Marker) -> Self {
        Self {
            line: marker.line().saturating_sub(1),
            col: marker.col(),
        }
    }
}

/// What an open mapping waits for next.
#[derive(Debug)]
enum Expect {
    Key,
    /// The value of the key just read: its name, or none for a key that is not a scalar.
    Value(Option<String>),
}

/// An open collection. `path` is none inside a key that is not a scalar, or too deep.
#[derive(Debug)]
enum Frame {
    Mapping {
        path: Option<FieldPath>,
        expect: Expect,
        keys: HashMap<String, Pos>,
    },
    Sequence {
        path: Option<FieldPath>,
        block: bool,
        next: usize,
    },
}

/// Walks saphyr-parser's events, keeping the open collections on a stack.
struct Reader<'a> {
    lines: &'a [Vec<char>],
    first_line: usize,
    nodes: HashMap<FieldPath, Node>,
    duplicates: Vec<Duplicate>,
    stack: Vec<Frame>,
    root: Option<Pos>,
}

/// The role of a node just started, from the collection around it.
enum Role {
    Key,
    Value(Option<FieldPath>),
}

impl Reader<'_> {
    /// Reads the first document's events, up to a YAML syntax error if there is one.
    fn read(&mut self, text: &str) {
        let mut parser = Parser::new_from_str(text);
        while let Some(Ok((event, span))) = parser.next_event() {
            match event {
                Event::DocumentEnd | Event::StreamEnd => return,
                Event::MappingEnd | Event::SequenceEnd => {
                    self.stack.pop();
                    self.finished(None);
                }
                Event::Scalar(..)
                | Event::Alias(_)
                | Event::MappingStart(..)
                | Event::SequenceStart(..) => self.node(&event, span),
                Event::Nothing | Event::StreamStart | Event::DocumentStart(_) => {}
            }
        }
    }

    fn pos(&self, place: Place) -> Pos {
        Pos {
            line: self.first_line + place.line,
            column: place.col + 1,
        }
    }

    fn line(&self, line: usize) -> &[char] {
        self.lines.get(line).map_or(&[], Vec::as_slice)
    }

    /// A node begins: a key, a mapping's value, a sequence item or the whole frontmatter.
    fn node(&mut self, event: &Event<'_>, span: Span) {
        let start = Place::from(span.start);
        let role = match self.stack.last_mut() {
            None => Role::Value(Some(FieldPath::default())),
            Some(Frame::Mapping {
                expect: Expect::Key,
                ..
            }) => Role::Key,
            Some(Frame::Mapping {
                path,
                expect: Expect::Value(name),
                ..
            }) => Role::Value(path.as_ref().zip(name.as_deref()).map(|(p, n)| p.key(n))),
            Some(Frame::Sequence { path, next, .. }) => {
                *next += 1;
                Role::Value(path.as_ref().map(|p| p.index(*next - 1)))
            }
        };
        let path = match role {
            Role::Key => {
                if let Event::Scalar(name, ..) = event {
                    let col = skip_properties(self.line(start.line), start.col);
                    self.key(name, self.pos(Place { col, ..start }));
                    return;
                }
                None
            }
            Role::Value(path) => path.filter(|path| path.0.len() <= MAX_DEPTH),
        };
        let place = self.written_start(event, span);
        if let Some(path) = &path {
            self.item_dash(path, place.unwrap_or(start));
            if let Some(place) = place {
                let raw = self.raw(event, place, Place::from(span.end));
                self.record_value(path, self.pos(place), raw);
            }
        }
        match event {
            Event::MappingStart(..) => self.stack.push(Frame::Mapping {
                path,
                expect: Expect::Key,
                keys: HashMap::new(),
            }),
            Event::SequenceStart(..) => self.stack.push(Frame::Sequence {
                path,
                block: !self.is_flow(span),
                next: 0,
            }),
            _ => self.finished(None),
        }
    }

    /// A mapping key: recorded, and checked against the mapping's other keys.
    fn key(&mut self, name: &str, pos: Pos) {
        let Some(Frame::Mapping { path, keys, .. }) = self.stack.last_mut() else {
            return;
        };
        let key_path = path.as_ref().map(|path| path.key(name));
        let first = keys.insert(name.to_owned(), pos);
        if let Some(key_path) = key_path {
            if let Some(first) = first {
                self.duplicates.push(Duplicate {
                    path: key_path.clone(),
                    first,
                    again: pos,
                });
            }
            self.nodes.entry(key_path).or_default().key = Some(pos);
        }
        self.finished(Some(name.to_owned()));
    }

    /// A node has ended: the mapping around it now waits for the other half of an entry.
    fn finished(&mut self, key: Option<String>) {
        if let Some(Frame::Mapping { expect, .. }) = self.stack.last_mut() {
            *expect = match expect {
                Expect::Key => Expect::Value(key),
                Expect::Value(_) => Expect::Key,
            };
        }
    }

    /// For an item of a block sequence, records its `-` as the item's key, and the first one as
    /// where the sequence itself is written.
    fn item_dash(&mut self, path: &FieldPath, content: Place) {
        let Some(Seg::Index(index)) = path.0.last() else {
            return;
        };
        let Some(Frame::Sequence { block: true, .. }) = self.stack.last() else {
            return;
        };
        let dash = self.dash_before(content).unwrap_or(content);
        let pos = self.pos(dash);
        self.nodes.entry(path.clone()).or_default().key = Some(pos);
        if let (0, Some(sequence)) = (index, path.parent()) {
            self.record_value(&sequence, pos, None);
        }
    }

    fn record_value(&mut self, path: &FieldPath, pos: Pos, raw: Option<String>) {
        let node = self.nodes.entry(path.clone()).or_default();
        node.value = Some(pos);
        node.raw = raw;
        if path.0.is_empty() {
            self.root = Some(pos);
        }
    }

    /// Where a value is written, past its anchor and tag: the `|` of a block scalar, the first
    /// key of a block mapping. None for a value not written at all (`key:` alone).
    fn written_start(&self, event: &Event<'_>, span: Span) -> Option<Place> {
        let start = Place::from(span.start);
        let line = self.line(start.line);
        let has_properties = matches!(line.get(start.col), Some('&' | '!'));
        match event {
            Event::Scalar(_, ScalarStyle::Literal | ScalarStyle::Folded, ..) if !has_properties => {
                Some(self.block_header(start).unwrap_or(start))
            }
            // A block sequence is written where its first `-` is, found with its first item.
            Event::SequenceStart(..) if !has_properties && !self.is_flow(span) => None,
            _ => {
                let col = skip_properties(line, start.col);
                match rest_is_empty(line, col) {
                    false => Some(Place {
                        line: start.line,
                        col,
                    }),
                    // An anchored collection starting below its anchor.
                    true if matches!(event, Event::MappingStart(..)) => Some(span.end.into()),
                    true => None,
                }
            }
        }
        .filter(|place| !(is_empty_scalar(event) && *place == Place::from(span.end)))
    }

    /// Whether the collection started at `span` is a flow one: its span ends after its `[`
    /// (or `{`), where a block collection's ends at its first entry.
    fn is_flow(&self, span: Span) -> bool {
        let end = Place::from(span.end);
        end.col > 0 && matches!(self.line(end.line).get(end.col - 1), Some('[' | '{'))
    }

    /// A one-line scalar or alias from `start` to `end`, as written.
    fn raw(&self, event: &Event<'_>, start: Place, end: Place) -> Option<String> {
        let inline = match event {
            Event::Scalar(_, ScalarStyle::Literal | ScalarStyle::Folded, ..) => false,
            Event::Scalar(..) | Event::Alias(_) => true,
            _ => false,
        };
        if !inline || start.line != end.line {
            return None;
        }
        let text = self.line(start.line).get(start.col..end.col)?;
        Some(text.iter().collect::<String>().trim_end().to_owned())
    }

    /// The `|` or `>` of the block scalar whose content starts at `content`: at the end of
    /// the last line above with text, before its indicators and comment.
    fn block_header(&self, content: Place) -> Option<Place> {
        if matches!(self.line(content.line).get(content.col), Some('|' | '>')) {
            return Some(content);
        }
        let mut place = content;
        loop {
            let line = self.line(place.line);
            let text = without_comment(&line[..place.col.min(line.len())]);
            let text = trim_end_matches(text, |c| c.is_whitespace());
            if !text.is_empty() {
                let text = trim_end_matches(text, |c| matches!(c, '+' | '-' | '0'..='9'));
                let col = text.len().checked_sub(1)?;
                return matches!(text[col], '|' | '>').then_some(Place {
                    line: place.line,
                    col,
                });
            }
            place.line = place.line.checked_sub(1)?;
            place.col = self.line(place.line).len();
        }
    }

    /// The `-` of the block sequence item whose content starts at `content`: only blanks and
    /// comments come between the two.
    fn dash_before(&self, content: Place) -> Option<Place> {
        let mut place = content;
        loop {
            let line = self.line(place.line);
            let text = without_comment(&line[..place.col.min(line.len())]);
            let text = trim_end_matches(text, |c| c.is_whitespace());
            if let Some(col) = text.len().checked_sub(1) {
                let alone = col == 0 || text[col - 1].is_whitespace();
                return (text[col] == '-' && alone).then_some(Place {
                    line: place.line,
                    col,
                });
            }
            place.line = place.line.checked_sub(1)?;
            place.col = self.line(place.line).len();
        }
    }
}

/// A null written as nothing at all (`key:`), which has no position of its own.
fn is_empty_scalar(event: &Event<'_>) -> bool {
    matches!(event, Event::Scalar(text, ScalarStyle::Plain, ..) if text.is_empty())
}

fn trim_end_matches(text: &[char], strip: impl Fn(char) -> bool) -> &[char] {
    let len = text.iter().rposition(|c| !strip(*c)).map_or(0, |i| i + 1);
    &text[..len]
}

/// `text` up to a comment: a `#` at the start or after a blank. Only for text with no quoted
/// scalar in it, which is all that comes between an indicator and its content.
fn without_comment(text: &[char]) -> &[char] {
    let hash = (0..text.len()).find(|&i| text[i] == '#' && (i == 0 || text[i - 1].is_whitespace()));
    &text[..hash.unwrap_or(text.len())]
}

/// Whether everything from `col` on is blank or a comment.
fn rest_is_empty(line: &[char], col: usize) -> bool {
    line.get(col..)
        .is_none_or(|rest| without_comment(rest).iter().all(|c| c.is_whitespace()))
}

/// Skips node properties (`&anchor`, `!tag`) that may precede a value.
fn skip_properties(line: &[char], mut col: usize) -> usize {
    while matches!(line.get(col), Some('&' | '!')) {
        while line.get(col).is_some_and(|c| !c.is_whitespace()) {
            col += 1;
        }
        while line.get(col).is_some_and(|c| *c == ' ' || *c == '\t') {
            col += 1;
        }
    }
    col
}

#[cfg(test)]
mod tests;
