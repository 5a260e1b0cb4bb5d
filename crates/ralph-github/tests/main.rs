//! The crate's integration tests, one module per file of this folder, in one test binary (one
//! link, not one per file; `xtask`'s tidy test checks that none is left out).

mod client;
mod list;
