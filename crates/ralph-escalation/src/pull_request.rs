//! `land.pr`: a task that passed, landed as a pull request instead of on the base. Its branch
//! `ralph/<id>` is pushed to the remote and a request opened (or, when one is open already,
//! updated) through the forge's [`PullRequests`]; a request a person closed unmerged is
//! reported, never reopened, and nothing is pushed over it. Every step is safe to take again:
//! a re-run or a resumed run finds the open request by its branch.

use std::path::Path;

use ralph_engine::{CheckResult, IterationReport};
use ralph_tasks::forge::{NewPullRequest, PullRequest, PullRequestState, PullRequests};

use crate::git::{self, PushError};
use crate::{EscalationError, StoryEvent};

/// How a landing went.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrLanded {
    /// The branch was pushed and a request opened.
    Opened(PullRequest),
    /// The branch was pushed and the open request's title and body replaced.
    Updated(PullRequest),
    /// A person closed the branch's request without merging it: nothing was pushed, and it
    /// stays closed.
    ClosedUnmerged(PullRequest),
}

impl PrLanded {
    /// The request.
    #[must_use]
    pub fn request(&self) -> &PullRequest {
        match self {
            Self::Opened(pr) | Self::Updated(pr) | Self::ClosedUnmerged(pr) => pr,
        }
    }

    /// It as the event that reports it, for task `story_id` on `branch` to `base`.
    #[must_use]
    pub fn event(&self, story_id: &str, branch: &str, base: &str) -> StoryEvent {
        let pr = self.request();
        let (story_id, branch, base) = (story_id.to_owned(), branch.to_owned(), base.to_owned());
        let (number, url, state) = (pr.number, pr.url.clone(), pr.state.as_str().to_owned());
        match self {
            Self::Opened(_) => StoryEvent::PrOpened {
                story_id,
                number,
                url,
                state,
                branch,
                base,
            },
            Self::Updated(_) => StoryEvent::PrUpdated {
                story_id,
                number,
                url,
                state,
                branch,
                base,
            },
            Self::ClosedUnmerged(_) => StoryEvent::PrClosed {
                story_id,
                number,
                url,
                state,
                branch,
                base,
            },
        }
    }
}

/// What the request's body says of the task: what ralph knows of its run.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct PrFacts {
    /// Iterations the run gave it.
    pub iterations: u64,
    /// What the agent reported spending, in US dollars, when it did.
    pub cost_usd: Option<f64>,
    /// The `done_when` checks of its passing attempt.
    pub checks: Vec<CheckResult>,
    /// Its abandoned attempts, saved under refs (`refs/ralph/attempts/US-1/1`).
    pub saved_attempts: Vec<String>,
    /// The GitHub issue it closes when it merges (`Closes #12`).
    pub closes: Option<u64>,
}

impl PrFacts {
    /// One iteration on the task, with its cost and checks.
    pub fn record(&mut self, report: &IterationReport<'_>) {
        self.iterations += 1;
        if let Some(cost) = report.usage.and_then(|u| u.cost_usd) {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
        if let Some(attempt) = report.attempt.filter(|a| a.converged) {
            self.checks = attempt.results.to_vec();
        }
    }

    /// The request's body: the task's text first when it has one, then ralph's account.
    #[must_use]
    pub fn body(&self, id: &str) -> String {
        let mut body = format!("ralph's loop passed task `{id}`");
        match self.iterations {
            0 => body.push_str(".\n"),
            1 => body.push_str(" in 1 iteration.\n"),
            n => body.push_str(&format!(" in {n} iterations.\n")),
        }
        if !self.checks.is_empty() {
            body.push_str("\n**Checks** (`done_when`, on the pushed commit):\n\n");
            for check in &self.checks {
                let (mark, status) = match check.exit_code {
                    Some(0) => ("✅", "passed".to_owned()),
                    Some(code) => ("❌", format!("exit {code}")),
                    None => ("❌", "killed".to_owned()),
                };
                body.push_str(&format!(
                    "- {mark} `{}`: {status} in {:.1} s\n",
                    check.command.replace('`', "'"),
                    check.duration_ms as f64 / 1000.0
                ));
            }
        }
        if let Some(cost) = self.cost_usd {
            body.push_str(&format!(
                "\n**Cost**: ${cost:.2}, as the agent reported it.\n"
            ));
        }
        if !self.saved_attempts.is_empty() {
            body.push_str(&format!(
                "\n**Saved attempts** ({}, abandoned and reverted; `git push origin 'refs/ralph/*'` \
                 shares them):\n\n",
                self.saved_attempts.len()
            ));
            for saved in &self.saved_attempts {
                body.push_str(&format!("- `{saved}`\n"));
            }
        }
        if let Some(issue) = self.closes {
            body.push_str(&format!("\nCloses #{issue}\n"));
        }
        body
    }
}

/// A request's title for task `id` titled `title`: a GitHub issue's title as it is (`github`),
/// another task's after its id (`US-001: Cart page`), or `ralph: task <id>` without one.
#[must_use]
pub fn pr_title(id: &str, title: Option<&str>, github: bool) -> String {
    match (title.filter(|t| !t.is_empty()), github) {
        (Some(title), true) => title.to_owned(),
        (Some(title), false) => format!("{id}: {title}"),
        (None, _) => format!("ralph: task {id}"),
    }
}

/// A task to land: the pushed branch is HEAD of `dir`.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PrTask<'a> {
    /// The repository (a worktree) whose HEAD holds the task's work.
    pub dir: &'a Path,
    /// The task's branch on the remote (`ralph/US-1`).
    pub branch: &'a str,
    /// The branch it lands on.
    pub base: &'a str,
    /// The request's title.
    pub title: &'a str,
    /// The request's body.
    pub body: &'a str,
}

impl<'a> PrTask<'a> {
    /// The task whose work is HEAD of `dir`, landing as `branch` on `base`.
    #[must_use]
    pub fn new(
        dir: &'a Path,
        branch: &'a str,
        base: &'a str,
        title: &'a str,
        body: &'a str,
    ) -> Self {
        Self {
            dir,
            branch,
            base,
            title,
            body,
        }
    }
}

/// `land.pr`'s remote, draft setting and forge.
#[derive(Debug)]
#[non_exhaustive]
pub struct PrLanding {
    /// The forge's requests.
    pub forge: Box<dyn PullRequests>,
    /// The git remote pushed to.
    pub remote: String,
    /// Requests are opened as drafts.
    pub draft: bool,
}

impl PrLanding {
    /// Landing through `forge`, pushing to `remote`.
    #[must_use]
    pub fn new(forge: Box<dyn PullRequests>, remote: impl Into<String>, draft: bool) -> Self {
        Self {
            forge,
            remote: remote.into(),
            draft,
        }
    }

    /// The branch `branch` of `dir` lands on: see [`git::base_of`].
    ///
    /// # Errors
    /// [`EscalationError::Push`] when no base is known.
    pub fn base(&self, dir: &Path, branch: &str) -> Result<String, EscalationError> {
        Ok(git::base_of(dir, branch, &self.remote)?)
    }

    /// Lands `task`: the request for its branch looked up; a closed unmerged one reported;
    /// otherwise HEAD pushed as the branch (only over the commit the remote had a moment
    /// before) and the request opened or updated.
    ///
    /// # Errors
    /// [`EscalationError::Tasks`] with [`ralph_tasks::TaskListError::RetryAfter`] for the caller to
    /// wait and land again; [`EscalationError::Push`] naming the remote and the branch.
    pub fn land(&mut self, task: &PrTask<'_>) -> Result<PrLanded, EscalationError> {
        let found = self.forge.find(task.branch)?;
        if let Some(pr) = found
            .as_ref()
            .filter(|pr| pr.state == PullRequestState::Closed)
        {
            return Ok(PrLanded::ClosedUnmerged(pr.clone()));
        }
        let header = self.forge.push_header();
        let at = git::remote_branch(task.dir, &self.remote, task.branch, header.as_deref())
            .map_err(EscalationError::Push)?;
        git::push_head(
            task.dir,
            &self.remote,
            task.branch,
            at.as_deref(),
            header.as_deref(),
        )
        .map_err(EscalationError::Push)?;
        match found.filter(|pr| pr.state == PullRequestState::Open) {
            Some(open) => {
                let updated = self.forge.update(open.number, task.title, task.body)?;
                Ok(PrLanded::Updated(updated))
            }
            None => {
                let opened = self.forge.open(&NewPullRequest::new(
                    task.branch,
                    task.base,
                    task.title,
                    task.body,
                    self.draft,
                ))?;
                Ok(PrLanded::Opened(opened))
            }
        }
    }
}

impl From<PushError> for EscalationError {
    fn from(err: PushError) -> Self {
        Self::Push(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_tells_iterations_checks_cost_attempts_and_the_issue() {
        let facts = PrFacts {
            iterations: 3,
            cost_usd: Some(0.4251),
            checks: vec![CheckResult {
                command: "cargo test".to_owned(),
                exit_code: Some(0),
                duration_ms: 1234,
                tail: None,
                truncated: false,
                timed_out: false,
            }],
            saved_attempts: vec!["refs/ralph/attempts/12/1".to_owned()],
            closes: Some(12),
        };
        insta::assert_snapshot!(facts.body("12"));
        assert_eq!(pr_title("12", Some("Fix it"), true), "Fix it");
        assert_eq!(pr_title("US-1", Some("Cart"), false), "US-1: Cart");
        assert_eq!(pr_title("US-1", Some(""), false), "ralph: task US-1");
        assert_eq!(
            PrFacts::default().body("US-1"),
            "ralph's loop passed task `US-1`.\n"
        );
    }
}
