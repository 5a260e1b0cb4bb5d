//! The agent run: its command line and adapter, the process (piped or on a PTY), and what its
//! output said (markers, usage, its error).

use std::sync::Arc;
use std::time::SystemTime;

use ralph_frontmatter::OutputFormat;
use ralph_marker::{Finding, MarkerScanner};

use super::assemble::{agent_words, max_turns_args};
use super::failure::{AgentWords, FAILURE_TAIL_BYTES};

/// How much of an agent's answer the task source is shown (its end): a plan of a few hundred
/// tasks fits.
const ANSWER_BYTES: usize = 1 << 20;
use super::supervise::{AgentOutput, AgentReader, AgentRetries, Collector};
use super::{EngineError, Run};
use crate::event::WarningKind;
use crate::logs::IterationLog;
use crate::signal::{self, SignalMatcher};
use crate::tail::Tail;
use ralph_agents::{self as adapter, OutputAdapter as _, Usage};
use ralph_process::pty;
use ralph_process::{self as process, ProcessExit, ProcessSpec};

impl Run {
    /// `--max-turns N` when `max_turns` is set and the agent that runs is `claude -p`.
    pub(super) fn max_turns_args(&self) -> Vec<String> {
        let config = &self.engine.options.file.config;
        max_turns_args(self.agents.argv(), config.max_turns)
    }

    /// The built-in adapter for the agent that runs, and the arguments it adds to its command
    /// line. `output` is the `agent`'s; a fallback agent's is chosen from its command line.
    pub(super) fn builtin_output(&self) -> adapter::OutputChoice {
        let config = &self.engine.options.file.config;
        // A PTY agent is interactive: read as text unless the file says otherwise.
        let text_on_pty = self.settings.pty.map(|_| OutputFormat::Text);
        let configured = config.output.filter(|_| self.agents.is_primary());
        adapter::choose_output(self.agents.argv(), configured.or(text_on_pty))
    }

    /// The embedder's adapter for this agent run: for the primary agent the one the file names
    /// (`output:` a plug's format), else what [`Engine::set_adapter`](crate::Engine::set_adapter)'s
    /// choice says of the agent line that runs (a fallback's too; `output:` is the primary's).
    pub(super) fn embedders_adapter(&mut self) -> Option<Box<dyn adapter::OutputAdapter>> {
        let primary = self.agents.is_primary();
        let config = &self.engine.options.file.config;
        if let Some(make) = config
            .output_adapter
            .as_ref()
            .filter(|_| primary)
            .and_then(|name| self.engine.named_adapters.get_mut(name))
        {
            return Some(make());
        }
        let choose = self.engine.adapter.as_mut()?;
        let output = config.output.filter(|_| primary).map(OutputFormat::name);
        choose(&crate::engine::AgentLine {
            argv: self.agents.argv(),
            output,
        })
    }

    pub(super) async fn run_agent(
        &mut self,
        iteration: u64,
        prompt: String,
        log: &mut IterationLog,
    ) -> Result<(ProcessExit, Vec<Finding>, Option<Usage>, AgentWords), EngineError> {
        let (mut adapter, extra_args, format) = match self.embedders_adapter() {
            Some(adapter) => (adapter, Vec::new(), None),
            None => {
                let choice = self.builtin_output();
                let mut extra_args = choice.extra_args.clone();
                extra_args.extend(self.max_turns_args());
                (choice.adapter(), extra_args, Some(choice.format))
            }
        };
        let mut completion = self
            .engine
            .options
            .file
            .config
            .completion_text()
            .map(|text| SignalMatcher::new(text.as_bytes()));
        let mut watched = signal::Watched::new(&mut *adapter, completion.as_mut());
        let mut prompt_file = None;
        let mut prompt_warning = None;
        let (mut words, uses_argv) = agent_words(self.agents.argv(), &prompt, || {
            let (path, warning) = self.write_prompt_file(iteration, &prompt);
            prompt_warning = warning;
            prompt_file.insert(path).clone()
        });
        if let Some(warning) = prompt_warning {
            self.warn(WarningKind::NotWritten, warning);
        }
        words.extend(extra_args);
        let Some((program, args)) = words.split_first() else {
            return Err(EngineError::EmptyAgent);
        };
        let mut spec = ProcessSpec {
            program: program.clone(),
            args: args.to_vec(),
            cwd: self.engine.options.cwd.clone(),
            env: self.env(iteration),
            env_remove: self.env_remove(),
            stdin: (!uses_argv).then(|| Arc::from(prompt.into_bytes())),
            timeout: self.settings.timeout,
            idle_timeout: self.settings.idle_timeout,
            kill_grace: self.engine.options.kill_grace,
            child_setup: None,
        };
        self.confine(&mut spec);
        // The log keeps the agent's output as it came; its header names the built-in format it
        // is in, so a reader (`ralph watch`) can show it as the terminal did.
        log.section(&match format {
            Some(format) if format != OutputFormat::Text => format!("agent ({})", format.name()),
            _ => "agent".to_owned(),
        });
        let pty = self.settings.pty;
        // On a terminal, colours or cursor moves inside a marker must not hide it.
        let mut scanners = match pty {
            Some(_) => [
                MarkerScanner::skipping_ansi(),
                MarkerScanner::skipping_ansi(),
            ],
            None => [MarkerScanner::new(), MarkerScanner::new()],
        };
        let mut collector = Collector {
            iteration,
            output: None,
            log,
            sinks: &mut self.engine.sinks,
            run_id: &self.engine.options.run_id,
            agent: Some(AgentReader {
                adapter: &mut watched,
                scanners: &mut scanners,
                findings: Vec::new(),
                tail: Tail::new(FAILURE_TAIL_BYTES),
                answer: Tail::growing(ANSWER_BYTES),
                retries: AgentRetries::new(self.settings.failure.max_consecutive),
            }),
            interrupts: &mut self.interrupts,
        };
        let result = match pty {
            Some(pty) => {
                let signals = &mut self.engine.signals;
                let mode = match pty.mode {
                    ralph_frontmatter::PtyMode::Autonomous => pty::PtyMode::Autonomous,
                    ralph_frontmatter::PtyMode::Interactive => pty::PtyMode::Interactive,
                };
                pty::run(
                    &spec,
                    mode,
                    &mut self.engine.terminal,
                    &mut collector,
                    signals,
                )
                .await
            }
            None => process::run(&spec, &mut collector, &mut self.engine.signals).await,
        };
        let (mut findings, tail, mut answer, mut retries) = collector
            .agent
            .map(|a| (a.findings, a.tail, a.answer, a.retries))
            .unwrap_or_else(|| {
                let none = || Tail::new(0);
                (Vec::new(), none(), none(), AgentRetries::default())
            });
        let usage = watched.finish(&mut AgentOutput {
            iteration,
            sinks: &mut self.engine.sinks,
            run_id: &self.engine.options.run_id,
            scanners: &mut scanners,
            findings: &mut findings,
            answer: &mut answer,
            retries: &mut retries,
        });
        let tail = tail.into_text().0;
        let words = AgentWords {
            reported_error: adapter.reported_error(),
            rate_limit: adapter.rate_limit(&tail, SystemTime::now()),
            tail,
            not_started: None,
            retries,
            answer: answer.into_text().0,
        };
        for scanner in &mut scanners {
            scanner.finish(&mut findings);
        }
        if completion.as_ref().is_some_and(SignalMatcher::found) {
            findings.push(signal::done_finding());
        }
        if let Some(path) = prompt_file {
            if self.engine.options.log_dir.is_none() {
                let _ = std::fs::remove_file(path);
            }
        }
        // The agent's refused connections, in its log too (`ralph logs`).
        self.report_denials(iteration, Some(log));
        let exit = result.map_err(|cause| EngineError::AgentSpawn {
            program: program.clone(),
            cause,
        })?;
        Ok((exit, findings, usage, words))
    }
}
