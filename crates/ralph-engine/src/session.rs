//! The session file: a run's state, saved in its folder so the run can go on after it stopped.
//! Its records and reader are ralph-events' (`ralph_events::session`: a reader needs no
//! engine); what the engine writes besides the session file itself is here.
//!
//! The engine replaces `<log folder>/session.json` whole (temporary file, fsync, rename) when an
//! iteration starts, after every iteration (the task source's step included) and when the run
//! ends; [`EngineOptions::resume`] takes it up again. `docs/session.md` documents the format.
//!
//! [`EngineOptions::resume`]: crate::EngineOptions::resume

use std::path::Path;

pub(crate) use ralph_events::session::*;

/// Records in `folder`'s [`CURRENT_FILE`] that its last run's log folder is `log_dir`.
pub(crate) fn write_current(folder: &Path, log_dir: &Path) -> std::io::Result<()> {
    let path = folder.join(CURRENT_FILE);
    if let Some(dir) = path.parent() {
        crate::logs::create_run_dir(dir)?;
    }
    let log_dir = std::fs::canonicalize(log_dir).unwrap_or_else(|_| log_dir.to_path_buf());
    let mut text = log_dir.into_os_string().into_encoded_bytes();
    text.push(b'\n');
    crate::logs::write_atomic(&path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_for_a_killed_run_is_a_name_states_cannot_take() {
        assert!(ralph_frontmatter::schema::RUN_STATUS_WORDS.contains(&KILLED));
    }
}
