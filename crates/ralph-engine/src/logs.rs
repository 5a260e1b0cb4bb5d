//! The run's log folder: `events.jsonl`, one `iteration-NNN.log` per iteration, prompt files.
//!
//! Logs never stop a loop: when the folder cannot be created or written, the engine warns once
//! (through `tracing`) and goes on without logs.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Creates `dir` (and parents), with a `.gitignore` of `*` so run logs never dirty the
/// user's repository: in the `.ralph` folder `dir` lies in, or else (`--log-dir .`, say) in
/// `dir` itself, which a later run's clean-tree check would otherwise take for work.
pub(crate) fn create_run_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let ignored = dir
        .ancestors()
        .find(|a| a.file_name() == Some(".ralph".as_ref()))
        .unwrap_or(dir);
    let ignore = ignored.join(".gitignore");
    if !ignore.exists() {
        write_atomic(&ignore, b"*\n")?;
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
pub(crate) use ralph_atomic::{
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
    pub(crate) fn write(
        &mut self,
        spares: &mut SpareFiles,
        dir: &Path,
        iteration: u64,
        prompt: &str,
    ) -> Option<String> {
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
        if let Err(err) = spares.write(dir, &path, prompt.as_bytes()) {
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
    pub(crate) fn create(spares: &mut SpareFiles, dir: &Path, iteration: u64) -> Self {
        let path = dir.join(format!("iteration-{iteration:03}.log"));
        match spares.create(dir, &path) {
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

/// The names of spare files begin so: hidden, and never an `iteration-*` name a reader lists.
const SPARE_PREFIX: &str = ".spare-";

/// Empty files made ahead of need in the run folder, by a thread of its own, so that the loop
/// gives a file its name (a hard link) where it would create one. Creating is what a fast loop
/// pays most for on a busy disk: ext4 without a journal searches for a new inode past every
/// inode deleted in the last half minute, a quarter of a millisecond per file on a machine that
/// compiles, and the other core can pay it while the agent runs. The spare's own name is
/// removed by that thread too, after the loop has linked it: a rename costs the loop's thread
/// several times what a link does.
///
/// The thread holds at most one spare; it starts with the first file asked for, and a spare it
/// cannot make (a full disk) only stops it making more: files are then created as before. A
/// spare left by a killed ralph is an empty hidden file, or a second name of a file it gave,
/// which no reader of the folder lists.
#[derive(Default)]
pub(crate) struct SpareFiles {
    maker: Option<SpareMaker>,
}

struct SpareMaker {
    dir: PathBuf,
    /// The spare made, handed over when the loop asks.
    ready: mpsc::Receiver<(PathBuf, File)>,
    /// Spares the loop has linked under their file's name, for the thread to unname.
    linked: mpsc::Sender<PathBuf>,
    thread: JoinHandle<()>,
}

impl SpareFiles {
    /// `path` (in `dir`) created empty, or truncated, for writing.
    pub(crate) fn create(&mut self, dir: &Path, path: &Path) -> std::io::Result<File> {
        if let Some((spare, file)) = self.take(dir) {
            if self.name(&spare, path) {
                return Ok(file);
            }
        }
        File::create(path)
    }

    /// `bytes` written whole to `path` (in `dir`), as [`write_copy`] does: a reader sees the
    /// old file or the new one, never half of one; nothing is fsynced.
    pub(crate) fn write(&mut self, dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if let Some((spare, mut file)) = self.take(dir) {
            if file.write_all(bytes).is_ok() && self.name(&spare, path) {
                return Ok(());
            }
        }
        write_copy(path, bytes)
    }

    /// The spare ready in `dir`, if there is one; the thread then makes the next.
    fn take(&mut self, dir: &Path) -> Option<(PathBuf, File)> {
        if self.maker.as_ref().is_some_and(|m| m.dir != dir) {
            self.stop();
        }
        let maker = match &self.maker {
            Some(maker) => maker,
            None => {
                self.maker = SpareMaker::start(dir);
                // The first file is made at once, as it always was.
                return None;
            }
        };
        maker.ready.try_recv().ok()
    }

    /// Gives `spare` the name `path`, replacing a file there; whether it did (a spare that
    /// could not be named is removed).
    fn name(&self, spare: &Path, path: &Path) -> bool {
        if std::fs::hard_link(spare, path).is_ok() {
            if let Some(maker) = &self.maker {
                if maker.linked.send(spare.to_path_buf()).is_ok() {
                    return true;
                }
            }
            let _ = std::fs::remove_file(spare);
            return true;
        }
        // A file already there (an interrupted iteration's log, done again) is replaced.
        if std::fs::rename(spare, path).is_ok() {
            return true;
        }
        let _ = std::fs::remove_file(spare);
        false
    }

    /// Ends the thread, once it has unnamed what was linked; its spare removed.
    fn stop(&mut self) {
        if let Some(maker) = self.maker.take() {
            drop(maker.ready);
            drop(maker.linked);
            let _ = maker.thread.join();
        }
    }
}

impl Drop for SpareFiles {
    fn drop(&mut self) {
        self.stop();
    }
}

impl SpareMaker {
    fn start(dir: &Path) -> Option<Self> {
        // A rendezvous: the thread holds one spare until the loop takes it.
        let (ready_tx, ready) = mpsc::sync_channel(0);
        let (linked, linked_rx) = mpsc::channel();
        let thread_dir = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("ralph-files".to_owned())
            .spawn(move || make_spares(&thread_dir, &ready_tx, &linked_rx))
            .ok()?;
        Some(Self {
            dir: dir.to_path_buf(),
            ready,
            linked,
            thread,
        })
    }
}

fn make_spares(
    dir: &Path,
    ready: &mpsc::SyncSender<(PathBuf, File)>,
    linked: &mpsc::Receiver<PathBuf>,
) {
    for n in 0_u64.. {
        let path = dir.join(format!("{SPARE_PREFIX}{}-{n}", std::process::id()));
        let Ok(file) = OpenOptions::new().write(true).create_new(true).open(&path) else {
            break;
        };
        if let Err(mpsc::SendError((path, _))) = ready.send((path, file)) {
            // The loop is done with the folder.
            let _ = std::fs::remove_file(&path);
            break;
        }
        // Taken: the spares the loop has given a name since lose their own.
        for spare in linked.try_iter() {
            let _ = std::fs::remove_file(spare);
        }
    }
    // Until the loop lets go: what it still names is unnamed before the thread is joined.
    for spare in linked {
        let _ = std::fs::remove_file(spare);
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
        let mut spares = SpareFiles::default();
        assert_eq!(copies.write(&mut spares, dir.path(), 1, "same"), None);
        assert_eq!(copies.write(&mut spares, dir.path(), 2, "same"), None);
        let inode = |n: u32| std::fs::metadata(copy(n)).unwrap().ino();
        assert_eq!(inode(1), inode(2));

        std::fs::write(copy(2), "edited by hand").unwrap();
        assert_eq!(copies.write(&mut spares, dir.path(), 3, "same"), None);
        assert_eq!(std::fs::read_to_string(copy(3)).unwrap(), "same");
        assert_ne!(inode(3), inode(2));
        assert_eq!(std::fs::read_to_string(copy(1)).unwrap(), "edited by hand");
    }

    /// The inode of the spare waiting in `dir`, once the thread has made it: an empty file
    /// with no other name (a spare already linked keeps its own name until the thread removes
    /// it, a moment later).
    fn spare_in(dir: &Path) -> u64 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let spare = std::fs::read_dir(dir)
                .unwrap()
                .filter_map(|entry| {
                    let entry = entry.ok()?;
                    if !entry
                        .file_name()
                        .to_string_lossy()
                        .starts_with(SPARE_PREFIX)
                    {
                        return None;
                    }
                    let meta = std::fs::symlink_metadata(entry.path()).ok()?;
                    (meta.nlink() == 1 && meta.len() == 0).then_some(meta.ino())
                })
                .next();
            match spare {
                Some(spare) => return spare,
                None if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                None => panic!("no spare file in {}", dir.display()),
            }
        }
    }

    /// Writes files in `dir` with `write` (given a number from 2) until one is the spare made
    /// ahead, which is on disk a moment before the thread hands it over; returns each path
    /// written with its text.
    fn write_until_a_spare_is_taken(
        spares: &mut SpareFiles,
        dir: &Path,
        mut write: impl FnMut(&mut SpareFiles, u32) -> (PathBuf, String),
    ) -> Vec<(PathBuf, String)> {
        let mut named = Vec::new();
        for n in 2..500 {
            let spare = spare_in(dir);
            let (path, text) = write(spares, n);
            let taken = std::fs::metadata(&path).unwrap().ino() == spare;
            named.push((path, text));
            if taken {
                return named;
            }
        }
        panic!("no file named was the spare made ahead");
    }

    #[test]
    fn a_file_after_the_first_is_the_spare_made_ahead_and_no_spare_outlives_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut spares = SpareFiles::default();
        let first = dir.path().join("iteration-001.log");
        spares
            .create(dir.path(), &first)
            .unwrap()
            .write_all(b"one")
            .unwrap();
        let mut named = vec![(first, "one".to_owned())];
        named.extend(write_until_a_spare_is_taken(
            &mut spares,
            dir.path(),
            |spares, n| {
                let path = dir.path().join(format!("iteration-{n:03}.log"));
                let text = format!("log {n}");
                let mut file = spares.create(dir.path(), &path).unwrap();
                file.write_all(text.as_bytes()).unwrap();
                (path, text)
            },
        ));
        named.extend(write_until_a_spare_is_taken(
            &mut spares,
            dir.path(),
            |spares, n| {
                let path = dir.path().join(format!("iteration-{n:03}.prompt.md"));
                let text = format!("prompt {n}");
                spares.write(dir.path(), &path, text.as_bytes()).unwrap();
                (path, text)
            },
        ));

        drop(spares);
        let spares_left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(SPARE_PREFIX))
            .collect();
        assert!(spares_left.is_empty(), "{spares_left:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), named.len());
        for (path, text) in &named {
            assert_eq!(&std::fs::read_to_string(path).unwrap(), text);
        }
    }

    #[test]
    fn a_spare_replaces_a_file_already_at_the_path_as_creating_it_would() {
        let dir = tempfile::tempdir().unwrap();
        let mut spares = SpareFiles::default();
        spares
            .create(dir.path(), &dir.path().join("a.log"))
            .unwrap();
        spare_in(dir.path());
        let taken = dir.path().join("iteration-001.log");
        std::fs::write(&taken, "an older log of a much greater length").unwrap();
        spares
            .create(dir.path(), &taken)
            .unwrap()
            .write_all(b"new")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "new");
    }

    #[test]
    fn spares_follow_the_folder_asked_for() {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        let mut spares = SpareFiles::default();
        spares
            .create(one.path(), &one.path().join("a.log"))
            .unwrap();
        spare_in(one.path());
        spares
            .create(two.path(), &two.path().join("b.log"))
            .unwrap();
        assert_eq!(
            std::fs::read_dir(one.path()).unwrap().count(),
            1,
            "the spare in the first folder is removed"
        );
        spare_in(two.path());
    }
}
