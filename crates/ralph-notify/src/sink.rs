//! The engine's side: a sink that picks the events worth a message and queues them.

use std::path::PathBuf;

use ralph_engine::{Event, EventSink};
use ralph_frontmatter::NotifyEvent;

use crate::deliver::Delivery;
use crate::message::{Place, RunFacts};
use crate::sent::SentRecord;

/// An [`EventSink`] that sends a message for each chosen event, through a [`Delivery`].
pub struct NotifySink {
    chosen: Vec<NotifyEvent>,
    place: Place,
    facts: RunFacts,
    delivery: Delivery,
    /// The messages sent, in the run folder (a resumed run's included).
    sent: SentRecord,
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
        Self {
            chosen,
            place,
            facts: RunFacts::default(),
            delivery,
            sent: SentRecord::open(run_folder.as_deref()),
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
        if self.sent.contains(&message.key) {
            return;
        }
        self.sent.remember(&message.key);
        self.delivery.send(message);
    }

    fn take_failure(&mut self) -> Option<String> {
        self.delivery.take_failure()
    }
}
