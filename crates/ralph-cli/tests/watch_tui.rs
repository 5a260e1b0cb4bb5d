//! `ralph watch`: the full-screen view, driven once end to end in a real terminal (a tmux
//! pane), and its refusals. The view's layouts are pinned by snapshots in `src/watch/view.rs`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Project, code, stderr};

/// A private tmux server (its own socket), killed with everything in it when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// `None` when tmux is not installed.
    fn start(dir: &Path) -> Option<Self> {
        let found = Command::new("tmux").arg("-V").output();
        if !found.is_ok_and(|o| o.status.success()) {
            return None;
        }
        Some(Self {
            socket: dir.join("tmux.sock"),
        })
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .expect("tmux runs")
    }

    /// What the pane shows now.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "watch"]).stdout)
            .into_owned()
    }

    /// Waits (20 s at most) until the pane shows `what`.
    fn wait_for(&self, what: impl Fn(&str) -> bool, description: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if what(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the pane never showed {description}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

#[test]
#[allow(clippy::print_stderr)] // the skip says why
fn watch_waits_for_the_run_shows_its_iteration_and_q_leaves_while_the_run_goes_on() {
    let p = Project::new("agent: sh agent.sh", "Go on.\n");
    // Each iteration says which it is, then works until the test lets it finish.
    std::fs::write(
        p.path().join("agent.sh"),
        "echo \"working on iteration $RALPH_ITERATION\"\n\
         while [ ! -e release ]; do sleep 0.05; done\n",
    )
    .unwrap();
    let Some(tmux) = Tmux::start(p.path()) else {
        eprintln!("skipped: tmux is not installed (.ci/run installs it where apt-get can)");
        return;
    };
    // Started before the run: it waits for one.
    let command = format!(
        "{} watch; echo \"watch exited $?\"; sleep 600",
        env!("CARGO_BIN_EXE_ralph")
    );
    let dir = p.path().display().to_string();
    let started = tmux.tmux(&[
        "new-session",
        "-d",
        "-s",
        "watch",
        "-x",
        "100",
        "-y",
        "30",
        "-c",
        &dir,
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    tmux.wait_for(
        |s| s.contains("waiting for a run"),
        "that it waits for a run",
    );

    let mut run = p.spawn(&["run", "-n", "2"]);
    p.wait_for("ITERATION_STARTED", 1);
    let run_id = p.events_of("RUN_STARTED")[0]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let screen = tmux.wait_for(
        |s| s.contains("working on iteration 1") && s.contains(&run_id),
        "the run and its first iteration's log",
    );
    let row = screen
        .lines()
        .find(|l| l.contains("› loop"))
        .unwrap_or_else(|| panic!("a row for the loop:\n{screen}"));
    let words: Vec<&str> = row.split_whitespace().collect();
    assert!(
        words.windows(2).any(|w| w == ["1", "working"]),
        "the loop's row shows iteration 1, working: {row}"
    );
    assert!(screen.contains("q quit (the run goes on)"), "{screen}");

    tmux.tmux(&["send-keys", "-t", "watch", "q"]);
    tmux.wait_for(|s| s.contains("watch exited 0"), "that watch exited, 0");
    assert!(
        run.try_wait().unwrap().is_none(),
        "the run goes on after watch left"
    );
    assert!(p.events_of("RUN_ENDED").is_empty());

    std::fs::write(p.path().join("release"), "").unwrap();
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(p.run_ended()["iterations"], 2);
}

#[test]
fn watch_refuses_a_run_id_that_names_no_run_with_exit_1() {
    let p = Project::new("agent: sh -c true", "Go.\n");
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    let out = p.run(&["watch", "nosuchrun"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("no run nosuchrun"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn watch_without_a_terminal_says_what_to_use_instead_with_exit_1() {
    let p = Project::new("agent: sh -c true", "Go.\n");
    let out = p.run(&["watch"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("ralph logs -f"), "{}", stderr(&out));
}

#[test]
#[allow(clippy::print_stderr)] // the skip says why
fn a_signal_ends_watch_with_the_terminal_put_back() {
    let p = Project::new("agent: sh -c true", "Go.\n");
    let Some(tmux) = Tmux::start(p.path()) else {
        eprintln!("skipped: tmux is not installed (.ci/run installs it where apt-get can)");
        return;
    };
    // The pane stays after watch is gone: its exit status, and what the terminal shows then.
    let command = format!("exec {} watch", env!("CARGO_BIN_EXE_ralph"));
    let dir = p.path().display().to_string();
    let started = tmux.tmux(&[
        "start-server",
        ";",
        "set-option",
        "-g",
        "remain-on-exit",
        "on",
        ";",
        "new-session",
        "-d",
        "-s",
        "watch",
        "-x",
        "100",
        "-y",
        "30",
        "-c",
        &dir,
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    tmux.wait_for(
        |s| s.contains("waiting for a run"),
        "that it waits for a run",
    );
    let pane = |format: &str| {
        String::from_utf8_lossy(&tmux.tmux(&["display", "-p", "-t", "watch", format]).stdout)
            .trim()
            .to_owned()
    };
    let pid: i32 = pane("#{pane_pid}").parse().unwrap();
    common::send_signal(u32::try_from(pid).unwrap(), libc::SIGTERM);
    // tmux marks the pane dead when its terminal closes, and sometimes leaves the process a
    // zombie it has not reaped (tmux 3.3): its exit status is then read from the kernel.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let tmux_status = pane("#{pane_dead} #{pane_dead_status}");
        if let Some(status) = tmux_status.strip_prefix("1 ") {
            break status.to_owned();
        }
        if let Some(status) = zombie_exit_status(pid) {
            break status.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "watch did not end on SIGTERM: {tmux_status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status, "143");
    let screen = tmux.screen();
    assert!(
        !screen.contains("waiting for a run"),
        "the view's screen is gone, the terminal's own is back:\n{screen}"
    );
}

/// The exit status of `pid` if it has exited and is not reaped yet (`/proc/PID/stat`'s
/// `exit_code`, in `waitpid`'s encoding); `None` while it runs, or if a signal ended it.
fn zombie_exit_status(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's name, which may hold spaces: state is field 3,
    // exit_code field 52.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    if fields.first() != Some(&"Z") {
        return None;
    }
    let code: i32 = fields.get(49)?.parse().ok()?;
    (code & 0x7f == 0).then_some((code >> 8) & 0xff)
}
