//! One iteration: commands, prompt, agent, markers, checks, state and task decisions, and what
//! the loop does next.

use std::collections::BTreeMap;
use std::time::SystemTime;

use ralph_frontmatter::{PtyConfig, PtyMode};
use ralph_marker::Finding;
use tokio::time::Instant;

use super::failure::{AgentWords, Failure, Limits, failure_of};
use super::step::{self, IterationFacts};
use super::{AgentRun, EngineError, Next, Run};
use crate::convergence::{Attempts, Verdict};
use crate::event::{EventKind, MarkerRecord, Termination, WarningKind};
use crate::logs::IterationLog;
use crate::outcome::EndReason;
use crate::state::{Facts, Requests, StateDecision, millis};
use crate::task::{AgentEnd, AttemptReport, TaskDecision};
use ralph_agents::Usage;
use ralph_process::ProcessExit;

/// PTY mode: how the agent's ending ends the loop, if it does. Silence is a safety stop when no
/// one is at the keyboard and the end of the iteration when someone is; an agent killed by a
/// signal ralph did not send (the user's `kill`) stops the loop as an interrupt.
fn pty_stop(pty: PtyConfig, termination: Termination) -> Option<EndReason> {
    match (pty.mode, termination) {
        (PtyMode::Autonomous, Termination::IdleTimeout) => Some(EndReason::PtyIdleTimeout),
        (_, Termination::Killed | Termination::Interrupted) => Some(EndReason::Interrupted),
        _ => None,
    }
}

/// What the agent stage gives the rest of an iteration.
struct AgentResult {
    exit: ProcessExit,
    findings: Vec<Finding>,
    usage: Option<Usage>,
    words: AgentWords,
    /// An agent that could not start and never ran: the run ends after this iteration's events.
    fatal: Option<EngineError>,
}

impl Run {
    /// One iteration, stage by stage: its log, `commands` and the prompt, the agent, the
    /// `ITERATION_ENDED` report, then the checks, the state handlers and the task source decide
    /// what follows.
    pub(super) async fn iteration(&mut self, iteration: u64) -> Result<Next, EngineError> {
        let mut log = self.start_iteration(iteration);
        let Some(prompt) = self.prepare_prompt(iteration, &mut log).await else {
            log.flush();
            return Ok(Next::Continue);
        };
        let AgentResult {
            exit,
            findings,
            usage,
            words,
            fatal,
        } = self.agent_stage(iteration, prompt, &mut log).await;
        let state = ralph_marker::last_state(&findings).cloned();
        // A state with a handler (idle, say) is not an attempt: its handler decides the wait.
        // Nor is one the task source gives a meaning (story mode's `ask`): checks that pass
        // would otherwise end the run while the source waits.
        let handled = state.as_ref().is_some_and(|m| {
            self.engine.handlers.takes_iteration(&m.name) || self.tasks.handles_state(&m.name)
        });
        let checks_judge = self.attempts.is_some() && !handled;
        self.agent_run = self.judge_agent_run(&exit, &words, checks_judge);
        let usage = self.count_usage(usage);
        self.report_iteration(
            iteration,
            &exit,
            findings,
            state.as_ref(),
            usage.as_ref(),
            &mut log,
        );
        if let Some(err) = fatal {
            return Err(err);
        }

        if exit.termination == Termination::Interrupted {
            return Ok(Next::Stop(EndReason::Interrupted));
        }
        if let Some(reason) = self
            .settings
            .pty
            .and_then(|pty| pty_stop(pty, exit.termination))
        {
            return Ok(Next::Stop(reason));
        }
        let attempt = match checks_judge {
            true => Some(self.attempt(iteration, &exit, &mut log).await),
            false => None,
        };
        let verdict = attempt.as_ref().map(|(verdict, _)| *verdict);
        let decision = self.decide_state(iteration, verdict, state.as_ref()).await;
        let failed = self.agent_run.failure.is_some();
        if self.interrupts.stop_now.is_none() && !matches!(decision, StateDecision::Stop(_)) {
            let report = attempt.as_ref().map(|(verdict, results)| AttemptReport {
                results,
                converged: *verdict == Verdict::Converged,
                exhausted: *verdict == Verdict::Exhausted,
            });
            let next = self.task_step(
                iteration,
                &exit,
                usage.as_ref(),
                state.as_ref(),
                report,
                &words,
            );
            if let Some(next) = next {
                return Ok(next);
            }
        }
        Ok(step::iteration_step(IterationFacts {
            verdict,
            decision,
            stop_now: self.interrupts.stop_now.is_some(),
            stop_on_error: self.engine.options.stop_on_error,
            failed,
        }))
    }

    /// `ITERATION_STARTED`, and the iteration's log.
    fn start_iteration(&mut self, iteration: u64) -> IterationLog {
        self.emit(EventKind::IterationStarted {
            iteration,
            task: self.tasks.fields(),
        });
        let mut log = match &self.engine.options.log_dir {
            Some(dir) => IterationLog::create(&mut self.spare_files, dir, iteration),
            None => IterationLog::disabled(),
        };
        if let Some(warning) = log.take_warning() {
            self.warn(WarningKind::NotWritten, warning);
        }
        log
    }

    /// Runs `commands` and renders the prompt with their output (its copy kept in the log
    /// folder); `None` when an interrupt stopped the commands.
    async fn prepare_prompt(&mut self, iteration: u64, log: &mut IterationLog) -> Option<String> {
        let mut outputs = BTreeMap::new();
        let commands = self.engine.options.file.config.commands.clone();
        for command in &commands {
            let output = self.run_command(iteration, command, log).await.output;
            outputs.insert(command.name.clone(), output);
            if self.interrupts.stop_now.is_some() {
                return None;
            }
        }
        let prompt = self.prompt(iteration, &outputs);
        // Said once: the next prompt is without it.
        self.prompt_note = None;
        let warning = match self.engine.options.log_dir.as_deref() {
            Some(dir) => self
                .prompt_copies
                .write(&mut self.spare_files, dir, iteration, &prompt),
            None => None,
        };
        if let Some(warning) = warning {
            self.warn(WarningKind::NotWritten, warning);
        }
        Some(prompt)
    }

    /// Runs the agent on `prompt`. An agent that cannot start is a failed run with its reason
    /// when it ran before in this run (its program went missing), else fatal.
    async fn agent_stage(
        &mut self,
        iteration: u64,
        prompt: String,
        log: &mut IterationLog,
    ) -> AgentResult {
        let agent_start = Instant::now();
        let ran = self.run_agent(iteration, prompt, log).await;
        // A write failure of the commands' or the agent's output, said once.
        if let Some(warning) = log.take_warning() {
            self.warn(WarningKind::NotWritten, warning);
        }
        match ran {
            Ok((exit, findings, usage, words)) => {
                self.agent_started = true;
                AgentResult {
                    exit,
                    findings,
                    usage,
                    words,
                    fatal: None,
                }
            }
            Err(err) => {
                let exit = ProcessExit {
                    exit_code: None,
                    signal: None,
                    duration: agent_start.elapsed(),
                    termination: Termination::Natural,
                };
                let words = AgentWords {
                    not_started: Some(err.to_string()),
                    ..AgentWords::default()
                };
                // The agent ran before: its program went missing (an update replacing it,
                // say), which may pass: a failed run like any other.
                let passing = self.agent_started && matches!(err, EngineError::AgentSpawn { .. });
                AgentResult {
                    exit,
                    findings: Vec::new(),
                    usage: None,
                    words,
                    fatal: (!passing).then_some(err),
                }
            }
        }
    }

    /// Takes the agent run's reported usage into the run's tally and cost: its own share of a
    /// session's running totals, a cost no run can have left out.
    fn count_usage(&mut self, usage: Option<Usage>) -> Option<Usage> {
        let mut usage = usage.map(|usage| self.tally.agent_session_tokens.own_share(usage));
        // A cost below zero (or not a number) would lower the run's total and let it run past
        // `max_cost`: it is not counted, nor written into ITERATION_ENDED.
        if let Some(usage) = usage.as_mut() {
            if let Some(cost) = usage.cost_usd.filter(|c| c.is_nan() || *c < 0.0) {
                usage.cost_usd = None;
                self.warn(
                    WarningKind::Agent,
                    format!(
                        "the agent reported a cost of {cost} USD, which no run can cost; it is not \
                     counted (run cost, max_cost)"
                    ),
                );
            }
        }
        if let Some(usage) = &usage {
            self.run_cost.record(usage);
            self.agents.record(usage);
            self.tally.add_usage(usage, self.run_cost.total());
        }
        usage
    }

    /// The iteration's end in its log and as `ITERATION_ENDED` (malformed markers warned of).
    fn report_iteration(
        &mut self,
        iteration: u64,
        exit: &ProcessExit,
        findings: Vec<Finding>,
        state: Option<&ralph_marker::Marker>,
        usage: Option<&Usage>,
        log: &mut IterationLog,
    ) {
        let mut markers = Vec::new();
        let mut malformed = Vec::new();
        for finding in findings {
            match finding {
                Finding::Marker(m) => markers.push(MarkerRecord::new(m.kind, m.name, m.attrs)),
                Finding::Diagnostic(d) => malformed.push(d),
            }
        }
        for d in &malformed {
            self.warn(
                WarningKind::MalformedMarker,
                format!(
                    "iteration {iteration}: malformed marker at byte {}: {}",
                    d.offset, d.message
                ),
            );
        }
        let state_name = state.map(|m| m.name.clone());
        log.section(&format!(
            "end: {}, state {}, {} ms",
            match (exit.exit_code, exit.signal) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(signal)) => format!("exit signal {signal}"),
                (None, None) => "not started".to_owned(),
            },
            state_name.as_deref().unwrap_or("none"),
            exit.duration.as_millis()
        ));
        log.flush();
        self.emit(EventKind::IterationEnded {
            iteration,
            exit_code: exit.exit_code,
            signal: exit.signal,
            duration_ms: millis(exit.duration),
            timed_out: exit.timed_out(),
            termination: exit.termination,
            state: state_name,
            markers,
            log_file: log.path().map(|p| p.display().to_string()),
            usage: usage.cloned(),
            failed: self.agent_run.failure.is_some(),
            failure: self.agent_run.failure.as_ref().map(ToString::to_string),
            failure_kind: self.agent_run.failure.as_ref().map(Failure::kind),
        });
    }

    /// The state handlers' decision on the iteration's state, with the checks' `verdict`: it
    /// counts the idle iteration, sets the wait or the hold that follows, and carries out what
    /// the handler asked for.
    async fn decide_state(
        &mut self,
        iteration: u64,
        verdict: Option<Verdict>,
        state: Option<&ralph_marker::Marker>,
    ) -> StateDecision {
        let mut events = Vec::new();
        let checks_passed = verdict.map(|v| v == Verdict::Converged);
        let facts = Facts {
            iteration,
            elapsed: self.elapsed(),
            checks_passed,
            task: self.tasks.current_id(),
        };
        let mut requests = Requests::default();
        if let Some(name) = state.map(|m| m.name.as_str()) {
            if self.tasks.handles_state(name) {
                self.engine.handlers.handled_elsewhere(name);
            }
        }
        let decision = self
            .engine
            .handlers
            .decide(facts, state, &mut events, &mut requests);
        if self.engine.handlers.counts_as_idle(state, &decision) {
            self.tally.idle_iterations += 1;
        }
        self.state_wait = match &decision {
            StateDecision::Wait(wait) => Some(*wait),
            _ => None,
        };
        // A failed run holds nothing: the failure policy decides what follows it.
        self.holding = match (&decision, state) {
            (StateDecision::Hold(hold), Some(marker)) if self.agent_run.failure.is_none() => {
                Some((marker.clone(), hold.clone()))
            }
            _ => None,
        };
        events.into_iter().for_each(|e| self.emit(e));
        self.state_requests(iteration, checks_passed, state, requests)
            .await;
        decision
    }

    /// The task source's step after the iteration: `Some` when it decides what follows (the
    /// next task, or an ending), `None` when the loop's own rules do.
    fn task_step(
        &mut self,
        iteration: u64,
        exit: &ProcessExit,
        usage: Option<&Usage>,
        state: Option<&ralph_marker::Marker>,
        report: Option<AttemptReport<'_>>,
        words: &AgentWords,
    ) -> Option<Next> {
        let agent = AgentEnd {
            exit_code: exit.exit_code,
            failure: self.agent_run.failure.as_ref(),
            termination: exit.termination,
            duration: exit.duration,
            usage,
        };
        let mut events = Vec::new();
        let task = self
            .tasks
            .ended(iteration, agent, state, report, &words.answer, &mut events);
        events.into_iter().for_each(|e| self.emit(e));
        match task {
            TaskDecision::Continue => None,
            TaskDecision::NextTask => {
                // A new task starts with fresh attempts.
                let config = &self.engine.options.file.config;
                self.attempts = (!config.done_when.is_empty())
                    .then(|| Attempts::new(config.convergence.clone()));
                Some(Next::Continue)
            }
            TaskDecision::Stop(reason) => Some(Next::Stop(reason)),
        }
    }

    /// Whether an agent run failed, and why, or says it is rate-limited until a known time.
    /// When `done_when` checks judge the iteration, how the agent ended (its exit code, a
    /// signal, a timeout, an error it reported) is only logged: an agent that could not start
    /// and a rate limit are still failures, since no work was attempted.
    pub(super) fn judge_agent_run(
        &self,
        exit: &ProcessExit,
        words: &AgentWords,
        checks_judge: bool,
    ) -> AgentRun {
        let limits = Limits {
            timeout: self.settings.timeout,
            // On a terminal silence is how an agent's turn ends, not a failure.
            silence: self
                .settings
                .idle_timeout
                .filter(|_| self.settings.pty.is_none()),
        };
        let Some(failure) = failure_of(exit, words, limits) else {
            return AgentRun::default();
        };
        // The adapter's verdict: the engine reads no agent's words for a rate limit itself.
        match words.rate_limit {
            Some(limit) => match limit.reset {
                Some(until) if until > SystemTime::now() => AgentRun {
                    failure: None,
                    rate_limited_until: Some(until),
                    rate_limit_words: failure.to_string(),
                    fallback: None,
                },
                // No reset time to wait for, or one already past (the agent still refused after
                // the reset it gave, or gave one late): back off as for a failure.
                Some(until) => AgentRun {
                    failure: Some(Failure::RateLimited {
                        reset: Some(until),
                        cause: Box::new(failure),
                    }),
                    ..AgentRun::default()
                },
                None => AgentRun {
                    failure: Some(Failure::RateLimited {
                        reset: None,
                        cause: Box::new(failure),
                    }),
                    ..AgentRun::default()
                },
            },
            None if checks_judge && words.not_started.is_none() => AgentRun::default(),
            None => AgentRun {
                failure: Some(failure),
                ..AgentRun::default()
            },
        }
    }
}
