//! git repositories for tests: running git and reading what it holds, a fresh repository on
//! `main` with an identity of its own, and git that stops where a test wants it to (a wrapper
//! that kills its caller at a chosen call, a hook that holds a ref update).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs git in `dir`; panics unless it succeeds; returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The bytes of `rev:path` in the repository at `dir`, if it exists.
pub fn show(dir: &Path, rev: &str, path: &str) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["show", &format!("{rev}:{path}")])
        .output()
        .expect("git runs");
    out.status.success().then_some(out.stdout)
}

/// Makes `dir` a git repository on `main` whose first commit ("init") holds everything in it:
/// a checkout ralph can checkpoint and revert in. It has an identity and signing off of its own,
/// so the machine's git configuration does not decide whether ralph's commits work.
pub fn git_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Ralph Test"]);
    git(dir, &["config", "user.email", "ralph@example.com"]);
    git(dir, &["config", "commit.gpgsign", "false"]);
    commit_all(dir, "init");
}

/// Commits everything in the repository at `dir` (new files too) as `message`.
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// The real git program, found on PATH.
pub fn real_git() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH")
}

/// When the wrapper kills ralph: before the git call runs, or right after it ran.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// Before the git call runs.
    Before,
    /// Right after the git call ran.
    After,
}

/// A `git` in `bin` that, once `bin/armed` exists, SIGKILLs its parent (ralph) at the `nth`
/// call whose first subcommand word is `word` (`bin/killed` says it did); returns PATH with
/// `bin` first. Deterministic kills at every git call of a step (killed_mid_step.rs).
pub fn killing_git(bin: &Path, word: &str, nth: u32, when: When) -> String {
    let git = real_git();
    let dir = bin.display();
    let (before, after) = match when {
        When::Before => ("kill -9 $PPID; exit 1", ""),
        When::After => ("", "kill -9 $PPID; exit $rc"),
    };
    let script = format!(
        r#"#!/bin/sh
GIT='{git}'
sub=""
skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in -C|-c) skip=1;; -*) ;; *) sub="$a"; break;; esac
done
if [ -e '{dir}/armed' ] && [ "$sub" = '{word}' ]; then
  n=$(cat '{dir}/count' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '{dir}/count'
  if [ $n = {nth} ]; then
    : > '{dir}/killed'
    {before}
    "$GIT" "$@"; rc=$?
    {after}
    exit $rc
  fi
fi
exec "$GIT" "$@"
"#,
        git = git.display(),
    );
    let path = bin.join("git");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// git held inside one ref update by a `reference-transaction` hook, so a test can kill ralph
/// at that exact moment and then let git go on without it.
pub struct HeldGit {
    marks: tempfile::TempDir,
}

impl HeldGit {
    /// A hook in `repo` that holds git once, at `stage` (`prepared`: before the ref moves;
    /// `committed`: after), on the first update of `refname` for which the shell condition
    /// `when` (on `$old` and `$new`) holds, until [`HeldGit::release`].
    pub fn install(repo: &Path, stage: &str, refname: &str, when: &str) -> Self {
        let marks = tempfile::tempdir().unwrap();
        let m = marks.path().display();
        let hook = repo.join(".git/hooks/reference-transaction");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\n[ \"$1\" = {stage} ] || exit 0\n\
                 while read -r old new ref; do\n\
                 [ \"$ref\" = {refname} ] && [ ! -e {m}/held ] || continue\n\
                 {when} || continue\n\
                 echo $PPID > {m}/git.pid.tmp && mv {m}/git.pid.tmp {m}/git.pid; touch {m}/held\n\
                 i=0; until [ -e {m}/release ]; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done\n\
                 done\nexit 0\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { marks }
    }

    /// Waits up to 30 s for git to be held.
    pub fn wait_held(&self) {
        let held = self.marks.path().join("held");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !held.exists() {
            assert!(Instant::now() < deadline, "git was never held");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Lets git go on, and waits up to 30 s for it to end.
    pub fn release(&self) {
        let pid: u32 = std::fs::read_to_string(self.marks.path().join("git.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::fs::write(self.marks.path().join("release"), "").unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        // Gone, or a zombie nobody reaped yet (its state follows the closing parenthesis).
        while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        }) {
            assert!(Instant::now() < deadline, "git {pid} never ended");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
