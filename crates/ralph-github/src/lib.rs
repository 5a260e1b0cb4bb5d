//! GitHub issues for ralph loops: [`GithubList`], story mode's task list over a repository's
//! open issues (escalation's `TaskList`: run order, placeholders, the comments, labels and
//! closing that report a pass or a block, a question put to a person and their answer), and
//! under it a small synchronous client for the parts of GitHub's REST API
//! a task source needs (open issues, by label and page by page; an issue's comments; a comment;
//! closing an issue; a label), the token and API address it finds in the environment, and how
//! it waits: a rate limit is waited out until GitHub's reset time, a network error or a 5xx is
//! retried with [`ralph_backoff::RetryPolicy`]'s backoff, and each wait is a [`Notice`] the
//! caller turns into an event. Time comes from a [`Clock`] the caller can replace, so tests
//! wait on nothing.
//!
//! It must never print and never log: waits come back as notices, for escalation to emit. It
//! never decides what a failure does to the run: escalation does, from the `TaskListError`. It sends
//! the token only to the API address it was given: a pagination link elsewhere is an error.

mod client;
mod error;
pub mod issues;
mod list;
mod repo;
mod token;

pub use client::{Client, Clock, Comment, Issue, IssueState, Notice, SystemClock};
pub use error::Error;
pub use list::GithubList;
pub use repo::Repo;
pub use token::{TOKEN_VARIABLES, Token, api_url_from_env, token_from_env};

/// The API address used when `GITHUB_API_URL` is not set.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
