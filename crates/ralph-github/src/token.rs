//! Where the token and the API address come from: the environment first, then `gh`.

use std::fmt;
use std::process::{Command, Stdio};

use crate::{DEFAULT_API_URL, Error};

/// The variables read for a token, in order.
pub const TOKEN_VARIABLES: [&str; 2] = ["GITHUB_TOKEN", "GH_TOKEN"];

/// A GitHub token. Its `Debug` hides it, so it never reaches an event or a log.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token given as text.
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    pub(crate) fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

/// The token from `GITHUB_TOKEN`, then `GH_TOKEN` (the first that is set and not blank), then
/// `gh auth token` when `gh` is installed and logged in. `var` reads a variable (`std::env::var`
/// in a program, a map in a test).
///
/// # Errors
/// [`Error::NoToken`], naming the variables, when none of them gives one.
pub fn token_from_env(var: impl Fn(&str) -> Option<String>) -> Result<Token, Error> {
    TOKEN_VARIABLES
        .iter()
        .filter_map(|name| var(name))
        .map(|value| value.trim().to_owned())
        .find(|value| !value.is_empty())
        .or_else(token_from_gh)
        .map(Token)
        .ok_or(Error::NoToken)
}

/// `gh auth token`'s answer; none when `gh` is missing, logged out or says nothing.
fn token_from_gh() -> Option<String> {
    let output = Command::new("gh")
        .args(["auth", "token"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let token = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !token.is_empty()).then_some(token)
}

/// The API address: `GITHUB_API_URL` (GitHub Enterprise's `https://HOST/api/v3`, or a test
/// server) without a trailing `/`, or [`DEFAULT_API_URL`].
///
/// # Errors
/// [`Error::BadApiUrl`] when the variable is set to something that is not http(s).
pub fn api_url_from_env(var: impl Fn(&str) -> Option<String>) -> Result<String, Error> {
    match var("GITHUB_API_URL").filter(|v| !v.trim().is_empty()) {
        None => Ok(DEFAULT_API_URL.to_owned()),
        Some(value) => {
            let url = value.trim().trim_end_matches('/');
            if url.starts_with("https://") || url.starts_with("http://") {
                Ok(url.to_owned())
            } else {
                let value = match userinfo(&value) {
                    Some(userinfo) => value.replace(userinfo, HIDDEN),
                    None => value,
                };
                Err(Error::BadApiUrl { value })
            }
        }
    }
}

/// What a user and password in an address are shown as.
pub(crate) const HIDDEN: &str = "***";

/// The `USER:PASSWORD` part of `url` (before its host's `@`), if it has one.
pub(crate) fn userinfo(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _host) = authority.rsplit_once('@')?;
    (!userinfo.is_empty()).then_some(userinfo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn github_token_comes_before_gh_token_and_a_blank_one_is_skipped() {
        let both = [("GITHUB_TOKEN", "first"), ("GH_TOKEN", "second")];
        assert_eq!(token_from_env(env(&both)).unwrap(), Token::new("first"));
        let blank = [("GITHUB_TOKEN", "  "), ("GH_TOKEN", "second\n")];
        assert_eq!(token_from_env(env(&blank)).unwrap(), Token::new("second"));
    }

    #[test]
    fn the_user_and_password_of_an_address_are_found_before_its_host_only() {
        assert_eq!(userinfo("https://me:tok@ghe.example/api"), Some("me:tok"));
        assert_eq!(userinfo("http://tok@127.0.0.1:80"), Some("tok"));
        assert_eq!(userinfo("https://ghe.example/api?a=b@c"), None);
        assert_eq!(userinfo("https://api.github.com"), None);
        let bad = [("GITHUB_API_URL", "ftp://me:tok@ghe.example")];
        let err = api_url_from_env(env(&bad)).unwrap_err().to_string();
        assert!(
            err.contains("ftp://***@ghe.example") && !err.contains("tok"),
            "{err}"
        );
    }

    #[test]
    fn the_token_never_shows_in_debug_output() {
        assert_eq!(format!("{:?}", Token::new("ghp_secret")), "Token(…)");
    }

    #[test]
    fn the_api_url_is_the_variable_without_its_trailing_slash_or_githubs() {
        assert_eq!(api_url_from_env(env(&[])).unwrap(), DEFAULT_API_URL);
        let ghe = [("GITHUB_API_URL", "https://ghe.example/api/v3/")];
        assert_eq!(
            api_url_from_env(env(&ghe)).unwrap(),
            "https://ghe.example/api/v3"
        );
        let bad = [("GITHUB_API_URL", "ghe.example")];
        assert!(
            api_url_from_env(env(&bad))
                .unwrap_err()
                .to_string()
                .contains("ghe.example")
        );
    }
}
