//! ralphify compatibility: a RALPH.md written for ralphify 0.3.0, run the way ralphify's
//! documentation runs it, behaves the same under `ralph run` (docs/comparison.md lists where
//! ralph deliberately differs).

use crate::common;

use common::{Project, code, fake_agent, stderr};

fn agent(args: &str) -> String {
    format!("agent: '{} {args}'", fake_agent())
}

fn prompts(p: &Project) -> String {
    std::fs::read_to_string(p.path().join("prompt.txt")).unwrap_or_default()
}

#[test]
fn ralph_options_may_follow_the_argument_values() {
    // `ralph run my-ralph ./src "perf" -n 1`: ralphify reads -n wherever it stands.
    let p = Project::new(
        &format!("{}\nargs: [dir, focus]", agent("--save-prompt prompt.txt")),
        "{{ args.dir }} {{ args.focus }}",
    );
    let out = p.run(&["run", ".", "src", "-n", "1", "perf"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(prompts(&p), "src perf\n=== end ===\n");
}

#[test]
fn ralphify_short_options_work() {
    // -s --stop-on-error, -t --timeout (seconds), -d --delay (seconds), -l --log-dir.
    let p = Project::new(&agent("--exit 3"), "x");
    let out = p.run(&["run", "-n", "3", "-s", "-t", "5", "-d", "0", "-l", "logs"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "agent_failed");
    assert_eq!(ended["iterations"], 1);
    assert!(p.path().join("logs").is_dir(), "no logs under logs/");
}

#[test]
fn an_option_given_twice_takes_its_last_value() {
    let p = Project::new(&agent("--out x"), "x");
    let out = p.run(&["run", "-n", "5", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.run_ended()["iterations"], 2);
}

#[test]
fn a_missing_argument_in_a_command_adds_no_word() {
    // ralphify replaces a value not given with nothing: `ls {{ args.dir }}` lists the cwd.
    let p = Project::new(
        &format!(
            "{}\nargs: [dir]\ncommands:\n  - name: show\n    run: printf '[%s]' {{{{ args.dir }}}} x",
            agent("--save-prompt prompt.txt")
        ),
        "{{ commands.show }}",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(prompts(&p), "[x]\n=== end ===\n");
}

#[test]
fn an_empty_argument_in_a_command_is_an_empty_word() {
    let p = Project::new(
        &format!(
            "{}\nargs: [dir]\ncommands:\n  - name: show\n    run: printf '[%s]' {{{{ args.dir }}}} x",
            agent("--save-prompt prompt.txt")
        ),
        "{{ commands.show }}",
    );
    let out = p.run(&["run", "-n", "1", "--dir", ""]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(prompts(&p), "[][x]\n=== end ===\n");
}

#[test]
fn an_undeclared_argument_the_file_uses_can_be_given_by_name() {
    // ralphify needs `args` only for positional values; `--name value` fills `{{ args.name }}`.
    let p = Project::new(
        &format!(
            "{}\ncommands:\n  - name: show\n    run: echo {{{{ args.dir }}}}",
            agent("--save-prompt prompt.txt")
        ),
        "Focus: {{ args.focus }}. {{ commands.show }}",
    );
    let out = p.run(&["run", "-n", "1", "--focus", "the parser", "--dir=src"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(prompts(&p), "Focus: the parser. src\n=== end ===\n");
}

#[test]
fn an_argument_nothing_uses_is_still_refused() {
    let p = Project::new(
        &format!("{}\nargs: [focus]", agent("--save-prompt prompt.txt")),
        "Focus: {{ args.focus }}",
    );
    let out = p.run(&["run", "-n", "1", "--fcous", "parser"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown argument --fcous (declared args: --focus)"),
        "{}",
        stderr(&out)
    );
    assert!(!p.path().join("prompt.txt").exists(), "the agent ran");
}

#[test]
fn an_installed_ralph_is_found_by_name() {
    // `ralph add owner/repo/fix` (ralphify) puts the ralph in .ralphify/ralphs/fix/.
    let p = Project::new("agent: x", "");
    let dir = p.path().join(".ralphify/ralphs/fix");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("RALPH.md"),
        format!(
            "---\n{}\ncommands:\n  - name: here\n    run: ./here.sh\n---\n{{{{ ralph.name }}}}: {{{{ commands.here }}}}\n",
            agent("--save-prompt prompt.txt")
        ),
    )
    .unwrap();
    std::fs::write(dir.join("here.sh"), "#!/bin/sh\necho from-fix\n").unwrap();
    std::process::Command::new("chmod")
        .args(["+x", ".ralphify/ralphs/fix/here.sh"])
        .current_dir(p.path())
        .status()
        .unwrap();
    let out = p.run(&["run", "fix", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(prompts(&p), "fix: from-fix\n=== end ===\n");
}

#[test]
fn yaml_yes_and_no_are_booleans_as_in_ralphify() {
    // ralphify reads its frontmatter with PyYAML, where `yes`, `no`, `on` and `off` are
    // booleans.
    let p = Project::new(&format!("{}\ncredit: no", agent("--out x")), "x");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
