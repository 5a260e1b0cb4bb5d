//! Merge requests, for landing a task's branch as one (`land: {pr: gitlab}`): find the one for
//! a source branch, open one, update its title and description.

use serde::Deserialize;
use serde_json::json;

use crate::{Client, Error};

/// The title prefix that makes a merge request a draft (GitLab's own rule for every version).
const DRAFT_PREFIX: &str = "Draft: ";

/// A merge request's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum MergeRequestState {
    /// Open for review.
    Opened,
    /// Closed without merging.
    Closed,
    /// Merged.
    Merged,
    /// Locked while GitLab merges it.
    Locked,
}

impl MergeRequestState {
    /// The state as GitLab writes it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Opened => "opened",
            Self::Closed => "closed",
            Self::Merged => "merged",
            Self::Locked => "locked",
        }
    }
}

/// A merge request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct MergeRequest {
    /// Its number in the project (`!N`).
    pub iid: u64,
    /// Its title (with `Draft: ` when a draft).
    pub title: String,
    /// Its text.
    #[serde(default, deserialize_with = "text_or_null")]
    pub description: String,
    /// Open, closed, merged.
    pub state: MergeRequestState,
    /// Its page on GitLab.
    pub web_url: String,
    /// The branch it merges.
    pub source_branch: String,
    /// The branch it merges into.
    pub target_branch: String,
    /// Whether it is a draft.
    #[serde(default)]
    pub draft: bool,
}

fn text_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Option::<String>::deserialize(d).map(Option::unwrap_or_default)
}

/// A merge request to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMergeRequest<'a> {
    /// Its title.
    pub title: &'a str,
    /// Its text.
    pub description: &'a str,
    /// The branch it merges (pushed already).
    pub source_branch: &'a str,
    /// The branch it merges into.
    pub target_branch: &'a str,
    /// Opened as a draft.
    pub draft: bool,
}

impl Client {
    /// The merge request from `source_branch`: the open one if there is one, else the latest
    /// closed or merged (for a caller to report, not reopen); `None` when there is none.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn merge_request_for(
        &mut self,
        source_branch: &str,
    ) -> Result<Option<MergeRequest>, Error> {
        let url = self.project_url(&format!(
            "/merge_requests?state=all&source_branch={}&order_by=created_at&sort=desc&per_page=100",
            ralph_rest::encode_query_value(source_branch)
        ));
        let all: Vec<MergeRequest> = self.all_pages(url)?;
        let mine = all
            .into_iter()
            .filter(|mr| mr.source_branch == source_branch);
        let (open, other): (Vec<_>, Vec<_>) =
            mine.partition(|mr| mr.state == MergeRequestState::Opened);
        Ok(open.into_iter().next().or_else(|| other.into_iter().next()))
    }

    /// One merge request, by its number: its state and web address now.
    ///
    /// # Errors
    /// See [`Error`].
    pub fn merge_request(&mut self, iid: u64) -> Result<MergeRequest, Error> {
        let url = self.project_url(&format!("/merge_requests/{iid}"));
        let answer = self.send("GET", &url, None)?;
        self.parse(&url, answer.json)
    }

    /// Opens a merge request; a draft's title starts `Draft: `.
    ///
    /// # Errors
    /// See [`Error`]: a 409 when one is open for the branch already.
    pub fn open_merge_request(&mut self, new: &NewMergeRequest<'_>) -> Result<MergeRequest, Error> {
        let url = self.project_url("/merge_requests");
        let title = draft_title(new.title, new.draft);
        let body = json!({
            "title": title,
            "description": new.description,
            "source_branch": new.source_branch,
            "target_branch": new.target_branch,
            "remove_source_branch": false,
        });
        let answer = self.send("POST", &url, Some(&body))?;
        self.parse(&url, answer.json)
    }

    /// Sets the merge request's title and description, each when given (a draft keeps its
    /// `Draft: ` prefix).
    ///
    /// # Errors
    /// See [`Error`].
    pub fn update_merge_request(
        &mut self,
        iid: u64,
        title: Option<&str>,
        description: Option<&str>,
    ) -> Result<MergeRequest, Error> {
        let url = self.project_url(&format!("/merge_requests/{iid}"));
        let mut body = json!({});
        if let Some(title) = title {
            let now = self.merge_request(iid)?;
            let draft = now.draft || now.title.starts_with(DRAFT_PREFIX);
            body["title"] = json!(draft_title(title, draft));
        }
        if let Some(description) = description {
            body["description"] = json!(description);
        }
        let answer = self.send("PUT", &url, Some(&body))?;
        self.parse(&url, answer.json)
    }
}

fn draft_title(title: &str, draft: bool) -> String {
    match draft && !title.starts_with(DRAFT_PREFIX) {
        true => format!("{DRAFT_PREFIX}{title}"),
        false => title.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_title_is_prefixed_once() {
        assert_eq!(draft_title("Fix it", true), "Draft: Fix it");
        assert_eq!(draft_title("Draft: Fix it", true), "Draft: Fix it");
        assert_eq!(draft_title("Fix it", false), "Fix it");
    }
}
