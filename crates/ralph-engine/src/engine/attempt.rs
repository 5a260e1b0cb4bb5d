//! `done_when`: the checks after an agent run, the attempt they make, and its log.

use std::io::Write as _;
use std::time::Duration;

use tokio::time::Instant;

use super::supervise::TailCollector;
use super::{Run, spawn_problem};
use crate::convergence::{self, Verdict};
use crate::event::{CheckResult, EventKind, WarningKind};
use crate::logs::{self, IterationLog};
use crate::state::millis;
use crate::tail::Tail;
use ralph_process::{self as process, ProcessExit, ProcessSpec};

impl Run {
    /// Runs the `done_when` checks after an agent run and records the attempt.
    pub(super) async fn attempt(
        &mut self,
        iteration: u64,
        agent: &ProcessExit,
        log: &mut IterationLog,
    ) -> (Verdict, Vec<CheckResult>) {
        let started = Instant::now();
        let checks = self.engine.options.file.config.done_when.clone();
        let mut results = Vec::with_capacity(checks.len());
        for check in &checks {
            results.push(self.run_check(iteration, check).await);
            if self.interrupts.stop_now.is_some() {
                break;
            }
        }
        let attempts = self
            .attempts
            .as_mut()
            .expect("attempt runs only with done_when");
        let attempt = attempts.next_attempt();
        let backoff = attempts.backoff_before_next();
        let verdict = attempts.record(&results);
        let ok = verdict == Verdict::Converged;
        let max_attempts = attempts.max_attempts();
        self.write_attempt_log(agent, log, &results, ok, attempt, max_attempts);
        // After the attempt log took its copy: the iteration's log ends with its checks, so
        // `ralph logs` shows why one failed.
        for result in &results {
            log.section(&format!("check `{}`: {}", result.command, result.status()));
            if let Some(tail) = &result.tail {
                log.write(tail.as_bytes());
            }
        }
        log.flush();
        if let Some(warning) = log.take_warning() {
            self.warn(WarningKind::NotWritten, warning);
        }
        self.emit(EventKind::AttemptEnded {
            attempt,
            max_attempts,
            iteration,
            duration_ms: millis(agent.duration + started.elapsed()),
            ok,
            results: results.clone(),
            backoff_ms: backoff.map(millis),
        });
        (verdict, results)
    }

    /// Runs `spec` (a check, a state's hook) to its end, keeping the tail of its output.
    pub(super) async fn run_keeping_tail(
        &mut self,
        iteration: u64,
        spec: &ProcessSpec,
    ) -> (std::io::Result<ProcessExit>, Tail) {
        let mut collector = TailCollector {
            tail: Tail::new(convergence::TAIL_BYTES),
            iteration,
            sinks: &mut self.engine.sinks,
            run_id: &self.engine.options.run_id,
            interrupts: &mut self.interrupts,
        };
        let result = process::run(spec, &mut collector, &mut self.engine.signals).await;
        (result, collector.tail)
    }

    pub(super) async fn run_check(&mut self, iteration: u64, check: &str) -> CheckResult {
        let mut spec = ProcessSpec::shell(
            check,
            self.engine.options.cwd.clone(),
            self.engine.options.kill_grace,
        );
        spec.timeout = Some(self.engine.options.file.config.convergence.check_timeout);
        spec.env = self.env(iteration);
        spec.env_remove = self.env_remove();
        self.confine(&mut spec);
        let (result, tail) = self.run_keeping_tail(iteration, &spec).await;
        let (tail, truncated) = tail.into_text();
        let (exit_code, duration, timed_out) = match result {
            Ok(exit) => (exit.exit_code, exit.duration, exit.timed_out()),
            Err(err) => {
                let problem = spawn_problem("sh", &err);
                self.warn(
                    WarningKind::CheckNotStarted,
                    format!("check `{check}` could not start: {problem}"),
                );
                (None, Duration::ZERO, false)
            }
        };
        let passed = exit_code == Some(0) && !timed_out;
        CheckResult {
            command: check.to_owned(),
            exit_code,
            duration_ms: millis(duration),
            tail: (!passed).then_some(tail),
            truncated: !passed && truncated,
            timed_out,
        }
    }

    /// `<log folder>/main.log`: the latest attempt, replaced whole (temp file, then rename).
    pub(super) fn write_attempt_log(
        &mut self,
        agent: &ProcessExit,
        log: &IterationLog,
        results: &[CheckResult],
        ok: bool,
        attempt: u64,
        max_attempts: u64,
    ) {
        let Some(dir) = &self.engine.options.log_dir else {
            return;
        };
        let path = dir.join(format!("{}.log", self.tasks.log_name()));
        let text = format!(
            "attempt {attempt}/{max_attempts}\nagent exit: {}\n",
            agent.exit_code.map_or_else(
                || format!("signal {}", agent.signal.unwrap_or(0)),
                |c| c.to_string()
            )
        );
        let mut checks = String::new();
        for r in results {
            checks.push_str(&format!("\ncheck `{}`: {}\n", r.command, r.status()));
            if let Some(tail) = &r.tail {
                checks.push_str(tail);
                if !tail.ends_with('\n') {
                    checks.push('\n');
                }
            }
        }
        checks.push_str(if ok {
            "\nverdict: converged\n"
        } else {
            "\nverdict: not converged\n"
        });
        // The iteration's log (commands, then the agent's stdout and stderr as written) is
        // copied in, streamed, so the attempt log stands on its own without holding the output.
        let written = logs::write_copy_with(&path, |out| {
            out.write_all(text.as_bytes())?;
            if let Some(iteration_log) = log.path() {
                writeln!(out, "iteration log: {}", iteration_log.display())?;
                std::io::copy(&mut std::fs::File::open(iteration_log)?, out)?;
            }
            out.write_all(checks.as_bytes())
        });
        if let Err(err) = written {
            self.warn(
                WarningKind::NotWritten,
                format!("cannot write {}: {err}", path.display()),
            );
        }
    }
}
