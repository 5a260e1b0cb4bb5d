//! Issue 38: the real Claude Code and Codex CLIs (pinned in `.ci/install-agents`) inside the
//! sandbox, against the scripted model server allowed as `127.0.0.1:PORT`: each still works,
//! and the command it runs for the model writes its folder, not another, and cannot copy a key.

use crate::common;

use std::path::Path;

use common::Project;
use common::model_server::{ModelServer, Tokens, anthropic, responses};
use common::real_agents::{AgentEnv, TIMEOUT};
use serde_json::json;

const IDLE: &str = "Nothing left to do.\n<!-- ralph:state idle -->";

const TOKENS: Tokens = Tokens {
    input: 100,
    cached: 0,
    output: 10,
    reasoning: 0,
};

/// What the model asks the agent to run: a file in its folder, one in `other`, a copy of the
/// SSH key.
fn command(other: &Path) -> String {
    format!(
        "echo made > made.txt; echo x > {}/intruder.txt; cp ~/.ssh/id_ed25519 stolen.txt; true",
        other.display()
    )
}

fn port(server: &ModelServer) -> String {
    server.url().rsplit(':').next().unwrap().to_owned()
}

fn with_key(env: &AgentEnv) {
    let ssh = env.home.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE KEY").unwrap();
}

fn assert_confined(p: &Project, other: &Path) {
    let ended = &p.events_of("ITERATION_ENDED")[0];
    assert_eq!(ended["state"], "idle", "{:#?}", p.events());
    assert_eq!(ended["failed"], false, "{:#?}", p.events());
    assert!(
        p.path().join("made.txt").exists(),
        "the agent wrote its folder: {:#?}",
        AgentEnv::transcript(p, 1)
    );
    assert!(!other.join("intruder.txt").exists(), "nor another folder");
    assert!(!p.path().join("stolen.txt").exists(), "nor read the key");
}

#[test]
fn claude_code_works_in_the_sandbox_and_its_commands_are_confined() {
    let other = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool_use("Bash", json!({"command": command(other.path())}), TOKENS),
        anthropic::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::claude(&server, 0);
    with_key(&env);
    let p = Project::new(
        &format!(
            "agent: claude -p --allowedTools Bash\n{TIMEOUT}\nmax_iterations: 1\n\
             sandbox:\n  network: [\"127.0.0.1:{}\"]",
            port(&server)
        ),
        "Do the work.\n",
    );
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_confined(&p, other.path());
    assert_eq!(server.model_calls().len(), 2);
}

#[test]
fn codex_works_in_the_sandbox_and_its_commands_are_confined() {
    let other = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        responses::shell(&command(other.path()), TOKENS),
        responses::text(IDLE, TOKENS),
    ]);
    let env = AgentEnv::codex(&server, 0);
    with_key(&env);
    let p = Project::new(
        &format!(
            "agent: codex exec --json --skip-git-repo-check\n{TIMEOUT}\nmax_iterations: 1\n\
             sandbox:\n  network: [\"127.0.0.1:{}\"]\n  env: [MOCK_API_KEY]",
            port(&server)
        ),
        "Do the work.\n",
    );
    common::git(p.path(), &["init", "-q"]);
    let out = env.run(&p, &["run"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert_confined(&p, other.path());
    assert_eq!(server.model_calls().len(), 2);
}

/// Claude Code and Codex send their requests through the proxy: a model server left out of
/// `network` is refused there, and the refusal is an event.
#[test]
fn a_model_host_left_out_is_refused_through_the_proxy_and_said() {
    for claude in [true, false] {
        let server = ModelServer::start(vec![anthropic::text(IDLE, TOKENS)]);
        let (env, agent, extra) = if claude {
            (AgentEnv::claude(&server, 0), "claude -p", "")
        } else {
            let codex = AgentEnv::codex(&server, 0);
            (
                codex,
                "codex exec --json --skip-git-repo-check",
                "\n  env: [MOCK_API_KEY]",
            )
        };
        let p = Project::new(
            &format!(
                "agent: {agent}\n{TIMEOUT}\nmax_iterations: 1\nsandbox:\n  network: []{extra}"
            ),
            "Do the work.\n",
        );
        common::git(p.path(), &["init", "-q"]);
        env.run(&p, &["run"]);
        let denied = p.events_of("SANDBOX_DENIED");
        assert!(
            denied
                .iter()
                .any(|d| d["host"] == "127.0.0.1"
                    && d["port"].as_u64() == port(&server).parse().ok()),
            "{agent}: {denied:#?}"
        );
        assert!(server.model_calls().is_empty(), "{agent}");
    }
}
