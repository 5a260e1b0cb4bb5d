//! The crate's integration tests, one module per file of this folder, in one test binary (one
//! link, not one per file; `xtask`'s tidy test checks that none is left out).

// The CLI's fake GitHub, on its HTTP core: one server for every module.
#[path = "../../ralph-cli/tests/common/github_pulls.rs"]
mod github_pulls;
#[path = "../../ralph-cli/tests/common/github_server.rs"]
mod github_server;
#[path = "../../ralph-cli/tests/common/http_server.rs"]
mod http_server;

mod client;
mod list;
