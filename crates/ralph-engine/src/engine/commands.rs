//! `commands`: running one before the prompt is rendered, where it runs and with what
//! environment.

use std::path::PathBuf;
use std::time::Duration;

use ralph_frontmatter::CommandSpec;

use super::assemble::{ralph_dir, shown_command};
use super::supervise::Collector;
use super::{CommandRun, Run, spawn_problem};
use crate::event::{EventKind, WarningKind};
use crate::logs::IterationLog;
use crate::state::millis;
use crate::tail::HeadTail;
use ralph_process::{self as process};

impl Run {
    pub(super) fn cwd_for(&self, command: &str) -> PathBuf {
        // As in ralphify: `./script` is relative to the RALPH.md, anything else to the cwd.
        if command.trim_start().starts_with("./") {
            ralph_dir(&self.engine.options.ralph_file)
        } else {
            self.engine.options.cwd.clone()
        }
    }

    pub(super) fn env(&self, iteration: u64) -> Vec<(String, String)> {
        vec![
            ("RALPH_ITERATION".to_owned(), iteration.to_string()),
            (
                "RALPH_RUN_ID".to_owned(),
                self.engine.options.run_id.clone(),
            ),
            ("RALPH_FILE".to_owned(), self.ralph_file_abs.clone()),
        ]
    }

    /// The variables of ralph's environment a child goes without: GitHub tokens the RALPH.md
    /// does not pass on (`env.pass`), as an agent's prompt may be text anyone could write.
    pub(super) fn env_remove(&self) -> Vec<String> {
        crate::environment::withheld_env(&self.engine.options.file.config)
    }

    pub(super) async fn run_command(
        &mut self,
        iteration: u64,
        command: &CommandSpec,
        log: &mut IterationLog,
    ) -> CommandRun {
        // User values are literal text wherever they stand: an argument never becomes shell
        // code (a placement that cannot be quoted is refused, at load or here).
        let line = ralph_frontmatter::command_line(&command.run, &self.engine.options.args);
        let cwd = self.cwd_for(&command.run);
        let spec = line.as_ref().map(|line| {
            let mut spec =
                crate::environment::command_process(line, cwd, self.engine.options.kill_grace);
            spec.timeout = Some(
                command
                    .timeout
                    .unwrap_or(self.engine.options.command_timeout),
            );
            spec.env = self.env(iteration);
            spec.env_remove = self.env_remove();
            self.confine(&mut spec);
            spec
        });
        let shown = line.as_ref().map_or(command.run.clone(), shown_command);
        log.section(&format!("command {}: {shown}", command.name));

        let mut collector = Collector {
            iteration,
            output: Some(HeadTail::new(command.max_output)),
            log,
            sinks: &mut self.engine.sinks,
            run_id: &self.engine.options.run_id,
            agent: None,
            interrupts: &mut self.interrupts,
        };
        let result = match &spec {
            Ok(spec) => process::run(spec, &mut collector, &mut self.engine.signals)
                .await
                .map_err(|err| spawn_problem(&spec.program, &err)),
            Err((_, reason)) => Err(format!("{{{{ args.* }}}} {}", reason.explain())),
        };
        let output = collector.output.map(HeadTail::finish).unwrap_or_default();
        log.write(output.after_head.as_bytes());
        let (exit_code, signal, duration, timed_out) = match result {
            Ok(exit) => (exit.exit_code, exit.signal, exit.duration, exit.timed_out()),
            Err(problem) => {
                self.warn(
                    WarningKind::CommandNotStarted,
                    format!("command {} could not start: {problem}", command.name),
                );
                (None, None, Duration::ZERO, false)
            }
        };
        self.emit(EventKind::CommandFinished {
            iteration,
            name: command.name.clone(),
            exit_code,
            duration_ms: millis(duration),
            timed_out,
        });
        CommandRun {
            output: output.text,
            exit_code,
            signal,
            timed_out,
        }
    }
}
