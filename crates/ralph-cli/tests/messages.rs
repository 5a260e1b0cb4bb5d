//! What ralph tells a user who makes the usual mistakes: warnings while running, bad option
//! values, a file given where a folder is expected. Each message names what is wrong and what
//! is allowed, in plain text.

use crate::common;

use common::{Project, code, stderr};

/// Warnings found while `ralph run` loads the file read like `ralph check`'s, with no colour
/// codes on a stderr that is not a terminal.
#[test]
fn run_prints_file_warnings_as_plain_warning_lines() {
    let project = Project::new(
        "agent: cat\ndescription: old ralphify key",
        "{{ commands.nope }}",
    );
    let out = project.run(&["run", "-n", "1", "-q"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains('\x1b'), "colour codes in a pipe: {err:?}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].starts_with("warning: RALPH.md:3:1: description: ignored"),
        "{err}"
    );
    assert!(
        warnings[1].starts_with("warning: RALPH.md:5:1: commands.nope:"),
        "{err}"
    );
}

/// `ralph check` and `ralph run` take a RALPH.md path, so users give `ralph init` one too: it
/// is refused with the command that works, instead of an OS error or a folder named RALPH.md.
#[test]
fn init_given_a_file_path_names_the_folder_to_use() {
    let project = Project::new("agent: cat", "hi");
    for path in ["RALPH.md", "sub/RALPH.md"] {
        let out = project.run(&["init", path]);
        assert_eq!(code(&out), 2, "{path}: {}", stderr(&out));
        let folder = if path == "RALPH.md" { "." } else { "sub" };
        assert_eq!(
            stderr(&out),
            format!(
                "ralph: {path}: `ralph init` takes the folder to write RALPH.md in, not a \
                 file; for this one's folder, run `ralph init {folder}`\n"
            )
        );
    }
    assert!(!project.path().join("sub").exists(), "nothing is created");
}

/// Option values are checked like the same settings in RALPH.md: `--timeout 0` is refused as
/// `timeout: 0` is (it used to kill every agent at once), and the messages say what is allowed
/// in the file's words, not the parser's.
#[test]
fn bad_option_values_are_refused_with_what_is_allowed() {
    let project = Project::new("agent: cat", "hi");
    for (args, message) in [
        (
            // `-n 1`: before the fix, every iteration timed out at once, without end.
            &["run", "-n", "1", "--timeout", "0"][..],
            "error: invalid value '0' for '--timeout <DURATION>': expected a duration > 0, \
             got \"0\"",
        ),
        (
            &["run", "-n", "0"][..],
            "error: invalid value '0' for '--max-iterations <N>': expected an integer >= 1, \
             got \"0\"",
        ),
        (
            &["run", "--delay", "fast"][..],
            "error: invalid value 'fast' for '--delay <DURATION>': expected a duration such as \
             \"250ms\", \"30s\", \"5m\" or \"1h 30m\" (a bare number is seconds), got \"fast\"",
        ),
    ] {
        let out = project.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).lines().next(),
            Some(message),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(project.events().is_empty(), "{args:?}: nothing ran");
    }
}

/// Options `ralph run` does not know are taken for the file's user arguments; a mistyped ralph
/// option is refused with the option it resembles.
#[test]
fn a_mistyped_run_option_is_suggested() {
    let project = Project::new("agent: cat\nargs: [focus]", "{{ args.focus }}");
    for (typo, meant) in [
        ("--dryrun", "--dry-run"),
        ("--max-iteration", "--max-iterations"),
        ("--focs", "--focus"),
    ] {
        let out = project.run(&["run", typo, "x"]);
        assert_eq!(code(&out), 2, "{typo}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "ralph: unknown argument {typo} (declared args: --focus); did you mean {meant}?\n"
            )
        );
    }
}

/// A `ralph.md` in small letters is not found on a case-sensitive file system; the message
/// points at it instead of only saying that nothing is there.
#[test]
fn a_ralph_md_in_other_letter_case_is_pointed_out() {
    let project = Project::new("agent: cat", "hi");
    std::fs::create_dir(project.path().join("loop")).unwrap();
    std::fs::write(
        project.path().join("loop/ralph.md"),
        "---\nagent: cat\n---\nhi\n",
    )
    .unwrap();
    for command in ["check", "run"] {
        let out = project.run(&[command, "loop"]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "ralph: loop/RALPH.md: no such file; loop/ralph.md is there, but ralph looks for \
             `RALPH.md` in capitals: give its path, or rename it\n"
        );
    }
    let out = project.run(&["check", "loop/ralph.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// `ralph check` reads prd.json as `ralph run` does, and says when run would refuse it (exit 1).
#[test]
fn check_refuses_a_prd_json_that_run_would_refuse() {
    let project = Project::new(
        "agent: cat\nescalation:\n  prd: prd.json\n  revert: false",
        "{{ story.id }}",
    );
    let prd_warnings = |out: &std::process::Output| -> Vec<String> {
        stderr(out)
            .lines()
            .filter(|l| l.contains("escalation.prd"))
            .map(str::to_owned)
            .collect()
    };
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let w = prd_warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(
        w[0].starts_with("error: RALPH.md:4:3: escalation.prd: prd.json: cannot read"),
        "{w:?}"
    );
    assert!(
        w[0].ends_with("; `ralph run` would refuse to start"),
        "{w:?}"
    );

    std::fs::write(
        project.path().join("prd.json"),
        r#"{"userStories": [{"id": "A", "priority": 1, "passes": false}"#,
    )
    .unwrap();
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let w = prd_warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("error: RALPH.md:4:3: escalation.prd: prd.json:1:"),
        "{w:?}"
    );

    std::fs::write(
        project.path().join("prd.json"),
        r#"{"userStories": [{"id": "A", "priority": 1, "passes": false}]}"#,
    )
    .unwrap();
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(prd_warnings(&out), Vec::<String>::new());
}

/// A prd.json field of the wrong type is named, with what it allows, in prd.json's own words.
#[test]
fn a_prd_json_field_of_the_wrong_type_is_named() {
    let project = Project::new(
        "agent: cat\nescalation:\n  prd: prd.json\n  revert: false",
        "{{ story.id }}",
    );
    for (story, message) in [
        (
            // "high" is a priority now (1); "urgent" is not.
            r#"{"id": "A", "priority": "urgent", "passes": false}"#,
            r#""low" (1, 2 and 3) or digits such as "2", got "urgent""#,
        ),
        (
            r#"{"id": 7, "priority": 1, "passes": false}"#,
            "id: expected a string, got 7",
        ),
        (
            r#"{"id": "A", "acceptanceCriteria": "it works", "priority": 1, "passes": false}"#,
            r#"acceptanceCriteria: expected a list of strings, got "it works""#,
        ),
    ] {
        std::fs::write(
            project.path().join("prd.json"),
            format!(r#"{{"userStories": [{story}]}}"#),
        )
        .unwrap();
        let out = project.run(&["run", "-n", "1"]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("ralph: prd.json:1:") && err.trim_end().ends_with(message),
            "{story}: {err}"
        );
    }
}

/// A number beyond 64 bits is reported at its field, without the YAML parser's Rust types.
#[test]
fn a_number_too_large_is_reported_at_its_field() {
    let project = Project::new("agent: cat\nidle:\n  delay: 99999999999999999999999", "hi");
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        "error: RALPH.md:4:10: idle.delay: expected a number ralph can hold (64 bits), got \
         99999999999999999999999\nralph: RALPH.md has 1 error\n"
    );
}

/// A script calling `ralph run` learns the exit codes from `--help`, as events.md lists them.
#[test]
fn run_help_lists_the_exit_codes() {
    let project = Project::new("agent: cat", "hi");
    let out = project.run(&["run", "--help"]);
    assert_eq!(code(&out), 0);
    let help = common::stdout(&out);
    let codes = &help[help.find("Exit codes:\n").expect("an exit code section")..];
    for code in ["  0 ", "  1 ", "  2 ", "  130 "] {
        assert!(
            codes.lines().any(|l| l.starts_with(code)),
            "{code:?}: {codes}"
        );
    }
}

/// Every way `ralph run` can end has its exit code in `--help`: the agent's own `done` and a
/// declared state's `then: stop` included.
#[test]
fn run_help_exit_codes_cover_agent_done_and_declared_stops() {
    let project = Project::new("agent: cat", "hi");
    let out = project.run(&["run", "--help"]);
    let help = common::stdout(&out);
    let codes = &help[help.find("Exit codes:\n").expect("an exit code section")..];
    assert!(codes.contains("agent_done"), "{codes}");
    assert!(
        codes.contains("`then: stop`: its own `exit_code`"),
        "{codes}"
    );
    insta::assert_snapshot!(codes);
}

/// A plug's section holds what JSON holds: a YAML tag or a key that is not a string is an error
/// at its place in the file, naming what is allowed, before anything runs.
#[test]
fn a_yaml_tag_or_a_number_key_in_a_plug_section_is_located_and_named() {
    let p = Project::new(
        "agent: sh agent.sh\ntasks:\n  markdown: !path TODO.md\n  2: x",
        "x",
    );
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let allowed = "a plug's section holds JSON values: strings, finite numbers, true/false, \
                   null, lists, and mappings with string keys";
    for expected in [
        format!(
            "RALPH.md:4:19: tasks.markdown: expected a value without a YAML tag, got one tagged \
             `!path`; {allowed}: remove the tag"
        ),
        format!(
            "RALPH.md:5:3: tasks.2: expected a string key, got 2; {allowed}: write the key in \
             quotes (\"2\")"
        ),
    ] {
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    }
}
