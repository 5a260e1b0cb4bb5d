//! `reload`: edits to the RALPH.md made while the loop runs, taken before the next iteration.

use super::Run;
use crate::convergence::Attempts;
use crate::event::EventKind;

impl Run {
    /// Picks up edits to the RALPH.md made since the last iteration.
    pub(super) fn reload(&mut self, iteration: u64) {
        let Ok(text) = std::fs::read_to_string(&self.engine.options.ralph_file) else {
            // A file being replaced (editors write then rename) can be missing for a moment;
            // the previous version stays.
            return;
        };
        if self.source.as_deref() == Some(text.as_str()) {
            return;
        }
        let name = self.engine.options.ralph_file.display().to_string();
        let kind =
            match ralph_frontmatter::parse_with(&name, &text, &self.engine.options.vocabulary) {
                Ok(parsed) => {
                    let config = &parsed.file.config;
                    // Convergence follows the file; an attempt count already under way is kept.
                    match (&self.attempts, config.done_when.is_empty()) {
                        (_, true) => self.attempts = None,
                        (None, false) => {
                            self.attempts = Some(Attempts::new(config.convergence.clone()))
                        }
                        (Some(_), false) => {}
                    }
                    // The sandbox is the run's, set at its start (and by `--sandbox`): an
                    // edit cannot loosen it while the loop runs.
                    let sandbox = self.engine.options.file.config.sandbox.take();
                    self.engine.options.file = parsed.file;
                    self.engine.options.file.config.sandbox = sandbox;
                    self.agents.reload(&self.engine.options.file.config);
                    if let Some(session) = &mut self.session {
                        session.config_hash = crate::session::config_hash(&text);
                    }
                    EventKind::ConfigReloaded { iteration }
                }
                Err(errors) => EventKind::ConfigRejected {
                    iteration,
                    errors: errors.errors.iter().map(ToString::to_string).collect(),
                },
            };
        self.source = Some(text);
        self.emit(kind);
    }
}
