//! What can go wrong talking to Linear, each with the operation, the address and what to do.

use std::time::{Duration, SystemTime};

/// An error from the Linear client. Each names the GraphQL operation it concerns and what
/// would fix it; none holds the API key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `LINEAR_API_KEY` is not set.
    #[error(
        "no Linear API key: set LINEAR_API_KEY to a personal API key (Linear: Settings, \
         Security & access, Personal API keys) that may read and write the team's issues"
    )]
    NoKey,
    /// `LINEAR_API_URL` is not an http(s) address.
    #[error("LINEAR_API_URL={value:?}: expected an http:// or https:// address")]
    BadApiUrl {
        /// The value as given.
        value: String,
    },
    /// Linear refused the key.
    #[error(
        "{operation} at {url}: Linear refused the API key ({message}); check LINEAR_API_KEY \
         (expired, revoked or mistyped?)"
    )]
    BadKey {
        /// The operation asked.
        operation: &'static str,
        /// The API address.
        url: String,
        /// Linear's own words.
        message: String,
    },
    /// No team has the key `tasks.linear` names.
    #[error("no Linear team with the key {team:?}; the API key sees {}", known_teams(.known))]
    NoSuchTeam {
        /// The key as given.
        team: String,
        /// The keys of the teams the API key sees.
        known: Vec<String>,
    },
    /// The team has no workflow state of type `completed` to move a passed issue to.
    #[error(
        "Linear team {team} has no workflow state of type `completed` for a passed issue; add \
         one in the team's settings (Workflow)"
    )]
    NoDoneState {
        /// The team's key.
        team: String,
    },
    /// Linear answered with an HTTP status that retrying will not change.
    #[error("{operation} at {url}: HTTP {status}: {message}")]
    Status {
        /// The operation asked.
        operation: &'static str,
        /// The API address.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Linear's own words, from the body.
        message: String,
    },
    /// Linear answered with GraphQL errors that retrying will not change.
    #[error("{operation} at {url}: Linear refused the request: {messages}")]
    Refused {
        /// The operation asked.
        operation: &'static str,
        /// The API address.
        url: String,
        /// The errors' messages, joined.
        messages: String,
    },
    /// The network failed, or Linear answered 5xx: worth asking again after a wait.
    #[error("{operation} at {url}: {reason}; check the network and https://linearstatus.com")]
    Unreachable {
        /// The operation asked.
        operation: &'static str,
        /// The API address.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// Linear's rate limit (HTTP 429, or the `RATELIMITED` GraphQL error): ask again after
    /// `wait`.
    #[error(
        "{operation} at {url}: Linear rate limit, reset in {}s at {}",
        wait.as_secs(),
        humantime::format_rfc3339_seconds(*until)
    )]
    RateLimited {
        /// The operation that was limited.
        operation: &'static str,
        /// The API address.
        url: String,
        /// How long until the reset, by Linear's word (at most an hour).
        wait: Duration,
        /// When the limit resets.
        until: SystemTime,
    },
    /// Linear's answer was not the JSON expected.
    #[error(
        "{operation} at {url}: Linear's answer is not what its GraphQL API documents: {reason}"
    )]
    BadAnswer {
        /// The operation asked.
        operation: &'static str,
        /// The API address.
        url: String,
        /// What did not parse.
        reason: String,
    },
    /// The request was given up: the program was interrupted (Ctrl+C, SIGTERM) while it
    /// waited for Linear's answer.
    #[error("{operation} at {url}: given up, ralph was interrupted before Linear answered")]
    Interrupted {
        /// The operation asked.
        operation: &'static str,
        /// The API address.
        url: String,
    },
    /// Pagination that does not end: a cursor already read, or more pages than a list holds.
    #[error(
        "{operation} at {url}: Linear's pages do not end ({why}); stopped after {pages} \
         page(s) rather than ask for ever"
    )]
    EndlessPages {
        /// The operation asked.
        operation: &'static str,
        /// The API address.
        url: String,
        /// Pages read.
        pages: usize,
        /// What was wrong: a cursor repeated, or the page cap.
        why: String,
    },
}

fn known_teams(known: &[String]) -> String {
    match known {
        [] => "no team".to_owned(),
        keys => keys.join(", "),
    }
}

impl ralph_rest::Waitable for Error {
    fn wait_kind(&self) -> ralph_rest::WaitKind {
        match self {
            Error::RateLimited { wait, .. } => ralph_rest::WaitKind::RateLimited(*wait),
            Error::Unreachable { .. } => ralph_rest::WaitKind::Unreachable,
            Error::Interrupted { .. } => ralph_rest::WaitKind::Interrupted,
            _ => ralph_rest::WaitKind::Never,
        }
    }
}
