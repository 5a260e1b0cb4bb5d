//! `cargo xtask man`: man pages for `ralph` and each subcommand, from the CLI's own clap
//! definition, written to `target/man/` (generated, never checked in, so it cannot go stale).

use std::path::{Path, PathBuf};

use clap::CommandFactory as _;

// The CLI's argument definition, compiled here as well: the binary crate has no library to
// depend on, and this keeps the man page and `ralph --help` from one source.
#[allow(dead_code, unreachable_pub, clippy::all)]
#[path = "../../crates/ralph-cli/src/cli.rs"]
mod cli;

/// Writes `ralph.1`, `ralph-run.1`, ... into `out` (default `target/man/` under `root`);
/// returns the folder.
pub(crate) fn run(root: &Path, out: Option<PathBuf>) -> Result<PathBuf, String> {
    let out = out.unwrap_or_else(|| root.join("target").join("man"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    // `#[command(about)]` reads the description of the crate being compiled, which here is
    // xtask's: give the page ralph-cli's, as `ralph --help` shows it.
    let command = cli::Cli::command().about(ralph_cli_description());
    clap_mangen::generate_to(command, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
}

/// The `description` of `crates/ralph-cli/Cargo.toml`, without its leading `ralph: ` (the
/// page's NAME line already starts with `ralph - `).
fn ralph_cli_description() -> &'static str {
    let description = include_str!("../../crates/ralph-cli/Cargo.toml")
        .lines()
        .find_map(|line| line.strip_prefix("description = "))
        .map(|value| value.trim_matches('"'))
        .expect("crates/ralph-cli/Cargo.toml has a description");
    description.strip_prefix("ralph: ").unwrap_or(description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_written_for_ralph_and_each_subcommand() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), Some(dir.path().join("man"))).unwrap();
        for page in ["ralph.1", "ralph-run.1", "ralph-check.1", "ralph-init.1"] {
            let text = std::fs::read_to_string(out.join(page)).unwrap();
            assert!(text.starts_with(".ie \\n(.g .ds Aq"), "{page}");
            assert!(text.contains(".SH SYNOPSIS"), "{page}");
        }
        let ralph_page = std::fs::read_to_string(out.join("ralph.1")).unwrap();
        assert!(
            ralph_page.contains("run an AI coding agent in a loop"),
            "the page describes ralph, not xtask:\n{ralph_page}"
        );
        assert!(!ralph_page.contains("Project chores"), "{ralph_page}");
        let run_page = std::fs::read_to_string(out.join("ralph-run.1")).unwrap();
        assert!(run_page.contains("dry\\-run"));
    }
}
