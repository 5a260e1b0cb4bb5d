//! `ralph plan` with the real Claude Code (pinned in `.ci/install-agents`) against a scripted
//! model server: its stream-json answer is read for the plan, an invalid one is sent back with
//! its errors, and the cost it reports is the run's.

use crate::common;

use common::Project;
use common::model_server::{ModelServer, Tokens, anthropic};
use common::real_agents::{AgentEnv, TIMEOUT};
use serde_json::Value;

const TOKENS: Tokens = Tokens {
    input: 900,
    cached: 0,
    output: 120,
    reasoning: 0,
};

#[test]
fn claude_code_s_answer_is_read_corrected_and_written() {
    let valid = "Here is the plan:\n\n```json\n{\"userStories\": [\n  {\"id\": \"US-001\", \
                 \"title\": \"Count words\", \"acceptanceCriteria\": [\"cargo test count \
                 passes\"], \"dependsOn\": []}\n]}\n```\n";
    let server = ModelServer::start(vec![
        anthropic::text("I think we should count words first.", TOKENS),
        anthropic::text(valid, TOKENS),
    ]);
    let env = AgentEnv::claude(&server, 0);
    let p = Project::new(
        &format!("agent: claude -p\n{TIMEOUT}\ntasks: {{prd: prd.json}}"),
        "unused\n",
    );
    let out = env.run(
        &p,
        &["plan", "-m", "A word counter.", "--events", "events.jsonl"],
    );
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));

    let calls = server.model_calls();
    assert_eq!(calls.len(), 2);
    assert!(
        calls[0].body.contains("A word counter."),
        "the spec is in the prompt"
    );
    assert!(
        calls[1]
            .body
            .contains("the answer has no fenced ```json block"),
        "the errors go back"
    );
    assert_eq!(p.events_of("PLAN_INVALID").len(), 1);
    let prd: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("prd.json")).unwrap()).unwrap();
    assert_eq!(prd["userStories"][0]["id"], "US-001");
    assert_eq!(prd["userStories"][0]["passes"], false);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "plan_written");
    assert!(
        ended["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "the cost Claude Code reported: {ended}"
    );
}
