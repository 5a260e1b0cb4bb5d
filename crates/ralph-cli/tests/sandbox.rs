//! Issue 38: the sandbox, through the real binary on this machine's kernel (Landlock with its
//! network rules). A script agent tries everything the sandbox forbids and writes down what
//! it could do; the test reads that and the run's events.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;

use common::Project;

/// A local HTTP server answering `200 ok` to every connection, until the test ends.
fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    port
}

/// The lines `name: value` the agent wrote to `results.txt`.
fn results(p: &Project) -> String {
    std::fs::read_to_string(p.path().join("results.txt")).unwrap_or_default()
}

/// A home with an SSH key, a cloud credential and a readable project beside them.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    for (path, text) in [
        (".ssh/id_ed25519", "PRIVATE KEY"),
        (".aws/credentials", "aws_secret_access_key = x"),
        ("code/readme.txt", "readable"),
        ("clients/acme/plan.txt", "confidential"),
    ] {
        let path = home.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    home
}

/// `name: ok` when `command` succeeds in the agent, `name: refused` otherwise.
fn attempt(name: &str, command: &str) -> String {
    format!(
        "if {command} >/dev/null 2>&1; then echo '{name}: ok'; else echo '{name}: refused'; fi >> results.txt\n"
    )
}

fn agent_script(home: &Path, other: &Path, allowed: u16, denied: u16) -> String {
    let (home, other) = (home.display(), other.display());
    let mut script = String::from("#!/bin/sh\ncat >/dev/null\n");
    script += &attempt("own folder", "sh -c 'echo made > made.txt'");
    script += &attempt("temp folder", "sh -c 'echo x > \"$TMPDIR/t\"'");
    script += &attempt(
        "other folder",
        &format!("sh -c 'echo x > {other}/intruder.txt'"),
    );
    script += &attempt(
        "system tmp",
        "sh -c 'echo x > /tmp/ralph-sandbox-intruder.txt'",
    );
    script += &attempt("ssh key", &format!("cat {home}/.ssh/id_ed25519"));
    script += &attempt("ssh folder", &format!("ls {home}/.ssh"));
    script += &attempt("aws", &format!("cat {home}/.aws/credentials"));
    script += &attempt(
        "denied folder",
        &format!("cat {home}/clients/acme/plan.txt"),
    );
    script += &attempt("home project", &format!("cat {home}/code/readme.txt"));
    script += &attempt("system file", "cat /etc/hostname");
    script += "echo \"github token: ${GITHUB_TOKEN:-none}\" >> results.txt\n";
    script += "echo \"npm token: ${NPM_TOKEN:-none}\" >> results.txt\n";
    script += "echo \"aws key: ${AWS_SECRET_ACCESS_KEY:-none}\" >> results.txt\n";
    script += "echo \"no_proxy: ${NO_PROXY:-none}\" >> results.txt\n";
    script += &format!(
        "echo \"allowed host: $(curl -s -m 10 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{allowed}/)\" >> results.txt\n"
    );
    script += &format!(
        "echo \"denied host: $(curl -s -m 10 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{denied}/)\" >> results.txt\n"
    );
    script += &attempt(
        "direct connection",
        &format!("curl -s -m 10 --noproxy '*' http://127.0.0.1:{denied}/"),
    );
    script
}

#[test]
fn a_sandboxed_agent_writes_only_its_folder_reads_no_secret_and_reaches_only_its_host() {
    let home = home();
    let other = tempfile::tempdir().unwrap();
    let (allowed, denied) = (http_server(), http_server());
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\nmax_iterations: 1\nsandbox:\n  network: [\"127.0.0.1:{allowed}\"]\n  \
             deny_read: [~/clients/acme]\n  env: [NPM_TOKEN]"
        ),
        "Try everything.\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        agent_script(home.path(), other.path(), allowed, denied),
    )
    .unwrap();
    let out = p
        .ralph(&["run"])
        .env("HOME", home.path())
        .env("GITHUB_TOKEN", "ghp_secret")
        .env("NPM_TOKEN", "npm_passed")
        .env("AWS_SECRET_ACCESS_KEY", "aws_secret")
        .env("NO_PROXY", "127.0.0.1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let results = results(&p);
    for line in [
        "own folder: ok",
        "temp folder: ok",
        "other folder: refused",
        "system tmp: refused",
        "ssh key: refused",
        "ssh folder: refused",
        "aws: refused",
        "denied folder: refused",
        "home project: ok",
        "system file: ok",
        "github token: none",
        "npm token: npm_passed",
        "aws key: none",
        "no_proxy: none",
        "allowed host: 200",
        "denied host: 403",
        "direct connection: refused",
    ] {
        assert!(
            results.lines().any(|l| l == line),
            "{line:?} in:\n{results}"
        );
    }
    assert!(!other.path().join("intruder.txt").exists());
    let denials = p.events_of("SANDBOX_DENIED");
    assert_eq!(denials.len(), 1, "{denials:#?}");
    assert_eq!(denials[0]["host"], "127.0.0.1");
    assert_eq!(denials[0]["port"], denied);
    assert_eq!(denials[0]["iteration"], 1);
    let terminal = common::stdout(&out);
    assert!(
        terminal.contains(&format!("sandbox: denied 127.0.0.1:{denied}")),
        "{terminal}"
    );
    let logs = common::stdout(&p.run(&["logs"]));
    assert!(
        logs.contains(&format!(
            "sandbox: denied 127.0.0.1:{denied} (not in sandbox.network)"
        )),
        "{logs}"
    );
    let status = common::stdout(&p.run(&["status"]));
    assert!(
        status.contains(&format!(
            "sandbox: denied 1 connection (last: 127.0.0.1:{denied})"
        )),
        "{status}"
    );
    let out = p.run(&["report", "-o", "report.html"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let report = std::fs::read_to_string(p.path().join("report.html")).unwrap();
    assert!(
        report.contains(&format!("sandbox denied 127.0.0.1:{denied}")),
        "the report names the denied connection"
    );
}

#[test]
fn without_the_sandbox_the_same_agent_can_do_everything() {
    let home = home();
    let other = tempfile::tempdir().unwrap();
    let (allowed, denied) = (http_server(), http_server());
    let p = Project::new(
        "agent: sh agent.sh\nmax_iterations: 1\nsandbox: true",
        "Try everything.\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        agent_script(home.path(), other.path(), allowed, denied),
    )
    .unwrap();
    let out = p
        .ralph(&["run", "--no-sandbox"])
        .env("HOME", home.path())
        .env("GITHUB_TOKEN", "ghp_secret")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let results = results(&p);
    for line in ["other folder: ok", "ssh key: ok", "direct connection: ok"] {
        assert!(
            results.lines().any(|l| l == line),
            "{line:?} in:\n{results}"
        );
    }
    let _ = std::fs::remove_file("/tmp/ralph-sandbox-intruder.txt");
}

#[test]
fn network_none_reaches_nothing_and_the_flag_turns_the_sandbox_on() {
    let port = http_server();
    let p = Project::new("agent: sh agent.sh\nmax_iterations: 1", "Connect.\n");
    let script = format!(
        "#!/bin/sh\ncat >/dev/null\n{}",
        attempt(
            "direct",
            &format!("curl -s -m 10 --noproxy '*' http://127.0.0.1:{port}/")
        )
    );
    std::fs::write(p.path().join("agent.sh"), script).unwrap();
    let out = p.run(&["run", "--sandbox"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(results(&p), "direct: refused\n");
}

#[test]
fn check_and_dry_run_print_the_policy_this_machine_enforces() {
    let p = Project::new(
        "agent: claude -p\nsandbox:\n  network: [\"127.0.0.1:9\"]\n  write: [/opt]",
        "Work.\n",
    );
    let out = p.run(&["check"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let text = common::stdout(&out);
    let abi = ralph_abi();
    assert!(
        text.contains(&format!("sandbox         Landlock ABI {abi} found")),
        "{text}"
    );
    assert!(text.contains("writes (enforced): only "), "{text}");
    assert!(text.contains("~/.ssh"), "{text}");
    assert!(
        text.contains(
            "network (enforced): only api.anthropic.com, 127.0.0.1:9 through ralph's proxy"
        ),
        "{text}"
    );
    assert!(text.contains("not enforced: UDP"), "{text}");
    let out = p.run(&["run", "--dry-run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let text = common::stderr(&out);
    assert!(
        text.contains(&format!("dry run: sandbox: Landlock ABI {abi} found")),
        "{text}"
    );
    let out = p.run(&["run", "--dry-run", "--no-sandbox"]);
    assert!(
        common::stderr(&out).contains("dry run: sandbox: off"),
        "{}",
        common::stderr(&out)
    );
}

/// This kernel's Landlock ABI, as its man page says to ask for it.
fn ralph_abi() -> i64 {
    // SAFETY: with a null attribute and size 0 the call only returns the version.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    }
}

/// Issue 38: a lane of a parallel run writes its own worktree, never the main checkout nor
/// another lane's worktree.
#[test]
fn a_parallel_lane_cannot_write_the_main_checkout_or_another_lanes_worktree() {
    let agent = format!(
        "{}main=$(dirname \"$(git rev-parse --path-format=absolute --git-common-dir)\")\n\
         here=$(pwd -P)\n\
         # Both lanes exist at once before either tries the other's.\n\
         n=0; while [ $(ls \"$main/.ralph/worktrees\" | wc -l) -lt 2 ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done\n\
         r=\"$story.results\"\n\
         {}{}{}\
         echo \"done $story\" > \"$story.txt\"\n",
        common::parallel::READ_PROMPT,
        attempt_to(
            "$r",
            "own worktree",
            "sh -c 'echo x > own.tmp && rm own.tmp'"
        ),
        attempt_to(
            "$r",
            "main checkout",
            "sh -c \"echo x > '$main/intruder-$story.txt'\""
        ),
        attempt_to(
            "$r",
            "other lane",
            "sh -c 'for w in \"$0\"/.ralph/worktrees/*; do [ \"$(cd \"$w\" && pwd -P)\" = \"$1\" ] && continue; echo x > \"$w/intruder.txt\" || exit 1; done' \"$main\" \"$here\""
        ),
    );
    let p = common::parallel::repo(
        &agent,
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    let out = p.run(&["run", "--parallel", "2", "--sandbox"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    for id in ["US-001", "US-002"] {
        let results = std::fs::read_to_string(p.path().join(format!("{id}.results"))).unwrap();
        for line in [
            "own worktree: ok",
            "main checkout: refused",
            "other lane: refused",
        ] {
            assert!(
                results.lines().any(|l| l == line),
                "{id}: {line:?} in:\n{results}"
            );
        }
        assert!(!p.path().join(format!("intruder-{id}.txt")).exists());
        assert!(common::show(p.path(), "HEAD", "intruder.txt").is_none());
    }
}

/// `attempt`, written to the file `results` names (a shell word).
fn attempt_to(results: &str, name: &str, command: &str) -> String {
    format!(
        "if {command} >/dev/null 2>&1; then echo '{name}: ok'; else echo '{name}: refused'; fi >> \"{results}\"\n"
    )
}

/// Issue 38: the commands, the `done_when` checks and an agent on a terminal are confined too.
#[test]
fn commands_checks_and_a_pty_agent_are_confined_too() {
    let other = tempfile::tempdir().unwrap();
    let o = other.path().display();
    let p = Project::new(
        &format!(
            "agent: sh agent.sh\nmax_iterations: 1\nsandbox: true\ncommands:\n  - name: c\n    \
             run: sh -c 'echo x > {o}/command.txt; echo x > command.txt'\n\
             done_when:\n  - sh -c 'echo x > {o}/check.txt; echo x > check.txt; false'\n\
             convergence: {{max_attempts: 1}}"
        ),
        "{{ commands.c }}\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        format!("echo x > {o}/agent.txt; echo x > agent.txt\n"),
    )
    .unwrap();
    let out = p.run(&["run", "--pty"]);
    assert!(
        p.events_of("RUN_ENDED").len() == 1,
        "{}",
        common::stderr(&out)
    );
    for name in ["command.txt", "check.txt", "agent.txt"] {
        assert!(p.path().join(name).exists(), "{name} in the loop's folder");
        assert!(!other.path().join(name).exists(), "{name} elsewhere");
    }
}
