//! The journal: the step ralph is taking on the repository, written before a step a kill could
//! cut short and removed once it is done, so that the next start, resumed or not, finishes it
//! ([`finish`]) before it looks at the tree. The steps: an iteration under way (the agent may
//! mark its story passed in prd.json), a pass (its commit, then prd.json marked in the tree),
//! a revert (the progress.txt entry, the reset, the story blocked).
//!
//! It lives in the git directory (`<git dir>/ralph-journal.json`), beside the repository's
//! lock: one loop escalates in a repository at a time, and the steps are the repository's. It
//! is a [`Journal`], replaced whole, so a kill leaves the old entry or the new.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ralph_tasks::{Landed, Mark, TaskList, TaskState};
use serde::{Deserialize, Serialize};

use crate::git::{self, Git, Saved};
use crate::{EscalationError, Journal, JournalError, MAIN_TASK, progress};

/// The journal's file name inside the git directory.
const JOURNAL_FILE: &str = "ralph-journal.json";

/// A step under way, and what finishing it needs (paths in the repository are relative to its
/// top folder).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The step.
    pub(crate) step: Step,
    /// The story (`None`: the loop's one task, without prd.json).
    pub(crate) story: Option<String>,
    /// HEAD when the step began.
    pub(crate) head: String,
    /// The checkpoint a revert goes back to.
    pub(crate) checkpoint: String,
    /// The branch HEAD was on at the checkpoint (`None`: detached).
    pub(crate) branch: Option<String>,
    /// Paths left out of commits and saved work.
    pub(crate) own: Vec<PathBuf>,
    /// Paths a revert leaves alone.
    pub(crate) keep: Vec<PathBuf>,
    /// prd.json (absolute), when in story mode.
    pub(crate) prd: Option<PathBuf>,
    /// prd.json's path in the repository, when inside it: a pass commit holds it marked.
    pub(crate) prd_in_repo: Option<PathBuf>,
}

/// What was under way.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Step {
    /// An iteration. With `agent_marks` (story mode without checks) the agent's own
    /// `passes: true` passes the story, so a story found marked is passed.
    Attempt {
        /// Whether the agent's marking passes the story.
        agent_marks: bool,
    },
    /// The story's pass commit, then prd.json marked in the tree.
    Pass,
    /// The revert of an abandoned attempt, saved first.
    Revert {
        /// The ref the attempt was saved under.
        saved_ref: String,
        /// The saved attempt's commit, journaled before `saved_ref` names it: a kill in
        /// between leaves the ref to the next start to make.
        #[serde(default)]
        saved_commit: Option<String>,
        /// progress.txt (absolute).
        progress: PathBuf,
        /// The progress.txt entry, appended once.
        entry: String,
        /// The story's notes once blocked: the text before the entry's line number and after.
        notes: Option<[String; 2]>,
        /// Why the story is blocked, in a few words.
        #[serde(default)]
        reason: String,
    },
}

/// What [`finish`] found, for a resumed run to take up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A pass was finished (or found done): HEAD is the story's pass commit.
    Passed(String),
    /// A revert was finished: HEAD is back at the checkpoint, the story blocked.
    Reverted,
    /// An iteration was under way from `head` and nothing was left to finish: commits on top of
    /// it are that iteration's agent's.
    Interrupted {
        /// HEAD when the iteration began.
        head: String,
    },
}

/// The repository's journal.
fn of(git: &Git) -> Journal<Entry> {
    Journal::at(git.git_dir().join(JOURNAL_FILE))
}

/// Records `entry` as the step under way, replacing any other.
pub(crate) fn write(git: &Git, entry: &Entry) -> Result<(), JournalError> {
    of(git).write(entry)
}

/// The step under way is done.
pub(crate) fn clear(git: &Git) -> Result<(), JournalError> {
    of(git).clear()
}

/// Whether a step is recorded: a run is taking it now, or a killed one left it to finish.
pub(crate) fn pending(git: &Git) -> Result<bool, JournalError> {
    of(git).read().map(|entry| entry.is_some())
}

/// The message of story `id`'s pass commit.
pub(crate) fn pass_message(id: &str) -> String {
    format!("ralph: {id} passes")
}

/// The message of the commit holding a blocked task's mark and progress.txt entry.
pub(crate) fn blocked_message(id: &str) -> String {
    format!("ralph: {id} blocked")
}

/// Finishes the step a killed (or stopped) ralph left in the journal, if any, and removes the
/// journal. Returns what was found and what to tell the user.
pub(crate) fn finish(
    git: &Git,
    mut list: Option<&mut (dyn TaskList + '_)>,
) -> Result<(Option<Found>, Vec<String>), EscalationError> {
    let Some(journal) = of(git).read()? else {
        return Ok((None, Vec::new()));
    };
    let mut said = Vec::new();
    let marked = match (&journal.step, journal.story.as_deref()) {
        (Step::Attempt { agent_marks: true }, Some(story)) => {
            state_of(list.as_deref_mut(), story)? == Some(TaskState::Passed)
        }
        _ => false,
    };
    let found = match (&journal.step, journal.story.as_deref()) {
        (Step::Attempt { .. }, Some(story)) if marked => {
            let commit = finish_pass(git, &journal, story, list.as_deref_mut())?;
            said.push(format!(
                "{story} was marked passed when ralph was stopped, before its pass commit; the \
                 pass is finished now: {} \"{}\"",
                short(&commit),
                pass_message(story)
            ));
            Some(Found::Passed(story.to_owned()))
        }
        (Step::Attempt { .. }, _) => Some(Found::Interrupted {
            head: journal.head.clone(),
        }),
        (Step::Pass, Some(story)) => {
            let commit = finish_pass(git, &journal, story, list.as_deref_mut())?;
            said.push(format!(
                "ralph was stopped while it committed the pass of {story}; the pass is finished \
                 now: {} \"{}\"",
                short(&commit),
                pass_message(story)
            ));
            Some(Found::Passed(story.to_owned()))
        }
        (Step::Pass, None) => None,
        (
            Step::Revert {
                saved_ref,
                saved_commit,
                progress,
                entry,
                notes,
                reason,
            },
            _,
        ) => {
            // The entry names the ref: it is made first when the kill came before it was (under
            // another number, and the entry and notes with it, when that one was taken since).
            let (mut saved_ref, mut entry, mut notes) =
                (saved_ref.clone(), entry.clone(), notes.clone());
            if let Some(commit) = saved_commit {
                let named = git.name_saved(&Saved {
                    refname: saved_ref.clone(),
                    commit: commit.clone(),
                })?;
                if named.refname != saved_ref {
                    entry = entry.replace(&saved_ref, &named.refname);
                    for part in notes.iter_mut().flatten() {
                        *part = part.replace(&saved_ref, &named.refname);
                    }
                    saved_ref = named.refname;
                }
            }
            said.extend(finish_revert(
                git,
                &journal,
                &saved_ref,
                progress,
                &entry,
                notes.as_ref().map(|n| (n, reason.as_str())),
                list,
            )?);
            Some(Found::Reverted)
        }
    };
    clear(git)?;
    Ok((found, said))
}

/// The state the list gives `story` now (`None`: no list, or no such task).
fn state_of(
    list: Option<&mut (dyn TaskList + '_)>,
    story: &str,
) -> Result<Option<TaskState>, EscalationError> {
    let Some(list) = list else {
        return Ok(None);
    };
    Ok(list
        .load()?
        .into_iter()
        .find(|t| t.id == story)
        .map(|t| t.state))
}

/// Commits the tree as `story`'s pass, unless HEAD already is that commit, then marks the
/// task list in the tree; returns the pass commit.
fn finish_pass(
    git: &Git,
    journal: &Entry,
    story: &str,
    mut list: Option<&mut (dyn TaskList + '_)>,
) -> Result<String, EscalationError> {
    let head = git.head()?;
    let unmarked = state_of(list.as_deref_mut(), story)?.is_some_and(|s| s != TaskState::Passed);
    let marked = match (&mut list, unmarked) {
        (Some(list), true) => list.marked_files(&Mark::passed(story))?,
        _ => Vec::new(),
    };
    // Killed after HEAD moved to the pass commit: only the list in the tree is left to do.
    let committed = head != journal.head && git.recorded_checkpoint().as_ref() == Some(&head);
    let commit = match committed {
        true => head,
        false => {
            let replace = journal
                .prd_in_repo
                .as_deref()
                .zip(marked.first().map(|(_, bytes)| bytes.as_slice()));
            git.commit_checkpoint(&pass_message(story), &journal.own, replace)?
        }
    };
    if let (true, Some(list)) = (unmarked, list) {
        let mark = Mark::Passed {
            story_id: story.to_owned(),
            commit: Some(commit.clone()),
            branch: journal.branch.clone(),
        };
        list.write_mark(&mark)?;
        list.after_landed(&Landed::new(&mark))?;
    }
    Ok(commit)
}

/// Logs the trip (once), puts the tree back to the checkpoint (saving first whatever it holds
/// that the saved attempt and the checkpoint do not) and blocks the story. A HEAD moved
/// elsewhere since is the user's: then nothing is reset.
fn finish_revert(
    git: &Git,
    journal: &Entry,
    saved_ref: &str,
    progress: &Path,
    entry: &str,
    notes: Option<(&[String; 2], &str)>,
    list: Option<&mut (dyn TaskList + '_)>,
) -> Result<Vec<String>, EscalationError> {
    let story = journal.story.as_deref();
    let what = story.unwrap_or(MAIN_TASK);
    let mut said = Vec::new();
    let line = match progress::find(progress, entry)? {
        Some(line) => line,
        None => progress::append(progress, entry)?,
    };
    let head = git.head()?;
    if head == journal.head || head == journal.checkpoint {
        let mut saved = Saved {
            refname: saved_ref.to_owned(),
            commit: git.ref_commit(saved_ref)?,
        };
        // New: in neither the saved attempt nor the checkpoint, outside the paths a revert
        // leaves alone (progress.txt holds the entry just appended).
        let work = git.work_tree(&journal.own)?;
        let kept = |p: &PathBuf| journal.keep.iter().any(|k| p.starts_with(k));
        let new_to_saved: HashSet<PathBuf> = git
            .changed_paths(&saved.commit, &work)?
            .into_iter()
            .collect();
        let new = git
            .changed_paths(&journal.checkpoint, &work)?
            .into_iter()
            .any(|p| new_to_saved.contains(&p) && !kept(&p));
        if new {
            saved = git.save(
                &format!("refs/ralph/attempts/{}", git::ref_component(what)),
                &format!("ralph: the tree when the interrupted revert of {what} was finished"),
                &journal.own,
            )?;
            said.push(format!(
                "the tree held changes the abandoned attempt of {what} lacks; saved as {} \
                 before the revert",
                saved.refname
            ));
        }
        git.restore(
            &journal.checkpoint,
            journal.branch.as_deref(),
            &journal.keep,
            &saved,
        )?;
        said.push(format!(
            "ralph was stopped while it reverted {what}; the revert is finished now: the tree is \
             back at {}, the abandoned attempt is saved as {saved_ref}",
            short(&journal.checkpoint)
        ));
    } else {
        said.push(format!(
            "ralph was stopped while it reverted {what}, and HEAD has moved since (to {}): the \
             revert is not finished, the tree is left as it is; the abandoned attempt is saved \
             as {saved_ref}",
            short(&head)
        ));
    }
    if let (Some(story), Some(list), Some(([before, after], reason))) = (story, list, notes) {
        let blocked = list
            .load()?
            .into_iter()
            .any(|t| t.id == story && t.state == TaskState::Blocked);
        if !blocked {
            let mark = Mark::Blocked {
                story_id: story.to_owned(),
                notes: format!("{before}{line}{after}"),
                reason: reason.to_owned(),
                saved_ref: Some(saved_ref.to_owned()),
            };
            list.write_mark(&mark)?;
            list.after_landed(&Landed::new(&mark))?;
        }
    }
    Ok(said)
}

/// A commit id as people read it.
pub(crate) fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
