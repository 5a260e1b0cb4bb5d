//! What the run's processes are started with: the variables of ralph's environment they go
//! without, and a command line as a process.

use std::path::PathBuf;
use std::time::Duration;

use ralph_frontmatter::{CommandLine, Config};
use ralph_process::ProcessSpec;

/// The variables of ralph's environment a child goes without
/// ([`Config::withheld_variables`] over ralph's own environment, read now). Every process the
/// engine starts drops them, and so do a parallel run's merge-queue checks.
pub fn withheld_env(config: &Config) -> Vec<String> {
    // The names are read only when a sandbox asks for them: most runs have none, and this
    // runs for every process of every iteration.
    let names: Vec<String> = match config.sandbox {
        Some(_) => std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .collect(),
        None => Vec::new(),
    };
    config.withheld_variables(names.iter().map(String::as_str), |name| {
        std::env::var(name).ok()
    })
}

/// The process a command line (as `ralph_frontmatter::command_line` decided it) runs as:
/// through `sh -c`, or its words run directly.
pub(crate) fn command_process(
    line: &CommandLine,
    cwd: PathBuf,
    kill_grace: Duration,
) -> ProcessSpec {
    match line {
        CommandLine::Words(words) => ProcessSpec::words(words, cwd, kill_grace),
        CommandLine::Shell(script) => ProcessSpec::shell(script, cwd, kill_grace),
    }
}
