//! GitHub issues for ralph loops: [`GithubList`], story mode's task list over a repository's
//! open issues (ralph-tasks' `TaskList`: run order, placeholders, the comments, labels and
//! closing that report a pass or a block, a question put to a person and their answer), and
//! under it a small synchronous client for the parts of GitHub's REST API
//! a task source needs (open issues, by label and page by page; an issue's comments; a comment;
//! closing an issue; a label), the token and API address it finds in the environment, and how
//! it waits: it never does. A rate limit (until GitHub's reset time, at most `rate_limit.max_wait`)
//! and a network error or a 5xx (the run's `failure:` backoff, `failure.max_consecutive` tries)
//! come back as `TaskListError::RetryAfter`, and escalation has the engine wait: a countdown a
//! Ctrl+C ends, a `WAIT_STARTED`, a wait `ralph status` shows and a resumed run takes up. The
//! reset time is read against a [`Clock`] the caller can replace.
//!
//! [`GithubPulls`] opens and updates pull requests for `land.pr: github` (ralph-tasks'
//! `PullRequests`), over the same client and with the same waits.
//!
//! It must never print, log or sleep. It never decides what a failure does to the run:
//! escalation does, from the `TaskListError`. It sends
//! the token only to the API address it was given: a pagination link elsewhere is an error.

mod client;
mod error;
pub mod issues;
mod list;
mod pulls;
mod repo;
mod token;

pub use client::{Client, Comment, Issue, IssueState};
pub use error::Error;
pub use list::GithubList;
pub use pulls::GithubPulls;
pub use ralph_rest::{Clock, SharedFailures, SystemClock};
pub use repo::Repo;
pub use token::{TOKEN_VARIABLES, Token, api_url_from_env, token_from_env};

/// The API address used when `GITHUB_API_URL` is not set.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
