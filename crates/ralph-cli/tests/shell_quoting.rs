//! A user argument never becomes shell code: wherever `{{ args.x }}` stands in a command, the
//! command receives the value verbatim, or the file is refused at load. And a command without
//! shell syntax runs as ralphify runs it: split into words, no shell.

use crate::common;

use common::{Project, code, fake_agent, stderr};

/// Commands that each write the value of `x` to a file, in every placement ralph quotes, with
/// what the file must then hold (`{v}` is the value).
const PLACEMENTS: &[(&str, &str)] = &[
    // Bare, single-quoted, double-quoted, mixed in one word.
    ("printf %s {{ args.x }} > out", "{v}"),
    ("printf %s '<{{ args.x }}>' > out", "<{v}>"),
    ("printf %s \"<{{ args.x }}>\" > out", "<{v}>"),
    ("printf %s a{{ args.x }}'b'\"c\" > out", "a{v}bc"),
    // Inside $( ), nested in double quotes, and quotes inside that.
    (
        "printf %s \"$(printf %s {{ args.x }}; printf .)\" > out",
        "{v}.",
    ),
    (
        "printf %s \"$(printf %s \"{{ args.x }}\"; printf .)\" > out",
        "{v}.",
    ),
    (
        "printf %s \"$(printf %s '{{ args.x }}'; printf .)\" > out",
        "{v}.",
    ),
    (
        "x=$(printf %s {{ args.x }}; printf .); printf %s \"$x\" > out",
        "{v}.",
    ),
    // After a here-document: command text again.
    (
        "cat <<EOF > /dev/null; printf %s {{ args.x }} > out\nbody\nEOF",
        "{v}",
    ),
    // No shell syntax: run directly, the value one word.
    ("./write out {{ args.x }}", "{v}"),
    ("./write out --x={{ args.x }}", "--x={v}"),
];

const HOSTILE: &[&str] = &[
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    "\"; touch pwned; \"",
    "\\",
    "\ntouch pwned",
    "EOF\ntouch pwned",
    "a b\t*.md ~ #c !d {e,f} $HOME ${HOME} $((1+1)) > g",
    // Binary-ish (no NUL, which no argument can hold).
    "\u{1}\u{2}\u{7f}\u{1b}[31m\r\u{fffd}é",
];

/// A project whose commands are `PLACEMENTS`, each writing to its own file `out-N`, and a
/// `write FILE VALUE` program for the commands run without a shell.
fn project() -> Project {
    let mut commands = String::from("commands:\n");
    for (n, (run, _)) in PLACEMENTS.iter().enumerate() {
        let run = run.replace("out", &format!("out-{n}"));
        commands.push_str(&format!("  - name: c{n}\n    run: {run:?}\n"));
    }
    let p = Project::new(
        &format!("agent: {}\nargs: [x]\n{commands}", fake_agent()),
        "x\n",
    );
    let write = p.path().join("write");
    std::fs::write(&write, "#!/bin/sh\nprintf %s \"$2\" > \"$1\"\n").unwrap();
    make_executable(&write);
    p
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn hostile_values_reach_every_command_verbatim_and_never_run() {
    for value in HOSTILE {
        let p = project();
        let out = p.run(&["run", "-n", "1", &format!("--x={value}")]);
        assert_eq!(code(&out), 0, "{value:?}: {}", stderr(&out));
        assert!(
            !p.path().join("pwned").exists(),
            "{value:?} ran as shell code"
        );
        for (n, (run, expected)) in PLACEMENTS.iter().enumerate() {
            let written = std::fs::read(p.path().join(format!("out-{n}"))).unwrap_or_default();
            assert_eq!(
                String::from_utf8_lossy(&written),
                expected.replace("{v}", value),
                "{run:?} with {value:?}"
            );
        }
    }
}

#[test]
fn placements_that_cannot_be_quoted_are_refused_at_load_with_their_position() {
    let p = Project::new(
        &format!(
            "agent: {}\nargs: [x]\ncommands:\n  - name: tick\n    run: echo `echo {{{{ args.x }}}}`\n  \
             - name: doc\n    run: |\n      cat <<EOF\n      {{{{ args.x }}}}\n      EOF\n  \
             - name: note\n    run: \"echo hi # {{{{ args.x }}}}\"\n  \
             - name: slash\n    run: echo \\{{{{ args.x }}}} | cat",
            fake_agent()
        ),
        "x\n",
    );
    let check = p.run(&["check"]);
    assert_eq!(code(&check), 2, "{}", stderr(&check));
    let messages = stderr(&check);
    for expected in [
        "RALPH.md:6:21: commands[0].run: {{ args.x }} inside backticks cannot be quoted safely; \
         use `$( ... )` instead, where it is quoted",
        "RALPH.md:10:7: commands[1].run: {{ args.x }} inside a here-document cannot be quoted \
         safely; set a variable before it (`v={{ args.x }}`) and write \"$v\" in the here-document",
        "RALPH.md:13:21: commands[2].run: {{ args.x }} inside a shell comment cannot be quoted \
         safely",
        "RALPH.md:15:16: commands[3].run: {{ args.x }} right after a `\\` cannot be quoted \
         safely; remove the backslash",
    ] {
        assert!(
            messages.contains(expected),
            "{expected}\nnot in:\n{messages}"
        );
    }
    let run = p.run(&["run", "-n", "1", "--x=v"]);
    assert_eq!(code(&run), 2, "{}", stderr(&run));
    assert!(p.events().is_empty(), "nothing ran");
}

#[test]
fn a_command_without_shell_syntax_gets_a_glob_pattern_as_written() {
    // ralphify's ralphs/execute-tasks: under `sh -c`, `*.md` became `NOTES.md RALPH.md`.
    let p = Project::new(
        &format!(
            "agent: {} --save-prompt prompt.txt\ncommands:\n  - name: tasks\n    \
             run: find tasks -maxdepth 1 -type f -name *.md",
            fake_agent()
        ),
        "{{ commands.tasks }}",
    );
    std::fs::write(p.path().join("NOTES.md"), "").unwrap();
    std::fs::create_dir(p.path().join("tasks")).unwrap();
    std::fs::write(p.path().join("tasks/one.md"), "").unwrap();
    std::fs::write(p.path().join("tasks/two.txt"), "").unwrap();
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.events_of("COMMAND_FINISHED")[0]["exit_code"], 0);
    let prompt = std::fs::read_to_string(p.path().join("prompt.txt")).unwrap();
    assert_eq!(prompt, "tasks/one.md\n=== end ===\n");
}

#[test]
fn a_command_with_shell_syntax_still_runs_through_sh() {
    let p = Project::new(
        &format!(
            "agent: {} --save-prompt prompt.txt\ncommands:\n  - name: piped\n    \
             run: printf 'a\\nb\\n' | wc -l",
            fake_agent()
        ),
        "{{ commands.piped }}",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let prompt = std::fs::read_to_string(p.path().join("prompt.txt")).unwrap();
    assert_eq!(prompt.split_whitespace().next(), Some("2"));
}
