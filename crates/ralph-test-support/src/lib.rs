//! `ralph-test-support`: the test servers and helpers more than one crate's tests use, in one
//! place instead of source files included across crates by path. It owns the HTTP/1.1 core the
//! fakes stand on ([`http_server`]), the fake GitHub, GitLab and Linear ([`github_server`],
//! [`gitlab_server`], [`linear_server`], whose fault queues, pages and clock are one module's),
//! the scripted model server for the real agent CLIs ([`model_server`]) and git repositories
//! ([`git`]). It is test code: it panics where a test should fail, and depends on no ralph crate,
//! so a crate's tests can use it without building the crates above that crate. It is never
//! published, and nothing but `[dev-dependencies]` may name it.

mod fake_api;
pub mod git;
mod github_pulls;
pub mod github_server;
pub mod gitlab_server;
pub mod http_server;
pub mod linear_server;
pub mod model_server;
