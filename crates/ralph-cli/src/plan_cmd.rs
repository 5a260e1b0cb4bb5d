//! `ralph plan`: the RALPH.md's agent, run once (more when its answer is invalid) through the
//! engine as a run's is, writes the task list from a spec or splits a task that keeps failing.
//! The plan's logic is ralph-escalation's ([`ralph_escalation::plan`]); this maps the flags.

use std::io::{IsTerminal, Read as _};
use std::path::{Path, PathBuf};

use ralph_engine::{Engine, EngineOptions, FolderClaim, JsonLinesSink};
use ralph_escalation::plan::{
    self, PLAN_INVALID, PlanFormat, PlanOutcome, PlanRequest, PlanSource, Target,
    config::PlanConfig, split,
};
use ralph_escalation::{EscalationError, Git, TasksConfig};
use ralph_tasks::Prd;

use crate::cli::PlanArgs;
use crate::error::CliError;
use crate::ralph_file::{self, Loaded};
use crate::render::Style;
use crate::start_wait::StartWaits;

/// Plans; returns the exit code.
pub(crate) fn plan(args: &PlanArgs) -> Result<i32, CliError> {
    let Loaded { path, parsed } = ralph_file::load(&args.path)?;
    let shown_path = ralph_file::display_path(&path);
    let mut file = parsed.file;
    let here = Path::new(".");
    let (format, location) = list_of(&file, &shown_path)?;
    let target = match (&args.split, location) {
        (Some(id), Target::File(prd)) if format == PlanFormat::Prd => Target::Split {
            path: prd,
            id: id.clone(),
        },
        (Some(_), _) => {
            return Err(CliError::Usage(format!(
                "{shown_path}: --split works on a prd.json list (`tasks: {{prd: prd.json}}` or \
                 `escalation.prd`); this one is {}",
                format.as_str()
            )));
        }
        (None, location) => location,
    };
    let existing = match &target {
        Target::File(p) | Target::Split { path: p, .. } if !p.exists() => Vec::new(),
        _ => {
            let mut list = ralph_file::task_list(&file, here)?.expect("list_of found a task list");
            list.load().map_err(EscalationError::from)?
        }
    };
    let spec = match &target {
        Target::Split { path: prd, id } => split_context(&file, prd, id)?,
        _ => spec(args)?,
    };
    let mut request = PlanRequest::new(format, target.clone(), spec);
    if let Some(own) = PlanConfig::from_section(file.sections.get("plan")).prompt {
        request.template = std::fs::read_to_string(&own).map_err(|source| CliError::Read {
            path: own.clone(),
            source,
        })?;
    }
    request.existing = existing;
    // GitHub issues are shown, never opened here.
    request.dry_run = args.dry_run || matches!(target, Target::Issues(_));
    request.renumber = args.renumber;

    // The planning run: the file's agent, budgets, failure and rate-limit policy; the prompt,
    // one task at a time, is the plan's; nothing runs before or after the agent.
    file.body = "{{ plan.prompt }}".to_owned();
    file.config.commands.clear();
    file.config.done_when.clear();
    file.config.max_iterations = None;
    file.config.delay = std::time::Duration::ZERO;
    file.config.escalation = None;
    file.config.notify = None;
    let mut options = EngineOptions::new(shown_path, file);
    options.vocabulary = ralph_file::vocabulary();
    options.warnings = crate::run::config_warnings(&parsed.warnings);
    let log_root = args
        .log_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(".ralph").join("runs"));
    options.log_dir = Some(log_root.join(&options.run_id));
    let style = Style {
        color: crate::run::wants_color(
            std::io::stderr().is_terminal(),
            args.no_color,
            std::env::var_os("NO_COLOR"),
        ),
        terminal: std::io::stderr().is_terminal(),
        quiet: args.quiet,
        words: ralph_escalation::TaskWords::TASK,
    };
    let runtime = crate::run::runtime()?;
    let waits = StartWaits::new(&runtime, style, true, &options.run_id);
    let claim = FolderClaim::take(&options)?;
    let (_, interrupts, signal_warnings) = waits.into_signals();
    let (source, outcome) = PlanSource::new(request);
    let run = runtime.block_on(async move {
        options.warnings.extend(
            signal_warnings
                .into_iter()
                .map(|warning| (ralph_engine::WarningKind::Signals, warning)),
        );
        let log_dir = options.log_dir.clone();
        let mut engine = Engine::new(options);
        engine.set_folder_claim(claim);
        crate::status_line::add_renderer(&mut engine, style, true, true, log_dir.as_deref());
        if let Some(p) = &args.events {
            let file = std::fs::File::create(p).map_err(|source| CliError::Events {
                path: p.clone(),
                source,
            })?;
            engine.add_sink(JsonLinesSink::new(file).named(p.display().to_string()));
        }
        engine.set_task_source(source);
        engine.interrupts(interrupts);
        Ok::<_, CliError>(engine.run().await?)
    })?;
    let outcome = std::mem::take(
        &mut *outcome
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    match run.reason.as_str() {
        plan::PLAN_WRITTEN => written(args, &target, &outcome)?,
        plan::PLAN_SHOWN if args.apply && matches!(target, Target::Issues(_)) => {
            open_issues(&loaded_again(args)?, &outcome)?;
        }
        plan::PLAN_SHOWN => {
            crate::print_out(outcome.shown.as_bytes())?;
            let note = match &target {
                Target::Issues(repo) => format!(
                    "ralph: {} issues planned for {repo}, shown and not opened (`--apply` \
                     opens them)",
                    outcome.tasks.len()
                ),
                _ => format!(
                    "ralph: dry run: {} tasks planned, nothing written to {}",
                    outcome.tasks.len(),
                    target.location()
                ),
            };
            eprintln!("{note}");
        }
        PLAN_INVALID => {
            let why = match &outcome.failed {
                Some(failed) => format!("the plan was not written: {failed}"),
                None => format!(
                    "no valid plan after {} answers; nothing was written. The last one's \
                     errors:\n{}",
                    plan::MAX_CORRECTIONS + 1,
                    outcome
                        .errors
                        .iter()
                        .map(|e| format!("  - {e}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            };
            eprintln!("ralph: {why}");
        }
        _ => {}
    }
    Ok(run.exit_code)
}

/// The RALPH.md, read again after the planning run.
fn loaded_again(args: &PlanArgs) -> Result<ralph_frontmatter::RalphFile, CliError> {
    Ok(ralph_file::load(&args.path)?.parsed.file)
}

/// `--apply` for `tasks: github`: one issue per planned task, in the plan's order, with the
/// list's label; a dependency on a task opened before is named by its number.
fn open_issues(file: &ralph_frontmatter::RalphFile, outcome: &PlanOutcome) -> Result<(), CliError> {
    let Some(TasksConfig::Github { repo, label, .. }) = file
        .sections
        .get("tasks")
        .and_then(TasksConfig::from_section)
    else {
        return Ok(());
    };
    let mut client = ralph_github::Client::from_env(&repo)?;
    let mut opened: Vec<(String, u64)> = Vec::new();
    for task in &outcome.tasks {
        let mut body = task.description.clone();
        if !body.is_empty() {
            body.push_str("\n\n");
        }
        body.push_str("Acceptance criteria:\n");
        for criterion in &task.acceptance_criteria {
            body.push_str(&format!("- {criterion}\n"));
        }
        if !task.depends_on.is_empty() {
            let deps: Vec<String> = task
                .depends_on
                .iter()
                .map(|dep| match opened.iter().find(|(id, _)| id == dep) {
                    Some((_, number)) => format!("#{number}"),
                    None => dep.clone(),
                })
                .collect();
            body.push_str(&format!("\nDepends on: {}\n", deps.join(", ")));
        }
        let issue = client.open_issue(&task.title, &body, label.as_deref())?;
        let line = format!("opened #{} {}\n", issue.number, task.title);
        crate::print_out(line.as_bytes())?;
        opened.push((task.id.clone(), issue.number));
    }
    Ok(())
}

/// The list the file names, its format and where a plan goes.
fn list_of(
    file: &ralph_frontmatter::RalphFile,
    shown: &str,
) -> Result<(PlanFormat, Target), CliError> {
    let tasks = file
        .sections
        .get("tasks")
        .and_then(TasksConfig::from_section);
    Ok(match tasks {
        Some(TasksConfig::Markdown(p)) => (PlanFormat::Markdown, Target::File(p)),
        Some(TasksConfig::Github { repo, .. }) => (PlanFormat::Github, Target::Issues(repo)),
        Some(TasksConfig::Gitlab { project, .. }) => {
            return Err(CliError::Usage(format!(
                "{shown}: `ralph plan` cannot write GitLab issues yet (tasks.gitlab: {project}); \
                 plan into a checklist or a prd.json and open the issues from it"
            )));
        }
        Some(TasksConfig::Linear { team, .. }) => {
            return Err(CliError::Usage(format!(
                "{shown}: `ralph plan` cannot write tasks into Linear (team {team}) yet; plan \
                 into `tasks: {{markdown: TODO.md}}` and open the issues from it"
            )));
        }
        _ => match file.config.escalation.as_ref().and_then(|e| e.prd.clone()) {
            Some(prd) => (PlanFormat::Prd, Target::File(prd)),
            None => {
                return Err(CliError::Usage(format!(
                    "{shown}: no task list to plan into; name one with `tasks: {{prd: \
                     prd.json}}` (or markdown: TODO.md, github: owner/repo)"
                )));
            }
        },
    })
}

/// The spec: `--from FILE` (`-` for standard input), `-m TEXT`, or standard input when it is
/// not a terminal.
fn spec(args: &PlanArgs) -> Result<String, CliError> {
    let stdin = || {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map(|_| text)
            .map_err(|source| CliError::Read {
                path: PathBuf::from("<standard input>"),
                source,
            })
    };
    let text = match (&args.from, &args.message) {
        (Some(from), _) if from.as_os_str() == "-" => stdin()?,
        (Some(from), _) => std::fs::read_to_string(from).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => CliError::Usage(format!(
                "{}: no such spec file (give --from SPEC.md, -m \"goal\", or the spec on \
                 standard input)",
                from.display()
            )),
            _ => CliError::Read {
                path: from.clone(),
                source,
            },
        })?,
        (None, Some(message)) => message.clone(),
        (None, None) if !std::io::stdin().is_terminal() => stdin()?,
        (None, None) => String::new(),
    };
    if text.trim().is_empty() {
        return Err(CliError::Usage(
            "no spec to plan from: give --from SPEC.md, -m \"goal\", or the spec on standard \
             input"
                .to_owned(),
        ));
    }
    Ok(text)
}

/// `{{ plan.spec }}` for `--split ID`: the task, why it was blocked, the failing check's last
/// output and the saved attempts' diffstat.
fn split_context(
    file: &ralph_frontmatter::RalphFile,
    prd_path: &Path,
    id: &str,
) -> Result<String, CliError> {
    let prd = Prd::load(prd_path).map_err(EscalationError::from)?;
    let Some(story) = prd.story(id) else {
        return Err(CliError::Usage(format!(
            "{}: no task {id} to split",
            prd_path.display()
        )));
    };
    if story.passes == ralph_tasks::Passes::Yes {
        return Err(CliError::Usage(format!(
            "{}: task {id} has passed; only a task still to do (one that keeps failing, \
             blocked) is split",
            prd_path.display()
        )));
    }
    let progress = file
        .config
        .escalation
        .as_ref()
        .map_or_else(|| PathBuf::from("progress.txt"), |e| e.progress.clone());
    let progress = std::fs::read_to_string(progress).ok();
    let attempts = Git::open(Path::new("."))
        .ok()
        .map(|git| {
            let prefix = format!(
                "refs/ralph/attempts/{}",
                ralph_escalation::git::ref_component(id)
            );
            git.refs(&prefix)
                .unwrap_or_default()
                .into_iter()
                .map(|r| {
                    let stat = git.diffstat(&format!("{r}^"), &r, &[]).unwrap_or_default();
                    (r, stat)
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    Ok(split::context(&prd, id, progress.as_deref(), &attempts))
}

/// The plan was written: `ralph tasks`' table of the list, and with `--commit` the commit.
fn written(args: &PlanArgs, target: &Target, outcome: &PlanOutcome) -> Result<(), CliError> {
    let loaded = ralph_file::load(&args.path)?;
    if let Some(mut list) = ralph_file::task_list(&loaded.parsed.file, Path::new("."))? {
        let listed = list.load().map_err(EscalationError::from)?;
        crate::print_out(crate::tasks_cmd::table(&listed).as_bytes())?;
    }
    let ids: Vec<&str> = outcome.tasks.iter().map(|t| t.id.as_str()).collect();
    let location = target.location();
    if !args.commit {
        eprintln!(
            "ralph: {} tasks added to {location}: {}",
            ids.len(),
            ids.join(", ")
        );
        return Ok(());
    }
    let (Target::File(p) | Target::Split { path: p, .. }) = target else {
        return Ok(());
    };
    let git = Git::open(Path::new(".")).map_err(EscalationError::from)?;
    let absolute = std::path::absolute(p).unwrap_or_else(|_| p.clone());
    let what = match target {
        Target::Split { id, .. } => format!("split {id} into {}", ids.join(", ")),
        _ => format!("plan {}", ids.join(", ")),
    };
    let commit = git
        .commit_paths(&format!("ralph plan: {what}"), &[absolute])
        .map_err(EscalationError::from)?;
    eprintln!(
        "ralph: {} tasks added to {location}, committed as {}",
        ids.len(),
        &commit[..commit.len().min(12)]
    );
    Ok(())
}
