//! `prd.json`: the stories, read with located errors and rewritten atomically.
//!
//! A rewrite edits the file's text in place: only the bytes of one story's `passes` and `notes`
//! values change (a missing `notes` is added after the story's last field, indented like its
//! other fields), so unknown fields, key order, indentation, number spellings and escapes all
//! stay as the user wrote them. The spans come from serde_json's [`RawValue`], which borrows
//! from the text. The file is also kept as a [`serde_json::Value`] (with `preserve_order`), for
//! `{{ story.json }}`; should an edit in place ever not parse back to what was set, the file is
//! written from that value instead (2-space indentation, key order kept). A byte order mark and
//! CRLF line endings survive both kinds of rewrite.
//!
//! Loading is linear in the file: one parse into the `Value`, then a walk over it that checks
//! the fields ralph reads (ids are checked for repeats through a hash map). Only when that finds
//! a problem is the text walked again, through [`RawValue`]s, to put a line and column on the
//! value at fault. Writes go to a temporary file in the same folder, are fsynced, then renamed over
//! the original: a reader (or a crash) sees the old file or the new one, never half of one.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::list::Mark;

/// How a question put to a person starts its paragraph in a story's notes.
const QUESTION_NOTE: &str = "ralph: question: ";

/// A story's `passes`: `true`, `false` or `"blocked"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Passes {
    /// `true`: done.
    Yes,
    /// `false`: still to do.
    No,
    /// `"blocked"`: ralph escalated it; skipped until a person resets it.
    Blocked,
}

impl Passes {
    fn to_value(self) -> Value {
        match self {
            Passes::Yes => Value::Bool(true),
            Passes::No => Value::Bool(false),
            Passes::Blocked => Value::String("blocked".into()),
        }
    }
}

impl<'de> Deserialize<'de> for Passes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(true) => Ok(Passes::Yes),
            Value::Bool(false) => Ok(Passes::No),
            Value::String(s) if s == "blocked" => Ok(Passes::Blocked),
            other => Err(serde::de::Error::custom(format!(
                "passes: expected true, false or \"blocked\", got {other}"
            ))),
        }
    }
}

/// The fields ralph reads from one story.
#[derive(Debug, Clone, PartialEq)]
pub struct Story {
    /// `id`, e.g. `US-001`.
    pub id: String,
    /// `title`.
    pub title: String,
    /// `description`.
    pub description: String,
    /// `acceptanceCriteria`, one line each.
    pub acceptance_criteria: Vec<String>,
    /// `priority` as the number it sorts by, lower first: a number as written, `"high"`,
    /// `"medium"` and `"low"` as 1, 2 and 3, digits in a string (`"2"`) as their number.
    pub priority: f64,
    /// `passes`.
    pub passes: Passes,
    /// The story's whole JSON object as written (unknown fields included), pretty-printed.
    pub json: String,
}

/// The largest priority magnitude ralph accepts: 2^53, beyond which two different whole
/// numbers can read as the same and their order would be lost.
const MAX_PRIORITY: f64 = 9_007_199_254_740_992.0;

/// The priority words and the number each counts as: `"high"` runs with priority 1.
const PRIORITY_WORDS: [(&str, f64); 3] = [("high", 1.0), ("medium", 2.0), ("low", 3.0)];

const PRIORITY_ALLOWED: &str = "a number from -9007199254740992 to 9007199254740992, \
     \"high\", \"medium\", \"low\" (1, 2 and 3) or digits such as \"2\"";

/// A step on the way from the top of the file to a value: `userStories[3].priority`.
#[derive(Debug, Clone)]
enum Seg {
    Key(&'static str),
    Index(usize),
}

/// What is wrong, and where: the value at `at`.
struct Problem {
    at: Vec<Seg>,
    message: String,
    /// The value found, when the message ends `got ...`: a number is shown as written.
    found: Option<Value>,
}

impl Problem {
    fn new(at: &[Seg], message: impl Into<String>) -> Self {
        Self {
            at: at.to_vec(),
            message: message.into(),
            found: None,
        }
    }

    /// `expected {expected}, got {found}`.
    fn expected(at: &[Seg], expected: &str, found: &Value) -> Self {
        Self {
            at: at.to_vec(),
            message: format!("expected {expected}"),
            found: Some(found.clone()),
        }
    }

    /// `at` as a field path: `userStories[3].priority`; empty for the top.
    fn field(&self) -> String {
        let mut out = String::new();
        for seg in &self.at {
            match seg {
                Seg::Key(key) if out.is_empty() => out.push_str(key),
                Seg::Key(key) => {
                    out.push('.');
                    out.push_str(key);
                }
                Seg::Index(index) => {
                    out.push('[');
                    out.push_str(&index.to_string());
                    out.push(']');
                }
            }
        }
        out
    }
}

/// What a value is, for `got ...`: scalars as JSON (long strings cut), collections by kind.
fn describe(value: &Value) -> String {
    match value {
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::String(text) if text.chars().count() > 40 => {
            let cut: String = text.chars().take(40).collect();
            let quoted = Value::String(cut).to_string();
            format!("{}...", quoted.strip_suffix('"').unwrap_or(&quoted))
        }
        scalar => scalar.to_string(),
    }
}

/// A story's `priority` as the number it sorts by; `None` when it is not one ralph accepts.
pub(crate) fn priority_of(value: &Value) -> Option<f64> {
    let number = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse::<f64>().ok()?
        }
        Value::String(s) => {
            return PRIORITY_WORDS
                .iter()
                .find(|(word, _)| s.eq_ignore_ascii_case(word))
                .map(|&(_, n)| n);
        }
        _ => return None,
    };
    (number.abs() <= MAX_PRIORITY).then_some(number)
}

/// The stories of `value`, a whole prd.json, or the first problem found in it.
fn stories_of(value: &Value) -> Result<Vec<Story>, Problem> {
    const STORIES: Seg = Seg::Key("userStories");
    let Value::Object(top) = value else {
        return Err(Problem::expected(
            &[],
            "an object with a \"userStories\" list at the top, such as \
             {\"userStories\": [{\"id\": \"US-001\", \"priority\": 1, \"passes\": false}]}",
            value,
        ));
    };
    let Some(list) = top.get("userStories") else {
        let keys: Vec<String> = top.keys().take(5).map(|k| format!("{k:?}")).collect();
        let has = match keys.is_empty() {
            true => "an empty object".to_owned(),
            false => format!("an object with {}", keys.join(", ")),
        };
        return Err(Problem::new(
            &[],
            format!("missing \"userStories\", the list of stories; the top is {has}"),
        ));
    };
    let Value::Array(list) = list else {
        return Err(Problem::expected(
            &[STORIES],
            "a list of stories, [{\"id\": ..., \"priority\": ..., \"passes\": ...}, ...]",
            list,
        ));
    };
    let mut stories = Vec::with_capacity(list.len());
    // Each id and the index of the story that has it: one lookup per story.
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(list.len());
    for (index, object) in list.iter().enumerate() {
        let at = [STORIES, Seg::Index(index)];
        let Value::Object(fields) = object else {
            return Err(Problem::expected(
                &at,
                "a story, an object with \"id\", \"priority\" and \"passes\"",
                object,
            ));
        };
        let field = |name: &'static str| {
            let mut at = at.to_vec();
            at.push(Seg::Key(name));
            at
        };
        let required = |name: &'static str, allowed: &str| {
            fields
                .get(name)
                .ok_or_else(|| Problem::new(&at, format!("missing \"{name}\" ({allowed})")))
        };
        let string = |name: &'static str, value: &Value| match value {
            Value::String(s) => Ok(s.clone()),
            other => Err(Problem::expected(&field(name), "a string", other)),
        };
        let optional = |name: &'static str| match fields.get(name) {
            Some(value) => string(name, value),
            None => Ok(String::new()),
        };
        let id_value = required("id", "a string, such as \"US-001\"")?;
        let id = string("id", id_value)?;
        let priority_value = required("priority", PRIORITY_ALLOWED)?;
        let priority = priority_of(priority_value).ok_or_else(|| {
            Problem::expected(&field("priority"), PRIORITY_ALLOWED, priority_value)
        })?;
        let passes = match required("passes", "true, false or \"blocked\"")? {
            Value::Bool(true) => Passes::Yes,
            Value::Bool(false) => Passes::No,
            Value::String(s) if s == "blocked" => Passes::Blocked,
            other => {
                return Err(Problem::expected(
                    &field("passes"),
                    "true, false or \"blocked\"",
                    other,
                ));
            }
        };
        let acceptance_criteria = match fields.get("acceptanceCriteria") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => {
                        let mut at = field("acceptanceCriteria");
                        at.push(Seg::Index(i));
                        Err(Problem::expected(&at, "a string", other))
                    }
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(Problem::expected(
                    &field("acceptanceCriteria"),
                    "a list of strings",
                    other,
                ));
            }
        };
        let story = Story {
            title: optional("title")?,
            description: optional("description")?,
            acceptance_criteria,
            priority,
            passes,
            json: serde_json::to_string_pretty(object).unwrap_or_default(),
            id,
        };
        if let Some(first) = seen.insert(id_value.as_str().unwrap_or_default(), index) {
            return Err(Problem::new(
                &field("id"),
                format!(
                    "{id_value} is also the id of userStories[{first}]; each story needs its own id"
                ),
            ));
        }
        stories.push(story);
    }
    Ok(stories)
}

/// The byte offset in `text` of the value `at` points to, or of the nearest value above it
/// that exists (a missing field points at its story); with the value's text when it was found.
fn locate<'t>(text: &'t str, at: &[Seg]) -> (usize, Option<&'t str>) {
    let offset = |raw: &RawValue| {
        (raw.get().as_ptr() as usize)
            .checked_sub(text.as_ptr() as usize)
            .filter(|&start| text.get(start..start + raw.get().len()) == Some(raw.get()))
    };
    let Ok(mut raw) = serde_json::from_str::<&RawValue>(text) else {
        return (0, None);
    };
    let mut found = true;
    for seg in at {
        let next = match seg {
            Seg::Key(key) => serde_json::from_str::<HashMap<String, &RawValue>>(raw.get())
                .ok()
                .and_then(|fields| fields.get(*key).copied()),
            Seg::Index(index) => serde_json::from_str::<Vec<&RawValue>>(raw.get())
                .ok()
                .and_then(|items| items.get(*index).copied()),
        };
        match next {
            Some(next) => raw = next,
            None => {
                found = false;
                break;
            }
        }
    }
    match offset(raw) {
        Some(start) => (start, found.then(|| &text[start..start + raw.get().len()])),
        None => (0, None),
    }
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// A prd.json that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrdError {
    /// The file could not be read.
    #[error("{}: cannot read: {cause}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is not UTF-8 JSON, is not shaped like a prd.json, or a field holds a value
    /// ralph cannot use (two stories with one id included).
    #[error("{}:{line}:{column}: {message}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The problem: the field (`userStories[3].priority`) when there is one, what is
        /// there and what is allowed.
        message: String,
    },
    /// A story ralph was working on is gone from the file.
    #[error("{}: no story with the id \"{id}\"", .path.display())]
    NoSuchStory {
        /// The file.
        path: PathBuf,
        /// The id.
        id: String,
    },
    /// The file could not be written.
    #[error("{}: cannot write: {cause}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The question ralph put in a story's notes is gone from them (a person deleted it).
    #[error("{} ({id}'s notes): the question \"{question}\" is no longer there", .path.display())]
    NoSuchQuestion {
        /// The file.
        path: PathBuf,
        /// The story.
        id: String,
        /// The question.
        question: String,
    },
    /// Others saved the file again and again while ralph wrote its change, faster than ralph
    /// could apply it to each save: nothing of theirs is lost, ralph's change waits.
    #[error("{}: saved again and again while ralph wrote to it; ralph's change waits", .path.display())]
    KeepsChanging {
        /// The file.
        path: PathBuf,
    },
}

/// A loaded prd.json.
#[derive(Debug, Clone)]
pub struct Prd {
    path: PathBuf,
    value: Value,
    stories: Vec<Story>,
    /// The file's text after any byte order mark, with ralph's edits applied.
    text: String,
    /// Whether the file starts with a UTF-8 byte order mark, which a rewrite keeps.
    bom: bool,
    /// The file's line ending (`"\r\n"` when its first line ends so), for the lines ralph adds.
    eol: &'static str,
}

const BOM: &str = "\u{feff}";

impl Prd {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Self, PrdError> {
        let bytes = fs::read(path).map_err(|cause| PrdError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        Self::from_bytes(path, &bytes)
    }

    /// Validates `bytes`, the content of `path`, which must be UTF-8.
    fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Self, PrdError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::parse(path, text),
            Err(err) => {
                let valid = std::str::from_utf8(&bytes[..err.valid_up_to()]).unwrap_or_default();
                let (line, column) = line_column(valid, valid.len());
                Err(PrdError::Malformed {
                    path: path.to_path_buf(),
                    line,
                    column,
                    message: format!(
                        "byte 0x{:02x} is not UTF-8; prd.json must be UTF-8 text",
                        bytes[err.valid_up_to()]
                    ),
                })
            }
        }
    }

    /// Validates `text`, the content of `path`. A leading byte order mark is allowed (and kept
    /// by rewrites).
    pub fn parse(path: &Path, text: &str) -> Result<Self, PrdError> {
        let (bom, text) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let value: Value = serde_json::from_str(text).map_err(|err| PrdError::Malformed {
            path: path.to_path_buf(),
            line: err.line(),
            column: err.column(),
            message: syntax_message(&err),
        })?;
        let stories = stories_of(&value).map_err(|problem| {
            let (offset, raw) = locate(text, &problem.at);
            let (line, column) = line_column(text, offset);
            let mut message = problem.message.clone();
            if let Some(found) = &problem.found {
                // A number as written (`1e308`), not as serde_json prints it back (`1e+308`).
                let shown = match (found, raw) {
                    (Value::Number(_), Some(raw)) => raw.to_owned(),
                    _ => describe(found),
                };
                message = format!("{message}, got {shown}");
            }
            let field = problem.field();
            if !field.is_empty() {
                message = format!("{field}: {message}");
            }
            PrdError::Malformed {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        })?;
        let crlf = text.find('\n').is_some_and(|i| text[..i].ends_with('\r'));
        Ok(Self {
            path: path.to_path_buf(),
            value,
            stories,
            text: text.to_owned(),
            bom,
            eol: if crlf { "\r\n" } else { "\n" },
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every story, in file order.
    pub fn stories(&self) -> &[Story] {
        &self.stories
    }

    /// The story with `id`.
    pub fn story(&self, id: &str) -> Option<&Story> {
        self.stories.iter().find(|s| s.id == id)
    }

    /// The story to work on: the lowest `priority` whose `passes` is `false`; file order breaks
    /// ties.
    pub fn current(&self) -> Option<&Story> {
        self.stories.iter().filter(|s| s.passes == Passes::No).fold(
            None,
            |best: Option<&Story>, s| match best {
                Some(b) if b.priority <= s.priority => Some(b),
                _ => Some(s),
            },
        )
    }

    /// How many stories have each `passes` value: `(passed, blocked, remaining)`.
    pub fn counts(&self) -> (u64, u64, u64) {
        let count = |p| self.stories.iter().filter(|s| s.passes == p).count() as u64;
        (
            count(Passes::Yes),
            count(Passes::Blocked),
            count(Passes::No),
        )
    }

    fn object_mut(&mut self, id: &str) -> Result<&mut serde_json::Map<String, Value>, PrdError> {
        self.value["userStories"]
            .as_array_mut()
            .and_then(|stories| {
                stories
                    .iter_mut()
                    .find(|s| s.get("id").and_then(Value::as_str) == Some(id))
            })
            .and_then(Value::as_object_mut)
            .ok_or_else(|| PrdError::NoSuchStory {
                path: self.path.clone(),
                id: id.to_owned(),
            })
    }

    /// Sets story `id`'s `passes` and, when given, its `notes` (added at the end of the object
    /// when absent), keeping everything else as it is.
    pub fn set(&mut self, id: &str, passes: Passes, notes: Option<&str>) -> Result<(), PrdError> {
        let object = self.object_mut(id)?;
        object.insert("passes".into(), passes.to_value());
        if let Some(notes) = notes {
            object.insert("notes".into(), Value::String(notes.to_owned()));
        }
        let json = serde_json::to_string_pretty(object).unwrap_or_default();
        if let Some(story) = self.stories.iter_mut().find(|s| s.id == id) {
            story.passes = passes;
            story.json = json;
        }
        let edited = edit_in_place(&self.text, id, passes, notes, self.eol).filter(|edited| {
            // Trust an edit only when it reads back as exactly what was set.
            serde_json::from_str::<Value>(edited).is_ok_and(|v| v == self.value)
        });
        self.text = match edited {
            Some(edited) => edited,
            None => {
                let trailing_newline = self.text.ends_with('\n');
                // serde_json escapes line breaks inside strings: every `\n` here ends a line.
                let mut text = serde_json::to_string_pretty(&self.value)
                    .unwrap_or_default()
                    .replace('\n', self.eol);
                if trailing_newline {
                    text.push_str(self.eol);
                }
                text
            }
        };
        Ok(())
    }

    /// Marks story `id` blocked, adding `reason` to its `notes`: after a blank line when the
    /// story already has notes (a person's notes are never replaced), as the notes otherwise.
    /// Notes that are not a string (a list, say) are kept as their JSON text ahead of `reason`.
    pub fn block(&mut self, id: &str, reason: &str) -> Result<(), PrdError> {
        let eol = self.eol;
        let notes = match self.object_mut(id)?.get("notes") {
            None | Some(Value::Null) => reason.to_owned(),
            Some(Value::String(old)) if old.trim().is_empty() => reason.to_owned(),
            Some(Value::String(old)) => format!("{old}{eol}{eol}{reason}"),
            Some(other) => format!("{other}{eol}{eol}{reason}"),
        };
        self.set(id, Passes::Blocked, Some(&notes))
    }

    /// Puts the agent's `question` (made one line) in story `id`'s notes as a paragraph of its
    /// own, `ralph: question: <question>`, after the notes there are (a person's notes are never
    /// replaced); `passes` stays. Returns the line as written, which the answer follows.
    pub fn ask(&mut self, id: &str, question: &str) -> Result<String, PrdError> {
        let eol = self.eol;
        let asked = format!(
            "{QUESTION_NOTE}{}",
            question.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let notes = match self.object_mut(id)?.get("notes") {
            None | Some(Value::Null) => asked.clone(),
            Some(Value::String(old)) if old.trim().is_empty() => asked.clone(),
            Some(Value::String(old)) => format!("{old}{eol}{eol}{asked}"),
            Some(other) => format!("{other}{eol}{eol}{asked}"),
        };
        let passes = self.story(id).map_or(Passes::No, |s| s.passes);
        self.set(id, passes, Some(&notes))?;
        Ok(asked)
    }

    /// A person's answer in story `id`'s notes to the question written as `asked` (see
    /// [`ask`](Self::ask)): the non-empty lines after the last such line, up to the next
    /// question; `None` while there are none, [`PrdError::NoSuchQuestion`] once a person
    /// removed the question.
    pub fn answer(&self, id: &str, asked: &str) -> Result<Option<String>, PrdError> {
        let story = self.story(id).ok_or_else(|| PrdError::NoSuchStory {
            path: self.path.clone(),
            id: id.to_owned(),
        })?;
        let notes: Value = serde_json::from_str(&story.json).unwrap_or_default();
        let notes = notes["notes"].as_str().unwrap_or_default();
        let lines: Vec<&str> = notes.lines().map(str::trim).collect();
        let Some(at) = lines.iter().rposition(|l| *l == asked.trim()) else {
            return Err(PrdError::NoSuchQuestion {
                path: self.path.clone(),
                id: id.to_owned(),
                question: asked
                    .trim()
                    .strip_prefix(QUESTION_NOTE.trim_end())
                    .unwrap_or(asked)
                    .trim()
                    .to_owned(),
            });
        };
        let answer: Vec<&str> = lines[at + 1..]
            .iter()
            .take_while(|l| !l.starts_with(QUESTION_NOTE.trim_end()))
            .filter(|l| !l.is_empty())
            .copied()
            .collect();
        Ok((!answer.is_empty()).then(|| answer.join("\n")))
    }

    /// The file's text as ralph writes it: as read (byte order mark included), but for the
    /// `passes` and `notes` it set.
    pub fn to_text(&self) -> String {
        match self.bom {
            true => format!("{BOM}{}", self.text),
            false => self.text.clone(),
        }
    }

    /// Writes the file atomically: temporary file, fsync, rename.
    pub fn save(&self) -> Result<(), PrdError> {
        ralph_atomic::write(&self.path, self.to_text().as_bytes()).map_err(|cause| {
            PrdError::Write {
                path: self.path.clone(),
                cause,
            }
        })
    }
}

/// prd.json as last read or written, so that the several reads of one step parse it once: a
/// read that finds the very bytes of the last one reuses its parse. Comparing the bytes, not a
/// modification time, keeps this exact even where the agent's edit lands within the same tick
/// of a coarse file-system clock.
#[derive(Debug, Default)]
pub struct Cache {
    last: Option<(Vec<u8>, Prd)>,
}

impl Cache {
    /// Reads and validates `path`, parsing it only when its bytes changed since the last
    /// [`load`](Self::load) or [`save`](Self::save).
    pub fn load(&mut self, path: &Path) -> Result<Prd, PrdError> {
        let bytes = fs::read(path).map_err(|cause| PrdError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        if let Some((last, prd)) = &self.last {
            if *last == bytes && prd.path == path {
                return Ok(prd.clone());
            }
        }
        let prd = Prd::from_bytes(path, &bytes)?;
        self.last = Some((bytes, prd.clone()));
        Ok(prd)
    }

    /// [`Prd::save`], remembering what was written.
    pub fn save(&mut self, prd: &Prd) -> Result<(), PrdError> {
        prd.save()?;
        self.last = Some((prd.to_text().into_bytes(), prd.clone()));
        Ok(())
    }

    /// The file as last read or written whole, however it reads now.
    pub fn last_good(&self) -> Option<&Prd> {
        self.last.as_ref().map(|(_, prd)| prd)
    }

    /// Writes `mark` into prd.json as it is now: the file is read again just before the write
    /// and `mark` applied to that text, so whatever a person changed since ralph last read it
    /// stays, even a save made while ralph writes ([`update`](Self::update)). Nothing is
    /// written when the file already says what `mark` says, nor when it cannot be read or does
    /// not parse (the error says why).
    pub fn write_mark(&mut self, path: &Path, mark: &Mark) -> Result<Prd, PrdError> {
        self.update(path, |prd| mark.apply(prd))
    }

    /// Applies `edit` to prd.json as it is now and writes the result through
    /// [`ralph_atomic::update`]: a person's save made while ralph writes is never
    /// replaced, `edit` is applied to it again. `edit` answers whether it changed anything.
    /// Returns the file as written (or as it was, when `edit` changed nothing).
    pub fn update(
        &mut self,
        path: &Path,
        mut edit: impl FnMut(&mut Prd) -> Result<bool, PrdError>,
    ) -> Result<Prd, PrdError> {
        // A file that cannot be read or parse is said as before: the change waits.
        self.load(path)?;
        let mut last = None;
        let updated = ralph_atomic::update(path, |bytes| {
            let mut prd = Prd::from_bytes(path, bytes)?;
            let out = edit(&mut prd)?.then(|| prd.to_text().into_bytes());
            last = Some((out.clone().unwrap_or_else(|| bytes.to_vec()), prd));
            Ok(out)
        });
        match updated {
            Ok(_) => {}
            Err(ralph_atomic::UpdateError::Edit(err)) => return Err(err),
            Err(ralph_atomic::UpdateError::Io(cause)) => {
                return Err(PrdError::Write {
                    path: path.to_path_buf(),
                    cause,
                });
            }
            Err(_) => {
                return Err(PrdError::KeepsChanging {
                    path: path.to_path_buf(),
                });
            }
        }
        let (bytes, prd) = last.ok_or_else(|| PrdError::KeepsChanging {
            path: path.to_path_buf(),
        })?;
        self.last = Some((bytes, prd.clone()));
        Ok(prd)
    }
}

impl Mark {
    /// Applies the mark to `prd`; `false` when `prd` already says so.
    pub fn apply(&self, prd: &mut Prd) -> Result<bool, PrdError> {
        let id = self.story_id();
        let passes = prd.story(id).map(|s| s.passes);
        match self {
            Mark::Passed { .. } if passes == Some(Passes::Yes) => Ok(false),
            Mark::Passed { .. } => prd.set(id, Passes::Yes, None).map(|()| true),
            Mark::Blocked { notes, .. } => {
                let noted = prd.object_mut(id)?.get("notes").and_then(Value::as_str);
                if passes == Some(Passes::Blocked) && noted.is_some_and(|n| n.contains(notes)) {
                    return Ok(false);
                }
                prd.block(id, notes).map(|()| true)
            }
        }
    }
}

/// The top level of a prd.json, borrowing each story's text.
#[derive(Deserialize)]
struct RawTop<'a> {
    #[serde(borrow, rename = "userStories")]
    user_stories: Vec<&'a RawValue>,
}

/// `text` with story `id`'s `passes` (and `notes`, when given) replaced in place, every other
/// byte kept; `None` when the story or its fields cannot be located. A `notes` field added on a
/// line of its own ends the line before it with `eol`.
fn edit_in_place(
    text: &str,
    id: &str,
    passes: Passes,
    notes: Option<&str>,
    eol: &str,
) -> Option<String> {
    // Where `raw` starts in `text`: it borrows from it, so the pointers say (checked anyway).
    let offset = |raw: &RawValue| {
        let start = (raw.get().as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        (text.get(start..start + raw.get().len()) == Some(raw.get())).then_some(start)
    };
    let top: RawTop<'_> = serde_json::from_str(text).ok()?;
    let (story, fields) = top.user_stories.into_iter().find_map(|raw| {
        let fields: BTreeMap<String, &RawValue> = serde_json::from_str(raw.get()).ok()?;
        let story_id: String = serde_json::from_str(fields.get("id")?.get()).ok()?;
        (story_id == id).then_some((raw, fields))
    })?;
    let field = |name: &str| fields.get(name).copied();
    let passes_raw = field("passes")?;
    // (start, end, replacement), applied from the end so earlier offsets stay right.
    let mut edits = Vec::new();
    let start = offset(passes_raw)?;
    edits.push((
        start,
        start + passes_raw.get().len(),
        passes.to_value().to_string(),
    ));
    if let Some(notes) = notes {
        let quoted = serde_json::to_string(notes).ok()?;
        match field("notes") {
            Some(raw) => {
                let start = offset(raw)?;
                edits.push((start, start + raw.get().len(), quoted));
            }
            None => {
                // After the last field's value: just before the story's closing brace and the
                // whitespace ahead of it.
                let story_start = offset(story)?;
                let close = story_start + story.get().len() - 1;
                let end = story_start + story.get()[..close - story_start].trim_end().len();
                let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                let indent = &text[line_start..start];
                let indent = &indent[..indent.len() - indent.trim_start().len()];
                let separator = match text[story_start..close].contains('\n') {
                    true => format!(",{eol}{indent}"),
                    false => ", ".to_owned(),
                };
                edits.push((end, end, format!("{separator}\"notes\": {quoted}")));
            }
        }
    }
    edits.sort_by_key(|&(start, _, _)| std::cmp::Reverse(start));
    let mut edited = text.to_owned();
    for (start, end, replacement) in edits {
        edited.replace_range(start..end, &replacement);
    }
    Some(edited)
}

/// serde_json's syntax error in words that say what to do, without its " at line L column C"
/// suffix (the error prints its own).
fn syntax_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    match message {
        "number out of range" => "number out of range: ralph reads numbers as 64-bit floats, \
                                  whose magnitude is at most about 1.8e308"
            .to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests;
