//! `ralph plan`: the agent writes the task list from a spec, and splits a task that keeps
//! failing into smaller ones.
//!
//! The planning agent runs as a run's agent does, through the engine, with [`PlanSource`] as
//! its task source: each iteration's prompt is the planning prompt ([`prompt`]), each answer
//! is read in the list's own format ([`answer`]), checked ([`validate`]) and, when it is
//! wrong, sent back with its errors at most [`MAX_CORRECTIONS`] times. Only a valid plan is
//! written ([`write`](mod@write)): a new list whole, an existing one with the new tasks
//! appended and every other byte kept.

pub mod answer;
pub mod config;
mod events;
pub mod prompt;
mod source;
pub mod split;
pub mod validate;
pub mod write;

pub use events::{PLAN_INVALID, PLAN_SHOWN, PLAN_WRITTEN, PlanEvent};
pub use source::{PlanOutcome, PlanRequest, PlanSource, Target};

/// How many times an invalid answer goes back to the agent with its errors before the plan
/// fails: three answers in all.
pub const MAX_CORRECTIONS: u64 = 2;

/// The list a plan is written in: its format decides what the agent is asked for and how its
/// answer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanFormat {
    /// prd.json stories, answered as a fenced `json` block.
    Prd,
    /// A Markdown checklist, answered as a fenced `markdown` block.
    Markdown,
    /// GitHub issues to open, answered as a fenced `json` block like prd.json's stories.
    Github,
}

impl PlanFormat {
    /// The format's name, as `tasks:` spells its key.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prd => "prd",
            Self::Markdown => "markdown",
            Self::Github => "github",
        }
    }
}

/// One task of the agent's plan, as it gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlannedTask {
    /// Its id (`US-004`); a Markdown item's is made from its title, as the list makes it.
    pub id: String,
    /// One line.
    pub title: String,
    /// What to do, in a few lines; may be empty.
    pub description: String,
    /// The checkable outcomes that say it is done.
    pub acceptance_criteria: Vec<String>,
    /// Ids of the tasks that must pass first, of the plan or of the list.
    pub depends_on: Vec<String>,
}

impl PlannedTask {
    /// A task with a title and nothing else.
    pub fn new(id: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            description: String::new(),
            acceptance_criteria: Vec::new(),
            depends_on: Vec::new(),
        }
    }
}

/// Why a plan cannot be made or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The list's file could not be read.
    #[error("{}: cannot read: {cause}", .path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The list's file could not be written (nothing was changed).
    #[error("{}: cannot write the plan: {cause}", .path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The list as it is now cannot take the plan (it changed into something ralph cannot
    /// read, say).
    #[error("{}: {message}", .path.display())]
    List {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The task to split is not in the list, or not in a state to split.
    #[error("{0}")]
    Split(String),
}
