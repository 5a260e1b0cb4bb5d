//! The events format: `RUN_STARTED` names its version, problems that do not stop the loop are
//! `WARNING` events every sink sees (and the terminal prints as before).

use crate::common;

use common::{Project, code, fake_agent, stderr};
use serde_json::Value;

#[test]
fn run_started_names_the_events_version() {
    let p = Project::new(&format!("agent: {}", fake_agent()), "x\n");
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let started = &p.events_of("RUN_STARTED")[0];
    assert_eq!(started["events_version"], 2);
    // First after `type`, so a reader can tell the format before it reads on.
    let keys: Vec<&String> = started.as_object().unwrap().keys().collect();
    assert_eq!(keys[..4], ["ts", "run_id", "type", "events_version"]);
}

#[test]
fn a_command_that_cannot_start_is_a_warning_event_and_the_same_stderr_line() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(
        &format!(
            "agent: {}\ncommands:\n  - name: c\n    run: ./c.sh",
            fake_agent()
        ),
        "x\n",
    );
    let script = p.path().join("c.sh");
    std::fs::write(&script, "echo hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let warnings = p.events_of("WARNING");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("command c could not start: it has no #! line"),
        "{message}"
    );
    let line = format!("warning: {message}\n");
    assert_eq!(stderr(&out).matches(&line).count(), 1, "{}", stderr(&out));
}

#[test]
fn a_failing_state_hook_is_a_warning_event() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(
        "agent: ./agent.sh\nmax_iterations: 1\nstates:\n  review:\n    run: exit 3",
        "x\n",
    );
    let agent = p.path().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat >/dev/null\necho '<!-- ralph:state review -->'\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let warnings = p.events_of("WARNING");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(message.starts_with("state `review`: its hook"), "{message}");
    assert!(stderr(&out).contains(&format!("warning: {message}")));
}

/// docs/events.schema.json, as `cargo xtask schema` generated it.
fn events_schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/events.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every event of `p`'s run passes the schema; returns their types.
fn assert_valid(p: &Project) -> Vec<String> {
    let schema = events_schema();
    let events = p.events();
    assert!(!events.is_empty());
    for event in &events {
        let mut errors = Vec::new();
        validate(&schema, &schema, event, "", &mut errors);
        assert!(errors.is_empty(), "{event}\n{errors:#?}");
    }
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// A validator for the part of JSON Schema 2020-12 the generated schema uses.
fn validate(root: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    let mut fail = |why: String| errors.push(format!("{at}: {why}"));
    if let Some(Value::String(r)) = schema.get("$ref") {
        let name = r.strip_prefix("#/$defs/").expect("a local $ref");
        let target = root["$defs"][name].clone();
        validate(root, &target, value, at, errors);
        return;
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            other => panic!("type {other} is not handled"),
        });
        if !ok {
            fail(format!("{value} is not {types:?}"));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            fail(format!("{value} is not {c}"));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            fail(format!("{value} is not one of {options:?}"));
        }
    }
    if let Some(Value::Number(min)) = schema.get("minimum") {
        if value.as_f64().is_some_and(|v| v < min.as_f64().unwrap()) {
            fail(format!("{value} is below {min}"));
        }
    }
    if let Some(not) = schema.get("not") {
        let mut inner = Vec::new();
        validate(root, not, value, at, &mut inner);
        if inner.is_empty() {
            fail(format!("{value} matches what `not` excludes"));
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            let passing = options
                .iter()
                .filter(|option| {
                    let mut inner = Vec::new();
                    validate(root, option, value, at, &mut inner);
                    inner.is_empty()
                })
                .count();
            let ok = match key {
                "anyOf" => passing > 0,
                _ => passing == 1,
            };
            if !ok {
                fail(format!("{passing} of the {key} options match"));
            }
        }
    }
    if let Some(object) = value.as_object() {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    fail(format!("`{name}` is missing"));
                }
            }
        }
        for (name, field) in object {
            match properties.and_then(|p| p.get(name)) {
                Some(property) => {
                    validate(root, property, field, &format!("{at}.{name}"), errors);
                }
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: `{name}` is not allowed"));
                }
                None => {}
            }
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as u64;
        if schema
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| len < m)
            || schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .is_some_and(|m| len > m)
        {
            errors.push(format!("{at}: {len} items"));
        }
        let prefix = schema.get("prefixItems").and_then(Value::as_array);
        for (i, item) in items.iter().enumerate() {
            let item_schema = prefix
                .and_then(|p| p.get(i))
                .or_else(|| schema.get("items"));
            if let Some(s) = item_schema {
                validate(root, s, item, &format!("{at}[{i}]"), errors);
            }
        }
    }
}

#[test]
fn the_validator_rejects_an_event_with_a_field_of_the_wrong_type() {
    let schema = events_schema();
    let bad = serde_json::json!({
        "ts": "2026-01-01T00:00:00.000Z", "run_id": "r", "type": "WARNING", "message": 3
    });
    let mut errors = Vec::new();
    validate(&schema, &schema, &bad, "", &mut errors);
    assert!(!errors.is_empty());
    // A task source's own event with a type of its own passes.
    let own = serde_json::json!({
        "ts": "2026-01-01T00:00:00.000Z", "run_id": "r", "type": "ISSUE_CLOSED", "number": 7
    });
    let mut errors = Vec::new();
    validate(&schema, &schema, &own, "", &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn every_event_of_plain_idle_state_and_converging_runs_matches_the_schema() {
    use std::os::unix::fs::PermissionsExt;
    // Commands, a warning, states with a hook, idle waits, usage from a JSON agent.
    let p = Project::new(
        "agent: ./agent.sh\nmax_iterations: 3\nidle: {delay: 10ms, max: 1h}\n\
         commands:\n  - name: c\n    run: ./c.sh\nstates:\n  review:\n    run: exit 3",
        "x {{ commands.c }}\n",
    );
    let agent = p.path().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat >/dev/null\ncase $RALPH_ITERATION in\n1) echo '<!-- ralph:state review pr=1 -->' ;;\n\
         2) echo '<!-- ralph:state idle -->' ;;\n*) echo '<!-- ralph:broken' ; exit 3 ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(p.path().join("c.sh"), "echo hi\n").unwrap();
    std::fs::set_permissions(
        p.path().join("c.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let types = assert_valid(&p);
    for t in [
        "WARNING",
        "STATE_HANDLED",
        "ITERATION_IDLE",
        "WAIT_STARTED",
        "RUN_ENDED",
    ] {
        assert!(types.iter().any(|x| x == t), "{t} in {types:?}");
    }

    // done_when: attempts that fail, then the cap.
    let p = Project::new(
        &format!(
            "agent: {}\ndone_when: ['false']\nconvergence: {{max_attempts: 2, backoff: 10ms, max_backoff: 10ms}}",
            fake_agent()
        ),
        "x\n",
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let types = assert_valid(&p);
    assert!(types.iter().any(|x| x == "ATTEMPT_ENDED"), "{types:?}");
}

#[test]
fn every_event_of_a_story_mode_run_with_a_trip_and_a_revert_matches_the_schema() {
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - 'test -f ok || { cat error.txt; exit 1; }'\n\
         convergence: {backoff: 10ms, max_backoff: 10ms}\nescalation:\n  prd: prd.json",
        "STORY={{ story.id }}\n",
    );
    let dir = p.path();
    std::fs::write(
        dir.join("agent.sh"),
        "story=$(sed -n 's/^STORY=//p')\ncase \"$story\" in\n\
         US-001) echo \"error: same $RALPH_ITERATION\" > work.txt; echo 'error: same' > error.txt ;;\n\
         US-002) echo done > ok; git add ok && git commit -qm 'story 2' ;;\nesac\n",
    )
    .unwrap();
    let story = |id: &str, priority: u32| {
        serde_json::json!({"id": id, "title": format!("Story {id}"), "description": "Do it",
            "acceptanceCriteria": ["it works"], "priority": priority, "passes": false, "notes": ""})
    };
    let prd = serde_json::json!({"project": "Shop", "branchName": "ralph/shop",
        "description": "Test", "userStories": [story("US-001", 1), story("US-002", 2)]});
    std::fs::write(dir.join("prd.json"), prd.to_string()).unwrap();
    std::fs::write(dir.join(".gitignore"), "error.txt\n").unwrap();
    common::git_repo(dir);
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let types = assert_valid(&p);
    for t in [
        "STORY_STARTED",
        "CIRCUIT_TRIPPED",
        "REVERTED",
        "STORY_BLOCKED",
        "STORY_PASSED",
    ] {
        assert!(types.iter().any(|x| x == t), "{t} in {types:?}");
    }
    assert_eq!(p.run_ended()["reason"], "stories_blocked");
}

/// A parallel run's own events (`.ralph/parallel/events.jsonl`) pass the schema's
/// `ParallelEvent` and read back into the type that wrote them, none as an unknown type.
#[test]
fn every_event_of_a_parallel_run_matches_the_schema_and_reads_back_typed() {
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - ls US-*.txt\n\
         convergence: {max_attempts: 2, backoff: 10ms, max_backoff: 10ms}\n\
         escalation:\n  prd: prd.json",
        "STORY={{ story.id }}\n",
    );
    let dir = p.path();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", "Ralph Test"],
        &["config", "user.email", "ralph@example.com"],
        &["config", "commit.gpgsign", "false"],
    ] {
        common::git(dir, args);
    }
    let story = |id: &str| {
        serde_json::json!({"id": id, "title": id, "description": "Do it",
            "acceptanceCriteria": ["ok"], "priority": 1, "passes": false, "notes": ""})
    };
    let prd =
        serde_json::json!({"project": "Shop", "userStories": [story("US-001"), story("US-002")]});
    std::fs::write(dir.join("prd.json"), prd.to_string()).unwrap();
    std::fs::write(
        dir.join("agent.sh"),
        "story=$(grep -o 'STORY=[A-Z0-9-]*' | cut -d= -f2)\necho done > \"$story.txt\"\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n").unwrap();
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-q", "-m", "init"]);
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let text = std::fs::read_to_string(dir.join(".ralph/parallel/events.jsonl")).unwrap();
    let schema = events_schema();
    let mut types = Vec::new();
    for line in text.lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        let mut errors = Vec::new();
        validate(
            &schema,
            &schema["$defs"]["ParallelEvent"],
            &event,
            "",
            &mut errors,
        );
        assert!(errors.is_empty(), "{event}\n{errors:#?}");
        types.push(event["type"].as_str().unwrap().to_owned());
    }
    for t in [
        "PARALLEL_STARTED",
        "LANE_STARTED",
        "TASK_LANDED",
        "PARALLEL_ENDED",
    ] {
        assert!(types.contains(&t.to_owned()), "{t} in {types:?}");
    }
    let typed = ralph_parallel::parse_events(text.as_bytes());
    assert_eq!(typed.len(), types.len());
    assert!(
        typed
            .iter()
            .all(|e| !matches!(e.kind, ralph_parallel::ParallelEventKind::Unknown { .. })),
        "{typed:#?}"
    );
    // Written back, each reads as the line it came from.
    for (event, line) in typed.iter().zip(text.lines()) {
        assert_eq!(serde_json::to_string(event).unwrap(), line);
    }
}

/// Issue 38: a sandboxed run's events, a connection its proxy refused included.
#[test]
fn every_event_of_a_sandboxed_run_with_a_refused_connection_matches_the_schema() {
    let p = Project::new(
        "agent: sh agent.sh\nmax_iterations: 1\nsandbox: true",
        "x\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        "cat >/dev/null\ncurl -s -m 10 -o /dev/null http://refused.example/\n",
    )
    .unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let types = assert_valid(&p);
    assert!(types.iter().any(|t| t == "SANDBOX_DENIED"), "{types:?}");
}
