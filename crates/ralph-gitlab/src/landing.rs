//! Landing as a merge request (`land: {pr: gitlab}`): ralph-tasks' forge-neutral
//! [`PullRequests`] over the client's merge-request calls. Its rate limits, 5xx and network
//! errors are waits, as the task list's are.

use std::time::Duration;

use ralph_backoff::FailurePolicy;
use ralph_rest::Waits;
use ralph_tasks::TaskListError;
use ralph_tasks::forge::{NewPullRequest, PullRequest, PullRequestState, PullRequests};

use crate::{Client, Error, MergeRequest, MergeRequestState, NewMergeRequest};

/// A project's merge requests, as the landing asks for them. It never waits: a rate limit and
/// a network error or a 5xx come back as [`TaskListError::RetryAfter`], with the run's
/// `failure:` backoff and `rate_limit.max_wait`, as [`crate::GitlabList`]'s do.
#[derive(Debug)]
pub struct GitlabMergeRequests {
    client: Client,
    waits: Waits,
}

impl GitlabMergeRequests {
    /// The merge requests of `client`'s project; a network error or a 5xx waits as `failure`
    /// says, a rate limit at most `max_wait`.
    #[must_use]
    pub fn new(client: Client, failure: FailurePolicy, max_wait: Duration) -> Self {
        Self {
            client,
            waits: Waits::new(failure, max_wait),
        }
    }

    fn settle(&self, outcome: Result<MergeRequest, Error>) -> Result<PullRequest, TaskListError> {
        self.waits
            .settle::<MergeRequest, Error>(
                outcome.map_err(|err| TaskListError::Failed(Box::new(err))),
            )
            .map(|mr| pull_request(&mr))
    }
}

/// A merge request as the landing reads it: locked (GitLab merging it) counts as open.
fn pull_request(mr: &MergeRequest) -> PullRequest {
    let state = match mr.state {
        MergeRequestState::Closed => PullRequestState::Closed,
        MergeRequestState::Merged => PullRequestState::Merged,
        _ => PullRequestState::Open,
    };
    PullRequest::new(mr.iid, mr.web_url.clone(), state)
}

impl PullRequests for GitlabMergeRequests {
    fn forge(&self) -> &str {
        "GitLab"
    }

    fn find(&mut self, branch: &str) -> Result<Option<PullRequest>, TaskListError> {
        let found = self.client.merge_request_for(branch);
        self.waits
            .settle::<Option<MergeRequest>, Error>(
                found.map_err(|err| TaskListError::Failed(Box::new(err))),
            )
            .map(|mr| mr.as_ref().map(pull_request))
    }

    fn open(&mut self, request: &NewPullRequest<'_>) -> Result<PullRequest, TaskListError> {
        let opened = self.client.open_merge_request(&NewMergeRequest {
            title: request.title,
            description: request.body,
            source_branch: request.head,
            target_branch: request.base,
            draft: request.draft,
        });
        self.settle(opened)
    }

    fn update(
        &mut self,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, TaskListError> {
        let updated = self
            .client
            .update_merge_request(number, Some(title), Some(body));
        self.settle(updated)
    }

    fn push_header(&self) -> Option<String> {
        // GitLab's git over HTTPS takes an access token as the password of the user `oauth2`.
        Some(ralph_rest::basic_authorization(
            "oauth2",
            self.client.token().secret(),
        ))
    }
}
