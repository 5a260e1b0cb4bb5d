//! `ralph report`: one self-contained HTML file, checked in a real headless browser.
//!
//! The browser is Chromium from the system's packages. When none is found, the tests install
//! it with `apt-get` (as root, or through `sudo -n`), so `cargo test --workspace` needs nothing
//! installed by hand on a Debian or Ubuntu machine; `RALPH_CHROMIUM` names another binary.

use crate::common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{Project, code};

/// The Chromium binary: `RALPH_CHROMIUM`, else the first of the usual names on PATH, installed
/// from the system's packages first when there is none.
fn chromium() -> PathBuf {
    static FOUND: OnceLock<PathBuf> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("RALPH_CHROMIUM") {
                return PathBuf::from(path);
            }
            find_chromium()
                .or_else(|| {
                    install_chromium();
                    find_chromium()
                })
                .expect(
                    "no Chromium found for the report tests, and `apt-get install chromium` \
                     failed: install it, or set RALPH_CHROMIUM to a Chrome or Chromium binary",
                )
        })
        .clone()
}

fn find_chromium() -> Option<PathBuf> {
    let names = ["chromium", "chromium-browser", "google-chrome", "chrome"];
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .flat_map(|dir| names.map(|n| dir.join(n)))
        .find(|p| p.is_file())
}

/// `apt-get install chromium`, as root or through `sudo -n` (which fails rather than asking
/// for a password). Tests in this file share one install through the `OnceLock` above.
fn install_chromium() {
    // SAFETY: geteuid only reads the process's effective user id.
    let root = unsafe { libc::geteuid() } == 0;
    let apt = |args: &[&str]| {
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.args(["-n", "apt-get"]);
            sudo
        };
        cmd.args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let _ = apt(&["update", "-qq"])
        && apt(&[
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "chromium",
        ]);
}

/// What a headless browser made of `html`: the DOM it built and the console messages it
/// logged.
struct Rendered {
    dom: String,
    console: Vec<String>,
}

fn open_in_browser(html: &Path) -> Rendered {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium starts");
    assert!(out.status.success(), "{}", common::stderr(&out));
    Rendered {
        dom: common::stdout(&out),
        console: common::stderr(&out)
            .lines()
            .filter(|l| l.contains(":CONSOLE") || l.contains("Failed to load resource"))
            .map(str::to_owned)
            .collect(),
    }
}

/// Nothing in the file reaches for the network or runs code.
fn assert_self_contained(html: &str) {
    for needle in ["<script", " src=", "href=\"http", "@import", "url("] {
        assert!(!html.contains(needle), "the report contains {needle:?}");
    }
}

fn bars(dom: &str) -> usize {
    dom.matches("class=\"bar ").count()
}

#[test]
fn the_report_of_a_real_run_renders_one_bar_per_iteration_without_console_errors() {
    // Iteration 2 fails; every one says something.
    let p = Project::new(
        "agent: sh -c 'cat >/dev/null; echo \"<work> & more $RALPH_ITERATION\"; [ $RALPH_ITERATION != 2 ]'\nfailure:\n  delay: 50ms",
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "3", "-d", "50ms"])), 0);
    let out = p.run(&["report", "-o", "report.html"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let path = p.path().join("report.html");
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    let rendered = open_in_browser(&path);
    assert!(rendered.console.is_empty(), "{:#?}", rendered.console);
    assert_eq!(bars(&rendered.dom), 3);
    assert_eq!(rendered.dom.matches("class=\"bar failed\"").count(), 1);
    // The delay after iteration 1, the failure backoff after iteration 2.
    assert_eq!(
        rendered.dom.matches("<rect class=\"wait delay\"").count(),
        1
    );
    assert_eq!(
        rendered.dom.matches("<rect class=\"wait failure\"").count(),
        1
    );
    // The log tails are there, escaped.
    assert!(html.contains("&lt;work&gt; &amp; more 3"));
}

/// A run folder of `n` iterations written by hand: every kind of iteration, story lanes, the
/// waits (including the reasons other versions add), checks, trips, costs, a 20 KiB log each,
/// and no RUN_ENDED (it was killed).
fn synthetic_run(p: &Project, n: u64) -> PathBuf {
    let dir = p.path().join(".ralph/runs/20260101T000000000-1");
    std::fs::create_dir_all(&dir).unwrap();
    let mut events = String::new();
    let mut t = 0u64;
    let mut line = |t: u64, body: &str| {
        let ts = humantime_ms(t);
        writeln!(events, "{{\"ts\":\"{ts}\",\"run_id\":\"r\",{body}}}").unwrap();
    };
    line(
        t,
        r#""type":"RUN_STARTED","ralph_file":"RALPH.md","agent":"claude","max_iterations":1000"#,
    );
    let log = "a line of agent output that goes on for a while, with <html> & \"quotes\"\n"
        .repeat(20 * 1024 / 70);
    for i in 1..=n {
        let story = format!("US-{:03}", i / 50);
        line(
            t,
            &format!(
                r#""type":"ITERATION_STARTED","iteration":{i},"story_id":"{story}","attempt":{}"#,
                i % 50 + 1
            ),
        );
        t += 30_000 + (i % 7) * 10_000;
        let (exit, state) = match i % 10 {
            3 => (1, "null"),
            5 => (0, "\"idle\""),
            _ => (0, "null"),
        };
        line(
            t,
            &format!(
                r#""type":"ITERATION_ENDED","iteration":{i},"exit_code":{exit},"signal":null,"duration_ms":30000,"timed_out":false,"termination":"natural","state":{state},"markers":[],"log_file":".ralph/runs/x/iteration-{i:03}.log","usage":{{"cost_usd":0.{:02},"input_tokens":1200,"output_tokens":340}}"#,
                i % 90 + 1
            ),
        );
        match i % 10 {
            3 => line(
                t,
                &format!(r#""type":"ITERATION_FAILED","iteration":{i},"kind":"exit""#),
            ),
            7 => line(
                t,
                &format!(
                    r#""type":"ATTEMPT_ENDED","attempt":1,"max_attempts":3,"iteration":{i},"duration_ms":1,"ok":false,"results":[{{"command":"cargo test","exit_code":101,"duration_ms":1,"tail":"boom","truncated":false,"timed_out":false}}],"backoff_ms":null"#
                ),
            ),
            9 => line(
                t,
                r#""type":"CIRCUIT_TRIPPED","story_id":"US-1","reason":"same_error","count":3,"signature":null"#,
            ),
            _ => {}
        }
        let reason =
            ["idle", "failure", "rate_limit", "retry", "delay"][usize::try_from(i % 5).unwrap()];
        line(
            t,
            &format!(
                r#""type":"WAIT_STARTED","iteration":{i},"reason":"{reason}","delay_ms":5000"#
            ),
        );
        line(t, r#""type":"SOMETHING_A_LATER_VERSION_ADDS","x":1"#);
        t += 5_000;
        std::fs::write(dir.join(format!("iteration-{i:03}.log")), &log).unwrap();
    }
    std::fs::write(dir.join("events.jsonl"), events).unwrap();
    dir
}

fn humantime_ms(ms: u64) -> String {
    let (s, ms) = (ms / 1000, ms % 1000);
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    let (d, h) = (1 + h / 24, h % 24);
    format!("2026-01-{d:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
}

#[test]
fn a_killed_thousand_iteration_run_reports_in_under_a_mebibyte_with_every_bar() {
    let p = Project::new("agent: 'true'", "x\n");
    synthetic_run(&p, 1000);
    let out = p.run(&["report", "-o", "big.html"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let path = p.path().join("big.html");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 1024 * 1024, "the report is {size} bytes");
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    let rendered = open_in_browser(&path);
    assert!(rendered.console.is_empty(), "{:#?}", rendered.console);
    assert_eq!(bars(&rendered.dom), 1000);
    // Agent failures (i % 10 == 3) and failed checks (i % 10 == 7).
    assert_eq!(rendered.dom.matches("class=\"bar failed\"").count(), 200);
    assert_eq!(
        rendered
            .dom
            .matches("<rect class=\"wait rate_limit\"")
            .count(),
        200
    );
    // Story lanes: one label per story.
    assert!(rendered.dom.contains(">US-019</text>"));
    assert!(html.contains("killed"));
}

#[test]
fn report_of_an_unknown_run_names_it() {
    let p = Project::new("agent: 'true'", "x\n");
    synthetic_run(&p, 1);
    let out = p.run(&["report", "nope", "-o", "r.html"]);
    assert_eq!(code(&out), 2);
    assert!(
        common::stderr(&out).contains("no run nope"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn a_window_title_the_agent_sets_leaves_no_text_in_the_log_tail() {
    // OSC sequences (a window title, ended by BEL) are terminal commands, not output.
    let p = Project::new(
        r#"agent: sh -c 'cat >/dev/null; printf "\033]0;window-title-xyz\007after-the-title\n"'"#,
        "x\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "1"])), 0);
    let out = p.run(&["report", "-o", "r.html"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let html = std::fs::read_to_string(p.path().join("r.html")).unwrap();
    assert!(html.contains("after-the-title"), "{html}");
    assert!(!html.contains("window-title-xyz"), "{html}");
    assert!(!html.contains('\x07') && !html.contains('\x1b'));
}

#[test]
fn a_report_goes_into_a_fifo_or_to_standard_output_and_replaces_neither() {
    let p = Project::new("agent: 'true'", "x\n");
    synthetic_run(&p, 2);
    let fifo = p.path().join("report.fifo");
    let reader = common::fifo_with_reader(&fifo);
    let out = p.run(&["report", "-o", "report.fifo"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(common::is_fifo(&fifo), "the FIFO was replaced");
    let html = String::from_utf8(reader.join().unwrap()).unwrap();
    assert!(html.starts_with("<!doctype html>"), "{html}");

    let out = p.run(&["report", "-o", "-"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(common::stdout(&out).starts_with("<!doctype html>"));
    assert!(!p.path().join("-").exists());

    // Standard output is a pipe here: /dev/stdout leads to it, and is written into.
    let out = p.run(&["report", "-o", "/dev/stdout"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert!(common::stdout(&out).starts_with("<!doctype html>"));
    let out = p.run(&["report", "-o", "/dev/null"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let null = std::fs::metadata("/dev/null").unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(
        &null.file_type()
    ));
}
