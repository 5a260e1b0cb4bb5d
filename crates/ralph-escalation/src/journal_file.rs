//! The one journal of a step a kill could cut short, whatever the step: escalation's (an
//! iteration, a pass, a revert: `journal`) and the parallel merge queue's (a landing, a block's
//! mark, a question put in the list). The step is written before it starts and replaced whole
//! as it goes ([`Journal::write`], through `ralph-atomic`, so a kill leaves the old entry or the
//! new), read back by the next start ([`Journal::read`]), which finishes or rolls it back, and
//! removed once it is done ([`Journal::clear`]). What a step holds and how it is finished is the
//! owner's; this is only the file.

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The journal at one path, holding at most one step of type `S` (JSON, pretty-printed).
pub struct Journal<S> {
    path: PathBuf,
    step: PhantomData<fn() -> S>,
}

impl<S> Journal<S> {
    /// The journal kept at `path` (in a git directory: the steps are the repository's).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            step: PhantomData,
        }
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The step under way is done: the file goes (none there is fine).
    ///
    /// # Errors
    /// [`JournalError::Io`] when the file is there and cannot be removed.
    pub fn clear(&self) -> Result<(), JournalError> {
        match std::fs::remove_file(&self.path) {
            Err(cause) if cause.kind() != std::io::ErrorKind::NotFound => Err(JournalError::Io {
                path: self.path.clone(),
                doing: "remove",
                cause,
            }),
            _ => Ok(()),
        }
    }
}

impl<S: Serialize + DeserializeOwned> Journal<S> {
    /// Records `step` as the step under way, replacing any other: before the step starts, and
    /// again each time it gets further.
    ///
    /// # Errors
    /// [`JournalError::Io`] when the file cannot be written.
    pub fn write(&self, step: &S) -> Result<(), JournalError> {
        let written = serde_json::to_vec_pretty(step)
            .map_err(std::io::Error::other)
            .and_then(|bytes| ralph_atomic::write(&self.path, &bytes));
        written.map_err(|cause| JournalError::Io {
            path: self.path.clone(),
            doing: "write",
            cause,
        })
    }

    /// The step a run is taking now, or a killed one left to finish; `None` when there is none.
    ///
    /// # Errors
    /// [`JournalError::Io`] when the file cannot be read, [`JournalError::Malformed`] when it
    /// holds no step of this kind.
    pub fn read(&self) -> Result<Option<S>, JournalError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(cause) if cause.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(cause) => {
                return Err(JournalError::Io {
                    path: self.path.clone(),
                    doing: "read",
                    cause,
                });
            }
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|cause| JournalError::Malformed {
                path: self.path.clone(),
                cause,
            })
    }
}

impl<S> fmt::Debug for Journal<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish()
    }
}

/// The journal could not be read, written or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The file system refused.
    #[error("{}: cannot {doing}: {cause}", .path.display())]
    Io {
        /// The journal file.
        path: PathBuf,
        /// What was being done: `read`, `write` or `remove`.
        doing: &'static str,
        /// Why.
        cause: std::io::Error,
    },
    /// The file holds no step this ralph writes.
    #[error(
        "{}: cannot read ralph's record of the step a killed run was taking ({cause}); remove \
         the file to start without finishing it",
        .path.display()
    )]
    Malformed {
        /// The journal file.
        path: PathBuf,
        /// What the JSON parser found.
        cause: serde_json::Error,
    },
}

impl JournalError {
    /// The journal file.
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. } | Self::Malformed { path, .. } => path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Step {
        id: String,
    }

    #[test]
    fn a_step_is_read_back_until_it_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::<Step>::at(dir.path().join("journal.json"));
        assert!(journal.read().unwrap().is_none());
        journal.write(&Step { id: "US-1".into() }).unwrap();
        journal.write(&Step { id: "US-2".into() }).unwrap();
        assert_eq!(journal.read().unwrap(), Some(Step { id: "US-2".into() }));
        journal.clear().unwrap();
        assert!(journal.read().unwrap().is_none());
        assert!(!journal.path().exists());
        journal.clear().unwrap();
    }

    #[test]
    fn a_file_that_holds_no_step_is_an_error_naming_it_and_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        std::fs::write(&path, "{\"other\": 1}").unwrap();
        let err = Journal::<Step>::at(&path).read().unwrap_err();
        assert!(matches!(err, JournalError::Malformed { .. }));
        let said = err.to_string();
        assert!(said.starts_with(&format!("{}: ", path.display())), "{said}");
        assert!(said.contains("remove the file"), "{said}");
    }
}
