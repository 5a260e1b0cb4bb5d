//! `ralph plan --split ID`: a story the breaker blocked is split into smaller ones that take its
//! place, and the loop then gets through them.

use crate::common;

use common::{Project, code, git, git_repo, stderr};
use serde_json::Value;

/// Works on the story in the prompt (`STORY=ID`): US-001 is too big and never passes its
/// check; every other story passes. Asked to split, it answers with `split-answer.txt`.
const AGENT: &str = r##"prompt=$(cat)
case "$prompt" in
*"# The task that keeps failing"*)
    printf '%s\n' "$prompt" > split-prompt.txt
    cat split-answer.txt
    exit 0
    ;;
esac
story=$(printf '%s\n' "$prompt" | sed -n 's/^STORY=//p')
echo "$story" > .story
echo "an attempt at $story" >> "work-$story.txt"
case "$story" in
US-001) ;;
*) touch "pass-$story" ;;
esac
"##;

const SPLIT: &str = r#"```json
{"userStories": [
  {"id": "US-001a", "title": "Build the cart", "acceptanceCriteria": ["cart test passes"]},
  {"id": "US-001b", "title": "Build the checkout", "acceptanceCriteria": ["checkout test passes"], "dependsOn": ["US-001a"]}
]}
```"#;

const PRD: &str = r#"{
  "userStories": [
    {"id": "US-001", "title": "Build the whole shop", "priority": 1, "passes": false},
    {"id": "US-002", "title": "Ship it", "priority": 2, "passes": false, "dependsOn": ["US-001"]}
  ]
}
"#;

fn story_ids(events: &[Value], kind: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["story_id"].as_str().unwrap().to_owned())
        .collect()
}

const SHOP: &str = "agent: sh agent.sh\n\
     done_when:\n  - 'test -f \"pass-$(cat .story)\" || { echo \"error: too big\"; exit 1; }'\n\
     convergence: {max_attempts: 5, backoff: 10ms, max_backoff: 10ms}\n\
     failure: {delay: 10ms, max_delay: 10ms}\n\
     escalation:\n  prd: prd.json\n  same_error_limit: 2";

/// A repository whose prd.json has US-001 (never passes) and US-002 (after it); `extra` goes
/// into `escalation`.
fn shop(extra: &str) -> Project {
    let p = Project::new(&format!("{SHOP}\n  {extra}"), "STORY={{ story.id }}\n");
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), AGENT).unwrap();
    std::fs::write(dir.join("prd.json"), PRD).unwrap();
    std::fs::write(dir.join("split-answer.txt"), SPLIT).unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        "events.jsonl\nplan-events.jsonl\n.story\npass-*\nsplit-prompt.txt\n",
    )
    .unwrap();
    git_repo(dir);
    p
}

#[test]
fn a_blocked_story_split_in_two_is_replaced_by_them_and_the_run_then_passes_both() {
    let p = shop("");
    let dir = p.path();

    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(story_ids(&p.events(), "STORY_BLOCKED"), ["US-001"]);

    let out = p.run(&[
        "plan",
        "--split",
        "US-001",
        "--commit",
        "--events",
        "plan-events.jsonl",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let prompt = std::fs::read_to_string(dir.join("split-prompt.txt")).unwrap();
    for part in [
        "\"title\": \"Build the whole shop\"",
        "## Why it was blocked",
        "## The failing check's last output (progress.txt)",
        "error: too big",
        "refs/ralph/attempts/US-001/1",
        "work-US-001.txt",
    ] {
        assert!(
            prompt.contains(part),
            "{part:?} is not in the prompt:\n{prompt}"
        );
    }
    let prd: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("prd.json")).unwrap()).unwrap();
    let stories = prd["userStories"].as_array().unwrap();
    let ids: Vec<&str> = stories.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["US-001", "US-001a", "US-001b", "US-002"]);
    assert_eq!(stories[0]["passes"], true, "kept, done by the split");
    assert!(
        stories[0]["notes"]
            .as_str()
            .unwrap()
            .ends_with("ralph: split into US-001a, US-001b (ralph plan --split)"),
        "{}",
        stories[0]["notes"]
    );
    assert_eq!(
        stories[3]["dependsOn"],
        serde_json::json!(["US-001a", "US-001b"])
    );
    assert_eq!(
        git(dir, &["log", "-1", "--format=%s"]).trim(),
        "ralph plan: split US-001 into US-001a, US-001b"
    );
    let plan_events = std::fs::read_to_string(dir.join("plan-events.jsonl")).unwrap();
    assert!(plan_events.contains("\"type\":\"PLAN_STARTED\",\"format\":\"prd\",\"list\":\"prd.json\",\"split\":\"US-001\""), "{plan_events}");

    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        story_ids(&p.events(), "STORY_PASSED"),
        ["US-001a", "US-001b", "US-002"]
    );
    assert_eq!(p.run_ended()["reason"], "stories_done");
}

#[test]
fn only_a_story_still_to_do_in_a_prd_json_is_split() {
    let p = Project::new("agent: sh agent.sh\ntasks: {prd: prd.json}", "x\n");
    std::fs::write(
        p.path().join("prd.json"),
        r#"{"userStories": [{"id": "A", "priority": 1, "passes": true}]}"#,
    )
    .unwrap();
    let out = p.run(&["plan", "--split", "A"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("prd.json: task A has passed"),
        "{}",
        stderr(&out)
    );
    let out = p.run(&["plan", "--split", "B"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("prd.json: no task B to split"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn with_escalation_split_the_run_splits_a_blocked_story_itself_and_goes_on() {
    let p = shop("split: true");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("ralph: escalation.split: splitting US-001, which the breaker blocked"),
        "{}",
        stderr(&out)
    );
    // The last run's events: the smaller stories and the one after them passed.
    assert_eq!(
        story_ids(&p.events(), "STORY_PASSED"),
        ["US-001a", "US-001b", "US-002"]
    );
    let prd: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("prd.json")).unwrap()).unwrap();
    let states: Vec<(&str, &Value)> = prd["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), &s["passes"]))
        .collect();
    assert_eq!(
        states,
        [
            ("US-001", &Value::Bool(true)),
            ("US-001a", &Value::Bool(true)),
            ("US-001b", &Value::Bool(true)),
            ("US-002", &Value::Bool(true)),
        ]
    );
    // Three runs: the blocked one, the split, the one that passed them.
    assert_eq!(
        std::fs::read_dir(p.path().join(".ralph/runs"))
            .unwrap()
            .count(),
        3
    );
}

#[test]
fn a_split_that_does_not_help_ends_the_loop() {
    let p = shop("split: true");
    std::fs::write(p.path().join("split-answer.txt"), "no idea").unwrap();
    common::commit_all(p.path(), "no split");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no valid plan after 3 answers"),
        "{}",
        stderr(&out)
    );
    let prd = std::fs::read_to_string(p.path().join("prd.json")).unwrap();
    assert!(prd.contains("\"blocked\""), "{prd}");
}
