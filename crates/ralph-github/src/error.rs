//! What can go wrong talking to GitHub, each with the address, the status and what to do.

/// An error from the GitHub client. Each names the URL it concerns and what would fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No token in the environment, and `gh` gave none.
    #[error(
        "no GitHub token: set GITHUB_TOKEN or GH_TOKEN (a token that may read issues, and write \
         them to comment, label and close), or log in with `gh auth login`"
    )]
    NoToken,
    /// A repository name that is not `owner/name`.
    #[error("{value:?} is not a GitHub repository: expected owner/name, such as ralph-loops/ralph")]
    BadRepo {
        /// The value as given.
        value: String,
    },
    /// `GITHUB_API_URL` is not an http(s) address.
    #[error("GITHUB_API_URL={value:?}: expected an http:// or https:// address")]
    BadApiUrl {
        /// The value as given.
        value: String,
    },
    /// GitHub answered with a status that retrying will not change.
    #[error("{method} {url}: HTTP {status}: {message}; {hint}")]
    Status {
        /// The request's method.
        method: String,
        /// The address asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// GitHub's own message, from the body.
        message: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// The network failed, or GitHub answered 5xx: worth asking again after a wait.
    #[error("{method} {url}: {reason}; check the network and {status_page}")]
    Unreachable {
        /// The request's method.
        method: String,
        /// The address asked.
        url: String,
        /// What went wrong.
        reason: String,
        /// Where to look next.
        status_page: &'static str,
    },
    /// GitHub's rate limit (403 or 429 with its headers): ask again after `wait`.
    #[error(
        "{method} {url}: GitHub rate limit (HTTP {status}), reset in {}s at {}",
        wait.as_secs(),
        humantime::format_rfc3339_seconds(*until)
    )]
    RateLimited {
        /// The request's method.
        method: String,
        /// The address that was limited.
        url: String,
        /// 403 or 429.
        status: u16,
        /// How long until the reset, by GitHub's word (at most an hour).
        wait: std::time::Duration,
        /// When the limit resets.
        until: std::time::SystemTime,
    },
    /// GitHub's answer was not the JSON expected.
    #[error("{url}: GitHub's answer is not what the REST API documents: {reason}")]
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
        /// The link GitHub gave.
        next: String,
        /// The API address in use.
        base: String,
    },
    /// The request was given up: the program was interrupted (Ctrl+C, SIGTERM) while it
    /// waited for GitHub's answer.
    #[error("{method} {url}: given up, ralph was interrupted before GitHub answered")]
    Interrupted {
        /// The request's method.
        method: String,
        /// The address asked.
        url: String,
    },
    /// Pagination that does not end: a next page already read, or more pages than a list of
    /// open issues or an issue's comments has.
    #[error(
        "{url}: GitHub's pages do not end ({why}); stopped after {pages} page(s) rather than ask \
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
            401 => {
                "the token was refused: check GITHUB_TOKEN or GH_TOKEN (expired, revoked or \
                 mistyped?)"
            }
            403 => "the token may not do this: give it the issues permission (read and write)",
            404 => {
                "check the repository's owner/name, and that the token may see it (a private \
                 repository reads as 404 without access)"
            }
            410 => "issues are turned off for this repository",
            422 => "GitHub refused the request's content",
            _ => "see the message above",
        }
    }
}

impl Error {
    /// The error with every `userinfo` (an API address's `USER:TOKEN`) in its text shown as
    /// `***`.
    pub(crate) fn hiding(self, userinfo: &str) -> Self {
        let hide = |text: String| text.replace(userinfo, ralph_rest::HIDDEN);
        match self {
            Error::BadRepo { value } => Error::BadRepo { value: hide(value) },
            Error::BadApiUrl { value } => Error::BadApiUrl { value: hide(value) },
            Error::Status {
                method,
                url,
                status,
                message,
                hint,
            } => Error::Status {
                method,
                url: hide(url),
                status,
                message: hide(message),
                hint,
            },
            Error::Unreachable {
                method,
                url,
                reason,
                status_page,
            } => Error::Unreachable {
                method,
                url: hide(url),
                reason: hide(reason),
                status_page,
            },
            Error::RateLimited {
                method,
                url,
                status,
                wait,
                until,
            } => Error::RateLimited {
                method,
                url: hide(url),
                status,
                wait,
                until,
            },
            Error::BadAnswer { url, reason } => Error::BadAnswer {
                url: hide(url),
                reason: hide(reason),
            },
            Error::ForeignLink { url, next, base } => Error::ForeignLink {
                url: hide(url),
                next: hide(next),
                base: hide(base),
            },
            Error::EndlessPages { url, pages, why } => Error::EndlessPages {
                url: hide(url),
                pages,
                why: hide(why),
            },
            Error::Interrupted { method, url } => Error::Interrupted {
                method,
                url: hide(url),
            },
            Error::NoToken => Error::NoToken,
        }
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
