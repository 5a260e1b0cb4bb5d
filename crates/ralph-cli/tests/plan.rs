//! `ralph plan`: the RALPH.md's agent writes the task list from a spec. A scripted agent
//! answers with the plan in the list's own format; ralph checks it, sends an invalid one back
//! with its errors, writes only a valid one (a new list whole, an existing one appended to with
//! every byte kept), and reports it as a run does (events, log, cost).

use crate::common;

use std::path::Path;

use common::{Project, code, git, git_repo, stderr, stdout};
use serde_json::Value;

/// The planning agent: saves each prompt as `prompt-N.txt` and answers with `answer-N.txt`
/// (`answer.txt` when there is none).
const AGENT: &str = r#"n=$(( $(cat n 2>/dev/null || echo 0) + 1 ))
echo $n > n
cat > "prompt-$n.txt"
if [ -f "answer-$n.txt" ]; then cat "answer-$n.txt"; else cat answer.txt; fi
"#;

const SPEC: &str = "# Shop\n\nA cart that adds items, then a checkout that charges the cart.\n";

const TWO_STORIES: &str = r#"Here is the plan.

```json
{"userStories": [
  {"id": "US-001", "title": "Cart adds items", "description": "A Cart type.",
   "acceptanceCriteria": ["cargo test cart passes"], "dependsOn": []},
  {"id": "US-002", "title": "Checkout charges the cart",
   "acceptanceCriteria": ["cargo test checkout passes"], "dependsOn": ["US-001"]}
]}
```
"#;

/// A project planning into `list` (the `tasks:` section's value), with `answers` for its
/// agent (`answer-1.txt`, ...) and the spec in SPEC.md.
fn planning(list: &str, answers: &[&str]) -> Project {
    let p = Project::new(&format!("agent: sh agent.sh\ntasks: {list}"), "unused\n");
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), AGENT).unwrap();
    std::fs::write(dir.join("SPEC.md"), SPEC).unwrap();
    for (i, answer) in answers.iter().enumerate() {
        std::fs::write(dir.join(format!("answer-{}.txt", i + 1)), answer).unwrap();
    }
    p
}

fn plan(p: &Project, args: &[&str]) -> std::process::Output {
    let mut all = vec!["plan", "--events", "events.jsonl"];
    all.extend(args);
    p.run(&all)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn prd(dir: &Path) -> Value {
    serde_json::from_str(&read(dir, "prd.json")).unwrap()
}

#[test]
fn a_plan_for_prd_json_is_written_whole_and_listed_as_ralph_tasks_lists_it() {
    let p = planning("{prd: prd.json}", &[TWO_STORIES]);
    let out = plan(&p, &["--from", "SPEC.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dir = p.path();

    let prompt = read(dir, "prompt-1.txt");
    assert!(
        prompt.contains("# Spec\n\n# Shop\n\nA cart that adds items"),
        "{prompt}"
    );
    assert!(prompt.contains("None: the list is empty."), "{prompt}");
    assert!(
        prompt.contains("```json"),
        "the format is explained: {prompt}"
    );

    let stories = prd(dir)["userStories"].as_array().unwrap().clone();
    assert_eq!(stories.len(), 2);
    assert_eq!(stories[0]["id"], "US-001");
    assert_eq!(stories[0]["passes"], false);
    assert_eq!(stories[0]["priority"], 1);
    assert_eq!(
        stories[0]["acceptanceCriteria"][0],
        "cargo test cart passes"
    );
    assert_eq!(stories[1]["dependsOn"][0], "US-001");
    assert_eq!(stories[1]["priority"], 2);

    // The table `ralph tasks` prints.
    let tasks = p.run(&["tasks"]);
    assert_eq!(stdout(&out), stdout(&tasks));
    assert!(stdout(&out).contains("US-002  Checkout charges the cart (after US-001)"));

    let types: Vec<String> = common::types(&p.events());
    assert_eq!(
        types,
        [
            "RUN_STARTED",
            "PLAN_STARTED",
            "ITERATION_STARTED",
            "ITERATION_ENDED",
            "PLAN_WRITTEN",
            "RUN_ENDED"
        ]
    );
    let started = &p.events_of("PLAN_STARTED")[0];
    assert_eq!(started["format"], "prd");
    assert_eq!(started["list"], "prd.json");
    let written = &p.events_of("PLAN_WRITTEN")[0];
    assert_eq!(written["tasks"], serde_json::json!(["US-001", "US-002"]));
    assert_eq!(written["appended"], false);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "plan_written");
    assert_eq!(ended["exit_code"], 0);

    // The run folder has the events and the agent's output, as a run's.
    let runs: Vec<_> = std::fs::read_dir(dir.join(".ralph/runs"))
        .unwrap()
        .collect();
    assert_eq!(runs.len(), 1);
    let run = runs[0].as_ref().unwrap().path();
    assert!(read(&run, "events.jsonl").contains("\"PLAN_WRITTEN\""));
    let logs: String = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        logs.contains("Checkout charges the cart"),
        "the answer is logged"
    );
}

#[test]
fn a_plan_for_a_checklist_from_a_message_is_written_as_items() {
    let answer = "```markdown\n- [ ] Cart adds items\n  A Cart type.\n  - cargo test cart passes\n\
                  - [ ] Checkout charges the cart\n  - cargo test checkout passes\n```\n";
    let p = planning("{markdown: TODO.md}", &[answer]);
    let out = plan(&p, &["-m", "A shop with a cart and a checkout."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dir = p.path();
    assert!(read(dir, "prompt-1.txt").contains("A shop with a cart and a checkout."));
    assert!(read(dir, "prompt-1.txt").contains("```markdown"));
    assert_eq!(
        read(dir, "TODO.md"),
        "# Tasks\n\n- [ ] Cart adds items\n  A Cart type.\n  - cargo test cart passes\n\
         - [ ] Checkout charges the cart\n  - cargo test checkout passes\n"
    );
    let listed = stdout(&out);
    assert!(listed.contains("Cart adds items"), "{listed}");
    assert_eq!(listed, stdout(&p.run(&["tasks"])));
}

#[test]
fn the_spec_can_come_on_standard_input() {
    let p = planning("{prd: prd.json}", &[TWO_STORIES]);
    let mut child = p
        .ralph(&["plan"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"Spec from a pipe.\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(read(p.path(), "prompt-1.txt").contains("# Spec\n\nSpec from a pipe.\n"));
}

#[test]
fn an_invalid_answer_goes_back_with_its_errors_and_the_corrected_one_is_written() {
    let bad = r#"```json
{"userStories": [
  {"id": "US-001", "title": "Cart", "acceptanceCriteria": [], "dependsOn": ["US-009"]}
]}
```"#;
    let p = planning("{prd: prd.json}", &[bad, TWO_STORIES]);
    let out = plan(&p, &["--from", "SPEC.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let errors = [
        "task US-001: no acceptance criteria; give at least one checkable outcome",
        "task US-001: dependsOn names US-009, which is no task of the plan or the list",
    ];
    let invalid = p.events_of("PLAN_INVALID");
    assert_eq!(invalid.len(), 1);
    assert_eq!(invalid[0]["answer"], 1);
    assert_eq!(invalid[0]["retry"], true);
    assert_eq!(invalid[0]["errors"], serde_json::json!(errors));
    let second = read(p.path(), "prompt-2.txt");
    assert!(
        second.contains("# Your last answer could not be used"),
        "{second}"
    );
    for error in errors {
        assert!(second.contains(&format!("- {error}")), "{second}");
    }
    assert_eq!(prd(p.path())["userStories"].as_array().unwrap().len(), 2);
    assert_eq!(p.events_of("ITERATION_STARTED").len(), 2);
}

#[test]
fn three_invalid_answers_fail_naming_the_errors_and_nothing_is_written() {
    let old = "{\"userStories\": [{\"id\": \"US-001\", \"priority\": 1, \"passes\": false}]}";
    let p = planning("{prd: prd.json}", &[]);
    std::fs::write(p.path().join("prd.json"), old).unwrap();
    std::fs::write(p.path().join("answer.txt"), "I would rather not.").unwrap();
    let out = plan(&p, &["--from", "SPEC.md"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(read(p.path(), "prd.json"), old);
    let err = stderr(&out);
    assert!(
        err.contains(
            "ralph: no valid plan after 3 answers; nothing was written. The last one's errors:\n  \
             - the answer has no fenced ```json block"
        ),
        "{err}"
    );
    let invalid = p.events_of("PLAN_INVALID");
    let retries: Vec<&Value> = invalid.iter().map(|e| &e["retry"]).collect();
    assert_eq!(retries, [true, true, false]);
    assert_eq!(p.run_ended()["reason"], "plan_invalid");
    assert!(p.events_of("PLAN_WRITTEN").is_empty());
}

/// CRLF, tabs, a byte order mark, fields ralph does not know, a passed story, and no final
/// line break.
const PERSON_PRD: &str = "\u{feff}{\r\n\t\"project\": \"Shop\",\r\n\t\"userStories\": [\r\n\t\t{\r\n\t\t\t\"id\": \"US-001\",\r\n\t\t\t\"title\": \"Old one\",\r\n\t\t\t\"priority\": 5,\r\n\t\t\t\"passes\": true,\r\n\t\t\t\"owner\": \"Zoë\"\r\n\t\t}\r\n\t],\r\n\t\"notes\": \"keep   me\"\r\n}";

#[test]
fn an_existing_list_keeps_every_byte_and_gets_the_new_tasks_after_its_last() {
    let answer = r#"```json
{"userStories": [
  {"id": "US-002", "title": "Checkout", "acceptanceCriteria": ["checkout works"], "dependsOn": ["US-001"]}
]}
```"#;
    let p = planning("{prd: prd.json}", &[answer]);
    std::fs::write(p.path().join("prd.json"), PERSON_PRD).unwrap();
    let out = plan(&p, &["--from", "SPEC.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let prompt = read(p.path(), "prompt-1.txt");
    assert!(prompt.contains("- US-001 [passed] Old one"), "{prompt}");

    let after = std::fs::read(p.path().join("prd.json")).unwrap();
    let before = PERSON_PRD.as_bytes();
    let cut = PERSON_PRD.find("\r\n\t\t}\r\n\t],").unwrap() + "\r\n\t\t}".len();
    assert_eq!(
        &after[..cut],
        &before[..cut],
        "every byte before the new story"
    );
    assert!(after.ends_with(&before[cut..]), "every byte after it");
    let added = String::from_utf8(after[cut..after.len() - (before.len() - cut)].to_vec()).unwrap();
    assert!(
        added.starts_with(",\r\n\t\t{\r\n\t\t\t\"id\": \"US-002\",\r\n"),
        "in the file's indentation and line endings: {added:?}"
    );
    assert!(
        added.contains("\"priority\": 6"),
        "after the highest: {added}"
    );
    assert_eq!(p.events_of("PLAN_WRITTEN")[0]["appended"], true);
    assert!(
        stdout(&out).contains("US-002  Checkout (after US-001)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_checklist_a_person_wrote_keeps_every_byte() {
    let todo = "# Shop\r\n\r\n- [x] Old thing  \r\n\tnotes\r\ntrailing prose";
    let answer = "```markdown\n- [ ] New thing\n  - it is there\n```";
    let p = planning("{markdown: TODO.md}", &[answer]);
    std::fs::write(p.path().join("TODO.md"), todo).unwrap();
    let out = plan(&p, &["-m", "more"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        read(p.path(), "TODO.md"),
        format!("{todo}\r\n\r\n- [ ] New thing\r\n  - it is there\r\n")
    );
}

#[test]
fn a_clashing_id_is_refused_or_with_renumber_given_the_next_number() {
    let old = "{\"userStories\": [{\"id\": \"US-001\", \"title\": \"Old\", \"priority\": 1, \"passes\": false}]}\n";
    let clash = r#"```json
[{"id": "US-001", "title": "New", "acceptanceCriteria": ["ok"]},
 {"id": "US-002", "title": "Newer", "acceptanceCriteria": ["ok"], "dependsOn": ["US-001"]}]
```"#;
    let p = planning("{prd: prd.json}", &[clash, clash, clash]);
    std::fs::write(p.path().join("prd.json"), old).unwrap();
    let out = plan(&p, &["--from", "SPEC.md"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains(
        "task US-001: the list already has a task US-001 (\"Old\"); give the new one another id \
         (or run `ralph plan --renumber` to have ralph do it)"
    ));
    assert_eq!(read(p.path(), "prd.json"), old);

    std::fs::remove_file(p.path().join("n")).unwrap();
    let out = plan(&p, &["--from", "SPEC.md", "--renumber"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stories = prd(p.path())["userStories"].as_array().unwrap().clone();
    let ids: Vec<&str> = stories.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["US-001", "US-003", "US-002"]);
    assert_eq!(stories[2]["dependsOn"], serde_json::json!(["US-003"]));
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let p = planning("{prd: prd.json}", &[TWO_STORIES]);
    let out = plan(&p, &["--from", "SPEC.md", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!p.path().join("prd.json").exists());
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown[1]["id"], "US-002");
    assert_eq!(shown[1]["dependsOn"][0], "US-001");
    assert!(stderr(&out).contains("ralph: dry run: 2 tasks planned, nothing written to prd.json"));
    assert_eq!(p.run_ended()["reason"], "plan_shown");
    assert_eq!(p.events_of("PLAN_WRITTEN")[0]["dry_run"], true);
}

#[test]
fn in_a_git_checkout_the_list_is_committed_only_with_commit() {
    let p = planning("{prd: prd.json}", &[TWO_STORIES]);
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\n.ralph/\n").unwrap();
    git_repo(p.path());
    std::fs::write(p.path().join("mine.txt"), "not for ralph").unwrap();
    let out = plan(&p, &["--from", "SPEC.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(git(p.path(), &["rev-list", "--count", "HEAD"]).trim(), "1");

    std::fs::remove_file(p.path().join("prd.json")).unwrap();
    std::fs::remove_file(p.path().join("n")).unwrap();
    let out = plan(&p, &["--from", "SPEC.md", "--commit"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        git(p.path(), &["log", "-1", "--format=%s"]).trim(),
        "ralph plan: plan US-001, US-002"
    );
    assert_eq!(
        git(p.path(), &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "prd.json"
    );
    assert!(git(p.path(), &["status", "--porcelain"]).contains("mine.txt"));
}

#[test]
fn a_file_the_ralph_md_names_replaces_the_built_in_prompt() {
    let p = planning("{prd: prd.json}\nplan: {prompt: PLAN.md}", &[TWO_STORIES]);
    std::fs::write(p.path().join("PLAN.md"), "Mine. Spec: {{ plan.spec }}\n").unwrap();
    let out = plan(&p, &["-m", "the goal"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(read(p.path(), "prompt-1.txt"), "Mine. Spec: the goal\n");

    std::fs::write(
        p.path().join("RALPH.md"),
        "---\nagent: sh agent.sh\ntasks: {prd: prd.json}\nplan: {promt: PLAN.md}\n---\nx\n",
    )
    .unwrap();
    let out = plan(&p, &["-m", "the goal"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("did you mean `prompt`?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_a_spec_or_a_list_nothing_runs() {
    let p = planning("{prd: prd.json}", &[TWO_STORIES]);
    let out = p.run(&["plan"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no spec to plan from"),
        "{}",
        stderr(&out)
    );
    assert!(!p.path().join("n").exists(), "the agent did not run");

    let p = Project::new("agent: sh agent.sh", "x\n");
    let out = p.run(&["plan", "-m", "goal"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no task list to plan into"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ctrl_c_stops_the_planning_agent_as_it_stops_a_run_and_writes_nothing() {
    let p = planning("{prd: prd.json}", &[TWO_STORIES]);
    std::fs::write(
        p.path().join("agent.sh"),
        "cat > /dev/null\ntouch started\nsleep 30\ncat answer-1.txt\n",
    )
    .unwrap();
    let child = p.spawn(&["plan", "-m", "goal", "--events", "events.jsonl"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !p.path().join("started").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Twice: the second within a second stops the agent now, as in a run.
    common::send_signal(child.id(), 2);
    p.wait_for("STOP_REQUESTED", 1);
    common::send_signal(child.id(), 2);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "interrupted");
    assert!(!p.path().join("prd.json").exists(), "nothing written");
    assert!(p.events_of("PLAN_WRITTEN").is_empty());
}
