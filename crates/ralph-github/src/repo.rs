//! A repository's name, `owner/repo`, as the config spells it.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A repository on GitHub: `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repo {
    owner: String,
    name: String,
}

impl Repo {
    /// The repository a git remote's URL names (`git@github.com:o/r.git`,
    /// `https://github.com/o/r`, `ssh://git@host/o/r.git`): its last two path components;
    /// `None` for a URL that names none (a local path may still end in two that pass).
    #[must_use]
    pub fn from_remote_url(url: &str) -> Option<Self> {
        let path = match url.split_once("://") {
            Some((_, rest)) => rest.split_once('/')?.1,
            // scp-like `user@host:path`; a plain path has no `:` before its first `/`.
            None => {
                url.split_once(':')
                    .filter(|(host, _)| !host.contains('/'))?
                    .1
            }
        };
        let mut parts = path.trim_end_matches('/').rsplit('/');
        let name = parts.next()?;
        let name = name.strip_suffix(".git").unwrap_or(name);
        let owner = parts.next()?;
        format!("{owner}/{name}").parse().ok()
    }

    /// The account or organisation that owns the repository.
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The repository's own name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// GitHub's own rule for both halves: letters, digits, `-`, `_` and `.`.
fn valid_part(part: &str) -> bool {
    !part.is_empty()
        && part != "."
        && part != ".."
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl FromStr for Repo {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text.split_once('/') {
            Some((owner, name)) if valid_part(owner) && valid_part(name) => Ok(Self {
                owner: owner.to_owned(),
                name: name.to_owned(),
            }),
            _ => Err(Error::BadRepo {
                value: text.to_owned(),
            }),
        }
    }
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_and_name_are_read_and_written_back() {
        let repo: Repo = "ralph-loops/ralph.rs".parse().unwrap();
        assert_eq!((repo.owner(), repo.name()), ("ralph-loops", "ralph.rs"));
        assert_eq!(repo.to_string(), "ralph-loops/ralph.rs");
    }

    #[test]
    fn anything_but_owner_slash_name_is_refused_with_the_value() {
        for bad in ["ralph", "a/b/c", "/b", "a/", "a/..", "a b/c", "a/c?x=1"] {
            let err = bad.parse::<Repo>().unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn a_remote_url_names_its_repository() {
        let named = |url: &str| Repo::from_remote_url(url).map(|r| r.to_string());
        for url in [
            "git@github.com:o/r.git",
            "https://github.com/o/r",
            "https://github.com/o/r.git/",
            "ssh://git@github.com/o/r.git",
            "https://x-access-token@ghe.example.com/o/r.git",
        ] {
            assert_eq!(named(url).as_deref(), Some("o/r"), "{url}");
        }
        assert_eq!(named("https://github.com/lonely"), None);
        assert_eq!(named("/tmp/remote"), None);
    }
}
