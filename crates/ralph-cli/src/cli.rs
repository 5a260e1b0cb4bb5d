//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// Run an AI coding agent in a loop on one prompt file until the work is done.
#[derive(Debug, Parser)]
#[command(name = "ralph", version, about, long_about = None, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the loop described by a RALPH.md.
    Run(RunArgs),
    /// Validate a RALPH.md and print its effective configuration.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// A RALPH.md, or a directory holding one.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// A RALPH.md, or a directory holding one.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,

    /// Stop after N iterations (overrides `max_iterations`).
    #[arg(short = 'n', long = "max-iterations", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_iterations: Option<u64>,

    /// Wait between iterations, e.g. `500ms`, `10s` (overrides `delay`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) delay: Option<Duration>,

    /// Kill an agent run after this long, e.g. `30m` (overrides `timeout`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) timeout: Option<Duration>,

    /// End the loop with exit code 1 when the agent fails or times out.
    #[arg(long)]
    pub(crate) stop_on_error: bool,

    /// Write the run's logs under DIR/<run id>/ instead of .ralph/runs/<run id>/.
    #[arg(long, value_name = "DIR")]
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

    /// User arguments declared in `args`: `--name value`, `--name=value`, or values after `--`
    /// in declaration order.
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..
    )]
    pub(crate) user_args: Vec<String>,
}

/// A humantime duration (`250ms`, `30s`, `5m`) or a bare number of seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("expected a duration >= 0, got \"{text}\""));
    }
    humantime::parse_duration(text)
        .map_err(|err| format!("expected a duration like 250ms, 30s or 5m, got \"{text}\" ({err})"))
}
