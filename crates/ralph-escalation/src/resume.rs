//! Resuming a stopped run: escalation's own state in the run's session file (the story, the
//! breaker's counts, the checkpoint, what the tree held), and the check that a dirty tree holds
//! only the run's own interrupted attempt.

use std::path::PathBuf;

use ralph_engine::{CheckResult, TaskContext};
use ralph_frontmatter::Config;
use ralph_tasks::{Asked, Mark};
use serde::{Deserialize, Serialize};

use crate::journal::{Found, short};
use crate::{Current, Escalation, EscalationError, Git, Opening, Options, Repo};

/// What a resumed run knows of the stopped one, for [`Escalation::resume`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Interrupted {
    /// The escalation's state from the session file ([`ralph_engine::TaskSource::snapshot`]).
    pub state: Option<serde_json::Value>,
    /// The run ended without a word (a crash, `kill -9`, a reboot): its last step was
    /// recorded before its last iteration's work, which the tree may hold.
    pub crashed: bool,
}

impl Interrupted {
    /// A stopped run's escalation `state`; `crashed` when it never reported its end.
    pub fn new(state: Option<serde_json::Value>, crashed: bool) -> Self {
        Self { state, crashed }
    }
}

/// The escalation's part of a session file ([`TaskSource::State`](ralph_engine::TaskSource::State)):
/// the story in progress, the breaker's counts, the checkpoint, what the tree held.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct EscalationState {
    breaker: BreakerState,
    current: Option<CurrentState>,
    repo: Option<RepoState>,
    /// ralph's marks prd.json did not take yet (it did not parse), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unwritten: Vec<Mark>,
    /// `ralph run --task ID`: the one task the run works on, so a resumed run keeps to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    only: Option<String>,
    /// The agent's question waiting for a person's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked: Option<Asked>,
    /// A question and its answer, for the next iteration's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answered: Option<[String; 2]>,
    /// The tasks the run passed, with their pass commits: marked again, not done again, when
    /// a stale save shows one undone.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    passed: std::collections::BTreeMap<String, Option<String>>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct BreakerState {
    attempts: u64,
    last: Option<String>,
    streak: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct CurrentState {
    id: String,
    title: String,
    iterations: Vec<u64>,
    last_failure: Vec<CheckResult>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RepoState {
    /// The last known-good commit, where a revert goes back to.
    checkpoint: String,
    branch: Option<String>,
    /// HEAD when the state was saved.
    head: Option<String>,
    /// `git write-tree` of everything outside ralph's own paths and story files (`keep`) when
    /// the state was saved: a person's edit to prd.json or progress.txt is not the tree's.
    tree: Option<String>,
    /// Paths left out of saved work (ralph's output, paths dirty at start with --allow-dirty).
    own: Vec<PathBuf>,
}

/// A resumed run's leave to start on a dirty tree.
#[derive(Debug)]
pub(crate) struct Accept {
    head: Option<String>,
    tree: Option<String>,
    own: Vec<PathBuf>,
    crashed: bool,
}

impl Accept {
    /// The stopped run's own paths stay its own.
    pub(crate) fn extend_own(&self, own: &mut Vec<PathBuf>, keep: &mut Vec<PathBuf>) {
        for path in &self.own {
            if !own.contains(path) {
                own.push(path.clone());
                keep.push(path.clone());
            }
        }
    }

    /// Whether the tree holds exactly what the stopped run left: same HEAD, same tree outside
    /// `keep` (ralph's own paths, prd.json and progress.txt, which a person may edit). A
    /// crashed run recorded its last step before its last iteration's work, so any tree is
    /// taken as that work, with a [`warning`](Self::warning).
    pub(crate) fn accepts(&self, git: &Git, keep: &[PathBuf]) -> bool {
        if self.crashed {
            return true;
        }
        let (Some(head), Some(tree)) = (&self.head, &self.tree) else {
            return false;
        };
        git.head().ok().as_ref() == Some(head) && git.work_tree(keep).ok().as_ref() == Some(tree)
    }

    /// Why a tree the stopped run did not leave is refused: what changed since it stopped
    /// (HEAD, and the paths outside `keep` that differ from the tree it recorded); `None` when
    /// it recorded no tree to compare with.
    pub(crate) fn refusal(&self, git: &Git, keep: &[PathBuf]) -> Option<EscalationError> {
        let (Some(left), Some(tree)) = (&self.head, &self.tree) else {
            return None;
        };
        let head = git.head().ok()?;
        let paths = git
            .changed_paths(tree, &git.work_tree(keep).ok()?)
            .ok()?
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        Some(EscalationError::ChangedWhileStopped {
            dir: git.top().to_path_buf(),
            moved: (head != *left).then(|| [left.clone(), head]),
            paths,
        })
    }

    /// The stopped run ended without a word.
    pub(crate) fn killed(&self) -> bool {
        self.crashed
    }

    /// What to tell the user when a dirty tree was [`accept`](Self::accepts)ed: a crashed run's
    /// tree is taken on trust.
    pub(crate) fn warning(&self) -> Option<&'static str> {
        self.crashed.then_some(
            "the run was killed without a word; its tree's uncommitted changes are taken as its \
             interrupted attempt's work",
        )
    }
}

impl Escalation {
    /// Opens the escalation of a stopped run that goes on (`ralph run --resume`), as
    /// [`open`](Self::open) does, except that a tree dirty only with the run's own interrupted
    /// attempt (the tree its state recorded) is not refused: the attempt goes on from it. A
    /// tree changed by anything else still is. The state itself is taken up by
    /// [`TaskSource::restore`](ralph_engine::TaskSource::restore).
    pub fn resume(
        config: &Config,
        options: Options,
        interrupted: &Interrupted,
    ) -> Result<Option<Self>, EscalationError> {
        let repo = interrupted
            .state
            .clone()
            .and_then(|v| serde_json::from_value::<EscalationState>(v).ok())
            .and_then(|s| s.repo);
        let accept = Accept {
            head: repo.as_ref().and_then(|r| r.head.clone()),
            tree: repo.as_ref().and_then(|r| r.tree.clone()),
            own: repo.map(|r| r.own).unwrap_or_default(),
            crashed: interrupted.crashed,
        };
        Self::open_accepting(config, options, Some(&accept), Opening::Run)
    }

    /// The state a resumed run takes up: see [`EscalationState`]. The tree is recorded only when the run
    /// is `ending`: a run killed without a word is taken at its tree's word anyway
    /// ([`Accept::accepts`]), and the tree costs a few git processes.
    pub(crate) fn state(&self, ending: bool) -> EscalationState {
        let (attempts, last, streak) = self.breaker.counts();
        EscalationState {
            breaker: BreakerState {
                attempts,
                last: last.map(str::to_owned),
                streak,
            },
            current: self.current.as_ref().map(|c| CurrentState {
                id: c.id.clone(),
                title: c.title.clone(),
                iterations: c.iterations.clone(),
                last_failure: c.last_failure.clone(),
            }),
            repo: self.repo.as_ref().map(|r| RepoState {
                checkpoint: r.checkpoint.clone(),
                branch: r.branch.clone(),
                head: r.git.head().ok(),
                tree: ending.then(|| r.git.work_tree(&r.keep).ok()).flatten(),
                own: r.own.clone(),
            }),
            unwritten: self.unwritten.clone(),
            only: self.only.clone(),
            asked: self.asked.clone(),
            answered: self.answered.clone(),
            passed: self.passed.clone(),
        }
    }

    /// Takes up a stopped run's [`state`](Self::state).
    pub(crate) fn take_up(&mut self, state: EscalationState, cx: &mut TaskContext<'_>) {
        self.unwritten = state.unwritten;
        if state.only.is_some() {
            self.only = state.only;
        }
        self.asked = state.asked;
        self.answered = state.answered;
        self.passed = state.passed;
        let b = state.breaker;
        self.breaker.restore_counts(b.attempts, b.last, b.streak);
        self.current = state.current.map(|c| Current {
            id: c.id,
            title: c.title,
            iterations: c.iterations,
            last_failure: c.last_failure,
        });
        let Some((repo, saved)) = self.repo.as_mut().zip(state.repo) else {
            return;
        };
        match repo.found.take() {
            // A pass or a revert the stopped run left half done was finished at opening: HEAD
            // (the checkpoint then) is where ralph put it.
            Some(Found::Passed(story)) => {
                if self.current.as_ref().is_some_and(|c| c.id == story) {
                    self.current = None;
                    self.breaker.reset();
                }
            }
            Some(Found::Reverted) => {}
            found => {
                repo.checkpoint = saved.checkpoint;
                repo.branch = saved.branch;
                // Where ralph left HEAD, and whether commits on top of it are its own.
                let mut left = saved.head.map(|head| (head, false));
                // Killed after a pass commit but before the session said so: HEAD holds a
                // newer checkpoint than the session, and reverting to the session's would take
                // the pass off the branch. The story it passed is done.
                if let Some(passed) = newer_checkpoint(&repo.git, &repo.checkpoint) {
                    repo.checkpoint = passed.clone();
                    repo.branch = repo.git.head_branch().unwrap_or(repo.branch.take());
                    self.current = None;
                    self.breaker.reset();
                    left = Some((passed, false));
                }
                // Killed during an iteration: the agent may have committed before it was.
                if let (true, Some(Found::Interrupted { head })) = (repo.killed, found) {
                    left = Some((head, true));
                }
                if let Some(warning) = left.and_then(|(at, agents)| moved(repo, &at, agents)) {
                    cx.warn(warning);
                }
            }
        }
    }
}

/// When HEAD is no longer where the stopped run left it (`left`; with `agents`, commits on top
/// of it are the killed iteration's agent's), a person moved it while the run was stopped: their
/// decision, so HEAD becomes the checkpoint and a revert never takes their commits off the
/// branch (nor redoes a commit they reset away). Returns what to tell them.
fn moved(repo: &mut Repo, left: &str, agents: bool) -> Option<String> {
    let head = repo.git.head().ok()?;
    if head == left || (agents && repo.git.is_ancestor(left, &head)) {
        return None;
    }
    let old = std::mem::replace(&mut repo.checkpoint, head.clone());
    repo.branch = repo.git.head_branch().unwrap_or(repo.branch.take());
    Some(format!(
        "HEAD moved while the run was stopped: it is at {}, the run left it at {}. The move is \
         taken as yours: {} is the new checkpoint (it was {}), and a revert goes back to it and \
         no further, so commits made meanwhile stay on the branch and a commit reset away stays \
         away",
        short(&head),
        short(left),
        short(&head),
        short(&old),
    ))
}

/// The checkpoint the repository records ([`Git::recorded_checkpoint`]) when it is newer than
/// `saved` and on HEAD's history: a pass the session file did not hear of.
fn newer_checkpoint(git: &Git, saved: &str) -> Option<String> {
    let recorded = git.recorded_checkpoint()?;
    let head = git.head().ok()?;
    (recorded != saved && git.is_ancestor(saved, &recorded) && git.is_ancestor(&recorded, &head))
        .then_some(recorded)
}
