//! The coordinator's decisions, fact by fact: no process, no git, no file.

use super::*;

/// A run of `ids` (listed in priority order), `parallel` lanes at once, a task blocked at its
/// third return.
fn run(ids: &[&str], parallel: usize) -> (Coordinator, Instant) {
    let tasks = ids
        .iter()
        .enumerate()
        .map(|(i, id)| Task::new(*id, *id, i as f64))
        .collect();
    let limits = Limits {
        parallel,
        max_cost: None,
        max_runtime: None,
        same_error_limit: 3,
    };
    let now = Instant::now();
    let session = Session::new("run".to_owned(), "main".to_owned(), 1);
    (Coordinator::new(session, tasks, limits, now), now)
}

fn poll(c: &mut Coordinator, now: Instant) -> Vec<Effect> {
    c.step(Input::Poll { now })
}

/// The tasks a poll makes lanes for.
fn started(effects: &[Effect]) -> Vec<&str> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PrepareLane { task_id, .. } => Some(task_id.as_str()),
            _ => None,
        })
        .collect()
}

/// The task a poll lands, if it lands one.
fn landing(effects: &[Effect]) -> Option<&str> {
    effects.iter().find_map(|e| match e {
        Effect::Land { task_id, .. } => Some(task_id.as_str()),
        _ => None,
    })
}

fn ending(effects: &[Effect]) -> Option<&Ending> {
    effects.iter().find_map(|e| match e {
        Effect::Finish(ending) => Some(ending),
        _ => None,
    })
}

fn ended(c: &mut Coordinator, id: &str, end: LaneEnd) -> Vec<Effect> {
    c.step(Input::LaneEnded {
        task_id: id.to_owned(),
        end,
    })
}

fn landed(c: &mut Coordinator, id: &str, landing: Landing, now: Instant) -> Vec<Effect> {
    c.step(Input::Landed {
        task_id: id.to_owned(),
        landing,
        now,
    })
}

fn commit(id: &str) -> Landing {
    Landing::Landed {
        commit: format!("{id}-landed"),
    }
}

/// Every task passes and lands, one after the other.
fn land_all(c: &mut Coordinator, now: Instant) -> Vec<Effect> {
    loop {
        let effects = poll(c, now);
        for id in started(&effects) {
            ended(c, id, LaneEnd::Passed);
        }
        match landing(&effects) {
            Some(id) => {
                let id = id.to_owned();
                landed(c, &id, commit(&id), now);
            }
            None if ending(&effects).is_some() => return effects,
            None => {}
        }
    }
}

#[test]
fn lanes_start_in_priority_order_up_to_the_slots_and_tasks_land_in_queue_order() {
    let (mut c, now) = run(&["a", "b", "c"], 2);
    let effects = poll(&mut c, now);
    assert_eq!(started(&effects), ["a", "b"]);
    assert!(effects.contains(&Effect::PrepareLane {
        task_id: "a".to_owned(),
        resumed: false,
        first: true,
    }));
    assert_eq!(landing(&effects), None);
    assert!(poll(&mut c, now).is_empty(), "no slot free, nothing queued");
    assert_eq!(
        c.step(Input::LaneReady {
            task_id: "a".to_owned()
        }),
        [Effect::RunLane {
            task_id: "a".to_owned()
        }]
    );

    // b passes first: it is first in the queue.
    let queued = ended(&mut c, "b", LaneEnd::Passed);
    assert_eq!(
        queued,
        [
            Effect::Save,
            Effect::Emit(ParallelEventKind::MergeQueued {
                task_id: "b".to_owned(),
                position: 1,
            }),
        ]
    );
    ended(&mut c, "a", LaneEnd::Passed);
    let effects = poll(&mut c, now);
    assert_eq!(started(&effects), ["c"], "b's slot goes to c");
    assert_eq!(landing(&effects), Some("b"));
    assert_eq!(landing(&poll(&mut c, now)), None, "one landing at a time");

    let effects = landed(&mut c, "b", commit("b"), now);
    assert_eq!(
        effects,
        [
            Effect::Save,
            Effect::ClearJournal,
            Effect::TellLanded {
                task_id: "b".to_owned()
            },
            Effect::Emit(ParallelEventKind::TaskLanded {
                task_id: "b".to_owned(),
                commit: "b-landed".to_owned(),
            }),
        ]
    );
    assert_eq!(c.session.lanes["b"].untold.as_deref(), Some("b-landed"));
    assert_eq!(landing(&poll(&mut c, now)), Some("a"));
    assert_eq!(c.landed(), 1);
}

#[test]
fn a_conflict_sends_the_task_back_first_in_line_with_its_prompt_then_it_lands() {
    let (mut c, now) = run(&["a", "b"], 1);
    assert_eq!(started(&poll(&mut c, now)), ["a"]);
    ended(&mut c, "a", LaneEnd::Passed);
    let effects = poll(&mut c, now);
    assert_eq!(started(&effects), ["b"]);
    assert_eq!(landing(&effects), Some("a"));
    ended(&mut c, "b", LaneEnd::Stopped);

    let sent_back = Landing::SentBack {
        prompt: "merge it again".to_owned(),
    };
    assert_eq!(landed(&mut c, "a", sent_back, now), [Effect::Save]);
    let record = &c.session.lanes["a"];
    assert_eq!(record.returns, 1);
    assert_eq!(record.conflict.as_deref(), Some("merge it again"));
    assert_eq!(record.state, LaneState::Running);
    assert!(c.session.queue.is_empty());

    // Back before any new task, in the lane it had.
    let effects = poll(&mut c, now);
    assert_eq!(
        effects,
        [Effect::PrepareLane {
            task_id: "a".to_owned(),
            resumed: false,
            first: false,
        }]
    );
    ended(&mut c, "a", LaneEnd::Passed);
    assert_eq!(
        c.session.lanes["a"].conflict, None,
        "passed: no conflict left"
    );
    assert_eq!(landing(&poll(&mut c, now)), Some("a"));
    let effects = landed(&mut c, "a", commit("a"), now);
    assert!(effects.contains(&Effect::TellLanded {
        task_id: "a".to_owned()
    }));
    assert_eq!(c.session.lanes["a"].state, LaneState::Landed);
}

#[test]
fn a_task_sent_back_as_often_as_the_limit_is_blocked_and_its_mark_comes_first() {
    let (mut c, now) = run(&["a", "b"], 2);
    poll(&mut c, now);
    for round in 1..=3 {
        ended(&mut c, "a", LaneEnd::Passed);
        assert_eq!(landing(&poll(&mut c, now)), Some("a"));
        let prompt = format!("conflict {round}");
        let effects = landed(&mut c, "a", Landing::SentBack { prompt }, now);
        if round < 3 {
            assert_eq!(effects, [Effect::Save]);
            assert_eq!(started(&poll(&mut c, now)), ["a"]);
        } else {
            assert_eq!(
                effects,
                [
                    Effect::Save,
                    Effect::Retire {
                        task_id: "a".to_owned()
                    }
                ]
            );
        }
    }
    assert_eq!(c.session.lanes["a"].state, LaneState::Blocked);
    // b passed meanwhile: the block's mark goes before its landing.
    ended(&mut c, "b", LaneEnd::Passed);
    let effects = poll(&mut c, now);
    let Some(Effect::MarkBlock { task_id, reason }) = effects.first() else {
        panic!("the block's mark first: {effects:?}");
    };
    assert_eq!(task_id, "a");
    assert!(reason.contains("did not land 3 times"), "{reason}");
    assert_eq!(landing(&effects), None);
}

#[test]
fn a_block_during_a_landing_is_marked_after_it_and_before_the_next_landing() {
    let (mut c, now) = run(&["a", "b", "c"], 3);
    poll(&mut c, now);
    ended(&mut c, "a", LaneEnd::Passed);
    assert_eq!(landing(&poll(&mut c, now)), Some("a"));
    ended(&mut c, "c", LaneEnd::Passed);
    let effects = ended(&mut c, "b", LaneEnd::Blocked("stuck".to_owned()));
    assert_eq!(
        effects,
        [
            Effect::Save,
            Effect::Retire {
                task_id: "b".to_owned()
            }
        ]
    );
    assert_eq!(c.tasks[1].state, TaskState::Blocked);
    assert!(poll(&mut c, now).is_empty(), "a's landing is under way");

    landed(&mut c, "a", commit("a"), now);
    assert_eq!(
        poll(&mut c, now),
        [Effect::MarkBlock {
            task_id: "b".to_owned(),
            reason: "stuck".to_owned(),
        }]
    );
    assert_eq!(
        c.step(Input::BlockMarked {
            task_id: "b".to_owned()
        }),
        [
            Effect::Save,
            Effect::ClearJournal,
            Effect::Emit(ParallelEventKind::TaskBlocked {
                task_id: "b".to_owned(),
                reason: "stuck".to_owned(),
            }),
        ]
    );
    assert_eq!(c.blocked(), 1);
    assert_eq!(landing(&poll(&mut c, now)), Some("c"));
    landed(&mut c, "c", commit("c"), now);
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert_eq!(end.reason, StoryEnd::StoriesBlocked.reason());
    assert_eq!(end.exit_code, 1);
    assert!(!end.resumable);
}

#[test]
fn a_first_ctrl_c_drains_the_queue_and_a_second_stops_now() {
    let (mut c, now) = run(&["a", "b", "c"], 2);
    poll(&mut c, now);
    ended(&mut c, "a", LaneEnd::Passed);

    let first = c.step(Input::Interrupt {
        signal: InterruptSignal::Int,
        now,
    });
    assert_eq!(first, [Effect::Forward(InterruptSignal::Int)]);
    let effects = poll(&mut c, now);
    assert_eq!(started(&effects), Vec::<&str>::new(), "no lane starts");
    assert_eq!(landing(&effects), Some("a"), "what passed still lands");

    let second = c.step(Input::Interrupt {
        signal: InterruptSignal::Int,
        now: now + Duration::from_millis(500),
    });
    assert_eq!(
        second,
        [Effect::Forward(InterruptSignal::Int), Effect::StopChecks]
    );
    assert!(landed(&mut c, "a", Landing::Interrupted, now).is_empty());
    assert_eq!(c.session.queue, ["a"], "still first, for --resume");
    // b's loop stops: the run ends, with nothing more landed.
    assert_eq!(ended(&mut c, "b", LaneEnd::Stopped), [Effect::Save]);
    let effects = poll(&mut c, now);
    assert_eq!(landing(&effects), None);
    let end = ending(&effects).cloned().expect("the end");
    assert_eq!(end.reason, EndReason::Interrupted);
    assert_eq!(end.exit_code, 130);
    assert!(end.resumable);
    assert!(!c.session.ended);
}

#[test]
fn two_ctrl_c_far_apart_stop_now_too_and_sigterm_names_its_exit_code() {
    let (mut c, now) = run(&["a"], 1);
    poll(&mut c, now);
    c.step(Input::Interrupt {
        signal: InterruptSignal::Int,
        now,
    });
    // A second Ctrl+C while the lanes still run stops now, as a loop's running iteration does.
    let later = c.step(Input::Interrupt {
        signal: InterruptSignal::Int,
        now: now + Duration::from_secs(5),
    });
    assert!(later.contains(&Effect::StopChecks), "{later:?}");

    let (mut c, now) = run(&["a"], 1);
    poll(&mut c, now);
    let term = c.step(Input::Interrupt {
        signal: InterruptSignal::Term,
        now,
    });
    assert_eq!(
        term,
        [Effect::Forward(InterruptSignal::Term), Effect::StopChecks]
    );
    ended(&mut c, "a", LaneEnd::Stopped);
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert_eq!(end.reason, EndReason::Interrupted);
    assert_eq!(end.exit_code, 143);
}

#[test]
fn a_spent_cost_budget_stops_every_lane_and_no_lane_starts() {
    let (mut c, now) = run(&["a", "b", "c"], 2);
    c.limits.max_cost = Some(1.0);
    poll(&mut c, now);
    let spend = |c: &mut Coordinator, id: &str, cost: f64| {
        c.step(Input::IterationEnded {
            task_id: id.to_owned(),
            cost: Some(cost),
            now,
        })
    };
    assert!(spend(&mut c, "a", 0.6).is_empty());
    assert_eq!(
        spend(&mut c, "b", 0.4),
        [Effect::Forward(InterruptSignal::Int)]
    );
    assert!(spend(&mut c, "b", 0.4).is_empty(), "stopped once");
    assert!((c.cost() - 1.4).abs() < 1e-9);
    assert!((c.cost_of("b") - 0.8).abs() < 1e-9);

    ended(&mut c, "a", LaneEnd::Passed);
    ended(&mut c, "b", LaneEnd::Stopped);
    let effects = poll(&mut c, now);
    assert_eq!(started(&effects), Vec::<&str>::new(), "c never starts");
    assert_eq!(landing(&effects), Some("a"), "what passed lands");
    landed(&mut c, "a", commit("a"), now);
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert_eq!(end.reason, EndReason::MaxCost);
    assert_eq!(end.exit_code, 1);
    assert!(end.resumable, "b stopped and c is left");
    assert_eq!(end.remaining, 2);
}

#[test]
fn the_runtime_budget_is_spent_on_the_tick_after_it_ran_out() {
    let (mut c, now) = run(&["a"], 1);
    c.limits.max_runtime = Some(Duration::from_secs(60));
    poll(&mut c, now);
    let tick = |c: &mut Coordinator, secs| {
        c.step(Input::Tick {
            now: now + Duration::from_secs(secs),
        })
    };
    assert!(tick(&mut c, 59).is_empty());
    assert_eq!(tick(&mut c, 60), [Effect::Forward(InterruptSignal::Int)]);
    ended(&mut c, "a", LaneEnd::Stopped);
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert_eq!(end.reason, EndReason::MaxRuntime);
    assert_eq!(end.exit_code, 1);
}

#[test]
fn a_lane_ready_once_the_run_stops_never_runs_and_its_task_stays_pending() {
    let (mut c, now) = run(&["a"], 1);
    poll(&mut c, now);
    c.step(Input::Interrupt {
        signal: InterruptSignal::Int,
        now,
    });
    let effects = c.step(Input::LaneReady {
        task_id: "a".to_owned(),
    });
    assert_eq!(
        effects,
        [
            Effect::ReleaseLane {
                task_id: "a".to_owned(),
                retire: true,
            },
            Effect::Save,
        ]
    );
    assert!(!c.session.lanes.contains_key("a"));
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert_eq!(end.remaining, 1);
    assert!(end.resumable);
}

#[test]
fn a_held_landing_lets_the_next_land_and_is_tried_again_a_second_later() {
    let (mut c, now) = run(&["a", "b"], 2);
    poll(&mut c, now);
    ended(&mut c, "a", LaneEnd::Passed);
    ended(&mut c, "b", LaneEnd::Passed);
    assert_eq!(landing(&poll(&mut c, now)), Some("a"));
    let files = vec!["README.md".to_owned()];
    assert_eq!(
        landed(&mut c, "a", Landing::Held(files.clone()), now),
        [
            Effect::ClearJournal,
            Effect::Save,
            Effect::Emit(ParallelEventKind::MergeHeld {
                task_id: "a".to_owned(),
                files: files.clone(),
            }),
        ]
    );
    assert_eq!(c.session.queue, ["a", "b"]);
    assert_eq!(landing(&poll(&mut c, now)), Some("b"));
    landed(&mut c, "b", commit("b"), now);
    // The queue moved: a is tried again at once, only whether it is still held.
    assert_eq!(
        poll(&mut c, now),
        [Effect::Land {
            task_id: "a".to_owned(),
            held: true,
        }]
    );
    assert_eq!(
        landed(&mut c, "a", Landing::Held(files.clone()), now),
        [Effect::ClearJournal],
        "the same files: nothing new to say"
    );
    // Only held landings are left: the run may end, leaving a to --resume.
    let effects = poll(&mut c, now);
    let end = ending(&effects).cloned().expect("the end");
    assert_eq!(end.reason, StoryEnd::WorkLeft.reason());
    assert!(end.resumable);
    let (mut c, now) = run(&["a", "b"], 2);
    poll(&mut c, now);
    ended(&mut c, "a", LaneEnd::Passed);
    poll(&mut c, now);
    landed(&mut c, "a", Landing::Held(files), now);
    assert!(poll(&mut c, now).is_empty(), "b runs; a was just tried");
    let later = now + Duration::from_secs(1);
    assert_eq!(landing(&poll(&mut c, later)), Some("a"));
}

#[test]
fn the_end_is_stories_done_when_every_task_landed_and_work_left_when_one_waits_on_a_block() {
    let (mut c, now) = run(&["a", "b"], 2);
    let effects = land_all(&mut c, now);
    let end = ending(&effects).expect("the end");
    assert_eq!(end.reason, StoryEnd::StoriesDone.reason());
    assert_eq!(end.reason.as_str(), "stories_done");
    assert_eq!(end.exit_code, 0);
    assert!(!end.resumable);
    assert!(c.session.ended);
    assert_eq!(c.landed(), 2);

    // b depends on a, which is blocked: b never starts.
    let (mut c, now) = run(&["a", "b"], 2);
    c.tasks[1].depends_on = vec!["a".to_owned()];
    assert_eq!(started(&poll(&mut c, now)), ["a"]);
    ended(&mut c, "a", LaneEnd::Blocked("no way".to_owned()));
    poll(&mut c, now);
    c.step(Input::BlockMarked {
        task_id: "a".to_owned(),
    });
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert_eq!(end.reason.as_str(), "work_left");
    assert_eq!(end.exit_code, 1);
    assert_eq!(end.remaining, 1);
    assert!(!end.resumable, "nothing stopped: nothing to resume");
}

#[test]
fn a_refused_landing_waits_for_resume_with_a_warning() {
    let (mut c, now) = run(&["a"], 1);
    poll(&mut c, now);
    ended(&mut c, "a", LaneEnd::Passed);
    poll(&mut c, now);
    let effects = landed(
        &mut c,
        "a",
        Landing::Refused("hook said no\n".to_owned()),
        now,
    );
    let [
        Effect::Save,
        Effect::ClearJournal,
        Effect::Warn { task_id, message },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}");
    };
    assert_eq!(task_id, "a");
    assert!(
        message.starts_with("not landed, kept on ralph/a: hook said no\n"),
        "{message}"
    );
    assert!(message.ends_with("`ralph run --parallel 1 --resume` lands it."));
    assert_eq!(
        c.session.lanes["a"].refused.as_deref(),
        Some("hook said no\n")
    );
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert!(end.resumable, "its worktree waits for --resume");
    assert_eq!(end.reason.as_str(), "work_left");

    // --resume queues it again.
    let (mut c, now) = (Coordinator::new(c.session, c.tasks, c.limits, now), now);
    assert!(c.step(Input::Resumed).is_empty());
    assert_eq!(c.session.queue, ["a"]);
    assert_eq!(landing(&poll(&mut c, now)), Some("a"));
}

#[test]
fn resumed_lanes_are_cleaned_and_started_again_before_new_tasks() {
    let (mut c, now) = run(&["a", "b", "c"], 1);
    poll(&mut c, now);
    c.step(Input::LaneStarted {
        task_id: "a".to_owned(),
        run_id: "lane-run".to_owned(),
    });
    c.step(Input::Interrupt {
        signal: InterruptSignal::Term,
        now,
    });
    ended(&mut c, "a", LaneEnd::Stopped);
    assert!(ending(&poll(&mut c, now)).is_some_and(|e| e.resumable));

    let mut c = Coordinator::new(c.session, c.tasks, c.limits, now);
    assert_eq!(
        c.step(Input::Resumed),
        [Effect::CleanLane {
            task_id: "a".to_owned()
        }]
    );
    assert_eq!(
        poll(&mut c, now),
        [Effect::PrepareLane {
            task_id: "a".to_owned(),
            resumed: true,
            first: false,
        }]
    );
}

#[test]
fn a_task_gone_from_the_list_is_dropped_from_the_queue_and_the_run_goes_on() {
    let (mut c, now) = run(&["a", "b"], 1);
    poll(&mut c, now);
    ended(&mut c, "a", LaneEnd::Passed);
    assert_eq!(landing(&poll(&mut c, now)), Some("a"));
    assert_eq!(
        c.step(Input::Gone {
            task_id: "a".to_owned()
        }),
        [
            Effect::Save,
            Effect::Retire {
                task_id: "a".to_owned()
            }
        ]
    );
    assert_eq!(c.session.lanes["a"].state, LaneState::Dropped);
    assert!(c.session.queue.is_empty());
    assert_eq!(c.tasks.len(), 1);
    assert_eq!(started(&poll(&mut c, now)), Vec::<&str>::new(), "b runs");
}

#[test]
fn a_task_whose_branch_is_another_bases_is_left_alone_and_its_slot_goes_to_the_next() {
    let (mut c, now) = run(&["a", "b"], 1);
    assert_eq!(started(&poll(&mut c, now)), ["a"]);
    c.step(Input::LeftAlone {
        task_id: "a".to_owned(),
    });
    assert!(!c.session.lanes.contains_key("a"));
    assert_eq!(started(&poll(&mut c, now)), ["b"]);
    ended(&mut c, "b", LaneEnd::Passed);
    poll(&mut c, now);
    landed(&mut c, "b", commit("b"), now);
    let end = ending(&poll(&mut c, now)).cloned().expect("the end");
    assert_eq!(end.reason.as_str(), "work_left", "a is left");
}

#[test]
fn a_question_is_put_after_the_blocks_before_the_next_landing_and_answered_by_the_next_iteration() {
    let (mut c, now) = run(&["a", "b", "c"], 3);
    poll(&mut c, now);
    ended(&mut c, "c", LaneEnd::Passed);
    let asked = c.step(Input::Asked {
        task_id: "a".to_owned(),
        question: "which port?".to_owned(),
    });
    assert_eq!(asked, [Effect::Save]);
    ended(&mut c, "b", LaneEnd::Blocked("stuck".to_owned()));

    let effects = poll(&mut c, now);
    assert!(matches!(effects.as_slice(), [Effect::MarkBlock { task_id, .. }] if task_id == "b"));
    c.step(Input::BlockMarked {
        task_id: "b".to_owned(),
    });
    assert_eq!(
        poll(&mut c, now),
        [Effect::PutAsk {
            task_id: "a".to_owned(),
            question: "which port?".to_owned(),
        }]
    );
    let put = c.step(Input::AskPut {
        task_id: "a".to_owned(),
        answer_at: Some("TODO.md:3".to_owned()),
    });
    assert_eq!(put, [Effect::Save, Effect::ClearJournal]);
    assert_eq!(c.session.lanes["a"].answer_at.as_deref(), Some("TODO.md:3"));
    assert_eq!(landing(&poll(&mut c, now)), Some("c"));

    // The lane's next iteration: its loop waits on no answer any more.
    let started = c.step(Input::IterationStarted {
        task_id: "a".to_owned(),
    });
    assert_eq!(started, [Effect::Save]);
    assert_eq!(c.session.lanes["a"].question, None);
    assert_eq!(c.session.lanes["a"].answer_at, None);
    assert!(
        c.step(Input::IterationStarted {
            task_id: "a".to_owned()
        })
        .is_empty(),
        "nothing to save when no question waits"
    );
}
