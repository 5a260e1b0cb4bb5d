//! Warnings reach every sink as `WARNING` events (events.jsonl included), not only the
//! terminal: here, an agent's output that is not the JSON its adapter reads.

mod common;

use common::{Project, code};

#[test]
fn output_that_is_not_the_adapters_json_is_a_warning_event() {
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"done"}"#;
    let p = Project::new(
        "agent: sh agent.sh\noutput: claude-stream-json\nmax_iterations: 1",
        "x\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        format!("cat >/dev/null\necho plain one\necho plain two\nprintf '%s\\n' '{result}'\n"),
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let messages: Vec<String> = p
        .events_of("WARNING")
        .iter()
        .filter_map(|w| w["message"].as_str().map(str::to_owned))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("the agent printed a line that is not")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("2 lines of the agent's output were not")),
        "{messages:?}"
    );
    // The terminal still says it on stderr, as before.
    assert!(
        common::stderr(&out).contains("warning: the agent printed a line that is not"),
        "{}",
        common::stderr(&out)
    );
}
