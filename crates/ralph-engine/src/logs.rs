//! The run's log folder: `events.jsonl`, one `iteration-NNN.log` per iteration, prompt files.
//!
//! Logs never stop a loop: when the folder cannot be created or written, the engine warns once
//! (through `tracing`) and goes on without logs.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Creates `dir` (and parents). When `dir` lies inside a `.ralph` folder, that folder gets a
/// `.gitignore` of `*` so run logs never dirty the user's repository.
pub(crate) fn create_run_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if let Some(ralph_dir) = dir
        .ancestors()
        .find(|a| a.file_name() == Some(".ralph".as_ref()))
    {
        let ignore = ralph_dir.join(".gitignore");
        if !ignore.exists() {
            write_atomic(&ignore, b"*\n")?;
        }
    }
    Ok(())
}

/// The run's own copy of its events, `events.jsonl` in `dir`, for the engine's last sink: a
/// resumed run appends to the events it already wrote; with its path, to name it. A failure
/// costs only the copy; the error is the warning for the engine to emit.
pub(crate) fn events_file(dir: &Path, resuming: bool) -> Result<(File, PathBuf), String> {
    let path = dir.join("events.jsonl");
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resuming)
        .truncate(!resuming)
        .open(&path)
        .map_err(|err| {
            format!(
                "cannot write {}: {err}; going on without it",
                path.display()
            )
        })
        .map(|file| (file, path))
}

/// The run folder's files are written whole, as every file ralph writes; the per-iteration
/// copies without fsyncs (the iteration log itself is streamed, never fsynced either).
pub(crate) use crate::atomic::{
    write as write_atomic, write_unsynced as write_copy, write_unsynced_with as write_copy_with,
};

/// Keeps the exact prompt each iteration's agent receives beside its log, as
/// `iteration-NNN.prompt.md`. A prompt the same as the last one is a hard link to the last
/// copy, which is still as it was written: creating a file costs a fast loop far more than
/// naming one again.
#[derive(Debug, Default)]
pub(crate) struct PromptCopies {
    /// The last copy written: its text, its path, and the file as it was when written.
    last: Option<(String, PathBuf, FileId)>,
}

/// A file as written: a copy edited or replaced since is not linked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileId {
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

impl PromptCopies {
    /// Writes (or links) `iteration`'s copy in `dir`; a failure costs only the copy, and
    /// returns the warning for the engine to emit.
    pub(crate) fn write(&mut self, dir: &Path, iteration: u64, prompt: &str) -> Option<String> {
        let path = dir.join(format!("iteration-{iteration:03}.prompt.md"));
        if let Some((text, last, id)) = &self.last {
            if text == prompt
                && FileId::of(last) == Some(*id)
                && std::fs::hard_link(last, &path).is_ok()
            {
                return None;
            }
        }
        self.last = None;
        if let Err(err) = write_copy(&path, prompt.as_bytes()) {
            return Some(format!(
                "cannot write {}: {err}; going on without it",
                path.display()
            ));
        }
        if let Some(id) = FileId::of(&path) {
            self.last = Some((prompt.to_owned(), path, id));
        }
        None
    }
}

/// One iteration's log. Writes go straight through a buffer; a failed write disables the log.
pub(crate) struct IterationLog {
    path: Option<PathBuf>,
    out: Option<BufWriter<File>>,
    /// Why the log could not be written, for the engine to emit as a warning.
    warning: Option<String>,
}

impl IterationLog {
    /// No log.
    pub(crate) fn disabled() -> Self {
        Self {
            path: None,
            out: None,
            warning: None,
        }
    }

    /// `iteration-NNN.log` in `dir`.
    pub(crate) fn create(dir: &Path, iteration: u64) -> Self {
        let path = dir.join(format!("iteration-{iteration:03}.log"));
        match File::create(&path) {
            Ok(f) => Self {
                out: Some(BufWriter::with_capacity(64 * 1024, f)),
                path: Some(path),
                warning: None,
            },
            Err(err) => Self {
                warning: Some(format!(
                    "cannot write {}: {err}; going on without it",
                    path.display()
                )),
                ..Self::disabled()
            },
        }
    }

    /// Why the log stopped (or never started), once.
    pub(crate) fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref().filter(|_| self.out.is_some())
    }

    /// Writes `bytes` through at once: `ralph logs -f` and `tail -f` show the agent's output
    /// as it comes (the agent's output arrives in chunks of up to 64 KiB, one write each).
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if let Some(out) = &mut self.out {
            if let Err(err) = out.write_all(bytes).and_then(|()| out.flush()) {
                self.warning = Some(format!(
                    "writing the iteration log failed: {err}; going on without it"
                ));
                self.out = None;
            }
        }
    }

    pub(crate) fn section(&mut self, title: &str) {
        self.write(format!("\n===== {title} =====\n").as_bytes());
    }

    pub(crate) fn flush(&mut self) {
        if let Some(out) = &mut self.out {
            if out.flush().is_err() {
                self.out = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    #[test]
    fn a_prompt_copy_edited_since_it_was_written_is_not_linked_to() {
        let dir = tempfile::tempdir().unwrap();
        let copy = |n: u32| dir.path().join(format!("iteration-{n:03}.prompt.md"));
        let mut copies = PromptCopies::default();
        assert_eq!(copies.write(dir.path(), 1, "same"), None);
        assert_eq!(copies.write(dir.path(), 2, "same"), None);
        let inode = |n: u32| std::fs::metadata(copy(n)).unwrap().ino();
        assert_eq!(inode(1), inode(2));

        std::fs::write(copy(2), "edited by hand").unwrap();
        assert_eq!(copies.write(dir.path(), 3, "same"), None);
        assert_eq!(std::fs::read_to_string(copy(3)).unwrap(), "same");
        assert_ne!(inode(3), inode(2));
        assert_eq!(std::fs::read_to_string(copy(1)).unwrap(), "edited by hand");
    }
}
