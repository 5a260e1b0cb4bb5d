//! PTY mode: agents on a pseudo-terminal, the idle-timeout matrix, interactive input and
//! Ctrl+C, markers behind escape sequences, and ralph's own terminal put back on every exit.

use crate::common;

use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Project, code, fake_agent, process_running, send_signal, wait_for_pid};
use serde_json::{Value, json};

fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("ralph exits with a code");
        }
        assert!(Instant::now() < deadline, "ralph did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn terminations(p: &Project) -> Vec<Value> {
    p.events_of("ITERATION_ENDED")
        .into_iter()
        .map(|e| e["termination"].clone())
        .collect()
}

/// `ralph run ARGS` with a terminal of its own (the test holds the other side), as a user at a
/// keyboard would run it.
struct RalphInPty {
    child: Child,
    pty: Arc<pty_process::blocking::Pty>,
    /// Everything ralph wrote to its terminal; read continuously so ralph never blocks on it.
    screen: Arc<Mutex<Vec<u8>>>,
}

impl RalphInPty {
    fn spawn(p: &Project, args: &[&str], rows: u16, cols: u16) -> Self {
        let (pty, pts) = pty_process::blocking::open().expect("a pty");
        pty.resize(pty_process::Size::new(rows, cols)).unwrap();
        let child = pty_process::blocking::Command::new(env!("CARGO_BIN_EXE_ralph"))
            .current_dir(p.path())
            .env_remove("NO_COLOR")
            .arg("run")
            .arg("--events")
            .arg(p.events_path())
            .args(args)
            .spawn(pts)
            .expect("ralph starts");
        let pty = Arc::new(pty);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let (reader, sink) = (Arc::clone(&pty), Arc::clone(&screen));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once ralph and everything it started have closed the terminal.
            while let Ok(n @ 1..) = (&*reader).read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self { child, pty, screen }
    }

    fn type_bytes(&self, bytes: &[u8]) {
        (&*self.pty).write_all(bytes).unwrap();
    }

    /// ralph's terminal settings as they are now.
    fn termios(&self) -> libc::termios {
        use std::os::fd::AsRawFd;
        // SAFETY: tcgetattr fills in the plain-data struct; on Linux, asked on the controlling
        // side it reports the settings of ralph's side.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(self.pty.as_raw_fd(), &mut t), 0);
            t
        }
    }

    fn is_raw(&self) -> bool {
        self.termios().c_lflag & (libc::ICANON | libc::ECHO | libc::ISIG) == 0
    }

    fn is_cooked(&self) -> bool {
        let lflag = self.termios().c_lflag;
        lflag & libc::ICANON != 0 && lflag & libc::ECHO != 0 && lflag & libc::ISIG != 0
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }
}

#[test]
fn autonomous_idle_timeout_stops_the_loop_with_exit_1_and_leaves_no_process() {
    let marker = "31.2718";
    let p = Project::new(
        &format!(
            "agent: '{} --out working --grandchild {marker} --sleep 30'\npty: {{idle_timeout: 200ms}}",
            fake_agent()
        ),
        "x\n",
    );
    let started = Instant::now();
    let out = p.run(&["run", "-n", "3"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(terminations(&p), [json!("idle_timeout")]);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "pty_idle_timeout");
    assert_eq!(ended["exit_code"], 1);
    assert!(
        !process_running(&format!("sleep {marker}")),
        "a process of the agent's group was left behind"
    );
}

#[test]
fn interactive_idle_timeout_completes_the_iteration_and_the_next_starts() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker working --sleep 30'\npty: {{mode: interactive, idle_timeout: 200ms}}",
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 2);
    for e in &ended {
        assert_eq!(e["termination"], "idle_timeout");
        // The output was processed: its marker counts.
        assert_eq!(e["state"], "working");
    }
    assert_eq!(p.run_ended()["reason"], "max_iterations");
}

#[test]
fn idle_timeout_flags_on_the_command_line_turn_pty_mode_on() {
    let p = Project::new(
        &format!("agent: '{} --marker working --sleep 30'", fake_agent()),
        "x\n",
    );
    let out = p.run(&["run", "-n", "2", "-i", "--idle-timeout", "200ms"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        terminations(&p),
        [json!("idle_timeout"), json!("idle_timeout")]
    );

    let out = p.run(&["run", "-n", "2", "--pty", "--idle-timeout", "200ms"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "pty_idle_timeout");
}

#[test]
fn an_agent_that_exits_by_itself_lets_the_loop_go_on() {
    for mode in ["autonomous", "interactive"] {
        let p = Project::new(
            &format!(
                "agent: '{} --marker working'\npty: {{mode: {mode}, idle_timeout: 5s}}",
                fake_agent()
            ),
            "x\n",
        );
        let out = p.run(&["run", "-n", "2"]);
        assert_eq!(code(&out), 0, "{mode}: {}", common::stderr(&out));
        assert_eq!(terminations(&p), [json!("natural"), json!("natural")]);
        assert_eq!(p.run_ended()["reason"], "max_iterations");
    }
}

#[test]
fn an_agent_killed_by_someone_else_stops_the_loop_as_interrupted() {
    let p = Project::new(
        &format!(
            "agent: '{} --pid-file agent.pid --sleep 30'\npty: {{idle_timeout: 20s}}",
            fake_agent()
        ),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "3"]);
    let pid = wait_for_pid(&p.path().join("agent.pid"));
    send_signal(pid, libc::SIGKILL);
    assert_eq!(wait_exit(&mut child), 130);
    assert_eq!(terminations(&p), [json!("killed")]);
    assert_eq!(p.run_ended()["reason"], "interrupted");
}

#[test]
fn a_marker_split_by_ansi_codes_is_still_found() {
    let p = Project::new(
        &format!(
            r#"agent: '{} --printf "<!-- ralph:\033[1mstate\033[0m \033[32mdone\033[0m -->\n"'
pty: {{}}"#,
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.events_of("ITERATION_ENDED")[0]["state"], "done");
}

#[test]
fn the_agent_sees_a_terminal_of_80x24_when_ralph_has_none() {
    let p = Project::new(
        &format!("agent: '{} --tty'\npty: {{}}", fake_agent()),
        "x\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(
        ended["markers"][0]["attrs"],
        json!([["stdin", "yes"], ["stdout", "yes"], ["size", "24 80"]])
    );
    assert_eq!(ended["termination"], "natural");
}

#[test]
fn without_pty_the_agent_sees_pipes() {
    let p = Project::new(&format!("agent: '{} --tty'", fake_agent()), "x\n");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["markers"][0]["attrs"],
        json!([["stdin", "no"], ["stdout", "no"], ["size", "none"]])
    );
}

#[test]
fn the_agent_terminal_has_the_size_of_ralph_terminal() {
    let p = Project::new(
        &format!("agent: '{} --tty'\npty: {{}}", fake_agent()),
        "x\n",
    );
    let mut ralph = RalphInPty::spawn(&p, &["-n", "1"], 30, 100);
    assert_eq!(wait_exit(&mut ralph.child), 0, "{}", ralph.screen());
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["markers"][0]["attrs"][2],
        json!(["size", "30 100"])
    );
}

#[test]
fn the_agent_terminal_is_resized_with_ralph_terminal() {
    let p = Project::new(
        &format!("agent: '{} --sleep 1.5 --tty'\npty: {{}}", fake_agent()),
        "x\n",
    );
    let mut ralph = RalphInPty::spawn(&p, &["-n", "1"], 24, 80);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(300));
    // The kernel sends ralph SIGWINCH, as a terminal window being resized does.
    ralph.pty.resize(pty_process::Size::new(40, 120)).unwrap();
    assert_eq!(wait_exit(&mut ralph.child), 0, "{}", ralph.screen());
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["markers"][0]["attrs"][2],
        json!(["size", "40 120"])
    );
}

#[test]
fn a_typed_prompt_is_not_echoed_back_into_the_output() {
    // The prompt is typed into the agent's terminal (no {prompt} placeholder); were it echoed,
    // the marker it mentions would count as the agent's.
    let p = Project::new(
        &format!(
            "agent: '{} --sleep 0.3 --marker done'\npty: {{}}",
            fake_agent()
        ),
        "End with <!-- ralph:state echoed --> when done.\n",
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["markers"],
        json!([{"kind": "state", "name": "done"}])
    );
}

#[test]
fn a_typed_prompt_reaches_the_agent_as_a_pipe_would_give_it() {
    // A line longer than a terminal's 4095-byte line buffer, command output with CRLF line
    // ends, and control bytes the terminal's line editing would act on (Ctrl+C, Ctrl+U, DEL,
    // Ctrl+D, Ctrl+Z).
    let long = "A".repeat(10_000);
    let body = format!(
        "{long}\n{{{{ commands.crlf }}}}\nkeys \u{3}\u{15}\u{7f}\u{4}\u{1a} end\nlast line\n"
    );
    let saved = |pty: &str| {
        let p = Project::new(
            &format!(
                "agent: '{} --save-prompt got.txt'\ncommands:\n  - name: crlf\n    \
                 run: printf 'dos\\r\\nline\\r\\n'\n{pty}",
                fake_agent()
            ),
            &body,
        );
        let out = p.run(&["run", "-n", "1", "--timeout", "20s"]);
        assert_eq!(code(&out), 0, "{}", common::stderr(&out));
        String::from_utf8(std::fs::read(p.path().join("got.txt")).unwrap()).unwrap()
    };
    let piped = saved("");
    assert!(piped.starts_with(&format!("{long}\n")), "{piped:?}");
    assert!(piped.contains("dos\r\nline\n"), "{piped:?}");
    assert!(piped.contains("keys \u{3}\u{15}\u{7f}\u{4}\u{1a} end\nlast line\n"));
    assert_eq!(saved("pty: {}"), piped);
}

#[test]
fn interactive_mode_forwards_standard_input_that_is_not_a_terminal() {
    let p = Project::new(
        &format!(
            "agent: '{} --read-state --read-state'\npty: {{mode: interactive, idle_timeout: 10s}}",
            fake_agent()
        ),
        "the-prompt\n",
    );
    let mut child = p
        .ralph(&["run", "-n", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"typed\n").unwrap();
    assert_eq!(wait_exit(&mut child), 0);
    let ended = &p.events_of("ITERATION_ENDED")[0];
    // First the typed-in prompt, then what came on ralph's standard input.
    assert_eq!(
        ended["markers"],
        json!([{"kind": "state", "name": "the-prompt"}, {"kind": "state", "name": "typed"}])
    );
    assert_eq!(ended["termination"], "natural");
}

#[test]
fn interactive_ctrl_c_goes_to_the_agent_and_twice_stops_the_loop() {
    let p = Project::new(
        &format!(
            "agent: \"{} --trap-int '<!-- ralph:state got-ctrl-c -->' --sleep 30 --sleep 30 --sleep 30\"\npty: {{mode: interactive}}",
            fake_agent()
        ),
        "x\n",
    );
    let mut ralph = RalphInPty::spawn(&p, &["-n", "3"], 24, 80);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        ralph.is_raw(),
        "ralph's terminal is in raw mode while it runs"
    );

    // One Ctrl+C is the agent's: it catches it and goes on.
    ralph.type_bytes(b"\x03");
    std::thread::sleep(Duration::from_millis(1300));
    assert!(ralph.child.try_wait().unwrap().is_none(), "ralph stopped");
    assert!(p.events_of("ITERATION_ENDED").is_empty());

    // Two within a second stop the loop now.
    ralph.type_bytes(b"\x03\x03");
    assert_eq!(wait_exit(&mut ralph.child), 130, "{}", ralph.screen());
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["termination"], "interrupted");
    assert_eq!(ended[0]["state"], "got-ctrl-c");
    assert_eq!(p.run_ended()["reason"], "interrupted");
    assert_eq!(p.run_ended()["exit_code"], 130);
    assert!(ralph.is_cooked(), "ralph's terminal was put back");
}

#[test]
fn the_terminal_is_restored_when_ralph_is_stopped_or_hung_up() {
    for (signal, exit_code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let p = Project::new(
            &format!(
                "agent: '{} --sleep 30'\npty: {{mode: interactive}}",
                fake_agent()
            ),
            "x\n",
        );
        let mut ralph = RalphInPty::spawn(&p, &["-n", "3"], 24, 80);
        p.wait_for("ITERATION_STARTED", 1);
        std::thread::sleep(Duration::from_millis(200));
        assert!(ralph.is_raw());
        send_signal(ralph.child.id(), signal);
        assert_eq!(wait_exit(&mut ralph.child), exit_code, "{}", ralph.screen());
        assert_eq!(terminations(&p), [json!("interrupted")]);
        assert!(ralph.is_cooked(), "ralph's terminal was put back");
    }
}
