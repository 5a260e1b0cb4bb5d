//! `cargo xtask man`: man pages for `ralph` and each subcommand, from the CLI's own clap
//! definition, written to `target/man/` (generated, never checked in, so it cannot go stale).

use std::path::{Path, PathBuf};

use clap::CommandFactory as _;

/// Writes `ralph.1`, `ralph-run.1`, ... into `out` (default `target/man/` under `root`);
/// returns the folder.
pub(crate) fn run(root: &Path, out: Option<PathBuf>) -> Result<PathBuf, String> {
    let out = out.unwrap_or_else(|| root.join("target").join("man"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    // The CLI's own argument definition, so the pages and `ralph --help` cannot differ. Its
    // about is the package's description, `ralph: run ...`: the page's NAME line already
    // starts with `ralph - `. The pages name the release (the workspace's version, xtask's
    // too), not the commit this checkout is at.
    let command = ralph_loop::Cli::command().version(env!("CARGO_PKG_VERSION"));
    let about = command
        .get_about()
        .map(ToString::to_string)
        .unwrap_or_default();
    let command = match about.strip_prefix("ralph: ") {
        Some(rest) => command.about(rest.to_owned()),
        None => command,
    };
    clap_mangen::generate_to(command, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
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
