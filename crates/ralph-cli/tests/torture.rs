//! The trust torture test: a story-mode loop is killed with SIGKILL again and again, at moments
//! spread over every step of its iterations (agent, checks, the pass commit, the escalation's
//! save, log, revert and block), restarted each time as a user would (`--allow-dirty`, and every
//! other time `--resume`), while a second run is attempted beside it. After every kill: no process of the run is alive, prd.json
//! parses, and a story marked passed has its commit on the branch. At the end: no byte the agent
//! wrote and no byte of the user's own work is lost.
//!
//! A second loop has no checks: the agent marks its story passed in prd.json itself, half of the
//! time, so a kill can fall between its mark and ralph's pass commit. There the next start
//! finishes the pass: at most the one story being passed lacks its commit after a kill, and
//! every story marked passed has it once a run ended by itself.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{code, stderr};

use serde_json::Value;

/// Runs git in `dir`; returns stdout when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn must_git(dir: &Path, args: &[&str]) -> String {
    git(dir, args).unwrap_or_else(|| panic!("git {args:?} failed"))
}

/// The agent: each iteration writes a file of unique content, commits it half of the time,
/// leaves a second one uncommitted, and records each in the ledger (outside the repository)
/// once it is whole; with `TORTURE_MARKS` set, it marks its story passed in prd.json half of the
/// time. Its pid and its background child's go to `pids`.
const AGENT: &str = r#"echo "$$ $(cut -d' ' -f22 /proc/$$/stat) agent of $PPID" >> "$TORTURE_PIDS"
sleep 30 &
echo "$! $(cut -d' ' -f22 /proc/$!/stat) sleep of $$" >> "$TORTURE_PIDS"
story=$(sed -n 's/^Work on \(.*\)\.$/\1/p')
id="$(date +%s%N)-$$"
mkdir -p work
printf 'agent work %s\n' "$id" > "work/$id-u.txt"
echo "work/$id-u.txt" >> "$TORTURE_LEDGER"
if [ $(( $$ % 2 )) = 0 ]; then
  printf 'agent work %s\n' "$id" > "work/$id-c.txt"
  git add "work/$id-c.txt" && git commit -qm "agent $id" && echo "work/$id-c.txt" >> "$TORTURE_LEDGER"
fi
if [ -n "$TORTURE_MARKS" ] && [ $(( $$ / 2 % 2 )) = 0 ]; then
  sed -i "/\"id\": \"$story\"/,/\"passes\"/ s/\"passes\": false/\"passes\": true/" prd.json
fi
"#;

/// Passes about half of the time; fails always with the same output, so the breaker trips.
const CHECK: &str =
    "[ $(( $(date +%N) / 1000 % 2 )) = 0 ] || { echo 'FAIL: not done yet'; exit 1; }\n";

struct Torture {
    dir: tempfile::TempDir,
    stories_made: u64,
    /// No checks: the agent marks its stories passed itself.
    marks: bool,
}

impl Torture {
    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }
    fn ledger(&self) -> PathBuf {
        self.dir.path().join("ledger")
    }
    fn pids(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    fn new(marks: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let checks = match marks {
            true => "convergence: {max_attempts: 2}\n",
            false => {
                "done_when:\n  - sh check.sh\nconvergence: {max_attempts: 3, backoff: 1ms, max_backoff: 1ms}\n"
            }
        };
        std::fs::write(
            repo.join("RALPH.md"),
            format!(
                "---\nagent: sh agent.sh\n{checks}escalation:\n  prd: prd.json\n  same_error_limit: 2\n\
                 max_iterations: 1000\n---\nWork on {{{{ story.id }}}}.\n"
            ),
        )
        .unwrap();
        std::fs::write(repo.join("agent.sh"), AGENT).unwrap();
        std::fs::write(repo.join("check.sh"), CHECK).unwrap();
        std::fs::write(repo.join("user.txt"), "the user's committed work\n").unwrap();
        std::fs::write(repo.join(".gitignore"), "notes.local\n").unwrap();
        let mut t = Self {
            dir,
            stories_made: 0,
            marks,
        };
        t.new_stories();
        common::git_repo(&repo);
        std::fs::write(repo.join("notes.local"), "the user's ignored notes\n").unwrap();
        std::fs::write(repo.join("draft.txt"), "the user's uncommitted draft\n").unwrap();
        t
    }

    /// A fresh prd.json of three stories no earlier round used.
    fn new_stories(&mut self) {
        let stories: Vec<Value> = (0..3)
            .map(|_| {
                self.stories_made += 1;
                serde_json::json!({
                    "id": format!("US-{:03}", self.stories_made),
                    "title": "Work",
                    "priority": self.stories_made,
                    "passes": false,
                    "notes": "written by a person",
                })
            })
            .collect();
        let prd = serde_json::json!({ "userStories": stories });
        std::fs::write(
            self.repo().join("prd.json"),
            serde_json::to_string_pretty(&prd).unwrap(),
        )
        .unwrap();
    }

    /// `ralph run`, or with `resume` `ralph run --resume`: the killed run goes on.
    fn ralph(&self, resume: bool) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ralph"));
        cmd.current_dir(self.repo())
            .args(["run", "--allow-dirty", "--quiet"])
            .args(resume.then_some("--resume"))
            .env("TORTURE_LEDGER", self.ledger())
            .env("TORTURE_PIDS", self.pids())
            .env("TORTURE_MARKS", if self.marks { "1" } else { "" })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    fn prd(&self) -> Value {
        let text = std::fs::read_to_string(self.repo().join("prd.json")).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("prd.json parses: {e}\n{text}"))
    }

    /// After a kill: `pending` is how many stories may be marked passed without their commit
    /// yet (a pass the agent marked, which the next start finishes).
    fn check_after_kill(&self, round: u64, pending: usize) {
        // Every process the run started is gone within a second. Each is named by its pid and
        // start time: pids are reused, and this machine's may wrap within a test.
        let deadline = Instant::now() + Duration::from_secs(1);
        let pids = std::fs::read_to_string(self.pids()).unwrap_or_default();
        for line in pids.lines() {
            let mut fields = line.split_whitespace();
            let (Some(pid), Some(start)) = (fields.next(), fields.next()) else {
                continue;
            };
            let pid: i32 = pid.parse().unwrap();
            while alive(pid, start) {
                assert!(
                    Instant::now() < deadline,
                    "round {round}: process {line} of the run outlived ralph by a second"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = std::fs::remove_file(self.pids());
        // prd.json parses, and a pass is recorded only with its commit on the branch.
        let prd = self.prd();
        let mut uncommitted = Vec::new();
        for story in prd["userStories"].as_array().unwrap() {
            let id = story["id"].as_str().unwrap();
            assert!(
                story["notes"]
                    .as_str()
                    .is_some_and(|n| n.contains("written by a person")),
                "round {round}: {id}: a person's notes are kept: {story}"
            );
            if story["passes"] == Value::Bool(true) {
                let log = must_git(
                    &self.repo(),
                    &[
                        "log",
                        "--format=%s",
                        "--fixed-strings",
                        "--grep",
                        id,
                        "main",
                    ],
                );
                if !log.lines().any(|s| s == format!("ralph: {id} passes")) {
                    uncommitted.push(id.to_owned());
                }
            }
        }
        assert!(
            uncommitted.len() <= pending,
            "round {round}: {uncommitted:?} marked passed without a commit on main"
        );
    }

    /// Every file the ledger names is in the working tree, or in a commit reachable from a
    /// branch or a ralph ref, with the bytes the agent wrote.
    fn check_nothing_lost(&self) {
        let repo = self.repo();
        let ledger = std::fs::read_to_string(self.ledger()).unwrap_or_default();
        let written: BTreeSet<&str> = ledger.lines().collect();
        // How much the agent wrote depends on the machine's load (on a busy one most kills
        // land before an agent starts); the last run, which ends by itself, always runs it.
        assert!(!written.is_empty(), "the agent never wrote a file");
        for path in written {
            let id = path
                .trim_start_matches("work/")
                .trim_end_matches("-u.txt")
                .trim_end_matches("-c.txt");
            let expected = format!("agent work {id}\n").into_bytes();
            if std::fs::read(repo.join(path)).ok() == Some(expected.clone()) {
                continue;
            }
            let commits = must_git(&repo, &["log", "--all", "--format=%H", "--", path]);
            let saved = commits.lines().any(|c| {
                Command::new("git")
                    .current_dir(&repo)
                    .args(["show", &format!("{c}:{path}")])
                    .output()
                    .is_ok_and(|o| o.status.success() && o.stdout == expected)
            });
            assert!(saved, "{path}: the agent's work is lost");
        }
        for (path, content) in [
            ("user.txt", "the user's committed work\n"),
            ("notes.local", "the user's ignored notes\n"),
            ("draft.txt", "the user's uncommitted draft\n"),
        ] {
            assert_eq!(
                std::fs::read_to_string(repo.join(path)).ok().as_deref(),
                Some(content),
                "{path}: the user's work is kept"
            );
        }
    }
}

/// Whether process `pid`, started at `start` (clock ticks since boot, `/proc/PID/stat` field 22),
/// is still running: a zombie (killed, not yet reaped by its new parent) has ended.
fn alive(pid: i32, start: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // rest[0] is field 3 (the state), so field 22 is rest[19].
    rest.first().is_some_and(|state| *state != "Z") && rest.get(19) == Some(&start)
}

#[test]
fn sigkill_at_every_step_loses_nothing_and_leaves_nothing_running() {
    torture(Torture::new(false), 40);
}

#[test]
fn sigkill_between_the_agents_own_pass_mark_and_the_pass_commit_loses_no_pass() {
    torture(Torture::new(true), 24);
}

/// Kills the loop `kills` times, then lets a last run end, checking after each kill.
fn torture(mut t: Torture, kills: u64) {
    // With the agent marking its stories, the one being passed when ralph was killed may lack
    // its commit until the next start.
    let pending = usize::from(t.marks);
    // A small deterministic generator: the kill moments are spread, and the same every run.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    let mut refused = 0;
    // Rounds whose resume found nothing to resume: the second run then had the folder alone.
    let mut uncontested = 0;
    for round in 0..kills {
        // Every other restart resumes the killed run, from a session file that may be a step
        // behind what ralph did before the kill.
        let resume = round % 2 == 1;
        let mut child = t.ralph(resume).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(20 + next(400)));

        // A second run beside it: while one of the two holds the folder, the other is refused.
        let second = t.ralph(false).output().unwrap();

        // Child::kill sends SIGKILL, and does nothing to a child already reaped.
        let _ = child.kill();
        let status = child.wait().unwrap();
        t.check_after_kill(round, pending);
        let first = child.wait_with_output().unwrap();

        let mut ended = false;
        for (code, err) in [
            (status.code(), stderr(&first)),
            (second.status.code(), stderr(&second)),
        ] {
            match code {
                // Killed while it ran.
                None => {}
                // The run before had ended, or was killed before its first session write.
                Some(2)
                    if resume
                        && ["ended by itself", "nothing to resume", "cannot resume"]
                            .iter()
                            .any(|why| err.contains(why)) =>
                {
                    uncontested += 1;
                }
                Some(2) => {
                    assert!(
                        err.contains("another ralph run is already working"),
                        "round {round}: refused for the lock only: {err}"
                    );
                    refused += 1;
                }
                // It ran to its end: every story passed or blocked.
                Some(0 | 1) => ended = true,
                Some(c) => panic!("round {round}: exit {c}: {err}"),
            }
        }
        if ended {
            // A run that ended by itself finished any pass it found first.
            t.check_after_kill(round, 0);
            t.new_stories();
        }
        // The agent's own `git commit`, killed half-way, leaves its index.lock (or HEAD's, or
        // the branch's), as it would for a person: remove them as they would.
        for lock in ["index.lock", "HEAD.lock", "refs/heads/main.lock"] {
            let _ = std::fs::remove_file(t.repo().join(".git").join(lock));
        }
    }
    // A resumed run may end at once (its run's iterations spent, or nothing left to resume),
    // leaving the folder to the second: the bound is loose, what matters is that the lock is
    // contested and holds.
    assert!(
        refused >= kills / 4,
        "the lock was tried: {refused} refusals in {} contested rounds",
        kills - uncontested
    );
    // A last run to the end, then the whole history is checked.
    let out = t.ralph(false).output().unwrap();
    assert!(
        matches!(code(&out), 0 | 1),
        "the last run ends: {}",
        stderr(&out)
    );
    t.check_after_kill(kills, 0);
    t.check_nothing_lost();
    let stale: Vec<_> = std::fs::read_dir(t.repo().join(".git"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("ralph-save-index")
        })
        .map(|e| e.file_name())
        .collect();
    assert!(stale.is_empty(), "stale save indexes: {stale:?}");
}
