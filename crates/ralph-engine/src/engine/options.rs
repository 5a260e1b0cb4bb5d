//! [`EngineOptions`]: what a run needs, and ralph's defaults for what the file leaves out;
//! [`Overrides`]: the settings a command line gives over the file's; `Settings`: the two met,
//! in one place, as a run starts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use ralph_backoff::FailurePolicy;
use ralph_frontmatter::{PtyConfig, RalphFile, Vocabulary};

/// Everything a run needs: the parsed file, which owns every setting it can say
/// (`file.config.max_iterations`, `delay`, `timeout`, `pty`, `failure`, `rate_limit`,
/// `max_cost`, `max_runtime`, ...), the command line's [`Overrides`] of some of them, and
/// what the file cannot say (where to run, the log folder, the run id).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineOptions {
    /// The RALPH.md path as the user gave it.
    pub ralph_file: PathBuf,
    /// The parsed file: its `config` is where the run's settings come from, unless
    /// `overrides` has another.
    pub file: RalphFile,
    /// Settings given over the file's (the command line's `-n`, `--delay`, ...).
    pub overrides: Overrides,
    /// The plugs' words the file was parsed with ([`ralph_frontmatter::parse_with`]): a
    /// `reload` parses the edited file with them too. The default has none, as
    /// [`ralph_frontmatter::parse`].
    pub vocabulary: Vocabulary,
    /// Where the agent and most commands run.
    pub cwd: PathBuf,
    /// User argument values by name.
    pub args: BTreeMap<String, String>,
    /// End the loop (exit 1) when the agent fails or times out.
    pub stop_on_error: bool,
    /// The run's log folder; `None` writes no logs.
    pub log_dir: Option<PathBuf>,
    /// The run's id, in every event.
    pub run_id: String,
    /// Default time limit of a command without its own `timeout`.
    pub command_timeout: Duration,
    /// Time between SIGTERM and SIGKILL when ralph stops a process.
    pub kill_grace: Duration,
    /// Re-read `ralph_file` before every iteration after the first, so edits made while the
    /// loop runs take effect: the prompt, agent, commands and checks are reloaded; limits set
    /// at start (iterations, delay, timeout, idle, failure, rate limit, budgets) stay. An
    /// invalid edit is reported and the previous version kept.
    pub reload: bool,
    /// Linux: make this process a child subreaper for the run and, when an iteration ends,
    /// end every process the iteration started that still runs, even one that left the
    /// agent's process group (a daemon started with `setsid`): SIGTERM, SIGKILL after
    /// `kill_grace`, then reaped. On by default. Turn it off in a program that starts
    /// processes of its own while a run is under way (they would be taken for the
    /// iteration's), or that must not become a subreaper. Other platforms ignore it: there,
    /// only the process group of each agent, command and check is killed.
    pub subreaper: bool,
    /// Go on with a stopped run from its session file (`ralph run --resume`): same run id and
    /// log folder expected, iteration numbers, streaks, attempts, budgets and the task
    /// source's state taken up where it stopped, the interrupted wait's remainder waited. Its
    /// limits (`max_iterations`, `max_cost`, `max_runtime`) are the run's, unless `overrides`
    /// has another.
    pub resume: Option<crate::session::Session>,
    /// With `resume`: skip what is left of the interrupted wait.
    pub resume_now: bool,
    /// What the embedder found wrong before the run (RALPH.md's own warnings, say), each with
    /// its kind: a `WARNING` event right after `RUN_STARTED`, so every sink has it.
    pub warnings: Vec<(crate::WarningKind, String)>,
    /// Hold `cwd` for the run as `ralph run` does ([`Engine::claim_folder`] as it starts,
    /// unless a claim was set): set by [`in_folder`](EngineOptions::in_folder). A run refused
    /// the folder ends with [`EngineError::Lock`] before it starts.
    ///
    /// [`Engine::claim_folder`]: crate::Engine::claim_folder
    /// [`EngineError::Lock`]: crate::EngineError::Lock
    pub hold_folder: bool,
}

impl EngineOptions {
    /// Options taken from the file, with ralph's defaults for the rest: run from the current
    /// directory, no logs, a fresh run id.
    pub fn new(ralph_file: impl Into<PathBuf>, file: RalphFile) -> Self {
        Self {
            ralph_file: ralph_file.into(),
            file,
            overrides: Overrides::default(),
            vocabulary: Vocabulary::default(),
            cwd: PathBuf::from("."),
            args: BTreeMap::new(),
            stop_on_error: false,
            log_dir: None,
            run_id: new_run_id(),
            command_timeout: ralph_frontmatter::schema::default_command_timeout(),
            kill_grace: Duration::from_secs(3),
            reload: false,
            subreaper: true,
            resume: None,
            resume_now: false,
            warnings: Vec::new(),
            hold_folder: false,
        }
    }
}

/// Settings given over the file's, as a command line gives them: each one set beats the
/// file's value and, on [`EngineOptions::resume`], the stopped run's limits.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Overrides {
    /// Iteration cap over the whole run (`-n`).
    pub max_iterations: Option<u64>,
    /// Wait between iterations (`--delay`).
    pub delay: Option<Duration>,
    /// Time limit of one agent run (`--timeout`).
    pub timeout: Option<Duration>,
    /// Cost budget in US dollars (`--max-cost`).
    pub max_cost: Option<f64>,
    /// Runtime budget (`--max-runtime`).
    pub max_runtime: Option<Duration>,
    /// The pseudo-terminal to run the agent on (`--pty`, `-i`).
    pub pty: Option<PtyConfig>,
    /// How long an agent run may print nothing (`--idle-timeout`); zero: no limit.
    pub idle_timeout: Option<Duration>,
}

/// A run's settings, fixed as it starts (a reload of the file changes none of them): the
/// file's, with each override applied. The one place the file, the overrides, a stopped run's
/// limits and the task source's default meet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) max_iterations: Option<u64>,
    pub(crate) delay: Duration,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_cost: Option<f64>,
    pub(crate) max_runtime: Option<Duration>,
    /// `None` pipes.
    pub(crate) pty: Option<PtyConfig>,
    /// How long an agent run may print nothing; `None`: no limit (`idle_timeout: 0`).
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) failure: FailurePolicy,
    pub(crate) rate_limit_max_wait: Duration,
}

impl Settings {
    /// `options`' settings; `task_default` is the task source's `max_iterations` for a file
    /// that sets none ([`TaskSource::default_max_iterations`](crate::TaskSource::default_max_iterations)).
    pub(crate) fn of(options: &EngineOptions, task_default: Option<u64>) -> Self {
        let config = &options.file.config;
        let over = &options.overrides;
        // A stopped run's limits are its own, whatever the file says now.
        let limits = match &options.resume {
            Some(stopped) => (
                stopped.max_iterations,
                stopped.max_cost_usd,
                stopped.max_runtime_ms.map(Duration::from_millis),
            ),
            None => (
                config.max_iterations.or(task_default),
                config.max_cost,
                config.max_runtime,
            ),
        };
        let pty = over.pty.or(config.pty);
        let idle_timeout = over
            .idle_timeout
            .or(config.idle_timeout)
            .unwrap_or_else(|| ralph_frontmatter::Config::default_idle_timeout(pty.is_some()));
        Self {
            max_iterations: over.max_iterations.or(limits.0),
            delay: over.delay.unwrap_or(config.delay),
            timeout: over.timeout.or(config.timeout),
            max_cost: over.max_cost.or(limits.1),
            max_runtime: over.max_runtime.or(limits.2),
            pty,
            idle_timeout: (!idle_timeout.is_zero()).then_some(idle_timeout),
            failure: config.failure,
            rate_limit_max_wait: config.rate_limit.max_wait,
        }
    }
}

/// A run id: the UTC start time to the millisecond and the process id (`20261126T201500123-1f2a`),
/// then, for a second id the same process makes within the same millisecond, a sequence number
/// (`…-1f2a-001`). Unique on one machine, across processes and within one, and sorted by time
/// as strings.
pub fn new_run_id() -> String {
    /// The last millisecond an id was made in, and how many ids it has had.
    static LAST: std::sync::Mutex<(String, u32)> = std::sync::Mutex::new((String::new(), 0));
    let ts = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let compact: String = ts.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let compact = compact.trim_end_matches('Z');
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A clock stepped back repeats an earlier millisecond: keep counting rather than reuse it.
    if last.0.as_str() < compact {
        *last = (compact.to_owned(), 0);
    } else {
        last.1 += 1;
    }
    let (ts, n) = (&last.0, last.1);
    match n {
        0 => format!("{ts}-{:x}", std::process::id()),
        n => format!("{ts}-{:x}-{n:03}", std::process::id()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_made_back_to_back_are_unique_and_sorted_in_the_order_they_were_made() {
        let ids: Vec<String> = (0..1000).map(|_| new_run_id()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "every id is unique");
        assert_eq!(sorted, ids, "string order is creation order");
        let pid = format!("-{:x}", std::process::id());
        assert!(ids.iter().all(|id| id.contains(&pid)), "{ids:?}");
    }

    #[test]
    fn run_ids_from_many_threads_are_unique() {
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(|| (0..250).map(|_| new_run_id()).collect::<Vec<_>>()))
            .collect();
        let mut ids: Vec<String> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 1000);
    }
}
