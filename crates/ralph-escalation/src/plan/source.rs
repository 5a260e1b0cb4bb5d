//! [`PlanSource`]: the planning agent's run as a task source. Each iteration asks for the plan;
//! each answer is read, checked and either written (the run ends), or sent back with its
//! errors, at most [`MAX_CORRECTIONS`] times. The engine runs the agent as in any run: its
//! output adapter, logs, cost, budgets, rate-limit waits and Ctrl+C.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ralph_engine::{IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource};
use ralph_tasks::ListedTask;
use serde_json::Value;

use super::events::end;
use super::{
    MAX_CORRECTIONS, PLAN_INVALID, PLAN_SHOWN, PLAN_WRITTEN, PlanError, PlanEvent, PlanFormat,
    PlannedTask, answer, prompt, split, validate, write,
};

/// Where a valid plan goes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// A prd.json or checklist: written whole when missing, appended to when there.
    File(PathBuf),
    /// GitHub issues of `owner/repo`: nothing is written here; the plan is handed back for
    /// the caller to show, or open with `--apply`.
    Issues(String),
    /// `--split ID`: the smaller tasks take task `id`'s place in the prd.json at the path.
    Split {
        /// The prd.json.
        path: PathBuf,
        /// The task split.
        id: String,
    },
}

impl Target {
    /// Where the plan goes, as messages and events name it.
    pub fn location(&self) -> String {
        match self {
            Target::File(path) | Target::Split { path, .. } => path.display().to_string(),
            Target::Issues(repo) => repo.clone(),
        }
    }
}

/// What `ralph plan` asks for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PlanRequest {
    /// The list's format.
    pub format: PlanFormat,
    /// Where the plan goes.
    pub target: Target,
    /// The spec (or, to split, the task and why it failed), for `{{ plan.spec }}`.
    pub spec: String,
    /// The prompt template: [`prompt::BUILT_IN`] or the file `plan.prompt` names.
    pub template: String,
    /// The list's tasks as they are.
    pub existing: Vec<ListedTask>,
    /// Show the plan, write nothing.
    pub dry_run: bool,
    /// Give tasks whose id the list has a fresh one rather than refuse them.
    pub renumber: bool,
}

impl PlanRequest {
    /// A request for a plan of `spec` in `format`, to go to `target`, with the built-in prompt.
    pub fn new(format: PlanFormat, target: Target, spec: impl Into<String>) -> Self {
        let template = match target {
            Target::Split { .. } => prompt::BUILT_IN_SPLIT,
            _ => prompt::BUILT_IN,
        };
        Self {
            format,
            target,
            spec: spec.into(),
            template: template.to_owned(),
            existing: Vec::new(),
            dry_run: false,
            renumber: false,
        }
    }
}

/// What became of the plan, for the caller once the run is over.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct PlanOutcome {
    /// The valid plan, as written (ids renumbered).
    pub tasks: Vec<PlannedTask>,
    /// The new tasks in the list's own text (story objects, checklist items).
    pub shown: String,
    /// The errors of the last answer, when no answer was valid.
    pub errors: Vec<String>,
    /// Why the valid plan could not be written.
    pub failed: Option<String>,
}

/// The planning agent's run, a task source: see [`plan`](crate::plan).
pub struct PlanSource {
    request: PlanRequest,
    /// Answers read so far.
    answers: u64,
    /// The last answer's errors, for the next prompt.
    errors: Vec<String>,
    started: bool,
    outcome: Arc<Mutex<PlanOutcome>>,
}

impl PlanSource {
    /// A source for `request`; the outcome is there to read once the run is over.
    pub fn new(request: PlanRequest) -> (Self, Arc<Mutex<PlanOutcome>>) {
        let outcome = Arc::new(Mutex::new(PlanOutcome::default()));
        let source = Self {
            request,
            answers: 0,
            errors: Vec::new(),
            started: false,
            outcome: Arc::clone(&outcome),
        };
        (source, outcome)
    }

    fn outcome(&self) -> std::sync::MutexGuard<'_, PlanOutcome> {
        self.outcome
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The plan in `answer`, checked: its tasks, or every reason it cannot be used.
    fn read(&self, answer: &str) -> Result<Vec<PlannedTask>, Vec<String>> {
        let request = &self.request;
        let mut tasks = answer::read(request.format, answer)?;
        // A split's tasks replace the one split: its id is free for them.
        let existing: Vec<ListedTask> = match &request.target {
            Target::Split { id, .. } => request
                .existing
                .iter()
                .filter(|t| &t.id != id)
                .cloned()
                .collect(),
            _ => request.existing.clone(),
        };
        if request.renumber {
            validate::renumber(&mut tasks, &existing);
        }
        let errors = validate::check(request.format, &tasks, &existing);
        match errors.is_empty() {
            true => Ok(tasks),
            false => Err(errors),
        }
    }

    /// Writes (or, with `--dry-run`, only prepares) `tasks`: the new tasks' text, and whether
    /// they were added to a list that had tasks.
    fn write(&self, tasks: &[PlannedTask]) -> Result<(String, bool), PlanError> {
        let request = &self.request;
        let shown = shown(request.format, tasks);
        match &request.target {
            Target::Issues(_) => Ok((shown, false)),
            Target::Split { path, id } => {
                split::replace(path, id, tasks, request.dry_run)?;
                Ok((shown, true))
            }
            Target::File(path) => {
                let appended = add(request.format, path, tasks, request.dry_run)?;
                Ok((shown, appended))
            }
        }
    }
}

/// The new tasks as the list writes them: story objects, or checklist items.
fn shown(format: PlanFormat, tasks: &[PlannedTask]) -> String {
    match format {
        PlanFormat::Markdown => write::markdown_new(tasks)
            .trim_start_matches("# Tasks\n\n")
            .to_owned(),
        _ => {
            let stories: Vec<Value> = tasks
                .iter()
                .zip(1..)
                .map(|(t, n)| write::story(t, f64::from(n)))
                .collect();
            let mut text = serde_json::to_string_pretty(&stories).unwrap_or_default();
            text.push('\n');
            text
        }
    }
}

/// Adds `tasks` to the list at `path`: a new file when there is none (never replacing one
/// made meanwhile), else appended to it as it is at the write. Returns whether the list was
/// there.
fn add(
    format: PlanFormat,
    path: &Path,
    tasks: &[PlannedTask],
    dry_run: bool,
) -> Result<bool, PlanError> {
    let list_error = |message: String| PlanError::List {
        path: path.to_path_buf(),
        message,
    };
    let current = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(cause) => {
            return Err(PlanError::Read {
                path: path.to_path_buf(),
                cause,
            });
        }
    };
    let Some(bytes) = current else {
        let text = match format {
            PlanFormat::Markdown => write::markdown_new(tasks),
            _ => write::prd_new(tasks),
        };
        if !dry_run {
            ralph_atomic::create_new(path, text.as_bytes()).map_err(|cause| PlanError::Write {
                path: path.to_path_buf(),
                cause,
            })?;
        }
        return Ok(false);
    };
    let append = |bytes: &[u8]| -> Result<Vec<u8>, PlanError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| list_error("not UTF-8 text; the plan is not added".to_owned()))?;
        let out = match format {
            PlanFormat::Markdown => {
                let out = write::markdown_append(text, tasks);
                let before = ralph_tasks::markdown::items(text).len();
                (ralph_tasks::markdown::items(&out).len() == before + tasks.len()).then_some(out)
            }
            _ => write::prd_append(text, tasks).filter(|out| {
                let read = |t: &str| ralph_tasks::Prd::parse(path, t).map(|p| p.stories().len());
                matches!((read(text), read(out)), (Ok(a), Ok(b)) if b == a + tasks.len())
            }),
        };
        out.map(String::into_bytes).ok_or_else(|| {
            list_error(
                "cannot add the plan: the list as it is does not read back with the new tasks \
                 (fix the list, then plan again)"
                    .to_owned(),
            )
        })
    };
    if dry_run {
        append(&bytes)?;
        return Ok(true);
    }
    match ralph_atomic::update(path, |bytes| append(bytes).map(Some)) {
        Ok(_) => Ok(true),
        Err(ralph_atomic::UpdateError::Edit(err)) => Err(err),
        Err(ralph_atomic::UpdateError::Io(cause)) => Err(PlanError::Write {
            path: path.to_path_buf(),
            cause,
        }),
        Err(_) => Err(list_error(
            "it kept changing while ralph added the plan; nothing was added".to_owned(),
        )),
    }
}

impl TaskSource for PlanSource {
    type State = ();

    fn next_task(&mut self, cx: &mut TaskContext<'_>) -> NextTask {
        let request = &self.request;
        if !self.started {
            self.started = true;
            cx.emit(PlanEvent::PlanStarted {
                format: request.format.as_str().to_owned(),
                list: request.target.location(),
                split: match &request.target {
                    Target::Split { id, .. } => Some(id.clone()),
                    _ => None,
                },
            });
        }
        let text = prompt::render(
            &request.template,
            &request.spec,
            request.format,
            &request.existing,
            &self.errors,
        );
        let mut task = Task::new("plan");
        task.placeholders.insert("plan.prompt".to_owned(), text);
        task.fields
            .insert("plan_answer".to_owned(), (self.answers + 1).into());
        NextTask::Work(task)
    }

    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        // A failed run (a crash, a rate limit) gave no answer: the engine's failure policy
        // waits and tries again, or ends the run.
        if report.exit_code != Some(0) {
            return TaskDecision::Continue;
        }
        self.answers += 1;
        let tasks = match self.read(report.answer) {
            Ok(tasks) => tasks,
            Err(errors) => {
                let retry = self.answers <= MAX_CORRECTIONS;
                cx.emit(PlanEvent::PlanInvalid {
                    answer: self.answers,
                    errors: errors.clone(),
                    retry,
                });
                if retry {
                    self.errors = errors;
                    return TaskDecision::NextTask;
                }
                self.outcome().errors = errors;
                return TaskDecision::Stop(end(PLAN_INVALID));
            }
        };
        let dry_run = self.request.dry_run;
        match self.write(&tasks) {
            Ok((shown, appended)) => {
                cx.emit(PlanEvent::PlanWritten {
                    list: self.request.target.location(),
                    tasks: tasks.iter().map(|t| t.id.clone()).collect(),
                    appended,
                    dry_run,
                });
                let mut outcome = self.outcome();
                outcome.shown = shown;
                outcome.tasks = tasks;
                drop(outcome);
                TaskDecision::Stop(end(if dry_run { PLAN_SHOWN } else { PLAN_WRITTEN }))
            }
            Err(err) => {
                cx.warn(format!("the plan was not written: {err}"));
                self.outcome().failed = Some(err.to_string());
                TaskDecision::Stop(end(PLAN_INVALID))
            }
        }
    }
}
