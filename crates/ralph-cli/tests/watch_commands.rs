//! Watching a loop: `ralph runs`, `ralph logs [-f]`, and the prompt kept beside each
//! iteration's log.

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Project, code, fake_agent, git_repo, wait_for_pid};
use serde_json::Value;

fn agent(args: &str) -> String {
    format!("agent: '{} {args}'", fake_agent())
}

/// The run folders under `.ralph/runs`, oldest first.
fn run_dirs(p: &Project) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(p.path().join(".ralph/runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

fn runs_json(p: &Project) -> Vec<Value> {
    let out = p.run(&["runs", "--json"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    serde_json::from_slice(&out.stdout).expect("runs --json prints JSON")
}

/// Ends the agent's process group, in case a SIGKILLed ralph left it running.
fn kill_agent_group(pid: u32) {
    // SAFETY: kill(2) only sends a signal, here to the agent's own process group.
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
}

#[test]
fn each_iteration_keeps_the_exact_prompt_its_agent_received() {
    let p = Project::new(
        &format!(
            "{}\ncommands:\n  - name: greet\n    run: echo from-the-command",
            agent("--save-prompt got.txt --out done")
        ),
        "Iteration {{ ralph.iteration }}: {{ commands.greet }}\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    let got = std::fs::read_to_string(p.path().join("got.txt")).unwrap();
    let run = &run_dirs(&p)[0];
    let kept: Vec<String> = (1..=2)
        .map(|n| std::fs::read_to_string(run.join(format!("iteration-{n:03}.prompt.md"))).unwrap())
        .collect();
    assert_eq!(kept[1], "Iteration 2: from-the-command");
    assert_eq!(
        got,
        format!("{}\n=== end ===\n{}\n=== end ===\n", kept[0], kept[1])
    );
}

#[test]
fn a_prompt_like_the_last_is_kept_as_a_link_to_its_copy_and_the_folder_has_no_spare_file() {
    use std::os::unix::fs::MetadataExt as _;
    // Iterations 1 and 2 get the same prompt, 3 another (the command's output changes).
    let p = Project::new(
        &format!(
            "{}\ncommands:\n  - name: n\n    run: sh -c 'test -e two && echo later || echo first; \
             test -e one && touch two; touch one'",
            agent("--out done")
        ),
        "Said: {{ commands.n }}\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "4"])), 0);
    let run = &run_dirs(&p)[0];
    let copy = |n: u32| run.join(format!("iteration-{n:03}.prompt.md"));
    let text = |n: u32| std::fs::read_to_string(copy(n)).unwrap();
    let inode = |n: u32| std::fs::metadata(copy(n)).unwrap().ino();
    assert_eq!(text(1), "Said: first");
    assert_eq!(text(2), "Said: first");
    assert_eq!(text(3), "Said: later");
    assert_eq!(text(4), "Said: later");
    assert_eq!(inode(1), inode(2), "the same prompt is one file");
    assert_ne!(inode(2), inode(3));
    assert_eq!(inode(3), inode(4));

    // Nothing but the run's own files: no temporary file, no session spare.
    let mut names: Vec<String> = std::fs::read_dir(run)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    names.sort();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn runs_lists_runs_newest_first_with_their_ending() {
    let p = Project::new(&agent("--out hello"), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    let runs = runs_json(&p);
    let dirs = run_dirs(&p);
    assert_eq!(runs.len(), 2);
    let ids: Vec<&str> = runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    let newest = dirs[1].file_name().unwrap().to_str().unwrap();
    assert_eq!(ids[0], newest);
    assert_eq!(runs[0]["iterations"], 1);
    assert_eq!(runs[1]["iterations"], 2);
    for run in &runs {
        assert_eq!(run["status"], "ended");
        assert_eq!(run["reason"], "max_iterations");
    }
    let table = common::stdout(&p.run(&["runs"]));
    assert!(table.starts_with("RUN "), "{table}");
    assert!(table.contains(newest), "{table}");
}

#[test]
fn runs_says_running_with_the_pid_then_killed_once_the_process_is_gone() {
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; echo $$ > agent.pid; sleep 30'",
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "1"]);
    let agent = wait_for_pid(&p.path().join("agent.pid"));
    let running = runs_json(&p);
    assert_eq!(running[0]["status"], "running", "{running:#?}");
    assert_eq!(running[0]["pid"], child.id());
    // SIGKILL: ralph cannot write RUN_ENDED.
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = runs_json(&p);
    assert_eq!(killed[0]["status"], "killed", "{killed:#?}");
    kill_agent_group(agent);
}

#[test]
fn logs_prints_the_last_runs_iterations_or_one_of_them() {
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; echo line-of-$RALPH_ITERATION'",
        "the prompt\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    let all = common::stdout(&p.run(&["logs"]));
    assert!(
        all.contains("line-of-1") && all.contains("line-of-2"),
        "{all}"
    );
    assert!(all.contains("the prompt"), "{all}");
    let one = common::stdout(&p.run(&["logs", "--iteration", "2"]));
    assert!(
        one.contains("line-of-2") && !one.contains("line-of-1"),
        "{one}"
    );
    let missing = p.run(&["logs", "--iteration", "9"]);
    assert_eq!(code(&missing), 2);
    assert!(common::stderr(&missing).contains("no log of iteration 9"));
}

#[test]
fn logs_with_no_runs_says_so() {
    let p = Project::new(&agent("--out x"), "x\n");
    let out = p.run(&["logs"]);
    assert_ne!(code(&out), 0);
    assert!(
        common::stderr(&out).contains("no runs yet"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn logs_follow_prints_a_live_run_across_iterations_until_it_ends() {
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; echo start-$RALPH_ITERATION; sleep 0.3; echo end-$RALPH_ITERATION'",
        "x\n",
    );
    let mut run = p.spawn(&["run", "-n", "3"]);
    p.wait_for("ITERATION_STARTED", 1);
    let started = Instant::now();
    let follow = p
        .ralph(&["logs", "-f"])
        .stdin(Stdio::null())
        .output()
        .expect("ralph logs -f runs");
    assert!(run.wait().unwrap().success());
    assert_eq!(code(&follow), 0, "{}", common::stderr(&follow));
    // It returned because the run ended, not before.
    assert_eq!(p.events_of("RUN_ENDED").len(), 1);
    assert!(started.elapsed() < Duration::from_secs(20));
    let text = common::stdout(&follow);
    let mut at = 0;
    for line in ["start-1", "end-1", "start-2", "end-2", "start-3", "end-3"] {
        let found = text[at..]
            .find(line)
            .unwrap_or_else(|| panic!("{line} missing or out of order in:\n{text}"));
        at += found;
    }
}

#[test]
fn logs_follow_stops_when_the_runs_process_is_gone() {
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; echo $$ > agent.pid; echo before-kill; sleep 30'",
        "x\n",
    );
    let mut run = p.spawn(&["run", "-n", "1"]);
    let agent = wait_for_pid(&p.path().join("agent.pid"));
    let follow = p
        .ralph(&["logs", "-f"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    run.kill().unwrap();
    run.wait().unwrap();
    let out = follow.wait_with_output().unwrap();
    assert_eq!(code(&out), 0);
    assert!(common::stdout(&out).contains("before-kill"));
    kill_agent_group(agent);
}

#[test]
fn a_resumed_run_is_running_again_for_runs_logs_and_the_report() {
    // Each iteration holds on while `hold` exists.
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; echo it-$RALPH_ITERATION; while [ -e hold ]; do sleep 0.05; done; echo done-$RALPH_ITERATION'",
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    std::fs::write(p.path().join("hold"), "").unwrap();
    std::fs::remove_file(p.events_path()).unwrap();
    let mut run = p.spawn(&["run", "--resume", "-n", "2"]);
    p.wait_for("ITERATION_STARTED", 1);

    let runs = runs_json(&p);
    assert_eq!(runs[0]["status"], "running", "{runs:#?}");
    assert_eq!(runs[0]["pid"], run.id());
    let report = p.run(&["report", "-o", "report.html"]);
    assert_eq!(code(&report), 0, "{}", common::stderr(&report));
    let html = std::fs::read_to_string(p.path().join("report.html")).unwrap();
    assert!(html.contains("<b>running</b>"), "{html}");
    assert!(!html.contains("ended: "), "{html}");

    let mut follow = p
        .ralph(&["logs", "-f"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap());
    read_until(&mut lines, "it-2");
    // Following a run that goes on: it must not take the earlier ending for this one's.
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        assert!(
            follow.try_wait().unwrap().is_none(),
            "logs -f ended while the resumed run goes on"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_file(p.path().join("hold")).unwrap();
    read_until(&mut lines, "done-2");
    assert!(run.wait().unwrap().success());
    assert!(exits_by_itself(&mut follow, "logs -f went on after the run ended").success());
    assert_eq!(runs_json(&p)[0]["reason"], "max_iterations");
}

#[test]
fn story_mode_names_the_story_and_attempt_before_each_iteration() {
    // US-001 passes on its second attempt, US-002 on its first.
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - test -f \"$(cat current).ok\"\nconvergence: {backoff: 10ms, max_backoff: 10ms}\nescalation:\n  prd: prd.json",
        "STORY={{ story.id }}\n",
    );
    let dir = p.path();
    std::fs::write(
        dir.join("agent.sh"),
        r#"story=$(sed -n 's/^STORY=//p')
echo "$story" > current
echo x >> "$story.tries"
if [ "$story" = US-002 ] || [ "$(wc -l < "$story.tries")" -ge 2 ]; then touch "$story.ok"; fi
"#,
    )
    .unwrap();
    let stories: Vec<Value> = ["US-001", "US-002"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            serde_json::json!({"id": id, "title": format!("Title {id}"), "description": "d",
                "acceptanceCriteria": [], "priority": i + 1, "passes": false, "notes": ""})
        })
        .collect();
    std::fs::write(
        dir.join("prd.json"),
        serde_json::to_string_pretty(&serde_json::json!({"project": "p", "userStories": stories}))
            .unwrap(),
    )
    .unwrap();
    git_repo(dir);
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let seen: Vec<(String, String, u64)> = p
        .events()
        .iter()
        .filter(|e| e["type"] == "STORY_STARTED" || e["type"] == "ITERATION_STARTED")
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["story_id"].as_str().unwrap_or("-").to_owned(),
                e["attempt"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let want = [
        ("STORY_STARTED", "US-001", 1),
        ("ITERATION_STARTED", "US-001", 1),
        ("STORY_STARTED", "US-001", 2),
        ("ITERATION_STARTED", "US-001", 2),
        ("STORY_STARTED", "US-002", 1),
        ("ITERATION_STARTED", "US-002", 1),
    ]
    .map(|(t, s, a)| (t.to_owned(), s.to_owned(), a));
    assert_eq!(seen, want);
    let started = &p.events_of("STORY_STARTED")[0];
    assert_eq!(started["title"], "Title US-001");
    // The banner names them too.
    assert!(common::stdout(&out).contains("iteration 2 · US-001 attempt 2"));
}

/// Reads `child`'s stdout line by line until one contains `needle`; returns that line.
fn read_until(lines: &mut impl std::io::BufRead, needle: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = lines.read_line(&mut line).unwrap();
        assert!(n > 0, "the output ended before {needle:?}");
        if line.contains(needle) {
            return line;
        }
    }
}

/// Waits up to 10 s for `child` to exit by itself; kills it and fails past that.
fn exits_by_itself(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn logs_follow_ends_when_its_reader_is_gone_while_the_run_goes_on() {
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; echo $$ > agent.pid; echo first-line; sleep 30'",
        "x\n",
    );
    let mut run = p.spawn(&["run", "-n", "1"]);
    let agent = wait_for_pid(&p.path().join("agent.pid"));
    let mut follow = p
        .ralph(&["logs", "-f"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap());
    read_until(&mut lines, "first-line");
    // `ralph logs -f | grep -m1 ...`: the reader has what it wanted and goes; the agent is
    // silent for 30 s more.
    drop(lines);
    let status = exits_by_itself(&mut follow, "still following after its reader went away");
    assert!(status.success(), "{status:?}");
    assert!(p.events_of("RUN_ENDED").is_empty(), "the run went on");
    run.kill().unwrap();
    run.wait().unwrap();
    kill_agent_group(agent);
}

#[test]
fn a_run_in_another_log_dir_is_followed_by_the_command_its_header_and_status_name() {
    // The agent says which run it is in, and holds on while `hold` exists.
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; cat word; while [ -e hold ]; do sleep 0.05; done'",
        "x\n",
    );
    // An older run in .ralph/runs/: the one a plain `ralph logs` shows.
    std::fs::write(p.path().join("word"), "in-the-default-folder\n").unwrap();
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);

    std::fs::write(p.path().join("word"), "in-the-log-dir\n").unwrap();
    std::fs::write(p.path().join("hold"), "").unwrap();
    let mut run = p.spawn(&["run", "-n", "1", "--log-dir", "logs"]);
    let mut run_out = std::io::BufReader::new(run.stdout.take().unwrap());
    let header = read_until(&mut run_out, "follow from another terminal: ");
    let from_header = header
        .trim_end()
        .rsplit_once("follow from another terminal: ")
        .unwrap()
        .1
        .to_owned();
    assert_eq!(from_header, "ralph logs -f --log-dir logs");

    // `ralph status` names the same command; from another folder, with `-C`.
    p.wait_for("ITERATION_STARTED", 1);
    let status = p.run(&["status"]);
    let text = common::stdout(&status);
    assert!(
        text.lines().any(|l| l == format!("follow: {from_header}")),
        "{text}{}",
        common::stderr(&status)
    );
    let parent = p.path().parent().unwrap();
    let name = p.path().file_name().unwrap().to_str().unwrap();
    let ralph = |dir: &std::path::Path, args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ralph"));
        cmd.current_dir(dir).args(args).stdin(Stdio::null());
        cmd
    };
    let elsewhere = ralph(parent, &["status", "-C", name]).output().unwrap();
    let elsewhere = common::stdout(&elsewhere);
    let from_status = elsewhere
        .lines()
        .find_map(|l| l.strip_prefix("follow: "))
        .unwrap_or_else(|| panic!("{elsewhere}"))
        .to_owned();
    assert_eq!(
        from_status,
        format!("ralph logs -f -C {name} --log-dir logs")
    );

    // Both commands, as given, follow this run to its end.
    let spawn = |dir: &std::path::Path, command: &str| {
        let args: Vec<&str> = command.split(' ').skip(1).collect();
        ralph(dir, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let followers = [spawn(p.path(), &from_header), spawn(parent, &from_status)];
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_file(p.path().join("hold")).unwrap();
    std::io::Read::read_to_end(&mut run_out, &mut Vec::new()).unwrap();
    assert!(run.wait().unwrap().success());
    for follower in followers {
        let out = follower.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", common::stderr(&out));
        let text = common::stdout(&out);
        assert!(text.contains("in-the-log-dir"), "{text}");
        assert!(!text.contains("in-the-default-folder"), "{text}");
    }

    // `runs` and `report` read the same folder with the same option.
    let run_id = p.events()[0]["run_id"].as_str().unwrap().to_owned();
    let out = p.run(&["runs", "--json", "--log-dir", "logs"]);
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["run_id"], run_id.as_str());
    let out = p.run(&["report", "--log-dir", "logs", "-o", "r.html"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let html = std::fs::read_to_string(p.path().join("r.html")).unwrap();
    assert!(html.contains(&run_id) && html.contains("in-the-log-dir"));
}
