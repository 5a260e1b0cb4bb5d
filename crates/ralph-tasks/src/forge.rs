//! Landing as a pull request (RALPH.md `land.pr`): what a forge must answer, as a small trait
//! each forge's crate implements ([`PullRequests`]: `ralph-github` for GitHub), so that the
//! landing itself (push the task's branch, open or update its request, the body) is written
//! once, here, for every forge.
//!
//! A forge never waits nor prints: a rate limit or an outage comes back as
//! [`TaskListError::RetryAfter`], which escalation turns into the engine's wait, as a task
//! list's; every other error ends the run, saying why.

use std::fmt;

use crate::TaskListError;

/// The pull requests (GitHub) or merge requests (GitLab) of one repository on a forge: the
/// four calls landing a task makes. A forge's client implements it in a few lines over its
/// own request plumbing.
pub trait PullRequests: Send + fmt::Debug {
    /// The forge's name in messages (`GitHub`).
    fn forge(&self) -> &str;

    /// The request whose head is the branch `branch` of this repository: an open one if
    /// there is one, else the most recent closed or merged one, else none.
    ///
    /// # Errors
    /// [`TaskListError::RetryAfter`] to wait and ask again; any other ends the run.
    fn find(&mut self, branch: &str) -> Result<Option<PullRequest>, TaskListError>;

    /// Opens a request.
    ///
    /// # Errors
    /// As [`find`](Self::find).
    fn open(&mut self, request: &NewPullRequest<'_>) -> Result<PullRequest, TaskListError>;

    /// Replaces the title and body of request `number` (the one [`find`](Self::find) found).
    ///
    /// # Errors
    /// As [`find`](Self::find).
    fn update(
        &mut self,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, TaskListError>;

    /// The HTTP header git sends with its push to an `https` remote
    /// (`Authorization: Basic ...` for GitHub), so that the token is given per command and
    /// never written into `.git/config` or the remote's URL; `None` when git needs none.
    fn push_header(&self) -> Option<String>;
}

/// A pull request as the landing reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PullRequest {
    /// Its number in the repository (GitLab's `iid`).
    pub number: u64,
    /// Its page on the forge.
    pub url: String,
    /// Open, closed or merged.
    pub state: PullRequestState,
}

impl PullRequest {
    /// Request `number` at `url`, in `state`.
    #[must_use]
    pub fn new(number: u64, url: impl Into<String>, state: PullRequestState) -> Self {
        Self {
            number,
            url: url.into(),
            state,
        }
    }
}

/// Where a pull request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PullRequestState {
    /// Open (a draft included): a landing updates it.
    Open,
    /// Closed without being merged: a person turned it down; it is reported, not reopened.
    Closed,
    /// Merged: the work landed; a new landing opens a new request.
    Merged,
}

impl PullRequestState {
    /// Its name in events (`open`, `closed`, `merged`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
            Self::Merged => "merged",
        }
    }
}

/// A request to open.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct NewPullRequest<'a> {
    /// The branch holding the task's work (`ralph/US-1`).
    pub head: &'a str,
    /// The branch it is to land on.
    pub base: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its text (Markdown).
    pub body: &'a str,
    /// Opened as a draft.
    pub draft: bool,
}

impl<'a> NewPullRequest<'a> {
    /// A request to land `head` on `base`, titled `title`, saying `body`; a draft if `draft`.
    #[must_use]
    pub fn new(head: &'a str, base: &'a str, title: &'a str, body: &'a str, draft: bool) -> Self {
        Self {
            head,
            base,
            title,
            body,
            draft,
        }
    }
}
