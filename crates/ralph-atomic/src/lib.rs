//! Whole-file writes that a crash, a power cut or a reader never sees half done: the one place
//! ralph writes a file atomically (the run folder's files in `ralph-engine`, prd.json and
//! progress.txt in `ralph-escalation`, the merge queue's and lanes' records in
//! `ralph-parallel`, `ralph init`'s templates and `ralph report`'s page in the CLI). It owns
//! only that: it never reads a clock, never starts a process, never logs, and never replaces
//! anything but a regular file.
//!
//! Each write goes to a temporary file in the target's own folder (a rename is atomic only
//! within one file system), which is fsynced, renamed over the target, and then the folder is
//! fsynced so the rename itself survives a power cut. A symlink is followed (its target is
//! replaced, the link stays) and a replaced file keeps its permissions; a new file gets the
//! mode any editor would give it, 0666 less the umask.
//!
//! Only a regular file is ever replaced. A FIFO, a device node (`/dev/null`) or a terminal at
//! the path (or at the end of its symlink, `/dev/stdout`) is written into as it is, as a shell's
//! `>` would: renaming a regular file over `/dev/null` would break the machine for everyone.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Tells apart the temporary files of concurrent writes from one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path`, replacing any file there.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, |out| out.write_all(bytes))
}

/// Like [`write()`], with the content written by `fill`, so a large file is streamed rather than
/// held in memory.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if is_special(&target) {
        return write_into(&target, fill);
    }
    write_through_temp(&target, fill, Place::Replace, Durable::Yes)
}

/// Whether `path` (its symlinks followed) is something that exists and is neither a regular
/// file nor a folder: a FIFO, a device, a socket. `/dev/stdout` on a pipe is one, though its
/// link's target (`pipe:[…]`) cannot be named.
fn is_special(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes into the existing non-regular file at `path`, neither created nor truncated nor
/// replaced; nothing to fsync (a pipe or a terminal would refuse).
fn write_into(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    let mut out = BufWriter::new(file);
    fill(&mut out)?;
    out.flush()
}

/// Like [`write()`] without the fsyncs: a reader, or a ralph killed half-way, sees the old file
/// or the new one, never half of one, but a power cut may lose the write. For the run folder's
/// per-iteration copies (an iteration's prompt, an attempt's log): an fsync each iteration
/// costs a fast loop more than such a copy is worth. The path is ralph's own: a symlink there
/// is replaced, not followed.
pub fn write_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_unsynced_with(path, |out| out.write_all(bytes))
}

/// Like [`write_with()`] without the fsyncs, as [`write_unsynced()`].
pub fn write_unsynced_with(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_through_temp(path, fill, Place::Replace, Durable::No)
}

/// Writes `bytes` to `path` only if nothing is there: an error of kind
/// [`AlreadyExists`](std::io::ErrorKind::AlreadyExists) when a file (or a link, even a
/// dangling one) appeared, however late, and then nothing is written.
pub fn create_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_through_temp(
        path,
        |out| out.write_all(bytes),
        Place::NoClobber,
        Durable::Yes,
    )
}

/// How the temporary file takes the target's place.
#[derive(Clone, Copy)]
enum Place {
    Replace,
    NoClobber,
}

/// Whether the write must survive a power cut: the file and its folder are fsynced.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durable {
    Yes,
    No,
}

fn write_through_temp(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    place: Place,
    durable: Durable,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.ralph-tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let permissions = match place {
        Place::Replace => fs::metadata(path).ok().map(|m| m.permissions()),
        Place::NoClobber => None,
    };
    let result = (|| {
        let file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        let mut out = BufWriter::new(file);
        fill(&mut out)?;
        let file = out
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        if durable == Durable::Yes {
            file.sync_all()?;
        }
        drop(file);
        match place {
            Place::Replace => fs::rename(&tmp, path)?,
            Place::NoClobber => rename_noclobber(&tmp, path)?,
        }
        if durable == Durable::Yes {
            if let Ok(d) = File::open(&dir) {
                // Some file systems refuse to fsync a folder; the rename has happened either way.
                let _ = d.sync_all();
            }
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Why [`update`] did not write.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpdateError<E> {
    /// Reading, writing or renaming the file failed.
    Io(std::io::Error),
    /// The edit refused the file's content.
    Edit(E),
    /// Others wrote the file again and again, faster than the edit could be applied.
    KeepsChanging,
}

/// How many times [`update`] applies its edit again to a file others keep writing.
const UPDATE_ROUNDS: usize = 100;

/// Applies `edit` to the file at `path` and writes the result, losing no write others make to
/// the file meanwhile (a person's editor saving it by renaming a new file over it, even while
/// ralph's write is under way). `edit` gets the file's content and answers the new content, or
/// `None` when it has nothing to change. Returns whether it wrote.
///
/// The new content goes to a temporary file, fsynced; the file is read again, and when it
/// changed, `edit` is made again on what is there now. Otherwise the new file takes the file's
/// place in one `renameat2(RENAME_EXCHANGE)`, which hands back the file it replaced: when that
/// is not the content `edit` was given, someone saved in the microseconds between the look and
/// the swap, and `edit` is applied again to their content, swapped in at once, until a swap
/// replaces only ralph's own write. Nothing anyone saved is dropped. Where the swap is not
/// available, the look is the last step before a plain rename.
///
/// A symlink is followed; a FIFO or a device is written into (see [`write()`]) as `edit` says.
pub fn update<E>(
    path: &Path,
    mut edit: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, E>,
) -> Result<bool, UpdateError<E>> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut current = fs::read(&target).map_err(UpdateError::Io)?;
    if is_special(&target) {
        return match edit(&current).map_err(UpdateError::Edit)? {
            Some(out) => write(&target, &out).map(|()| true).map_err(UpdateError::Io),
            None => Ok(false),
        };
    }
    // What must be at the path for a swap to replace nothing but what `current` came from.
    let mut expected = current.clone();
    // Whether the path holds a write of ours that displaced someone's `current`.
    let mut ours_there = false;
    // An edit that refused someone's content: it is put back as it was, then the error said.
    let mut refused = None;
    for round in 0..UPDATE_ROUNDS {
        let out = match refused {
            Some(_) => current.clone(),
            None => match edit(&current) {
                Ok(Some(out)) => out,
                Ok(None) if !ours_there => return Ok(false),
                // Their content says it already: it goes back as it is.
                Ok(None) => current.clone(),
                Err(err) if !ours_there => return Err(UpdateError::Edit(err)),
                Err(err) => {
                    refused = Some(err);
                    current.clone()
                }
            },
        };
        let quick = match (ours_there, round) {
            (true, _) => Quick::Repair,
            (false, 0) => Quick::No,
            (false, _) => Quick::Yes,
        };
        match replace_if(&target, &out, &expected, quick).map_err(UpdateError::Io)? {
            Replaced::Done => {
                return match refused {
                    Some(err) => Err(UpdateError::Edit(err)),
                    None => Ok(true),
                };
            }
            Replaced::Displaced(theirs) => {
                expected = out;
                current = theirs;
                ours_there = true;
            }
            Replaced::Unchanged(theirs) => {
                expected.clone_from(&theirs);
                current = theirs;
            }
        }
    }
    if ours_there {
        // Theirs goes back rather than be lost; ralph's edit is the one not made.
        write(&target, &current).map_err(UpdateError::Io)?;
    }
    Err(UpdateError::KeepsChanging)
}

/// How [`replace_if`] writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quick {
    /// fsync, look, swap: no save seen yet.
    No,
    /// Look, swap, fsync: a save was seen meanwhile.
    Yes,
    /// Swap, fsync: ralph's own write is in place and lacks a save it displaced.
    Repair,
}

/// What [`replace_if`] did.
enum Replaced {
    /// The new content is in place, and it replaced the expected one.
    Done,
    /// The new content is in place, but it replaced this, which someone saved meanwhile.
    Displaced(Vec<u8>),
    /// Nothing written: the file holds this now, not the expected content.
    Unchanged(Vec<u8>),
}

/// Puts `bytes` at `path` (a regular file), replacing it only when it holds `expected`; see
/// [`update`]. The new file is complete and fsynced before the file is read again to compare,
/// so the one step left between that read and the swap takes microseconds. A `quick` write
/// fsyncs the new file after the swap instead: one after a change was seen, where a wait for
/// the disk would see the next save too, and a repair (ralph's own write displaced someone's
/// save just before, and lacks it while it is in place), which compares nothing.
fn replace_if(
    path: &Path,
    bytes: &[u8],
    expected: &[u8],
    quick: Quick,
) -> std::io::Result<Replaced> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.ralph-tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(bytes)?;
        if quick == Quick::No {
            file.sync_all()?;
        }
        if quick != Quick::Repair {
            let now = fs::read(path)?;
            if now != expected {
                return Ok(Replaced::Unchanged(now));
            }
        }
        let replaced = match exchange(&tmp, path) {
            Ok(()) => {
                let theirs = fs::read(&tmp)?;
                match theirs == expected {
                    true => Replaced::Done,
                    false => Replaced::Displaced(theirs),
                }
            }
            // Without the swap, the read above is the last look before the rename.
            Err(err) if unsupported(&err) => {
                if quick != Quick::No {
                    file.sync_all()?;
                }
                fs::rename(&tmp, path)?;
                Replaced::Done
            }
            Err(err) => return Err(err),
        };
        if quick != Quick::No {
            file.sync_all()?;
        }
        if let Ok(d) = File::open(&dir) {
            // Some file systems refuse to fsync a folder; the swap has happened either way.
            let _ = d.sync_all();
        }
        Ok(replaced)
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// Swaps the files at `a` and `b`, both of which exist, in one step.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    Ok(renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE)?)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// One file replaced whole again and again (a run's session file), without creating or
/// deleting a file per write: each content is written into a spare file beside the target
/// (`.NAME.spare`), fsynced, and swapped with the target in one `renameat2(RENAME_EXCHANGE)`;
/// the spare then holds the old content and takes the next one. A reader, or a ralph killed
/// half-way, sees the old content or the new one, never half of one; a power cut finds a whole
/// file too, at worst one that lacks the writes since the folder's last fsync (the first write
/// and [`Rewriter::sync_folder`]). Creating and deleting a file per write is what costs: on
/// ext4 each new file's inode is searched past every inode deleted in the last minutes.
///
/// Where the swap is not available (another system, a file system without it), each write is
/// a [`write()`]. The path is ralph's own: a symlink there is swapped, not followed.
#[derive(Debug)]
pub struct Rewriter {
    path: PathBuf,
    spare: PathBuf,
    /// The swap worked, or has not been tried yet.
    swaps: bool,
    /// The folder was fsynced after the last write.
    synced: bool,
}

impl Rewriter {
    /// Writes to `path` will go through the spare beside it.
    pub fn new(path: &Path) -> Self {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self {
            path: path.to_path_buf(),
            spare: path.with_file_name(format!(".{name}.spare")),
            swaps: cfg!(any(target_os = "linux", target_os = "android")),
            synced: true,
        }
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file's content with `bytes`. The first write is durable at once, folder
    /// included; later ones once [`sync_folder`](Self::sync_folder) runs.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if !self.swaps {
            return write(&self.path, bytes);
        }
        let swapped = self.write_spare(bytes).and_then(|()| self.swap());
        match swapped {
            Ok(true) => {
                self.synced = false;
                Ok(())
            }
            // Nothing at the path yet: the spare takes its name, durably.
            Ok(false) => {
                fs::rename(&self.spare, &self.path)?;
                self.synced = false;
                self.sync_folder();
                Ok(())
            }
            Err(err) if unsupported(&err) => {
                self.swaps = false;
                let _ = fs::remove_file(&self.spare);
                write(&self.path, bytes)
            }
            Err(err) => Err(err),
        }
    }

    /// Makes the writes so far survive a power cut: the folder holding the swapped names is
    /// fsynced (once, however many writes came since the last time).
    pub fn sync_folder(&mut self) {
        if self.synced {
            return;
        }
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            // Some file systems refuse to fsync a folder; the swap has happened either way.
            let _ = d.sync_all();
        }
        self.synced = true;
    }

    /// Removes the spare, which holds only an older content (the end of a run).
    pub fn remove_spare(&self) {
        if self.swaps {
            let _ = fs::remove_file(&self.spare);
        }
    }

    /// The spare, rewritten in place with `bytes` and fsynced. Not created with `O_TRUNC`:
    /// overwriting blocks it already has allocates none.
    fn write_spare(&self, bytes: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o666)
            // A FIFO or device someone put there fails here instead of blocking the write.
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.spare)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other(format!(
                "{} is not a regular file",
                self.spare.display()
            )));
        }
        file.write_all(bytes)?;
        file.set_len(bytes.len() as u64)?;
        file.sync_data()
    }

    /// Swaps the spare and the file; `false` when there is no file yet.
    fn swap(&self) -> std::io::Result<bool> {
        match exchange(&self.spare, &self.path) {
            Ok(()) => Ok(true),
            Err(err)
                if err.raw_os_error() == Some(libc::ENOENT)
                    && fs::symlink_metadata(&self.path).is_err() =>
            {
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }
}

/// The file system or the kernel cannot swap two names.
fn unsupported(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::Unsupported
        || matches!(
            err.raw_os_error(),
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
        )
}

/// Moves `from` to `to` unless `to` exists: a hard link, which refuses an existing name
/// atomically, then the temporary name's removal. On a file system without hard links the
/// check and the rename are two steps.
fn rename_noclobber(from: &Path, to: &Path) -> std::io::Result<()> {
    match fs::hard_link(from, to) {
        Ok(()) => fs::remove_file(from),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(err),
        Err(_) if fs::symlink_metadata(to).is_ok() => {
            Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists))
        }
        Err(_) => fs::rename(from, to),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_write_replaces_the_file_keeping_its_permissions_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();

        write(&path, b"new").unwrap();

        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(entries(dir.path()), ["a.txt"]);
    }

    #[test]
    fn an_atomic_write_keeps_permissions_and_follows_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, "{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("prd.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();

        write(&link, b"{\"a\": 1}").unwrap();

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

    #[test]
    fn an_unsynced_write_replaces_the_whole_file_or_leaves_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("iteration-001.prompt.md");
        fs::write(&path, "old").unwrap();

        write_unsynced(&path, b"new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");

        let err = write_unsynced_with(&path, |out| {
            out.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(err.is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(entries(dir.path()), ["iteration-001.prompt.md"]);
    }

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        fs::write(&path, "old").unwrap();

        let err = write_with(&path, |out| {
            out.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();

        assert_eq!(err.to_string(), "disk full");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["a.txt"]);
    }

    #[test]
    fn a_fifo_is_written_into_and_stays_a_fifo() {
        use std::os::unix::fs::FileTypeExt as _;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).unwrap())
        };

        write(&fifo, b"through the pipe").unwrap();

        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(entries(dir.path()), ["out.fifo"]);
    }

    /// `edit` that appends `line`, unless the content has it already.
    fn append(line: &'static str) -> impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, ()> {
        move |bytes| {
            let text = String::from_utf8(bytes.to_vec()).unwrap();
            Ok((!text.contains(line)).then(|| format!("{text}{line}\n").into_bytes()))
        }
    }

    #[test]
    fn an_update_edits_the_file_as_it_is_and_writes_nothing_when_nothing_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("TODO.md");
        fs::write(&path, "a\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        assert!(update(&path, append("mark")).unwrap());
        assert!(!update(&path, append("mark")).unwrap());
        assert_eq!(fs::read_to_string(&path).unwrap(), "a\nmark\n");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(entries(dir.path()), ["TODO.md"]);
    }

    #[test]
    fn a_save_made_while_an_update_writes_is_kept_and_the_edit_made_again_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("TODO.md");
        fs::write(&path, "a\n").unwrap();
        let mut calls = 0;
        let mut mark = append("mark");
        let wrote = update(&path, |bytes: &[u8]| {
            calls += 1;
            if calls == 1 {
                // A person's editor saves by rename after ralph read the file.
                fs::write(dir.path().join("saved"), "a\nperson\n").unwrap();
                fs::rename(dir.path().join("saved"), &path).unwrap();
            }
            mark(bytes)
        })
        .unwrap();
        assert!(wrote);
        assert_eq!(calls, 2);
        assert_eq!(fs::read_to_string(&path).unwrap(), "a\nperson\nmark\n");
        assert_eq!(entries(dir.path()), ["TODO.md"]);
    }

    #[test]
    fn an_edit_refusing_a_save_made_meanwhile_puts_that_save_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prd.json");
        fs::write(&path, "{}").unwrap();
        let mut calls = 0;
        let err = update(&path, |bytes: &[u8]| {
            calls += 1;
            if calls == 1 {
                fs::write(dir.path().join("saved"), "{half").unwrap();
                fs::rename(dir.path().join("saved"), &path).unwrap();
                return Ok(Some(b"{\"marked\": true}".to_vec()));
            }
            Err(String::from_utf8_lossy(bytes).into_owned())
        })
        .unwrap_err();
        assert!(
            matches!(err, UpdateError::Edit(ref e) if e == "{half"),
            "{err:?}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "{half");
    }

    #[test]
    fn a_rewritten_file_swaps_with_its_spare_creating_no_file_per_write() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        let mut file = Rewriter::new(&path);

        file.write(b"first").unwrap();
        assert_eq!(entries(dir.path()), ["session.json"]);
        file.write(b"second, longer").unwrap();
        let first = fs::metadata(&path).unwrap().ino();
        let spare = fs::metadata(dir.path().join(".session.json.spare"))
            .unwrap()
            .ino();
        file.write(b"third").unwrap();
        file.sync_folder();

        assert_eq!(fs::read_to_string(&path).unwrap(), "third");
        // The two files take turns: no new one per write.
        assert_eq!(fs::metadata(&path).unwrap().ino(), spare);
        assert_eq!(
            fs::metadata(dir.path().join(".session.json.spare"))
                .unwrap()
                .ino(),
            first
        );
        assert_eq!(entries(dir.path()), [".session.json.spare", "session.json"]);
        file.remove_spare();
        assert_eq!(entries(dir.path()), ["session.json"]);
        assert_eq!(fs::read_to_string(&path).unwrap(), "third");
    }

    #[test]
    fn a_half_written_spare_leaves_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        let mut file = Rewriter::new(&path);
        file.write(b"whole").unwrap();
        // A ralph killed while it wrote the spare.
        fs::write(dir.path().join(".session.json.spare"), "ha").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "whole");

        let mut file = Rewriter::new(&path);
        file.write(b"next").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "next");
    }

    #[test]
    fn create_new_refuses_an_existing_file_or_link_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        create_new(&path, b"first").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");

        let err = create_new(&path, b"second").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");

        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let err = create_new(&dangling, b"x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(entries(dir.path()), ["a.txt", "dangling"]);
    }
}
