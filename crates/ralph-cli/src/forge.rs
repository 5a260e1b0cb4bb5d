//! RALPH.md `land.pr`: the forge a passing task's pull request is opened on, made once for a
//! run from the file and the environment. The landing itself is escalation's
//! (`ralph_escalation::PrLanding`); a forge plugs in through its `PullRequests`.

use std::path::Path;

use ralph_escalation::{Forge, PrLanding, PrSettings, TasksConfig};
use ralph_frontmatter::RalphFile;

use crate::error::CliError;

/// `land.pr`'s settings, when the file has them.
pub(crate) fn settings(file: &RalphFile) -> Option<PrSettings> {
    PrSettings::from_section(file.sections.get("land"))
}

/// The landing `land.pr` asks for, with its forge's client (`None` without `land.pr`). A
/// missing token or a repository that cannot be told is an error now, before anything runs.
pub(crate) fn landing(file: &RalphFile, cwd: &Path) -> Result<Option<PrLanding>, CliError> {
    let Some(settings) = settings(file) else {
        return Ok(None);
    };
    let repo = repository(file, cwd, &settings)?;
    let forge: Box<dyn ralph_tasks::forge::PullRequests> = match settings.forge {
        Forge::Github => {
            let client = ralph_github::Client::from_env(&repo)
                .map_err(|err| CliError::Land(format!("land.pr: github: {err}")))?
                .with_interrupts(&crate::interrupts::COUNT);
            Box::new(ralph_github::GithubPulls::new(
                client,
                file.config.failure,
                file.config.rate_limit.max_wait,
            ))
        }
        Forge::Gitlab => {
            let client = ralph_gitlab::Client::from_env(&repo)
                .map_err(|err| CliError::Land(format!("land.pr: gitlab: {err}")))?
                .with_interrupts(&crate::interrupts::COUNT);
            Box::new(ralph_gitlab::GitlabMergeRequests::new(
                client,
                file.config.failure,
                file.config.rate_limit.max_wait,
            ))
        }
    };
    Ok(Some(PrLanding::new(forge, settings.remote, settings.draft)))
}

/// `land.repo`, else the forge's task list's repository (GitHub's `owner/repo`, GitLab's
/// `group/project`), else the one the remote's URL names.
fn repository(file: &RalphFile, cwd: &Path, settings: &PrSettings) -> Result<String, CliError> {
    if let Some(repo) = &settings.repo {
        return Ok(repo.clone());
    }
    let tasks = file
        .sections
        .get("tasks")
        .and_then(TasksConfig::from_section);
    match (settings.forge, tasks) {
        (Forge::Github, Some(TasksConfig::Github { repo, .. })) => return Ok(repo),
        (Forge::Gitlab, Some(TasksConfig::Gitlab { project, .. })) => return Ok(project),
        _ => {}
    }
    let url = ralph_escalation::git::remote_url(cwd, &settings.remote)
        .map_err(|err| CliError::Land(format!("land.pr: {err}")))?;
    let (named, shape) = match settings.forge {
        Forge::Github => (
            url.as_deref()
                .and_then(ralph_github::Repo::from_remote_url)
                .map(|repo| repo.to_string()),
            "owner/repo",
        ),
        Forge::Gitlab => (
            url.as_deref()
                .and_then(ralph_gitlab::Project::from_remote_url)
                .map(|project| project.to_string()),
            "group/project",
        ),
    };
    named.ok_or_else(|| {
        CliError::Land(format!(
            "land.repo: not set, and {} names no repository; set `land: {{repo: {shape}}}`",
            match url {
                Some(url) => format!("remote `{}`'s URL ({url})", settings.remote),
                None => format!("there is no remote `{}`", settings.remote),
            }
        ))
    })
}
