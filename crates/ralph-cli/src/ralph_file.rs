//! Finding, reading and parsing the RALPH.md a command names.

use std::path::{Path, PathBuf};

use ralph_escalation::TasksConfig;
use ralph_frontmatter::{Parsed, RalphFile, Vocabulary};
use ralph_tasks::{MarkdownList, PrdList, TaskList};

use crate::error::CliError;

/// A loaded RALPH.md.
pub(crate) struct Loaded {
    /// The file's path as shown to the user.
    pub(crate) path: PathBuf,
    pub(crate) parsed: Parsed,
}

/// `path` is a RALPH.md or a directory holding one; failing both, the name of a ralph that
/// ralphify's `ralph add` installed under `.ralphify/ralphs/`.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    if path.is_dir() {
        return path.join("RALPH.md");
    }
    if !path.exists() {
        let installed = Path::new(".ralphify")
            .join("ralphs")
            .join(path)
            .join("RALPH.md");
        if installed.is_file() {
            return installed;
        }
    }
    path.to_path_buf()
}

/// The words of the plugs built into ralph, which every RALPH.md is parsed with: story mode's
/// (`{{ story.* }}`, its endings).
pub(crate) fn vocabulary() -> Vocabulary {
    Vocabulary::default()
        .with(ralph_escalation::vocabulary())
        .and_then(|v| v.with(ralph_parallel::land::vocabulary()))
        .expect("the built-in plugs share no word with ralph or each other")
}

/// Reads and parses the RALPH.md at `path` (a file or a directory holding one) with the
/// built-in plugs' [`vocabulary`].
pub(crate) fn load(path: &Path) -> Result<Loaded, CliError> {
    let path = resolve(path);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(match other_case(&path) {
                Some(found) => CliError::WrongCase { path, found },
                None => CliError::NotFound(path),
            });
        }
        Err(source) => return Err(CliError::Read { path, source }),
    };
    let shown = display_path(&path);
    let mut parsed =
        ralph_frontmatter::parse_with(&shown, &text, &vocabulary()).map_err(CliError::Config)?;
    let config_error = |field: &str, message: String| {
        let error = ralph_frontmatter::error_at_key(&shown, &text, field, message);
        CliError::Config(ralph_frontmatter::ConfigErrors {
            file: shown.clone(),
            errors: vec![error],
        })
    };
    // `tasks:` turns story mode on as `escalation.prd` does, with `escalation`'s settings (or
    // their defaults); `tasks: {prd: ...}` is `escalation.prd` spelt another way.
    let tasks = parsed.file.sections.get("tasks");
    if let Some(tasks) = tasks.and_then(TasksConfig::from_section) {
        let escalation = parsed
            .file
            .config
            .escalation
            .get_or_insert_with(Default::default);
        if let Some(prd) = &escalation.prd {
            return Err(config_error(
                "tasks",
                format!(
                    "`tasks` and `escalation.prd` ({}) both name the task list; keep one                      (`tasks: {{prd: {0}}}` is the same as `escalation.prd`)",
                    prd.display()
                ),
            ));
        }
        if let TasksConfig::Prd(prd) = tasks {
            escalation.prd = Some(prd);
        }
    }
    // What the parser cannot see: a symlink that makes the progress file the prd.json, this
    // RALPH.md, or a file inside .git. Relative paths are taken from here, as the run does.
    if let Some(escalation) = &parsed.file.config.escalation {
        let prd = escalation.prd.as_deref();
        if let Err(conflict) = ralph_escalation::progress::check_path(
            &escalation.progress,
            prd,
            Some(Path::new(&shown)),
        ) {
            let error = ralph_frontmatter::error_at(&shown, &text, conflict.field, conflict.reason);
            return Err(CliError::Config(ralph_frontmatter::ConfigErrors {
                file: shown,
                errors: vec![error],
            }));
        }
    }
    Ok(Loaded { path, parsed })
}

/// The task list `file` names (`tasks:`, or `escalation.prd`), its relative path taken from
/// `cwd`; `None` without one. What `ralph run`, `ralph check` and `ralph tasks` work from.
pub(crate) fn task_list(
    file: &RalphFile,
    cwd: &Path,
) -> Result<Option<Box<dyn TaskList>>, CliError> {
    // Paths stay as written when ralph runs where the agent does, so messages name them so.
    let at = |p: &Path| match cwd == Path::new(".") {
        true => p.to_path_buf(),
        false => cwd.join(p),
    };
    let tasks = file
        .sections
        .get("tasks")
        .and_then(TasksConfig::from_section);
    Ok(match tasks {
        Some(TasksConfig::Markdown(path)) => Some(Box::new(MarkdownList::new(at(&path)))),
        Some(TasksConfig::Github { repo, label, close }) => {
            // A request under way is given up at an interrupt: ralph never waits out its timeout.
            let client = ralph_github::Client::from_env(&repo)?
                .with_interrupts(&crate::interrupts::COUNT)
                .with_slow_notice(say_github_is_slow);
            // GitHub's waits are the run's: its failure backoff, its longest rate-limit wait,
            // its failures in a row counted across the lists its start makes.
            static FAILURES: std::sync::OnceLock<ralph_github::SharedFailures> =
                std::sync::OnceLock::new();
            Some(Box::new(
                ralph_github::GithubList::new(
                    client,
                    label,
                    close,
                    file.config.failure,
                    file.config.rate_limit.max_wait,
                )
                .sharing_failures(FAILURES.get_or_init(Default::default).clone()),
            ))
        }
        Some(TasksConfig::Gitlab {
            project,
            label,
            close,
        }) => {
            let client = ralph_gitlab::Client::from_env(&project)?
                .with_interrupts(&crate::interrupts::COUNT)
                .with_slow_notice(say_gitlab_is_slow);
            // As GitHub's: the run's waits, its failures in a row across the lists it makes.
            static FAILURES: std::sync::OnceLock<ralph_gitlab::SharedFailures> =
                std::sync::OnceLock::new();
            Some(Box::new(
                ralph_gitlab::GitlabList::new(
                    client,
                    label,
                    close,
                    file.config.failure,
                    file.config.rate_limit.max_wait,
                )
                .sharing_failures(FAILURES.get_or_init(Default::default).clone()),
            ))
        }
        Some(TasksConfig::Linear { team, label }) => {
            let client = ralph_linear::Client::from_env()?
                .with_interrupts(&crate::interrupts::COUNT)
                .with_slow_notice(say_linear_is_slow);
            // As GitHub's: the run's waits, its failures in a row shared by the lists it makes.
            static FAILURES: std::sync::OnceLock<ralph_linear::SharedFailures> =
                std::sync::OnceLock::new();
            Some(Box::new(
                ralph_linear::LinearList::new(
                    client,
                    team,
                    label,
                    file.config.failure,
                    file.config.rate_limit.max_wait,
                )
                .sharing_failures(FAILURES.get_or_init(Default::default).clone()),
            ))
        }
        // prd.json, however it is named, is `escalation.prd` by now.
        _ => file
            .config
            .escalation
            .as_ref()
            .and_then(|esc| esc.prd.as_deref())
            .map(|prd| Box::new(PrdList::new(at(prd))) as Box<dyn TaskList>),
    })
}

/// A file beside the missing `path` whose name is `path`'s in other letter case: `ralph.md` for
/// a `RALPH.md` that does not exist (on a case-sensitive file system).
fn other_case(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let other = entry.file_name();
        let other = other.to_str()?;
        (other != name && other.eq_ignore_ascii_case(name)).then(|| path.with_file_name(other))
    })
}

/// The path without a leading `./`, as a compiler would show it.
pub(crate) fn display_path(path: &Path) -> String {
    let shown = path.display().to_string();
    shown.strip_prefix("./").map(str::to_owned).unwrap_or(shown)
}

/// A GitHub request without an answer for a while, on standard error: the start (or a look at
/// the list) is not silent for the minute a request may take.
fn say_github_is_slow(words: &str) {
    eprintln!(
        "ralph: waiting for GitHub: {words} (ralph gives up at 60s and tries again; Ctrl+C \
         stops)"
    );
}

/// A GitLab request without an answer for a while, on standard error, as GitHub's.
fn say_gitlab_is_slow(words: &str) {
    eprintln!(
        "ralph: waiting for GitLab: {words} (ralph gives up at 60s and tries again; Ctrl+C \
         stops)"
    );
}

/// A Linear request without an answer for a while, on standard error, as GitHub's.
fn say_linear_is_slow(words: &str) {
    eprintln!(
        "ralph: waiting for Linear: {words} (ralph gives up at 60s and tries again; Ctrl+C \
         stops)"
    );
}
