//! The events schema: every event of representative runs, with times and ids normalised,
//! pinned as snapshots. A change to a type or field shows up here and in docs/events.md.

use crate::common;

use common::{Project, code, fake_agent};
use serde_json::Value;

/// Replaces what differs between runs (times, ids, paths) with placeholders.
fn normalise(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .map(|mut e| {
            let obj = e.as_object_mut().unwrap();
            for (key, value) in obj.iter_mut() {
                let varies = matches!(
                    key.as_str(),
                    "ts" | "run_id"
                        | "duration_ms"
                        | "idle_elapsed_ms"
                        | "idle_ms"
                        | "log_file"
                        | "agent"
                        | "ralph_file"
                );
                if varies && !value.is_null() {
                    *value = Value::String(format!("[{key}]"));
                }
            }
            if let Some(results) = obj.get_mut("results").and_then(Value::as_array_mut) {
                for r in results {
                    r["duration_ms"] = Value::String("[duration_ms]".into());
                }
            }
            e
        })
        .collect()
}

#[test]
fn every_field_has_a_valid_timestamp_and_the_run_id() {
    let p = Project::new(&format!("agent: '{} --out x'", fake_agent()), "x\n");
    assert_eq!(code(&p.run(&["run", "-n", "2"])), 0);
    let events = p.events();
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    for e in &events {
        assert_eq!(e["run_id"], run_id.as_str());
        let ts = e["ts"].as_str().unwrap();
        assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
        assert_eq!(
            ts.len(),
            "2026-11-23T08:45:12.123Z".len(),
            "millisecond precision: {ts}"
        );
        let kind = e["type"].as_str().unwrap();
        assert!(
            kind.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
            "{kind}"
        );
    }
}

#[test]
fn idle_run_events() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker idle'\ncommands:\n  - name: status\n    run: echo ok\nidle: {{delay: 10ms, backoff: 2, max_delay: 20ms, max: 25ms}}",
            fake_agent()
        ),
        "{{ commands.status }}\n",
    );
    assert_eq!(code(&p.run(&["run", "-n", "5"])), 0);
    insta::assert_json_snapshot!(normalise(p.events()));
}

#[test]
fn converging_run_events() {
    let p = Project::new(
        &format!(
            "agent: '{} --out work'\ndone_when:\n  - '[ \"$RALPH_ITERATION\" -ge 2 ] || {{ echo not yet; exit 1; }}'\nconvergence: {{backoff: 5ms}}",
            fake_agent()
        ),
        "x\n",
    );
    assert_eq!(code(&p.run(&["run"])), 0);
    insta::assert_json_snapshot!(normalise(p.events()));
}
