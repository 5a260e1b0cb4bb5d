//! A person's uncommitted changes in the main checkout during `ralph run --parallel`: an edit
//! of the task list never stops the landings (each mark is applied to the file as the person
//! left it, their edit kept and uncommitted); a change to a file a landing touches holds that
//! landing alone, and the run ends resumable naming the file.
//!
//! The person's edit is made by the queue's own `done_when` check (it runs with no
//! `RALPH_ITERATION`, a lane's checks with one), so it happens while a landing is under way.

use crate::common;

use std::path::Path;

use common::{Project, git, git_repo, show};
use serde_json::Value;

/// A repository on `main` whose RALPH.md has `tasks` (a `tasks:` or `escalation:` block),
/// `agent.sh` from `agent`, `check.sh` as the one `done_when` check (see [`check_that_edits`])
/// and `files` beside them, all committed. The prompt gives the task's id as `ID=`.
fn repo(tasks: &str, agent: &str, files: &[(&str, &str)]) -> Project {
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ndone_when:\n  - sh check.sh\n\
             convergence: {{max_attempts: 5, backoff: 10ms, max_backoff: 10ms}}\n\
             failure: {{delay: 10ms, max_delay: 10ms}}\n{tasks}"
        ),
        "ID={{ task.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), agent).unwrap();
    std::fs::write(dir.join("check.sh"), "exit 1\n").unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);
    p
}

/// The task's id from the prompt as `$id`; its work is the file `$id.done`.
const AGENT: &str = "id=$(sed -n 's/^ID=//p')\necho \"work of $id\" > \"$id.done\"\n";

/// Commits as `check.sh` a check that passes once the task's work is there and, the first
/// time the queue runs it (no `RALPH_ITERATION`) where the shell test `when` holds, runs `edit`
/// in the main checkout, as a person would while the landing is under way; `<marks>/edited`
/// says it did.
fn check_that_edits(p: &Project, marks: &Path, when: &str, edit: &str) {
    let main = p.path();
    let check = format!(
        "ls *.done >/dev/null 2>&1 || exit 1\n\
         if [ -z \"$RALPH_ITERATION\" ] && {when} && [ ! -e {m}/edited ]; then\n\
         (cd {main} && {edit})\ntouch {m}/edited\nfi\n",
        m = marks.display(),
        main = main.display()
    );
    std::fs::write(main.join("check.sh"), check).unwrap();
    common::commit_all(main, "the check");
}

fn text(bytes: Option<Vec<u8>>) -> String {
    String::from_utf8(bytes.expect("the file is in the commit")).unwrap()
}

fn ended(p: &Project) -> Value {
    let events = p.events();
    let ended = events.last().unwrap().clone();
    assert_eq!(ended["type"], "PARALLEL_ENDED", "{events:#?}");
    ended
}

const PERSONS_LINE: &str = "Note of the person: ship on Friday.";

#[test]
fn a_person_editing_the_checklist_during_a_landing_keeps_the_edit_and_every_task_lands() {
    let marks = tempfile::tempdir().unwrap();
    let todo = "# Shop\n\n- [ ] Build the cart\n- [ ] Add checkout\n- [ ] Ship it\n";
    let p = repo("tasks:\n  markdown: TODO.md", AGENT, &[("TODO.md", todo)]);
    let main = p.path().to_path_buf();
    let edit = format!("printf '%s\\n' '{PERSONS_LINE}' >> TODO.md");
    check_that_edits(&p, marks.path(), "true", &edit);

    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(marks.path().join("edited").exists(), "the person edited");
    let ended = ended(&p);
    assert_eq!(ended["landed"], 3, "{:#?}", p.events());

    // Committed: every task ticked, and nothing of the person's.
    let ticked = todo.replace("[ ]", "[x]");
    assert_eq!(text(show(&main, "main", "TODO.md")), ticked);
    // In the checkout: every tick on top of the person's edit, which stays theirs.
    assert_eq!(
        std::fs::read_to_string(main.join("TODO.md")).unwrap(),
        format!("{ticked}{PERSONS_LINE}\n")
    );
    assert_eq!(git(&main, &["status", "--porcelain"]), " M TODO.md\n");
    let diff = git(&main, &["diff", "--", "TODO.md"]);
    assert!(diff.contains(&format!("+{PERSONS_LINE}")), "{diff}");
    let added: Vec<&str> = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .collect();
    assert_eq!(
        added,
        [format!("+{PERSONS_LINE}")],
        "only their line: {diff}"
    );
}

#[test]
fn a_person_editing_prd_json_during_a_landing_keeps_the_edit_and_every_story_lands() {
    let marks = tempfile::tempdir().unwrap();
    let stories: Vec<Value> = ["US-001", "US-002"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            serde_json::json!({
                "id": id, "title": format!("story {id}"), "description": "Do it",
                "acceptanceCriteria": ["ok"], "priority": i + 1, "passes": false, "notes": ""
            })
        })
        .collect();
    let prd = serde_json::to_string_pretty(
        &serde_json::json!({"project": "Shop", "userStories": stories}),
    )
    .unwrap();
    let p = repo("escalation:\n  prd: prd.json", AGENT, &[("prd.json", &prd)]);
    let main = p.path().to_path_buf();
    let edit = "sed 's/\"project\": \"Shop\"/\"project\": \"Shop of the person\"/' prd.json \
                > prd.json.new && mv prd.json.new prd.json";
    check_that_edits(&p, marks.path(), "true", edit);

    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(marks.path().join("edited").exists(), "the person edited");
    assert_eq!(ended(&p)["landed"], 2, "{:#?}", p.events());

    let committed: Value =
        serde_json::from_slice(&show(&main, "main", "prd.json").unwrap()).unwrap();
    let theirs: Value =
        serde_json::from_slice(&std::fs::read(main.join("prd.json")).unwrap()).unwrap();
    assert_eq!(committed["project"], "Shop");
    assert_eq!(theirs["project"], "Shop of the person");
    for prd in [&committed, &theirs] {
        for story in prd["userStories"].as_array().unwrap() {
            assert_eq!(story["passes"], true, "{prd:#}");
        }
    }
    assert_eq!(git(&main, &["status", "--porcelain"]), " M prd.json\n");
    let diff = git(&main, &["diff", "--", "prd.json"]);
    assert!(
        diff.contains("+  \"project\": \"Shop of the person\""),
        "{diff}"
    );
}

/// A checklist of three tasks, each of whose work is `<id>.done`; the first also adds a line to
/// notes.txt (committed as `notes`). Each agent run appends `run` to `<runs>/<id>`. Returns the
/// project and the task ids in order; the first's id is committed in the file `first`.
fn notes_repo(runs: &Path) -> (Project, Vec<String>) {
    let agent = format!(
        "id=$(sed -n 's/^ID=//p')\necho run >> {runs}/$id\necho \"work of $id\" > \"$id.done\"\n\
         if [ \"$id\" = \"$(cat first)\" ]; then echo \"$id's note\" >> notes.txt; fi\n",
        runs = runs.display()
    );
    let p = repo(
        "tasks:\n  markdown: TODO.md",
        &agent,
        &[
            (
                "TODO.md",
                "- [ ] Write notes\n- [ ] Add a cart\n- [ ] Ship it\n",
            ),
            ("notes.txt", "notes\n"),
        ],
    );
    let out = p.run(&["tasks", "--json"]);
    let listed: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let ids: Vec<String> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    std::fs::write(p.path().join("first"), &ids[0]).unwrap();
    (p, ids)
}

#[test]
fn a_persons_change_to_a_file_a_landing_touches_holds_only_that_landing_until_resume() {
    let marks = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let (p, ids) = notes_repo(runs.path());
    let main = p.path().to_path_buf();
    // The person edits notes.txt while the first task, which changes it too, is landed.
    check_that_edits(
        &p,
        marks.path(),
        "[ -e \"$(cat first).done\" ]",
        "echo 'a line of the person' >> notes.txt",
    );
    let held = &ids[0];

    let out = p.run(&["run", "--parallel", "1"]);
    let stdout = common::stdout(&out);
    assert_eq!(common::code(&out), 1, "{stdout}{}", common::stderr(&out));
    assert!(marks.path().join("edited").exists(), "the person edited");
    let events = p.events();
    assert_eq!(ended(&p)["reason"], "work_left", "{events:#?}");
    let landed: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "TASK_LANDED")
        .map(|e| e["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(landed, [ids[1].as_str(), ids[2].as_str()], "{events:#?}");
    let holds: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "MERGE_HELD")
        .collect();
    assert!(!holds.is_empty(), "{events:#?}");
    assert!(
        holds.iter().all(
            |e| e["task_id"] == held.as_str() && e["files"] == serde_json::json!(["notes.txt"])
        ),
        "{holds:#?}"
    );
    // The terminal names the task by its title; long lines wrap.
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("Write notes waits on your uncommitted changes to notes.txt")
            && words.contains("notes.txt, which the task changes too")
            && words.contains("`ralph run --parallel 1 --resume` lands it"),
        "{stdout}"
    );
    // The person's change is as they left it; the task's work waits on its branch.
    assert_eq!(
        std::fs::read_to_string(main.join("notes.txt")).unwrap(),
        "notes\na line of the person\n"
    );
    assert_eq!(text(show(&main, "main", "notes.txt")), "notes\n");
    let status = p.run(&["status"]);
    let status = common::stdout(&status);
    assert!(
        status.contains(": stopped")
            && status
                .lines()
                .any(|l| l.starts_with(&format!("  {held} ")) && l.contains(" waiting "))
            && status.contains("waiting on your uncommitted changes to: notes.txt"),
        "{status}"
    );
    let json = p.run(&["status", "--json"]);
    let json: Value = serde_json::from_str(&common::stdout(&json)).unwrap();
    let lane = json["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["task_id"] == held.as_str())
        .unwrap()
        .clone();
    assert_eq!(lane["held"], serde_json::json!(["notes.txt"]), "{json:#}");

    // The person undoes their change; the resumed run lands the task without doing it again.
    git(&main, &["checkout", "--", "notes.txt"]);
    let out = p.run(&["run", "--parallel", "1", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(ended(&p)["landed"], 1, "{:#?}", p.events());
    assert_eq!(
        text(show(&main, "main", "notes.txt")),
        format!("notes\n{held}'s note\n")
    );
    assert_eq!(
        text(show(&main, "main", "TODO.md")),
        "- [x] Write notes\n- [x] Add a cart\n- [x] Ship it\n"
    );
    assert_eq!(
        std::fs::read_to_string(runs.path().join(held)).unwrap(),
        "run\n",
        "the task was done once"
    );
    assert_eq!(git(&main, &["status", "--porcelain"]), "");
}

#[test]
fn a_held_landing_lands_in_the_same_run_once_the_person_undoes_their_change() {
    let marks = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let (p, ids) = notes_repo(runs.path());
    let main = p.path().to_path_buf();
    // The person edits notes.txt while the first task is landed, and undoes it while the
    // second is (which the queue lands after the first was held).
    check_that_edits(
        &p,
        marks.path(),
        "[ -e \"$(cat first).done\" ]",
        "echo 'a line of the person' >> notes.txt",
    );
    let check = std::fs::read_to_string(main.join("check.sh")).unwrap()
        + &format!(
            "if [ -z \"$RALPH_ITERATION\" ] && [ -e {second}.done ]; then\n\
             (cd {main} && git checkout -- notes.txt)\nfi\n",
            second = ids[1],
            main = main.display()
        );
    std::fs::write(main.join("check.sh"), check).unwrap();
    common::commit_all(&main, "the person undoes it");

    let out = p.run(&["run", "--parallel", "1"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(ended(&p)["landed"], 3, "{events:#?}");
    let at = |kind: &str, id: &str| {
        events
            .iter()
            .position(|e| e["type"] == kind && e["task_id"] == id)
            .unwrap_or_else(|| panic!("{kind} {id}: {events:#?}"))
    };
    assert!(
        at("MERGE_HELD", &ids[0]) < at("TASK_LANDED", &ids[1])
            && at("TASK_LANDED", &ids[1]) < at("TASK_LANDED", &ids[0]),
        "held, the next landed, then the held one: {events:#?}"
    );
    assert_eq!(
        text(show(&main, "main", "notes.txt")),
        format!("notes\n{}'s note\n", ids[0])
    );
    assert_eq!(git(&main, &["status", "--porcelain"]), "");
}
