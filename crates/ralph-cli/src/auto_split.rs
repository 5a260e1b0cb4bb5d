//! `escalation.split: true`: when a run ends because the breaker blocked a story (no story
//! left it can take), each story it blocked is split into smaller ones (`ralph plan --split`)
//! and the loop goes on with a new run. A story is split once, and the stories a split made are
//! not split again by it: the loop ends when no split helps.

use std::collections::BTreeSet;
use std::path::Path;

use ralph_escalation::StoryEnd;
use ralph_tasks::{Passes, Prd};

use crate::cli::{PlanArgs, RunArgs};
use crate::error::CliError;
use crate::ralph_file;

/// The endings after which a split can let the loop go on.
const SPLITTABLE_ENDINGS: [StoryEnd; 2] = [StoryEnd::StoriesBlocked, StoryEnd::WorkLeft];

/// `ralph run`, splitting what the breaker blocks when the file asks for it.
pub(crate) fn run(args: RunArgs) -> Result<i32, CliError> {
    let plain = !args.dry_run && !args.abandon && args.task.is_none() && args.parallel.is_none();
    let Some(prd) = plain.then(|| splitting(&args.path)).flatten() else {
        return crate::run::run_once(args, &mut None);
    };
    // Stories a split made, and stories split: neither is split again here.
    let mut leave = BTreeSet::new();
    let mut args = args;
    loop {
        let before = stories(&prd);
        let mut ended = None;
        let code = crate::run::run_once(args.clone(), &mut ended)?;
        let ending = ended.as_ref().and_then(StoryEnd::of);
        if !ending.is_some_and(|ending| SPLITTABLE_ENDINGS.contains(&ending)) {
            return Ok(code);
        }
        let blocked: Vec<String> = stories(&prd)
            .into_iter()
            .filter(|(id, passes)| {
                *passes == Passes::Blocked
                    && !leave.contains(id)
                    && before.iter().all(|(b, p)| b != id || *p != Passes::Blocked)
            })
            .map(|(id, _)| id)
            .collect();
        let mut split_any = false;
        for id in blocked {
            leave.insert(id.clone());
            let known: BTreeSet<String> = stories(&prd).into_iter().map(|(id, _)| id).collect();
            if split(&args, &id)? == 0 {
                split_any = true;
                leave.extend(
                    stories(&prd)
                        .into_iter()
                        .map(|(id, _)| id)
                        .filter(|id| !known.contains(id)),
                );
            }
        }
        if !split_any {
            return Ok(code);
        }
        eprintln!("ralph: escalation.split: the loop goes on with the smaller stories");
        // The next run is a new one: what stopped is over.
        args.resume = None;
        args.now = false;
    }
}

/// The prd.json of a file with `escalation.split: true`, if it is one.
fn splitting(path: &Path) -> Option<std::path::PathBuf> {
    let loaded = ralph_file::load(path).ok()?;
    let escalation = loaded.parsed.file.config.escalation?;
    escalation.split.then_some(escalation.prd).flatten()
}

/// Every story's id and state, in file order; none when prd.json cannot be read.
fn stories(prd: &Path) -> Vec<(String, Passes)> {
    Prd::load(prd)
        .map(|prd| {
            prd.stories()
                .iter()
                .map(|s| (s.id.clone(), s.passes))
                .collect()
        })
        .unwrap_or_default()
}

/// `ralph plan --split ID` with the run's path, log folder and output settings.
fn split(args: &RunArgs, id: &str) -> Result<i32, CliError> {
    eprintln!("ralph: escalation.split: splitting {id}, which the breaker blocked");
    crate::plan_cmd::plan(&PlanArgs {
        path: args.path.clone(),
        from: None,
        message: None,
        split: Some(id.to_owned()),
        dry_run: false,
        renumber: false,
        commit: false,
        apply: false,
        log_dir: args.log_dir.clone(),
        events: None,
        quiet: args.quiet,
        no_color: args.no_color,
    })
}
