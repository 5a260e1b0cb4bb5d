//! A step ralph was killed in the middle of is finished by the next start, resumed or not: a
//! pass the agent marked gets its `ralph: <id> passes` commit holding the agent's work, and a
//! revert that was cut short is done and the story blocked, so no story's work ends up filed
//! under another story.
//!
//! The kill is deterministic: a `git` wrapper first on PATH SIGKILLs ralph (its parent) at the
//! n-th call of one git subcommand once the agent has armed it, before or after running it.

use crate::common;

use std::path::Path;
use std::process::Stdio;

use common::{Project, When, code, git, git_repo, killing_git, show, stderr};
use serde_json::Value;

/// prd.json with `ids`, one field a line, none passed.
fn prd_text(ids: &[&str]) -> String {
    let stories: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            format!(
                "    {{\n      \"id\": \"{id}\",\n      \"title\": \"Story {id}\",\n      \"priority\": {},\n      \"passes\": false,\n      \"notes\": \"\"\n    }}",
                i + 1
            )
        })
        .collect();
    format!(
        "{{\n  \"project\": \"Shop\",\n  \"userStories\": [\n{}\n  ]\n}}\n",
        stories.join(",\n")
    )
}

/// A story repository: RALPH.md with `frontmatter`, `agent.sh`, prd.json of `ids`, committed.
fn repo(frontmatter: &str, agent: &str, ids: &[&str]) -> Project {
    let p = Project::new(frontmatter, "STORY={{ story.id }}\n");
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join("prd.json"), prd_text(ids)).unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    p
}

fn passes(dir: &Path, id: &str) -> Value {
    let prd: Value = serde_json::from_slice(&std::fs::read(dir.join("prd.json")).unwrap())
        .expect("prd.json parses");
    prd["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap()["passes"]
        .clone()
}

/// Subjects on main, newest first.
fn history(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s", "main"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The paths `rev` changed from its first parent.
fn changed_by(dir: &Path, rev: &str) -> Vec<String> {
    git(dir, &["diff", "--name-only", &format!("{rev}^"), rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Story mode without checks: US-001's agent writes its work and marks the story passed itself
/// (and arms the wrapper); US-002's agent writes its work and is blocked at once, so its
/// attempt is reverted.
const MARKS_ITS_OWN_PASS: &str = r#"story=$(sed -n 's/^STORY=//p')
echo "$story work" > "work-$story.txt"
case "$story" in
US-001)
  sed -i '/"id": "US-001"/,/"passes"/ s/"passes": false/"passes": true/' prd.json
  : > "$ARM"
  ;;
US-002) echo '<!-- ralph:state blocked reason="stuck" -->';;
esac
"#;

const NO_CHECKS: &str = "agent: sh agent.sh\nescalation:\n  prd: prd.json\n  same_error_limit: 1";

#[test]
fn a_pass_the_agent_marked_and_ralph_was_killed_committing_is_finished_by_the_next_start() {
    let cases = [
        ("read-tree", 1, When::Before),
        ("add", 1, When::Before),
        ("write-tree", 1, When::Before),
        ("commit-tree", 1, When::After),
        // The checkpoint ref, then HEAD.
        ("update-ref", 1, When::After),
        ("reset", 1, When::After),
        ("update-ref", 2, When::After),
    ];
    for (i, (word, nth, when)) in cases.into_iter().enumerate() {
        let case = format!("{word} #{nth} {when:?}");
        let p = repo(NO_CHECKS, MARKS_ITS_OWN_PASS, &["US-001", "US-002"]);
        let dir = p.path();
        let bin = tempfile::tempdir().unwrap();
        let path_env = killing_git(bin.path(), word, nth, when);
        let arm = bin.path().join("armed");
        let mut first = p.ralph(&["run"]);
        first.env("ARM", &arm);
        let out = first
            .env("PATH", &path_env)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            bin.path().join("killed").exists() && out.status.code().is_none(),
            "{case}: killed during the pass: {}",
            stderr(&out)
        );
        assert_eq!(passes(dir, "US-001"), true, "{case}: the agent marked it");

        // Every other case goes on with a plain start rather than a resume.
        let args: &[&str] = match i % 2 {
            0 => &["run", "--resume"],
            _ => &["run"],
        };
        let out = p
            .ralph(args)
            .env("ARM", bin.path().join("unused"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 1, "{case}: {}", stderr(&out));
        assert!(
            history(dir).iter().any(|s| s == "ralph: US-001 passes"),
            "{case}: the pass commit is on the branch: {:?}",
            history(dir)
        );
        let pass = git(
            dir,
            &[
                "log",
                "--format=%H",
                "--grep",
                "^ralph: US-001 passes$",
                "main",
            ],
        );
        let pass = pass.lines().next().unwrap();
        assert_eq!(
            show(dir, pass, "work-US-001.txt").as_deref(),
            Some(&b"US-001 work\n"[..]),
            "{case}: the pass commit holds the agent's work"
        );
        let committed: Value = serde_json::from_slice(&show(dir, pass, "prd.json").unwrap())
            .expect("committed prd.json parses");
        assert_eq!(committed["userStories"][0]["passes"], true, "{case}");
        assert_eq!(
            std::fs::read_to_string(dir.join("work-US-001.txt"))
                .ok()
                .as_deref(),
            Some("US-001 work\n"),
            "{case}: US-001's work stays in the tree"
        );
        // US-002 was reverted; its saved attempt holds its own work only.
        assert_eq!(passes(dir, "US-002"), "blocked", "{case}");
        let saved = git(
            dir,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/ralph/attempts/US-002/",
            ],
        );
        let saved = saved.trim();
        assert_eq!(
            changed_by(dir, saved),
            ["work-US-002.txt"],
            "{case}: US-002's saved attempt holds US-002's work only"
        );
        assert!(
            !git(dir, &["for-each-ref", "refs/ralph/attempts/"]).contains("US-001"),
            "{case}: nothing of US-001 was filed as abandoned"
        );
    }
}

/// Story mode with checks: US-001's check fails on its first attempt only (the breaker trips at
/// once); US-002's passes. The agent writes its work, and for US-001 a second file, then arms
/// the wrapper.
const FAILS_ONCE: &str = r#"story=$(sed -n 's/^STORY=//p')
printf '%s' "$story" > .story
echo "$story work" > "work-$story.txt"
[ "$story" = US-001 ] && echo "left over" > "leftover-$story.txt" && : > "$ARM"
exit 0
"#;

fn fails_once(flag: &Path) -> String {
    format!(
        "agent: sh agent.sh\ndone_when:\n  - 'if [ \"$(cat .story)\" = US-001 ] && [ ! -e {flag} ]; then : > {flag}; echo \"error: nope\"; exit 1; fi'\n\
         convergence: {{backoff: 1ms, max_backoff: 1ms}}\nescalation:\n  prd: prd.json\n  same_error_limit: 1",
        flag = flag.display()
    )
}

#[test]
fn a_revert_ralph_was_killed_in_is_finished_and_the_story_blocked_by_the_next_start() {
    // The revert after the save and the progress.txt entry: HEAD back on the branch, HEAD moved
    // to the checkpoint, the index reset, the tracked files checked out.
    let cases = [
        // The saved attempt named (its ref, the first update-ref), the entry not yet written.
        ("update-ref", 1, When::After),
        ("symbolic-ref", 1, When::Before),
        ("update-ref", 2, When::After),
        ("reset", 1, When::After),
        ("checkout", 1, When::After),
    ];
    for (i, (word, nth, when)) in cases.into_iter().enumerate() {
        let case = format!("{word} #{nth} {when:?}");
        let flags = tempfile::tempdir().unwrap();
        let p = repo(
            &fails_once(&flags.path().join("failed")),
            FAILS_ONCE,
            &["US-001", "US-002"],
        );
        let dir = p.path();
        let init = git(dir, &["rev-parse", "HEAD"]).trim().to_owned();
        let bin = tempfile::tempdir().unwrap();
        let path_env = killing_git(bin.path(), word, nth, when);
        let mut first = p.ralph(&["run"]);
        first.env("ARM", bin.path().join("armed"));
        let out = first
            .env("PATH", &path_env)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            bin.path().join("killed").exists() && out.status.code().is_none(),
            "{case}: killed during the revert: {}",
            stderr(&out)
        );
        let progress = std::fs::read_to_string(dir.join("progress.txt")).unwrap_or_default();
        let saved = "refs/ralph/attempts/US-001/1";
        // The first kill comes before the progress.txt entry is written.
        assert!(
            i < 1 || progress.contains(saved),
            "{case}: the trip was logged"
        );

        let args: &[&str] = match i % 2 {
            0 => &["run", "--resume"],
            _ => &["run"],
        };
        let out = p
            .ralph(args)
            .env("ARM", bin.path().join("unused"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 1, "{case}: {}", stderr(&out));
        assert_eq!(passes(dir, "US-001"), "blocked", "{case}: the trip is kept");
        assert_eq!(passes(dir, "US-002"), true, "{case}");
        let log = history(dir);
        assert!(
            !log.iter().any(|s| s == "ralph: US-001 passes"),
            "{case}: {log:?}"
        );
        assert_eq!(git(dir, &["rev-parse", "HEAD^"]).trim(), init, "{case}");
        // US-002's pass holds its own work only; US-001's is saved, none of it left behind.
        let mut passed = changed_by(dir, "HEAD");
        passed.sort();
        assert_eq!(
            passed,
            [".story", "prd.json", "progress.txt", "work-US-002.txt"],
            "{case}: US-002's pass commit holds US-002's work only"
        );
        for file in ["work-US-001.txt", "leftover-US-001.txt"] {
            assert!(!dir.join(file).exists(), "{case}: {file} reverted");
            assert!(
                show(dir, saved, file).is_some(),
                "{case}: {file} saved under {saved}"
            );
        }
        assert_eq!(
            git(
                dir,
                &[
                    "for-each-ref",
                    "--format=%(refname)",
                    "refs/ralph/attempts/"
                ]
            ),
            format!("{saved}\n"),
            "{case}: nothing new to save when the revert was finished"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("progress.txt"))
                .unwrap()
                .matches(saved)
                .count(),
            2,
            "{case}: one entry (its ref named twice in it): {progress}"
        );
    }
}

/// Killed after the abandoned attempt is stored but before the journal holds the revert (the
/// `git log` and `git diff --stat` for the progress.txt entry): no ref names the attempt yet,
/// so the next start takes up its work as the interrupted iteration's, as after any kill in an
/// iteration, and files it under its own story; nothing is saved as abandoned that the next
/// start does not know of.
#[test]
fn a_kill_before_the_revert_is_journaled_leaves_no_attempt_saved_apart() {
    let cases = [
        ("commit-tree", 1, When::After),
        ("log", 1, When::Before),
        ("log", 1, When::After),
        ("diff", 1, When::Before),
        ("diff", 1, When::After),
    ];
    for (word, nth, when) in cases {
        let case = format!("{word} #{nth} {when:?}");
        let flags = tempfile::tempdir().unwrap();
        let p = repo(
            &fails_once(&flags.path().join("failed")),
            FAILS_ONCE,
            &["US-001", "US-002"],
        );
        let dir = p.path();
        let bin = tempfile::tempdir().unwrap();
        let path_env = killing_git(bin.path(), word, nth, when);
        let out = p
            .ralph(&["run"])
            .env("ARM", bin.path().join("armed"))
            .env("PATH", &path_env)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            bin.path().join("killed").exists() && out.status.code().is_none(),
            "{case}: killed while the trip is saved: {}",
            stderr(&out)
        );
        // A plain start refuses the tree an iteration left, pointing at `--resume`.
        let out = p
            .ralph(&["run", "--resume"])
            .env("ARM", bin.path().join("unused"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
        assert_eq!(
            git(dir, &["for-each-ref", "refs/ralph/attempts/"]),
            "",
            "{case}: no attempt saved apart from its story"
        );
        for id in ["US-001", "US-002"] {
            assert_eq!(passes(dir, id), true, "{case}: {id}");
            let pass = git(
                dir,
                &[
                    "log",
                    "--format=%H",
                    "--grep",
                    &format!("^ralph: {id} passes$"),
                    "main",
                ],
            );
            let mut files = changed_by(dir, pass.trim());
            files.retain(|f| f.starts_with("work-") || f.starts_with("leftover-"));
            files.sort();
            let own: Vec<String> = match id {
                "US-001" => vec!["leftover-US-001.txt".into(), "work-US-001.txt".into()],
                _ => vec!["work-US-002.txt".into()],
            };
            assert_eq!(files, own, "{case}: {id}'s pass holds its own work");
        }
    }
}

#[test]
fn a_file_written_after_a_revert_was_cut_short_is_saved_before_the_revert_is_finished() {
    let flags = tempfile::tempdir().unwrap();
    let p = repo(
        &fails_once(&flags.path().join("failed")),
        FAILS_ONCE,
        &["US-001", "US-002"],
    );
    let dir = p.path();
    let bin = tempfile::tempdir().unwrap();
    let path_env = killing_git(bin.path(), "checkout", 1, When::After);
    let out = p
        .ralph(&["run"])
        .env("ARM", bin.path().join("armed"))
        .env("PATH", &path_env)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "{}", stderr(&out));
    // Someone writes a file before the next start.
    std::fs::write(dir.join("mine.txt"), "written after the kill\n").unwrap();

    let out = p
        .ralph(&["run", "--resume"])
        .env("ARM", bin.path().join("unused"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(passes(dir, "US-001"), "blocked");
    let second = "refs/ralph/attempts/US-001/2";
    assert_eq!(
        show(dir, second, "mine.txt").as_deref(),
        Some(&b"written after the kill\n"[..]),
        "saved before the revert removed it"
    );
    let warnings: Vec<String> = p
        .events_of("WARNING")
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(warnings.iter().any(|w| w.contains(second)), "{warnings:#?}");
}

/// `ralph check` only looks: a step a killed ralph left half done is finished by the next run,
/// not by a check (nor one made while a run is taking a step).
#[test]
fn ralph_check_after_a_kill_leaves_the_unfinished_pass_to_the_next_run() {
    let p = repo(NO_CHECKS, MARKS_ITS_OWN_PASS, &["US-001", "US-002"]);
    let dir = p.path();
    let bin = tempfile::tempdir().unwrap();
    let path_env = killing_git(bin.path(), "commit-tree", 1, When::After);
    let out = p
        .ralph(&["run"])
        .env("ARM", bin.path().join("armed"))
        .env("PATH", &path_env)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "killed: {}", stderr(&out));
    let journal = dir.join(".git/ralph-journal.json");
    assert!(journal.exists(), "the pass under way is recorded");
    let before = history(dir);

    let out = p.ralph(&["check"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(journal.exists(), "check finished nothing");
    assert_eq!(history(dir), before, "check committed nothing");

    let out = p
        .ralph(&["run"])
        .env("ARM", bin.path().join("unused"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(history(dir).iter().any(|s| s == "ralph: US-001 passes"));
    assert!(!journal.exists());
}
