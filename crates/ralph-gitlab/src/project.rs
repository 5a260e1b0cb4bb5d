//! A project's path, `group/project` (or `group/subgroup/project`), as the config spells it.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A project on GitLab: its full path, a namespace (a group, subgroups, or a user) and a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Project {
    path: String,
}

impl Project {
    /// The full path, `group/project`.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path as the API's project id: URL-encoded, `group%2Fproject`.
    #[must_use]
    pub fn id(&self) -> String {
        ralph_rest::encode_query_value(&self.path)
    }
}

/// GitLab's rule for a path segment: letters, digits, `-`, `_` and `.`, not starting with `-`
/// or `.` nor ending in `.`.
fn valid_segment(segment: &str) -> bool {
    !segment.is_empty()
        && !segment.starts_with(['-', '.'])
        && !segment.ends_with('.')
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Project {
    /// The project a git remote's URL names (`https://gitlab.com/group/sub/project.git`,
    /// `git@gitlab.example.com:group/project.git`): the path after the host, without `.git`.
    /// `None` for a URL without one (a local path, a bare host).
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
        let path = path.trim_end_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        path.parse().ok()
    }
}

impl FromStr for Project {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let segments: Vec<&str> = text.split('/').collect();
        if segments.len() >= 2 && segments.iter().all(|s| valid_segment(s)) {
            Ok(Self {
                path: text.to_owned(),
            })
        } else {
            Err(Error::BadProject {
                value: text.to_owned(),
            })
        }
    }
}

impl fmt::Display for Project {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_subgroups_is_read_and_its_id_encoded() {
        let project: Project = "acme/tools/widgets.rs".parse().unwrap();
        assert_eq!(project.path(), "acme/tools/widgets.rs");
        assert_eq!(project.id(), "acme%2Ftools%2Fwidgets.rs");
        assert_eq!(project.to_string(), "acme/tools/widgets.rs");
    }

    #[test]
    fn anything_but_group_slash_project_is_refused_with_the_value() {
        for bad in [
            "widgets",
            "/b",
            "a/",
            "a//b",
            "a/.hidden",
            "a b/c",
            "a/c?x=1",
            "a/-x",
        ] {
            let err = bad.parse::<Project>().unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn a_remote_url_names_its_project_with_its_groups() {
        for (url, path) in [
            (
                "https://gitlab.com/acme/tools/widgets.git",
                "acme/tools/widgets",
            ),
            (
                "https://oauth2@gitlab.example.com/acme/widgets",
                "acme/widgets",
            ),
            ("git@gitlab.com:acme/widgets.git", "acme/widgets"),
            ("ssh://git@gitlab.com:2222/acme/widgets.git", "acme/widgets"),
        ] {
            assert_eq!(
                Project::from_remote_url(url).map(|p| p.to_string()),
                Some(path.to_owned()),
                "{url}"
            );
        }
        assert_eq!(Project::from_remote_url("/srv/git/widgets.git"), None);
        assert_eq!(Project::from_remote_url("https://gitlab.com/widgets"), None);
    }
}
