//! How a run's outcome reads (Trust 0.4, item 8): a rate-limited iteration is "rate-limited" in
//! the report, a Claude API-key 429 is told once per iteration, a reset that has passed says
//! so, and an agent that reports tokens but no cost shows them with an unknown cost, never
//! `$0.00`.

use crate::common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::Project;
use common::model_server::{ModelServer, Reply, anthropic};
use common::parallel::{READ_PROMPT, repo};
use common::real_agents::{AgentEnv, TIMEOUT};

const WORDS: &str = "This request would exceed your organization's rate limit";

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claude_project(extra: &str) -> Project {
    Project::new(
        &format!("agent: claude -p --allowedTools Bash\n{TIMEOUT}\n{extra}"),
        "Do the work.\n",
    )
}

/// A subscription limit Claude Code is refused with, resetting at `reset` (Unix seconds).
fn subscription_limit(server: &ModelServer) -> AgentEnv {
    let mut env = AgentEnv::claude(server, 0);
    env.vars.retain(|(name, _)| name != "ANTHROPIC_API_KEY");
    env.vars
        .push(("CLAUDE_CODE_OAUTH_TOKEN".into(), "sk-ant-oat01-test".into()));
    env
}

fn limited_until(reset: u64) -> Reply {
    anthropic::error(429, "rate_limit_error", WORDS)
        .header("anthropic-ratelimit-unified-status", "rejected")
        .header("anthropic-ratelimit-unified-reset", &reset.to_string())
        .header(
            "anthropic-ratelimit-unified-representative-claim",
            "five_hour",
        )
        .header("anthropic-ratelimit-unified-5h-status", "rejected")
        .header("anthropic-ratelimit-unified-5h-reset", &reset.to_string())
        .header("anthropic-ratelimit-unified-5h-utilization", "1.0")
}

/// The real Claude Code with an API key, refused by a 429: its words once on the terminal (in
/// the loop's failure line), not also as its made-up assistant message and the adapter's line.
#[test]
fn a_claude_api_key_429_is_told_once() {
    let limited = anthropic::error(429, "rate_limit_error", WORDS).header("retry-after", "1");
    let server = ModelServer::start(vec![limited]);
    let env = AgentEnv::claude(&server, 0);
    let p = claude_project("max_iterations: 1");
    let out = env.run(&p, &["run"]);
    let shown = common::stdout(&out);
    assert_eq!(shown.matches(WORDS).count(), 1, "{shown}");
    assert!(shown.contains("✗ failed ×1: rate-limited"), "{shown}");
    // The log keeps what Claude Code wrote.
    assert_eq!(p.events_of("ITERATION_FAILED").len(), 1);
}

/// A limit whose reset Claude Code gives as already past (it refused again after the reset it
/// named): the failure says the reset has passed, not that none was given, and the loop backs
/// off as for a failure rather than waiting for nothing.
#[test]
fn a_reset_that_has_passed_says_so() {
    let server = ModelServer::start(vec![limited_until(now_secs() - 30)]);
    let env = subscription_limit(&server);
    let p = claude_project("max_iterations: 1");
    env.run(&p, &["run"]);
    assert!(p.events_of("RATE_LIMITED").is_empty(), "{:#?}", p.events());
    let failed = p.events_of("ITERATION_FAILED");
    assert_eq!(failed.len(), 1, "{:#?}", p.events());
    let failure = failed[0]["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("rate-limited, the reset it gave (")
            && failure.contains(") has passed"),
        "{failure}"
    );
}

/// An iteration a rate limit refused reads "rate-limited" in the report, not "worked".
#[test]
fn a_rate_limited_iteration_is_rate_limited_in_the_report() {
    let server = ModelServer::start(vec![limited_until(now_secs() + 3600)]);
    let env = subscription_limit(&server);
    let p = claude_project("max_iterations: 1");
    let out = env.run(&p, &["run"]);
    let limited = p.events_of("RATE_LIMITED");
    assert_eq!(limited.len(), 1, "{:#?}", p.events());
    // Claude Code's words, once: on the rate-limited line.
    let shown = common::stdout(&out);
    assert_eq!(
        shown.matches("hit your session limit").count(),
        1,
        "{shown}"
    );
    assert!(
        limited[0]["why"]
            .as_str()
            .unwrap()
            .contains("hit your session limit"),
        "{}",
        limited[0]
    );
    let report = p.run(&["report", "-o", "-"]);
    assert_eq!(common::code(&report), 0, "{}", common::stderr(&report));
    let html = String::from_utf8(report.stdout).unwrap();
    assert!(
        html.contains("<b class=\"badge rate_limited\">rate-limited</b>"),
        "{html}"
    );
    assert!(!html.contains("badge worked"), "{html}");
}

/// Claude Code's stream-json result for a run that did the work: tokens, and no cost.
const NO_COST: &str = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","usage":{"input_tokens":1500,"output_tokens":700}}"#;

/// A parallel run whose agents report tokens but no cost: the terminal's last line and the
/// report show the tokens and an unknown cost, never `$0.00`.
#[test]
fn a_parallel_run_without_a_cost_shows_tokens_and_an_unknown_cost() {
    let agent =
        format!("{READ_PROMPT}echo \"done $story\" > \"$story.txt\"\nprintf '%s\\n' '{NO_COST}'\n");
    let p = repo(
        &agent,
        "ls US-*.txt >/dev/null 2>&1\n",
        &["US-001", "US-002"],
        &[],
    );
    set_output(&p);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let shown = common::stdout(&out);
    assert!(shown.contains("· 4.4k tokens · cost unknown"), "{shown}");
    assert!(!shown.contains("$0.00"), "{shown}");
    let report = p.run(&["report", "-o", "-"]);
    assert_eq!(common::code(&report), 0, "{}", common::stderr(&report));
    let html = String::from_utf8(report.stdout).unwrap();
    assert!(!html.contains("$0.00"), "{html}");
    assert_eq!(
        html.matches("2.2k tokens, cost unknown").count(),
        2,
        "{html}"
    );
    assert!(html.contains("4.4k tokens, cost unknown"), "{html}");
}

/// A lane whose agent is refused by a rate limit: a `LANE_RATE_LIMITED` event and a line, and
/// its iteration reads "rate-limited" on the report's timeline; the lane runs again after the
/// reset and lands.
#[test]
fn a_rate_limited_lane_is_seen_and_goes_on_after_the_reset() {
    let marks = tempfile::tempdir().unwrap();
    // The first run of each story is refused until two seconds from now; the next works.
    let agent = format!(
        "{READ_PROMPT}if [ ! -e {marks}/$story ]; then touch {marks}/$story\n\
         reset=$(( $(date +%s) + 2 ))\n\
         printf '%s\\n' \"{{\\\"type\\\":\\\"rate_limit_event\\\",\\\"rate_limit_info\\\":{{\\\"status\\\":\\\"rejected\\\",\\\"resetsAt\\\":$reset}}}}\"\n\
         printf '%s\\n' '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"You have hit your limit\"}}'\n\
         exit 1; fi\n\
         echo \"done $story\" > \"$story.txt\"\nprintf '%s\\n' '{NO_COST}'\n",
        marks = marks.path().display()
    );
    let p = repo(&agent, "ls US-*.txt >/dev/null 2>&1\n", &["US-001"], &[]);
    set_output(&p);
    let out = p.run(&["run", "--parallel", "1"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    let limited: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "LANE_RATE_LIMITED")
        .collect();
    assert_eq!(limited.len(), 1, "{events:#?}");
    assert_eq!(limited[0]["task_id"], "US-001");
    assert_eq!(limited[0]["iteration"], 1);
    assert!(limited[0]["until"].as_str().unwrap().ends_with('Z'));
    assert!(events.iter().any(|e| e["type"] == "TASK_LANDED"));
    let shown = common::stdout(&out);
    assert!(shown.contains("rate-limited until"), "{shown}");
    let report = p.run(&["report", "-o", "-"]);
    let html = String::from_utf8(report.stdout).unwrap();
    assert!(html.contains("<rect class=\"rate_limited\""), "{html}");
    assert!(html.contains("rate-limited until"), "{html}");
}

/// The RALPH.md of [`repo`] with the agent's output read as Claude Code's stream-json.
fn set_output(p: &Project) {
    let path = p.path().join("RALPH.md");
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "agent: sh agent.sh\n",
        "agent: sh agent.sh\noutput: claude-stream-json\n",
        1,
    );
    std::fs::write(&path, text).unwrap();
    common::git(p.path(), &["commit", "-qam", "stream-json"]);
}
