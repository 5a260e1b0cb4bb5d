//! Opening an escalation: the settings, the task list, the repository checks and the
//! journal a stopped ralph left, before the first iteration.

use std::path::{Path, PathBuf};

use ralph_engine::TaskWait;
use ralph_frontmatter::{Config, EscalationConfig};
use ralph_tasks::{PrdList, TaskList, TaskListError};

use crate::{
    Breaker, Escalation, EscalationError, Git, GitError, Opening, Options, Repo, followed, journal,
    progress, resume, summary,
};

impl Escalation {
    /// Opens the escalation `config` asks for (`None` without an `escalation` block). Story
    /// mode reads prd.json now; `revert` needs a git repository with a commit, no submodules,
    /// the means to commit (an identity; working signing with `commit.gpgsign`) and a clean
    /// tree (or `allow_dirty`, which saves the changes first). A pass or a revert a killed ralph
    /// left in the repository's journal is finished first; beyond it nothing is changed on error.
    pub fn open(config: &Config, options: Options) -> Result<Option<Self>, EscalationError> {
        Self::open_accepting(config, options, None, Opening::Run)
    }

    /// What [`open`](Self::open) would refuse, found by the same checks, changing nothing: a
    /// step a killed ralph left in the journal is not finished (and, as the run finishes it
    /// before it looks at the tree, the tree is not judged then). What `ralph check` reports.
    pub fn check_open(config: &Config, options: Options) -> Result<(), EscalationError> {
        Self::open_accepting(config, options, None, Opening::Check).map(drop)
    }

    /// [`open`](Self::open), or for a run that goes on, [`resume`](Self::resume): its tree
    /// accepted as `accept` says.
    pub(crate) fn open_accepting(
        config: &Config,
        mut options: Options,
        accept: Option<&resume::Accept>,
        opening: Opening,
    ) -> Result<Option<Self>, EscalationError> {
        let tasks = options.tasks.take();
        let Some(mut this) = Self::preview_with(config, &options.cwd, tasks)? else {
            return Ok(None);
        };
        if Self::settings(config).revert {
            // prd.json and progress.txt as written: a symlink, its target resolved in `this`.
            let written: Vec<PathBuf> = config
                .escalation
                .iter()
                .flat_map(|esc| esc.prd.iter().chain([&esc.progress]))
                .map(|p| options.cwd.join(p))
                .collect();
            this.open_repo(&options, &written, accept, opening)?;
        }
        Ok(Some(this))
    }

    /// The `escalation` settings: as written, or the defaults for a task list given without
    /// an `escalation` block.
    pub(crate) fn settings(config: &Config) -> std::borrow::Cow<'_, EscalationConfig> {
        match &config.escalation {
            Some(esc) => std::borrow::Cow::Borrowed(esc),
            None => std::borrow::Cow::Owned(EscalationConfig::default()),
        }
    }

    /// The escalation `config` asks for, without its repository: it reads prd.json and
    /// changes nothing, ever, as long as no iteration is reported to it. This is what
    /// `--dry-run` uses to show the story iteration 1 would work on.
    pub fn preview(config: &Config, cwd: &Path) -> Result<Option<Self>, EscalationError> {
        Self::preview_with(config, cwd, None)
    }

    /// [`preview`](Self::preview) with the tasks in `tasks` (`None`: prd.json when
    /// `escalation.prd` is set). A list given without an `escalation` block escalates with
    /// its defaults.
    pub fn preview_with(
        config: &Config,
        cwd: &Path,
        tasks: Option<Box<dyn TaskList>>,
    ) -> Result<Option<Self>, EscalationError> {
        if config.escalation.is_none() && tasks.is_none() {
            return Ok(None);
        }
        let esc = Self::settings(config);
        // Paths stay as written when ralph runs where the agent does, so errors name them so.
        let at = |p: &Path| match cwd == Path::new(".") {
            true => p.to_path_buf(),
            false => cwd.join(p),
        };
        // A symlink is followed once, here: files are replaced by renaming a new one over
        // them, which would replace the link itself.
        let mut list = tasks.or_else(|| {
            esc.prd
                .as_deref()
                .map(|p| Box::new(PrdList::new(at(p))) as Box<dyn TaskList>)
        });
        let progress = followed(at(&esc.progress));
        let first = list.as_ref().and_then(|l| l.files().into_iter().next());
        progress::check_path(&progress, first.as_deref(), None)?;
        let (counts, not_now) = match list.as_mut().map(|list| list.load()) {
            Some(Ok(tasks)) => (Some(summary(&tasks)), None),
            // Not now (a rate limit, a 5xx): the first look waits as long as the list asked,
            // in the run, saying why, before it asks again.
            Some(Err(TaskListError::RetryAfter { wait, why })) => {
                (None, Some(TaskWait::new(wait, why)))
            }
            None => (None, None),
            Some(Err(err)) => return Err(err.into()),
        };
        Ok(Some(Self {
            list,
            progress,
            has_checks: !config.done_when.is_empty(),
            repo: None,
            breaker: Breaker::new(esc.same_error_limit, config.convergence.max_attempts),
            current: None,
            counts,
            preexisting: None,
            pending: Vec::new(),
            said: std::collections::BTreeSet::new(),
            unwritten: Vec::new(),
            conflict: String::new(),
            only: None,
            asked: None,
            answered: None,
            not_now,
            only_passed: false,
            passed: std::collections::BTreeMap::new(),
            pull_request: None,
        }))
    }

    pub(crate) fn open_repo(
        &mut self,
        options: &Options,
        written: &[PathBuf],
        resume: Option<&resume::Accept>,
        opening: Opening,
    ) -> Result<(), EscalationError> {
        let git = Git::open(&options.cwd)?;
        git.head()?;
        let folder = std::fs::canonicalize(&options.cwd).unwrap_or_else(|_| options.cwd.clone());
        if opening != Opening::Check && folder != git.top() {
            // Reverting only the folder would keep an attempt's edits elsewhere: said instead.
            self.pending.push(format!(
                "{}: the loop's folder is inside the repository {}; a revert covers the whole \
                 repository: an edit anywhere in it when the breaker trips (yours too) is saved \
                 with the attempt under refs/ralph/attempts/ and reverted",
                folder.display(),
                git.top().display()
            ));
        }
        let submodules = git.submodules()?;
        if !submodules.is_empty() {
            return Err(GitError::Submodules {
                dir: git.top().to_path_buf(),
                paths: submodules,
            }
            .into());
        }
        // Before the first paid run: a commit that fails later would end the run mid-story.
        git.check_can_commit()?;
        if opening == Opening::Check && journal::pending(&git)? {
            return Ok(());
        }
        // A pass or a revert a killed ralph left half done is finished before anything looks
        // at the tree: its work is the story's, not part of a dirty tree or the next attempt.
        let (found, said) = journal::finish(&git, self.list.as_deref_mut())?;
        self.pending.extend(said);
        if found.is_some() && self.list.is_some() {
            self.load()?;
        }
        let checkpoint = git.head()?;
        let branch = git.head_branch()?;
        let rel = |p: &Path| git.relative(&options.cwd, p);
        let mut own: Vec<PathBuf> = std::iter::once(Path::new(".ralph"))
            .chain(options.protect.iter().map(PathBuf::as_path))
            .filter_map(rel)
            .collect();
        let mut keep = own.clone();
        // A symlinked prd.json or progress.txt: the link and the file it points to.
        let files = self.list_files();
        keep.extend(
            files
                .iter()
                .chain([&self.progress])
                .chain(written)
                .filter_map(|p| rel(p)),
        );
        let prd = files.first().and_then(|p| rel(p));
        if let Some(resume) = resume {
            resume.extend_own(&mut own, &mut keep);
        }
        let mut dirty = git.dirty_paths(&keep)?;
        if let Some(resume) = resume.filter(|_| !dirty.is_empty()) {
            if resume.accepts(&git, &keep) {
                // The run's own interrupted attempt: it goes on from this tree.
                dirty.clear();
                self.pending.extend(resume.warning().map(str::to_owned));
            } else if !options.allow_dirty {
                if let Some(refused) = resume.refusal(&git, &keep) {
                    return Err(refused);
                }
            }
        }
        if !dirty.is_empty() {
            if !options.allow_dirty {
                return Err(EscalationError::DirtyTree {
                    dir: git.top().to_path_buf(),
                    paths: dirty,
                });
            }
            let saved = git.save(
                "refs/ralph/attempts/preexisting",
                "ralph: uncommitted changes found at start-up (--allow-dirty)",
                &own,
            )?;
            self.pending.push(format!(
                "uncommitted changes saved under {} (--allow-dirty)",
                saved.refname
            ));
            self.preexisting = Some(saved.refname);
            // The user's own work in progress: never committed, saved or reverted by ralph.
            own.extend(dirty.into_iter().map(PathBuf::from));
            keep.extend(own.iter().cloned());
        }
        self.repo = Some(Repo {
            git,
            cwd: options.cwd.clone(),
            checkpoint,
            branch,
            keep,
            own,
            prd,
            found,
            killed: resume.is_some_and(resume::Accept::killed),
        });
        Ok(())
    }
}
