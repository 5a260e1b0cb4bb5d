use std::path::Path;

use super::escalation::lexical;
use std::time::Duration;

use crate::{StateSpec, StateThen};

fn states(block: &str) -> Result<Vec<(String, StateSpec)>, Vec<String>> {
    let text = format!("---\nagent: x\nstates:\n{block}---\n");
    crate::parse("RALPH.md", &text)
        .map(|p| p.file.config.states.into_iter().collect())
        .map_err(|e| e.errors.iter().map(ToString::to_string).collect())
}

#[test]
fn a_state_attribute_where_it_cannot_be_quoted_is_refused_at_its_place() {
    let errors = states("  review:\n    run: echo `cat {{ state.pr }}`\n").unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("RALPH.md:5:20: states.review.run: {{ state.pr }} inside"),
        "{errors:?}"
    );
    assert!(states("  review:\n    run: echo \"PR {{ state.pr }}\"\n").is_ok());
}

#[test]
fn declared_states_read_their_then() {
    let parsed = states(
        "  review:\n    run: echo {{ state.pr }}\n    then: wait\n    wait: 30m\n  \
             shipped:\n    then: stop\n    exit_code: 3\n  noted:\n",
    )
    .unwrap();
    assert_eq!(
        parsed,
        [
            (
                "noted".to_owned(),
                StateSpec {
                    run: None,
                    timeout: None,
                    then: StateThen::Continue
                }
            ),
            (
                "review".to_owned(),
                StateSpec {
                    run: Some("echo {{ state.pr }}".to_owned()),
                    timeout: None,
                    then: StateThen::Wait(Duration::from_secs(1800))
                }
            ),
            (
                "shipped".to_owned(),
                StateSpec {
                    run: None,
                    timeout: None,
                    then: StateThen::Stop { exit_code: 3 }
                }
            ),
        ]
    );
}

#[test]
fn a_misspelt_then_gets_a_suggestion() {
    assert_eq!(
        states("  review:\n    then: wiat\n").unwrap_err(),
        [
            r#"RALPH.md:5:11: states.review.then: expected "stop" or "continue" or "wait" or "hold", got "wiat"; did you mean "wait"?"#
        ]
    );
}

#[test]
fn built_in_states_cannot_be_redefined() {
    assert_eq!(
        states("  done:\n    then: continue\n  idle:\n").unwrap_err(),
        [
            "RALPH.md:4:3: states.done: `done` is built in and cannot be redefined (built-in states: idle, done, blocked)",
            "RALPH.md:6:3: states.idle: `idle` is built in and cannot be redefined (built-in states: idle, done, blocked)",
        ]
    );
}

#[test]
fn a_state_cannot_take_the_name_ralph_runs_gives_a_killed_or_running_run() {
    assert_eq!(
        states("  killed:\n    then: stop\n  running:\n").unwrap_err(),
        [
            "RALPH.md:4:3: states.killed: `killed` is what `ralph runs` and `ralph status` say \
                 of a run that ended without a word, and a stop in this state would read so; \
                 pick another name (reserved: killed, running)",
            "RALPH.md:6:3: states.running: `running` is what `ralph runs` and `ralph status` \
                 say of a run that still runs, and a stop in this state would read so; pick \
                 another name (reserved: killed, running)",
        ]
    );
}

#[test]
fn a_state_cannot_take_the_name_of_a_built_in_ending() {
    let errors =
        states("  max_cost:\n    then: stop\n    exit_code: 7\n  agent_done:\n").unwrap_err();
    let reserved = crate::schema::BUILT_IN_END_REASONS.join(", ");
    assert_eq!(
        errors,
        [
            format!(
                "RALPH.md:4:3: states.max_cost: `max_cost` is a reason ralph gives for ending \
                     a run (RUN_ENDED), and a stop in this state would read as that ending; pick \
                     another name (reserved: {reserved})"
            ),
            format!(
                "RALPH.md:7:3: states.agent_done: `agent_done` is a reason ralph gives for \
                     ending a run (RUN_ENDED), and a stop in this state would read as that \
                     ending; pick another name (reserved: {reserved})"
            ),
        ]
    );
}

#[test]
fn wait_without_then_wait_is_an_error() {
    assert_eq!(
        states("  review:\n    wait: 5m\n").unwrap_err(),
        [
            r#"RALPH.md:5:5: states.review.wait: `wait` applies only with `then: wait` (`then` is "continue")"#
        ]
    );
    assert_eq!(
        states("  review:\n    then: wait\n").unwrap_err(),
        [
            "RALPH.md:5:11: states.review.then: `then: wait` needs `wait`: how long to wait, such as `wait: 30m`"
        ]
    );
}

#[test]
fn exit_code_is_a_byte_and_only_with_then_stop() {
    assert_eq!(
        states("  review:\n    then: stop\n    exit_code: 256\n").unwrap_err(),
        ["RALPH.md:6:16: states.review.exit_code: expected an integer from 0 to 255, got 256"]
    );
    assert_eq!(
        states("  review:\n    then: wait\n    wait: 1s\n    exit_code: 2\n").unwrap_err(),
        [
            r#"RALPH.md:7:5: states.review.exit_code: `exit_code` applies only with `then: stop` (`then` is "wait")"#
        ]
    );
}

#[test]
fn state_names_are_lowercase_marker_names() {
    assert_eq!(
        states("  Review:\n").unwrap_err(),
        [
            r#"RALPH.md:4:3: states.Review: expected a state name: a lowercase letter, then lowercase letters, digits, `-` and `_` (markers are read lowercase), got "Review""#
        ]
    );
}

#[test]
fn max_turns_warns_unless_the_agent_is_claude_print() {
    let warnings = |agent: &str| {
        let text = format!("---\nagent: {agent}\nmax_turns: 5\nmax_turns_grace: 2\n---\n");
        let parsed = crate::parse("RALPH.md", &text).unwrap();
        assert_eq!(parsed.file.config.max_turns, Some(5));
        parsed
            .warnings
            .iter()
            .map(|w| w.path.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(warnings("claude -p"), ["max_turns_grace"]);
    assert_eq!(warnings("codex exec"), ["max_turns", "max_turns_grace"]);
}

#[test]
fn completion_signal_keys_default_to_stopping() {
    let text = "---\nagent: x\ncompletion_signal: COMPLETE\n---\n";
    let config = crate::parse("RALPH.md", text).unwrap().file.config;
    assert_eq!(config.completion_signal.as_deref(), Some("COMPLETE"));
    assert!(config.stop_on_completion_signal);
}

fn errors_of(file: &str, escalation: &str) -> Vec<String> {
    let text = format!("---\nagent: x\nescalation:\n{escalation}\n---\nbody\n");
    match crate::parse(file, &text) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn paths_are_compared_after_dot_and_dot_dot_steps() {
    for (path, normal) in [
        ("a", "a"),
        ("./a", "a"),
        ("x/../a", "a"),
        ("x/./y/../../a/", "a"),
        ("../a", "../a"),
        ("/../a", "/a"),
        ("x/..", ""),
    ] {
        assert_eq!(lexical(Path::new(path)), Path::new(normal), "{path}");
    }
}

#[test]
fn a_progress_file_that_is_the_prd_is_a_located_error() {
    for progress in ["prd.json", "./prd.json", "docs/../prd.json"] {
        let errors = errors_of(
            "RALPH.md",
            &format!("  prd: ./prd.json\n  progress: {progress}"),
        );
        assert_eq!(
            errors,
            [format!(
                "RALPH.md:5:13: escalation.progress: \"{progress}\" is also escalation.prd; \
                     progress entries would overwrite the stories; choose another file, such as \
                     \"progress.txt\""
            )]
        );
    }
    // The default progress.txt as the prd: the error points at `prd`.
    let errors = errors_of("RALPH.md", "  prd: progress.txt");
    assert!(
        errors[0].starts_with("RALPH.md:4:8: escalation.prd: \"progress.txt\" is also"),
        "{errors:?}"
    );
}

#[test]
fn a_progress_file_that_is_the_ralph_md_itself_is_a_located_error() {
    let errors = errors_of(
        "loops/fix/RALPH.md",
        "  progress: ./loops/x/../fix/RALPH.md",
    );
    assert_eq!(
        errors,
        [
            "loops/fix/RALPH.md:4:13: escalation.progress: \"./loops/x/../fix/RALPH.md\" is this \
              RALPH.md; progress entries would overwrite its prompt and settings; choose another \
              file, such as \"progress.txt\""
        ]
    );
    // A RALPH.md in another folder (where ralph runs) is another file.
    assert!(errors_of("loops/fix/RALPH.md", "  progress: RALPH.md").is_empty());
}

#[test]
fn a_progress_file_inside_dot_git_is_a_located_error() {
    for progress in [".git/progress.txt", "sub/.git/x", "/repo/.git/logs/ralph"] {
        let errors = errors_of("RALPH.md", &format!("  progress: {progress}"));
        assert_eq!(
            errors,
            [format!(
                "RALPH.md:4:13: escalation.progress: \"{progress}\" is inside .git, git's own \
                     folder, where a file ralph writes can damage the repository; choose a path \
                     outside it, such as \"progress.txt\""
            )]
        );
    }
    for fine in [
        ".git/../progress.txt",
        ".github/progress.txt",
        "a.git/p",
        "progress.txt",
    ] {
        assert!(
            errors_of("RALPH.md", &format!("  progress: {fine}")).is_empty(),
            "{fine}"
        );
    }
}
