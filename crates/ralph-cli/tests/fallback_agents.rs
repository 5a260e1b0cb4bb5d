//! Fallback agents (Unattended 0.4, items 5 and 6): an agent rate-limited for longer than
//! `fallback_after` hands the next iteration to the first `fallback` agent not limited, and
//! runs again once its reset has passed; each switch is an `AGENT_SWITCHED` event and a line;
//! the limits and costs are kept in the session and shown in the report; budgets count every
//! agent's cost. The agents here are scripts; `real_fallback.rs` runs Claude Code and Codex.

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use common::{Project, code, stdout};
use serde_json::Value;

/// Claude Code's usage-limit words: the reset as a Unix time, `$1` seconds from now.
const LIMITED: &str = "echo \"Claude AI usage limit reached|$(( $(date +%s) + $1 ))\"; exit 1";

fn write_script(p: &Project, name: &str, text: &str) {
    let path = p.path().join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("#!/bin/sh\n{text}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// How many times the agent that counts its runs in `file` ran.
fn runs(p: &Project, file: &str) -> usize {
    std::fs::read_to_string(p.path().join(file))
        .unwrap_or_default()
        .lines()
        .count()
}

/// A project whose agent `primary.sh` is rate-limited for `reset` seconds on its first run
/// (every run with `always`), and whose one fallback `fallback.sh` does the work and says
/// `done` on its run number `done_at` (never with 0). Each counts its runs in a file.
fn project(reset: u64, always: bool, done_at: u32, frontmatter: &str) -> Project {
    let p = Project::new(
        &format!("agent: ./primary.sh {reset}\nfallback:\n  - ./fallback.sh\n{frontmatter}"),
        "Do the work.\n",
    );
    let limited_once = if always {
        ""
    } else {
        "[ -e limited ] && exit 0\ntouch limited\n"
    };
    write_script(
        &p,
        "primary.sh",
        &format!("cat >/dev/null\necho run >> primary.runs\n{limited_once}{LIMITED}"),
    );
    write_script(
        &p,
        "fallback.sh",
        &format!(
            "cat >/dev/null\necho run >> fallback.runs\n\
             [ $(wc -l < fallback.runs) -eq {done_at} ] && echo '<!-- ralph:state done -->'\n\
             exit 0"
        ),
    );
    p
}

fn time(value: &Value) -> SystemTime {
    humantime::parse_rfc3339_weak(value.as_str().expect("a time")).expect("RFC 3339")
}

fn run_dir(p: &Project) -> PathBuf {
    let text = std::fs::read_to_string(p.path().join(".ralph/current")).expect(".ralph/current");
    PathBuf::from(text.trim_end())
}

fn session(p: &Project) -> Value {
    let path = run_dir(p).join("session.json");
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

#[test]
fn an_agent_limited_for_an_hour_hands_the_next_iteration_to_its_fallback_at_once() {
    let p = project(3600, true, 2, "");
    let out = p.run(&["run", "-n", "5"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "agent_done");
    assert_eq!(
        (runs(&p, "primary.runs"), runs(&p, "fallback.runs")),
        (1, 2)
    );

    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(limited.len(), 1);
    // No wait for the reset: the fallback runs next (after `delay`, zero here).
    assert_eq!(limited[0]["wait_ms"], 0);
    assert_eq!(limited[0]["fallback"], "./fallback.sh");
    assert!(p.events_of("WAIT_STARTED").is_empty());
    let switched = p.events_of("AGENT_SWITCHED");
    assert_eq!(switched.len(), 1, "{:#?}", p.events());
    let s = &switched[0];
    assert_eq!(
        (&s["iteration"], &s["from"], &s["to"], &s["why"]),
        (
            &2.into(),
            &"./primary.sh 3600".into(),
            &"./fallback.sh".into(),
            &"rate_limited".into()
        )
    );
    assert_eq!(s["until"], limited[0]["until"]);
    let ahead = time(&s["until"]).duration_since(SystemTime::now()).unwrap();
    assert!(ahead > Duration::from_secs(3500), "{ahead:?}");
    let shown = stdout(&out);
    assert!(
        shown.contains("⇄ agent `./fallback.sh` runs: `./primary.sh 3600` is rate-limited until"),
        "{shown}"
    );

    // The session keeps each agent's limit, for `--resume`.
    let agents = &session(&p)["agents"];
    assert_eq!(agents[0]["agent"], "./primary.sh 3600");
    assert_eq!(agents[0]["limited_until"], limited[0]["until"]);
    assert_eq!(agents[1]["agent"], "./fallback.sh");
    assert!(agents[1].get("limited_until").is_none(), "{agents}");
}

#[test]
fn the_agent_runs_again_once_its_reset_has_passed() {
    // A reset 2-3 s away, beyond `fallback_after`: the fallback works meanwhile, each run
    // 200 ms apart, and the agent says `done` when it runs again.
    let p = project(
        3,
        false,
        0,
        "fallback_after: 1s\ndelay: 200ms\nmax_iterations: 100",
    );
    write_script(
        &p,
        "primary.sh",
        &format!(
            "cat >/dev/null\necho run >> primary.runs\n\
             [ -e limited ] && {{ echo '<!-- ralph:state done -->'; exit 0; }}\n\
             touch limited\n{LIMITED}"
        ),
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "agent_done");
    assert_eq!(runs(&p, "primary.runs"), 2);
    assert!(runs(&p, "fallback.runs") >= 1);

    let switched = p.events_of("AGENT_SWITCHED");
    assert_eq!(switched.len(), 2, "{:#?}", p.events());
    assert_eq!(switched[0]["why"], "rate_limited");
    let back = &switched[1];
    assert_eq!(
        (&back["from"], &back["to"], &back["why"]),
        (
            &"./fallback.sh".into(),
            &"./primary.sh 3".into(),
            &"limit_reset".into()
        )
    );
    assert!(back.get("until").is_none(), "{back}");
    // Not before the reset the agent gave.
    let reset = time(&p.events_of("RATE_LIMITED")[0]["until"]);
    assert!(time(&back["ts"]) >= reset, "{back}");
    assert!(stdout(&out).contains("⇄ agent `./primary.sh 3` runs again: its limit has reset"));
}

#[test]
fn a_reset_within_fallback_after_is_waited_for_by_the_agent_itself() {
    let p = project(
        3600,
        false,
        0,
        "fallback_after: 2h\nrate_limit: {max_wait: 100ms}",
    );
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    assert_eq!(
        (runs(&p, "primary.runs"), runs(&p, "fallback.runs")),
        (2, 0)
    );
    assert!(p.events_of("AGENT_SWITCHED").is_empty());
    let limited = &p.events_of("RATE_LIMITED")[0];
    assert_eq!(limited["wait_ms"], 100);
    assert!(limited.get("fallback").is_none(), "{limited}");
}

#[test]
fn a_resumed_run_knows_the_agent_is_still_limited() {
    let p = project(3600, true, 0, "");
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    assert_eq!(
        (runs(&p, "primary.runs"), runs(&p, "fallback.runs")),
        (1, 1)
    );
    let until = p.events_of("RATE_LIMITED")[0]["until"].clone();

    let out = p.run(&["run", "--resume", "-n", "3"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    // The agent is not asked again: its limit is an hour away still.
    assert_eq!(
        (runs(&p, "primary.runs"), runs(&p, "fallback.runs")),
        (1, 2)
    );
    let switched = p.events_of("AGENT_SWITCHED");
    let last = switched.last().unwrap();
    assert_eq!(
        (&last["iteration"], &last["to"], &last["until"]),
        (&3.into(), &"./fallback.sh".into(), &until)
    );
}

/// `claude -p --output-format stream-json`'s last line, as a script in `dir` prints it.
fn claude_result(is_error: bool, result: &str, cost: f64) -> String {
    format!(
        "printf '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":{is_error},\
         \"result\":\"%s\",\"total_cost_usd\":{cost}}}\\n' \"{result}\""
    )
}

#[test]
fn each_agent_is_read_by_its_own_adapter_and_the_budget_counts_every_agents_cost() {
    // Two Claude Code look-alikes, each read as stream-json from its own command line; the
    // agent costs $0.50 for its refused run, the fallback $0.40 a run: a $1 budget ends the
    // run after the fallback's second run ($1.30), not its third ($0.80 of its own + $0.40).
    let p = Project::new(
        "agent: a/claude -p --output-format stream-json\n\
         fallback: [b/claude -p --output-format stream-json]\nmax_cost: 1",
        "Do the work.\n",
    );
    write_script(
        &p,
        "a/claude",
        &format!(
            "cat >/dev/null\n{}\nexit 1",
            claude_result(
                true,
                "Claude AI usage limit reached|$(( $(date +%s) + 3600 ))",
                0.5
            )
        ),
    );
    write_script(
        &p,
        "b/claude",
        &format!("cat >/dev/null\n{}", claude_result(false, "ok", 0.4)),
    );
    let out = p.run(&["run", "-n", "10"]);
    assert_eq!(code(&out), 1, "a budget ending: {}", common::stderr(&out));
    let ended = p.run_ended();
    assert_eq!(
        (&ended["reason"], &ended["iterations"], &ended["cost_usd"]),
        (&"max_cost".into(), &3.into(), &1.3.into())
    );
    let costs: Vec<Value> = p
        .events_of("ITERATION_ENDED")
        .iter()
        .map(|e| e["usage"]["cost_usd"].clone())
        .collect();
    assert_eq!(costs, [Value::from(0.5), 0.4.into(), 0.4.into()]);

    let agents = &session(&p)["agents"];
    assert_eq!(
        (&agents[0]["cost_usd"], &agents[1]["cost_usd"]),
        (&0.5.into(), &0.8.into())
    );

    // The report has a row per agent: its iterations, cost and limit.
    let out = p.run(&["report", "-o", "report.html"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let html = std::fs::read_to_string(p.path().join("report.html")).unwrap();
    let table = html
        .split("<table id=\"agents\">")
        .nth(1)
        .and_then(|rest| rest.split("</table>").next())
        .unwrap_or_else(|| panic!("no agents table in the report"));
    assert!(
        table.contains("<td><code>a/claude -p --output-format stream-json</code></td><td>1</td><td>$0.50</td><td>20"),
        "{table}"
    );
    assert!(
        table.contains("<td><code>b/claude -p --output-format stream-json</code></td><td>2</td><td>$0.80</td><td></td>"),
        "{table}"
    );
}

#[test]
fn check_refuses_a_fallback_that_is_no_command_line_or_repeats_one() {
    let p = Project::new(
        "agent: claude -p\nfallback:\n  - codex exec --json\n  - claude -p\n  - ''\n  - codex exec --json\nfallback_after: soon",
        "x\n",
    );
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 2);
    let said = common::stderr(&out) + &stdout(&out);
    for expected in [
        "RALPH.md:5:5: fallback[1]: \"claude -p\" is the command line of `agent` already: each agent once",
        "RALPH.md:6:5: fallback[2]: expected the agent command line, such as \"claude -p\", got \"\"",
        "RALPH.md:7:5: fallback[3]: \"codex exec --json\" is the command line of fallback[0] already: each agent once",
        "RALPH.md:8:17: fallback_after: expected a duration",
    ] {
        assert!(said.contains(expected), "{expected}\n{said}");
    }
}

#[test]
fn check_warns_of_a_fallback_agent_that_is_not_installed() {
    let p = Project::new(
        "agent: sh agent.sh\nfallback: [ralph-no-such-agent-xyz exec]",
        "x\n",
    );
    std::fs::write(p.path().join("agent.sh"), "cat >/dev/null\n").unwrap();
    let out = p.run(&["check"]);
    let said = common::stderr(&out) + &stdout(&out);
    assert!(
        said.contains("RALPH.md:3:12: fallback[0]: ")
            && said.contains("ralph-no-such-agent-xyz")
            && said.contains("it would fail to start whenever the agent is rate-limited")
            && said.contains(
                "fallback        `ralph-no-such-agent-xyz exec` while the agent is limited for \
                 more than 10m"
            ),
        "{said}"
    );
}

#[test]
fn the_rate_limit_message_names_the_fallback_that_runs_meanwhile() {
    use common::http_server::{HttpServer, Reply};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = std::sync::Arc::clone(&seen);
    let server = HttpServer::start(move |_, request| {
        record.lock().unwrap().push(request);
        Some(Reply::json(200, &serde_json::json!({"ok": true})))
    });
    let p = project(
        3600,
        true,
        1,
        &format!(
            "notify:\n  on: [rate_limited]\n  webhook: http://127.0.0.1:{}/hook\n  format: slack",
            server.port()
        ),
    );
    let out = p.run(&["run", "-n", "3"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let posts = seen.lock().unwrap().clone();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    let text = posts[0].json()["text"].as_str().unwrap().to_owned();
    assert!(
        text.starts_with("ralph: the agent is rate-limited until ")
            && text.contains("; `./fallback.sh` runs meanwhile"),
        "{text}"
    );
}
