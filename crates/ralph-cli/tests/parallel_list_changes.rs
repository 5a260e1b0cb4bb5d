//! The task list changing under `ralph run --parallel`: a task a person takes out of the list
//! while its lane runs (its checklist line deleted on the base, its issue closed) is dropped as
//! one loop drops it (its work saved under `refs/ralph/attempts/`, a `WARNING`, no landing),
//! and a lane's branch that deletes other tasks from the list never deletes them on the base.

use crate::common;

use common::github_server::{GithubServer, REPO, TOKEN};
use common::parallel::{nothing_left_behind, todo_repo};
use common::{Project, code, git, git_repo, show};
use serde_json::Value;

/// The checklist's task id of `title` as `ralph tasks --json` gives it.
fn task_id(p: &Project, title: &str) -> String {
    let out = p.run(&["tasks", "--json"]);
    let tasks: Value = serde_json::from_slice(&out.stdout).unwrap();
    tasks["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{tasks}"))
        .iter()
        .find(|t| t["title"] == title)
        .unwrap_or_else(|| panic!("{title} in {tasks}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn todo_on_main(p: &Project) -> String {
    String::from_utf8(show(p.path(), "main", "TODO.md").unwrap()).unwrap()
}

#[test]
fn a_task_a_person_deletes_from_the_checklist_while_its_lane_runs_is_dropped_not_landed() {
    // The cart's agent is also the person: it deletes the cart's line on main in the main
    // checkout and commits it there, then does the cart's work in its lane.
    let marks = tempfile::tempdir().unwrap();
    let todo = "# Shop\n\n- [ ] Build the cart\n- [ ] Add checkout\n";
    let agent = format!(
        "prompt=$(cat)\nid=$(printf '%s\\n' \"$prompt\" | sed -n 's/^ID=//p')\n\
         title=$(printf '%s\\n' \"$prompt\" | sed -n 's/^TITLE=//p')\n\
         if [ \"$title\" = 'Build the cart' ] && [ ! -e {m}/deleted ]; then\n\
           main=$(dirname \"$(git rev-parse --path-format=absolute --git-common-dir)\")\n\
           (cd \"$main\" && sed -i '/Build the cart/d' TODO.md && git commit -qam 'no cart after all')\n\
           touch {m}/deleted\n\
         fi\n\
         echo \"work of $title\" > \"$id.done\"\n",
        m = marks.path().display()
    );
    let p = todo_repo(&agent, todo);
    let cart = task_id(&p, "Build the cart");
    let checkout = task_id(&p, "Add checkout");

    let out = p.run(&["run", "--parallel", "1"]);
    let events = p.events();
    assert_eq!(code(&out), 0, "{events:#?}");
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "PARALLEL_ENDED", "{events:#?}");
    assert_eq!(ended["landed"], 1, "{ended}");

    // The cart never landed: no TASK_LANDED, its work not on main, a WARNING naming its save.
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "TASK_LANDED" && e["task_id"] == cart.as_str()),
        "{events:#?}"
    );
    assert!(show(p.path(), "main", &format!("{cart}.done")).is_none());
    let saved = format!("refs/ralph/attempts/{cart}/1");
    let warning = events
        .iter()
        .find(|e| e["type"] == "WARNING" && e["task_id"] == cart.as_str())
        .unwrap_or_else(|| panic!("a WARNING for the cart: {events:#?}"));
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains("no longer in the list") && message.contains(&saved),
        "{message}"
    );
    assert!(
        show(p.path(), &saved, &format!("{cart}.done")).is_some(),
        "the cart's work is saved under {saved}"
    );

    // The other task landed; the person's deletion stands.
    assert!(show(p.path(), "main", &format!("{checkout}.done")).is_some());
    assert_eq!(todo_on_main(&p), "# Shop\n\n- [x] Add checkout\n");
    let session: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join(".ralph/parallel/session.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(session["lanes"][&cart]["state"], "dropped", "{session}");
    assert_eq!(session["ended"], true);
    nothing_left_behind(p.path());
    git(p.path(), &["diff", "--quiet", "HEAD"]);
}

#[test]
fn a_lane_that_deletes_other_tasks_from_the_checklist_never_deletes_them_on_the_base() {
    // The cart's agent deletes every other item from the checklist in its worktree, and its
    // pass commits that; the checkout's agent changes nothing but its own work.
    let todo = "# Shop\n\n- [ ] Build the cart\n- [ ] Add checkout\n- [ ] Ship it\n";
    let agent = "prompt=$(cat)\nid=$(printf '%s\\n' \"$prompt\" | sed -n 's/^ID=//p')\n\
                 title=$(printf '%s\\n' \"$prompt\" | sed -n 's/^TITLE=//p')\n\
                 if [ \"$title\" = 'Build the cart' ]; then sed -i '/Add checkout/d; /Ship it/d' TODO.md; fi\n\
                 echo \"work of $title\" > \"$id.done\"\n";
    let p = todo_repo(agent, todo);
    let cart = task_id(&p, "Build the cart");

    let out = p.run(&["run", "--parallel", "1"]);
    let events = p.events();
    assert_eq!(code(&out), 0, "{events:#?}");
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "PARALLEL_ENDED", "{events:#?}");
    assert_eq!(ended["landed"], 3, "{ended}");

    // The cart's landing kept the other items; every task landed and is ticked.
    let landing = events
        .iter()
        .find(|e| e["type"] == "TASK_LANDED" && e["task_id"] == cart.as_str())
        .unwrap_or_else(|| panic!("{events:#?}"))["commit"]
        .as_str()
        .unwrap()
        .to_owned();
    let at_landing = String::from_utf8(show(p.path(), &landing, "TODO.md").unwrap()).unwrap();
    assert_eq!(
        at_landing,
        "# Shop\n\n- [x] Build the cart\n- [ ] Add checkout\n- [ ] Ship it\n"
    );
    assert_eq!(
        todo_on_main(&p),
        "# Shop\n\n- [x] Build the cart\n- [x] Add checkout\n- [x] Ship it\n"
    );
    nothing_left_behind(p.path());
}

#[test]
fn a_github_issue_a_person_closes_while_its_lane_runs_is_dropped_not_landed() {
    let server = GithubServer::start();
    let first = server.open_issue("First", "", &["ralph"]);
    let second = server.open_issue("Second", "", &["ralph"]);
    // The first issue's agent is also the person: it closes the issue, then does the work.
    let agent = format!(
        "n=$(sed -n 's/^ISSUE=//p')\n\
         if [ \"$n\" = {first} ]; then\n\
           curl -sf -X PATCH -H 'Authorization: Bearer {TOKEN}' -d '{{\"state\":\"closed\"}}' \
             '{url}/repos/{REPO}/issues/{first}' >/dev/null || exit 1\n\
         fi\n\
         echo \"work for $n\" > \"issue-$n.txt\"\n",
        url = server.url()
    );
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\ndone_when:\n  - 'ls issue-*.txt'\n\
             tasks:\n  github: {REPO}\n  label: ralph\n"
        ),
        "ISSUE={{ task.id }}\n",
    );
    std::fs::write(p.path().join("agent.sh"), agent).unwrap();
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(p.path());

    let out = p
        .ralph(&["run", "--parallel", "1"])
        .env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let events = p.events();
    assert_eq!(code(&out), 0, "{events:#?}");
    let (first, second) = (first.to_string(), second.to_string());

    // The closed issue: not landed, nothing said on it, its work saved.
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "TASK_LANDED" && e["task_id"] == first.as_str()),
        "{events:#?}"
    );
    assert!(show(p.path(), "main", &format!("issue-{first}.txt")).is_none());
    assert!(server.comments(1).is_empty(), "{:#?}", server.comments(1));
    let saved = format!("refs/ralph/attempts/{first}/1");
    assert!(
        events.iter().any(|e| e["type"] == "WARNING"
            && e["task_id"] == first.as_str()
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("no longer in the list") && m.contains(&saved))),
        "{events:#?}"
    );
    assert!(show(p.path(), &saved, &format!("issue-{first}.txt")).is_some());

    // The other issue landed and was closed.
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "TASK_LANDED" && e["task_id"] == second.as_str()),
        "{events:#?}"
    );
    assert!(!server.issue(2).open);
    nothing_left_behind(p.path());
}

#[test]
fn a_branch_kept_by_a_run_on_main_is_left_alone_by_a_run_on_another_base() {
    // The first run's agent commits work in progress and never passes: `-n 1` ends the run
    // with `ralph/<id>` kept. Once `<marks>/done` exists, it does the task.
    let marks = tempfile::tempdir().unwrap();
    let agent = format!(
        "prompt=$(cat)\nid=$(printf '%s\\n' \"$prompt\" | sed -n 's/^ID=//p')\n\
         if [ -e {m}/done ]; then echo done > \"$id.done\"; exit 0; fi\n\
         echo 'half of it' > wip.txt && git add wip.txt && git commit -qm 'work in progress'\n",
        m = marks.path().display()
    );
    let p = todo_repo(&agent, "# Shop\n\n- [ ] Build the cart\n");
    let dir = p.path();
    let cart = task_id(&p, "Build the cart");
    let branch = format!("ralph/{cart}");
    let out = p.run(&["run", "--parallel", "1", "-n", "1"]);
    assert_eq!(code(&out), 1, "{:#?}", p.events());
    let kept = git(dir, &["rev-parse", &branch]);

    git(dir, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(marks.path().join("done"), "").unwrap();
    std::fs::remove_file(p.events_path()).unwrap();
    let out = p.run(&["run", "--parallel", "1"]);
    let events = p.events();
    assert_eq!(code(&out), 1, "{events:#?}");
    assert!(
        events.iter().all(|e| e["type"] != "LANE_STARTED"),
        "{events:#?}"
    );
    assert!(
        events.iter().any(|e| e["type"] == "WARNING"
            && e["task_id"] == cart.as_str()
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains(&branch) && m.contains("on main"))),
        "{events:#?}"
    );
    // main's work in progress never reached feature; the branch is as main's run left it.
    assert!(show(dir, "feature", "wip.txt").is_none());
    assert_eq!(git(dir, &["rev-parse", &branch]), kept);
    let session: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".ralph/parallel/session.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(session["ended"], true, "{session}");
}

#[test]
fn a_parallel_run_on_another_base_beside_a_running_one_ends_cleanly_and_the_next_start_works() {
    // A lane on main waits for `<marks>/release`; one on feature works at once.
    let marks = tempfile::tempdir().unwrap();
    let agent = format!(
        "prompt=$(cat)\nid=$(printf '%s\\n' \"$prompt\" | sed -n 's/^ID=//p')\n\
         if [ \"$(git rev-parse --abbrev-ref '@{{u}}')\" = main ]; then\n\
           while [ ! -e {m}/release ]; do sleep 0.05; done\n\
         fi\n\
         echo done > \"$id.done\"\n",
        m = marks.path().display()
    );
    let p = todo_repo(&agent, "# Shop\n\n- [ ] Build the cart\n");
    let cart = task_id(&p, "Build the cart");
    let other = tempfile::tempdir().unwrap();
    let feature = other.path().join("feature");
    git(
        p.path(),
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            &feature.to_string_lossy(),
        ],
    );
    let run_on_feature = || {
        let _ = std::fs::remove_file(feature.join("events.jsonl"));
        std::process::Command::new(env!("CARGO_BIN_EXE_ralph"))
            .current_dir(&feature)
            .args(["run", "--events", "events.jsonl", "--parallel", "1"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let feature_events = || -> Vec<Value> {
        std::fs::read_to_string(feature.join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };

    let on_main = p.spawn(&["run", "--parallel", "1"]);
    p.wait_for("LANE_STARTED", 1);
    let out = run_on_feature();
    let events = feature_events();
    assert_eq!(code(&out), 1, "{events:#?}\n{}", common::stderr(&out));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "WARNING" && e["task_id"] == cart.as_str()),
        "{events:#?}"
    );
    let session: Value = serde_json::from_str(
        &std::fs::read_to_string(feature.join(".ralph/parallel/session.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(session["ended"], true, "{session}");

    std::fs::write(marks.path().join("release"), "").unwrap();
    let out = on_main.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{:#?}", p.events());
    assert!(show(p.path(), "main", &format!("{cart}.done")).is_some());

    // The next start on feature is not refused, and does the task there.
    let out = run_on_feature();
    assert_eq!(code(&out), 0, "{:#?}", feature_events());
    assert!(show(p.path(), "feature", &format!("{cart}.done")).is_some());
}
