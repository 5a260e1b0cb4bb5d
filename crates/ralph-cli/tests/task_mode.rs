//! `ralph run --task ID`: one story's loop alone on its branch `ralph/ID`, ending when the story
//! passes (exit 0) or is blocked (exit 3): one task per machine.

use crate::common;

use common::{Project, code, git, stderr, story_repo};

/// The agent writes `work-<story id>.txt`; the check passes once such a file exists.
fn passing_repo(titles: &[&str]) -> Project {
    let p = story_repo(
        "read line; id=${line#STORY=}; echo \"$id\" > \"work-$id.txt\"\n",
        titles,
    );
    std::fs::write(
        p.path().join("RALPH.md"),
        "---\nagent: sh agent.sh\ndone_when:\n  - 'test -n \"$(ls work-*.txt 2>/dev/null)\"'\n\
         escalation:\n  prd: prd.json\n---\nSTORY={{ story.id }}\n",
    )
    .unwrap();
    git(p.path(), &["commit", "-qam", "checks that pass"]);
    p
}

fn prd(p: &Project) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p.path().join("prd.json")).unwrap()).unwrap()
}

fn passes(p: &Project, id: &str) -> serde_json::Value {
    prd(p)["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .map(|s| s["passes"].clone())
        .unwrap()
}

fn head_branch(p: &Project) -> String {
    git(p.path(), &["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_owned()
}

fn stories_started(p: &Project) -> Vec<String> {
    p.events_of("STORY_STARTED")
        .iter()
        .map(|e| e["story_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_task_runs_alone_on_its_new_branch_and_the_run_ends_when_it_passes() {
    let p = passing_repo(&["First", "Second", "Third"]);
    let main_before = git(p.path(), &["rev-parse", "main"]);
    let out = p.run(&["run", "--task", "US-002"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    assert_eq!(stories_started(&p), ["US-002"]);
    assert_eq!(head_branch(&p), "ralph/US-002");
    assert_eq!(passes(&p, "US-002"), true);
    assert_eq!(
        passes(&p, "US-001"),
        false,
        "the other stories are left alone"
    );
    assert_eq!(passes(&p, "US-003"), false);
    // The work and the pass are on the task's branch, made from main; main did not move.
    assert_eq!(git(p.path(), &["rev-parse", "main"]), main_before);
    let on_branch = git(p.path(), &["ls-tree", "--name-only", "ralph/US-002"]);
    assert!(
        on_branch.lines().any(|f| f == "work-US-002.txt"),
        "{on_branch}"
    );
    assert!(
        git(
            p.path(),
            &["merge-base", "--is-ancestor", "main", "ralph/US-002"]
        )
        .is_empty(),
        "the branch starts from main"
    );
    assert!(stderr(&out).contains("ralph/US-002"), "{}", stderr(&out));
}

#[test]
fn a_task_whose_branch_exists_goes_on_from_that_branch() {
    let p = passing_repo(&["First", "Second"]);
    git(p.path(), &["branch", "ralph/US-001"]);
    git(p.path(), &["switch", "-q", "ralph/US-001"]);
    std::fs::write(p.path().join("earlier.txt"), "earlier work\n").unwrap();
    git(p.path(), &["add", "earlier.txt"]);
    git(p.path(), &["commit", "-qm", "earlier work on the task"]);
    let earlier = git(p.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    git(p.path(), &["switch", "-q", "main"]);

    let out = p.run(&["run", "--task", "US-001"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(head_branch(&p), "ralph/US-001");
    git(p.path(), &["merge-base", "--is-ancestor", &earlier, "HEAD"]);
    assert!(p.path().join("earlier.txt").exists());
    assert_eq!(passes(&p, "US-001"), true);
}

#[test]
fn a_blocked_task_ends_the_run_with_exit_3_and_starts_no_other_story() {
    // The check always fails the same way: the breaker blocks the story.
    let p = story_repo("echo trying\n", &["First", "Second"]);
    let out = p.run(&["run", "--task", "US-002"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "task_blocked");
    assert_eq!(ended["exit_code"], 3);
    assert!(stories_started(&p).iter().all(|id| id == "US-002"));
    assert_eq!(passes(&p, "US-002"), "blocked");
    assert_eq!(passes(&p, "US-001"), false);
    assert_eq!(p.events_of("STORY_BLOCKED").len(), 1);
}

#[test]
fn an_unknown_task_is_refused_naming_prd_json_the_id_and_the_ids_there() {
    let p = passing_repo(&["First", "Second"]);
    let out = p.run(&["run", "--task", "US-9"]);
    assert_eq!(code(&out), 2, "nothing ran");
    let err = stderr(&out);
    assert!(err.contains("prd.json"), "{err}");
    assert!(err.contains("\"US-9\""), "{err}");
    assert!(err.contains("US-001, US-002"), "{err}");
    assert_eq!(head_branch(&p), "main", "HEAD did not move");
    assert!(
        git(p.path(), &["branch", "--list", "ralph/*"]).is_empty(),
        "no branch was made"
    );
}

#[test]
fn a_task_without_stories_is_refused() {
    let p = Project::new("agent: sh -c true", "Go.\n");
    let out = p.run(&["run", "--task", "US-001"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("escalation.prd"), "{}", stderr(&out));
}

#[test]
fn a_resumed_task_run_keeps_to_its_task() {
    let p = story_repo("echo trying\n", &["First", "Second"]);
    let out = p.run(&["run", "--task", "US-002", "-n", "1"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "max_iterations_work_left");
    let out = p.run(&["run", "--resume", "-n", "20"]);
    assert_eq!(code(&out), 3, "{}\n{:#?}", stderr(&out), p.events());
    assert_eq!(p.run_ended()["reason"], "task_blocked");
    assert!(
        stories_started(&p).iter().all(|id| id == "US-002"),
        "{:?}",
        stories_started(&p)
    );
    assert_eq!(passes(&p, "US-001"), false);
    assert_eq!(head_branch(&p), "ralph/US-002");
}

/// `file` (under docs/examples/), parsed as one YAML document.
fn yaml_document(file: &str) -> serde_norway::Value {
    let path = common::fixtures().join("../docs/examples").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_norway::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

#[test]
fn the_scale_out_examples_parse_and_run_one_task_each() {
    let workflow = yaml_document("github-actions-tasks.yml");
    let jobs = &workflow["jobs"];
    assert!(jobs["plan"]["steps"].is_sequence());
    let task = &jobs["task"];
    assert_eq!(
        task["strategy"]["matrix"]["id"].as_str(),
        Some("${{ fromJSON(needs.plan.outputs.ids) }}")
    );
    let runs: Vec<&str> = task["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(
        runs.iter()
            .any(|r| r.contains("ralph run --task \"$TASK_ID\""))
    );
    // `land.pr` pushes and opens the pull request: no hand-written `gh pr create`.
    assert!(runs.iter().all(|r| !r.contains("gh pr create")));
    let run_step = task["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| {
            s["run"]
                .as_str()
                .is_some_and(|r| r.contains("ralph run --task"))
        })
        .unwrap();
    assert!(run_step["env"]["GITHUB_TOKEN"].is_string());

    let job = yaml_document("kubernetes-indexed-job.yaml");
    assert_eq!(job["kind"].as_str(), Some("Job"));
    assert_eq!(job["spec"]["completionMode"].as_str(), Some("Indexed"));
    let pod = &job["spec"]["template"]["spec"];
    let script = pod["containers"][0]["args"][0].as_str().unwrap();
    assert!(script.contains("$JOB_COMPLETION_INDEX"), "{script}");
    assert!(script.contains("ralph run --task \"$id\""), "{script}");
    assert!(!script.contains("gh pr create"), "{script}");
    let init = pod["initContainers"][0]["args"][0].as_str().unwrap();
    assert!(init.contains("ralph tasks --json"), "{init}");
}
