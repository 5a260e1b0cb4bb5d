//! Where the token and the API address come from: the environment.

use ralph_rest::Token;

use crate::{DEFAULT_API_URL, Error};

/// The variable read for a token.
pub const TOKEN_VARIABLE: &str = "GITLAB_TOKEN";

/// The token from `GITLAB_TOKEN` (set and not blank). `var` reads a variable (`std::env::var`
/// in a program, a map in a test).
///
/// # Errors
/// [`Error::NoToken`] when it gives none.
pub fn token_from_env(var: impl Fn(&str) -> Option<String>) -> Result<Token, Error> {
    var(TOKEN_VARIABLE)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .map(Token::new)
        .ok_or(Error::NoToken)
}

/// The API address: `GITLAB_API_URL` (a self-managed instance's `https://HOST/api/v4`, or a
/// test server) without a trailing `/`, or [`DEFAULT_API_URL`].
///
/// # Errors
/// [`Error::BadApiUrl`] when the variable is set to something that is not http(s).
pub fn api_url_from_env(var: impl Fn(&str) -> Option<String>) -> Result<String, Error> {
    ralph_rest::checked_api_url(var("GITLAB_API_URL"), DEFAULT_API_URL)
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
    fn the_token_is_gitlab_token_trimmed_and_a_blank_one_is_none() {
        let set = [("GITLAB_TOKEN", " glpat-x\n")];
        assert_eq!(token_from_env(env(&set)).unwrap(), Token::new("glpat-x"));
        let blank = [("GITLAB_TOKEN", "  "), ("GITHUB_TOKEN", "ghp")];
        let err = token_from_env(env(&blank)).unwrap_err().to_string();
        assert!(err.contains("GITLAB_TOKEN"), "{err}");
    }

    #[test]
    fn the_api_url_is_the_variable_without_its_trailing_slash_or_gitlab_coms() {
        assert_eq!(api_url_from_env(env(&[])).unwrap(), DEFAULT_API_URL);
        let own = [("GITLAB_API_URL", "https://git.example/api/v4/")];
        assert_eq!(
            api_url_from_env(env(&own)).unwrap(),
            "https://git.example/api/v4"
        );
        let bad = [("GITLAB_API_URL", "git.example/api/v4")];
        let err = api_url_from_env(env(&bad)).unwrap_err().to_string();
        assert!(
            err.contains("GITLAB_API_URL=\"git.example/api/v4\""),
            "{err}"
        );
    }
}
