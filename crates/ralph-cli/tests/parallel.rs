//! `ralph run --parallel N`: stories at once in worktrees, landed one at a time by the merge
//! queue; a conflict or a check failing on the merged result goes back to its loop; a run
//! killed mid-merge is resumed without losing anything; nothing is left behind.

use crate::common;

use std::time::{Duration, Instant, SystemTime};

use common::parallel::{
    READ_PROMPT, landed_with_its_passes, nothing_left_behind, passes, repo, wait_for_file,
};
use common::{Project, git, show};
use serde_json::Value;

use crate::parallel_markdown::merge_journal;

fn ts(event: &Value) -> SystemTime {
    humantime::parse_rfc3339(event["ts"].as_str().unwrap()).unwrap()
}

#[test]
fn stories_run_at_once_and_each_lands_with_its_passes() {
    let agent = format!(
        "{READ_PROMPT}sleep 1.5  # parallel-sleeper-ok\necho \"done $story\" > \"$story.txt\"\n"
    );
    let ids = ["US-001", "US-002", "US-003", "US-004"];
    let p = repo(&agent, "ls US-*.txt >/dev/null 2>&1\n", &ids, &[]);
    let out = p.run(&["run", "--parallel", "4"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    let dir = p.path();

    // Every lane's first iteration overlaps every other's: they ran at once.
    let span = |kind: &str| -> Vec<SystemTime> {
        events
            .iter()
            .filter(|e| e["type"] == kind && e["iteration"] == 1)
            .map(ts)
            .collect()
    };
    let (starts, ends) = (span("LANE_ITERATION_STARTED"), span("LANE_ITERATION_ENDED"));
    assert_eq!((starts.len(), ends.len()), (4, 4), "{events:#?}");
    assert!(
        starts.iter().max() < ends.iter().min(),
        "the four iterations overlap: started {starts:?}, ended {ends:?}"
    );
    for id in ids {
        landed_with_its_passes(dir, &events, id, &format!("{id}.txt"));
        assert_eq!(passes(dir, "HEAD", id), true);
        assert!(
            dir.join(format!("{id}.txt")).exists(),
            "the main worktree has {id}'s work"
        );
    }
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "PARALLEL_ENDED");
    assert_eq!(
        (ended["reason"].as_str(), ended["landed"].as_u64()),
        (Some("stories_done"), Some(4))
    );
    assert_eq!(
        git(dir, &["status", "--porcelain"]),
        "",
        "the main worktree is clean"
    );
    nothing_left_behind(dir);
    assert!(!common::process_running("parallel-sleeper-ok"));
}

#[test]
fn a_conflict_goes_back_to_its_loop_with_the_hunks_in_its_prompt_and_then_lands() {
    let prompts = tempfile::tempdir().unwrap();
    // Each story appends its line to the same file: the second to land conflicts.
    let agent = format!(
        "{READ_PROMPT}n=$(ls {out} | grep -c \"^$story\")\n\
         printf '%s' \"$prompt\" > {out}/$story.$n\n\
         echo \"$story was here\" >> shared.txt\necho ok > \"$story.txt\"\n",
        out = prompts.path().display()
    );
    let p = repo(
        &agent,
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[("shared.txt", "start\n")],
    );
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    let dir = p.path();
    let conflicts: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "MERGE_CONFLICT")
        .collect();
    assert_eq!(conflicts.len(), 1, "{events:#?}");
    let back = conflicts[0]["task_id"].as_str().unwrap();
    assert_eq!(conflicts[0]["files"], serde_json::json!(["shared.txt"]));
    // Its first attempt is kept under a ref.
    let saved = conflicts[0]["saved_ref"].as_str().unwrap();
    assert!(saved.starts_with(&format!("refs/ralph/attempts/{back}/")));
    assert!(show(dir, saved, &format!("{back}.txt")).is_some());
    // Its next prompt says where and what conflicted.
    let again = std::fs::read_to_string(prompts.path().join(format!("{back}.1"))).unwrap();
    assert!(
        again.contains("shared.txt") && again.contains("<<<<<<<"),
        "{again}"
    );
    assert!(again.contains(saved), "{again}");
    let first = std::fs::read_to_string(prompts.path().join(format!("{back}.0"))).unwrap();
    assert!(!first.contains("<<<<<<<"), "{first}");
    for id in ["US-001", "US-002"] {
        landed_with_its_passes(dir, &events, id, &format!("{id}.txt"));
    }
    let shared = std::fs::read_to_string(dir.join("shared.txt")).unwrap();
    assert!(
        shared.contains("US-001 was here") && shared.contains("US-002 was here"),
        "{shared}"
    );
    nothing_left_behind(dir);
}

#[test]
fn a_check_that_fails_only_on_the_merged_result_sends_the_task_back() {
    // Each story alone passes; both together fail until a story's second attempt, told its
    // checks failed once merged, adds the fix.
    let agent = format!(
        "{READ_PROMPT}echo ok > \"$story.txt\"\n\
         if printf '%s' \"$prompt\" | grep -q 'failed its checks once merged'; then echo fix > fixed.txt; fi\n"
    );
    let check = "ls US-*.txt >/dev/null 2>&1 || exit 1\n\
                 if [ -e US-001.txt ] && [ -e US-002.txt ] && [ ! -e fixed.txt ]; then echo 'error: the two clash'; exit 1; fi\n";
    let p = repo(&agent, check, &["US-001", "US-002"], &[]);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    let dir = p.path();
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "MERGE_CHECK_FAILED")
        .collect();
    assert_eq!(failed.len(), 1, "{events:#?}");
    assert_eq!(failed[0]["checks"][0]["command"], "sh check.sh");
    assert_eq!(failed[0]["checks"][0]["exit_code"], 1);
    let back = failed[0]["task_id"].as_str().unwrap();
    let saved = failed[0]["saved_ref"].as_str().unwrap();
    assert!(show(dir, saved, &format!("{back}.txt")).is_some());
    assert!(show(dir, saved, "fixed.txt").is_none());
    landed_with_its_passes(dir, &events, back, "fixed.txt");
    assert!(events.iter().filter(|e| e["type"] == "TASK_LANDED").count() == 2);
    nothing_left_behind(dir);
}

#[test]
fn killed_mid_merge_the_resumed_run_lands_everything_and_loses_nothing() {
    let marks = tempfile::tempdir().unwrap();
    let slow = marks.path().join("slow");
    let merging = marks.path().join("merging");
    std::fs::write(&slow, "").unwrap();
    // US-002's agent is slow: it runs while US-001's merge is checked. The queue's check (no
    // RALPH_ITERATION: it is no iteration's) hangs while `slow` exists.
    let agent = format!(
        "{READ_PROMPT}if [ \"$story\" = US-002 ]; then echo half > half-done.txt; sleep 3; fi  # parallel-killed-ok\n\
         echo ok > \"$story.txt\"\n"
    );
    let check = format!(
        "ls US-*.txt >/dev/null 2>&1 || exit 1\n\
         if [ -z \"$RALPH_ITERATION\" ] && [ -e {slow} ]; then touch {merging}; sleep 60; fi  # parallel-killed-ok\n",
        slow = slow.display(),
        merging = merging.display()
    );
    let p = repo(&agent, &check, &["US-001", "US-002"], &[]);
    let mut child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&merging);
    child.kill().unwrap();
    child.wait().unwrap();
    let dir = p.path();
    let common_dir = git(dir, &["rev-parse", "--git-common-dir"]);
    assert!(
        dir.join(common_dir.trim())
            .join("ralph-merge-journal.json")
            .exists(),
        "killed with a merge in flight"
    );
    assert_eq!(passes(dir, "main", "US-001"), false);

    std::fs::remove_file(&slow).unwrap();
    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(events[0]["type"], "PARALLEL_STARTED");
    assert_eq!(events[0]["resumed"], true);
    for id in ["US-001", "US-002"] {
        landed_with_its_passes(dir, &events, id, &format!("{id}.txt"));
        assert!(dir.join(format!("{id}.txt")).exists());
    }
    assert!(
        !dir.join(common_dir.trim())
            .join("ralph-merge-journal.json")
            .exists()
    );
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
    nothing_left_behind(dir);
    assert!(!common::process_running("parallel-killed-ok"));
}

#[test]
fn a_merge_check_under_way_when_the_last_lane_ends_runs_to_its_end() {
    let marks = tempfile::tempdir().unwrap();
    let merging = marks.path().join("merging");
    // US-002's agent waits until US-001's merge is being checked; that check (no
    // RALPH_ITERATION: it is no iteration's) holds until US-002's lane, the last, has ended.
    let agent = format!(
        "{READ_PROMPT}if [ \"$story\" = US-002 ]; then\n\
         i=0; until [ -e {merging} ]; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done\n\
         fi\necho ok > \"$story.txt\"\n",
        merging = merging.display()
    );
    let p = repo(&agent, "", &["US-001", "US-002"], &[]);
    let dir = p.path();
    let check = format!(
        "ls US-*.txt >/dev/null 2>&1 || exit 1\n\
         if [ -z \"$RALPH_ITERATION\" ]; then\n\
         touch {merging}\n\
         i=0; until grep -q '\"LANE_ENDED\".*\"US-002\"' {events}; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done\n\
         fi\n",
        merging = merging.display(),
        events = dir.join(".ralph/parallel/events.jsonl").display()
    );
    std::fs::write(dir.join("check.sh"), check).unwrap();
    git(
        dir,
        &["commit", "-qam", "the queue's check outlives the lanes"],
    );
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert!(
        events.iter().all(|e| e["type"] != "MERGE_CHECK_FAILED"),
        "the check was not killed when the lanes ended: {events:#?}"
    );
    for id in ["US-001", "US-002"] {
        landed_with_its_passes(dir, &events, id, &format!("{id}.txt"));
    }
    nothing_left_behind(dir);
}

#[test]
fn parallel_needs_done_when_and_says_so() {
    let p = Project::new("agent: cat\nescalation:\n  prd: prd.json", "x\n");
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 2);
    assert!(
        common::stderr(&out).contains("--parallel needs `done_when`"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn a_terminal_shows_a_live_line_per_running_lane_above_a_summary() {
    let agent = format!("{READ_PROMPT}sleep 1.5\necho ok > \"$story.txt\"\n");
    let p = repo(
        &agent,
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    let (screen, code) = common::run_on_terminal(&p, &["--parallel", "2"], &[]);
    assert_eq!(code, 0, "{screen}");
    for id in ["US-001", "US-002"] {
        // A story's id and title: the title is `story <id>`.
        let story = format!("{id} story {id}");
        assert!(
            screen.contains(&format!("  {story:<36} iteration 1")),
            "a live line for {id}: {screen}"
        );
        assert!(screen.contains(&format!("✓ {story} landed")), "{screen}");
    }
    assert!(screen.contains("· running 2 ·"), "{screen}");
    assert!(
        screen.contains("landed 2 · blocked 0 · running 0"),
        "{screen}"
    );
    // The agents' output went to their logs, not the terminal.
    assert!(!screen.contains("STORY="), "{screen}");
}

#[test]
fn max_runtime_counts_the_whole_run_and_starts_no_lane_past_it() {
    let agent = format!("{READ_PROMPT}sleep 2\necho ok > \"$story.txt\"\n");
    let p = repo(
        &agent,
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    let out = p.run(&["run", "--parallel", "1", "--max-runtime", "1s"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let events = p.events();
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "LANE_STARTED")
        .collect();
    assert_eq!(started.len(), 1, "{events:#?}");
    assert_eq!(started[0]["task_id"], "US-001");
    let ended = events.last().unwrap();
    assert_eq!(
        (ended["type"].as_str(), ended["reason"].as_str()),
        (Some("PARALLEL_ENDED"), Some("max_runtime"))
    );
    // The lane finished its iteration and, as after a first Ctrl+C, its passed task landed.
    assert_eq!(ended["landed"], 1, "{events:#?}");
    assert_eq!(passes(p.path(), "main", "US-001"), true);
}

#[test]
fn sixteen_lanes_start_at_once_each_in_a_worktree_of_its_own() {
    let agent = format!("{READ_PROMPT}echo ok > \"$story.txt\"\n");
    let ids: Vec<String> = (1..=16).map(|i| format!("US-{i:03}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let p = repo(&agent, "ls US-*.txt >/dev/null 2>&1\n", &ids, &[]);
    let out = p.run(&["run", "--parallel", "16"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "LANE_STARTED")
            .count(),
        16
    );
    for id in ids {
        landed_with_its_passes(p.path(), &events, id, &format!("{id}.txt"));
    }
    nothing_left_behind(p.path());
}

#[test]
fn report_shows_a_lane_per_task_and_the_merge_queue_landings() {
    let agent = format!("{READ_PROMPT}echo \"done $story\" > \"$story.txt\"\n");
    let ids = ["US-001", "US-002"];
    let p = repo(&agent, "ls US-*.txt >/dev/null 2>&1\n", &ids, &[]);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(events[0]["type"], "PARALLEL_STARTED");

    // No id: the newest run is the parallel one; with its id: the same report.
    let newest = p.run(&["report", "-o", "-"]);
    assert_eq!(common::code(&newest), 0, "{}", common::stderr(&newest));
    let html = String::from_utf8(newest.stdout).unwrap();
    let by_id = p.run(&["report", &run_id, "-o", "-"]);
    assert_eq!(common::code(&by_id), 0, "{}", common::stderr(&by_id));
    assert_eq!(String::from_utf8(by_id.stdout).unwrap(), html);

    assert!(
        html.contains(&format!("ralph parallel run {run_id}")),
        "{html}"
    );
    for id in ids {
        assert!(
            html.contains(&format!("<g class=\"lane\" data-task=\"{id}\">")),
            "{id}'s lane: {html}"
        );
        let landed = events
            .iter()
            .find(|e| e["type"] == "TASK_LANDED" && e["task_id"] == id)
            .unwrap();
        let commit = &landed["commit"].as_str().unwrap()[..12];
        assert!(
            html.contains(&format!("landed on the base as {commit}")),
            "{id}'s landing in the queue: {html}"
        );
    }
    let queue = &html[html.find("<h2>Merge queue</h2>").expect("a merge queue")..];
    assert_eq!(queue.matches("landed on the base as").count(), 2, "{queue}");

    // A lane's loop is still reported by its own run id.
    let lane_run = events.iter().find(|e| e["type"] == "LANE_STARTED").unwrap()["lane_run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lane = p.run(&["report", &lane_run, "-o", "-"]);
    assert_eq!(common::code(&lane), 0, "{}", common::stderr(&lane));
    let lane_html = String::from_utf8(lane.stdout).unwrap();
    assert!(lane_html.contains(&format!("<h1>ralph run {lane_run}</h1>")));
}

/// `repo`, its RALPH.md given `extra` frontmatter lines (committed).
fn repo_with(extra: &str, agent: &str, check: &str, ids: &[&str]) -> Project {
    let p = repo(agent, check, ids, &[]);
    let path = p.path().join("RALPH.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen(
        "agent: sh agent.sh\n",
        &format!("agent: sh agent.sh\n{extra}"),
        1,
    );
    std::fs::write(&path, text).unwrap();
    git(p.path(), &["commit", "-q", "-am", "frontmatter"]);
    p
}

#[test]
fn max_cost_counts_every_lane_of_the_run() {
    // Each iteration reports $0.60, once both lanes run the same iteration (a lane alone never
    // gets ahead); an iteration left waiting past 10 s reports nothing. The check never
    // passes: only max_cost ends the run.
    let out = tempfile::tempdir().unwrap();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.6,"result":"done"}"#;
    let agent = format!(
        "{READ_PROMPT}n=$(ls {out} | grep -c \"^$story\")\ntouch {out}/$story.$n\ni=0\n\
         until [ -e {out}/US-001.$n ] && [ -e {out}/US-002.$n ]; do\n\
         i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.1\ndone\n\
         echo work >> \"$story.txt\"\nprintf '%s\\n' '{result}'\n",
        out = out.path().display()
    );
    let p = repo_with(
        "output: claude-stream-json\nmax_cost: 1\n",
        &agent,
        "exit 1\n",
        &["US-001", "US-002"],
    );
    let run = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&run), 1, "{}", common::stderr(&run));
    let events = p.events();
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "PARALLEL_ENDED");
    assert_eq!(ended["reason"], "max_cost", "{events:#?}");
    // The run's cost is its lanes' together.
    let lanes: f64 = events
        .iter()
        .filter(|e| e["type"] == "LANE_ENDED")
        .map(|e| e["cost_usd"].as_f64().unwrap())
        .sum();
    let total = ended["cost_usd"].as_f64().unwrap();
    assert!((total - lanes).abs() < 1e-9, "{ended}: lanes {lanes}");
    // The run stopped on the sum: when it first reached $1, neither lane had alone. An
    // iteration a lane had already started finishes (on a loaded machine the lanes may be one
    // iteration further when the stop reaches them), so the total may pass $1.20 by as much.
    let mut by_lane = std::collections::BTreeMap::<String, f64>::new();
    let mut crossed = false;
    for e in events
        .iter()
        .filter(|e| e["type"] == "LANE_ITERATION_ENDED")
    {
        *by_lane
            .entry(e["task_id"].as_str().unwrap().to_owned())
            .or_default() += e["cost_usd"].as_f64().unwrap_or(0.0);
        if by_lane.values().sum::<f64>() >= 1.0 - 1e-9 {
            assert!(by_lane.values().all(|c| *c < 1.0), "{by_lane:?}");
            crossed = true;
            break;
        }
    }
    assert!(crossed, "the lanes' iterations reached $1: {events:#?}");
    assert!(total <= 1.2 + 2.0 * 0.6 + 1e-9, "{ended}");
}

#[test]
fn a_second_ctrl_c_stops_the_lanes_at_once_and_resume_lands_them() {
    let started = tempfile::tempdir().unwrap();
    // The first agent run of a story sleeps a minute; the next does the work.
    let agent = format!(
        "{READ_PROMPT}if [ -e {out}/$story ]; then echo ok > \"$story.txt\"; exit 0; fi\n\
         touch {out}/$story\nsleep 67.3\n",
        out = started.path().display()
    );
    let p = repo(
        &agent,
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    let mut child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&started.path().join("US-001"));
    wait_for_file(&started.path().join("US-002"));
    common::send_signal(child.id(), libc::SIGINT);
    // Apart, so the kernel does not fold them into one; well within the second that makes
    // the second Ctrl+C a "stop now".
    std::thread::sleep(Duration::from_millis(200));
    common::send_signal(child.id(), libc::SIGINT);
    // The agents sleep 67 s: an exit well before means they were not waited for.
    let deadline = Instant::now() + Duration::from_secs(40);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            common::kill_if_running(child.id());
            panic!("a second Ctrl+C did not stop the run at once");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    assert!(!common::process_running("sleep 67.3"), "no agent left");
    let events = p.events();
    assert_eq!(events.last().unwrap()["reason"], "interrupted");
    assert!(
        events.iter().all(|e| e["type"] != "TASK_LANDED"),
        "{events:#?}"
    );

    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    for id in ["US-001", "US-002"] {
        landed_with_its_passes(p.path(), &events, id, &format!("{id}.txt"));
    }
    nothing_left_behind(p.path());
}

#[test]
fn a_worktree_that_cannot_be_checked_out_says_why_and_leaves_nothing_behind() {
    let p = repo(
        "echo ok > US-001.txt\n",
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001"],
        &[
            ("data.bin", "payload\n"),
            (".gitattributes", "data.bin filter=broken\n"),
        ],
    );
    let dir = p.path();
    // Set after the commit: writing data.bin out of the repository now fails.
    git(dir, &["config", "filter.broken.smudge", "false"]);
    git(dir, &["config", "filter.broken.required", "true"]);
    let out = p.run(&["run", "--parallel", "1"]);
    assert_ne!(common::code(&out), 0);
    let stderr = common::stderr(&out);
    assert!(
        stderr.contains("reset"),
        "the failing git command is named: {stderr}"
    );
    nothing_left_behind(dir);
}

#[test]
fn killed_after_the_base_moved_before_the_run_recorded_it_the_resumed_run_lands_it_once() {
    let runs = tempfile::tempdir().unwrap();
    let agent = format!(
        "{READ_PROMPT}echo \"$story\" >> {runs}/agent-runs\necho ok > \"$story.txt\"\n",
        runs = runs.path().display()
    );
    let p = repo(&agent, "ls US-*.txt >/dev/null 2>&1\n", &["US-001"], &[]);
    let dir = p.path();
    // git holds the deletion of the lane's branch, which comes once the base has moved to the
    // landing and before the run goes on: ralph is killed there.
    let held = common::HeldGit::install(
        dir,
        "prepared",
        "refs/heads/ralph/US-001",
        "case $new in *[!0]*) false;; esac",
    );
    let mut child = p.spawn(&["run", "--parallel", "1"]);
    held.wait_held();
    child.kill().unwrap();
    child.wait().unwrap();
    held.release();
    assert_eq!(passes(dir, "main", "US-001"), true, "the base moved");

    let out = p.run(&["run", "--parallel", "1", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(events[0]["resumed"], true);
    let subjects = git(dir, &["log", "--format=%s", "main"]);
    assert_eq!(
        subjects
            .lines()
            .filter(|s| s.starts_with("ralph: land US-001"))
            .count(),
        1,
        "landed once: {subjects}"
    );
    assert_eq!(passes(dir, "main", "US-001"), true);
    assert_eq!(
        std::fs::read_to_string(runs.path().join("agent-runs")).unwrap(),
        "US-001\n",
        "its loop ran once"
    );
    assert!(!merge_journal(dir).exists());
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
    nothing_left_behind(dir);
}

#[test]
fn a_landing_the_main_worktree_refuses_is_kept_and_landed_by_resume_without_redoing_the_task() {
    let runs = tempfile::tempdir().unwrap();
    // The agent does the story in its worktree; a person meanwhile starts a file of the same
    // name in the main worktree, which the fast-forward must not overwrite.
    let p = repo("", "ls US-*.txt >/dev/null 2>&1\n", &["US-001"], &[]);
    let main = p.path().to_path_buf();
    let agent = format!(
        "{READ_PROMPT}echo run >> {runs}/$story\necho work > \"$story.txt\"\n\
         echo 'mine, not committed' > {main}/$story.txt\n",
        runs = runs.path().display(),
        main = main.display()
    );
    std::fs::write(main.join("agent.sh"), agent).unwrap();
    common::commit_all(&main, "the agent");

    let out = p.run(&["run", "--parallel", "1"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let events = p.events();
    assert!(
        events.iter().all(|e| e["type"] != "TASK_LANDED"),
        "{events:#?}"
    );
    assert_eq!(events.last().unwrap()["reason"], "work_left", "{events:#?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("not landed, kept on ralph/US-001"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The person's file is as they left it, the base where it was, the work on its branch.
    assert_eq!(
        std::fs::read_to_string(main.join("US-001.txt")).unwrap(),
        "mine, not committed\n"
    );
    assert_eq!(passes(&main, "HEAD", "US-001"), false);
    assert!(show(&main, "ralph/US-001", "US-001.txt").is_some());
    let status = p.run(&["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(": stopped")
            && status
                .lines()
                .any(|l| l.starts_with("  US-001 ") && l.contains(" waiting ")),
        "{status}"
    );

    // The person moves their file away; the resumed run lands the work the agent did.
    std::fs::remove_file(main.join("US-001.txt")).unwrap();
    let out = p.run(&["run", "--parallel", "1", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    landed_with_its_passes(&main, &events, "US-001", "US-001.txt");
    assert_eq!(
        std::fs::read_to_string(main.join("US-001.txt")).unwrap(),
        "work\n"
    );
    assert_eq!(
        std::fs::read_to_string(runs.path().join("US-001")).unwrap(),
        "run\n",
        "the agent ran once: its work was landed, not done again"
    );
    nothing_left_behind(&main);
}
