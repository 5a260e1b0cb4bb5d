//! Warnings reach every sink as `WARNING` events (events.jsonl included), not only the
//! terminal: an agent's output that is not the JSON its adapter reads, a line past the
//! adapter's cap, escalation's word on a resumed or ended run, a sink that cannot be written.

use crate::common;

use common::{Project, code, git, stderr, story_repo};

#[test]
fn output_that_is_not_the_adapters_json_is_a_warning_event() {
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"done"}"#;
    let p = Project::new(
        "agent: sh agent.sh\noutput: claude-stream-json\nmax_iterations: 1",
        "x\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        format!("cat >/dev/null\necho plain one\necho plain two\nprintf '%s\\n' '{result}'\n"),
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let messages: Vec<String> = p
        .events_of("WARNING")
        .iter()
        .filter_map(|w| w["message"].as_str().map(str::to_owned))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("iteration 1: the agent printed a line that is not")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("iteration 1: 2 lines of the agent's output were not")),
        "{messages:?}"
    );
    let not_json = "iteration 1: the agent printed a line that is not";
    assert_eq!(kind_of(&p, not_json), "agent");
    // The terminal still says it on stderr, as before.
    assert!(
        common::stderr(&out).contains("warning: iteration 1: the agent printed a line that is not"),
        "{}",
        common::stderr(&out)
    );
}

/// The kind of the first warning of `p`'s run whose words start with `start`: what a program
/// branches on.
fn kind_of(p: &Project, start: &str) -> String {
    let warnings = p.events_of("WARNING");
    let warning = (warnings.iter())
        .find(|w| w["message"].as_str().is_some_and(|m| m.starts_with(start)))
        .unwrap_or_else(|| panic!("no warning starts with {start:?}: {warnings:?}"));
    warning["kind"].as_str().unwrap_or_default().to_owned()
}

/// The warnings of `p`'s run, in order.
fn warnings(p: &Project) -> Vec<String> {
    p.events_of("WARNING")
        .iter()
        .filter_map(|w| w["message"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_line_past_the_adapters_cap_is_a_warning_event_naming_the_iteration() {
    // 17 MiB without a newline: past the 16 MiB a JSON adapter holds to parse.
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"done"}"#;
    let p = Project::new(
        "agent: sh agent.sh\noutput: claude-stream-json\nmax_iterations: 1",
        "x\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        format!(
            "cat >/dev/null\nhead -c 17825792 /dev/zero | tr '\\0' x\necho\nprintf '%s\\n' '{result}'\n"
        ),
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let messages = warnings(&p);
    assert!(
        messages.iter().any(|m| m
            == "iteration 1: the agent printed a line longer than 16 MiB; shown as text, not parsed"),
        "{messages:?}"
    );
    // The run read on after the line: its final answer ended it cleanly.
    assert_eq!(p.events_of("ITERATION_ENDED")[0]["failed"], false);
}

// Escalation: what it has to say outside an iteration reaches the events too.

/// The session file of the folder's last run, as `.ralph/current` names it.
fn session_path(p: &Project) -> std::path::PathBuf {
    let current = std::fs::read_to_string(p.path().join(".ralph/current")).expect(".ralph/current");
    std::path::PathBuf::from(current.trim_end()).join("session.json")
}

/// Rewrites the last run's session file with `change`.
fn edit_session(p: &Project, change: impl FnOnce(&mut serde_json::Value)) {
    let path = session_path(p);
    let mut session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    change(&mut session);
    std::fs::write(&path, serde_json::to_string(&session).unwrap()).unwrap();
}

#[test]
fn escalation_failing_at_the_iteration_limit_says_why_in_a_warning_event() {
    // The agent breaks prd.json; only the iteration limit's look at it finds out.
    let p = story_repo("cat >/dev/null\necho '{' > prd.json\n", &["One"]);
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(
        p.run_ended()["reason"],
        "escalation_failed",
        "{}",
        stderr(&out)
    );
    let events = p.events();
    let warning = events
        .iter()
        .position(|e| {
            e["type"] == "WARNING"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("escalation failed: ") && m.contains("prd.json"))
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(events[warning + 1]["type"], "RUN_ENDED");
    assert_eq!(events[warning]["kind"], "task_source");
}

#[test]
fn a_resumed_run_that_takes_a_killed_runs_tree_on_trust_says_so_in_a_warning_event() {
    let p = story_repo(
        "cat >/dev/null\necho \"try $RALPH_ITERATION\" >> work.txt\n",
        &["One"],
    );
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    // What `kill -9` leaves: a session whose run never said how it ended.
    edit_session(&p, |s| s["ended"] = serde_json::Value::Null);
    let out = p.run(&["run", "--resume", "-n", "2"]);
    let events = p.events();
    assert_eq!(events[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    assert_eq!(events[0]["previous_reason"], "killed");
    let messages = warnings(&p);
    assert!(
        messages.iter().any(|m| m.starts_with(
            "the run was killed without a word; its tree's uncommitted changes are taken"
        )),
        "{messages:?}"
    );
    // Said before the first iteration it concerns.
    let types = common::types(&events);
    let warned = types.iter().position(|t| t == "WARNING").unwrap();
    let started = types.iter().position(|t| t == "ITERATION_STARTED").unwrap();
    assert!(warned < started, "{types:?}");
}

#[test]
fn an_unreadable_escalation_state_in_the_session_is_a_warning_event() {
    let p = story_repo("cat >/dev/null\n", &["One"]);
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 1);
    edit_session(&p, |s| {
        s["task"] = serde_json::json!({"breaker": "garbled"})
    });
    let out = p.run(&["run", "--resume", "-n", "2"]);
    assert_eq!(p.events()[0]["type"], "RUN_RESUMED", "{}", stderr(&out));
    let messages = warnings(&p);
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("the session's task source state is unreadable")),
        "{messages:?}"
    );
    let unreadable = "the session's task source state is unreadable";
    assert_eq!(kind_of(&p, unreadable), "unreadable_state");
}

#[test]
fn allow_dirty_names_the_ref_it_saved_the_changes_under_in_a_warning_event() {
    let p = story_repo("cat >/dev/null\n", &["One"]);
    std::fs::write(p.path().join("mine.txt"), "my own edit\n").unwrap();
    let out = p.run(&["run", "--allow-dirty", "-n", "1"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let messages = warnings(&p);
    let saved = messages
        .iter()
        .find_map(|m| {
            m.strip_prefix("uncommitted changes saved under ")?
                .strip_suffix(" (--allow-dirty)")
        })
        .unwrap_or_else(|| panic!("{messages:?}"));
    assert!(
        saved.starts_with("refs/ralph/attempts/preexisting"),
        "{saved}"
    );
    // The ref it names holds the change.
    assert_eq!(
        git(p.path(), &["show", &format!("{saved}:mine.txt")]),
        "my own edit\n"
    );
}

// Sinks.

/// `/dev/full` takes the file open and refuses every write (ENOSPC).
#[cfg(target_os = "linux")]
#[test]
fn an_events_file_that_cannot_be_written_is_a_warning_event_for_the_other_sinks() {
    let p = Project::new(
        &format!("agent: {}\nmax_iterations: 1", common::fake_agent()),
        "x\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(p.path())
        .args(["run", "--events", "/dev/full"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ralph runs");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The run folder's own copy hears of it, once, right after the event that failed.
    let current = std::fs::read_to_string(p.path().join(".ralph/current")).unwrap();
    let copy = std::path::Path::new(current.trim_end()).join("events.jsonl");
    let events: Vec<serde_json::Value> = std::fs::read_to_string(copy)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failures: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| {
            e["type"] == "WARNING"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("cannot write events to /dev/full: "))
        })
        .collect();
    assert_eq!(failures.len(), 1, "{events:?}");
    assert_eq!(failures[0]["kind"], "sink_failed");
    assert_eq!(events[0]["type"], "RUN_STARTED");
    assert_eq!(events[1]["type"], "WARNING", "{events:?}");
    // And the terminal says it.
    assert!(
        stderr(&out).contains("warning: cannot write events to /dev/full: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_ralph_md_warnings_are_warning_events_after_run_started() {
    let agent = common::fake_agent();
    let p = Project::new(
        &format!("agent: '{agent} --out x'\nmax_iterations: 1"),
        "work\n<!-- never closed\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = p.events();
    let at = events
        .iter()
        .position(|e| {
            e["type"] == "WARNING"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("RALPH.md:") && m.contains("never closed"))
        })
        .unwrap_or_else(|| panic!("no WARNING for the unclosed comment: {events:?}"));
    assert_eq!(events[at]["kind"], "config");
    assert_eq!(events[0]["type"], "RUN_STARTED");
    assert!(
        at < events
            .iter()
            .position(|e| e["type"] == "ITERATION_STARTED")
            .unwrap()
    );
    // The terminal says it once, as every warning.
    assert_eq!(
        stderr(&out).matches("never closed").count(),
        1,
        "{}",
        stderr(&out)
    );
}
