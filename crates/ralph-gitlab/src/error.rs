//! What can go wrong talking to GitLab, each with the address, the status and what to do. An
//! address's user and password are hidden before an error is made (`Client::send`): errors are
//! printed, and go into events.

use ralph_rest::{WaitKind, Waitable};

/// An error from the GitLab client. Each names the URL it concerns and what would fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No token in the environment.
    #[error(
        "no GitLab token: set GITLAB_TOKEN (a personal, group or project access token with the \
         `api` scope, which may read issues and write notes, labels and their state)"
    )]
    NoToken,
    /// A project that is not `group/project`.
    #[error(
        "{value:?} is not a GitLab project: expected its path, group/project (or \
         group/subgroup/project), such as acme/widgets"
    )]
    BadProject {
        /// The value as given.
        value: String,
    },
    /// `GITLAB_API_URL` is not an http(s) address.
    #[error(
        "GITLAB_API_URL={value:?}: expected an http:// or https:// address, such as https://gitlab.example.com/api/v4"
    )]
    BadApiUrl {
        /// The value as given.
        value: String,
    },
    /// GitLab answered with a status that retrying will not change.
    #[error("{method} {url}: HTTP {status}: {message}; {hint}")]
    Status {
        /// The request's method.
        method: String,
        /// The address asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// GitLab's own message, from the body.
        message: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// The network failed, or GitLab answered 5xx: worth asking again after a wait.
    #[error(
        "{method} {url}: {reason}; check the network and https://status.gitlab.com (or your instance)"
    )]
    Unreachable {
        /// The request's method.
        method: String,
        /// The address asked.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// GitLab's rate limit (429 with its headers): ask again after `wait`.
    #[error(
        "{method} {url}: GitLab rate limit (HTTP {status}), reset in {}s at {}",
        wait.as_secs(),
        humantime::format_rfc3339_seconds(*until)
    )]
    RateLimited {
        /// The request's method.
        method: String,
        /// The address that was limited.
        url: String,
        /// 429 (or 403).
        status: u16,
        /// How long until the reset, by GitLab's word (at most an hour).
        wait: std::time::Duration,
        /// When the limit resets.
        until: std::time::SystemTime,
    },
    /// GitLab's answer was not the JSON expected.
    #[error("{url}: GitLab's answer is not what its REST API documents: {reason}")]
    BadAnswer {
        /// The address asked.
        url: String,
        /// What did not parse.
        reason: String,
    },
    /// A pagination link to another host, which would carry the token away.
    #[error(
        "{url}: the next page is at {next}, outside {base}; not followed, so the token stays \
         with {base}"
    )]
    ForeignLink {
        /// The address asked.
        url: String,
        /// The link GitLab gave.
        next: String,
        /// The API address in use.
        base: String,
    },
    /// The request was given up: the program was interrupted (Ctrl+C, SIGTERM) while it
    /// waited for GitLab's answer.
    #[error("{method} {url}: given up, ralph was interrupted before GitLab answered")]
    Interrupted {
        /// The request's method.
        method: String,
        /// The address asked.
        url: String,
    },
    /// Pagination that does not end.
    #[error(
        "{url}: GitLab's pages do not end ({why}); stopped after {pages} page(s) rather than ask \
         for ever"
    )]
    EndlessPages {
        /// The address asked last.
        url: String,
        /// Pages read.
        pages: usize,
        /// What was wrong: the link repeats one already read, or the page cap.
        why: String,
    },
}

impl Error {
    /// What to do after an HTTP status that retrying will not change.
    pub(crate) fn hint_for(status: u16) -> &'static str {
        match status {
            401 => "the token was refused: check GITLAB_TOKEN (expired, revoked or mistyped?)",
            403 => {
                "the token may not do this: give it the `api` scope and at least the Reporter \
                 role (Developer to open merge requests)"
            }
            404 => {
                "check the project's path (group/project), and that the token may see it (a \
                 private project reads as 404 without access)"
            }
            409 => "GitLab refused the request as a conflict (one already exists?)",
            422 | 400 => "GitLab refused the request's content",
            _ => "see the message above",
        }
    }
}

impl Waitable for Error {
    fn wait_kind(&self) -> WaitKind {
        match self {
            Error::RateLimited { wait, .. } => WaitKind::RateLimited(*wait),
            Error::Unreachable { .. } => WaitKind::Unreachable,
            Error::Interrupted { .. } => WaitKind::Interrupted,
            _ => WaitKind::Never,
        }
    }
}
