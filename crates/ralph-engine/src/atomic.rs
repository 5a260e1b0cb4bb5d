//! Whole-file writes that a crash, a power cut or a reader never sees half done: the one place
//! ralph writes a file atomically (the run folder's files here, prd.json and progress.txt in
//! `ralph-escalation`, `ralph init`'s templates in the CLI).
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
