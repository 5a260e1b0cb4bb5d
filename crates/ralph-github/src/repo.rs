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
}
