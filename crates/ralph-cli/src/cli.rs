//! Command-line arguments.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand};
use ralph_frontmatter::{DURATION_SYNTAX, DurationError};

/// Run an AI coding agent in a loop on one prompt file until the work is done: `ralph`'s
/// arguments, which `xtask` also renders as the man pages.
#[derive(Debug, Parser)]
#[command(name = "ralph", version = version(), about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `0.3.0 (commit 1a2b3c4d5e6f)`: the version and the commit it was built from (`build.rs`).
fn version() -> &'static str {
    env!("RALPH_VERSION")
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the loop described by a RALPH.md.
    Run(RunArgs),
    /// Validate a RALPH.md and print its effective configuration; exit 1 when `ralph run`
    /// would refuse to start here (story mode outside git, a dirty tree, no prd.json).
    Check(CheckArgs),
    /// Write a commented RALPH.md template to start from.
    Init(InitArgs),
    /// Print a shell completion script, e.g. `ralph completions bash`.
    Completions(CompletionsArgs),
    /// List the runs of a folder, newest first (`.ralph/runs/`).
    Runs(RunsArgs),
    /// Print a run's iteration logs (the last run by default); `-f` follows a running loop.
    Logs(LogsArgs),
    /// Write a run's report: one self-contained HTML file (timeline, cost, checks, logs).
    Report(ReportArgs),
    /// Show the folder's last run: running or ended, iterations, state, cost, log folder.
    Status(StatusArgs),
    /// Watch a running loop full-screen from another terminal: its loops, the selected one's
    /// live log, cost and time; waits for a run to start when none runs. `q` leaves, the run
    /// goes on.
    Watch(WatchArgs),
    /// List the tasks of the RALPH.md's task list (`tasks:` or `escalation.prd`) in the order
    /// a run takes them: id, title, state, priority, dependencies.
    Tasks(TasksArgs),
    /// Have the RALPH.md's agent write the task list from a spec (`--from SPEC.md`, `-m
    /// "goal"`, or the spec on standard input), or split a task that keeps failing (`--split
    /// ID`): the plan is checked, sent back with its errors at most twice, and only a valid one
    /// is written (added to an existing list, every byte of it kept). See docs/plan.md.
    Plan(PlanArgs),
    /// Send the RALPH.md's `notify` targets a message: `--test` sends one test message to
    /// each webhook and the command, and says how each went (webhooks shown without their
    /// secret part).
    Notify(NotifyArgs),
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// A RALPH.md, or a directory holding one: its agent plans, its task list (`tasks:` or
    /// `escalation.prd`) gets the plan.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,

    /// The spec to plan from, a file (`-` for standard input, the default when it is not a
    /// terminal).
    #[arg(long = "from", value_name = "SPEC", conflicts_with_all = ["message", "split"])]
    pub(crate) from: Option<PathBuf>,

    /// The spec, given as text: the goal in a sentence or a few.
    #[arg(short, long, value_name = "TEXT", conflicts_with = "split")]
    pub(crate) message: Option<String>,

    /// Split task ID, one that keeps failing (blocked), into smaller tasks that take its
    /// place (prd.json lists).
    #[arg(long, value_name = "ID")]
    pub(crate) split: Option<String>,

    /// Print the plan; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Give a new task whose id the list already has a fresh one (the list's prefix, numbered
    /// on), rather than refuse the plan.
    #[arg(long)]
    pub(crate) renumber: bool,

    /// In a git checkout: commit the list once the plan is written.
    #[arg(long, conflicts_with = "dry_run")]
    pub(crate) commit: bool,

    /// `tasks: github`: open the planned issues (without it they are only shown).
    #[arg(long, conflicts_with = "dry_run")]
    pub(crate) apply: bool,

    /// Write the planning run's logs under DIR/RUN_ID/ instead of .ralph/runs/RUN_ID/.
    #[arg(short, long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,

    /// Also write events as JSON Lines to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) events: Option<PathBuf>,

    /// Print only the plan and errors, not the agent's output.
    #[arg(short, long)]
    pub(crate) quiet: bool,

    /// Never colour the output (NO_COLOR is honoured too).
    #[arg(long)]
    pub(crate) no_color: bool,
}

#[derive(Debug, Args)]
pub(crate) struct NotifyArgs {
    /// A RALPH.md, or a directory holding one.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,

    /// Send one test message (required: the only message `ralph notify` sends).
    #[arg(long, required = true)]
    pub(crate) test: bool,
}

#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// The run (an id from `ralph runs`, or a unique prefix); by default the run going on in
    /// the folder, or the next one to start there.
    pub(crate) run_id: Option<String>,

    /// The loop's folder (where `ralph run` runs).
    #[arg(short = 'C', long = "dir", value_name = "DIR", default_value = ".")]
    pub(crate) dir: PathBuf,

    /// The runs folder a `ralph run --log-dir DIR` writes to (relative to the loop's folder),
    /// instead of .ralph/runs/.
    #[arg(long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct TasksArgs {
    /// A RALPH.md, or a directory holding one.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,

    /// Print JSON instead of a table (its shape: docs/tasks.md).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunsArgs {
    /// The loop's folder (where `ralph run` ran).
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,

    /// The runs folder a `ralph run --log-dir DIR` wrote to (relative to the loop's folder),
    /// instead of .ralph/runs/.
    #[arg(long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct LogsArgs {
    /// The run (an id from `ralph runs`, or a unique prefix); the last run by default.
    pub(crate) run_id: Option<String>,

    /// Only this iteration's log (with -f: start from it).
    #[arg(short = 'n', long, value_name = "N")]
    pub(crate) iteration: Option<u64>,

    /// Follow the run as `tail -f` does, across iterations, until it ends.
    #[arg(short, long)]
    pub(crate) follow: bool,

    /// The loop's folder (where `ralph run` ran).
    #[arg(short = 'C', long = "dir", value_name = "DIR", default_value = ".")]
    pub(crate) dir: PathBuf,

    /// The runs folder a `ralph run --log-dir DIR` wrote to (relative to the loop's folder),
    /// instead of .ralph/runs/.
    #[arg(long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The run (an id from `ralph runs`, or a unique prefix); the last run by default.
    pub(crate) run_id: Option<String>,

    /// The HTML file to write (`-` for standard output). A FIFO or a device is written into,
    /// never replaced. By default `report.html` in the run's own folder, which git ignores
    /// (beside the work, a later pass would commit it).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// The loop's folder (where `ralph run` ran).
    #[arg(short = 'C', long = "dir", value_name = "DIR", default_value = ".")]
    pub(crate) dir: PathBuf,

    /// The runs folder a `ralph run --log-dir DIR` wrote to (relative to the loop's folder),
    /// instead of .ralph/runs/.
    #[arg(long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The run (an id from `ralph runs`, or a unique prefix); the folder's last run by default.
    pub(crate) run_id: Option<String>,

    /// The loop's folder (where `ralph run` ran).
    #[arg(short = 'C', long = "dir", value_name = "DIR", default_value = ".")]
    pub(crate) dir: PathBuf,

    /// The runs folder a `ralph run --log-dir DIR` wrote to (relative to the loop's folder),
    /// instead of .ralph/runs/.
    #[arg(long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The folder to write RALPH.md in (created when missing).
    #[arg(default_value = ".")]
    pub(crate) dir: PathBuf,

    /// Replace existing files.
    #[arg(long)]
    pub(crate) force: bool,

    /// Story mode: also write prd.json and progress.txt, and a RALPH.md that works through them.
    #[arg(long)]
    pub(crate) prd: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// A RALPH.md, or a directory holding one.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
}

/// An option given twice takes its last value, as in ralphify (`ralph run x -n 5 "$@"` lets a
/// caller's own `-n` win).
#[derive(Debug, Clone, Args)]
#[command(args_override_self = true, after_help = RUN_EXIT_CODES)]
pub(crate) struct RunArgs {
    /// A RALPH.md, or a directory holding one.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,

    /// Stop after N iterations (overrides `max_iterations`).
    #[arg(short = 'n', long = "max-iterations", value_name = "N", value_parser = text(parse_iterations),
          allow_hyphen_values = true)]
    pub(crate) max_iterations: Option<u64>,

    /// Wait between iterations, e.g. `500ms`, `10s` (overrides `delay`).
    #[arg(short, long, value_name = "DURATION", value_parser = text(parse_duration),
          allow_hyphen_values = true)]
    pub(crate) delay: Option<Duration>,

    /// Kill an agent run after this long, e.g. `30m` (overrides `timeout`).
    #[arg(short, long, value_name = "DURATION", value_parser = text(parse_limit),
          allow_hyphen_values = true)]
    pub(crate) timeout: Option<Duration>,

    /// End the loop with exit code 1 when the agent fails or times out.
    #[arg(short, long)]
    pub(crate) stop_on_error: bool,

    /// Start no iteration once the agents' reported cost reached USD dollars, e.g. `20`
    /// (overrides `max_cost`).
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub(crate) max_cost: Option<f64>,

    /// Start no iteration or wait after the run has lasted this long, e.g. `8h` (overrides
    /// `max_runtime`).
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    pub(crate) max_runtime: Option<Duration>,

    /// With `escalation.revert`: start on a tree with uncommitted changes, after saving them
    /// under refs/ralph/attempts/preexisting/N. The paths changed or untracked at start-up
    /// stay yours: ralph never commits, saves or reverts them (the agent's edits to them
    /// included); they keep their content and what you staged.
    #[arg(long)]
    pub(crate) allow_dirty: bool,

    /// Go on with this folder's last run (or run RUN_ID) where it stopped: same run id and log
    /// folder, iteration numbers, streaks, attempts and budgets carried on.
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "")]
    pub(crate) resume: Option<String>,

    /// Run up to N tasks of the task list (`tasks:` or prd.json) at once, each in a git
    /// worktree of its own
    /// (.ralph/worktrees/ID, branch ralph/ID), landed on the current branch one at a time by a
    /// merge queue that checks each merged result with `done_when` (see docs/parallel.md).
    /// With --resume: go on with this repository's stopped parallel run, N at a time (a plain
    /// --resume goes on with it as it ran).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256),
          conflicts_with = "task")]
    pub(crate) parallel: Option<u16>,

    /// Give up this repository's stopped parallel run: each lane's uncommitted work and its
    /// branch's commits saved under refs/ralph/attempts/ID/N, then its worktree, its branch
    /// ralph/ID and the run's session removed, so a new run can start (see docs/parallel.md).
    #[arg(long, conflicts_with_all = ["resume", "task", "dry_run"])]
    pub(crate) abandon: bool,

    /// Story mode: work on story ID alone, on branch `ralph/ID` (made from the current branch
    /// when missing, else checked out as it is), and stop when it passes (exit 0) or is
    /// blocked (exit 3). One task per machine: a CI matrix job, a Kubernetes Indexed Job.
    #[arg(long, value_name = "ID", conflicts_with_all = ["resume", "dry_run"])]
    pub(crate) task: Option<String>,

    /// With --resume: skip what is left of the wait the run was stopped in.
    #[arg(long, requires = "resume")]
    pub(crate) now: bool,

    /// Run the commands, print the next iteration's prompt and agent command line, and stop
    /// without running the agent.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Write the run's logs under DIR/RUN_ID/ instead of .ralph/runs/RUN_ID/.
    #[arg(short, long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,

    /// Also write events as JSON Lines to FILE (`-` for stdout; human output then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub(crate) events: Option<PathBuf>,

    /// Print only the run's summary and errors, not the agent's output.
    #[arg(short, long)]
    pub(crate) quiet: bool,

    /// Never colour the output (NO_COLOR is honoured too).
    #[arg(long)]
    pub(crate) no_color: bool,

    /// Run the agent, commands and checks in the sandbox (RALPH.md's `sandbox`, with every
    /// default when it has none): writes only in the loop's folder, no secrets read, only the
    /// agent's own host reached (see docs/sandbox.md).
    #[arg(long, conflicts_with = "no_sandbox")]
    pub(crate) sandbox: bool,

    /// Run without the sandbox, whatever the RALPH.md's `sandbox` says.
    #[arg(long)]
    pub(crate) no_sandbox: bool,

    /// Run the agent on a pseudo-terminal, for agents that need one (`pty` in RALPH.md).
    #[arg(long)]
    pub(crate) pty: bool,

    /// PTY interactive mode: your keyboard drives the agent and silence ends the iteration;
    /// Ctrl+C goes to the agent, twice within a second stops the loop (implies --pty).
    #[arg(short, long)]
    pub(crate) interactive: bool,

    /// End an agent run that prints nothing for this long, e.g. `30s`; `0` never (RALPH.md's
    /// `idle_timeout`: 10m by default, 30s with --pty).
    #[arg(long, value_name = "DURATION", value_parser = text(parse_duration), allow_hyphen_values = true)]
    pub(crate) idle_timeout: Option<Duration>,

    /// Values for the RALPH.md's `args`, in declaration order (after PATH; after `--` for
    /// values that start with `-`). Named values are given as `--name value` or
    /// `--name=value` anywhere after `run`. Options may come before, between or after them.
    #[arg(value_name = "ARGS", num_args = 0.., value_parser = clap::value_parser!(OsString))]
    pub(crate) positional_args: Vec<OsString>,

    /// `--name value` pairs for the RALPH.md's `args`, taken out before clap parses the rest;
    /// `None` for a `--name` given no value. Values are checked to be UTF-8 where they are
    /// matched to the file's names, so the message can name the argument.
    #[arg(skip)]
    pub(crate) named_args: Vec<(String, Option<OsString>)>,
}

/// The end of `ralph run --help`: what a script calling ralph can rely on (events.md has the
/// reason behind each code).
const RUN_EXIT_CODES: &str = "Exit codes:
  0    done: converged, every story passed, the agent reported done (agent_done), the idle
       limit, or max_iterations reached
  1    the loop failed: max_attempts, the circuit breaker, blocked or unfinished stories, the
       agent could not start (or failed, with --stop-on-error), escalation failed, a PTY
       safety stop, the agent failing (failure.max_consecutive runs in a row, or the last
       run before max_iterations), max_cost or max_runtime reached
  2    nothing ran: a bad option, an invalid RALPH.md or prd.json, revert outside git or on
       uncommitted changes, an events file that cannot be written, another run holding this
       folder (or, for a loop that reverts, this repository)
  3    --task: the task is blocked (the circuit breaker, or the agent said so)
  130  stopped by Ctrl+C (143: by SIGTERM, 129: by SIGHUP)
  N    a state declared in RALPH.md (`states:`) with `then: stop`: its own `exit_code` (0 to
       255, 0 if it gives none)";

impl Cli {
    /// Parses the command line. For `ralph run`, long options that are not ralph's own are the
    /// RALPH.md's user arguments (`--dir src`); they are set aside first, since only the file
    /// knows which names are valid.
    pub(crate) fn parse_with_user_args() -> Self {
        // Arguments need not be UTF-8 (paths are not): `std::env::args` would panic.
        let (argv, named) = split_user_args(std::env::args_os().collect());
        let mut cli = Cli::parse_from(argv);
        if let Command::Run(run) = &mut cli.command {
            run.named_args = named;
        }
        cli
    }
}

/// The long options of `ralph run` (`dry-run`, `max-iterations`, ...), `help` and `version`.
pub(crate) fn run_options() -> Vec<String> {
    let command = Cli::command();
    let run = command
        .find_subcommand("run")
        .expect("the run subcommand exists");
    run.get_arguments()
        .filter_map(|a| a.get_long())
        .chain(["help", "version"])
        .map(str::to_owned)
        .collect()
}

/// Splits `--name value` / `--name=value` pairs whose name is not a `ralph run` option out of
/// `argv`. Everything after a bare `--` is left alone, and so is a word that is not UTF-8 where
/// an option name would be (clap reports it).
fn split_user_args(argv: Vec<OsString>) -> (Vec<OsString>, Vec<(String, Option<OsString>)>) {
    use std::os::unix::ffi::OsStrExt as _;
    // ralph has no options before its subcommand: `run` is the first word or not there at all
    // (`ralph init run` names a folder).
    let run_at = 1;
    if argv.get(run_at).is_none_or(|a| a != "run") {
        return (argv, Vec::new());
    }
    let known = run_options();
    let mut kept: Vec<OsString> = argv[..=run_at].to_vec();
    let mut named = Vec::new();
    let mut rest = argv[run_at + 1..].iter().peekable();
    let starts_with_dashes = |word: &OsString| word.as_bytes().starts_with(b"--");
    while let Some(word) = rest.next() {
        if word == "--" {
            kept.push(word.clone());
            kept.extend(rest.by_ref().cloned());
            break;
        }
        let Some(flag) = word.as_bytes().strip_prefix(b"--") else {
            kept.push(word.clone());
            continue;
        };
        let (name, value) = match flag.iter().position(|b| *b == b'=') {
            Some(at) => (&flag[..at], Some(&flag[at + 1..])),
            None => (flag, None),
        };
        let Ok(name) = std::str::from_utf8(name) else {
            kept.push(word.clone());
            continue;
        };
        if known.iter().any(|k| k == name) {
            kept.push(word.clone());
            continue;
        }
        let value = match value {
            Some(value) => Some(std::ffi::OsStr::from_bytes(value).to_os_string()),
            // The next word, unless it is an option itself (`--name=--x` gives such a value).
            // A missing value is reported when the names are checked against the file.
            None => rest.next_if(|next| !starts_with_dashes(next)).cloned(),
        };
        named.push((name.to_owned(), value));
    }
    (kept, named)
}

/// `parse` behind a check that the value is text, so a value that is not UTF-8 gets clap's
/// `invalid value ... for '--delay <DURATION>'` naming the option, not its generic message.
fn text<T: Clone + Send + Sync + 'static>(
    parse: fn(&str) -> Result<T, String>,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().try_map(move |value| match value.to_str() {
        Some(value) => parse(value),
        None => Err("value is not valid UTF-8".to_owned()),
    })
}

/// A humantime duration (`250ms`, `30s`, `5m`) or a bare number of seconds, as in RALPH.md;
/// the message is the file's too. The options that take one accept a leading `-`, so that
/// `--delay -5s` gets this message rather than clap's "unexpected argument".
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("expected a duration >= 0, got \"{text}\""));
    }
    ralph_frontmatter::parse_duration(text).map_err(|err| match err {
        DurationError::TooLong => too_long(text),
        _ => format!("expected {DURATION_SYNTAX}, got \"{text}\""),
    })
}

/// The message for a duration past what a `Duration` holds (2^64 seconds).
fn too_long(text: &str) -> String {
    format!("expected a duration ralph can hold (at most 584942417355 years), got \"{text}\"")
}

/// A duration > 0, for limits: `--timeout 0` would kill every agent run at once.
pub(crate) fn parse_limit(text: &str) -> Result<Duration, String> {
    if text.trim().starts_with('-') {
        return Err(format!("expected a duration > 0, got \"{}\"", text.trim()));
    }
    match parse_duration(text)? {
        d if d.is_zero() => Err(format!("expected a duration > 0, got \"{}\"", text.trim())),
        d => Ok(d),
    }
}

/// `--max-cost`: a number of US dollars >= 0, worded as `max_cost` is in RALPH.md.
fn parse_cost(text: &str) -> Result<f64, String> {
    let text = text.trim();
    text.trim_start_matches('$')
        .parse::<f64>()
        .ok()
        .filter(|usd| usd.is_finite() && *usd >= 0.0)
        .ok_or_else(|| format!("expected a number >= 0.0 (US dollars), got \"{text}\""))
}

/// `-n`: an integer >= 1, worded as `max_iterations` is in RALPH.md.
fn parse_iterations(text: &str) -> Result<u64, String> {
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        Err(err) if *err.kind() == std::num::IntErrorKind::PosOverflow => Err(format!(
            "expected an integer from 1 to {}, got \"{text}\"",
            u64::MAX
        )),
        _ => Err(format!("expected an integer >= 1, got \"{text}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &str) -> Vec<OsString> {
        words.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn user_flags_are_set_aside_and_ralph_flags_kept() {
        let (kept, named) =
            split_user_args(argv("ralph run dir -n 3 --dir src --focus=tests --quiet"));
        assert_eq!(kept, argv("ralph run dir -n 3 --quiet"));
        assert_eq!(
            named,
            [
                ("dir".to_owned(), Some("src".into())),
                ("focus".to_owned(), Some("tests".into()))
            ]
        );
    }

    #[test]
    fn a_user_flag_followed_by_an_option_or_nothing_has_no_value() {
        let (kept, named) = split_user_args(argv("ralph run --dir --quiet --focus"));
        assert_eq!(kept, argv("ralph run --quiet"));
        assert_eq!(
            named,
            [("dir".to_owned(), None), ("focus".to_owned(), None)]
        );
    }

    #[test]
    fn words_after_double_dash_are_left_alone() {
        let (kept, named) = split_user_args(argv("ralph run dir -- --not-a-flag x"));
        assert_eq!(kept, argv("ralph run dir -- --not-a-flag x"));
        assert!(named.is_empty());
    }

    #[test]
    fn other_subcommands_are_untouched() {
        let (kept, named) = split_user_args(argv("ralph check --weird"));
        assert_eq!(kept, argv("ralph check --weird"));
        assert!(named.is_empty());
    }

    #[test]
    fn a_folder_named_run_is_not_the_run_subcommand() {
        let (kept, named) = split_user_args(argv("ralph init run --force"));
        assert_eq!(kept, argv("ralph init run --force"));
        assert!(named.is_empty());
    }

    #[test]
    fn the_cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
