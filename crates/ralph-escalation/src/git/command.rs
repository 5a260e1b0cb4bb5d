//! The one way ralph starts git, for escalation, the merge queue and the task lists alike:
//! in the repository it is given whatever the environment says, in a process group of its
//! own, never waiting for a person.

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What git reads to find a repository, its index or its objects (`git rev-parse
/// --local-env-vars`), which a person's shell, a git hook or a ralph started by one may have
/// set for another repository. Git clears the same when it runs in another repository (a
/// submodule), all but its `-c` configuration, as these are cleared here.
pub const REPOSITORY_VARIABLES: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// `git` for the repository holding `dir`, run there: the [`REPOSITORY_VARIABLES`] cleared,
/// `PWD` set to `dir` (hooks are the person's programs, and some read it), in a process group
/// of its own (a Ctrl+C at the terminal must not kill a revert or a merge half-way: ralph
/// decides when to stop), with nothing on stdin, and never waiting for a person: no editor for
/// a message, no prompt for a password. Add arguments and run it with [`output`].
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    for var in REPOSITORY_VARIABLES {
        cmd.env_remove(var);
    }
    cmd.current_dir(dir)
        .env("PWD", ralph_process::child_pwd(dir))
        .env("GIT_EDITOR", "true")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .process_group(0);
    cmd
}

/// Runs `cmd` with `input` on its stdin, and waits for its whole output. The input is written
/// while the output is read: neither pipe can fill up and stall git.
pub fn output(mut cmd: Command, input: Option<&[u8]>) -> std::io::Result<Output> {
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    std::thread::scope(|scope| {
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            scope.spawn(move || {
                let _ = stdin.write_all(bytes);
            });
        }
        child.wait_with_output()
    })
}

/// What a failed git command said: its standard error, else its output's last line, else its
/// exit status, so an error never ends in `failed:` with nothing after it (a hook that fails
/// silently, a `git diff --quiet`).
pub fn what_git_said(out: &Output) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        return stderr.trim().to_owned();
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(line) = stdout.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        return line.to_owned();
    }
    match (out.status.code(), out.status.signal()) {
        (Some(code), _) => format!("it exited with {code} and said nothing"),
        (None, Some(signal)) => format!("it was killed by signal {signal}"),
        (None, None) => "it said nothing".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::what_git_said;

    fn said(script: &str) -> String {
        let out = std::process::Command::new("sh")
            .args(["-c", script])
            .output()
            .unwrap();
        what_git_said(&out)
    }

    #[test]
    fn a_silent_failure_still_says_something() {
        assert_eq!(said("echo 'fatal: bad' >&2; exit 128"), "fatal: bad");
        assert_eq!(said("echo one; echo two; exit 1"), "two");
        assert_eq!(said("exit 3"), "it exited with 3 and said nothing");
        assert_eq!(said("kill -9 $$"), "it was killed by signal 9");
    }
}
