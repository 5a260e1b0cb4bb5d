//! A plug's own events: a task source's (ralph-escalation's `STORY_PASSED`), a state
//! handler's, written flat in the events like the engine's and read back by `type`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// An event of a task source's own: a `type` (SCREAMING_SNAKE_CASE by convention) and its
/// fields, serialised flat and in order like the engine's events:
/// `{"ts":…,"run_id":…,"type":"STORY_PASSED","story_id":"US-1",…}`.
///
/// A source usually keeps its events as a serde enum tagged `type` and converts with
/// [`from_tagged`](Self::from_tagged); a reader gets them back with
/// [`to_tagged`](Self::to_tagged), so the names live in one place.
///
/// ```
/// use ralph_events::TaskEvent;
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// #[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
/// enum IssueEvent {
///     IssueClosed { number: u64 },
/// }
/// let event = TaskEvent::from_tagged(&IssueEvent::IssueClosed { number: 7 }).unwrap();
/// assert_eq!(event.type_name(), "ISSUE_CLOSED");
/// assert_eq!(serde_json::to_string(&event).unwrap(), r#"{"type":"ISSUE_CLOSED","number":7}"#);
/// assert_eq!(event.to_tagged::<IssueEvent>().unwrap(), IssueEvent::IssueClosed { number: 7 });
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEvent {
    type_name: String,
    fields: Map<String, Value>,
}

/// Why a value cannot be a [`TaskEvent`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskEventError {
    /// It did not serialise to a JSON object with a string `type`.
    #[error("a task event must serialise to a JSON object with a string \"type\"")]
    NotTagged,
    /// Serde failed.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl TaskEvent {
    /// An event of type `type_name` with `fields` (in the order they are to be written). A
    /// `type` among the fields is dropped: the event's own comes first.
    pub fn new(type_name: impl Into<String>, mut fields: Map<String, Value>) -> Self {
        fields.shift_remove("type");
        Self {
            type_name: type_name.into(),
            fields,
        }
    }

    /// The event a value serialised with a string `type` field describes (a serde enum with
    /// `#[serde(tag = "type")]`).
    pub fn from_tagged<T: Serialize>(value: &T) -> Result<Self, TaskEventError> {
        let Value::Object(mut fields) = serde_json::to_value(value)? else {
            return Err(TaskEventError::NotTagged);
        };
        match fields.shift_remove("type") {
            Some(Value::String(type_name)) => Ok(Self { type_name, fields }),
            _ => Err(TaskEventError::NotTagged),
        }
    }

    /// The event as the tagged type that wrote it, for a sink that knows the source.
    pub fn to_tagged<T: DeserializeOwned>(&self) -> Result<T, TaskEventError> {
        Ok(serde_json::from_value(Value::Object(self.tagged_map()))?)
    }

    /// Its `type`.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// Its fields, without `type`.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    fn tagged_map(&self) -> Map<String, Value> {
        let mut map = Map::with_capacity(self.fields.len() + 1);
        map.insert("type".to_owned(), Value::String(self.type_name.clone()));
        map.extend(self.fields.clone());
        map
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for TaskEvent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TaskEvent".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An event of the task source's own: its `type` and fields.",
            "type": "object",
            "properties": { "type": { "type": "string" } },
            "required": ["type"]
        })
    }
}

impl Serialize for TaskEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = s.serialize_map(Some(self.fields.len() + 1))?;
        map.serialize_entry("type", &self.type_name)?;
        for (key, value) in &self.fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}
