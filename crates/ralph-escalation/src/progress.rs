//! progress.txt: the escalation log, one entry per tripped breaker, for people and agents.

use std::path::{Path, PathBuf};

/// progress.txt could not be updated.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {cause}", .path.display())]
pub struct ProgressError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub cause: std::io::Error,
}

/// `escalation.progress` leads, on the file system, to a file ralph must not append to: through a
/// symlink (or a name the text alone cannot tell apart) it is the prd.json, the RALPH.md, or a
/// file inside a `.git` folder.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct PathConflict {
    /// The field to blame: `escalation.progress`.
    pub field: &'static str,
    /// What the path leads to, and why ralph refuses it.
    pub reason: String,
}

/// Where `path` leads: its canonical form, or for a file not yet created, its folder's
/// canonical form joined with its name.
fn resolve(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// Refuses a progress file (`progress`) that, once symlinks are followed, is the prd.json
/// (`prd`), the RALPH.md (`ralph_md`, when known) or inside a `.git` folder: appending to it
/// would destroy the stories, the prompt or the repository. Relative paths are taken from the
/// current folder. The same rules on the paths' text alone are `ralph_frontmatter`'s, at parse
/// time; this is the part that needs the file system.
pub fn check_path(
    progress: &Path,
    prd: Option<&Path>,
    ralph_md: Option<&Path>,
) -> Result<(), PathConflict> {
    let real = resolve(progress);
    let shown = progress.display();
    let conflict = |reason: String| PathConflict {
        field: "escalation.progress",
        reason,
    };
    if let Some(prd) = prd.filter(|prd| resolve(prd) == real) {
        return Err(conflict(format!(
            "\"{shown}\" is the same file as escalation.prd (\"{}\", both lead to {}); progress \
             entries would overwrite the stories; choose another file, such as \"progress.txt\"",
            prd.display(),
            real.display()
        )));
    }
    if let Some(ralph_md) = ralph_md.filter(|md| resolve(md) == real) {
        return Err(conflict(format!(
            "\"{shown}\" is the same file as {} (both lead to {}); progress entries would \
             overwrite its prompt and settings; choose another file, such as \"progress.txt\"",
            ralph_md.display(),
            real.display()
        )));
    }
    if real.components().any(|c| c.as_os_str() == ".git") {
        return Err(conflict(format!(
            "\"{shown}\" leads inside .git ({}), git's own folder, where a file ralph writes \
             can damage the repository; choose a path outside it, such as \"progress.txt\"",
            real.display()
        )));
    }
    Ok(())
}

/// Appends `entry` to the file at `path` (created when missing), separated from what is there by
/// a blank line. The file is handled as bytes: whatever it holds (text in another encoding, a
/// stray binary write) is kept byte for byte ahead of the entry. The whole file is rewritten
/// atomically, so a crash leaves the old file or the new one. Returns the 1-based line the
/// entry starts on.
pub fn append(path: &Path, entry: &str) -> Result<usize, ProgressError> {
    let error = |cause| ProgressError {
        path: path.to_path_buf(),
        cause,
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
    ralph_atomic::write(path, &bytes).map_err(error)?;
    Ok(line)
}

/// The 1-based line `entry` starts on in the file at `path`, if the file holds it (`None` when
/// the file is missing): a revert that was cut short appends its entry only once.
pub fn find(path: &Path, entry: &str) -> Result<Option<usize>, ProgressError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(cause) => {
            return Err(ProgressError {
                path: path.to_path_buf(),
                cause,
            });
        }
    };
    let needle = entry.as_bytes();
    if needle.is_empty() {
        return Ok(None);
    }
    Ok(bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1))
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
    fn an_entry_is_found_on_the_line_it_was_appended_at() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("progress.txt");
        assert_eq!(find(&path, "## two\nb\n").unwrap(), None);
        append(&path, "## one\na\n").unwrap();
        let line = append(&path, "## two\nb\n").unwrap();
        assert_eq!(find(&path, "## two\nb\n").unwrap(), Some(line));
        assert_eq!(find(&path, "## three\n").unwrap(), None);
    }

    #[test]
    fn a_progress_path_that_leads_to_the_prd_the_ralph_md_or_into_git_is_refused() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        std::fs::write(at("prd.json"), "{}").unwrap();
        std::fs::write(at("RALPH.md"), "---\n").unwrap();
        std::fs::create_dir_all(at("repo/.git")).unwrap();
        symlink(at("prd.json"), at("stories-log")).unwrap();
        symlink(at("RALPH.md"), at("prompt-log")).unwrap();
        symlink(at("repo/.git"), at("gitdir")).unwrap();
        std::fs::create_dir(at("sub")).unwrap();
        let check = |progress: &str| {
            check_path(&at(progress), Some(&at("prd.json")), Some(&at("RALPH.md")))
                .map_err(|err| err.reason)
        };
        assert!(
            check("stories-log")
                .unwrap_err()
                .contains("is the same file as escalation.prd")
        );
        assert!(
            check("sub/../prd.json")
                .unwrap_err()
                .contains("escalation.prd")
        );
        assert!(
            check("prompt-log")
                .unwrap_err()
                .contains("overwrite its prompt and settings")
        );
        // Not yet created, in a folder that is a link into .git.
        assert!(
            check("gitdir/progress.txt")
                .unwrap_err()
                .contains("leads inside .git")
        );
        assert_eq!(check("progress.txt"), Ok(()));
        assert_eq!(check("sub/progress.txt"), Ok(()));
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
