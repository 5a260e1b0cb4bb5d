//! `prd.json`: the stories, read with located errors and rewritten atomically.
//!
//! A rewrite edits the file's text in place: only the bytes of one story's `passes` and `notes`
//! values change (a missing `notes` is added after the story's last field, indented like its
//! other fields), so unknown fields, key order, indentation, number spellings and escapes all
//! stay as the user wrote them. The spans come from serde_json's [`RawValue`], which borrows
//! from the text. The file is also kept as a [`serde_json::Value`] (with `preserve_order`), for
//! `{{ story.json }}`; should an edit in place ever not parse back to what was set, the file is
//! written from that value instead (2-space indentation, key order kept). A typed pass over the
//! same text validates the fields ralph reads and gives serde_json's line and column for a
//! wrong type. Writes go to a temporary file in the same folder, are fsynced, then renamed over
//! the original: a reader (or a crash) sees the old file or the new one, never half of one.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// A story's `passes`: `true`, `false` or `"blocked"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// `priority`: lower goes first.
    pub priority: f64,
    /// `passes`.
    pub passes: Passes,
    /// The story's whole JSON object as written (unknown fields included), pretty-printed.
    pub json: String,
}

/// The typed view used to validate; unknown fields are allowed and ignored here (the `Value`
/// keeps them).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shape {
    #[serde(rename = "userStories")]
    user_stories: Vec<StoryShape>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoryShape {
    #[serde(deserialize_with = "id")]
    id: String,
    #[serde(default, deserialize_with = "title")]
    title: String,
    #[serde(default, deserialize_with = "description")]
    description: String,
    #[serde(default, deserialize_with = "acceptance_criteria")]
    acceptance_criteria: Vec<String>,
    #[serde(deserialize_with = "priority")]
    priority: f64,
    passes: Passes,
}

// One function per field, so that a wrong type names the field and what it allows
// (`priority: expected a number, got "high"`), as `passes` does, instead of serde's
// `invalid type: string "high", expected f64`.
fn id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    typed(d, "id", "a string", |v| v.as_str().map(str::to_owned))
}

fn title<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    typed(d, "title", "a string", |v| v.as_str().map(str::to_owned))
}

fn description<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    typed(d, "description", "a string", |v| {
        v.as_str().map(str::to_owned)
    })
}

fn acceptance_criteria<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    typed(d, "acceptanceCriteria", "a list of strings", |v| {
        v.as_array()?
            .iter()
            .map(|c| c.as_str().map(str::to_owned))
            .collect()
    })
}

fn priority<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    typed(d, "priority", "a number", Value::as_f64)
}

/// Reads any JSON value and converts it with `get`; when that fails, an error that names
/// `field`, what it expects and what the file holds.
fn typed<'de, D, T>(
    d: D,
    field: &str,
    expected: &str,
    get: impl Fn(&Value) -> Option<T>,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = Value::deserialize(d)?;
    get(&value).ok_or_else(|| {
        let found = match &value {
            Value::Array(_) => "a list".to_owned(),
            Value::Object(_) => "an object".to_owned(),
            scalar => scalar.to_string(),
        };
        serde::de::Error::custom(format!("{field}: expected {expected}, got {found}"))
    })
}

/// A prd.json that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PrdError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid JSON, or a field has the wrong shape.
    #[error("{}:{line}:{column}: {message}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The problem, as serde_json words it.
        message: String,
    },
    /// Two stories share an id.
    #[error("{}: two stories have the id \"{id}\"", .path.display())]
    DuplicateId {
        /// The file.
        path: PathBuf,
        /// The id.
        id: String,
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
    #[error("{}: cannot write: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A loaded prd.json.
#[derive(Debug, Clone)]
pub struct Prd {
    path: PathBuf,
    value: Value,
    stories: Vec<Story>,
    /// The file's text, with ralph's edits applied.
    text: String,
}

impl Prd {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Self, PrdError> {
        let text = fs::read_to_string(path).map_err(|source| PrdError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Validates `text`, the content of `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, PrdError> {
        let located = |err: serde_json::Error| PrdError::Malformed {
            path: path.to_path_buf(),
            line: err.line(),
            column: err.column(),
            message: without_position(&err),
        };
        let value: Value = serde_json::from_str(text).map_err(located)?;
        let shape: Shape = serde_json::from_str(text).map_err(located)?;
        let objects = value["userStories"].as_array().cloned().unwrap_or_default();
        let mut stories = Vec::with_capacity(shape.user_stories.len());
        for (s, object) in shape.user_stories.into_iter().zip(objects) {
            if stories.iter().any(|o: &Story| o.id == s.id) {
                return Err(PrdError::DuplicateId {
                    path: path.to_path_buf(),
                    id: s.id,
                });
            }
            stories.push(Story {
                id: s.id,
                title: s.title,
                description: s.description,
                acceptance_criteria: s.acceptance_criteria,
                priority: s.priority,
                passes: s.passes,
                json: serde_json::to_string_pretty(&object).unwrap_or_default(),
            });
        }
        Ok(Self {
            path: path.to_path_buf(),
            value,
            stories,
            text: text.to_owned(),
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

    /// Sets story `id`'s `passes` and, when given, its `notes` (added at the end of the object
    /// when absent), keeping everything else as it is.
    pub fn set(&mut self, id: &str, passes: Passes, notes: Option<&str>) -> Result<(), PrdError> {
        let object = self.value["userStories"]
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
            })?;
        object.insert("passes".into(), passes.to_value());
        if let Some(notes) = notes {
            object.insert("notes".into(), Value::String(notes.to_owned()));
        }
        let json = serde_json::to_string_pretty(object).unwrap_or_default();
        if let Some(story) = self.stories.iter_mut().find(|s| s.id == id) {
            story.passes = passes;
            story.json = json;
        }
        let edited = edit_in_place(&self.text, id, passes, notes).filter(|edited| {
            // Trust an edit only when it reads back as exactly what was set.
            serde_json::from_str::<Value>(edited).is_ok_and(|v| v == self.value)
        });
        self.text = match edited {
            Some(edited) => edited,
            None => {
                let trailing_newline = self.text.ends_with('\n');
                let mut text = serde_json::to_string_pretty(&self.value).unwrap_or_default();
                if trailing_newline {
                    text.push('\n');
                }
                text
            }
        };
        Ok(())
    }

    /// The file's text as ralph writes it: as read, but for the `passes` and `notes` it set.
    pub fn to_text(&self) -> String {
        self.text.clone()
    }

    /// Writes the file atomically: temporary file, fsync, rename.
    pub fn save(&self) -> Result<(), PrdError> {
        write_atomic(&self.path, self.to_text().as_bytes()).map_err(|source| PrdError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

/// The top level of a prd.json, borrowing each story's text.
#[derive(Deserialize)]
struct RawTop<'a> {
    #[serde(borrow, rename = "userStories")]
    user_stories: Vec<&'a RawValue>,
}

/// `text` with story `id`'s `passes` (and `notes`, when given) replaced in place, every other
/// byte kept; `None` when the story or its fields cannot be located.
fn edit_in_place(text: &str, id: &str, passes: Passes, notes: Option<&str>) -> Option<String> {
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
                    true => format!(",\n{indent}"),
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

/// serde_json's message without its " at line L column C" suffix (the error prints its own).
fn without_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

/// Writes `bytes` to `path` through a temporary file in the same folder, fsynced, then renamed
/// over `path`; the folder is fsynced too so the rename itself survives a power cut. A symlink
/// is followed (its target is replaced, the link stays) and the file keeps its permissions.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let path = target.as_path();
    let permissions = fs::metadata(path).ok().map(|m| m.permissions());
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.ralph-tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        if let Some(permissions) = &permissions {
            file.set_permissions(permissions.clone())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(&dir) {
            // Some filesystems refuse to fsync a folder; the rename has happened either way.
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_keeps_permissions_and_follows_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, "{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("prd.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();

        write_atomic(&link, b"{\"a\": 1}").unwrap();

        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\": 1}");
        let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    const SAMPLE: &str = r#"{
  "project": "Shop",
  "branchName": "ralph/cart",
  "description": "A cart",
  "userStories": [
    {
      "id": "US-002",
      "title": "Totals",
      "description": "Show totals",
      "acceptanceCriteria": [
        "total shown",
        "typecheck passes"
      ],
      "priority": 2,
      "passes": false,
      "notes": "",
      "x-owner": {
        "team": "web",
        "since": 2024
      }
    },
    {
      "id": "US-001",
      "title": "Add to cart",
      "description": "Add items",
      "acceptanceCriteria": [],
      "priority": 1,
      "passes": true,
      "notes": ""
    },
    {
      "priority": 2,
      "id": "US-003",
      "title": "Remove",
      "passes": false
    }
  ],
  "zeta": [
    1,
    2.5,
    null
  ],
  "alpha": true
}
"#;

    fn sample() -> Prd {
        Prd::parse(Path::new("prd.json"), SAMPLE).unwrap()
    }

    #[test]
    fn an_untouched_file_is_written_back_byte_for_byte() {
        assert_eq!(sample().to_text(), SAMPLE);
    }

    #[test]
    fn the_current_story_is_the_lowest_priority_not_passing_first_in_file_order() {
        let mut prd = sample();
        assert_eq!(prd.current().unwrap().id, "US-002");
        prd.set("US-002", Passes::Blocked, Some("stuck")).unwrap();
        assert_eq!(prd.current().unwrap().id, "US-003");
        prd.set("US-003", Passes::Yes, None).unwrap();
        assert!(prd.current().is_none());
        assert_eq!(prd.counts(), (2, 1, 0));
    }

    #[test]
    fn a_rewrite_changes_only_passes_and_notes() {
        let mut prd = sample();
        prd.set("US-002", Passes::Blocked, Some("see progress.txt:3"))
            .unwrap();
        prd.set("US-003", Passes::Yes, Some("done")).unwrap();
        let expected = SAMPLE
            .replacen(
                "\"passes\": false,\n      \"notes\": \"\",",
                "\"passes\": \"blocked\",\n      \"notes\": \"see progress.txt:3\",",
                1,
            )
            .replace(
                "\"title\": \"Remove\",\n      \"passes\": false\n",
                "\"title\": \"Remove\",\n      \"passes\": true,\n      \"notes\": \"done\"\n",
            );
        assert_eq!(prd.to_text(), expected);
        let again = Prd::parse(Path::new("prd.json"), &prd.to_text()).unwrap();
        assert_eq!(again.story("US-002").unwrap().passes, Passes::Blocked);
    }

    #[test]
    fn a_rewrite_keeps_the_users_own_formatting() {
        // 4-space indentation, one-line arrays, number spellings and escapes: all survive.
        let text = "{\n    \"project\": \"Caf\\u00e9\",\n    \"version\": 1.50,\n    \"userStories\": [\n        {\"id\": \"A\", \"priority\": 1e0, \"acceptanceCriteria\": [\"x\", \"y\"], \"passes\": false},\n        {\n            \"id\": \"B\",\n            \"priority\": 2,\n            \"passes\": false\n        }\n    ]\n}";
        let mut prd = Prd::parse(Path::new("prd.json"), text).unwrap();
        prd.set("A", Passes::Yes, Some("done, \"really\"")).unwrap();
        prd.set("B", Passes::Blocked, Some("stuck")).unwrap();
        let expected = text
            .replace(
                "\"passes\": false},",
                "\"passes\": true, \"notes\": \"done, \\\"really\\\"\"},",
            )
            .replace(
                "\"passes\": false\n",
                "\"passes\": \"blocked\",\n            \"notes\": \"stuck\"\n",
            );
        assert_eq!(prd.to_text(), expected);
        let again = Prd::parse(Path::new("prd.json"), &prd.to_text()).unwrap();
        assert_eq!(again.story("A").unwrap().passes, Passes::Yes);
        assert_eq!(again.story("B").unwrap().passes, Passes::Blocked);
    }

    #[test]
    fn story_json_keeps_unknown_fields() {
        let prd = sample();
        let json = &prd.story("US-002").unwrap().json;
        assert!(json.contains("\"x-owner\""), "{json}");
        assert_eq!(
            prd.story("US-002").unwrap().acceptance_criteria,
            ["total shown", "typecheck passes"]
        );
    }

    #[test]
    fn a_syntax_error_names_line_and_column() {
        let err = Prd::parse(Path::new("prd.json"), "{\n  \"userStories\": [,]\n}").unwrap_err();
        assert_eq!(err.to_string(), "prd.json:2:19: expected value");
    }

    #[test]
    fn a_wrong_passes_value_is_located() {
        let text =
            "{\"userStories\": [\n  {\"id\": \"A\", \"priority\": 1, \"passes\": \"maybe\"}\n]}";
        let err = Prd::parse(Path::new("p.json"), text).unwrap_err();
        let PrdError::Malformed { line, message, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(*line, 2);
        assert!(
            message.contains("expected true, false or \"blocked\""),
            "{message}"
        );
    }

    #[test]
    fn a_missing_field_is_named() {
        let err =
            Prd::parse(Path::new("p.json"), "{\"userStories\": [{\"id\": \"A\"}]}").unwrap_err();
        assert!(
            err.to_string().contains("missing field `priority`"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let text = r#"{"userStories": [{"id": "A", "priority": 1, "passes": false},
            {"id": "A", "priority": 2, "passes": false}]}"#;
        assert!(matches!(
            Prd::parse(Path::new("p.json"), text),
            Err(PrdError::DuplicateId { .. })
        ));
    }

    #[test]
    fn save_replaces_the_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prd.json");
        fs::write(&path, SAMPLE).unwrap();
        let mut prd = Prd::load(&path).unwrap();
        prd.set("US-003", Passes::Yes, None).unwrap();
        prd.save().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), prd.to_text());
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                "[a-zA-Z0-9 éü\"\\\\\n]{0,12}".prop_map(Value::String),
            ]
        }

        fn json() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec(("[a-z_-]{1,8}", inner), 0..4)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
        }

        /// `value` written compact, or pretty with `indent`.
        fn format(value: &Value, indent: &str) -> String {
            if indent.is_empty() {
                return serde_json::to_string(value).unwrap();
            }
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
            serde::Serialize::serialize(value, &mut ser).unwrap();
            String::from_utf8(out).unwrap()
        }

        proptest! {
            #[test]
            fn unknown_fields_order_and_indentation_survive_a_rewrite(
                extra in prop::collection::vec(("[a-z]{1,6}", json()), 0..4),
                story_extra in prop::collection::vec(("x[a-z]{1,6}", json()), 0..3),
                passes in prop_oneof![Just(Passes::Yes), Just(Passes::No), Just(Passes::Blocked)],
                indent in prop_oneof![Just(""), Just("  "), Just("    "), Just("\t")],
                notes in proptest::option::of("[a-z \"\\\\\n]{0,12}"),
            ) {
                let mut story = serde_json::Map::new();
                story.insert("id".into(), "S1".into());
                story.insert("priority".into(), 1.into());
                for (k, v) in &story_extra {
                    story.insert(k.clone(), v.clone());
                }
                story.insert("passes".into(), false.into());
                let mut root = serde_json::Map::new();
                for (k, v) in &extra {
                    if k != "userStories" {
                        root.insert(k.clone(), v.clone());
                    }
                }
                root.insert("userStories".into(), Value::Array(vec![Value::Object(story)]));
                let text = format(&Value::Object(root), indent) + "\n";
                let mut prd = Prd::parse(Path::new("p.json"), &text).unwrap();
                prop_assert_eq!(prd.to_text(), text.clone());
                prd.set("S1", passes, notes.as_deref()).unwrap();
                let colon = if indent.is_empty() { ":" } else { ": " };
                let mut expected = text.replace(
                    &format!("\"passes\"{colon}false"),
                    &format!("\"passes\"{colon}{}", passes.to_value()),
                );
                if let Some(notes) = &notes {
                    // Added after the story's last field (`passes`), indented like it.
                    let line = expected[..expected.find("\"passes\"").unwrap()]
                        .rsplit('\n')
                        .next()
                        .unwrap()
                        .to_owned();
                    let separator = if indent.is_empty() { ", ".to_owned() } else { format!(",\n{line}") };
                    let passes_text = format!("\"passes\"{colon}{}", passes.to_value());
                    expected = expected.replace(
                        &passes_text,
                        &format!("{passes_text}{separator}\"notes\": {}", Value::from(notes.as_str())),
                    );
                }
                prop_assert_eq!(prd.to_text(), expected);
            }
        }
    }
}
