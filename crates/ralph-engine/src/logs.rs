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

/// Keeps the exact prompt `iteration`'s agent receives beside its log, as
/// `iteration-NNN.prompt.md`; a failure costs only the copy, and returns the warning for the
/// engine to emit.
pub(crate) fn write_iteration_prompt(dir: &Path, iteration: u64, prompt: &str) -> Option<String> {
    let path = dir.join(format!("iteration-{iteration:03}.prompt.md"));
    write_copy(&path, prompt.as_bytes()).err().map(|err| {
        format!(
            "cannot write {}: {err}; going on without it",
            path.display()
        )
    })
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
