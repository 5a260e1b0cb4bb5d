//! The CLI's errors, rendered once, in `main`.

use std::path::PathBuf;

use ralph_events::exit;

/// Everything that can end `ralph` with an error message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The RALPH.md does not exist.
    #[error("{}: no such file (give a RALPH.md or a directory holding one)", .0.display())]
    NotFound(PathBuf),
    /// No RALPH.md, but a file of that name in other letter case (`ralph.md`) is there.
    #[error(
        "{}: no such file; {} is there, but ralph looks for `RALPH.md` in capitals: give its \
         path, or rename it",
        .path.display(), .found.display()
    )]
    WrongCase { path: PathBuf, found: PathBuf },
    /// The RALPH.md could not be read.
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `ralph init` would replace a file.
    #[error("{}: already exists (use --force to replace it)", .0.display())]
    Exists(PathBuf),
    /// `ralph init` was given a file (or a `.md` path) where it takes a folder.
    #[error(
        "{}: `ralph init` takes the folder to write RALPH.md in, not a file; \
         for this one's folder, run `ralph init {}`",
        .path.display(), .folder.display()
    )]
    NotAFolder { path: PathBuf, folder: PathBuf },
    /// A file ralph writes for the user could not be written.
    #[error("{}: cannot write: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The RALPH.md is invalid; every error is listed.
    #[error("{0}")]
    Config(ralph_frontmatter::ConfigErrors),
    /// User arguments that do not match the file's `args`.
    #[error("{0}")]
    Usage(String),
    /// The events file could not be opened.
    #[error("{}: cannot write events: {source}", .path.display())]
    Events {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Escalation cannot start: a malformed prd.json, no git repository, a dirty tree.
    #[error(transparent)]
    Escalation(#[from] ralph_escalation::EscalationError),
    /// `land.pr` cannot be set up: its forge's token or repository.
    #[error("{0}")]
    Land(String),
    /// `tasks.github` cannot be used: no token, a repository that is not `owner/name`, a bad
    /// `GITHUB_API_URL`.
    #[error("tasks.github: {0}")]
    Github(#[from] ralph_github::Error),
    /// `tasks.gitlab` cannot be used: no token, a project that is not `group/project`, a bad
    /// `GITLAB_API_URL`.
    #[error("tasks.gitlab: {0}")]
    Gitlab(#[from] ralph_gitlab::Error),
    /// `tasks.linear` cannot be used: no `LINEAR_API_KEY`, a bad `LINEAR_API_URL`.
    #[error("tasks.linear: {0}")]
    Linear(#[from] ralph_linear::Error),
    /// Another run holds this folder or repository.
    #[error(transparent)]
    Lock(#[from] ralph_engine::LockError),
    /// The async runtime (threads, timers, signal handling) could not be set up.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// Standard output could not be written (other than by a reader that went away).
    #[error("cannot write to standard output: {0}")]
    Stdout(std::io::Error),
    /// The loop could not go on.
    #[error(transparent)]
    Engine(#[from] ralph_engine::EngineError),
    /// The RALPH.md's `sandbox` cannot be enforced here: nothing ran.
    #[error(transparent)]
    Sandbox(#[from] ralph_sandbox::SandboxError),
    /// A parallel run could not start or go on.
    #[error(transparent)]
    Parallel(#[from] ralph_parallel::ParallelError),
    /// `ralph watch` has nothing to show: no such run, or no terminal to draw on.
    #[error("{0}")]
    Watch(String),
    /// `notify` cannot be set up: a `${VAR}` that is not set.
    #[error(transparent)]
    Notify(#[from] ralph_notify::NotifyError),
    /// A run folder could not be found or read (`ralph runs`, `logs`, `report`).
    #[error("{}", run_folder_words(.0))]
    RunFolder(#[from] ralph_events::run_folder::RunFolderError),
    /// A signal stopped ralph while it waited for the task list's service before the run
    /// started (`--task ID` checked, a killed run's step finished): nothing ran.
    #[error("stopped ({signal:?}) while waiting before the run started ({why}); nothing ran")]
    StoppedBeforeStart {
        /// What it waited for.
        why: String,
        /// The signal.
        signal: ralph_engine::InterruptSignal,
    },
}

impl CliError {
    /// [`exit::USAGE`] for bad usage or config (nothing ran), [`exit::FAILURE`] for a failure
    /// while running or of the system.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            CliError::StoppedBeforeStart { signal, .. } => {
                ralph_engine::exit_code(&ralph_engine::EndReason::Interrupted, Some(*signal))
            }
            CliError::Engine(ralph_engine::EngineError::Sandbox(_)) => exit::USAGE,
            CliError::Engine(_)
            | CliError::Runtime(_)
            | CliError::Stdout(_)
            | CliError::Watch(_) => exit::FAILURE,
            CliError::Parallel(err) => match err {
                ralph_parallel::ParallelError::Unsupported { .. }
                | ralph_parallel::ParallelError::Detached(_)
                | ralph_parallel::ParallelError::NothingToResume(_)
                | ralph_parallel::ParallelError::NothingToAbandon(_)
                | ralph_parallel::ParallelError::StoppedRun { .. }
                | ralph_parallel::ParallelError::Session { .. } => exit::USAGE,
                _ => exit::FAILURE,
            },
            _ => exit::USAGE,
        }
    }
}

/// A run folder's problem, with the command that helps.
fn run_folder_words(err: &ralph_events::run_folder::RunFolderError) -> String {
    use ralph_events::run_folder::RunFolderError;
    match err {
        RunFolderError::NoRuns { .. } => {
            format!("{err} (a run writes its logs here; start one with `ralph run`)")
        }
        RunFolderError::NotFound { .. } => format!("{err}; `ralph runs` lists them"),
        _ => err.to_string(),
    }
}
