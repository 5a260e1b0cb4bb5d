//! [`EngineOptions`]: what a run needs, and ralph's defaults for what the file leaves out.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use ralph_backoff::FailurePolicy;
use ralph_frontmatter::{PtyConfig, RalphFile, Vocabulary};

/// Everything a run needs, with the frontmatter's values already merged with any overrides.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineOptions {
    /// The RALPH.md path as the user gave it.
    pub ralph_file: PathBuf,
    /// The parsed file.
    pub file: RalphFile,
    /// The plugs' words the file was parsed with ([`ralph_frontmatter::parse_with`]): a
    /// `reload` parses the edited file with them too. The default has none, as
    /// [`ralph_frontmatter::parse`].
    pub vocabulary: Vocabulary,
    /// Where the agent and most commands run.
    pub cwd: PathBuf,
    /// User argument values by name.
    pub args: BTreeMap<String, String>,
    /// Iteration cap, over the whole run. With `resume`, the session's
    /// ([`Session::max_iterations`](crate::session::Session::max_iterations)) unless the user
    /// gave another.
    pub max_iterations: Option<u64>,
    /// Wait between iterations.
    pub delay: Duration,
    /// Per agent run time limit.
    pub timeout: Option<Duration>,
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
    /// Run the agent on a pseudo-terminal (`pty` in the frontmatter, `--pty`); `None` pipes.
    pub pty: Option<PtyConfig>,
    /// Linux: make this process a child subreaper for the run and, when an iteration ends,
    /// end every process the iteration started that still runs, even one that left the
    /// agent's process group (a daemon started with `setsid`): SIGTERM, SIGKILL after
    /// `kill_grace`, then reaped. On by default. Turn it off in a program that starts
    /// processes of its own while a run is under way (they would be taken for the
    /// iteration's), or that must not become a subreaper. Other platforms ignore it: there,
    /// only the process group of each agent, command and check is killed.
    pub subreaper: bool,
    /// Backoff after failed agent runs, and how many in a row end the loop (`failure`).
    pub failure: FailurePolicy,
    /// Longest wait for a rate limit's reset (`rate_limit.max_wait`).
    pub rate_limit_max_wait: Duration,
    /// Start no iteration once the agents' reported cost reached this many US dollars.
    /// With `resume`, the session's unless the user gave another, as `max_iterations`.
    pub max_cost: Option<f64>,
    /// Start no iteration or wait once the run has lasted this long; a wait is cut short.
    /// With `resume`, the session's unless the user gave another, as `max_iterations`.
    pub max_runtime: Option<Duration>,
    /// Go on with a stopped run from its session file (`ralph run --resume`): same run id and
    /// log folder expected, iteration numbers, streaks, attempts, budgets and the task
    /// source's state taken up where it stopped, the interrupted wait's remainder waited.
    pub resume: Option<crate::session::Session>,
    /// With `resume`: skip what is left of the interrupted wait.
    pub resume_now: bool,
    /// What the embedder found wrong before the run (RALPH.md's own warnings, say): each is a
    /// `WARNING` event right after `RUN_STARTED`, so every sink has it.
    pub warnings: Vec<String>,
}

impl EngineOptions {
    /// Options taken from the file, with ralph's defaults for the rest: run from the current
    /// directory, no logs, a fresh run id.
    pub fn new(ralph_file: impl Into<PathBuf>, file: RalphFile) -> Self {
        let config = &file.config;
        Self {
            ralph_file: ralph_file.into(),
            max_iterations: config.max_iterations,
            delay: config.delay,
            timeout: config.timeout,
            pty: config.pty,
            failure: config.failure,
            rate_limit_max_wait: config.rate_limit.max_wait,
            max_cost: config.max_cost,
            max_runtime: config.max_runtime,
            file,
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
