//! progress.txt: the escalation log, one entry per tripped breaker, for people and agents.

use std::path::{Path, PathBuf};

use crate::prd::write_atomic;

/// progress.txt could not be updated.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {source}", .path.display())]
pub struct ProgressError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// Appends `entry` to the file at `path` (created when missing), separated from what is there by
/// a blank line. The file is handled as bytes: whatever it holds (text in another encoding, a
/// stray binary write) is kept byte for byte ahead of the entry. The whole file is rewritten
/// atomically, so a crash leaves the old file or the new one. Returns the 1-based line the
/// entry starts on.
pub fn append(path: &Path, entry: &str) -> Result<usize, ProgressError> {
    let error = |source| ProgressError {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => return Err(error(err)),
    };
    if !bytes.is_empty() {
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.push(b'\n');
    }
    let line = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
    bytes.extend_from_slice(entry.as_bytes());
    if !entry.ends_with('\n') {
        bytes.push(b'\n');
    }
    write_atomic(path, &bytes).map_err(error)?;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_appended_after_a_blank_line_and_located() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("progress.txt");
        assert_eq!(append(&path, "## one\na\n").unwrap(), 1);
        assert_eq!(append(&path, "## two\nb").unwrap(), 4);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "## one\na\n\n## two\nb\n"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept_exactly_and_the_entry_follows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("progress.txt");
        // Latin-1 text, a lone continuation byte, a NUL, no final newline.
        let old: &[u8] = b"## caf\xe9\nnotes \x80\x00 end";
        std::fs::write(&path, old).unwrap();
        assert_eq!(append(&path, "## next\nx\n").unwrap(), 4);
        let mut expected = old.to_vec();
        expected.extend_from_slice(b"\n\n## next\nx\n");
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file is left behind");
    }
}
