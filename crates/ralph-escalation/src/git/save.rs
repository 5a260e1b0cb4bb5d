//! Saving work before a revert, and the revert itself: everything in the working tree (new,
//! ignored-then-unignored and nested-repository files included) stored under a ref first,
//! then the tree put back to the checkpoint.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use super::{Git, GitError, Saved, TempIndex, literal_pathspecs, nul_entries, os_args};

impl Git {
    /// The repositories inside the tree that `index` does not track (an agent's `git init`).
    pub(super) fn nested_repos(
        &self,
        excluded: &[PathBuf],
        index: &Path,
    ) -> Result<Vec<PathBuf>, GitError> {
        Ok(self
            .untracked(excluded, Some(index))?
            .into_iter()
            .filter(|p| p.as_os_str().as_bytes().ends_with(b"/"))
            .map(|p| p.components().collect())
            .collect())
    }

    /// Adds the working files of the repository at `repo` (relative to the top folder) to
    /// `index` as ordinary files: its tracked and untracked, not ignored, files, byte for byte.
    pub(super) fn add_nested_files(&self, repo: &Path, index: &Path) -> Result<(), GitError> {
        let mut files = Vec::new();
        self.nested_files(repo, &mut files)?;
        let mut info = Vec::new();
        for chunk in files.chunks(256) {
            for (mode, oid, rel) in self.hash_files(chunk)? {
                info.extend_from_slice(format!("{mode} {oid}\t").as_bytes());
                info.extend_from_slice(rel.as_os_str().as_bytes());
                info.push(0);
            }
        }
        let args = os_args(&["update-index", "--add", "-z", "--index-info"]);
        self.run_in(&self.top, &args, Some(index), Some(&info))?;
        Ok(())
    }

    /// Pushes onto `files` the working files (tracked, or untracked and not ignored) of the
    /// repository at `repo` and of the repositories inside it, relative to the top folder.
    pub(super) fn nested_files(
        &self,
        repo: &Path,
        files: &mut Vec<PathBuf>,
    ) -> Result<(), GitError> {
        let args = os_args(&[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ]);
        let listing = self.run_in(&self.top.join(repo), &args, None, None)?;
        for entry in nul_entries(&listing) {
            let rel: PathBuf = repo.join(OsStr::from_bytes(entry)).components().collect();
            match entry.ends_with(b"/") {
                true => self.nested_files(&rel, files)?,
                false => files.push(rel),
            }
        }
        Ok(())
    }

    /// Stores `files` (relative to the top folder) as blobs: their index mode, blob id and
    /// path. A file listed but gone (deleted there) has nothing to store and is left out.
    pub(super) fn hash_files(
        &self,
        files: &[PathBuf],
    ) -> Result<Vec<(&'static str, String, PathBuf)>, GitError> {
        let mut entries = Vec::new();
        let mut regular = Vec::new();
        for rel in files {
            let path = self.top.join(rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                // A link's blob is its target, as git stores it.
                let target = std::fs::read_link(&path).map_err(|cause| GitError::Read {
                    path: path.clone(),
                    cause,
                })?;
                let args = os_args(&["hash-object", "-w", "--stdin"]);
                let oid =
                    self.run_in(&self.top, &args, None, Some(target.as_os_str().as_bytes()))?;
                entries.push((
                    "120000",
                    String::from_utf8_lossy(&oid).trim().to_owned(),
                    rel.clone(),
                ));
            } else if meta.is_file() {
                let mode = match meta.permissions().mode() & 0o111 {
                    0 => "100644",
                    _ => "100755",
                };
                regular.push((mode, rel));
            }
        }
        if regular.is_empty() {
            return Ok(entries);
        }
        let mut args = os_args(&["hash-object", "-w", "--no-filters", "--"]);
        args.extend(regular.iter().map(|(_, rel)| rel.as_os_str().to_owned()));
        let oids = self.run_with(&args, None)?;
        for ((mode, rel), oid) in regular.into_iter().zip(oids.lines()) {
            entries.push((mode, oid.to_owned(), rel.clone()));
        }
        Ok(entries)
    }

    /// Fills `index` with `base`'s tree plus everything in the working tree outside
    /// `excluded` (untracked files too, ignored ones not). A repository the agent created
    /// inside the tree is never recorded as a gitlink: `nested` says what becomes of it.
    pub(super) fn stage_work(
        &self,
        base: &str,
        excluded: &[PathBuf],
        index: &Path,
        nested: Nested,
    ) -> Result<(), GitError> {
        self.read_tree_keeping_stat(base, index)?;
        let repos = self.nested_repos(excluded, index)?;
        let skipped: Vec<PathBuf> = excluded.iter().chain(&repos).cloned().collect();
        self.add_all(&skipped, Some(index))?;
        if nested == Nested::Files {
            for repo in &repos {
                self.add_nested_files(repo, index)?;
            }
        }
        Ok(())
    }

    /// Stores everything that differs from HEAD (commits since the checkpoint are its history;
    /// staged, unstaged and untracked non-ignored files outside `excluded`, and the files of a
    /// repository the agent created inside the tree, are its tree) as a commit under the first
    /// free `<prefix>/<n>`, without touching the index, the working tree or HEAD. When the
    /// index differs from HEAD, the staged state is kept too, as a second parent (as
    /// `git stash` does): a file staged in one version and edited again loses neither.
    pub fn save(
        &self,
        prefix: &str,
        message: &str,
        excluded: &[PathBuf],
    ) -> Result<Saved, GitError> {
        let commit = self.save_commit(message, excluded)?;
        let refname = self.create_ref(prefix, &commit)?;
        Ok(Saved { refname, commit })
    }

    /// What [`save`](Self::save) stores, as a commit no ref names yet, with the first free
    /// `<prefix>/<n>` it is to be named by ([`name_saved`](Self::name_saved)). A step that must
    /// be journaled before its saved work has a name (a revert: a kill in between would leave
    /// a saved attempt the next start knows nothing of) records both, then names it.
    pub fn save_unnamed(
        &self,
        prefix: &str,
        message: &str,
        excluded: &[PathBuf],
    ) -> Result<Saved, GitError> {
        let commit = self.save_commit(message, excluded)?;
        let refname = self.next_ref(prefix)?;
        Ok(Saved { refname, commit })
    }

    /// Points `saved.refname` at `saved.commit` ([`save_unnamed`](Self::save_unnamed)), and
    /// returns the saved work as named: as given, also when the ref names it already; when
    /// another writer took the name meanwhile, its ref is left alone and the first free
    /// `<prefix>/<n>` names the work instead.
    pub fn name_saved(&self, saved: &Saved) -> Result<Saved, GitError> {
        match self.run(&["update-ref", &saved.refname, &saved.commit, ""]) {
            Ok(_) => Ok(saved.clone()),
            Err(_) if self.ref_exists(&saved.refname)? => {
                if self.ref_commit(&saved.refname)? == saved.commit {
                    return Ok(saved.clone());
                }
                let prefix = saved
                    .refname
                    .rsplit_once('/')
                    .map_or(saved.refname.as_str(), |(prefix, _)| prefix);
                Ok(Saved {
                    refname: self.create_ref(prefix, &saved.commit)?,
                    commit: saved.commit.clone(),
                })
            }
            Err(err) => Err(err),
        }
    }

    /// The commit [`save`](Self::save) stores.
    pub(super) fn save_commit(
        &self,
        message: &str,
        excluded: &[PathBuf],
    ) -> Result<String, GitError> {
        let index = TempIndex::new(&self.git_dir);
        let head = self.head()?;
        let mut parents = vec![head.clone()];
        if let Some(staged) = self.staged_commit(&head, index.path())? {
            parents.push(staged);
        }
        self.stage_work(&head, excluded, index.path(), Nested::Files)?;
        let tree = self.write_tree(index.path())?;
        self.commit_tree(&tree, &parents, message)
    }

    /// The tree of everything in the working tree outside `excluded` (untracked files too,
    /// ignored ones not), as [`save`](Self::save) would store it, without touching the index,
    /// the working tree or HEAD: equal trees mean the same work.
    pub fn work_tree(&self, excluded: &[PathBuf]) -> Result<String, GitError> {
        let index = TempIndex::new(&self.git_dir);
        let head = self.head()?;
        self.stage_work(&head, excluded, index.path(), Nested::Files)?;
        self.write_tree(index.path())
    }

    /// The user's index as a commit on `head`, or `None` when nothing is staged. Works on a copy
    /// (at `scratch`) so the user's index file is never written.
    pub(super) fn staged_commit(
        &self,
        head: &str,
        scratch: &Path,
    ) -> Result<Option<String>, GitError> {
        if std::fs::copy(self.user_index()?, scratch).is_err() {
            // No index yet: nothing is staged.
            return Ok(None);
        }
        // An index with conflicts has no tree; the working tree is still saved.
        let Ok(tree) = self.write_tree(scratch) else {
            return Ok(None);
        };
        if tree == self.tree_of(head)? {
            return Ok(None);
        }
        let commit = self.commit_tree(
            &tree,
            &[head.to_owned()],
            "ralph: the index (staged changes) when the work was saved",
        )?;
        Ok(Some(commit))
    }

    /// Puts HEAD, the index and the working tree back to `checkpoint` and removes untracked
    /// files, leaving alone ignored files, repositories inside the tree and everything under
    /// `excluded` (their index entries too). This is `git reset --hard` plus `git clean -fd`,
    /// done so that the excluded paths keep their current content even when they are tracked:
    /// HEAD moved, the index and then the working tree set from the checkpoint outside
    /// `excluded`, and every other untracked, not ignored, file removed.
    ///
    /// `saved` is what [`Git::save`] stored first. Files about to be removed that it lacks
    /// (files the agent wrote and added to `.gitignore`, no longer ignored once the
    /// checkpoint's `.gitignore` is back) are added to it first: its ref moves to a commit with
    /// the same parents and message whose tree holds them too. Returns the saved work as
    /// stored in the end.
    ///
    /// `branch` is the branch the checkpoint was taken on ([`Git::head_branch`] then), `None`
    /// for a detached HEAD. HEAD is put back on it before the reset, so the reset moves that
    /// branch only: when the agent checked out another branch (one of the user's own, say),
    /// that branch is left as it is rather than reset to the checkpoint.
    pub fn restore(
        &self,
        checkpoint: &str,
        branch: Option<&str>,
        excluded: &[PathBuf],
        saved: &Saved,
    ) -> Result<Saved, GitError> {
        match branch {
            // Only HEAD changes; the steps below set the branch, the index and the tree.
            Some(branch) => self.run(&["symbolic-ref", "HEAD", branch])?,
            None => self.run(&["update-ref", "--no-deref", "HEAD", checkpoint])?,
        };
        self.run(&[
            "update-ref",
            "-m",
            "ralph: revert to the checkpoint",
            "HEAD",
            checkpoint,
        ])?;
        let mut reset = os_args(&["reset", "-q", checkpoint]);
        reset.extend(Self::pathspec(excluded));
        self.run_with(&reset, None)?;
        let mut checkout: Vec<OsString> = vec!["checkout".into(), "-q".into()];
        checkout.extend(Self::pathspec(excluded));
        self.run_with(&checkout, None)?;
        let files: Vec<PathBuf> = self
            .untracked(excluded, None)?
            .into_iter()
            // A repository inside the tree stays, with its own history.
            .filter(|p| !p.as_os_str().as_bytes().ends_with(b"/"))
            .collect();
        let saved = self.save_files(saved, &files)?;
        self.remove(&files)?;
        Ok(saved)
    }

    /// Removes `files` (relative to the top folder) and then each folder of theirs that is left
    /// empty. Not `git clean -fd`: given a pathspec that excludes a file inside an untracked
    /// folder (an events file in `out/`), it removes the whole folder.
    pub(super) fn remove(&self, files: &[PathBuf]) -> Result<(), GitError> {
        for file in files {
            let path = self.top.join(file);
            match std::fs::remove_file(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(GitError::Remove { path, cause: err });
                }
                _ => {}
            }
            // Stops, harmlessly, at the first folder that still holds anything.
            for dir in file.ancestors().skip(1) {
                if dir.as_os_str().is_empty() || std::fs::remove_dir(self.top.join(dir)).is_err() {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Adds to `saved` those of `files` (untracked, about to be removed) that its tree lacks
    /// (the agent had them ignored); `saved` as it was when it holds them all.
    pub(super) fn save_files(&self, saved: &Saved, files: &[PathBuf]) -> Result<Saved, GitError> {
        if files.is_empty() {
            return Ok(saved.clone());
        }
        let index = TempIndex::new(&self.git_dir);
        self.run_with(
            &["read-tree".into(), saved.commit.as_str().into()],
            Some(index.path()),
        )?;
        let add = os_args(&["add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"]);
        self.run_in(
            &self.top,
            &add,
            Some(index.path()),
            Some(&literal_pathspecs(files)),
        )?;
        let tree = self.write_tree(index.path())?;
        if tree == self.tree_of(&saved.commit)? {
            return Ok(saved.clone());
        }
        let parents: Vec<String> = self
            .run(&["show", "-s", "--format=%P", &saved.commit])?
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let message = self.run(&["show", "-s", "--format=%B", &saved.commit])?;
        let commit = self.commit_tree(&tree, &parents, message.trim_end())?;
        self.run(&["update-ref", &saved.refname, &commit, &saved.commit])?;
        Ok(Saved {
            refname: saved.refname.clone(),
            commit,
        })
    }
}

/// What a tree built from the working tree does with a repository the agent created inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nested {
    /// Its files go in as ordinary files: saved work must hold them.
    Files,
    /// It stays out (and in the working tree): a checkpoint never records it as a gitlink.
    Leave,
}
