//! The messages a run sent, kept in its folder: a resumed run sends none of them again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The file in a run folder naming the messages sent, one key a line.
const SENT_FILE: &str = "notified";

/// The keys of the messages sent, as read from the run folder and added to since.
#[derive(Debug, Default)]
pub(crate) struct SentRecord {
    sent: BTreeSet<String>,
    /// The file; `None` without a run folder.
    path: Option<PathBuf>,
}

impl SentRecord {
    /// The record in `run_folder` (what a resumed run sent before it stopped), if any.
    pub(crate) fn open(run_folder: Option<&Path>) -> Self {
        let path = run_folder.map(|folder| folder.join(SENT_FILE));
        let sent = path
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        Self { sent, path }
    }

    /// Whether a message of `key` was sent.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.sent.contains(&Self::line(key))
    }

    /// Adds `key`, written whole to a temporary file and renamed.
    pub(crate) fn remember(&mut self, key: &str) {
        self.sent.insert(Self::line(key));
        let Some(path) = &self.path else { return };
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

    /// Keys hold no newline: one a line in the file.
    fn line(key: &str) -> String {
        key.replace('\n', " ")
    }
}
