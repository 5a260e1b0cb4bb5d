//! No process outlives the loop: not when ralph is killed (any signal, SIGKILL included), and on
//! Linux not a daemon the agent started in a session of its own.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Project, code, send_signal, wait_for_pid};

/// Whether `pid` is a live process (a zombie waiting for its reaper is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        state != Some('Z')
    })
}

/// Live processes of process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let fields: Vec<&str> = stat
                    .rsplit_once(") ")
                    .map(|(_, rest)| rest.split_whitespace().collect())
                    .unwrap_or_default();
                fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
            })
        })
        .collect()
}

/// Waits until `path` exists and is not empty.
fn wait_for_beat(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(path).map_or(0, |m| m.len()) == 0 {
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether a heartbeat file still grows over a few beats.
fn still_beating(path: &Path) -> bool {
    let before = std::fs::metadata(path).map_or(0, |m| m.len());
    std::thread::sleep(Duration::from_millis(300));
    std::fs::metadata(path).map_or(0, |m| m.len()) != before
}

/// Kills what a failed test left behind, so it does not edit the next test's files forever.
struct Cleanup(Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for &pid in &self.0 {
            // SAFETY: kill(2) only sends a signal.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// An agent that starts a background grandchild in its own process group; both beat into a
/// file every 50 ms, forever.
const GROUP_AGENT: &str = "cat > /dev/null
(while :; do date >> beat-child; sleep 0.05; done) &
echo $$ > agent.pid
while :; do date >> beat-agent; sleep 0.05; done
";

#[test]
fn killing_ralph_by_any_signal_ends_the_agents_whole_process_group_within_a_second() {
    // SIGKILL cannot be caught; SIGUSR1 ends ralph too without its handling a thing. On a
    // pseudo-terminal the agent leads a session of its own: the same holds.
    for (signal, mode) in [
        (libc::SIGKILL, None),
        (libc::SIGUSR1, None),
        (libc::SIGKILL, Some("--pty")),
    ] {
        let p = Project::new("agent: sh agent.sh", "x\n");
        std::fs::write(p.path().join("agent.sh"), GROUP_AGENT).unwrap();
        let mut args = vec!["run", "-n", "1"];
        args.extend(mode);
        let mut ralph = p.spawn(&args);
        let agent = wait_for_pid(&p.path().join("agent.pid")) as i32;
        let _cleanup = Cleanup(vec![agent]);
        wait_for_beat(&p.path().join("beat-agent"));
        wait_for_beat(&p.path().join("beat-child"));
        assert!(group_members(agent).len() >= 2, "agent and grandchild run");

        send_signal(ralph.id(), signal);
        let status = ralph.wait().unwrap();
        assert!(status.code().is_none(), "ralph ended by the signal");
        let deadline = Instant::now() + Duration::from_secs(1);
        while !group_members(agent).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            group_members(agent),
            Vec::<i32>::new(),
            "signal {signal} {mode:?}: the agent's group outlived ralph by a second"
        );
        assert!(!still_beating(&p.path().join("beat-agent")));
        assert!(!still_beating(&p.path().join("beat-child")));
    }
}

#[test]
fn a_ralph_that_ends_normally_leaves_no_watchdog_behind() {
    let p = Project::new(
        &format!("agent: '{} --out done'", common::fake_agent()),
        "x\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0);
    // The watchdog is a fork of ralph: its command line is ralph's, which names this
    // project's events file.
    let events = p.events_path().display().to_string();
    assert!(
        !common::process_running(&events),
        "a process of ralph's is left"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_daemon_the_agent_started_in_its_own_session_ends_with_the_iteration() {
    // Iteration 1 starts the daemon and exits; iteration 2 records whether it still runs.
    let p = Project::new("agent: sh agent.sh", "x\n");
    std::fs::write(
        p.path().join("agent.sh"),
        "cat > /dev/null
if [ ! -f daemon.pid ]; then
  setsid sh -c 'echo $$ > daemon.pid; while :; do date >> beat; sleep 0.05; done' \
    </dev/null >/dev/null 2>&1 &
  while [ ! -s daemon.pid ]; do sleep 0.01; done
  sleep 0.2
else
  if kill -0 \"$(cat daemon.pid)\" 2>/dev/null; then echo alive; else echo gone; fi > seen
fi
",
    )
    .unwrap();
    let out = p.run(&["run", "-n", "2"]);
    let daemon = wait_for_pid(&p.path().join("daemon.pid")) as i32;
    let _cleanup = Cleanup(vec![daemon]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(p.path().join("seen"))
            .unwrap()
            .trim(),
        "gone",
        "the daemon outlived the iteration that started it"
    );
    assert!(!alive(daemon), "the daemon outlived ralph");
    assert!(!still_beating(&p.path().join("beat")));
    // Every sink hears why the daemon is gone, not only the terminal.
    let warnings = p.events_of("WARNING");
    assert!(
        warnings.iter().any(|w| w["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("ended what the iteration left running"))),
        "{warnings:?}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_daemon_that_ignores_sigterm_ends_when_ralph_is_killed_during_its_grace() {
    // The daemon leaves the agent's session and drops ralph's environment (its token with
    // it): only being handed to the watchdog reaches it. It notes the SIGTERM that starts its
    // grace, and goes on.
    let p = Project::new("agent: sh agent.sh", "x\n");
    std::fs::write(
        p.path().join("agent.sh"),
        "cat > /dev/null
setsid env -i /bin/sh -c 'trap \"echo termed > termed\" TERM; echo $$ > daemon.pid
  while :; do echo beat >> beat; /bin/sleep 0.05; done' </dev/null >/dev/null 2>&1 &
while [ ! -s daemon.pid ]; do sleep 0.01; done
",
    )
    .unwrap();
    let mut ralph = p.spawn(&["run", "-n", "1"]);
    let daemon = wait_for_pid(&p.path().join("daemon.pid")) as i32;
    let _cleanup = Cleanup(vec![daemon]);
    wait_for_beat(&p.path().join("termed"));
    send_signal(ralph.id(), libc::SIGKILL);
    ralph.wait().unwrap();

    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(daemon) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !alive(daemon),
        "the daemon outlived ralph, killed in its grace"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_daemon_in_a_session_of_its_own_ends_when_ralph_is_killed_mid_iteration() {
    // The daemon left the agent's group (beyond the group kill) but kept its environment:
    // the run's token in it is how the watchdog finds it.
    let p = Project::new("agent: sh agent.sh", "x\n");
    std::fs::write(
        p.path().join("agent.sh"),
        "cat > /dev/null
setsid sh -c 'echo $$ > daemon.pid; while :; do date >> beat; sleep 0.05; done' \
  </dev/null >/dev/null 2>&1 &
echo $$ > agent.pid
while :; do sleep 0.05; done
",
    )
    .unwrap();
    let mut ralph = p.spawn(&["run", "-n", "1"]);
    let daemon = wait_for_pid(&p.path().join("daemon.pid")) as i32;
    let agent = wait_for_pid(&p.path().join("agent.pid")) as i32;
    let _cleanup = Cleanup(vec![daemon, agent]);
    wait_for_beat(&p.path().join("beat"));
    send_signal(ralph.id(), libc::SIGKILL);
    ralph.wait().unwrap();

    let deadline = Instant::now() + Duration::from_secs(5);
    while (alive(daemon) || alive(agent)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(agent), "the agent outlived ralph");
    assert!(!alive(daemon), "the daemon outlived ralph");
    assert!(!still_beating(&p.path().join("beat")));
}
