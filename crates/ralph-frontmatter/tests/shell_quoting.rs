//! Every placement `command_line` accepts, run by real shells with hostile values: the value
//! arrives verbatim and never runs as code.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use proptest::prelude::*;
use ralph_frontmatter::{CommandLine, command_line};

/// Templates and what they print for the value `v`.
const PLACEMENTS: &[(&str, &str)] = &[
    ("printf %s {{ args.x }} | cat", "{v}"),
    ("printf %s '<{{ args.x }}>' | cat", "<{v}>"),
    ("printf %s \"<{{ args.x }}>\" | cat", "<{v}>"),
    ("printf %s x{{ args.x }}'y'\"z\" | cat", "x{v}yz"),
    ("printf %s \"$(printf %s {{ args.x }}; printf .)\"", "{v}."),
    (
        "printf %s \"$(printf %s \"{{ args.x }}\"; printf .)\"",
        "{v}.",
    ),
    (
        "printf %s \"$(printf %s '{{ args.x }}'; printf .)\"",
        "{v}.",
    ),
    ("printf %s $(printf %s .) {{ args.x }}", ".{v}"),
    ("cat <<EOF; printf %s {{ args.x }}\nEOF\n", "{v}"),
    ("printf %s {{ args.x }}", "{v}"),
    ("printf %s --x={{ args.x }}", "--x={v}"),
    ("printf %s '{{ args.x }}'", "{v}"),
    ("(printf %s {{ args.x }}) | cat", "{v}"),
];

const HOSTILE: &[&str] = &[
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    "\"; touch pwned; \"",
    "\\",
    "\\'",
    "\n touch pwned",
    "EOF\ntouch pwned",
    "a b\tc *.md ~ #x !x {a,b} $HOME ${HOME} $((1+1))",
    "\u{1}\u{7f}\u{1b}[31mé\u{fffd}\r",
    "",
];

fn shells() -> Vec<&'static str> {
    ["sh", "bash", "dash"]
        .into_iter()
        .filter(|sh| Command::new(sh).arg("-c").arg(":").status().is_ok())
        .collect()
}

/// What running `template` with `x = value` prints, through each shell (or directly).
fn outputs(template: &str, value: &str, dir: &Path) -> Vec<Vec<u8>> {
    let args = BTreeMap::from([("x".to_owned(), value.to_owned())]);
    let line = command_line(template, &args).expect("an accepted placement");
    let commands: Vec<Command> = match line {
        CommandLine::Shell(script) => shells()
            .into_iter()
            .map(|sh| {
                let mut c = Command::new(sh);
                c.arg("-c").arg(&script);
                c
            })
            .collect(),
        CommandLine::Words(words) => {
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]);
            vec![c]
        }
    };
    commands
        .into_iter()
        .map(|mut c| c.current_dir(dir).output().expect("runs").stdout)
        .collect()
}

fn assert_verbatim(value: &str) {
    let dir = tempfile::tempdir().unwrap();
    for (template, expected) in PLACEMENTS {
        let expected = expected.replace("{v}", value);
        for out in outputs(template, value, dir.path()) {
            assert_eq!(
                String::from_utf8_lossy(&out),
                expected,
                "{template:?} with {value:?}"
            );
        }
        assert!(
            !dir.path().join("pwned").exists(),
            "{template:?} with {value:?} ran code"
        );
    }
}

#[test]
fn hostile_values_arrive_verbatim_in_every_accepted_placement() {
    for value in HOSTILE {
        assert_verbatim(value);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_values_arrive_verbatim_in_every_accepted_placement(
        value in "[a-z '\"\\\\$`();|&<>\n\t*?#~{}!=é-]{0,24}"
    ) {
        assert_verbatim(&value);
    }
}

/// Values that create `pwned` if any shell context runs them as code.
const PAYLOADS: &[&str] = &[
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    "\"; touch pwned; \"",
    "\n touch pwned\n",
    "E\ntouch pwned\n",
    ") ; touch pwned; (",
    "}; touch pwned; {",
    "\\'; touch pwned; #",
    "$(( $(touch pwned) ))",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    /// Random scripts built from shell syntax: whatever `command_line` accepts never runs a
    /// value, under any shell (syntax errors and odd output are fine; code is not).
    #[test]
    fn no_accepted_script_runs_a_value(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "echo ", " ", "'", "\"", "$(", ")", "`", "${v:-", "}", "#", "\n", "<<E\n",
                "E\n", "\\", "$", "{{ args.x }}", ";", "|", "((", "))", "$((", "case a in a) ",
                ";; esac", "<<<", "$'", "x=",
            ]),
            1..16,
        ),
        payload in proptest::sample::select(PAYLOADS.to_vec()),
    ) {
        let script: String = parts.concat();
        let args = BTreeMap::from([("x".to_owned(), payload.to_owned())]);
        let Ok(CommandLine::Shell(script)) = command_line(&script, &args) else {
            return Ok(());
        };
        let dir = tempfile::tempdir().unwrap();
        for sh in shells() {
            let _ = Command::new("timeout")
                .args(["2", sh, "-c", &script])
                .current_dir(dir.path())
                .stdin(std::process::Stdio::null())
                .output();
            prop_assert!(
                !dir.path().join("pwned").exists(),
                "{sh} ran {payload:?} in {script:?}"
            );
        }
    }
}
