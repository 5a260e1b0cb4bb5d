//! Linear issues for ralph loops: [`LinearList`], story mode's task list over a Linear team's
//! unstarted issues (ralph-tasks' `TaskList`: run order, placeholders, the comments, the done
//! state and the label that report a pass or a block, a question put to a person and their
//! answer), and under it a small synchronous client for the parts of Linear's GraphQL API a
//! task source needs (the key's account; the team and its workflow states; the team's issues
//! by state type and label, page by page; an issue's comments; a comment; moving an issue; a
//! label), the key and API address it finds in the environment, and how it waits: it never
//! does. A rate limit (HTTP 429 or the `RATELIMITED` GraphQL error, until Linear's reset, at
//! most `rate_limit.max_wait`) and a network error or a 5xx (the run's `failure:` backoff,
//! `failure.max_consecutive` tries) come back as `TaskListError::RetryAfter`, and escalation
//! has the engine wait. The reset time is read against a [`Clock`] the caller can replace.
//!
//! It must never print, log or sleep. It never decides what a failure does to the run:
//! escalation does, from the `TaskListError`. The API key is sent in one header and shown
//! nowhere.
//!
//! The `forge` module holds what any forge's client needs and Linear's does not shape (the
//! hidden secret, the clock, the interruptible exchange, the wait until a reset).

mod client;
mod error;
mod forge;
mod list;
pub mod words;

pub use client::{
    Client, Comment, Issue, KEY_VARIABLE, Label, Team, URL_VARIABLE, User, WorkflowState,
    api_url_from_env, key_from_env,
};
pub use error::Error;
pub use forge::{Clock, Secret, SystemClock};
pub use list::LinearList;
pub use ralph_rest::SharedFailures;

/// The API address used when `LINEAR_API_URL` is not set.
pub const DEFAULT_API_URL: &str = "https://api.linear.app/graphql";
