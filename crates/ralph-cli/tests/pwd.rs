//! Every process ralph starts runs with `PWD` naming the folder it runs in: the agent, the
//! commands, the checks and state hooks, in one loop and in each lane of `--parallel`. The
//! agents here are Python, which trusts `$PWD` as Node does (bash would quietly fix it).

use crate::common;

use std::path::Path;

use common::{Project, git, git_repo};

/// A Python program that appends `WHO <its $PWD>` to the file named by `PWD_LOG`.
const RECORD_PWD: &str = "import os, sys\n\
    with open(os.environ['PWD_LOG'], 'a') as log:\n\
    \x20   log.write(sys.argv[1] + ' ' + os.environ['PWD'] + '\\n')\n";

/// The Python interpreter itself: `python3` on `PATH` may be a shim that runs through bash (as
/// pyenv's does), which would fix `PWD` before Python sees it.
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The `WHO PWD` lines `log` holds.
fn recorded(log: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let (who, pwd) = line.split_once(' ').unwrap();
            (who.to_owned(), pwd.to_owned())
        })
        .collect()
}

#[test]
fn one_loop_started_with_a_stale_pwd_gives_every_process_its_real_folder() {
    // As `subprocess.run(["ralph", "run"], cwd=...)` or `make -C` start ralph: the process is
    // in the project but `PWD` still names where its parent was.
    let stale = tempfile::tempdir().unwrap();
    let log = tempfile::tempdir().unwrap();
    let log = log.path().join("pwd.log");
    let p = Project::new(
        &format!(
            "agent: {py} record.py agent\n\
             commands:\n  - name: where\n    run: {py} record.py command\n\
             done_when:\n  - {py} record.py check\n\
             states:\n  looked:\n    run: {py} record.py hook\n    then: continue\n\
             max_iterations: 2",
            py = python()
        ),
        "Look around.\n",
    );
    std::fs::write(
        p.path().join("record.py"),
        // The first iteration's agent declares a state (its hook runs); the second's is an
        // attempt, so the check runs.
        format!(
            "{RECORD_PWD}if sys.argv[1] == 'agent' and os.environ['RALPH_ITERATION'] == '1':\n\
             \x20   print('<!-- ralph:state looked -->')\n"
        ),
    )
    .unwrap();
    let out = p
        .ralph(&["run"])
        .env("PWD", stale.path())
        .env("PWD_LOG", &log)
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));

    let here = p.path().canonicalize().unwrap().display().to_string();
    let seen = recorded(&log);
    let who: Vec<&str> = seen.iter().map(|(w, _)| w.as_str()).collect();
    for expected in ["agent", "command", "check", "hook"] {
        assert!(who.contains(&expected), "{expected} ran: {seen:?}");
    }
    for (who, pwd) in &seen {
        assert_eq!(pwd, &here, "{who}'s PWD");
    }
}

#[test]
fn a_lanes_agent_and_checks_see_its_worktree_as_pwd_and_write_nothing_into_the_main_checkout() {
    let log = tempfile::tempdir().unwrap();
    let log = log.path().join("pwd.log");
    // The agent writes its work where `$PWD` says it is, as opencode does.
    let agent = format!(
        "{RECORD_PWD}import re\n\
         task = re.search(r'TASK=(\\S+)', sys.stdin.read()).group(1)\n\
         open(os.path.join(os.environ['PWD'], task + '.txt'), 'w').write('done\\n')\n"
    );
    let p = Project::new(
        &format!(
            "agent: {py} agent.py agent\n\
             done_when:\n  - {py} check.py check\n\
             tasks: {{markdown: TODO.md}}\n\
             failure: {{delay: 10ms, max_delay: 10ms}}\n\
             convergence: {{max_attempts: 2, backoff: 10ms, max_backoff: 10ms}}",
            py = python()
        ),
        "TASK={{ task.id }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.py"), agent).unwrap();
    // The check passes once the task's file is in the folder it runs in, by its `$PWD`.
    std::fs::write(
        dir.join("check.py"),
        format!(
            "{RECORD_PWD}import glob\n\
             sys.exit(0 if glob.glob(os.path.join(os.environ['PWD'], '*.txt')) else 1)\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("TODO.md"), "- [ ] first\n- [ ] second\n").unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    git_repo(dir);

    let out = p
        .ralph(&["run", "--parallel", "2"])
        .env("PWD", dir)
        .env("PWD_LOG", &log)
        .output()
        .unwrap();
    assert_eq!(
        common::code(&out),
        0,
        "{}\n{:?}",
        common::stderr(&out),
        recorded(&log)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("TODO.md")).unwrap(),
        "- [x] first\n- [x] second\n"
    );
    assert_eq!(git(dir, &["status", "--porcelain"]), "", "nothing stray");

    let worktrees = dir.canonicalize().unwrap().join(".ralph/worktrees");
    let seen = recorded(&log);
    assert!(seen.iter().any(|(who, _)| who == "agent"), "{seen:?}");
    for (who, pwd) in &seen {
        let pwd = Path::new(pwd);
        match who.as_str() {
            // A lane's agent and its loop's checks run in its worktree.
            "agent" => assert_eq!(pwd.parent(), Some(worktrees.as_path()), "{seen:?}"),
            // The merge queue checks what lands in a worktree too, never in the main checkout.
            _ => assert!(pwd.starts_with(&worktrees), "{who} in {}", pwd.display()),
        }
    }
}
