//! Where each frontmatter value sits in the file.
//!
//! serde_norway hands back a `Value` without spans, so error messages would have no position. This
//! module walks the frontmatter text a second time with a small structural scanner that knows the
//! shapes people write in RALPH.md (block mappings, block sequences with `- key: value` items,
//! one-line flow mappings and sequences, quoted and block scalars) and records, for every field
//! path, where its key and its value start. It never decides what a value *is*: serde_norway does.
//! A path the scanner did not record resolves to its parent's position, so an exotic shape yields
//! a coarser position, never a wrong one.

use std::collections::HashMap;
use std::fmt;

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
    /// Scans `frontmatter`, whose first line is file line `first_line`. `root` is where problems
    /// with the frontmatter as a whole are reported.
    pub(crate) fn new(frontmatter: &str, first_line: usize, root: Pos) -> Self {
        let lines: Vec<Vec<char>> = frontmatter
            .split('\n')
            .map(|line| line.chars().collect())
            .collect();
        let mut scanner = Scanner {
            lines: &lines,
            first_line,
            nodes: HashMap::new(),
            duplicates: Vec::new(),
        };
        let root_path = FieldPath::default();
        let mut root = root;
        if let Some(first) = scanner.next_content_line(0) {
            let column = indent_of(&lines[first]);
            root = scanner.pos(first, column);
            scanner.block_node(first, column, -1, &root_path, 0);
        }
        Self {
            nodes: scanner.nodes,
            duplicates: scanner.duplicates,
            root,
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

    /// The scalar at `path` exactly as written, when it is a one-line scalar.
    pub(crate) fn raw(&self, path: &FieldPath) -> Option<&str> {
        self.nodes.get(path).and_then(|node| node.raw.as_deref())
    }

    /// Keys written twice in the same mapping, in file order.
    pub(crate) fn duplicates(&self) -> &[Duplicate] {
        &self.duplicates
    }

    /// Position of the frontmatter's first content line.
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

/// Deeper nesting than this is not recorded: it only guards the recursion, real files stop at 3.
const MAX_DEPTH: usize = 48;

struct Scanner<'a> {
    lines: &'a [Vec<char>],
    first_line: usize,
    nodes: HashMap<FieldPath, Node>,
    duplicates: Vec<Duplicate>,
}

fn indent_of(line: &[char]) -> usize {
    line.iter().take_while(|c| **c == ' ').count()
}

fn is_blank_or_comment(line: &[char]) -> bool {
    match line.iter().find(|c| !c.is_whitespace()) {
        None => true,
        Some(c) => *c == '#',
    }
}

/// Whether the text at `col` is a block sequence entry (`-` followed by a space or the line end).
fn is_dash_entry(line: &[char], col: usize) -> bool {
    line.get(col) == Some(&'-') && line.get(col + 1).is_none_or(|c| c.is_whitespace())
}

/// Whether everything from `col` on is whitespace or a comment.
fn rest_is_empty(line: &[char], col: usize) -> bool {
    line.get(col..).is_none_or(is_blank_or_comment)
}

fn skip_spaces(line: &[char], mut col: usize) -> usize {
    while line.get(col).is_some_and(|c| *c == ' ' || *c == '\t') {
        col += 1;
    }
    col
}

/// Skips node properties (`&anchor`, `!tag`) that may precede a value.
fn skip_properties(line: &[char], mut col: usize) -> usize {
    while matches!(line.get(col), Some('&') | Some('!')) {
        while line.get(col).is_some_and(|c| !c.is_whitespace()) {
            col += 1;
        }
        col = skip_spaces(line, col);
    }
    col
}

/// Parses a block mapping key at `col`: its text and the column just after its `:`.
fn block_key(line: &[char], col: usize) -> Option<(String, usize)> {
    let first = *line.get(col)?;
    let (key, after) = match first {
        '"' | '\'' => {
            let (key, after) = quoted(line, col)?;
            (key, skip_spaces(line, after))
        }
        '-' if is_dash_entry(line, col) => return None,
        '?' | '[' | '{' | '|' | '>' | '#' | '*' | '%' | '@' | '`' | ',' | ']' | '}' => {
            return None;
        }
        _ => {
            let mut end = col;
            loop {
                match line.get(end) {
                    None => return None,
                    Some(':') if line.get(end + 1).is_none_or(|c| c.is_whitespace()) => break,
                    Some('#') if end > col && line[end - 1].is_whitespace() => return None,
                    Some(_) => end += 1,
                }
            }
            let key: String = line[col..end].iter().collect();
            (key.trim_end().to_owned(), end)
        }
    };
    if line.get(after) == Some(&':') && line.get(after + 1).is_none_or(|c| c.is_whitespace()) {
        Some((key, after + 1))
    } else {
        None
    }
}

/// Reads a quoted scalar starting at `col`: its unescaped text and the column after the closing
/// quote. Only one-line scalars are read; the common escapes are enough to match key names.
fn quoted(line: &[char], col: usize) -> Option<(String, usize)> {
    let quote = *line.get(col)?;
    let mut text = String::new();
    let mut i = col + 1;
    loop {
        let c = *line.get(i)?;
        if quote == '\'' && c == '\'' {
            if line.get(i + 1) == Some(&'\'') {
                text.push('\'');
                i += 2;
                continue;
            }
            return Some((text, i + 1));
        }
        if quote == '"' && c == '"' {
            return Some((text, i + 1));
        }
        if quote == '"' && c == '\\' {
            let escaped = *line.get(i + 1)?;
            text.push(match escaped {
                'n' => '\n',
                't' => '\t',
                other => other,
            });
            i += 2;
            continue;
        }
        text.push(c);
        i += 1;
    }
}

/// A cursor over the frontmatter that crosses lines, for flow collections.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    line: usize,
    col: usize,
}

impl Scanner<'_> {
    fn pos(&self, line: usize, col: usize) -> Pos {
        Pos {
            line: self.first_line + line,
            column: col + 1,
        }
    }

    fn next_content_line(&self, from: usize) -> Option<usize> {
        (from..self.lines.len()).find(|&i| !is_blank_or_comment(&self.lines[i]))
    }

    fn record_key(&mut self, path: &FieldPath, pos: Pos) {
        let node = self.nodes.entry(path.clone()).or_default();
        if let Some(first) = node.key.filter(|first| *first != pos) {
            self.duplicates.push(Duplicate {
                path: path.clone(),
                first,
                again: pos,
            });
        }
        node.key = Some(pos);
    }

    fn record_value(&mut self, path: &FieldPath, pos: Pos, raw: Option<String>) {
        let node = self.nodes.entry(path.clone()).or_default();
        node.value = Some(pos);
        node.raw = raw;
    }

    /// Skips the lines of a multi-line scalar: everything more indented than `parent_indent`.
    fn skip_deeper(&self, from: usize, parent_indent: isize) -> usize {
        let mut line = from;
        while line < self.lines.len() {
            let text = &self.lines[line];
            if !is_blank_or_comment(text) && indent_of(text) as isize <= parent_indent {
                break;
            }
            line += 1;
        }
        line
    }

    /// Scans the block node whose content starts at (`line`, `col`); returns the next line to scan.
    fn block_node(
        &mut self,
        line: usize,
        col: usize,
        parent_indent: isize,
        path: &FieldPath,
        depth: usize,
    ) -> usize {
        if depth > MAX_DEPTH {
            return self.skip_deeper(line + 1, parent_indent);
        }
        let text = &self.lines[line];
        let col = skip_properties(text, col);
        if rest_is_empty(text, col) {
            return line + 1;
        }
        self.record_value(path, self.pos(line, col), None);
        if is_dash_entry(text, col) {
            return self.block_sequence(line, col, path, depth);
        }
        if block_key(text, col).is_some() {
            return self.block_mapping(line, col, path, depth);
        }
        match text[col] {
            '{' | '[' => {
                let end = self.flow_node(Cursor { line, col }, path, depth);
                self.skip_deeper(end.line + 1, parent_indent)
            }
            '|' | '>' => self.skip_deeper(line + 1, parent_indent),
            _ => {
                let raw = self.scalar_text(line, col);
                self.record_value(path, self.pos(line, col), raw);
                self.skip_deeper(line + 1, parent_indent)
            }
        }
    }

    /// The one-line scalar at (`line`, `col`) as written, without a trailing comment.
    fn scalar_text(&self, line: usize, col: usize) -> Option<String> {
        let text = &self.lines[line];
        if matches!(text.get(col), Some('"') | Some('\'')) {
            let (_, end) = quoted(text, col)?;
            return Some(text[col..end].iter().collect());
        }
        let mut end = col;
        while end < text.len() && !(text[end] == '#' && end > col && text[end - 1].is_whitespace())
        {
            end += 1;
        }
        let raw: String = text[col..end].iter().collect();
        Some(raw.trim_end().to_owned())
    }

    fn block_mapping(&mut self, line: usize, col: usize, path: &FieldPath, depth: usize) -> usize {
        let indent = col;
        let mut line = line;
        let mut col = col;
        loop {
            let text = &self.lines[line];
            let Some((key, after_colon)) = block_key(text, col) else {
                return line + 1;
            };
            let key_path = path.key(&key);
            self.record_key(&key_path, self.pos(line, col));
            let value_col = skip_properties(text, skip_spaces(text, after_colon));
            let next = if rest_is_empty(text, value_col) {
                match self.next_content_line(line + 1) {
                    Some(below) if indent_of(&self.lines[below]) > indent => {
                        let below_col = indent_of(&self.lines[below]);
                        self.block_node(below, below_col, indent as isize, &key_path, depth + 1)
                    }
                    Some(below)
                        if indent_of(&self.lines[below]) == indent
                            && is_dash_entry(&self.lines[below], indent) =>
                    {
                        // YAML lets a mapping's sequence value sit at the key's own indentation.
                        self.record_value(&key_path, self.pos(below, indent), None);
                        self.block_sequence(below, indent, &key_path, depth + 1)
                    }
                    _ => line + 1,
                }
            } else {
                self.block_node(line, value_col, indent as isize, &key_path, depth + 1)
            };
            match self.next_content_line(next) {
                Some(entry)
                    if indent_of(&self.lines[entry]) == indent
                        && block_key(&self.lines[entry], indent).is_some() =>
                {
                    line = entry;
                    col = indent;
                }
                _ => return next,
            }
        }
    }

    fn block_sequence(&mut self, line: usize, col: usize, path: &FieldPath, depth: usize) -> usize {
        let indent = col;
        let mut line = line;
        let mut index = 0;
        loop {
            let text = &self.lines[line];
            let item_path = path.index(index);
            self.record_key(&item_path, self.pos(line, indent));
            let content_col = skip_spaces(text, indent + 1);
            let next = if rest_is_empty(text, content_col) {
                match self.next_content_line(line + 1) {
                    Some(below) if indent_of(&self.lines[below]) > indent => {
                        let below_col = indent_of(&self.lines[below]);
                        self.block_node(below, below_col, indent as isize, &item_path, depth + 1)
                    }
                    _ => line + 1,
                }
            } else {
                self.block_node(line, content_col, indent as isize, &item_path, depth + 1)
            };
            match self.next_content_line(next) {
                Some(entry)
                    if indent_of(&self.lines[entry]) == indent
                        && is_dash_entry(&self.lines[entry], indent) =>
                {
                    line = entry;
                    index += 1;
                }
                _ => return next,
            }
        }
    }

    fn char_at(&self, cursor: Cursor) -> Option<char> {
        self.lines
            .get(cursor.line)
            .and_then(|line| line.get(cursor.col))
            .copied()
    }

    /// Moves past spaces, line ends and comments inside a flow collection.
    fn flow_skip_blank(&self, mut cursor: Cursor) -> Cursor {
        while cursor.line < self.lines.len() {
            match self.char_at(cursor) {
                Some(c) if c.is_whitespace() => cursor.col += 1,
                Some('#') => {
                    cursor.line += 1;
                    cursor.col = 0;
                }
                Some(_) => return cursor,
                None => {
                    cursor.line += 1;
                    cursor.col = 0;
                }
            }
        }
        cursor
    }

    /// Scans a flow node (collection or scalar) at `cursor`; returns the cursor after it.
    fn flow_node(&mut self, cursor: Cursor, path: &FieldPath, depth: usize) -> Cursor {
        let cursor = self.flow_skip_blank(cursor);
        let Some(first) = self.char_at(cursor) else {
            return cursor;
        };
        let record = depth <= MAX_DEPTH;
        if record {
            self.record_value(path, self.pos(cursor.line, cursor.col), None);
        }
        match first {
            '{' | '[' => self.flow_collection(cursor, path, depth),
            '"' | '\'' => {
                let line = &self.lines[cursor.line];
                match quoted(line, cursor.col) {
                    Some((_, end)) => {
                        if record {
                            let raw = line[cursor.col..end].iter().collect();
                            self.record_value(path, self.pos(cursor.line, cursor.col), Some(raw));
                        }
                        Cursor {
                            line: cursor.line,
                            col: end,
                        }
                    }
                    // A quoted scalar spanning lines: give up on this line, keep the position.
                    None => Cursor {
                        line: cursor.line + 1,
                        col: 0,
                    },
                }
            }
            _ => {
                let (end, raw) = self.flow_plain(cursor);
                if record {
                    self.record_value(path, self.pos(cursor.line, cursor.col), Some(raw));
                }
                end
            }
        }
    }

    /// Reads a plain scalar inside a flow collection, up to `,` `]` `}` or `: `.
    fn flow_plain(&self, cursor: Cursor) -> (Cursor, String) {
        let line = &self.lines[cursor.line];
        let mut end = cursor.col;
        while let Some(&c) = line.get(end) {
            let ends_here = matches!(c, ',' | ']' | '}')
                || (c == ':'
                    && line
                        .get(end + 1)
                        .is_none_or(|n| n.is_whitespace() || matches!(n, ',' | ']' | '}')))
                || (c == '#' && end > cursor.col && line[end - 1].is_whitespace());
            if ends_here {
                break;
            }
            end += 1;
        }
        let raw: String = line[cursor.col..end].iter().collect();
        (
            Cursor {
                line: cursor.line,
                col: end,
            },
            raw.trim_end().to_owned(),
        )
    }

    fn flow_collection(&mut self, open: Cursor, path: &FieldPath, depth: usize) -> Cursor {
        let is_mapping = self.char_at(open) == Some('{');
        let close = if is_mapping { '}' } else { ']' };
        let mut cursor = Cursor {
            line: open.line,
            col: open.col + 1,
        };
        let mut index = 0;
        loop {
            cursor = self.flow_skip_blank(cursor);
            let Some(c) = self.char_at(cursor) else {
                return cursor;
            };
            if c == close {
                cursor.col += 1;
                return cursor;
            }
            if c == ',' {
                cursor.col += 1;
                continue;
            }
            let before = cursor;
            if is_mapping {
                cursor = self.flow_entry(cursor, path, depth);
            } else {
                cursor = self.flow_node(cursor, &path.index(index), depth + 1);
                index += 1;
            }
            cursor = self.flow_skip_blank(cursor);
            match self.char_at(cursor) {
                Some(',') => cursor.col += 1,
                Some(c) if c == close => {}
                // Something this scanner does not model: step over it so the scan always ends.
                _ if cursor.line == before.line && cursor.col == before.col => cursor.col += 1,
                _ => {}
            }
        }
    }

    /// One `key: value` entry of a flow mapping.
    fn flow_entry(&mut self, cursor: Cursor, path: &FieldPath, depth: usize) -> Cursor {
        let key_pos = self.pos(cursor.line, cursor.col);
        let (after_key, key) = match self.char_at(cursor) {
            Some('"') | Some('\'') => match quoted(&self.lines[cursor.line], cursor.col) {
                Some((key, end)) => (
                    Cursor {
                        line: cursor.line,
                        col: end,
                    },
                    key,
                ),
                None => return cursor,
            },
            Some('{') | Some('[') => return self.flow_collection(cursor, path, depth + 1),
            _ => {
                let (end, raw) = self.flow_plain(cursor);
                (end, raw)
            }
        };
        let key_path = path.key(&key);
        if depth <= MAX_DEPTH {
            self.record_key(&key_path, key_pos);
        }
        let after = self.flow_skip_blank(after_key);
        if self.char_at(after) != Some(':') {
            return after;
        }
        let value = self.flow_skip_blank(Cursor {
            line: after.line,
            col: after.col + 1,
        });
        match self.char_at(value) {
            Some(',') | Some('}') | None => value,
            Some(_) => self.flow_node(value, &key_path, depth + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> FieldPath {
        let mut segs = Vec::new();
        for part in text.split('.') {
            let (name, rest) = part.split_once('[').unwrap_or((part, ""));
            if !name.is_empty() {
                segs.push(Seg::Key(name.to_owned()));
            }
            if let Some(index) = rest.strip_suffix(']') {
                segs.push(Seg::Index(index.parse().unwrap()));
            }
        }
        FieldPath(segs)
    }

    fn at(line: usize, column: usize) -> Pos {
        Pos { line, column }
    }

    fn locator(text: &str) -> Locator {
        Locator::new(text, 2, at(1, 1))
    }

    #[test]
    fn text_inside_a_value_is_located_from_the_value_on() {
        let text = "agent: x {{ args.x }}\ncommands:\n  - name: a\n    run: |\n      \
                    cat {{ args.x }}\n      echo {{ args.x }}\n";
        let loc = locator(text);
        let run = path("commands[0].run");
        assert_eq!(loc.within_value(&run, "{{ args.x }}", 0), at(6, 11));
        assert_eq!(loc.within_value(&run, "{{ args.x }}", 1), at(7, 12));
        // Not found as written: the value's own position.
        assert_eq!(loc.within_value(&run, "{{ args.y }}", 0), loc.value(&run));
    }

    #[test]
    fn block_mapping_values_are_located_on_file_lines() {
        let loc = locator("agent: claude -p\nmax_iterations: 5\n");
        assert_eq!(loc.key(&path("agent")), at(2, 1));
        assert_eq!(loc.value(&path("agent")), at(2, 8));
        assert_eq!(loc.value(&path("max_iterations")), at(3, 17));
        assert_eq!(loc.raw(&path("max_iterations")), Some("5"));
    }

    #[test]
    fn nested_block_mapping_is_located() {
        let loc = locator("idle:\n  delay: 30s   # first wait\n  backoff: fast\n");
        assert_eq!(loc.key(&path("idle.backoff")), at(4, 3));
        assert_eq!(loc.value(&path("idle.backoff")), at(4, 12));
        assert_eq!(loc.raw(&path("idle.delay")), Some("30s"));
        assert_eq!(loc.value(&path("idle")), at(3, 3));
    }

    #[test]
    fn sequence_of_mappings_is_located_per_item() {
        let text = "commands:\n  - name: tests\n    run: cargo test\n  - name: lint\n    run: x\n";
        let loc = locator(text);
        assert_eq!(loc.key(&path("commands[0]")), at(3, 3));
        assert_eq!(loc.value(&path("commands[0].name")), at(3, 11));
        assert_eq!(loc.value(&path("commands[1].run")), at(6, 10));
        assert_eq!(loc.key(&path("commands[1]")), at(5, 3));
    }

    #[test]
    fn sequence_at_the_keys_indentation_is_located() {
        let loc = locator("commands:\n- name: a\n  run: b\nargs:\n- x\n- y\n");
        assert_eq!(loc.value(&path("commands[0].run")), at(4, 8));
        assert_eq!(loc.value(&path("args[1]")), at(7, 3));
    }

    #[test]
    fn flow_mapping_on_one_line_is_located() {
        let loc = locator("idle: {delay: 30s, backoff: \"fast\", max: 1h}\n");
        assert_eq!(loc.key(&path("idle.backoff")), at(2, 20));
        assert_eq!(loc.value(&path("idle.backoff")), at(2, 29));
        assert_eq!(loc.raw(&path("idle.backoff")), Some("\"fast\""));
        assert_eq!(loc.value(&path("idle.max")), at(2, 42));
    }

    #[test]
    fn flow_sequence_items_are_located() {
        let loc = locator("args: [dir, focus]\ndone_when: ['cargo test', \"make\"]\n");
        assert_eq!(loc.value(&path("args[1]")), at(2, 13));
        assert_eq!(loc.value(&path("done_when[1]")), at(3, 27));
    }

    #[test]
    fn flow_collection_spanning_lines_is_located() {
        let loc = locator("idle: {\n  delay: 1m,\n  max: 2h\n}\ntimeout: 5m\n");
        assert_eq!(loc.value(&path("idle.max")), at(4, 8));
        assert_eq!(loc.value(&path("timeout")), at(6, 10));
    }

    #[test]
    fn block_scalar_lines_are_skipped() {
        let loc = locator("agent: |\n  claude -p\n  --verbose\ntimeout: 5m\n");
        assert_eq!(loc.value(&path("agent")), at(2, 8));
        assert_eq!(loc.value(&path("timeout")), at(5, 10));
    }

    #[test]
    fn quoted_keys_are_unquoted() {
        let loc = locator("\"agent\": x\n'max_iterations': 3\n");
        assert_eq!(loc.value(&path("max_iterations")), at(3, 19));
    }

    #[test]
    fn unknown_path_falls_back_to_its_parent() {
        let loc = locator("idle:\n  delay: 30s\n");
        assert_eq!(loc.value(&path("idle.max")), at(2, 1));
        assert_eq!(loc.value(&path("pty.mode")), at(2, 1));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let loc = locator("agent: \"é\"\ntimeout: x\n");
        assert_eq!(loc.value(&path("timeout")), at(3, 10));
        let loc = locator("done_when: [\"é\", x]\n");
        assert_eq!(loc.value(&path("done_when[1]")), at(2, 18));
    }

    #[test]
    fn repeated_key_is_reported_with_both_positions() {
        let loc = locator("agent: a\nidle:\n  delay: 1s\n  delay: 2s\n");
        assert_eq!(
            loc.duplicates(),
            [Duplicate {
                path: path("idle.delay"),
                first: at(4, 3),
                again: at(5, 3)
            }]
        );
    }

    #[test]
    fn path_is_displayed_with_dots_and_indices() {
        assert_eq!(path("commands[1].name").to_string(), "commands[1].name");
        assert_eq!(FieldPath::default().to_string(), "frontmatter");
    }
}
