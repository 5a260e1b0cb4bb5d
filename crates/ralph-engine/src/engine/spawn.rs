//! Why a program (the agent, a command, a check) did not start, in words that say what to
//! check.

/// Why a program did not start, in words that say what to check.
pub(super) fn spawn_problem(program: &str, err: &std::io::Error) -> String {
    let path = std::path::Path::new(program);
    match err.kind() {
        _ if err.raw_os_error() == Some(libc::ENOEXEC) => format!(
            "it has no #! line; add one (e.g. `#!/bin/sh`) or run it through its interpreter \
             (`sh {program}`)"
        ),
        std::io::ErrorKind::NotFound if program.contains('/') => match interpreter(path) {
            Some(interpreter) => format!("its #! interpreter `{interpreter}` is not installed"),
            None => "no such file (or its #! interpreter is missing)".to_owned(),
        },
        std::io::ErrorKind::NotFound => {
            "not found on PATH (is it installed?), or its #! interpreter is missing".to_owned()
        }
        std::io::ErrorKind::PermissionDenied if path.is_dir() => "it is a folder".to_owned(),
        std::io::ErrorKind::PermissionDenied if path.is_file() => {
            format!("permission denied: it is not executable (`chmod +x {program}`)")
        }
        std::io::ErrorKind::PermissionDenied => "permission denied (is it executable?)".to_owned(),
        _ => err.to_string(),
    }
}

/// The program named on the `#!` line of the script at `path`, if it has one.
fn interpreter(path: &std::path::Path) -> Option<String> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n]
        .strip_prefix(b"#!")?
        .split(|b| *b == b'\n')
        .next()?;
    let line = String::from_utf8_lossy(line);
    line.split_whitespace().next().map(str::to_owned)
}
