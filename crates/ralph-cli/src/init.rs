//! `ralph init`: write a commented RALPH.md template (and, for story mode, prd.json and
//! progress.txt) without ever replacing a file unasked.

use std::path::{Path, PathBuf};

use crate::cli::InitArgs;
use crate::error::CliError;

/// The plain template: agent, a command, idle, done_when examples.
const RALPH_MD: &str = include_str!("../templates/RALPH.md");
/// The story-mode template, working through prd.json.
const RALPH_PRD_MD: &str = include_str!("../templates/RALPH-prd.md");
/// A one-story prd.json in the shell-script Ralph's format.
const PRD_JSON: &str = include_str!("../templates/prd.json");
/// An empty progress log.
const PROGRESS_TXT: &str = include_str!("../templates/progress.txt");

/// Writes the template files into `args.dir`; returns the paths written.
pub(crate) fn init(args: &InitArgs) -> Result<Vec<PathBuf>, CliError> {
    check_folder(&args.dir)?;
    let files: &[(&str, &str)] = if args.prd {
        &[
            ("RALPH.md", RALPH_PRD_MD),
            ("prd.json", PRD_JSON),
            ("progress.txt", PROGRESS_TXT),
        ]
    } else {
        &[("RALPH.md", RALPH_MD)]
    };
    // Refuse before writing anything, so a refusal never leaves half a set behind.
    if !args.force {
        if let Some((name, _)) = files.iter().find(|(name, _)| args.dir.join(name).exists()) {
            return Err(CliError::Exists(args.dir.join(name)));
        }
    }
    std::fs::create_dir_all(&args.dir).map_err(|source| CliError::Write {
        path: args.dir.clone(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = args.dir.join(name);
        write_atomic(&path, text, args.force)?;
        written.push(path);
    }
    Ok(written)
}

/// `ralph check` and `ralph run` take a RALPH.md path; `ralph init` takes a folder. A file, or a
/// path ending in `.md` that does not exist yet, is refused rather than turned into a folder
/// named `RALPH.md`.
fn check_folder(dir: &Path) -> Result<(), CliError> {
    let is_file = dir.exists() && !dir.is_dir();
    let looks_like_a_file = !dir.exists()
        && dir
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("md"));
    if !is_file && !looks_like_a_file {
        return Ok(());
    }
    let folder = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Err(CliError::NotAFolder {
        path: dir.to_path_buf(),
        folder,
    })
}

/// Writes `text` whole (`ralph_atomic`): a reader never sees half a file. Without
/// `replace`, nothing is written if `path` appeared meanwhile.
fn write_atomic(path: &Path, text: &str, replace: bool) -> Result<(), CliError> {
    let written = if replace {
        ralph_atomic::write(path, text.as_bytes())
    } else {
        ralph_atomic::create_new(path, text.as_bytes())
    };
    match written {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(CliError::Exists(path.to_path_buf()))
        }
        Err(source) => Err(CliError::Write {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The templates are valid RALPH.md files with no warnings, read as `ralph` reads them.
    #[test]
    fn templates_parse_without_warnings() {
        let vocabulary = crate::ralph_file::vocabulary();
        for (name, text) in [("RALPH.md", RALPH_MD), ("RALPH-prd.md", RALPH_PRD_MD)] {
            let parsed = ralph_frontmatter::parse_with(name, text, &vocabulary).unwrap();
            assert!(parsed.warnings.is_empty(), "{name}: {:?}", parsed.warnings);
        }
    }
}
