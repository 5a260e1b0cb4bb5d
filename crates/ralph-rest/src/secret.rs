//! A token that never shows, and the user and password an API address may carry.

use std::fmt;

/// A forge's token. Its `Debug` hides it, so it never reaches an event or a log.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token given as text.
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token itself: for the request header that carries it, and nowhere else.
    #[must_use]
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

/// What a user and password in an address are shown as.
pub const HIDDEN: &str = "***";

/// The `USER:PASSWORD` part of `url` (before its host's `@`), if it has one.
#[must_use]
pub fn userinfo(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _host) = authority.rsplit_once('@')?;
    (!userinfo.is_empty()).then_some(userinfo)
}

/// An API address as a variable gives it (`None` or blank: `default`), without its trailing
/// `/`.
///
/// # Errors
/// The value, its user and password shown as [`HIDDEN`], when it is not http(s).
pub fn checked_api_url(value: Option<String>, default: &str) -> Result<String, String> {
    match value.filter(|v| !v.trim().is_empty()) {
        None => Ok(default.to_owned()),
        Some(value) => {
            let url = value.trim().trim_end_matches('/');
            if url.starts_with("https://") || url.starts_with("http://") {
                Ok(url.to_owned())
            } else {
                Err(match userinfo(&value) {
                    Some(userinfo) => value.replace(userinfo, HIDDEN),
                    None => value,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_and_password_of_an_address_are_found_before_its_host_only() {
        assert_eq!(userinfo("https://me:tok@ghe.example/api"), Some("me:tok"));
        assert_eq!(userinfo("http://tok@127.0.0.1:80"), Some("tok"));
        assert_eq!(userinfo("https://ghe.example/api?a=b@c"), None);
        assert_eq!(userinfo("https://api.github.com"), None);
        assert_eq!(
            checked_api_url(Some("ftp://me:tok@ghe.example".into()), "x"),
            Err("ftp://***@ghe.example".to_owned())
        );
    }

    #[test]
    fn the_token_never_shows_in_debug_output() {
        assert_eq!(format!("{:?}", Token::new("ghp_secret")), "Token(…)");
    }

    #[test]
    fn an_address_loses_its_trailing_slash_and_blank_is_the_default() {
        assert_eq!(checked_api_url(None, "https://d"), Ok("https://d".into()));
        assert_eq!(
            checked_api_url(Some(" ".into()), "https://d"),
            Ok("https://d".into())
        );
        assert_eq!(
            checked_api_url(Some("https://h/api/v4/".into()), "https://d"),
            Ok("https://h/api/v4".into())
        );
    }
}
