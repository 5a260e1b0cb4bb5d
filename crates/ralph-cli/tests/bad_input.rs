//! Bad input ends ralph with a clear message and exit 2, never a panic (exit 101): arguments
//! that are not UTF-8, a reader that closes ralph's output, out-of-range options, programs that
//! cannot run.

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::process::{Output, Stdio};

use common::{Project, code, fake_agent, stderr};

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors, each owned exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

/// `ralph ARGS` with its stdout closed at once.
fn run_into_closed_pipe(p: &Project, args: &[&str]) -> Output {
    p.ralph(args)
        .stdin(Stdio::null())
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .expect("ralph runs")
}

fn not_utf8() -> &'static std::ffi::OsStr {
    std::ffi::OsStr::from_bytes(b"\xff")
}

#[test]
fn printing_commands_end_quietly_when_the_reader_is_gone() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "Do the work.\n");
    for args in [
        &["completions", "bash"][..],
        &["check"],
        &["run", "--dry-run"],
        &["init", "sub"],
    ] {
        let out = run_into_closed_pipe(&p, args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn watch_commands_end_quietly_when_the_reader_is_gone() {
    // A run whose log is larger than a pipe holds (64 KiB on Linux).
    let p = Project::new(&format!("agent: {} --bytes 300000", fake_agent()), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    for args in [
        &["logs"][..],
        &["logs", "-n", "1"],
        &["logs", "-f"],
        &["runs"],
        &["runs", "--json"],
        &["status"],
        &["status", "--json"],
        &["report", "-o", "report.html"],
    ] {
        let out = run_into_closed_pipe(&p, args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }

    // `ralph logs | head -1`: the reader takes a line and goes while ralph is still writing.
    let mut logs = p
        .ralph(&["logs"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ralph runs");
    let mut line = String::new();
    BufReader::new(logs.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("====="), "{line}");
    let out = logs.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_run_whose_output_reader_is_gone_keeps_its_promises() {
    // The terminal output stops; the loop runs to its end and its events are written whole.
    let p = Project::new(&format!("agent: {} --out hello", fake_agent()), "x\n");
    let out = run_into_closed_pipe(&p, &["run", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let ended = p.run_ended();
    assert_eq!(ended["iterations"], 2);

    // With the events on that stdout, the run's own copy under .ralph/runs/ is whole.
    let p = Project::new(&format!("agent: {} --out hello", fake_agent()), "x\n");
    let out = run_into_closed_pipe(&p, &["run", "-n", "2", "--events", "-"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let runs: Vec<_> = std::fs::read_dir(p.path().join(".ralph/runs"))
        .unwrap()
        .flatten()
        .collect();
    let copy = std::fs::read_to_string(runs[0].path().join("events.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(copy.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "RUN_ENDED");
    assert_eq!(last["iterations"], 2);
}

#[test]
fn a_path_that_is_not_utf8_is_a_missing_file_not_a_panic() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "x\n");
    for sub in ["run", "check"] {
        let out = p
            .ralph(&[sub])
            .arg(not_utf8())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{sub}: {}", stderr(&out));
        assert!(stderr(&out).contains("no such file"), "{}", stderr(&out));
    }
}

#[test]
fn a_user_value_that_is_not_utf8_is_named() {
    let p = Project::new(
        &format!("agent: {}\nargs: [dir]", fake_agent()),
        "{{ args.dir }}\n",
    );
    let mut named = std::ffi::OsString::from("--dir=");
    named.push(not_utf8());
    for (args, arg) in [
        (
            vec![std::ffi::OsString::from("."), not_utf8().into()],
            "dir",
        ),
        (vec![named], "--dir"),
        (vec!["--dir".into(), not_utf8().into()], "--dir"),
    ] {
        let out = p
            .ralph(&["run", "-n", "1"])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("argument {arg}: value is not valid UTF-8")),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(p.events().is_empty(), "nothing ran");
    }
}

#[test]
fn an_option_value_that_is_not_utf8_is_a_usage_error() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "x\n");
    let out = p
        .ralph(&["run", "-n"])
        .arg(not_utf8())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("for '--max-iterations <N>': value is not valid UTF-8"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn out_of_range_options_name_the_option_the_value_and_what_is_allowed() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "x\n");
    for (args, message) in [
        (
            &["-n", "-1"][..],
            "invalid value '-1' for '--max-iterations <N>': expected an integer >= 1, got \"-1\"",
        ),
        (
            &["-n", "99999999999999999999999"],
            "invalid value '99999999999999999999999' for '--max-iterations <N>': expected an \
             integer from 1 to 18446744073709551615, got \"99999999999999999999999\"",
        ),
        (
            &["-n", "abc"],
            "invalid value 'abc' for '--max-iterations <N>': expected an integer >= 1, got \"abc\"",
        ),
        (
            &["--delay", "-5s"],
            "invalid value '-5s' for '--delay <DURATION>': expected a duration >= 0, got \"-5s\"",
        ),
        (
            &["--delay", "99999999999999999999999"],
            "invalid value '99999999999999999999999' for '--delay <DURATION>': expected a \
             duration ralph can hold (at most 584942417355 years), got \"99999999999999999999999\"",
        ),
        (
            &["--timeout", "-1"],
            "invalid value '-1' for '--timeout <DURATION>': expected a duration > 0, got \"-1\"",
        ),
    ] {
        let out = p.run(&[&["run"][..], args].concat());
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        assert!(p.events().is_empty(), "nothing ran");
    }
}

fn write_script(p: &Project, name: &str, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let path = p.path().join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn an_agent_script_without_a_shebang_says_so() {
    let p = Project::new("agent: ./agent.sh", "x\n");
    write_script(&p, "agent.sh", "cat > /dev/null\n", 0o755);
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "cannot start the agent `./agent.sh`: it has no #! line; add one (e.g. `#!/bin/sh`) \
             or run it through its interpreter (`sh ./agent.sh`)"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(p.run_ended()["reason"], "agent_failed");
}

#[test]
fn a_command_script_without_a_shebang_says_so() {
    let p = Project::new(
        &format!(
            "agent: {}\ncommands:\n  - name: c\n    run: ./c.sh",
            fake_agent()
        ),
        "x\n",
    );
    write_script(&p, "c.sh", "echo hi\n", 0o755);
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "command c could not start: it has no #! line; add one (e.g. `#!/bin/sh`) or run it \
             through its interpreter (`sh ./c.sh`)"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_warns_about_a_command_script_without_a_shebang() {
    let p = Project::new(
        &format!(
            "agent: {}\ncommands:\n  - name: c\n    run: ./c.sh --all",
            fake_agent()
        ),
        "x\n",
    );
    write_script(&p, "c.sh", "echo hi\n", 0o755);
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "warning: RALPH.md:5:10: commands[0].run: `./c.sh` has no #! line, and a command \
             without shell syntax runs without a shell, so it would fail to start; add one \
             (e.g. `#!/bin/sh`) or write `sh ./c.sh`"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_agent_that_cannot_run_gets_a_word_for_why() {
    let p = Project::new("agent: ./agent.sh", "x\n");
    for (text, mode, message) in [
        (
            "#!/no/such/interpreter\n",
            0o755,
            "its #! interpreter `/no/such/interpreter` is not installed",
        ),
        (
            "#!/bin/sh\n",
            0o644,
            "permission denied: it is not executable (`chmod +x ./agent.sh`)",
        ),
    ] {
        write_script(&p, "agent.sh", text, mode);
        let out = p.run(&["run", "-n", "1"]);
        assert_eq!(code(&out), 1, "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("cannot start the agent `./agent.sh`: {message}")),
            "{}",
            stderr(&out)
        );
    }
}
