//! Project chores, run as `cargo xtask <task>` instead of shell scripts.
//!
//! Tasks:
//! - `bench`: build ralph in release mode, measure it against its baselines, print the table and
//!   write it to `docs/benchmarks.md`.
//! - `schema [--check]`: write the RALPH.md frontmatter's JSON Schema to `docs/ralph.schema.json`
//!   and the events' to `docs/events.schema.json` (or fail when one is out of date).
//! - `man [DIR]`: write man pages for `ralph` and its subcommands (default `target/man/`).
//! - `package`: pack every published crate, install the CLI from its `.crate` file into a scratch
//!   root and run the installed `ralph` (see `package.rs`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod events_schema;
mod man;
mod package;
mod schema;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  bench    build ralph in release mode, run the benchmarks, print the table and
           write it to docs/benchmarks.md
  schema   write docs/ralph.schema.json from the frontmatter's field table and
           docs/events.schema.json from the event types
           (--check: exit 1 when a file is out of date)
  man      write man pages to target/man/ (or the DIR given)
  package  cargo package the workspace, install ralph-loop from its .crate file
           into a scratch root and run the installed ralph's --version and demo";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["bench"] => match bench::run(&workspace_root()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("xtask bench: {err}");
                ExitCode::FAILURE
            }
        },
        ["schema", rest @ ..] if rest.is_empty() || rest == ["--check"] => {
            let check = !rest.is_empty();
            let root = workspace_root();
            match schema::run(&root, check).and_then(|()| events_schema::run(&root, check)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("xtask schema: {err}");
                    ExitCode::FAILURE
                }
            }
        }
        ["man", rest @ ..] if rest.len() <= 1 => {
            match man::run(&workspace_root(), rest.first().map(PathBuf::from)) {
                Ok(dir) => {
                    println!("wrote man pages to {}", dir.display());
                    ExitCode::SUCCESS
                }
                Err(err) => {
                    eprintln!("xtask man: {err}");
                    ExitCode::FAILURE
                }
            }
        }
        ["package"] => match package::run(&workspace_root()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("xtask package: {err}");
                ExitCode::FAILURE
            }
        },
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The workspace root: xtask lives one level below it, wherever the checkout is.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Where cargo builds: `CARGO_TARGET_DIR` when set (relative to `root` when relative), else
/// `root/target`.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}
