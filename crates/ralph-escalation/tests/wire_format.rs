//! The JSON Lines form of escalation's events and end reasons, pinned byte for byte: readers
//! (`jq` scripts, dashboards) rely on it, wherever the types that write it live.

use std::time::{Duration, SystemTime};

use ralph_engine::{EndReason, Event, EventKind};
use ralph_escalation::{StoriesSummary, StoryEnd, StoryEvent};

fn line(kind: EventKind) -> String {
    let event = Event {
        ts: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
        run_id: "r1".to_owned(),
        kind,
    };
    serde_json::to_string(&event).expect("an event serialises")
}

const HEAD: &str = r#"{"ts":"2023-11-14T22:13:20.123Z","run_id":"r1","#;

fn pinned(kind: impl Into<Kind>, rest: &str) {
    assert_eq!(line(kind.into().0), format!("{HEAD}{rest}"));
}

/// An engine event, or one of escalation's, written as the engine writes a task's events.
struct Kind(EventKind);

impl From<EventKind> for Kind {
    fn from(kind: EventKind) -> Self {
        Kind(kind)
    }
}

impl From<StoryEvent> for Kind {
    fn from(event: StoryEvent) -> Self {
        Kind(EventKind::Task(event.into()))
    }
}

fn fields(pairs: &[(&str, serde_json::Value)]) -> serde_json::Map<String, serde_json::Value> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), value.clone()))
        .collect()
}

#[test]
fn circuit_tripped_keeps_its_wire_form() {
    pinned(
        StoryEvent::CircuitTripped {
            story_id: Some("S-1".into()),
            reason: "same_error".into(),
            count: 3,
            signature: Some("0123456789abcdef".into()),
        },
        r#""type":"CIRCUIT_TRIPPED","story_id":"S-1","reason":"same_error","count":3,"signature":"0123456789abcdef"}"#,
    );
    pinned(
        StoryEvent::CircuitTripped {
            story_id: None,
            reason: "blocked".into(),
            count: 1,
            signature: None,
        },
        r#""type":"CIRCUIT_TRIPPED","story_id":null,"reason":"blocked","count":1,"signature":null}"#,
    );
}

#[test]
fn reverted_keeps_its_wire_form() {
    pinned(
        StoryEvent::Reverted {
            story_id: None,
            checkpoint: "abc123".into(),
            saved_ref: "refs/ralph/attempts/main/1".into(),
        },
        r#""type":"REVERTED","story_id":null,"checkpoint":"abc123","saved_ref":"refs/ralph/attempts/main/1"}"#,
    );
}

#[test]
fn story_blocked_keeps_its_wire_form() {
    pinned(
        StoryEvent::StoryBlocked {
            story_id: "S-2".into(),
            reason: "the same error 3 times".into(),
        },
        r#""type":"STORY_BLOCKED","story_id":"S-2","reason":"the same error 3 times"}"#,
    );
}

#[test]
fn story_passed_keeps_its_wire_form() {
    pinned(
        StoryEvent::StoryPassed {
            story_id: "S-1".into(),
            attempts: 2,
            checkpoint: Some("def456".into()),
        },
        r#""type":"STORY_PASSED","story_id":"S-1","attempts":2,"checkpoint":"def456"}"#,
    );
    pinned(
        StoryEvent::StoryPassed {
            story_id: "S-1".into(),
            attempts: 1,
            checkpoint: None,
        },
        r#""type":"STORY_PASSED","story_id":"S-1","attempts":1,"checkpoint":null}"#,
    );
}

#[test]
fn story_started_keeps_its_wire_form() {
    pinned(
        StoryEvent::StoryStarted {
            story_id: "S-1".into(),
            title: "Add a flag".into(),
            attempt: 1,
            max_attempts: 5,
        },
        r#""type":"STORY_STARTED","story_id":"S-1","title":"Add a flag","attempt":1,"max_attempts":5}"#,
    );
}

#[test]
fn iteration_started_on_a_story_keeps_its_wire_form() {
    pinned(
        EventKind::IterationStarted {
            iteration: 4,
            task: fields(&[("story_id", "S-1".into()), ("attempt", 2.into())]),
        },
        r#""type":"ITERATION_STARTED","iteration":4,"story_id":"S-1","attempt":2}"#,
    );
    pinned(
        EventKind::IterationStarted {
            iteration: 4,
            task: serde_json::Map::new(),
        },
        r#""type":"ITERATION_STARTED","iteration":4}"#,
    );
}

fn run_ended(reason: EndReason, exit_code: i32, stories: Option<StoriesSummary>) -> EventKind {
    EventKind::RunEnded {
        reason,
        iterations: 3,
        idle_iterations: 0,
        idle_ms: 0,
        exit_code,
        outcome: None,
        flake_retries: None,
        task: stories.map(StoriesSummary::fields).unwrap_or_default(),
        cost_usd: Some(0.5),
        num_turns: None,
        usage: None,
    }
}

const COUNTS: StoriesSummary = StoriesSummary {
    passed: 2,
    blocked: 1,
    remaining: 0,
};

#[test]
fn story_end_reasons_keep_their_wire_form() {
    let tail = r#""iterations":3,"idle_iterations":0,"idle_ms":0"#;
    let stories = r#""stories":{"passed":2,"blocked":1,"remaining":0},"cost_usd":0.5}"#;
    pinned(
        run_ended(StoryEnd::StoriesDone.reason(), 0, Some(COUNTS)),
        &format!(r#""type":"RUN_ENDED","reason":"stories_done",{tail},"exit_code":0,{stories}"#),
    );
    pinned(
        run_ended(StoryEnd::StoriesBlocked.reason(), 1, Some(COUNTS)),
        &format!(r#""type":"RUN_ENDED","reason":"stories_blocked",{tail},"exit_code":1,{stories}"#),
    );
    pinned(
        run_ended(StoryEnd::CircuitOpen.reason(), 1, None),
        &format!(
            r#""type":"RUN_ENDED","reason":"circuit_open",{tail},"exit_code":1,"cost_usd":0.5}}"#
        ),
    );
    pinned(
        run_ended(StoryEnd::MaxIterationsWorkLeft.reason(), 1, Some(COUNTS)),
        &format!(
            r#""type":"RUN_ENDED","reason":"max_iterations_work_left",{tail},"exit_code":1,{stories}"#
        ),
    );
}
