//! The prompt: the body rendered with command outputs, arguments, ralph's values, the task's
//! placeholders and check feedback; and the prompt file for `{prompt_file}`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::Run;
use super::assemble::ralph_name;
use crate::convergence::Attempts;
use crate::logs;

impl Run {
    pub(super) fn prompt(&self, iteration: u64, outputs: &BTreeMap<String, String>) -> String {
        let options = &self.engine.options;
        let failures = self.attempts.as_ref().and_then(Attempts::feedback);
        let mut prompt =
            ralph_frontmatter::render(&options.file.body, |p| match (p.namespace, p.name) {
                ("commands", name) => outputs
                    .get(name)
                    .map(|o| o.trim_end_matches(['\n', '\r']).to_owned()),
                ("args", name) => Some(options.args.get(name).cloned().unwrap_or_default()),
                ("ralph", "iteration") => Some(iteration.to_string()),
                ("ralph", "max_iterations") => Some(
                    self.settings
                        .max_iterations
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                ),
                ("ralph", "name") => Some(ralph_name(&options.ralph_file)),
                ("ralph", "failures") => Some(failures.unwrap_or_default().to_owned()),
                (namespace, name) => self
                    .state_placeholders
                    .get(&(namespace.to_owned(), name.to_owned()))
                    .cloned()
                    .or_else(|| self.tasks.placeholder(namespace, name)),
            });
        // Feedback goes at the end when the body has no place for it.
        if let Some(failures) = failures {
            let placed = ralph_frontmatter::placeholders(&options.file.body)
                .iter()
                .any(|p| p.namespace == "ralph" && p.name == "failures");
            if !placed {
                if !prompt.ends_with('\n') {
                    prompt.push('\n');
                }
                prompt.push('\n');
                prompt.push_str(failures);
            }
        }
        // A state handler's words for this prompt (`StateContext::add_to_next_prompt`).
        if let Some(note) = &self.prompt_note {
            if !prompt.ends_with('\n') {
                prompt.push('\n');
            }
            prompt.push('\n');
            prompt.push_str(note);
        }
        prompt
    }

    pub(super) fn prompt_file_path(&self, iteration: u64) -> PathBuf {
        match &self.engine.options.log_dir {
            Some(dir) => dir.join(format!("prompt-{iteration:03}.md")),
            None => {
                std::env::temp_dir().join(format!("ralph-{}-prompt.md", self.engine.options.run_id))
            }
        }
    }

    /// The prompt file's path, and why it could not be written, for the caller to emit.
    pub(super) fn write_prompt_file(
        &self,
        iteration: u64,
        prompt: &str,
    ) -> (PathBuf, Option<String>) {
        let path = self.prompt_file_path(iteration);
        let warning = logs::write_atomic(&path, prompt.as_bytes())
            .err()
            .map(|err| format!("cannot write the prompt file {}: {err}", path.display()));
        (std::fs::canonicalize(&path).unwrap_or(path), warning)
    }
}
