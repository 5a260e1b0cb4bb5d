//! The engine's side: a sink that picks the events worth a message and queues them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ralph_engine::frontmatter::NotifyEvent;
use ralph_engine::{Event, EventSink};

use crate::deliver::Delivery;
use crate::message::{Place, RunFacts};

/// The file in a run folder naming the messages sent, one key a line: a resumed run sends none
/// of them again.
const SENT_FILE: &str = "notified";

/// An [`EventSink`] that sends a message for each chosen event, through a [`Delivery`].
pub struct NotifySink {
    chosen: Vec<NotifyEvent>,
    place: Place,
    facts: RunFacts,
    delivery: Delivery,
    /// The keys of the messages sent, from the run folder (a resumed run's included).
    sent: BTreeSet<String>,
    /// The run folder, where the keys are kept; `None` without one.
    record: Option<PathBuf>,
}

impl NotifySink {
    /// A sink for the events in `chosen`, delivering through `delivery`, keeping what it sent
    /// in `run_folder` (a resumed run's folder holds what the run sent before it stopped).
    pub fn new(
        chosen: Vec<NotifyEvent>,
        place: Place,
        delivery: Delivery,
        run_folder: Option<PathBuf>,
    ) -> Self {
        let record = run_folder.map(|folder| folder.join(SENT_FILE));
        let sent = record
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        Self {
            chosen,
            place,
            facts: RunFacts::default(),
            delivery,
            sent,
            record,
        }
    }

    /// Adds `key` to the run folder's record, written whole to a temporary file and renamed.
    fn remember(&mut self, key: String) {
        self.sent.insert(key);
        let Some(path) = &self.record else { return };
        let mut text = String::new();
        for key in &self.sent {
            text.push_str(key);
            text.push('\n');
        }
        let spare = path.with_extension("tmp");
        if std::fs::write(&spare, text).is_ok() {
            let _ = std::fs::rename(&spare, path);
        }
    }
}

impl EventSink for NotifySink {
    fn event(&mut self, event: &Event) {
        let Ok(value) = serde_json::to_value(event) else {
            return;
        };
        let Some(message) = self.facts.message(&value, &self.chosen, &self.place) else {
            return;
        };
        // Keys hold no newline: one a line in the record.
        let key = message.key.replace('\n', " ");
        if self.sent.contains(&key) {
            return;
        }
        self.delivery.send(message);
        self.remember(key);
    }

    fn take_failure(&mut self) -> Option<String> {
        self.delivery.take_failure()
    }
}
