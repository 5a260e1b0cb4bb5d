//! Fallback agents with the real CLIs (Unattended 0.4, item 5): Claude Code refused by a
//! subscription limit an hour away hands the iteration to Codex, and Codex refused by its
//! usage limit hands it to Claude Code, each against a model server of its own.

use crate::common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::Project;
use common::model_server::{ModelServer, Reply, Tokens, anthropic, responses};
use common::real_agents::{AgentEnv, TIMEOUT};
use serde_json::json;

const DONE: &str = "The work is done.\n<!-- ralph:state done -->";

const TOKENS: Tokens = Tokens {
    input: 1200,
    cached: 0,
    output: 45,
    reasoning: 0,
};

const CLAUDE: &str = "claude -p --allowedTools Bash";
const CODEX: &str = "codex exec --json --skip-git-repo-check";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claude Code on `claude`'s server (with a subscription, whose limit has a reset, when
/// `subscription`), and Codex on `codex`'s: one environment for both.
fn both(claude: &ModelServer, codex: &ModelServer, subscription: bool) -> (AgentEnv, AgentEnv) {
    let mut env = AgentEnv::claude(claude, 0);
    if subscription {
        env.vars.retain(|(name, _)| name != "ANTHROPIC_API_KEY");
        env.vars
            .push(("CLAUDE_CODE_OAUTH_TOKEN".into(), "sk-ant-oat01-test".into()));
    }
    let codex_env = AgentEnv::codex(codex, 0);
    for (name, value) in &codex_env.vars {
        if name == "CODEX_HOME" || name == "MOCK_API_KEY" {
            env.vars.push((name.clone(), value.clone()));
        }
    }
    (env, codex_env)
}

/// A project in a git repository (Codex wants one).
fn project(agent: &str, fallback: &str) -> Project {
    let p = Project::new(
        &format!("agent: {agent}\nfallback: [{fallback}]\n{TIMEOUT}\nmax_iterations: 3"),
        "Do the work.\n",
    );
    common::git(p.path(), &["init", "-q"]);
    p
}

#[test]
fn claude_code_out_of_its_subscription_hands_the_work_to_codex() {
    let reset = now() + 3600;
    let limited = anthropic::error(
        429,
        "rate_limit_error",
        "This request would exceed your account's rate limit. Please try again later.",
    )
    .header("anthropic-ratelimit-unified-status", "rejected")
    .header("anthropic-ratelimit-unified-reset", &reset.to_string())
    .header(
        "anthropic-ratelimit-unified-representative-claim",
        "five_hour",
    )
    .header("anthropic-ratelimit-unified-5h-status", "rejected")
    .header("anthropic-ratelimit-unified-5h-reset", &reset.to_string())
    .header("anthropic-ratelimit-unified-5h-utilization", "1.0")
    .header("retry-after", "3600");
    let claude = ModelServer::start(vec![limited]);
    let codex = ModelServer::start(vec![responses::text(DONE, TOKENS)]);
    let (env, _codex_home) = both(&claude, &codex, true);
    let p = project(CLAUDE, CODEX);
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stdout(&out));
    assert_eq!(p.run_ended()["reason"], "agent_done", "{:#?}", p.events());
    let switched = p.events_of("AGENT_SWITCHED");
    assert_eq!(switched.len(), 1, "{:#?}", p.events());
    assert_eq!(
        (&switched[0]["from"], &switched[0]["to"]),
        (&CLAUDE.into(), &CODEX.into())
    );
    assert_eq!(
        switched[0]["until"],
        p.events_of("RATE_LIMITED")[0]["until"]
    );
    // Codex was read as Codex: its usage, and its state marker.
    let ended = &p.events_of("ITERATION_ENDED")[1];
    assert_eq!(ended["state"], "done");
    assert_eq!(ended["usage"]["output_tokens"], 45, "{ended}");
    // Codex got the same prompt.
    let asked = codex.model_calls();
    assert!(
        asked.iter().any(|r| r.body.contains("Do the work.")),
        "{:#?}",
        asked.len()
    );
}

#[test]
fn codex_out_of_its_usage_limit_hands_the_work_to_claude_code() {
    let reset = now() + 3600 + 37;
    let limited = Reply::json(
        429,
        &json!({"error": {"type": "usage_limit_reached",
                          "message": "The usage limit has been reached", "plan_type": "plus",
                          "resets_at": reset, "resets_in_seconds": 3637}}),
    );
    let claude = ModelServer::start(vec![anthropic::text(DONE, TOKENS)]);
    let codex = ModelServer::start(vec![limited]);
    let (env, _codex_home) = both(&claude, &codex, false);
    let p = project(CODEX, CLAUDE);
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stdout(&out));
    assert_eq!(p.run_ended()["reason"], "agent_done", "{:#?}", p.events());
    let switched = p.events_of("AGENT_SWITCHED");
    assert_eq!(switched.len(), 1, "{:#?}", p.events());
    assert_eq!(
        (&switched[0]["from"], &switched[0]["to"]),
        (&CODEX.into(), &CLAUDE.into())
    );
    // Claude Code was read as stream-json (ralph added its flags): its state and usage.
    let ended = &p.events_of("ITERATION_ENDED")[1];
    assert_eq!(ended["state"], "done");
    assert_eq!(ended["usage"]["model"], "claude-test-model", "{ended}");
}
