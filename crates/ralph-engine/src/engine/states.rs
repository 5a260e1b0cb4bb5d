//! What state handlers ask of the engine besides their decision: a hook to run (a declared
//! state's `run`) and text for the next prompt's feedback (`done` with failing checks).

use std::time::Duration;

use ralph_marker::Marker;

use super::Run;
use super::assemble::shown_command;
use crate::event::{WarningKind, exit_status};
use crate::state::{Facts, Requests};

impl Run {
    /// Carries out `requests` from the handler of `marker`'s state, after its events went out.
    pub(super) async fn state_requests(
        &mut self,
        iteration: u64,
        checks_passed: Option<bool>,
        marker: Option<&Marker>,
        requests: Requests,
    ) {
        if let (Some(text), Some(attempts)) = (requests.feedback, self.attempts.as_mut()) {
            attempts.prefix_feedback(&text);
        }
        if let Some(note) = requests.prompt_note {
            self.prompt_note = Some(note);
        }
        for (namespace, name, value) in requests.placeholders {
            self.state_placeholders.insert((namespace, name), value);
        }
        let (Some(hook), Some(marker)) = (requests.hook, marker) else {
            return;
        };
        let timeout = requests
            .hook_timeout
            .unwrap_or(self.engine.options.command_timeout);
        let exit_code = self.run_hook(iteration, &hook, timeout, marker).await;
        let mut events = Vec::new();
        let facts = Facts {
            iteration,
            elapsed: self.elapsed(),
            checks_passed,
            task: self.tasks.current_id(),
        };
        self.engine
            .handlers
            .hook_finished(facts, marker, exit_code, &mut events);
        events.into_iter().for_each(|e| self.emit(e));
    }

    /// Runs a state's hook like one of `commands`: the marker's attributes fill
    /// `{{ state.KEY }}`, quoted as user arguments (`{{ args.NAME }}`, filled too) are. A failure is a warning, with the end of
    /// its output.
    async fn run_hook(
        &mut self,
        iteration: u64,
        hook: &str,
        timeout: Duration,
        marker: &Marker,
    ) -> Option<i32> {
        let args = &self.engine.options.args;
        let line = ralph_frontmatter::command_line_with(hook, |namespace, name| match namespace {
            "state" => marker.attr(name),
            _ => args.get(name).map(String::as_str),
        });
        let line = match line {
            Ok(line) => line,
            Err((_, reason)) => {
                self.warn(
                    WarningKind::HookFailed,
                    format!(
                        "state `{}`: its hook was not run: a placeholder {}",
                        marker.name,
                        reason.explain()
                    ),
                );
                return None;
            }
        };
        let run = shown_command(&line);
        let mut spec = crate::environment::command_process(
            &line,
            self.cwd_for(hook),
            self.engine.options.kill_grace,
        );
        spec.timeout = Some(timeout);
        spec.env = self.env(iteration);
        spec.env_remove = self.env_remove();
        self.confine(&mut spec);
        let (result, tail) = self.run_keeping_tail(iteration, &spec).await;
        let (tail, _) = tail.into_text();
        let name = &marker.name;
        match result {
            Ok(exit) if exit.exit_code == Some(0) && !exit.timed_out() => Some(0),
            Ok(exit) => {
                let how = if exit.timed_out() {
                    "timed out".to_owned()
                } else {
                    format!("failed ({})", exit_status(exit.exit_code, exit.signal))
                };
                self.warn(
                    WarningKind::HookFailed,
                    format!(
                        "state `{name}`: its hook `{run}` {how}: {}",
                        tail.trim_end()
                    ),
                );
                exit.exit_code.filter(|_| !exit.timed_out())
            }
            Err(err) => {
                self.warn(
                    WarningKind::HookFailed,
                    format!("state `{name}`: its hook `{run}` could not start: {err}"),
                );
                None
            }
        }
    }
}
