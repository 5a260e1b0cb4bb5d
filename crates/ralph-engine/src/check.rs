//! One `done_when` check run outside a loop, for a program that judges work the loop did not
//! just do (a merge queue checking a merged result), with the loop's own rules: `sh -c` in its
//! own process group, `convergence.check_timeout`, the last 4 KiB of a failure's output kept.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::convergence;
use crate::event::CheckResult;
use crate::outcome::InterruptSignal;
use crate::state::millis;
use crate::tail::Tail;
use ralph_process::{self as process, Stream, Supervision};

/// Keeps the tail; an interrupt stops the check (the caller decided to stop).
struct TailOnly(Tail);

impl Supervision for TailOnly {
    fn output(&mut self, _stream: Stream, bytes: &[u8]) {
        self.0.push(bytes);
    }

    fn interrupt(&mut self, _signal: InterruptSignal) -> bool {
        true
    }
}

/// Runs `check` through `sh -c` in `cwd` to its end (or `timeout`; SIGTERM, then SIGKILL after
/// `kill_grace`), as the loop runs a `done_when` check, without the variables `env_remove`
/// names ([`withheld_env`](crate::withheld_env)). An interrupt sent on `stop` ends it now. A check that cannot start fails with no exit code, its reason as its tail. The check
/// holds the watchdog while it runs, so a ralph killed meanwhile takes it along, and a loop
/// of the same process that ends meanwhile (its handle the last) does not.
pub async fn run_check(
    check: &str,
    cwd: PathBuf,
    timeout: Duration,
    kill_grace: Duration,
    env_remove: &[String],
    stop: &mut mpsc::UnboundedReceiver<InterruptSignal>,
) -> CheckResult {
    // The watchdog ends when its last holder lets go and kills every group it knows, this
    // check's too: without a handle of its own, the end of the last lane would kill it.
    let _containment = process::Containment::start(false);
    let mut spec = process::ProcessSpec::shell(check, cwd, kill_grace);
    spec.timeout = Some(timeout);
    spec.env_remove = env_remove.to_vec();
    let mut tail = TailOnly(Tail::new(convergence::TAIL_BYTES));
    let result = process::run(&spec, &mut tail, stop).await;
    let (text, truncated) = tail.0.into_text();
    let (exit_code, duration, timed_out, text) = match result {
        Ok(exit) => (exit.exit_code, exit.duration, exit.timed_out(), text),
        Err(err) => (
            None,
            Duration::ZERO,
            false,
            format!("sh could not start: {err}"),
        ),
    };
    let passed = exit_code == Some(0) && !timed_out;
    CheckResult {
        command: check.to_owned(),
        exit_code,
        duration_ms: millis(duration),
        tail: (!passed).then_some(text),
        truncated: !passed && truncated,
        timed_out,
    }
}
