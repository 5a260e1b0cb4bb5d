//! Where a program named without a `/` lives, remembered between spawns as a shell's `hash`
//! does. Spawning `sh` by name makes the C library try every `PATH` entry before the right one
//! (eight failed `execve`s on a typical developer `PATH`), on every command, agent and check of
//! every iteration; an absolute path costs one (and a `stat` to check it is still there).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Found programs, valid for one value of `PATH`.
struct Found {
    path_var: Option<OsString>,
    programs: HashMap<String, PathBuf>,
}

static FOUND: Mutex<Option<Found>> = Mutex::new(None);

/// What to spawn for `program`: its remembered or newly found absolute path, or `program` as
/// it is (a name with a `/`, one not found, or one found only through a relative `PATH`
/// entry, which depends on the child's working folder).
pub(crate) fn resolve(program: &str) -> PathBuf {
    if program.contains('/') {
        return PathBuf::from(program);
    }
    let path_var = std::env::var_os("PATH");
    let mut found = FOUND
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let found = match &mut *found {
        Some(found) if found.path_var == path_var => found,
        slot => slot.insert(Found {
            path_var: path_var.clone(),
            programs: HashMap::new(),
        }),
    };
    // A program removed or moved since is searched for again.
    if let Some(path) = found
        .programs
        .get(program)
        .filter(|p| is_executable_file(p))
    {
        return path.clone();
    }
    match path_var.as_deref().and_then(|dirs| find(program, dirs)) {
        Some(path) => {
            found.programs.insert(program.to_owned(), path.clone());
            path
        }
        None => PathBuf::from(program),
    }
}

/// `Err(ENOEXEC)` for a program that is a text file without a `#!` line, before it is spawned.
///
/// A spawn that forks (a PTY agent, or any spawn with a `pre_exec` hook off Linux) ends in the
/// C library's `execvp`, which runs such a file with `/bin/sh` instead of failing (glibc does,
/// musl does not), where a `posix_spawn` fails: a script would run or not depending on the
/// platform and the mode. The kernel itself runs no text file without `#!`, so that is the
/// answer here for every spawn, and the caller says to add one. A binary starts with bytes that are not
/// text (an ELF or Mach-O header holds NULs); a file that cannot be read is left to the spawn.
pub(crate) fn refuse_script_without_shebang(program: &Path, cwd: &Path) -> std::io::Result<()> {
    use std::io::Read as _;
    let path = cwd.join(program);
    let mut head = [0u8; 256];
    let Ok(n) = std::fs::File::open(&path).and_then(|mut f| f.read(&mut head)) else {
        return Ok(());
    };
    let head = &head[..n];
    if head.starts_with(b"#!") || head.contains(&0) {
        return Ok(());
    }
    Err(std::io::Error::from_raw_os_error(libc::ENOEXEC))
}

/// The first executable file named `program` in one of `PATH`'s folders, in order, as
/// `execvp` would pick it; a relative entry (`.`, or an empty one) is read from the current
/// folder. `ralph check` uses it to warn of an agent or command that would not start.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH")?;
    first_executable(program, std::env::split_paths(&dirs))
}

/// The first executable file named `program` in the `PATH` value `dirs`, as `execvp` would
/// pick it; `None` when a relative entry (`.`, or an empty one) comes first, since what it
/// finds depends on the child's working folder.
fn find(program: &str, dirs: &OsStr) -> Option<PathBuf> {
    first_executable(
        program,
        std::env::split_paths(dirs).take_while(|dir| dir.is_absolute()),
    )
}

fn first_executable(program: &str, dirs: impl Iterator<Item = PathBuf>) -> Option<PathBuf> {
    dirs.map(|dir| dir.join(program))
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_text_file_without_a_shebang_is_refused_and_binaries_and_scripts_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let write =
            |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        write("script", b"#!/bin/sh\necho hi\n");
        write("bare", b"echo hi\n");
        write("empty", b"");
        write("binary", b"\x7fELF\x02\x01\x01\x00\x00");
        let check = |name: &str| {
            super::refuse_script_without_shebang(Path::new(name), dir.path())
                .map_err(|e| e.raw_os_error())
        };
        assert_eq!(check("script"), Ok(()));
        assert_eq!(check("binary"), Ok(()));
        assert_eq!(check("bare"), Err(Some(libc::ENOEXEC)));
        assert_eq!(check("empty"), Err(Some(libc::ENOEXEC)));
        // Missing: left to the spawn, which says so.
        assert_eq!(check("missing"), Ok(()));
    }

    use super::*;

    fn dirs(paths: &[&Path]) -> OsString {
        std::env::join_paths(paths).unwrap()
    }

    #[test]
    fn the_first_executable_match_wins_and_relative_entries_stop_the_search() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        // Not executable in a, executable in b: execvp would run b's.
        std::fs::write(a.join("tool"), "").unwrap();
        std::fs::write(b.join("tool"), "").unwrap();
        std::fs::set_permissions(b.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(a.join("folder")).unwrap();

        assert_eq!(find("tool", &dirs(&[&a, &b])), Some(b.join("tool")));
        assert_eq!(find("missing", &dirs(&[&a, &b])), None);
        assert_eq!(find("folder", &dirs(&[&a])), None);
        assert_eq!(find("tool", &dirs(&[Path::new("bin"), &b])), None);
        assert_eq!(find("tool", OsStr::new(&format!(":{}", b.display()))), None);
    }

    #[test]
    fn find_on_path_finds_what_execvp_would_run_and_nothing_else() {
        let sh = find_on_path("sh").unwrap();
        assert!(sh.ends_with("sh") && is_executable_file(&sh));
        assert_eq!(find_on_path("ralph-no-such-program-anywhere"), None);
    }

    #[test]
    fn names_with_a_slash_are_spawned_as_written() {
        assert_eq!(resolve("./agent.sh"), PathBuf::from("./agent.sh"));
        assert_eq!(resolve("/bin/sh"), PathBuf::from("/bin/sh"));
    }
}
