//! Project chores, run as `cargo xtask <task>` instead of shell scripts.
//!
//! Tasks:
//! - `bench`: build ralph in release mode, measure it against its baselines, print the table and
//!   write it to `docs/benchmarks.md`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  bench    build ralph in release mode, run the benchmarks, print the table and
           write it to docs/benchmarks.md";

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
