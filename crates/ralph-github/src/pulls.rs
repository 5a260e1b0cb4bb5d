//! Pull requests, for `land.pr: github`: [`GithubPulls`] implements ralph-tasks'
//! [`PullRequests`] over the client's request plumbing (its rate limits and outages are waits
//! the caller's loop makes, as the task list's are).

use std::time::Duration;

use ralph_backoff::FailurePolicy;
use ralph_rest::{Waits, encode_query_value};
use ralph_tasks::TaskListError;
use ralph_tasks::forge::{NewPullRequest, PullRequest, PullRequestState, PullRequests};
use serde::Deserialize;
use serde_json::json;

use crate::client::parse;
use crate::{Client, Error};

/// GitHub's most pull requests one page lists.
const PER_PAGE: u32 = 100;

#[derive(Deserialize)]
struct WirePull {
    number: u64,
    html_url: String,
    state: String,
    merged_at: Option<String>,
}

impl From<WirePull> for PullRequest {
    fn from(wire: WirePull) -> Self {
        let state = match (wire.state.as_str(), wire.merged_at) {
            ("open", _) => PullRequestState::Open,
            (_, Some(_)) => PullRequestState::Merged,
            _ => PullRequestState::Closed,
        };
        PullRequest::new(wire.number, wire.html_url, state)
    }
}

/// A repository's pull requests. It never waits: a rate limit and a network error or a 5xx
/// come back as [`TaskListError::RetryAfter`], with the run's `failure:` backoff and
/// `rate_limit.max_wait`, as [`crate::GithubList`]'s do.
#[derive(Debug)]
pub struct GithubPulls {
    client: Client,
    waits: Waits,
}

impl GithubPulls {
    /// The pull requests of `client`'s repository; a network error or a 5xx waits as `failure`
    /// says, a rate limit at most `max_wait`.
    #[must_use]
    pub fn new(client: Client, failure: FailurePolicy, max_wait: Duration) -> Self {
        Self {
            client,
            waits: Waits::new(failure, max_wait),
        }
    }

    fn settle<T>(&mut self, outcome: Result<T, Error>) -> Result<T, TaskListError> {
        self.waits
            .settle::<T, Error>(outcome.map_err(|err| TaskListError::Failed(Box::new(err))))
    }
}

impl PullRequests for GithubPulls {
    fn forge(&self) -> &str {
        "GitHub"
    }

    fn find(&mut self, branch: &str) -> Result<Option<PullRequest>, TaskListError> {
        let found = self.client.hiding(|client| {
            let head = format!("{}:{branch}", client.repo().owner());
            let url = client.repo_url(&format!(
                "/pulls?state=all&head={}&per_page={PER_PAGE}",
                encode_query_value(&head)
            ));
            client.all_pages::<WirePull>(url)
        });
        let pulls: Vec<PullRequest> = self.settle(found)?.into_iter().map(Into::into).collect();
        // GitHub lists the newest first.
        let open = pulls.iter().find(|p| p.state == PullRequestState::Open);
        Ok(open.or(pulls.first()).cloned())
    }

    fn open(&mut self, request: &NewPullRequest<'_>) -> Result<PullRequest, TaskListError> {
        let opened = self.client.hiding(|client| {
            let url = client.repo_url("/pulls");
            let body = json!({
                "title": request.title,
                "head": request.head,
                "base": request.base,
                "body": request.body,
                "draft": request.draft,
            });
            let answer = client.send("POST", &url, Some(&body))?;
            parse::<WirePull>(&url, answer.json)
        });
        self.settle(opened).map(Into::into)
    }

    fn update(
        &mut self,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, TaskListError> {
        let updated = self.client.hiding(|client| {
            let url = client.repo_url(&format!("/pulls/{number}"));
            let patch = json!({ "title": title, "body": body });
            let answer = client.send("PATCH", &url, Some(&patch))?;
            parse::<WirePull>(&url, answer.json)
        });
        self.settle(updated).map(Into::into)
    }

    fn push_header(&self) -> Option<String> {
        // GitHub's git over HTTPS takes the token as a Basic password; any user name will do.
        Some(ralph_rest::basic_authorization(
            "x-access-token",
            self.client.token().secret(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_request_is_open_closed_or_merged() {
        let wire = |state: &str, merged: Option<&str>| WirePull {
            number: 1,
            html_url: "u".to_owned(),
            state: state.to_owned(),
            merged_at: merged.map(str::to_owned),
        };
        let state = |w: WirePull| PullRequest::from(w).state;
        assert_eq!(state(wire("open", None)), PullRequestState::Open);
        assert_eq!(state(wire("closed", None)), PullRequestState::Closed);
        assert_eq!(
            state(wire("closed", Some("2026-01-01T00:00:00Z"))),
            PullRequestState::Merged
        );
    }
}
