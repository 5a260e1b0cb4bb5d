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
/// a blank line. The whole file is rewritten atomically, so a crash leaves the old file or the
/// new one. Returns the 1-based line the entry starts on.
pub fn append(path: &Path, entry: &str) -> Result<usize, ProgressError> {
    let error = |source| ProgressError {
        path: path.to_path_buf(),
        source,
    };
    let mut text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(error(err)),
    };
    if !text.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
    }
    let line = text.lines().count() + 1;
    text.push_str(entry);
    if !entry.ends_with('\n') {
        text.push('\n');
    }
    write_atomic(path, text.as_bytes()).map_err(error)?;
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
}
