//! A Markdown checklist as a [`TaskList`]: every `- [ ]` (`* [ ]`, `+ [ ]`, `1. [ ]`,
//! `1) [ ]`) line with a title, outside code blocks and HTML comments as CommonMark reads
//! them, is a task, its more-indented lines below (notes,
//! sub-items, nested checkboxes) its body. A pass changes exactly that line's `[ ]` to `[x]`;
//! a block appends ` <!-- ralph: blocked: reason -->` to it; a question goes on a line of its
//! own under the item. Every other byte of the file stays as it was (CRLF, tabs, trailing
//! spaces, prose), and each change is made to the file as it is at the write.
//!
//! A task's id is its title made into a slug (at most 40 characters) and 8 hex digits of a
//! hash of the title with its spaces collapsed: stable while the line's text is unchanged
//! (ticking it, blocking it or adding notes under it keeps it). A second item with the very
//! same title gets `-2`, a third `-3`; as those go by order, a title on two items is a load
//! warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::list::{Asked, ListedTask, Mark, TaskList, TaskListError, TaskState};

/// The comment ralph puts on a blocked item's line, before the reason.
const BLOCKED: &str = "<!-- ralph: blocked:";
/// The line ralph puts under an item to ask a person.
const QUESTION: &str = "<!-- ralph: question:";
/// A person's answer written as ralph's comment form (any other new line under the
/// question is an answer too).
const ANSWER: &str = "<!-- ralph: answer:";

/// Why a checklist cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MarkdownError {
    /// The file could not be read.
    #[error("{}: cannot read: {cause}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is not UTF-8.
    #[error("{}:{line}: not UTF-8 text; ralph reads a checklist only as UTF-8", .path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the first byte that is not.
        line: usize,
    },
    /// The file could not be written.
    #[error("{}: cannot write: {cause}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// Others saved the file again and again while ralph wrote its change, faster than ralph
    /// could apply it to each save: nothing of theirs is lost, ralph's change waits.
    #[error("{}: saved again and again while ralph wrote to it; ralph's change waits", .path.display())]
    KeepsChanging {
        /// The file.
        path: PathBuf,
    },
}

/// One checklist item, found in a text ([`items`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Item {
    /// Its id ([`id_of`] its title, `-2` on a second item of the same title).
    pub id: String,
    /// Its title: the line's text after the checkbox, HTML comments left out, trimmed.
    pub title: String,
    /// Ticked (passed), blocked by ralph's comment, or still to do.
    pub state: TaskState,
    /// Byte offset of the `[` of its checkbox.
    checkbox: usize,
    /// Byte range of its line, without the line ending.
    line: std::ops::Range<usize>,
    /// Byte offset just after its last body line (and that line's ending), before any blank
    /// lines that end the item.
    block_end: usize,
    /// Its body lines, as written (each without its ending), blank lines inside kept.
    pub body: Vec<String>,
    /// How its body lines are indented (the first body line's, or the item's text column).
    body_indent: String,
}

/// A block that hides what is in it from the checklist, as CommonMark reads it.
#[derive(Debug, Clone, Copy)]
enum Hidden {
    /// A fenced code block: closed only by a fence of the same character at least as long.
    Fence { char: u8, len: usize },
    /// An HTML block opened by `<!--`: closed by the first line holding `-->`.
    Comment,
    /// An indented code block: its lines are indented at least `column`.
    Code { column: usize },
}

/// The items of `text`, in file order. Lines are read as CommonMark reads blocks: no item
/// inside a fenced or indented code block or an HTML comment, and an item indented four
/// columns past its container is code or text, not an item.
pub fn items(text: &str) -> Vec<Item> {
    let lines = lines(text);
    let mut items = Vec::new();
    let mut hidden: Option<Hidden> = None;
    // The content columns of the plain list items (no checkbox) the line may be inside.
    let mut containers: Vec<usize> = Vec::new();
    // Whether an indented code block may start here (not in a paragraph's continuation).
    let mut code_may_start = true;
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let (start, content) = lines[i];
        let trimmed = content.trim_start();
        let indent = width(&content[..content.len() - trimmed.len()]);
        match hidden {
            Some(Hidden::Fence { char, len }) => {
                if closes_fence(trimmed, char, len) {
                    hidden = None;
                    code_may_start = true;
                }
                i += 1;
                continue;
            }
            Some(Hidden::Comment) => {
                if content.contains("-->") {
                    hidden = None;
                    code_may_start = true;
                }
                i += 1;
                continue;
            }
            Some(Hidden::Code { column }) if trimmed.is_empty() || indent >= column => {
                i += 1;
                continue;
            }
            Some(Hidden::Code { .. }) => hidden = None,
            None => {}
        }
        if trimmed.is_empty() {
            code_may_start = true;
            i += 1;
            continue;
        }
        while containers.last().is_some_and(|&column| column > indent) {
            containers.pop();
        }
        let base = containers.last().copied().unwrap_or(0);
        if indent >= base + 4 {
            // Four columns past its container: code after a break, else a paragraph's text.
            if code_may_start {
                hidden = Some(Hidden::Code { column: base + 4 });
            }
            i += 1;
            continue;
        }
        if let Some((char, len)) = opens_fence(trimmed) {
            hidden = Some(Hidden::Fence { char, len });
            i += 1;
            continue;
        }
        if let Some(after) = trimmed.strip_prefix("<!--") {
            if !after.contains("-->") {
                hidden = Some(Hidden::Comment);
            }
            code_may_start = true;
            i += 1;
            continue;
        }
        code_may_start = trimmed.starts_with('#');
        let found = checkbox(content)
            .filter(|f| !strip_comments(&content[f.title_start..]).trim().is_empty());
        let Some(found) = found else {
            // A plain list item: the lines indented to its text are inside it.
            if let Some(column) = list_marker(content).map(|m| m.text_column) {
                containers.push(column);
            }
            i += 1;
            continue;
        };
        // The body: every following line indented further, blank lines inside included.
        let mut end = i;
        let mut j = i + 1;
        while j < lines.len() {
            let line = lines[j].1;
            if line.trim().is_empty() {
                j += 1;
                continue;
            }
            if width(&line[..line.len() - line.trim_start().len()]) > indent {
                end = j;
                j += 1;
            } else {
                break;
            }
        }
        let body: Vec<String> = lines[i + 1..=end]
            .iter()
            .map(|(_, l)| (*l).to_owned())
            .collect();
        let body_indent = body
            .iter()
            .find(|l| !l.trim().is_empty())
            .map(|l| l[..l.len() - l.trim_start().len()].to_owned())
            .unwrap_or_else(|| " ".repeat(found.text_column));
        let raw_title = &content[found.title_start..];
        let title = strip_comments(raw_title).trim().to_owned();
        let state = match (found.checked, blocked_by_ralph(raw_title)) {
            (true, _) => TaskState::Passed,
            (false, true) => TaskState::Blocked,
            (false, false) => TaskState::Pending,
        };
        let base = id_of(&title);
        let n = taken.entry(base.clone()).or_insert(0);
        *n += 1;
        let id = match *n {
            1 => base,
            n => format!("{base}-{n}"),
        };
        let block_end = match lines.get(end + 1) {
            Some((next, _)) => *next,
            None => text.len(),
        };
        items.push(Item {
            id,
            title,
            state,
            checkbox: start + found.checkbox,
            line: start..start + content.len(),
            block_end,
            body,
            body_indent,
        });
        code_may_start = true;
        i = end + 1;
    }
    items
}

/// The character and length of the fence `trimmed` opens: three or more backticks (no
/// backtick after them) or tildes.
fn opens_fence(trimmed: &str) -> Option<(u8, usize)> {
    let char = *trimmed
        .as_bytes()
        .first()
        .filter(|c| matches!(c, b'`' | b'~'))?;
    let len = trimmed.bytes().take_while(|&c| c == char).count();
    let info = &trimmed[len..];
    (len >= 3 && !(char == b'`' && info.contains('`'))).then_some((char, len))
}

/// Whether `trimmed` closes a fence of `len` times `char`: as many or more, nothing after.
fn closes_fence(trimmed: &str, char: u8, len: usize) -> bool {
    let run = trimmed.bytes().take_while(|&c| c == char).count();
    run >= len && trimmed[run..].trim().is_empty()
}

/// Whether an item's text (after its checkbox) ends with ralph's blocked comment, outside a
/// code span: a title that merely mentions the comment is not blocked.
fn blocked_by_ralph(text: &str) -> bool {
    let text = text.trim_end();
    if !text.ends_with("-->") {
        return false;
    }
    let Some(at) = text.rfind(BLOCKED) else {
        return false;
    };
    let before = &text[..at];
    // An odd number of backticks before it: it is inside a code span.
    before.matches('`').count() % 2 == 0
        && !text[at + BLOCKED.len()..text.len() - 3].contains("-->")
}

/// Each line's start offset and its text without the line ending.
fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in text.split_inclusive('\n') {
        let content = piece
            .strip_suffix('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .unwrap_or(piece);
        out.push((start, content));
        start += piece.len();
    }
    out
}

/// The columns leading whitespace takes (a tab to the next multiple of 4).
fn width(space: &str) -> usize {
    space.chars().fold(0, |col, c| match c {
        '\t' => col + 4 - col % 4,
        _ => col + 1,
    })
}

/// Where a list item's marker is.
struct ListMarker {
    /// Byte offset just after the marker and the spaces after it.
    after: usize,
    /// The column the item's text starts at (where its sub-lines line up).
    text_column: usize,
}

/// The list marker `line` starts with: `-`, `*`, `+`, or up to 9 digits and `.` or `)`,
/// then a space or a tab (or the end of the line).
fn list_marker(line: &str) -> Option<ListMarker> {
    let rest = line.trim_start();
    let lead = line.len() - rest.len();
    let marker = match rest.as_bytes().first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            match rest.as_bytes().get(digits) {
                Some(b'.' | b')') if digits <= 9 => digits + 1,
                _ => return None,
            }
        }
        _ => return None,
    };
    let after = &rest[marker..];
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    if spaces == 0 && !after.is_empty() {
        return None;
    }
    Some(ListMarker {
        after: lead + marker + spaces,
        text_column: width(&line[..lead]) + marker + 1,
    })
}

/// Where a checklist line's parts are.
struct Checkbox {
    /// Byte offset of `[` in the line.
    checkbox: usize,
    checked: bool,
    /// Byte offset of the title.
    title_start: usize,
    /// The column the item's text starts at (where its sub-lines line up).
    text_column: usize,
}

/// The checkbox of `line`, when it is a checklist item: a list marker (`-`, `*`, `+`, or
/// digits and `.` or `)`), a space, `[ ]` or `[x]`, then a space or the end.
fn checkbox(line: &str) -> Option<Checkbox> {
    let marker = list_marker(line)?;
    let boxed = &line[marker.after..];
    let checked = match boxed.get(..3)? {
        "[ ]" => false,
        "[x]" | "[X]" => true,
        _ => return None,
    };
    let tail = &boxed[3..];
    if !(tail.is_empty() || tail.starts_with([' ', '\t'])) {
        return None;
    }
    Some(Checkbox {
        checkbox: marker.after,
        checked,
        title_start: marker.after + 3,
        text_column: marker.text_column,
    })
}

/// `text` without its `<!-- ... -->` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("<!--") {
        out.push_str(&rest[..open]);
        match rest[open..].find("-->") {
            Some(close) => rest = &rest[open + close + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// The id of a title: slug and hash (see the module's documentation).
pub fn id_of(title: &str) -> String {
    let normal = title.split_whitespace().collect::<Vec<_>>().join(" ");
    // FNV-1a, 64 bits: stable across builds and platforms, unlike std's hasher.
    let hash = normal.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut slug = String::new();
    for c in normal.chars().flat_map(char::to_lowercase) {
        if slug.len() >= 40 {
            break;
        }
        match c {
            'a'..='z' | '0'..='9' => slug.push(c),
            _ if !slug.is_empty() && !slug.ends_with('-') => slug.push('-'),
            _ => {}
        }
    }
    let slug = slug.trim_end_matches('-');
    match slug.is_empty() {
        true => format!("task-{:08x}", hash >> 32),
        false => format!("{slug}-{:08x}", hash >> 32),
    }
}

/// Text safe inside an HTML comment on one line.
fn one_line_comment_text(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("-->", "-- >")
}

/// The file's line ending: that of its first line, `\n` without one.
fn eol(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if text[..i].ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

/// `text` with `mark` applied; `None` when it already says so. A task missing is an error.
fn apply(text: &str, location: &str, mark: &Mark) -> Result<Option<String>, TaskListError> {
    let id = mark.story_id();
    let Some(item) = items(text).into_iter().find(|i| i.id == id) else {
        return Err(TaskListError::NoSuchTask {
            location: location.to_owned(),
            id: id.to_owned(),
        });
    };
    match mark {
        Mark::Passed { .. } => {
            if item.state == TaskState::Passed {
                return Ok(None);
            }
            let mut out = String::with_capacity(text.len());
            out.push_str(&text[..item.checkbox]);
            out.push_str("[x]");
            out.push_str(&text[item.checkbox + 3..]);
            Ok(Some(out))
        }
        Mark::Blocked {
            reason, saved_ref, ..
        } => {
            if item.state != TaskState::Pending {
                return Ok(None);
            }
            let mut why = one_line_comment_text(reason);
            if let Some(saved) = saved_ref {
                why.push_str(&format!("; abandoned work: git checkout {saved}"));
            }
            let mut out = String::with_capacity(text.len() + why.len() + 24);
            out.push_str(&text[..item.line.end]);
            out.push_str(&format!(" {BLOCKED} {why} -->"));
            out.push_str(&text[item.line.end..]);
            Ok(Some(out))
        }
    }
}

/// A Markdown checklist.
#[derive(Debug)]
pub struct MarkdownList {
    /// The file as given (relative to the agent's folder, or absolute).
    path: PathBuf,
    /// The text as last read whole: what a pass commit holds when the file cannot be read.
    last_good: Option<String>,
    /// What the last load found a person should know: titles on more than one item.
    warnings: Vec<String>,
}

impl MarkdownList {
    /// The checklist at `path`.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            last_good: None,
            warnings: Vec::new(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&mut self) -> Result<String, MarkdownError> {
        let bytes = std::fs::read(&self.path).map_err(|cause| MarkdownError::Read {
            path: self.path.clone(),
            cause,
        })?;
        let text = self.decode(bytes)?;
        self.last_good = Some(text.clone());
        Ok(text)
    }

    /// `bytes` as text, or where they stop being UTF-8.
    fn decode(&self, bytes: Vec<u8>) -> Result<String, MarkdownError> {
        String::from_utf8(bytes).map_err(|err| {
            let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
            MarkdownError::NotUtf8 {
                path: self.path.clone(),
                line: valid.iter().filter(|b| **b == b'\n').count() + 1,
            }
        })
    }

    /// Applies `edit` to the file as it is now and writes the result through
    /// [`ralph_atomic::update`]: a person's save made while ralph writes is never
    /// replaced, `edit` is applied to it again. `edit` answers the new text, or `None` when
    /// the file already says so.
    fn update(
        &mut self,
        mut edit: impl FnMut(&str) -> Result<Option<String>, TaskListError>,
    ) -> Result<(), TaskListError> {
        // A file that cannot be read is said as before: the change waits.
        self.read()?;
        let mut last = None;
        let updated = ralph_atomic::update(&self.path, |bytes| {
            let text = self.decode(bytes.to_vec())?;
            let out = edit(&text)?;
            last = Some(out.clone().unwrap_or(text));
            Ok(out.map(String::into_bytes))
        });
        match updated {
            Ok(_) => {}
            Err(ralph_atomic::UpdateError::Edit(err)) => return Err(err),
            Err(ralph_atomic::UpdateError::Io(cause)) => {
                return Err(TaskListError::Failed(Box::new(MarkdownError::Write {
                    path: self.path.clone(),
                    cause,
                })));
            }
            Err(_) => {
                return Err(TaskListError::Unreadable(Box::new(
                    MarkdownError::KeepsChanging {
                        path: self.path.clone(),
                    },
                )));
            }
        }
        self.last_good = last;
        Ok(())
    }
}

impl From<MarkdownError> for TaskListError {
    fn from(err: MarkdownError) -> Self {
        match err {
            MarkdownError::Write { .. } => Self::Failed(Box::new(err)),
            _ => Self::Unreadable(Box::new(err)),
        }
    }
}

impl TaskList for MarkdownList {
    fn kind(&self) -> &str {
        "markdown"
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn load(&mut self) -> Result<Vec<ListedTask>, TaskListError> {
        let text = self.read()?;
        let found = items(&text);
        self.warnings = repeated_titles(&self.location(), &text, &found);
        Ok(found
            .into_iter()
            .map(|item| {
                let mut task = ListedTask::new(item.id.clone(), item.title.clone());
                task.state = item.state;
                let body = dedent(&item.body);
                task.placeholders = BTreeMap::from([
                    ("task.id".to_owned(), item.id),
                    ("task.title".to_owned(), item.title),
                    ("task.body".to_owned(), body),
                ]);
                task
            })
            .collect())
    }

    fn marked_files(&mut self, mark: &Mark) -> Result<Vec<(PathBuf, Vec<u8>)>, TaskListError> {
        let text = match self.read() {
            Ok(text) => text,
            Err(err) => self.last_good.clone().ok_or(err)?,
        };
        let marked = apply(&text, &self.location(), mark)?.unwrap_or(text);
        Ok(vec![(self.path.clone(), marked.into_bytes())])
    }

    fn write_mark(&mut self, mark: &Mark) -> Result<(), TaskListError> {
        let location = self.location();
        self.update(|text| apply(text, &location, mark))
    }

    fn load_warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn can_ask(&self) -> bool {
        true
    }

    fn ask(&mut self, task_id: &str, question: &str) -> Result<Asked, TaskListError> {
        let asked = one_line_comment_text(question);
        let location = self.location();
        let mut line = 0;
        self.update(|text| {
            let Some(item) = items(text).into_iter().find(|i| i.id == task_id) else {
                return Err(TaskListError::NoSuchTask {
                    location: location.clone(),
                    id: task_id.to_owned(),
                });
            };
            let eol = eol(text);
            let mut out = String::with_capacity(text.len() + asked.len() + 32);
            out.push_str(&text[..item.block_end]);
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(&format!("{}{QUESTION} {asked} -->{eol}", item.body_indent));
            out.push_str(&text[item.block_end..]);
            line = lines(&out[..item.block_end]).len() + 1;
            Ok(Some(out))
        })?;
        Ok(Asked::new(
            task_id,
            question,
            format!("{}:{line}", self.path.display()),
            serde_json::Value::String(asked),
        ))
    }

    fn answer(&mut self, asked: &Asked) -> Result<Option<String>, TaskListError> {
        let text = self.read()?;
        let Some(item) = items(&text).into_iter().find(|i| i.id == asked.task_id) else {
            return Err(TaskListError::NoSuchTask {
                location: self.location(),
                id: asked.task_id.clone(),
            });
        };
        let question = asked.token.as_str().unwrap_or(&asked.question);
        let asks = |l: &String| {
            l.trim()
                .strip_prefix(QUESTION)
                .is_some_and(|q| q.trim_end_matches("-->").trim() == question)
        };
        let Some(at) = item.body.iter().rposition(asks) else {
            return Err(TaskListError::NoSuchQuestion {
                at: asked.at.clone(),
                question: asked.question.clone(),
            });
        };
        let mut said: Vec<&str> = item.body[at + 1..].iter().map(String::as_str).collect();
        // An answer written at column 0 right under a question that ends the item is a lazy
        // continuation of it, as CommonMark reads it: its lines up to a blank line or a block.
        if said.iter().all(|l| l.trim().is_empty()) {
            said.extend(
                lines(&text[item.block_end..])
                    .into_iter()
                    .map(|(_, l)| l)
                    .take_while(|l| !l.trim().is_empty() && continues(l)),
            );
        }
        let mut answer = Vec::new();
        for line in said {
            let line = line.trim();
            if line.starts_with(QUESTION) {
                break;
            }
            if let Some(said) = line.strip_prefix(ANSWER) {
                answer.push(said.trim_end_matches("-->").trim().to_owned());
            } else if !line.is_empty() && !line.starts_with("<!-- ralph:") {
                answer.push(line.to_owned());
            }
        }
        Ok((!answer.is_empty()).then(|| answer.join("\n")))
    }
}

/// Whether `line` can continue a paragraph lazily: it starts no block of its own (a list
/// item, a heading, a fence, a quote, an HTML block or a thematic break).
fn continues(line: &str) -> bool {
    let trimmed = line.trim_start();
    let breaks = trimmed.len() >= 3
        && trimmed
            .chars()
            .all(|c| matches!(c, '-' | '*' | '_' | ' ' | '\t'))
        && trimmed.chars().filter(|c| !c.is_whitespace()).count() >= 3;
    list_marker(line).is_none()
        && opens_fence(trimmed).is_none()
        && !breaks
        && !trimmed.starts_with(['#', '>', '<'])
}

/// A warning for each title on more than one item of `found`: their ids go by their order, so
/// an item with that title added above one of them gives its id to another line.
fn repeated_titles(location: &str, text: &str, found: &[Item]) -> Vec<String> {
    let mut by_id: BTreeMap<String, Vec<&Item>> = BTreeMap::new();
    for item in found {
        by_id.entry(id_of(&item.title)).or_default().push(item);
    }
    let line_of = |item: &Item| text[..item.line.start].matches('\n').count() + 1;
    by_id
        .values()
        .filter(|same| same.len() > 1)
        .map(|same| {
            let lines: Vec<String> = same.iter().map(|i| line_of(i).to_string()).collect();
            format!(
                "{location}: the title \"{}\" is on {} items (lines {}); ralph tells them \
                 apart only by their order ({}, {}-2, ...), so an item with that title added \
                 above one of them moves its id to another line: give each a title of its own",
                same[0].title,
                same.len(),
                lines.join(", "),
                same[0].id,
                same[0].id
            )
        })
        .collect()
}

/// Body lines with the leading whitespace they all share removed, blank lines at the ends
/// dropped.
fn dedent(body: &[String]) -> String {
    let mut written = body.iter().filter(|l| !l.trim().is_empty());
    let first = written
        .next()
        .map_or("", |l| &l[..l.len() - l.trim_start().len()]);
    let common = written.fold(first.len(), |n, l| {
        first
            .bytes()
            .zip(l.bytes())
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    });
    let lines: Vec<&str> = body
        .iter()
        .map(|l| match l.trim().is_empty() {
            true => "",
            false => &l[common..],
        })
        .collect();
    lines.join("\n").trim_matches('\n').to_owned()
}

#[cfg(test)]
mod tests;
