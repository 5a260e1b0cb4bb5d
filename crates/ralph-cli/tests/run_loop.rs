//! `ralph run`: one iteration's steps, the loop's limits, the logs and the exit codes.

use crate::common;

use common::{Project, code, fake_agent, types};

fn agent(args: &str) -> String {
    format!("agent: '{} {args}'", fake_agent())
}

#[test]
fn runs_max_iterations_then_ends_normally() {
    let p = Project::new(&agent("--out hello"), "Say hello.\n");
    let out = p.run(&["run", "-n", "3"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.events_of("ITERATION_ENDED").len(), 3);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "max_iterations");
    assert_eq!(ended["iterations"], 3);
    assert_eq!(ended["exit_code"], 0);
    assert!(common::stdout(&out).contains("hello"));
}

#[test]
fn max_iterations_from_the_frontmatter_is_honoured() {
    let p = Project::new(&format!("{}\nmax_iterations: 2", agent("--out x")), "x\n");
    assert_eq!(code(&p.run(&["run"])), 0);
    assert_eq!(p.run_ended()["iterations"], 2);
}

#[test]
fn event_sequence_of_a_plain_iteration() {
    let p = Project::new(
        &format!(
            "{}\ncommands:\n  - name: greet\n    run: echo hi",
            agent("--out x")
        ),
        "{{ commands.greet }}\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    assert_eq!(
        types(&p.events()),
        [
            "RUN_STARTED",
            "ITERATION_STARTED",
            "COMMAND_FINISHED",
            "ITERATION_ENDED",
            "RUN_ENDED"
        ]
    );
}

#[test]
fn command_output_and_ralph_fields_fill_the_prompt() {
    let p = Project::new(
        &format!(
            "{}\ncommands:\n  - name: status\n    run: echo all green\nargs: [focus]",
            agent("--save-prompt prompt.txt")
        ),
        "Status: {{ commands.status }}\nFocus: {{ args.focus }}\nIteration {{ ralph.iteration }} of {{ ralph.max_iterations }}\n",
    );
    let out = p.run(&["run", "-n", "2", "--focus", "the parser"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let prompts = std::fs::read_to_string(p.path().join("prompt.txt")).unwrap();
    assert_eq!(
        prompts,
        "Status: all green\nFocus: the parser\nIteration 1 of 2\n=== end ===\n\
         Status: all green\nFocus: the parser\nIteration 2 of 2\n=== end ===\n"
    );
}

#[test]
fn a_user_argument_never_injects_shell_code() {
    let p = Project::new(
        &format!(
            "{}\nargs: [dir]\ncommands:\n  - name: list\n    run: echo {{{{ args.dir }}}}",
            agent("--save-prompt prompt.txt")
        ),
        "{{ commands.list }}\n",
    );
    let out = p.run(&["run", "-n", "1", "--dir", "x; touch pwned $(touch pwned2)"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(!p.path().join("pwned").exists());
    assert!(!p.path().join("pwned2").exists());
    let prompt = std::fs::read_to_string(p.path().join("prompt.txt")).unwrap();
    assert!(
        prompt.starts_with("x; touch pwned $(touch pwned2)\n"),
        "{prompt}"
    );
}

#[test]
fn a_user_argument_inside_quotes_stays_literal_too() {
    let p = Project::new(
        &format!(
            "{}\nargs: [dir]\ncommands:\n  - name: dq\n    run: echo \"in {{{{ args.dir }}}}\"\n  - name: sq\n    run: echo 'in {{{{ args.dir }}}}'",
            agent("--save-prompt prompt.txt")
        ),
        "{{ commands.dq }}|{{ commands.sq }}",
    );
    let value = "$(touch pwned) `touch pwned2` it's \"x\"";
    let out = p.run(&["run", "-n", "1", "--dir", value]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(!p.path().join("pwned").exists());
    assert!(!p.path().join("pwned2").exists());
    let prompt = std::fs::read_to_string(p.path().join("prompt.txt")).unwrap();
    assert_eq!(prompt, format!("in {value}|in {value}\n=== end ===\n"));
}

#[test]
fn dot_slash_commands_run_from_the_ralph_folder() {
    let p = Project::new("agent: x", "");
    let sub = p.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(
        sub.join("RALPH.md"),
        format!(
            "---\n{}\ncommands:\n  - name: where\n    run: ./where.sh\n  - name: cwd\n    run: pwd\n---\n{{{{ commands.where }}}} {{{{ commands.cwd }}}}\n",
            agent("--save-prompt prompt.txt")
        ),
    )
    .unwrap();
    std::fs::write(sub.join("where.sh"), "#!/bin/sh\necho from-sub\n").unwrap();
    std::process::Command::new("chmod")
        .args(["+x", "sub/where.sh"])
        .current_dir(p.path())
        .status()
        .unwrap();
    let out = p.run(&["run", "sub", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let prompt = std::fs::read_to_string(p.path().join("prompt.txt")).unwrap();
    let cwd = p.path().canonicalize().unwrap();
    assert_eq!(prompt, format!("from-sub {}\n=== end ===\n", cwd.display()));
}

#[test]
fn prompt_file_placeholder_passes_a_path() {
    let p = Project::new(
        "agent: sh -c 'cat \"$0\" > seen.txt' {prompt_file}",
        "The prompt.\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(p.path().join("seen.txt")).unwrap(),
        "The prompt."
    );
}

#[test]
fn prompt_placeholder_passes_the_text() {
    let p = Project::new(
        "agent: sh -c 'printf %s \"$0\" > seen.txt' {prompt}",
        "Inline prompt.\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    assert_eq!(
        std::fs::read_to_string(p.path().join("seen.txt")).unwrap(),
        "Inline prompt."
    );
}

#[test]
fn agent_failure_goes_on_by_default_and_a_failed_last_run_exits_1() {
    let p = Project::new(
        &format!("{}\nfailure: {{delay: 10ms}}", agent("--exit 3")),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 1);
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 2);
    assert_eq!(ended[0]["exit_code"], 3);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
}

#[test]
fn stop_on_error_ends_with_exit_1() {
    let p = Project::new(&agent("--exit 3"), "x\n");
    let out = p.run(&["run", "-n", "5", "--stop-on-error"]);
    assert_eq!(code(&out), 1);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "agent_failed");
    assert_eq!(ended["iterations"], 1);
}

#[test]
fn stop_on_error_ends_the_loop_even_when_the_failing_agent_reports_idle() {
    let p = Project::new(
        &format!("{}\nidle: {{delay: 50ms}}", agent("--marker idle --exit 3")),
        "x\n",
    );
    let out = p.run(&["run", "-n", "5", "--stop-on-error"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "agent_failed");
    assert_eq!(ended["iterations"], 1);
    assert!(p.events_of("WAIT_STARTED").is_empty());
}

#[test]
fn agent_timeout_kills_it_and_is_reported() {
    let p = Project::new(&agent("--out started --sleep 30"), "x\n");
    let started = std::time::Instant::now();
    let out = p.run(&["run", "-n", "1", "--timeout", "200ms"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(code(&out), 1, "a timeout is a failed run");
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["timed_out"], true);
    assert_eq!(ended["termination"], "timeout");
}

#[test]
fn command_timeout_kills_the_command() {
    let p = Project::new(
        &format!(
            "{}\ncommands:\n  - name: slow\n    run: sleep 30\n    timeout: 100ms",
            agent("--out x")
        ),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    let finished = &p.events_of("COMMAND_FINISHED")[0];
    assert_eq!(finished["timed_out"], true);
    assert_eq!(finished["name"], "slow");
}

#[test]
fn delay_waits_between_iterations() {
    let p = Project::new(&agent("--out x"), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "2", "--delay", "150ms"])), 0);
    let waits = p.events_of("WAIT_STARTED");
    assert_eq!(waits.len(), 1, "no wait after the last iteration");
    assert_eq!(waits[0]["reason"], "delay");
    assert_eq!(waits[0]["delay_ms"], 150);
}

#[test]
fn logs_go_to_dot_ralph_which_ignores_itself() {
    let p = Project::new(&agent("--out logged-line"), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    let ralph_dir = p.path().join(".ralph");
    assert_eq!(
        std::fs::read_to_string(ralph_dir.join(".gitignore")).unwrap(),
        "*\n"
    );
    let run_id = p.run_ended()["run_id"].as_str().unwrap().to_owned();
    let run_dir = ralph_dir.join("runs").join(&run_id);
    let log = std::fs::read_to_string(run_dir.join("iteration-001.log")).unwrap();
    assert!(log.contains("logged-line"), "{log}");
    let copy = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    assert_eq!(copy, std::fs::read_to_string(p.events_path()).unwrap());
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert!(
        ended["log_file"]
            .as_str()
            .unwrap()
            .ends_with("iteration-001.log")
    );
}

#[test]
fn log_dir_flag_moves_the_logs() {
    let p = Project::new(&agent("--out x"), "x\n");
    assert_eq!(
        code(&p.run(&["run", "-n", "1", "--log-dir", "elsewhere"])),
        0
    );
    let run_id = p.run_ended()["run_id"].as_str().unwrap().to_owned();
    assert!(
        p.path()
            .join("elsewhere")
            .join(run_id)
            .join("iteration-001.log")
            .exists()
    );
    // `.ralph/` holds only the folder's lock then, no run.
    assert!(!p.path().join(".ralph/runs").exists());
    assert!(p.path().join(".ralph/lock").exists());
}

#[test]
fn events_to_stdout_moves_human_output_to_stderr() {
    let p = Project::new(&agent("--out agent-says"), "x\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ralph"))
        .args(["run", "-n", "1", "--events", "-"])
        .current_dir(p.path())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    let stdout = common::stdout(&out);
    for line in stdout.lines() {
        let event: serde_json::Value =
            serde_json::from_str(line).expect("stdout holds only events");
        assert!(event["type"].is_string());
    }
    assert!(common::stderr(&out).contains("agent-says"));
}

#[test]
fn unknown_user_argument_is_a_usage_error() {
    let p = Project::new(&format!("{}\nargs: [dir]", agent("--out x")), "x\n");
    let out = p.run(&["run", "--nope", "1"]);
    assert_eq!(code(&out), 2);
    assert!(common::stderr(&out).contains("unknown argument --nope (declared args: --dir)"));
    assert!(p.events().is_empty(), "nothing ran");
}

#[test]
fn a_user_argument_without_a_value_is_a_usage_error() {
    let p = Project::new(&format!("{}\nargs: [dir]", agent("--out x")), "x\n");
    for args in [
        &["run", "-n", "1", "--dir"][..],
        &["run", "--dir", "--quiet"],
    ] {
        let out = p.run(args);
        assert_eq!(code(&out), 2, "{args:?}");
        assert!(
            common::stderr(&out).contains("--dir needs a value"),
            "{args:?}: {}",
            common::stderr(&out)
        );
        assert!(p.events().is_empty(), "nothing ran");
    }
}

#[test]
fn missing_agent_program_is_a_clear_error() {
    let p = Project::new("agent: ralph-no-such-agent-xyz -p", "x\n");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 1);
    assert!(
        common::stderr(&out).contains(
            "cannot start the agent `ralph-no-such-agent-xyz`: not found on PATH (is it installed?)"
        ),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(p.run_ended()["reason"], "agent_failed");
    let summary = common::stdout(&out);
    assert!(
        !summary.contains("--stop-on-error"),
        "the summary blames a flag that was not given: {summary}"
    );
}

#[test]
fn processes_get_the_iteration_run_id_and_absolute_ralph_file() {
    let p = Project::new(
        "agent: sh -c 'echo \"$RALPH_ITERATION|$RALPH_RUN_ID|$RALPH_FILE\" >> env.txt'",
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    let run_id = p.run_ended()["run_id"].as_str().unwrap().to_owned();
    let file = p.path().canonicalize().unwrap().join("RALPH.md");
    assert_eq!(
        std::fs::read_to_string(p.path().join("env.txt")).unwrap(),
        format!("1|{run_id}|{f}\n2|{run_id}|{f}\n", f = file.display())
    );
}

#[test]
fn quiet_shows_only_the_summary() {
    let p = Project::new(&agent("--out agent-chatter"), "x\n");
    let out = p.run(&["run", "-n", "2", "--quiet"]);
    assert_eq!(code(&out), 0);
    let shown = common::stdout(&out);
    assert!(!shown.contains("agent-chatter"), "{shown}");
    assert!(!shown.contains("iteration 1"), "{shown}");
    assert_eq!(shown.lines().count(), 1, "{shown}");
    assert!(shown.contains("reached max_iterations"), "{shown}");
}
