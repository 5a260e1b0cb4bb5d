use super::*;
use serde_json::{Map, Value, json};

/// Written as a line, then read back.
fn read_back(kind: &EventKind) -> EventKind {
    let event = Event {
        ts: humantime::parse_rfc3339("2026-11-23T08:45:12.123Z").unwrap(),
        run_id: "r".to_owned(),
        kind: kind.clone(),
    };
    let line = serde_json::to_string(&event).unwrap();
    let read: Event = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!((read.ts, read.run_id.as_str()), (event.ts, "r"), "{line}");
    read.kind
}

fn task_fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("{other:?}"),
    }
}

/// One of every kind the engine writes, each field set to something other than its default.
fn every_kind() -> Vec<EventKind> {
    let check = CheckResult {
        command: "cargo test".into(),
        exit_code: Some(101),
        duration_ms: 2300,
        tail: Some("FAILED\n".into()),
        truncated: true,
        timed_out: false,
    };
    let usage = Usage {
        cost_usd: Some(0.25),
        input_tokens: Some(100),
        output_tokens: Some(20),
        session_id: Some("s".into()),
        ..Usage::default()
    };
    vec![
        EventKind::RunStarted {
            events_version: EVENTS_VERSION,
            ralph_file: "RALPH.md".into(),
            agent: "claude -p".into(),
            max_iterations: Some(5),
            idle: Some(IdleSummary {
                delay_ms: 10,
                backoff: 2.5,
                max_delay_ms: 20,
                max_ms: Some(25),
            }),
            max_cost_usd: Some(1.5),
            max_runtime_ms: Some(60_000),
        },
        EventKind::RunResumed {
            iteration: 4,
            previous_reason: "interrupted".into(),
        },
        EventKind::IterationStarted {
            iteration: 1,
            task: task_fields(json!({"story_id": "US-1", "attempt": 2})),
        },
        EventKind::CommandFinished {
            iteration: 1,
            name: "tests".into(),
            exit_code: None,
            duration_ms: 170,
            timed_out: true,
        },
        EventKind::IterationEnded {
            iteration: 1,
            exit_code: Some(3),
            signal: Some(9),
            duration_ms: 48_390,
            timed_out: true,
            termination: Termination::IdleTimeout,
            state: Some("review".into()),
            markers: vec![MarkerRecord {
                kind: "state".into(),
                name: "review".into(),
                attrs: vec![("why".into(), "tests".into())],
            }],
            log_file: Some("iteration-001.log".into()),
            usage: Some(usage.clone()),
            failed: true,
            failure: Some("exit 3".into()),
            failure_kind: Some(FailureKind::ExitStatus),
        },
        EventKind::IterationFailed {
            iteration: 1,
            consecutive_failures: 2,
            failure: "exit 3".into(),
            failure_kind: Some(FailureKind::ExitStatus),
            next_delay_ms: Some(5000),
        },
        EventKind::RateLimited {
            iteration: 2,
            until: humantime::parse_rfc3339("2026-11-23T14:00:00.500Z").unwrap(),
            wait_ms: Some(1000),
            why: "exit 1: You've hit your session limit · resets 2pm (UTC)".into(),
            fallback: Some("codex exec --json".into()),
        },
        EventKind::AgentSwitched {
            iteration: 3,
            from: "claude -p".into(),
            to: "codex exec --json".into(),
            why: SwitchReason::RateLimited,
            until: Some(humantime::parse_rfc3339("2026-11-23T14:00:00.500Z").unwrap()),
        },
        EventKind::AgentSwitched {
            iteration: 5,
            from: "codex exec --json".into(),
            to: "claude -p".into(),
            why: SwitchReason::LimitReset,
            until: None,
        },
        EventKind::AgentRetrying {
            iteration: 2,
            reason: "529 overloaded_error".into(),
            attempt: Some(1),
            max_attempts: Some(10),
            delay_ms: Some(500),
        },
        EventKind::IterationIdle {
            iteration: 3,
            consecutive_idle: 2,
            idle_elapsed_ms: 30,
            next_delay_ms: None,
        },
        EventKind::StateHandled {
            iteration: 3,
            state: "review".into(),
            then: "wait".into(),
            hook_exit_code: Some(0),
        },
        EventKind::AttemptEnded {
            attempt: 2,
            max_attempts: 6,
            iteration: 5,
            duration_ms: 53_420,
            ok: true,
            results: vec![check],
            backoff_ms: Some(2000),
        },
        EventKind::ConfigReloaded { iteration: 6 },
        EventKind::ConfigRejected {
            iteration: 6,
            errors: vec!["RALPH.md:2:1: delay: bad".into()],
        },
        EventKind::WaitStarted {
            iteration: 6,
            reason: WaitReason::RateLimit,
            delay_ms: 1000,
            why: None,
        },
        EventKind::WaitStarted {
            iteration: 6,
            reason: WaitReason::Task,
            delay_ms: 2000,
            why: Some("waiting for an answer in TODO.md:3".into()),
        },
        EventKind::WaitSkipped {
            iteration: 6,
            grace_ms: 1000,
        },
        EventKind::StopRequested { iteration: 7 },
        EventKind::SandboxDenied {
            iteration: 7,
            host: "example.com".into(),
            port: 443,
        },
        EventKind::Warning {
            kind: WarningKind::HookFailed,
            message: "m".into(),
        },
        EventKind::RunEnded {
            reason: EndReason::MaxCost,
            iterations: 7,
            idle_iterations: 2,
            idle_ms: 30,
            exit_code: 1,
            outcome: Some(Outcome::CleanWithFlake),
            flake_retries: Some(1),
            task: task_fields(json!({"stories": {"passed": 1, "blocked": 0, "remaining": 2}})),
            cost_usd: Some(0.25),
            num_turns: Some(3),
            usage: Some(usage),
        },
        EventKind::Task(TaskEvent::new(
            "ISSUE_CLOSED",
            task_fields(json!({"number": 7, "by": {"name": "x"}})),
        )),
    ]
}

#[test]
fn the_engines_own_types_are_exactly_those_it_writes() {
    for kind in every_kind() {
        let written = serde_json::to_value(&kind).unwrap();
        assert_eq!(written["type"], kind.as_str(), "{kind:?}");
        assert_eq!(kind.to_string(), kind.as_str());
    }
    let mut written: Vec<String> = every_kind()
        .iter()
        .filter(|kind| !matches!(kind, EventKind::Task(_)))
        .map(|kind| {
            serde_json::to_value(kind).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    written.sort();
    written.dedup();
    let mut own: Vec<&str> = ENGINE_EVENT_TYPES.to_vec();
    own.sort_unstable();
    assert_eq!(written, own);
    let forged = TaskEvent::new("RUN_ENDED", serde_json::Map::new());
    assert!(matches!(
        EventKind::of_plug(forged, "x"),
        EventKind::Warning { .. }
    ));
    let own_event = TaskEvent::new("REVIEW_ASKED", serde_json::Map::new());
    assert!(matches!(
        EventKind::of_plug(own_event, "x"),
        EventKind::Task(_)
    ));
}

#[test]
fn every_kind_written_reads_back_the_same() {
    let kinds = every_kind();
    let mut types: Vec<String> = kinds
        .iter()
        .map(|k| {
            serde_json::to_value(k).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for kind in kinds {
        assert_eq!(read_back(&kind), kind);
    }
    types.sort();
    types.dedup();
    assert_eq!(types.len(), 21, "one of each kind: {types:?}");
}

#[test]
fn a_wait_reasons_name_is_the_one_written() {
    use WaitReason::*;
    for reason in [Idle, Delay, State, Retry, Failure, RateLimit, Other] {
        assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
    }
}

#[test]
fn every_ending_reads_back_by_its_name_and_exit_code() {
    let ended = |reason: EndReason| EventKind::RunEnded {
        exit_code: crate::end::exit_code(&reason, None),
        reason,
        iterations: 1,
        idle_iterations: 0,
        idle_ms: 0,
        outcome: None,
        flake_retries: None,
        task: Map::new(),
        cost_usd: None,
        num_turns: None,
        usage: None,
    };
    for reason in [
        EndReason::MaxIterations,
        EndReason::MaxIterationsLastFailed,
        EndReason::IdleLimit,
        EndReason::Interrupted,
        EndReason::Cancelled,
        EndReason::AgentFailed,
        EndReason::Converged,
        EndReason::MaxAttemptsReached,
        EndReason::PtyIdleTimeout,
        EndReason::AgentDone,
        EndReason::AgentFailing,
        EndReason::MaxCost,
        EndReason::MaxRuntime,
    ] {
        assert_eq!(read_back(&ended(reason.clone())), ended(reason));
    }
    // A task source's or a state's ending: its name and exit code, which is what the
    // events say of it.
    let other = ended(EndReason::Other {
        reason: "needs_review".into(),
        exit_code: 3,
    });
    for reason in [
        EndReason::State {
            reason: "needs_review".into(),
            exit_code: 3,
        },
        EndReason::Task {
            reason: "needs_review".into(),
            exit_code: 3,
            converged: false,
            resumable: true,
        },
    ] {
        assert_eq!(read_back(&ended(reason)), other);
    }
}

#[test]
fn a_later_versions_values_and_types_still_read() {
    let line = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"paused","new_field":1}"#;
    let event: Event = serde_json::from_str(line).unwrap();
    assert!(matches!(
        event.kind,
        EventKind::IterationEnded {
            termination: Termination::Other,
            ..
        }
    ));
    let line = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"WAIT_STARTED","iteration":1,"reason":"cooldown","delay_ms":5}"#;
    let event: Event = serde_json::from_str(line).unwrap();
    assert!(matches!(
        event.kind,
        EventKind::WaitStarted {
            reason: WaitReason::Other,
            ..
        }
    ));
    // A known type with a field of the wrong type is no task event: it does not read.
    let line = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"WARNING","message":7}"#;
    assert!(serde_json::from_str::<Event>(line).is_err());
    let line = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","message":"m"}"#;
    assert!(serde_json::from_str::<Event>(line).is_err());
}

/// Every sample line of docs/events.md reads, and writes back the same line.
#[test]
fn the_documented_samples_read_back_and_write_the_same() {
    let docs = include_str!("../../../../docs/events.md");
    let samples: Vec<&str> = docs.lines().filter(|l| l.starts_with("{\"ts\"")).collect();
    assert!(samples.len() >= 15, "{}", samples.len());
    for line in samples {
        let event: Event = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let written = serde_json::to_value(&event).unwrap();
        assert_eq!(
            written,
            serde_json::from_str::<Value>(line).unwrap(),
            "{line}"
        );
    }
}

/// The events of the CLI's sample runs (its insta snapshots, times and paths normalised)
/// read as the engine's own, and write back the same.
#[test]
fn the_sample_runs_events_read_back_and_write_the_same() {
    for snap in [
        include_str!("../../../ralph-cli/tests/snapshots/cli__events__idle_run_events.snap"),
        include_str!("../../../ralph-cli/tests/snapshots/cli__events__converging_run_events.snap"),
    ] {
        let json = snap.splitn(3, "---\n").nth(2).unwrap();
        // The normalised numbers become numbers again, and the times times.
        let json = ["duration_ms", "idle_elapsed_ms", "idle_ms"]
            .iter()
            .fold(json.to_owned(), |json, n| {
                json.replace(&format!("\"[{n}]\""), "7")
            })
            .replace("\"[ts]\"", "\"2026-01-01T00:00:00.000Z\"");
        let lines: Vec<Value> = serde_json::from_str(&json).unwrap();
        assert!(lines.len() > 5);
        for line in lines {
            let event: Event = serde_json::from_value(line.clone()).unwrap();
            assert!(!matches!(event.kind, EventKind::Task(_)), "{line}");
            assert_eq!(serde_json::to_value(&event).unwrap(), line);
        }
    }
}

/// ralph 0.1's events (version 1, before `events_version`): its samples in docs/events.md
/// read as the engine's own events, the missing version as 1.
#[test]
fn a_version_1_file_reads() {
    const V1: &str = include_str!("../../tests/fixtures/events-v1.jsonl");
    let events = crate::run_folder::parse_events(V1.as_bytes());
    assert_eq!(events.len(), V1.lines().count(), "every line reads");
    assert!(matches!(
        events[0].kind,
        EventKind::RunStarted {
            events_version: 1,
            ..
        }
    ));
    let task: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Task(t) => Some(t.type_name()),
            _ => None,
        })
        .collect();
    assert_eq!(task, ["CIRCUIT_TRIPPED", "REVERTED", "STORY_BLOCKED"]);
    let run = crate::run_folder::RunRecord::from_events("r", &events, None);
    assert_eq!(run.cost_usd, Some(0.9137418));
    assert!(matches!(
        run.status,
        crate::run_folder::RunStatus::Ended {
            reason: EndReason::IdleLimit,
            exit_code: Some(0)
        }
    ));
}

#[test]
fn exit_status_words_a_code_a_signal_or_an_unknown_kill() {
    assert_eq!(exit_status(Some(3), None), "exit 3");
    assert_eq!(exit_status(Some(0), Some(9)), "exit 0");
    assert_eq!(exit_status(None, Some(9)), "killed by signal 9");
    assert_eq!(exit_status(None, None), "killed");
}

#[test]
fn a_warning_reads_back_its_kind_and_an_old_or_newer_one_reads_as_other() {
    let kind = |line: &str| match serde_json::from_str::<EventKind>(line).unwrap() {
        EventKind::Warning { kind, message } => (kind, message),
        other => panic!("{other:?}"),
    };
    let written = r#"{"type":"WARNING","kind":"malformed_marker","message":"m"}"#;
    assert_eq!(
        kind(written),
        (WarningKind::MalformedMarker, "m".to_owned())
    );
    // Before 0.4 a warning had no kind; a later version may write one this one does not know.
    let old = r#"{"type":"WARNING","message":"m"}"#;
    assert_eq!(kind(old), (WarningKind::Other, "m".to_owned()));
    let newer = r#"{"type":"WARNING","kind":"disk_on_fire","message":"m"}"#;
    assert_eq!(kind(newer), (WarningKind::Other, "m".to_owned()));
    let event = EventKind::Warning {
        kind: WarningKind::NotWritten,
        message: "m".into(),
    };
    assert_eq!(serde_json::to_value(&event).unwrap()["kind"], "not_written");
}

#[test]
fn a_failure_kind_reads_back_and_an_old_or_newer_one_still_reads() {
    let failed = |line: &str| match serde_json::from_str::<EventKind>(line).unwrap() {
        EventKind::IterationFailed {
            failure,
            failure_kind,
            ..
        } => (failure, failure_kind),
        other => panic!("{other:?}"),
    };
    let written =
        r#"{"type":"ITERATION_FAILED","failure":"timed out after 1s","failure_kind":"timeout"}"#;
    let words = "timed out after 1s".to_owned();
    assert_eq!(failed(written), (words.clone(), Some(FailureKind::Timeout)));
    // Before 0.4 only the words were written; a later version may write a kind unknown here.
    let old = r#"{"type":"ITERATION_FAILED","failure":"timed out after 1s"}"#;
    assert_eq!(failed(old), (words.clone(), None));
    let newer =
        r#"{"type":"ITERATION_FAILED","failure":"timed out after 1s","failure_kind":"melted"}"#;
    assert_eq!(failed(newer), (words, Some(FailureKind::Other)));
}
