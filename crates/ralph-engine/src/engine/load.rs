//! [`EngineOptions::load`] and [`EngineOptions::in_folder`]: a RALPH.md read and laid out as
//! `ralph run` lays it out, in one call each.

use std::path::{Path, PathBuf};

use ralph_frontmatter::{ConfigErrors, Vocabulary};

use super::EngineOptions;
use ralph_events::run_folder::RUNS_DIR;

/// Why a RALPH.md could not be loaded ([`EngineOptions::load`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {}: {cause}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file was read and is not a valid RALPH.md. `Display` gives every message, one per
    /// line, each located (`RALPH.md:3:8: max_iterations: ...`).
    #[error("{}", every_message(.0))]
    Invalid(ConfigErrors),
}

/// Each of `errors`, one per line.
fn every_message(errors: &ConfigErrors) -> String {
    let lines: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

impl EngineOptions {
    /// Reads and parses the RALPH.md at `path` (a file, or a folder holding one) with no plug's
    /// words, as [`ralph_frontmatter::parse`] does: the options [`EngineOptions::new`] makes
    /// of it, the file's warnings kept in [`warnings`](EngineOptions::warnings) (each a
    /// `WARNING` event as the run starts). Messages name the file as `path` is written.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("RALPH.md"), "---\nagent: cat\nmax_iterations: 0\n---\nGo.\n")?;
    /// let err = ralph_engine::EngineOptions::load(dir.path()).unwrap_err();
    /// assert!(err.to_string().contains("RALPH.md:3:17: max_iterations:"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Self, LoadError> {
        Self::load_with(path, &Vocabulary::default())
    }

    /// [`load`](EngineOptions::load), the file checked against the plugs registered in
    /// `vocabulary` ([`ralph_frontmatter::parse_with`]), which a reload of the file uses too.
    pub fn load_with(path: impl AsRef<Path>, vocabulary: &Vocabulary) -> Result<Self, LoadError> {
        let path = path.as_ref();
        let path = match path.is_dir() {
            true => path.join("RALPH.md"),
            false => path.to_path_buf(),
        };
        let text = std::fs::read_to_string(&path).map_err(|cause| LoadError::Read {
            path: path.clone(),
            cause,
        })?;
        let shown = path.display().to_string();
        let shown = shown.strip_prefix("./").unwrap_or(&shown);
        let parsed =
            ralph_frontmatter::parse_with(shown, &text, vocabulary).map_err(LoadError::Invalid)?;
        let mut options = Self::new(path, parsed.file);
        options.vocabulary = vocabulary.clone();
        options.warnings = parsed
            .warnings
            .iter()
            .map(|w| (crate::WarningKind::Config, w.to_string()))
            .collect();
        Ok(options)
    }

    /// Lays the run out in `folder` exactly as `ralph run` does there: the agent, commands and
    /// checks run in `folder`; the run's log folder is `folder/.ralph/runs/<run id>`; and the
    /// run holds the folder while it lasts ([`hold_folder`](EngineOptions::hold_folder)), so
    /// `ralph status`, `runs`, `logs` and `report` in `folder` see it as one of their own, and a
    /// second loop there is refused. Call it before [`resume`](EngineOptions::resume), which
    /// looks for stopped runs in this folder.
    pub fn in_folder(mut self, folder: impl Into<PathBuf>) -> Self {
        self.cwd = folder.into();
        self.log_dir = Some(self.cwd.join(RUNS_DIR).join(&self.run_id));
        self.hold_folder = true;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_located_message_is_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("RALPH.md"),
            "---\nagent: cat\nmax_iterations: -1\ndelay: soon\n---\nGo.\n",
        )
        .unwrap();
        let err = EngineOptions::load(dir.path()).unwrap_err().to_string();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert!(lines[0].contains("RALPH.md:3:17: max_iterations:"), "{err}");
        assert!(lines[1].contains("RALPH.md:4:8: delay:"), "{err}");
    }

    #[test]
    fn the_files_warnings_are_kept_for_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("RALPH.md");
        std::fs::write(&path, "---\nagent: cat\n---\n{{ commands.missing }}\n").unwrap();
        let options = EngineOptions::load(&path).unwrap();
        assert_eq!(options.warnings.len(), 1, "{:?}", options.warnings);
        let (kind, message) = &options.warnings[0];
        assert_eq!(*kind, crate::WarningKind::Config);
        assert!(message.contains("commands.missing"));
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = EngineOptions::load(dir.path()).unwrap_err().to_string();
        assert!(err.starts_with("cannot read "), "{err}");
        assert!(err.contains("RALPH.md"), "{err}");
    }

    #[test]
    fn in_folder_lays_the_run_out_as_ralph_run_does() {
        let parsed = ralph_frontmatter::parse("RALPH.md", "---\nagent: cat\n---\nGo.\n").unwrap();
        let options = EngineOptions::new("RALPH.md", parsed.file).in_folder("/srv/loop");
        assert_eq!(options.cwd, Path::new("/srv/loop"));
        let expected = Path::new("/srv/loop/.ralph/runs").join(&options.run_id);
        assert_eq!(options.log_dir.as_deref(), Some(expected.as_path()));
        assert!(options.hold_folder);
    }
}
