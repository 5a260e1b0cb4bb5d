//! Escalation: prd.json stories, the same-error circuit breaker, a git revert that loses nothing.
//!
//! Every test runs the real binary in a temporary git repository with a fake agent (a small sh
//! script committed to the repository) that commits work and makes checks fail.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{Project, code, git, git_repo, show};
use serde_json::Value;

/// A project with RALPH.md, `agent.sh`, an optional prd.json, a tracked file, an ignored file,
/// all committed in a fresh repository.
fn repo(frontmatter: &str, body: &str, agent: &str, prd: Option<&str>) -> Project {
    let p = Project::new(frontmatter, body);
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join("tracked.txt"), "original\n").unwrap();
    std::fs::write(dir.join(".gitignore"), "ignored.txt\n").unwrap();
    if let Some(prd) = prd {
        std::fs::write(dir.join("prd.json"), prd).unwrap();
    }
    git_repo(dir);
    std::fs::write(dir.join("ignored.txt"), "never touched\n").unwrap();
    p
}

fn prd_json(stories: &[(&str, u32)]) -> String {
    let stories: Vec<Value> = stories
        .iter()
        .map(|(id, priority)| {
            serde_json::json!({
                "id": id,
                "title": format!("Story {id}"),
                "description": "Do it",
                "acceptanceCriteria": ["it works"],
                "priority": priority,
                "passes": false,
                "notes": "",
                "x-team": {"owner": "web"}
            })
        })
        .collect();
    let prd = serde_json::json!({
        "project": "Shop",
        "branchName": "ralph/shop",
        "description": "Test",
        "userStories": stories,
        "x-extra": [1, 2]
    });
    serde_json::to_string_pretty(&prd).unwrap() + "\n"
}

fn read_prd(p: &Project) -> Value {
    let text = std::fs::read_to_string(p.path().join("prd.json")).unwrap();
    serde_json::from_str(&text).expect("prd.json is valid JSON")
}

fn story<'a>(prd: &'a Value, id: &str) -> &'a Value {
    prd["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap()
}

const STORY_BODY: &str = "STORY={{ story.id }}\nTITLE={{ story.title }}\n";

/// US-001 always fails `check.sh` with the same rustc error, only its line number and timing
/// changing; it commits its work, and on the third try also leaves an unstaged change and an
/// untracked file. US-002 succeeds.
const SAME_ERROR_AGENT: &str = r#"story=$(sed -n 's/^STORY=//p')
i=$RALPH_ITERATION
case "$story" in
US-001)
    mkdir -p work
    printf 'attempt %s\r\nno newline' "$i" > "work/US-001-$i.txt"
    printf 'error[E0308]: mismatched types\n  --> src/lib.rs:%d:5\ntest result: FAILED. finished in 0.%ds\n' $((10 + i * 7)) "$i" > error.txt
    git add work error.txt && git commit -qm "try $i"
    if [ "$i" = 3 ]; then
        echo "unstaged $i" >> tracked.txt
        printf 'scratch\000bytes' > scratch.bin
    fi
    ;;
US-002)
    echo done > ok
    git add ok && git commit -qm "story 2"
    ;;
esac
"#;

const CHECK: &str = "'test -f ok || { cat error.txt 2>/dev/null; exit 1; }'";

#[test]
fn the_same_error_three_times_blocks_the_story_reverts_and_the_next_story_passes() {
    let p = repo(
        &format!(
            "agent: sh agent.sh\ndone_when:\n  - {CHECK}\nconvergence: {{backoff: 10ms, max_backoff: 10ms}}\nescalation:\n  prd: prd.json"
        ),
        STORY_BODY,
        SAME_ERROR_AGENT,
        Some(&prd_json(&[("US-001", 1), ("US-002", 2)])),
    );
    let dir = p.path();
    let checkpoint = git(dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));

    // Exactly three attempts on US-001, then the breaker.
    let events = p.events();
    let tripped_at = events
        .iter()
        .position(|e| e["type"] == "CIRCUIT_TRIPPED")
        .expect("the breaker tripped");
    let attempts_before = events[..tripped_at]
        .iter()
        .filter(|e| e["type"] == "ATTEMPT_ENDED")
        .count();
    assert_eq!(attempts_before, 3);
    let tripped = &events[tripped_at];
    assert_eq!(tripped["story_id"], "US-001");
    assert_eq!(tripped["reason"], "same_error");
    assert_eq!(tripped["count"], 3);
    assert_eq!(tripped["signature"].as_str().unwrap().len(), 16);

    let reverted = &p.events_of("REVERTED")[0];
    assert_eq!(reverted["story_id"], "US-001");
    assert_eq!(reverted["checkpoint"], checkpoint.as_str());
    let saved = reverted["saved_ref"].as_str().unwrap();
    assert_eq!(saved, "refs/ralph/attempts/US-001/1");
    assert_eq!(p.events_of("STORY_BLOCKED")[0]["story_id"], "US-001");

    // The abandoned work is in the ref, byte for byte: commits, unstaged and untracked files.
    for i in 1..=3 {
        assert_eq!(
            show(dir, saved, &format!("work/US-001-{i}.txt")).unwrap(),
            format!("attempt {i}\r\nno newline").into_bytes()
        );
    }
    assert_eq!(
        show(dir, saved, "tracked.txt").unwrap(),
        b"original\nunstaged 3\n"
    );
    assert_eq!(show(dir, saved, "scratch.bin").unwrap(), b"scratch\0bytes");
    let history = git(dir, &["log", "--format=%s", saved]);
    assert!(
        history.contains("try 1") && history.contains("try 3"),
        "{history}"
    );

    // ... and gone from the tree, which is back at the checkpoint; ignored and ralph's files stay.
    assert!(!dir.join("work").exists());
    assert!(!dir.join("scratch.bin").exists());
    assert!(!dir.join("error.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("tracked.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("ignored.txt")).unwrap(),
        "never touched\n"
    );
    assert!(dir.join(".ralph/runs").is_dir());
    assert!(dir.join(".ralph/runs").read_dir().unwrap().count() == 1);

    // progress.txt and prd.json say why.
    let progress = std::fs::read_to_string(dir.join("progress.txt")).unwrap();
    assert!(progress.contains("US-001 \"Story US-001\""), "{progress}");
    assert!(
        progress.contains("failed 3 times in a row the same way: error"),
        "{progress}"
    );
    assert!(
        progress.contains("git checkout refs/ralph/attempts/US-001/1"),
        "{progress}"
    );
    assert!(
        progress.contains("error[E0308]: mismatched types"),
        "{progress}"
    );
    assert!(progress.contains("try 3"), "{progress}");
    let prd = read_prd(&p);
    let blocked = story(&prd, "US-001");
    assert_eq!(blocked["passes"], "blocked");
    let notes = blocked["notes"].as_str().unwrap();
    assert!(notes.contains("progress.txt:1"), "{notes}");
    assert!(notes.contains("refs/ralph/attempts/US-001/1"), "{notes}");
    assert!(
        notes.contains("the same way: error[E0308]: mismatched types"),
        "{notes}"
    );
    assert_eq!(blocked["x-team"]["owner"], "web");
    assert_eq!(prd["x-extra"], serde_json::json!([1, 2]));

    // The next story passed and got a checkpoint commit.
    let passed = &p.events_of("STORY_PASSED")[0];
    assert_eq!(passed["story_id"], "US-002");
    assert_eq!(passed["attempts"], 1);
    assert_eq!(story(&prd, "US-002")["passes"], true);
    let head = git(dir, &["rev-parse", "HEAD"]).trim().to_owned();
    assert_eq!(passed["checkpoint"], head.as_str());
    assert_eq!(
        git(dir, &["log", "-1", "--format=%s"]).trim(),
        "ralph: US-002 passes"
    );
    assert!(show(dir, "HEAD", "ok").is_some());

    let ended = p.run_ended();
    assert_eq!(ended["reason"], "stories_blocked");
    assert_eq!(ended["exit_code"], 1);
    assert_eq!(
        ended["stories"],
        serde_json::json!({"passed": 1, "blocked": 1, "remaining": 0})
    );
}

#[test]
fn a_different_error_each_time_is_not_tripped_by_the_same_error_rule() {
    // No prd.json: one task, and a tripped breaker ends the loop.
    let agent = r#"set -- alpha beta gamma delta epsilon
eval "kind=\${$RALPH_ITERATION}"
echo "error: $kind broke at line $RALPH_ITERATION" > error.txt
git add error.txt && git commit -qm "try $RALPH_ITERATION"
"#;
    let p = repo(
        &format!(
            "agent: sh agent.sh\ndone_when:\n  - {CHECK}\nconvergence: {{max_attempts: 4, backoff: 10ms, max_backoff: 10ms}}\nescalation: {{same_error_limit: 2}}"
        ),
        "fix it\n",
        agent,
        None,
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(p.events_of("ATTEMPT_ENDED").len(), 4);
    let tripped = p.events_of("CIRCUIT_TRIPPED");
    assert_eq!(tripped.len(), 1);
    assert_eq!(tripped[0]["reason"], "max_attempts");
    assert_eq!(tripped[0]["count"], 4);
    assert_eq!(tripped[0]["story_id"], Value::Null);
    assert!(tripped[0]["signature"].is_string(), "{:#?}", tripped[0]);
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(saved, "refs/ralph/attempts/main/1");
    assert_eq!(
        show(p.path(), &saved, "error.txt").unwrap(),
        b"error: delta broke at line 4\n"
    );
    assert!(!p.path().join("error.txt").exists());
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "circuit_open");
    assert_eq!(ended.get("stories"), None);
    let progress = std::fs::read_to_string(p.path().join("progress.txt")).unwrap();
    assert!(progress.contains("4 failed attempts"), "{progress}");
    assert!(
        progress.contains("attempts: 4 (iterations 1, 2, 3, 4)"),
        "{progress}"
    );
    assert!(
        progress.contains("error: delta broke at line 4"),
        "{progress}"
    );
    assert!(!progress.contains("no failing checks"), "{progress}");
}

/// US-001: leaves work behind and says it is blocked. US-002: does its work and, as there is no
/// `done_when`, marks itself passed in prd.json.
const BLOCKED_THEN_PASSING_AGENT: &str = r#"story=$(sed -n 's/^STORY=//p')
case "$story" in
US-001)
    echo half-done > half.txt
    echo '<!-- ralph:state blocked reason="needs an API key" -->'
    ;;
US-002)
    echo done > two.txt
    sed 's/"passes": false/"passes": true/' prd.json > prd.tmp && mv prd.tmp prd.json
    ;;
esac
"#;

#[test]
fn a_blocked_marker_escalates_at_once_and_the_agent_can_pass_a_story_itself() {
    let p = repo(
        "agent: sh agent.sh\nescalation:\n  prd: prd.json",
        STORY_BODY,
        BLOCKED_THEN_PASSING_AGENT,
        Some(&prd_json(&[("US-002", 5), ("US-001", 1)])),
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let tripped = p.events_of("CIRCUIT_TRIPPED");
    assert_eq!(tripped.len(), 1);
    assert_eq!(tripped[0]["reason"], "blocked");
    assert_eq!(tripped[0]["count"], 1);
    assert_eq!(tripped[0]["story_id"], "US-001");
    let blocked = &p.events_of("STORY_BLOCKED")[0];
    assert!(
        blocked["reason"]
            .as_str()
            .unwrap()
            .contains("needs an API key")
    );
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(show(p.path(), &saved, "half.txt").unwrap(), b"half-done\n");
    assert!(!p.path().join("half.txt").exists());
    let prd = read_prd(&p);
    assert_eq!(story(&prd, "US-001")["passes"], "blocked");
    assert!(
        story(&prd, "US-001")["notes"]
            .as_str()
            .unwrap()
            .contains("needs an API key")
    );
    assert_eq!(story(&prd, "US-002")["passes"], true);
    assert_eq!(p.events_of("STORY_PASSED")[0]["story_id"], "US-002");
    assert_eq!(
        git(p.path(), &["log", "-1", "--format=%s"]).trim(),
        "ralph: US-002 passes"
    );
    assert_eq!(show(p.path(), "HEAD", "two.txt").unwrap(), b"done\n");
    let ended = p.run_ended();
    assert_eq!(ended["iterations"], 2);
    assert_eq!(ended["reason"], "stories_blocked");
}

#[test]
fn ralphs_own_files_in_gitignore_do_not_break_saving_reverting_or_committing() {
    // `.ralph/` and the events file ignored, as users often do: `git add` must not trip over
    // ralph's exclusion of paths it would never add anyway.
    let p = repo(
        "agent: sh agent.sh\nescalation:\n  prd: prd.json",
        STORY_BODY,
        BLOCKED_THEN_PASSING_AGENT,
        Some(&prd_json(&[("US-001", 1), ("US-002", 2)])),
    );
    std::fs::write(
        p.path().join(".gitignore"),
        "ignored.txt\n.ralph/\nevents.jsonl\n",
    )
    .unwrap();
    git(p.path(), &["commit", "-q", "-am", "ignore ralph's files"]);

    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(
        p.run_ended()["reason"],
        "stories_blocked",
        "{}",
        common::stderr(&out)
    );
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(show(p.path(), &saved, "half.txt").unwrap(), b"half-done\n");
    assert!(show(p.path(), &saved, "events.jsonl").is_none());
    assert_eq!(show(p.path(), "HEAD", "two.txt").unwrap(), b"done\n");
    assert!(show(p.path(), "HEAD", ".ralph").is_none());
}

#[test]
fn every_story_passing_ends_with_stories_done_and_max_iterations_is_the_backstop() {
    let agent = r#"story=$(sed -n 's/^STORY=//p')
echo "$story" > "$story.txt"
"#;
    let check = "'test -f US-001.txt'";
    let p = repo(
        &format!("agent: sh agent.sh\ndone_when:\n  - {check}\nescalation:\n  prd: prd.json"),
        STORY_BODY,
        agent,
        Some(&prd_json(&[("US-001", 1), ("US-002", 2)])),
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "stories_done");
    assert_eq!(
        ended["stories"],
        serde_json::json!({"passed": 2, "blocked": 0, "remaining": 0})
    );
    assert_eq!(p.events_of("RUN_STARTED")[0]["max_iterations"], 10);

    // Stories left when max_iterations runs out: a failure.
    let p = repo(
        "agent: sh agent.sh\ndone_when: ['false']\nconvergence: {backoff: 10ms, max_backoff: 10ms}\nescalation:\n  prd: prd.json",
        STORY_BODY,
        "true\n",
        Some(&prd_json(&[("US-001", 1)])),
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 1);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "max_iterations_work_left");
    assert_eq!(ended["stories"]["remaining"], 1);
}

#[test]
fn a_dirty_tree_is_refused_unless_allowed_and_then_saved_first() {
    let p = repo(
        "agent: 'true'\nescalation:\n  prd: prd.json",
        STORY_BODY,
        "true\n",
        Some(&prd_json(&[("US-001", 1)])),
    );
    std::fs::write(p.path().join("tracked.txt"), "my own edit\n").unwrap();
    std::fs::write(p.path().join("notes.md"), "my notes\n").unwrap();
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 2);
    let err = common::stderr(&out);
    assert!(err.contains("uncommitted changes"), "{err}");
    assert!(
        err.contains("tracked.txt") && err.contains("notes.md"),
        "{err}"
    );
    assert!(err.contains("--allow-dirty"), "{err}");
    assert!(p.events().is_empty(), "nothing ran");

    let out = p.run(&["run", "-n", "1", "--allow-dirty"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let saved = "refs/ralph/attempts/preexisting/1";
    assert_eq!(
        show(p.path(), saved, "tracked.txt").unwrap(),
        b"my own edit\n"
    );
    assert_eq!(show(p.path(), saved, "notes.md").unwrap(), b"my notes\n");
    // Saving touched nothing.
    assert_eq!(
        std::fs::read_to_string(p.path().join("tracked.txt")).unwrap(),
        "my own edit\n"
    );
}

#[test]
fn revert_outside_a_git_repository_or_with_a_malformed_prd_is_refused() {
    let p = Project::new("agent: 'true'\nescalation: {}", "x\n");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 2);
    assert!(
        common::stderr(&out).contains("not a git repository"),
        "{}",
        common::stderr(&out)
    );

    let p = repo(
        "agent: 'true'\nescalation:\n  prd: prd.json",
        STORY_BODY,
        "true\n",
        Some(
            "{\n  \"userStories\": [\n    {\"id\": \"A\", \"priority\": 1, \"passes\": \"nope\"}\n  ]\n}\n",
        ),
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 2);
    let err = common::stderr(&out);
    assert!(err.contains("prd.json:3:"), "{err}");
    assert!(err.contains("expected true, false or \"blocked\""), "{err}");
    assert!(p.events().is_empty());
}

/// The agent of the kill test: per iteration one committed and one untracked file, each listed
/// in a ledger outside the repository once written; the check always fails the same way.
fn ledger_agent(ledger: &Path) -> String {
    format!(
        r#"story=$(sed -n 's/^STORY=//p')
i=$RALPH_ITERATION
mkdir -p work
c="work/$story-$i-c.txt"
printf '%s committed %s' "$story" "$i" > "$c"
git add "$c" && git commit -qm "$story $i"
echo "$c" >> '{ledger}'
u="work/$story-$i-u.txt"
printf '%s untracked %s\n' "$story" "$i" > "$u"
echo "$u" >> '{ledger}'
"#,
        ledger = ledger.display()
    )
}

#[test]
fn kill_9_during_escalations_never_breaks_prd_json_nor_loses_work() {
    let stories: Vec<(String, u32)> = (1..=6).map(|n| (format!("S{n}"), n)).collect();
    let stories: Vec<(&str, u32)> = stories.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    for round in 0..10u64 {
        let ledger_dir = tempfile::tempdir().unwrap();
        let ledger = ledger_dir.path().join("ledger");
        let p = repo(
            "agent: sh agent.sh\ndone_when: ['echo \"error at src/lib.rs:$RALPH_ITERATION\"; exit 1']\nconvergence: {backoff: 1ms, max_backoff: 1ms}\nescalation:\n  prd: prd.json\n  same_error_limit: 1",
            STORY_BODY,
            &ledger_agent(&ledger),
            Some(&prd_json(&stories)),
        );
        let mut child = p.spawn(&["run"]);
        std::thread::sleep(Duration::from_millis(30 + round * 45));
        let _ = child.kill();
        let _ = child.wait();
        // The agent and git may outlive ralph for a moment: let them finish.
        std::thread::sleep(Duration::from_millis(150));

        let prd = read_prd(&p);
        for s in prd["userStories"].as_array().unwrap() {
            assert!(
                [
                    Value::Bool(true),
                    Value::Bool(false),
                    Value::from("blocked")
                ]
                .contains(&s["passes"]),
                "round {round}: {s}"
            );
        }
        let refs = git(
            p.path(),
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/ralph/attempts/",
            ],
        );
        let written = std::fs::read_to_string(&ledger).unwrap_or_default();
        for path in written.lines() {
            let name = Path::new(path).file_name().unwrap().to_string_lossy();
            let parts: Vec<&str> = name.trim_end_matches(".txt").split('-').collect();
            let expected = match parts[2] {
                "c" => format!("{} committed {}", parts[0], parts[1]),
                _ => format!("{} untracked {}\n", parts[0], parts[1]),
            };
            let in_tree =
                std::fs::read(p.path().join(path)).ok() == Some(expected.clone().into_bytes());
            let in_git = in_tree
                || std::iter::once("HEAD")
                    .chain(refs.lines())
                    .any(|r| show(p.path(), r, path) == Some(expected.clone().into_bytes()));
            assert!(in_git, "round {round}: {path} is lost; refs: {refs}");
        }
    }
}

#[test]
fn a_blocked_marker_wins_over_checks_that_pass() {
    // US-001's checks pass, but the agent says it is blocked: the story is blocked with the
    // agent's reason, its work saved and reverted, never committed as passed.
    let agent = r#"story=$(sed -n 's/^STORY=//p')
echo "$story" > "work-$story.txt"
if [ "$story" = US-001 ]; then
    echo '<!-- ralph:state blocked reason="the payment sandbox is down" -->'
fi
"#;
    let p = repo(
        "agent: sh agent.sh\ndone_when:\n  - 'true'\nescalation:\n  prd: prd.json",
        STORY_BODY,
        agent,
        Some(&prd_json(&[("US-001", 1), ("US-002", 2)])),
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let tripped = p.events_of("CIRCUIT_TRIPPED");
    assert_eq!(tripped.len(), 1, "{:#?}", p.events());
    assert_eq!(tripped[0]["reason"], "blocked");
    assert_eq!(tripped[0]["story_id"], "US-001");
    let blocked = p.events_of("STORY_BLOCKED");
    assert_eq!(blocked.len(), 1);
    assert!(
        blocked[0]["reason"]
            .as_str()
            .unwrap()
            .contains("the payment sandbox is down"),
        "{blocked:?}"
    );
    let passed: Vec<Value> = p
        .events_of("STORY_PASSED")
        .into_iter()
        .map(|e| e["story_id"].clone())
        .collect();
    assert_eq!(passed, ["US-002"]);
    let prd = read_prd(&p);
    assert_eq!(story(&prd, "US-001")["passes"], "blocked");
    assert!(
        story(&prd, "US-001")["notes"]
            .as_str()
            .unwrap()
            .contains("the payment sandbox is down")
    );
    assert_eq!(story(&prd, "US-002")["passes"], true);
    // US-001's work is saved, not committed.
    let saved = p.events_of("REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        show(p.path(), &saved, "work-US-001.txt").unwrap(),
        b"US-001\n"
    );
    assert!(show(p.path(), "HEAD", "work-US-001.txt").is_none());
    assert_eq!(p.run_ended()["reason"], "stories_blocked");
}
