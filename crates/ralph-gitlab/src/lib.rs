//! GitLab issues and merge requests for ralph loops: [`GitlabList`], story mode's task list over
//! a project's open issues (ralph-tasks' `TaskList`: run order, placeholders, the notes, labels
//! and closing that report a pass or a block, a question put to a person and their answer),
//! and under it a small synchronous client for the parts of GitLab's REST API (v4) a task source
//! needs (open issues, by label and page by page; an issue's notes; a note; closing an issue; a
//! label) and landing as a merge request needs ([`Client::merge_request_for`],
//! [`Client::open_merge_request`], [`Client::update_merge_request`]).
//!
//! The token (`GITLAB_TOKEN`, sent as `PRIVATE-TOKEN`) never shows: not in `Debug`, an error or
//! an event. The client never waits: a rate limit (until GitLab's reset, at most
//! `rate_limit.max_wait`) and a network error or a 5xx (the run's `failure:` backoff) come back
//! as `TaskListError::RetryAfter`, for escalation to have the engine wait. The forge-neutral
//! rules (the exchange, the waits, the words of ralph's notes) are `ralph-rest`'s, shared with
//! `ralph-github`.
//!
//! It must never print, log or sleep, and sends the token only to the API address it was
//! given: a pagination link elsewhere is an error.

mod client;
mod error;
mod landing;
mod list;
mod merge_requests;
pub mod notes;
mod project;
mod token;

pub use client::{Client, Issue, IssueState, Note};
pub use error::Error;
pub use landing::GitlabMergeRequests;
pub use list::GitlabList;
pub use merge_requests::{MergeRequest, MergeRequestState, NewMergeRequest};
pub use project::Project;
pub use ralph_rest::{Clock, SharedFailures, SystemClock, Token};
pub use token::{TOKEN_VARIABLE, api_url_from_env, token_from_env};

/// The API address used when `GITLAB_API_URL` is not set.
pub const DEFAULT_API_URL: &str = "https://gitlab.com/api/v4";
