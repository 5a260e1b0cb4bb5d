//! Where the token and the API address come from: the environment first, then `gh`.

use std::process::{Command, Stdio};

pub use ralph_rest::Token;

use crate::{DEFAULT_API_URL, Error};

/// The variables read for a token, in order.
pub const TOKEN_VARIABLES: [&str; 2] = ["GITHUB_TOKEN", "GH_TOKEN"];

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
        .map(Token::new)
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
    ralph_rest::checked_api_url(var("GITHUB_API_URL"), DEFAULT_API_URL)
        .map_err(|value| Error::BadApiUrl { value })
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
    fn a_bad_api_url_is_shown_without_its_user_and_password() {
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
