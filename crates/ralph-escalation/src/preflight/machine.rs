//! The machine's preflight: what would go wrong at run time that a look at the machine can
//! tell before anything runs (`ralph check`'s warnings): an agent or a check's program not found, a script
//! without `#!`, a `max_cost` the agent's output can never reach, the idle block without the
//! idle marker in the prompt. The parser's own warnings (placeholders that name nothing) come
//! from `ralph_frontmatter::parse`, which stays free of I/O; these are located the same way.
//! The engine's settings are checked here, not in the engine, which runs loops and checks no
//! machine; [`super`] adds the checks of prd.json and git.

use std::path::Path;

use ralph_frontmatter::{ConfigError, RalphFile, error_at, error_at_key};
use ralph_marker::{self as marker, Finding};

/// Words a POSIX shell runs itself (builtins and keywords): never looked up on PATH.
const SHELL_WORDS: &[&str] = &[
    "!", ".", ":", "[", "[[", "{", "alias", "bg", "break", "case", "cd", "command", "continue",
    "echo", "eval", "exec", "exit", "export", "false", "fc", "fg", "for", "getopts", "hash", "if",
    "jobs", "kill", "local", "printf", "pwd", "read", "readonly", "return", "set", "shift",
    "source", "test", "time", "times", "trap", "true", "type", "ulimit", "umask", "unalias",
    "unset", "until", "wait", "while",
];

/// The warnings [`super::warnings`] returns, in the order of the checks.
pub(super) fn warnings(shown: &str, text: &str, file: &RalphFile, cwd: &Path) -> Vec<ConfigError> {
    let config = &file.config;
    // A setting that is on is pointed at by its key; a value that names a program, by itself.
    let key = |path: String, message: String| error_at_key(shown, text, &path, message);
    let at = |path: String, message: String| error_at(shown, text, &path, message);
    let mut warnings = Vec::new();

    if config.idle.is_some() && !mentions_idle_marker(&file.body) {
        warnings.push(key(
            "idle".to_owned(),
            "idle handling is on, but the prompt never shows the agent the idle marker; add a \
             line such as `When nothing is left to do, end with <!-- ralph:state idle -->`"
                .to_owned(),
        ));
    }

    // Only an adapter that reads the agent's cost (Claude Code's stream-json and json, Amp's
    // stream-json, opencode's json) can reach max_cost.
    let format = ralph_agents::choose_output(
        &config.agent_argv,
        config
            .output
            .or(config.pty.map(|_| ralph_frontmatter::OutputFormat::Text)),
    )
    .format;
    let reads_cost = {
        use ralph_frontmatter::OutputFormat::*;
        matches!(
            format,
            ClaudeStreamJson | ClaudeJson | AmpStreamJson | OpencodeJson
        )
    };
    if config.max_cost.is_some() && !reads_cost {
        let read_as = match format {
            ralph_frontmatter::OutputFormat::Text => "read as text".to_owned(),
            other => format!("read as {}", other.name()),
        };
        warnings.push(key(
            "max_cost".to_owned(),
            format!(
                "the agent's output is {read_as}, which reports no cost: max_cost can never be \
                 reached (use `output: claude-stream-json` with an agent that writes it)"
            ),
        ));
    }

    if let Some(problem) = missing_agent(&config.agent_argv, cwd) {
        warnings.push(at(
            "agent".to_owned(),
            format!("{problem}; every iteration would fail to start the agent"),
        ));
    }

    for (index, fallback) in config.fallback.iter().enumerate() {
        if let Some(problem) = missing_agent(&fallback.argv, cwd) {
            warnings.push(at(
                format!("fallback[{index}]"),
                format!("{problem}; it would fail to start whenever the agent is rate-limited"),
            ));
        }
    }

    // `./` commands run from the RALPH.md's folder.
    let ralph_dir = Path::new(shown).parent().unwrap_or(Path::new(""));
    for (index, command) in config.commands.iter().enumerate() {
        if let Some(problem) = script_without_shebang(&command.run, &cwd.join(ralph_dir)) {
            warnings.push(at(format!("commands[{index}].run"), problem));
        }
    }

    for (index, check) in config.done_when.iter().enumerate() {
        if let Some(problem) = missing_program(check, cwd) {
            warnings.push(at(
                format!("done_when[{index}]"),
                format!("{problem}; this check would fail on every attempt"),
            ));
        }
    }

    warnings
}

/// Whether the prompt holds a `<!-- ralph:state idle -->` marker for the agent to copy.
fn mentions_idle_marker(body: &str) -> bool {
    marker::scan(body.as_bytes()).iter().any(|finding| {
        matches!(finding, Finding::Marker(m) if m.is_state() && m.name.eq_ignore_ascii_case("idle"))
    })
}

/// Why the program of shell command `command` cannot run, if it clearly cannot: a name not on
/// PATH, or a path that does not exist. Builtins, keywords, and words the shell would expand
/// (`$TOOL`, `~/bin/x`) are given the benefit of the doubt.
fn missing_program(command: &str, cwd: &Path) -> Option<String> {
    let words = shlex::split(command)?;
    // `VAR=value cmd`: the program is the first word that is not an assignment.
    let program = words.iter().find(|w| !is_assignment(w))?;
    let expands = program.starts_with('~')
        || program.chars().any(|c| {
            matches!(
                c,
                '$' | '`' | '(' | ')' | '*' | '?' | '<' | '>' | '|' | '&' | ';'
            )
        });
    if program.is_empty() || expands || SHELL_WORDS.contains(&program.as_str()) {
        return None;
    }
    if program.contains('/') {
        let path = cwd.join(program);
        return (!path.exists()).then(|| {
            format!(
                "`{program}` does not exist (checks run from {})",
                cwd.display()
            )
        });
    }
    ralph_process::find_on_path(program)
        .is_none()
        .then(|| format!("`{program}` is not found on PATH"))
}

/// Why the agent's program (`argv[0]`, run without a shell) cannot run, if it clearly cannot.
fn missing_agent(argv: &[String], cwd: &Path) -> Option<String> {
    let program = argv.first()?;
    if program.is_empty() || program.contains('{') {
        return None;
    }
    if program.contains('/') {
        let path = cwd.join(program);
        return (!path.exists()).then(|| {
            format!(
                "`{program}` does not exist (the agent runs from {})",
                cwd.display()
            )
        });
    }
    ralph_process::find_on_path(program)
        .is_none()
        .then(|| format!("`{program}` is not found on PATH"))
}

/// Why a command that runs without a shell (no shell syntax) would fail on a script without a
/// `#!` line, which `sh -c` used to run anyway.
fn script_without_shebang(run: &str, dir: &Path) -> Option<String> {
    use std::io::Read as _;
    if ralph_frontmatter::has_shell_syntax(run) {
        return None;
    }
    let program = shlex::split(run)?.into_iter().next()?;
    if !program.contains('/') || program.contains('{') {
        return None;
    }
    let mut head = [0u8; 2];
    let mut script = std::fs::File::open(dir.join(&program)).ok()?;
    script.read_exact(&mut head).ok()?;
    (&head != b"#!").then(|| {
        format!(
            "`{program}` has no #! line, and a command without shell syntax runs without a \
             shell, so it would fail to start; add one (e.g. `#!/bin/sh`) or write \
             `sh {program}`"
        )
    })
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_assignments_and_expansions_are_not_looked_up() {
        let cwd = Path::new("/");
        for command in [
            "test -z \"$(git status --porcelain)\"",
            "[ -f done ]",
            "true",
            "FOO=1 BAR=2 true",
            "$CHECKER run",
            "~/bin/check",
            "cd sub && make",
        ] {
            assert_eq!(missing_program(command, cwd), None, "{command}");
        }
    }

    #[test]
    fn unknown_programs_and_missing_paths_are_reported() {
        let cwd = Path::new("/");
        assert_eq!(
            missing_program("no-such-tool-xyz --check", cwd).as_deref(),
            Some("`no-such-tool-xyz` is not found on PATH")
        );
        assert!(
            missing_program("./no/such/script.sh", cwd)
                .unwrap()
                .starts_with("`./no/such/script.sh` does not exist")
        );
        assert_eq!(missing_program("sh -c 'exit 0'", cwd), None);
    }

    #[test]
    fn warnings_point_at_the_key_of_a_setting_and_at_a_value_that_names_a_program() {
        let at = |text: &str, field: &str| {
            let e = error_at("RALPH.md", text, field, "x");
            (e.line, e.column)
        };
        let key = |text: &str, field: &str| {
            let e = error_at_key("RALPH.md", text, field, "x");
            (e.line, e.column)
        };
        let text = "---\nagent: x\ndone_when:\n  - make check\nescalation:\n  revert: true\n---\n";
        assert_eq!(at(text, "done_when[0]"), (4, 5));
        assert_eq!(key(text, "escalation.revert"), (6, 3));
        assert_eq!(key(text, "idle"), (2, 1));
        let defaults = "---\nagent: x\nescalation:\n  prd: prd.json\n---\n";
        assert_eq!(key(defaults, "escalation.revert"), (3, 1));
        let flow = "---\nagent: x\ndone_when: [\"make check\"]\n---\n";
        assert_eq!(at(flow, "done_when[0]"), (3, 13));
    }

    #[test]
    fn the_idle_marker_is_recognised_in_the_prompt() {
        assert!(mentions_idle_marker("end with <!-- ralph:state idle -->"));
        assert!(mentions_idle_marker("end with <!--ralph:state IDLE-->"));
        assert!(!mentions_idle_marker("say you are idle"));
    }
}
