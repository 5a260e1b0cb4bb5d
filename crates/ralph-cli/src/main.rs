//! `ralph`: run an AI coding agent in a loop on one prompt file until the work is done.
//!
//! Everything is in the library (`src/lib.rs`), which `xtask` shares.

fn main() -> std::process::ExitCode {
    ralph_loop::main()
}
