//! [`Engine::dry_run`]: what iteration 1 would do, its commands run, no agent started.

use std::collections::BTreeMap;

#[cfg(doc)]
use super::Engine;
use super::assemble::agent_words;
use super::{EngineError, Run};
use crate::logs::IterationLog;
use crate::outcome::EndReason;
use crate::task::NotYet;
use ralph_agents as adapter;

/// What iteration 1 would do, from [`Engine::dry_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DryRun {
    /// The exact prompt the agent would receive.
    pub prompt: String,
    /// The agent's command line, placeholders substituted.
    pub argv: Vec<String>,
    /// Whether the prompt would go to the agent's stdin (no `{prompt}` or `{prompt_file}`).
    pub stdin: bool,
    /// The `commands` that ran, in order, with their output.
    pub commands: Vec<DryRunCommand>,
    /// The task iteration 1 would work on (a story id), when a [`TaskSource`](crate::TaskSource) is set.
    pub task: Option<String>,
    /// Why the loop would end before iteration 1 (every story done, say). Then nothing ran:
    /// the prompt, the command line and the commands are empty.
    pub end: Option<EndReason>,
    /// The built-in adapter that would read the agent's output, and why; `None` when an
    /// embedder set its own ([`Engine::set_adapter`]) or nothing would run.
    pub output: Option<adapter::OutputChoice>,
}

/// One of `commands`, run by [`Engine::dry_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DryRunCommand {
    /// The command's name.
    pub name: String,
    /// Its output (stdout and stderr, in the order written).
    pub output: String,
    /// Its exit code; `None` when it ended by a signal, was killed at its timeout, or could not
    /// start.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did; with `exit_code`, word it with
    /// [`exit_status`](crate::exit_status). Neither: it could not start.
    pub signal: Option<i32>,
    /// Whether it was killed for running past its `timeout`.
    pub timed_out: bool,
}

impl Run {
    pub(super) async fn dry_run(mut self) -> Result<DryRun, EngineError> {
        self.engine.options.log_dir = None;
        // The task source's events (none are written in a dry run) are dropped.
        // A task source that would wait first: the dry run shows no task.
        if let Some(not_yet) = self.tasks.begin(&mut Vec::new()) {
            let end = match not_yet {
                NotYet::End(end) => Some(end),
                NotYet::Wait(_) => None,
            };
            return Ok(DryRun {
                prompt: String::new(),
                argv: Vec::new(),
                stdin: false,
                commands: Vec::new(),
                task: None,
                end,
                output: None,
            });
        }
        // The commands run as they would in the run: in its sandbox.
        self.start_sandbox()?;
        let iteration = 1;
        let mut log = IterationLog::disabled();
        let mut commands = Vec::new();
        let mut outputs = BTreeMap::new();
        for command in self.engine.options.file.config.commands.clone() {
            let ran = self.run_command(iteration, &command, &mut log).await;
            outputs.insert(command.name.clone(), ran.output.clone());
            commands.push(DryRunCommand {
                name: command.name,
                output: ran.output,
                exit_code: ran.exit_code,
                signal: ran.signal,
                timed_out: ran.timed_out,
            });
        }
        let prompt = self.prompt(iteration, &outputs);
        let prompt_file = self.prompt_file_path(iteration);
        let (mut argv, uses_argv) =
            agent_words(&self.engine.options.file.config.agent_argv, &prompt, || {
                prompt_file.clone()
            });
        let embedders = self.embedders_adapter().is_some();
        let output = (!embedders).then(|| self.builtin_output());
        if let Some(output) = &output {
            argv.extend(output.extra_args.iter().cloned());
            argv.extend(self.max_turns_args());
        }
        if argv.is_empty() {
            return Err(EngineError::EmptyAgent);
        }
        Ok(DryRun {
            prompt,
            argv,
            stdin: !uses_argv,
            commands,
            task: self.tasks.current_id().map(str::to_owned),
            end: None,
            output,
        })
    }
}
