//! Resume: `ralph run --resume` takes a stopped run up where it stopped (same run, iteration
//! numbers, streaks, the interrupted wait, the breaker's counts), and refuses a run that ended
//! by itself. Every test drives the real binary; `ralph status --json` is checked in
//! `tests/status.rs`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    Project, code, fake_agent, git, kill_if_running, send_signal, stderr, story_repo, wait_for_pid,
};
use serde_json::Value;

/// The folder's last run's log folder, as `.ralph/current` names it.
fn run_dir(p: &Project) -> PathBuf {
    let text = std::fs::read_to_string(p.path().join(".ralph/current")).expect(".ralph/current");
    PathBuf::from(text.trim_end())
}

/// The run's own events (the whole run, over every process that ran it).
fn run_events(p: &Project) -> Vec<Value> {
    read_events(&run_dir(p).join("events.jsonl"))
}

fn read_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn iterations_started(events: &[Value]) -> Vec<u64> {
    of(events, "ITERATION_STARTED")
        .iter()
        .map(|e| e["iteration"].as_u64().unwrap())
        .collect()
}

/// Polls the run's own events until `kind` has appeared `count` times.
fn wait_for_run_event(p: &Project, kind: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = match p.path().join(".ralph/current").exists() {
            true => of(&run_events(p), kind).len(),
            false => 0,
        };
        if seen >= count {
            return;
        }
        assert!(Instant::now() < deadline, "no {count} x {kind} in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run that used up its `-n` would start and end at once resumed with it: refused, naming
/// the command with a higher limit, and nothing is written to the run.
#[test]
fn a_resume_without_a_higher_limit_than_the_one_used_up_is_refused_naming_the_command() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "work\n");
    let out = p.run(&["run", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let before = run_events(&p).len();
    for args in [&["run", "--resume"][..], &["run", "--resume", "-n", "2"]] {
        let out = p.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("stopped at its iteration limit (2")
                && stderr(&out).contains("`ralph run --resume -n 4`"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(
        run_events(&p).len(),
        before,
        "the refused resumes wrote nothing"
    );
    let out = p.run(&["run", "--resume", "-n", "3"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(iterations_started(&run_events(&p)), [1, 2, 3]);
}

#[test]
fn a_run_stopped_by_max_iterations_goes_on_with_the_next_iteration_and_its_idle_streak() {
    let agent = fake_agent();
    let p = Project::new(
        &format!(
            "agent: {agent} --idle-from 2\nidle: {{delay: 10ms, backoff: 2, max_delay: 10ms}}"
        ),
        "work\n",
    );
    let out = p.run(&["run", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let first = run_events(&p);
    let run_id = first[0]["run_id"].as_str().unwrap().to_owned();

    let out = p.run(&["run", "--resume", "-n", "4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        common::stdout(&out).starts_with("resuming the run after iteration 2 (max_iterations)\n"),
        "{}",
        common::stdout(&out)
    );

    // One run: same id, same folder, events appended; the new --events file starts with
    // RUN_RESUMED.
    let all = run_events(&p);
    assert!(all.iter().all(|e| e["run_id"] == run_id.as_str()));
    assert_eq!(iterations_started(&all), [1, 2, 3, 4]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED");
    assert_eq!(resumed[0]["iteration"], 2);
    assert_eq!(resumed[0]["previous_reason"], "max_iterations");
    assert_eq!(resumed[1]["type"], "RUN_STARTED");
    assert_eq!(iterations_started(&resumed), [3, 4]);
    // The idle streak goes on: idle at 2 was the first, 3 and 4 the second and third.
    let streak: Vec<u64> = of(&resumed, "ITERATION_IDLE")
        .iter()
        .map(|e| e["consecutive_idle"].as_u64().unwrap())
        .collect();
    assert_eq!(streak, [2, 3]);
    let ended = of(&resumed, "RUN_ENDED")[0];
    assert_eq!(ended["iterations"], 4, "RUN_ENDED counts the whole run");
    assert_eq!(ended["idle_iterations"], 3);

    // By its id, too.
    let out = p.run(&["run", "--resume", &run_id, "--now", "-n", "5"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(iterations_started(&p.events()), [5]);
}

#[test]
fn a_resumed_run_keeps_its_n_unless_resume_is_given_another() {
    // Idle at iteration 1 (a long wait to stop it in), working after; `done` at 5 ends a run
    // that forgot its limit.
    let p = Project::new("agent: sh agent.sh\nidle: {delay: 60s}", "work\n");
    std::fs::write(
        p.path().join("agent.sh"),
        "cat >/dev/null\ncase $RALPH_ITERATION in\n  1) echo '<!-- ralph:state idle -->' ;;\n  \
         5) echo '<!-- ralph:state done -->' ;;\n  *) echo working ;;\nesac\n",
    )
    .unwrap();
    let child = p.spawn(&["run", "-n", "3"]);
    wait_for_run_event(&p, "WAIT_STARTED", 1);
    send_signal(child.id(), libc::SIGTERM);
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(143));
    let session: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir(&p).join("session.json")).unwrap())
            .unwrap();
    assert_eq!(session["max_iterations"], 3);

    let out = p.run(&["run", "--resume", "--now"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let resumed = p.events();
    assert_eq!(iterations_started(&resumed), [2, 3]);
    assert_eq!(of(&resumed, "RUN_ENDED")[0]["reason"], "max_iterations");

    // A new -n replaces it, and is kept in turn.
    let out = p.run(&["run", "--resume", "-n", "4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(iterations_started(&p.events()), [4]);
    // Kept: resumed with it, the run would end at once, so that is refused.
    let out = p.run(&["run", "--resume"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`ralph run --resume -n 8`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_story_run_out_of_iterations_prints_a_resume_command_that_goes_on() {
    let p = story_repo("cat >/dev/null\n", &["one", "two"]);
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "max_iterations_work_left");
    let shown = common::stdout(&out);
    let command = shown
        .trim_end()
        .rsplit_once("go on where it stopped: ")
        .unwrap_or_else(|| panic!("{shown}"))
        .1;
    assert_eq!(command, "ralph run --resume -n 2");

    let words = shlex::split(command).unwrap();
    p.run(&words[1..].iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(iterations_started(&p.events()), [2]);
}

#[test]
fn a_resumed_run_keeps_its_max_runtime_and_the_printed_command_raises_it() {
    // 200 ms an iteration; `done` at 6 ends a run that forgot its budget.
    let p = Project::new("agent: sh agent.sh", "work\n");
    std::fs::write(
        p.path().join("agent.sh"),
        "cat >/dev/null\nsleep 0.2\n[ $RALPH_ITERATION = 6 ] && echo '<!-- ralph:state done -->'\n\
         exit 0\n",
    )
    .unwrap();
    let out = p.run(&["run", "--max-runtime", "300ms"]);
    assert_eq!(p.run_ended()["reason"], "max_runtime", "{}", stderr(&out));
    let shown = common::stdout(&out);
    assert!(
        shown
            .trim_end()
            .ends_with("go on where it stopped: ralph run --resume --max-runtime 600ms"),
        "{shown}"
    );

    // Without a new budget: spent already, nothing runs.
    p.run(&["run", "--resume"]);
    assert_eq!(p.run_ended()["reason"], "max_runtime");
    assert!(iterations_started(&p.events()).is_empty());
    // With one, the run goes on.
    p.run(&["run", "--resume", "--max-runtime", "60s"]);
    assert_eq!(p.run_ended()["reason"], "agent_done");
}

#[test]
fn sigint_during_an_idle_wait_resumes_with_what_is_left_of_that_wait() {
    let agent = fake_agent();
    // Waits of 50ms, 1s, then 20s: the run is stopped in the third.
    let p = Project::new(
        &format!(
            "agent: {agent} --idle-from 1\nidle: {{delay: 50ms, backoff: 20, max_delay: 60s}}"
        ),
        "work\n",
    );
    let child = p.spawn(&["run"]);
    wait_for_run_event(&p, "WAIT_STARTED", 3);
    let waiting_since = Instant::now();
    // A first Ctrl+C skips a wait; a second within a second stops the loop.
    send_signal(child.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(100));
    send_signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let shown = common::stdout(&out);
    assert!(
        shown
            .trim_end()
            .ends_with("go on where it stopped: ralph run --resume"),
        "the last line says how to go on: {shown}"
    );
    let first = run_events(&p);
    assert_eq!(iterations_started(&first), [1, 2, 3]);

    let mut child = p.spawn(&["run", "--resume"]);
    wait_for_run_event(&p, "RUN_RESUMED", 1);
    wait_for_run_event(&p, "WAIT_STARTED", 4);
    let stopped_for = waiting_since.elapsed();
    send_signal(child.id(), libc::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED");
    assert_eq!(resumed[0]["iteration"], 3);
    assert_eq!(resumed[0]["previous_reason"], "interrupted");
    // No new iteration first: the rest of the third idle wait.
    assert!(iterations_started(&resumed).is_empty());
    let wait = of(&resumed, "WAIT_STARTED")[0];
    assert_eq!(wait["reason"], "idle");
    assert_eq!(wait["iteration"], 3);
    let left = wait["delay_ms"].as_u64().unwrap();
    assert!(
        left < 20_000 && left + 5_000 > 20_000 - stopped_for.as_millis() as u64,
        "what is left of the 20s wait: {left}ms"
    );

    // --now skips it; the streak goes on at its fourth idle iteration.
    let out = p.run(&["run", "--resume", "--now", "-n", "4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let resumed = p.events();
    assert_eq!(resumed[0]["previous_reason"], "interrupted");
    assert_eq!(iterations_started(&resumed), [4]);
    assert_eq!(of(&resumed, "ITERATION_IDLE")[0]["consecutive_idle"], 4);
    assert_eq!(of(&resumed, "WAIT_STARTED").len(), 0);
}

/// Fails (exit 1) on every iteration but the third, which sleeps until killed.
const FAILS_THEN_HANGS: &str = r#"cat >/dev/null
if [ "$RALPH_ITERATION" = 3 ]; then echo $$ > agent.pid; exec sleep 60; fi
echo "boom at $RALPH_ITERATION" >&2
exit 1
"#;

fn failing_project() -> Project {
    let p = Project::new(
        "agent: sh agent.sh\nfailure: {delay: 10ms, max_delay: 10ms, max_consecutive: 10}",
        "work\n",
    );
    std::fs::write(p.path().join("agent.sh"), FAILS_THEN_HANGS).unwrap();
    p
}

#[test]
fn kill_9_during_the_agent_resumes_after_the_killed_iteration_with_the_failure_streak() {
    let p = failing_project();
    let mut child = p.spawn(&["run"]);
    wait_for_run_event(&p, "ITERATION_STARTED", 3);
    let agent = agent_started(&p, 3);
    send_signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    kill_if_running(agent);
    std::fs::remove_file(p.path().join("agent.pid")).unwrap();

    let out = p.run(&["run", "--resume", "-n", "4"]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED");
    assert_eq!(resumed[0]["iteration"], 3);
    assert_eq!(resumed[0]["previous_reason"], "killed");
    assert_eq!(iterations_started(&resumed), [4]);
    // Iterations 1 and 2 failed; the killed third is no step; the fourth is the third failure.
    let failed = of(&resumed, "ITERATION_FAILED")[0];
    assert_eq!(failed["iteration"], 4);
    assert_eq!(failed["consecutive_failures"], 3);
    assert_eq!(code(&out), 1, "max_iterations with the last run failing");
}

/// Waits until the hanging iteration's agent is running (it wrote its pid) and the session
/// file, written off the loop's thread, says so; returns the agent's pid. The session must name
/// that iteration: on a loaded machine the writer may still hold an earlier iteration's
/// "working" when the agent starts, and a kill then resumes from that earlier step.
fn agent_started(p: &Project, iteration: u64) -> u32 {
    let agent = wait_for_pid(&p.path().join("agent.pid"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let session = run_dir(p).join("session.json");
    loop {
        let text = std::fs::read_to_string(&session).unwrap_or_default();
        let value: Value = serde_json::from_str(&text).unwrap_or_default();
        if value["working"] == true && value["iteration"] == iteration {
            return agent;
        }
        assert!(Instant::now() < deadline, "the session never said it works");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_that_ended_by_itself_is_not_resumed() {
    let agent = fake_agent();
    let p = Project::new(&format!("agent: {agent} --marker done"), "work\n");
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "agent_done");
    assert!(!common::stdout(&out).contains("--resume"));

    let out = p.run(&["run", "--resume"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("ended by itself (agent_done, exit 0"),
        "says why: {err}"
    );
    assert_eq!(iterations_started(&run_events(&p)), [1], "nothing ran");
}

#[test]
fn resume_with_no_run_in_the_folder_says_so() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "work\n");
    let out = p.run(&["run", "--resume"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("nothing to resume"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_ralph_md_edited_while_stopped_is_reloaded_and_said_so() {
    let agent = fake_agent();
    let p = Project::new(&format!("agent: {agent} --out one"), "work\n");
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    std::fs::write(
        p.path().join("RALPH.md"),
        format!("---\nagent: {agent} --out two\n---\nwork\n"),
    )
    .unwrap();
    let out = p.run(&["run", "--resume", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let resumed = p.events();
    assert_eq!(of(&resumed, "CONFIG_RELOADED")[0]["iteration"], 2);
    assert!(common::stdout(&out).contains("two"));

    // A broken edit is refused with its errors, as at any start.
    std::fs::write(
        p.path().join("RALPH.md"),
        "---\nagent: 12\nmax_iterations: x\n---\n",
    )
    .unwrap();
    let out = p.run(&["run", "--resume", "-n", "3"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("max_iterations"), "{}", stderr(&out));
}

// Story mode.

/// The agent leaves uncommitted work (`work.txt`) and the check always fails the same way.
const STORY_AGENT: &str = "cat >/dev/null\necho \"try $RALPH_ITERATION\" >> work.txt\n";

#[test]
fn a_story_stopped_after_two_failed_attempts_trips_the_breaker_on_its_third() {
    let p = story_repo(STORY_AGENT, &["One", "Two"]);
    let out = p.run(&["run", "-n", "2"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(of(&p.events(), "ATTEMPT_ENDED").len(), 2);
    assert!(p.events_of("CIRCUIT_TRIPPED").is_empty());
    let out = p.run(&["status", "--json"]);
    let status: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(status["story"], "US-001");
    assert_eq!(
        status["attempt"], 3,
        "two attempts failed: the third is next"
    );
    assert_eq!(
        status["stories"],
        serde_json::json!({"passed": 0, "blocked": 0, "remaining": 2})
    );
    assert_eq!(status["resumable"], true);

    // A plain run is refused on the attempt's uncommitted work, naming the way on.
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("ralph run --resume") && err.contains("--allow-dirty"),
        "{err}"
    );
    assert!(err.contains("story US-001"), "{err}");

    let out = p.run(&["run", "--resume", "-n", "3"]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    let attempts: Vec<u64> = of(&resumed, "ATTEMPT_ENDED")
        .iter()
        .map(|e| e["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [3], "convergence attempts go on");
    let tripped = of(&resumed, "CIRCUIT_TRIPPED");
    assert_eq!(tripped.len(), 1, "{}", stderr(&out));
    assert_eq!(tripped[0]["story_id"], "US-001");
    assert_eq!(tripped[0]["reason"], "same_error");
    assert_eq!(tripped[0]["count"], 3);
    // The whole attempt, all three tries, was saved before the revert.
    let saved = of(&resumed, "REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        git(p.path(), &["show", &format!("{saved}:work.txt")]),
        "try 1\ntry 2\ntry 3\n"
    );
}

#[test]
fn a_story_tree_changed_by_anything_else_is_still_refused() {
    let p = story_repo(STORY_AGENT, &["One", "Two"]);
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    std::fs::write(p.path().join("mine.txt"), "my own edit\n").unwrap();
    let out = p.run(&["run", "--resume", "-n", "3"]);
    assert_eq!(code(&out), 2);
    // It names what changed while the run was stopped, not the attempt's own work.txt.
    let err = stderr(&out);
    assert!(
        err.contains("changed while the run was stopped (uncommitted changes to mine.txt)"),
        "{err}"
    );
    assert!(err.contains("--allow-dirty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(p.path().join("mine.txt")).unwrap(),
        "my own edit\n"
    );
}

#[test]
fn a_story_run_whose_head_moved_while_its_tree_was_dirty_is_refused_naming_both_commits() {
    let p = story_repo(STORY_AGENT, &["One", "Two"]);
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    let left = git(p.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    git(p.path(), &["commit", "-q", "--allow-empty", "-m", "mine"]);
    let now = git(p.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    let out = p.run(&["run", "--resume", "-n", "3"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "HEAD moved from {} to {}",
            &left[..12],
            &now[..12]
        )),
        "{err}"
    );
    assert_eq!(
        git(p.path(), &["rev-parse", "HEAD"]).trim(),
        now,
        "nothing moved"
    );
}

#[test]
fn a_story_run_killed_mid_attempt_goes_on_from_the_tree_it_left() {
    // The second iteration leaves its work and hangs until killed.
    let agent = format!(
        "{STORY_AGENT}if [ \"$RALPH_ITERATION\" = 2 ]; then echo $$ > agent.pid; exec sleep 60; fi\n"
    );
    let p = story_repo(&agent, &["One", "Two"]);
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\nagent.pid\n").unwrap();
    git(p.path(), &["commit", "-qam", "ignore the pid file"]);
    let mut child = p.spawn(&["run"]);
    let agent = agent_started(&p, 2);
    send_signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    kill_if_running(agent);

    let out = p.run(&["run", "--resume", "-n", "3"]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    assert_eq!(resumed[0]["previous_reason"], "killed");
    assert_eq!(iterations_started(&resumed), [3]);
    // The killed iteration was no attempt: this is the story's second.
    assert_eq!(of(&resumed, "ATTEMPT_ENDED")[0]["attempt"], 2);
    assert!(of(&resumed, "CIRCUIT_TRIPPED").is_empty());
    assert_eq!(
        std::fs::read_to_string(p.path().join("work.txt")).unwrap(),
        "try 1\ntry 2\ntry 3\n",
        "the attempt went on from the tree the killed run left"
    );
}

/// US-001 is done on its second iteration; US-002 is blocked at once.
const DONE_THEN_BLOCKED: &str = r#"story=$(sed -n 's/^STORY=//p')
case "$story" in
US-001) echo one >> one.txt; [ "$RALPH_ITERATION" -ge 2 ] && echo '<!-- ralph:state done -->';;
US-002) echo two > two.txt; echo '<!-- ralph:state blocked reason="stuck" -->';;
esac
exit 0
"#;

#[test]
fn a_pass_the_session_never_heard_of_is_kept_when_a_later_story_reverts() {
    let p = story_repo(DONE_THEN_BLOCKED, &["One", "Two"]);
    // Story mode without checks: the agent's `done` passes a story.
    let ralph_md = std::fs::read_to_string(p.path().join("RALPH.md")).unwrap();
    let start = ralph_md.find("done_when").unwrap();
    let end = ralph_md.find("failure:").unwrap();
    let ralph_md = format!("{}{}", &ralph_md[..start], &ralph_md[end..]);
    std::fs::write(p.path().join("RALPH.md"), ralph_md).unwrap();
    git(p.path(), &["commit", "-qam", "no checks"]);

    // The session as it stood before US-001 passed...
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    let session = run_dir(&p).join("session.json");
    let before_the_pass = std::fs::read_to_string(&session).unwrap();
    let out = p.run(&["run", "--resume", "-n", "2"]);
    assert_eq!(of(&p.events(), "STORY_PASSED").len(), 1, "{}", stderr(&out));
    let pass = git(p.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    // ...is what a ralph killed right after the pass commit leaves.
    let mut stale: Value = serde_json::from_str(&before_the_pass).unwrap();
    stale["ended"] = Value::Null;
    std::fs::write(&session, serde_json::to_string(&stale).unwrap()).unwrap();

    let out = p.run(&["run", "--resume", "-n", "4"]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    assert_eq!(of(&resumed, "STORY_BLOCKED")[0]["story_id"], "US-002");
    assert_eq!(of(&resumed, "REVERTED")[0]["checkpoint"], pass.as_str());
    // The block's own commit (its mark and progress.txt entry) on top of the checkpoint.
    assert_eq!(git(p.path(), &["rev-parse", "HEAD~1"]).trim(), pass);
    assert_eq!(
        git(p.path(), &["log", "-1", "--format=%s"]).trim(),
        "ralph: US-002 blocked"
    );
    assert!(
        git(p.path(), &["log", "--format=%s"]).contains("ralph: US-001 passes"),
        "the pass commit stays on the branch"
    );
    assert!(p.path().join("one.txt").exists());
    assert!(
        !p.path().join("two.txt").exists(),
        "US-002's work was reverted"
    );
}

/// The agent commits its work (`try N` in work.txt) and the check always fails the same way.
const COMMITTING_AGENT: &str = "cat >/dev/null\necho \"try $RALPH_ITERATION\" >> work.txt\ngit add work.txt && git commit -qm \"try $RALPH_ITERATION\"\n";

#[test]
fn a_commit_made_while_the_run_was_stopped_becomes_the_checkpoint_and_is_never_reverted() {
    let p = story_repo(COMMITTING_AGENT, &["One", "Two"]);
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    // The person's own commit while the run is stopped; the tree is clean.
    std::fs::write(p.path().join("mine.txt"), "my own work\n").unwrap();
    git(p.path(), &["add", "mine.txt"]);
    git(p.path(), &["commit", "-qm", "mine"]);
    let mine = git(p.path(), &["rev-parse", "HEAD"]).trim().to_owned();

    let out = p.run(&["run", "--resume", "-n", "3"]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    // US-001 trips on its third attempt and is reverted to the person's commit, no further.
    assert_eq!(of(&resumed, "CIRCUIT_TRIPPED").len(), 1, "{}", stderr(&out));
    assert_eq!(of(&resumed, "REVERTED")[0]["checkpoint"], mine.as_str());
    // The block's own commit (its mark and progress.txt entry) on top of the checkpoint.
    assert_eq!(git(p.path(), &["rev-parse", "HEAD~1"]).trim(), mine);
    assert_eq!(
        git(p.path(), &["log", "-1", "--format=%s"]).trim(),
        "ralph: US-001 blocked"
    );
    assert_eq!(
        std::fs::read_to_string(p.path().join("mine.txt")).unwrap(),
        "my own work\n"
    );
    let warned: Vec<&str> = of(&resumed, "WARNING")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .filter(|m| m.contains("HEAD moved"))
        .collect();
    assert_eq!(warned.len(), 1, "{:#?}", of(&resumed, "WARNING"));
    assert!(
        warned[0].contains(&mine[..12]),
        "names the new HEAD: {}",
        warned[0]
    );
    assert!(
        stderr(&out).contains("HEAD moved"),
        "said on the terminal: {}",
        stderr(&out)
    );
}

#[test]
fn a_pass_commit_the_person_reset_away_while_the_run_was_stopped_is_not_redone() {
    // US-001 is done on the first iteration; every later one is blocked at once.
    let agent = "cat >/dev/null\nif [ \"$RALPH_ITERATION\" = 1 ]; then echo one > one.txt; echo '<!-- ralph:state done -->'; \
                 else echo x > x.txt; echo '<!-- ralph:state blocked reason=\"stuck\" -->'; fi\n";
    let p = story_repo(agent, &["One", "Two"]);
    let ralph_md = std::fs::read_to_string(p.path().join("RALPH.md")).unwrap();
    let start = ralph_md.find("done_when").unwrap();
    let end = ralph_md.find("failure:").unwrap();
    let ralph_md = format!("{}{}", &ralph_md[..start], &ralph_md[end..]);
    std::fs::write(p.path().join("RALPH.md"), ralph_md).unwrap();
    git(p.path(), &["commit", "-qam", "no checks"]);
    let before = git(p.path(), &["rev-parse", "HEAD"]).trim().to_owned();

    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    assert_eq!(
        git(p.path(), &["log", "-1", "--format=%s"]).trim(),
        "ralph: US-001 passes"
    );
    // The person undoes ralph's pass.
    git(p.path(), &["reset", "-q", "--hard", "HEAD~1"]);

    let out = p.run(&["run", "--resume", "-n", "2"]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    assert_eq!(of(&resumed, "REVERTED")[0]["checkpoint"], before.as_str());
    // The block's own commit (its mark and progress.txt entry) on top of the checkpoint.
    assert_eq!(git(p.path(), &["rev-parse", "HEAD~1"]).trim(), before);
    assert_eq!(
        git(p.path(), &["log", "-1", "--format=%s"]).trim(),
        "ralph: US-001 blocked"
    );
    assert!(
        !git(p.path(), &["log", "--format=%s"]).contains("ralph: US-001 passes"),
        "the pass the person undid stays undone"
    );
    assert!(
        of(&resumed, "WARNING")
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("HEAD moved")),
        "{:#?}",
        of(&resumed, "WARNING")
    );
}

#[test]
fn editing_prd_json_and_progress_txt_while_a_story_run_is_stopped_does_not_block_its_resume() {
    let p = story_repo(STORY_AGENT, &["One", "Two"]);
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    // The person edits ralph's story files; the attempt's work.txt is still uncommitted.
    let prd = std::fs::read_to_string(p.path().join("prd.json")).unwrap();
    std::fs::write(
        p.path().join("prd.json"),
        prd.replace("\"title\": \"Two\"", "\"title\": \"Two, renamed\""),
    )
    .unwrap();
    std::fs::write(p.path().join("progress.txt"), "my own note\n").unwrap();

    let out = p.run(&["run", "--resume", "-n", "3"]);
    assert_ne!(code(&out), 2, "{}", stderr(&out));
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    // The attempt went on from the tree it left: its third try trips the breaker, and the
    // saved attempt holds all three tries.
    let saved = of(&resumed, "REVERTED")[0]["saved_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        git(p.path(), &["show", &format!("{saved}:work.txt")]),
        "try 1\ntry 2\ntry 3\n"
    );
    assert!(
        std::fs::read_to_string(p.path().join("progress.txt"))
            .unwrap()
            .starts_with("my own note\n")
    );
}

#[test]
fn a_story_marked_passed_by_hand_while_the_run_was_stopped_is_committed_as_its_pass() {
    let p = story_repo(STORY_AGENT, &["One", "Two"]);
    // Story mode without checks: a story passes when it is marked so in prd.json.
    let ralph_md = std::fs::read_to_string(p.path().join("RALPH.md")).unwrap();
    let start = ralph_md.find("done_when").unwrap();
    let end = ralph_md.find("failure:").unwrap();
    let ralph_md = format!("{}{}", &ralph_md[..start], &ralph_md[end..]);
    std::fs::write(p.path().join("RALPH.md"), ralph_md).unwrap();
    git(p.path(), &["commit", "-qam", "no checks"]);
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    // The person finds US-001 done and marks it so.
    let prd = std::fs::read_to_string(p.path().join("prd.json")).unwrap();
    let prd = prd.replacen("\"passes\": false", "\"passes\": true", 1);
    std::fs::write(p.path().join("prd.json"), prd).unwrap();

    let out = p.run(&["run", "--resume", "-n", "2"]);
    let resumed = p.events();
    assert_eq!(resumed[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    assert_eq!(of(&resumed, "STORY_PASSED")[0]["story_id"], "US-001");
    assert_eq!(
        git(p.path(), &["show", "HEAD:work.txt"]),
        "try 1\n",
        "US-001's pass commit holds its work"
    );
    assert_eq!(of(&resumed, "STORY_STARTED")[0]["story_id"], "US-002");
}
