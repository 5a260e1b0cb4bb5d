//! Reading a run folder's stories back: what escalation's events and task fields in a
//! [`RunRecord`] ([`crate::run_folder`], which keeps them as written) say about stories,
//! for `ralph runs`, `ralph report` and embedders.
//!
//! An iteration's story and attempt come from its `ITERATION_STARTED`
//! ([`StoryAttempt`](super::StoryAttempt)), or else from the `STORY_STARTED` before it; passes,
//! blocks and trips from escalation's [`StoryEvent`]s; the counts from `RUN_ENDED` ([`StoriesSummary`]), or, while a run has not
//! ended, from the passes and blocks so far.

use crate::run_folder::{IterationOutcome, RunRecord, RunStatus};
use serde::{Deserialize, Serialize};

use super::{StoriesSummary, StoryEvent};

/// The story of one iteration: read from its `ITERATION_STARTED`'s task fields
/// ([`StoryAttempt::fields`](super::StoryAttempt::fields)), as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IterationStory {
    /// The story, in story mode.
    pub story_id: Option<String>,
    /// The attempt on the story, in story mode.
    pub attempt: Option<u64>,
}

/// A circuit-breaker trip (`CIRCUIT_TRIPPED`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TripRecord {
    /// The iteration it followed; 0 before the first.
    pub iteration: u64,
    /// The story, if any.
    pub story_id: Option<String>,
    /// `same_error`, `max_attempts` or `blocked`.
    pub reason: String,
    /// The streak or attempt count.
    pub count: u64,
}

/// Stories of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StoryCounts {
    /// Passed.
    pub passed: u64,
    /// Blocked.
    pub blocked: u64,
    /// Still to do; `None` while the run goes on.
    pub remaining: Option<u64>,
}

/// What a run's events say about its stories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RunStories {
    /// One per iteration of the run, in the same order.
    pub iterations: Vec<IterationStory>,
    /// Circuit-breaker trips.
    pub trips: Vec<TripRecord>,
    /// Stories passed, blocked and remaining, from `RUN_ENDED`; while a run goes on, only
    /// `passed` and `blocked`, counted from the events. `None` without stories.
    pub counts: Option<StoryCounts>,
}

impl RunStories {
    /// Reads the stories of `run`, and marks the outcome of each iteration its story's events
    /// decide: converged when its story passed (unless it failed), blocked when the breaker
    /// tripped or its story was blocked.
    pub fn read(run: &mut RunRecord) -> Self {
        let mut stories = RunStories::default();
        // Each event with the index of the iteration it came during (events are in order, and
        // so are iterations, so one cursor finds them all).
        let mut cursor = 0;
        let events: Vec<(Option<usize>, StoryEvent)> = run
            .task_events
            .iter()
            .filter_map(|record| {
                let at = record.iteration.and_then(|n| {
                    let found = run.iterations[cursor..]
                        .iter()
                        .position(|it| it.iteration == n)?;
                    cursor += found;
                    Some(cursor)
                });
                Some((at, StoryEvent::from_task_event(&record.event)?))
            })
            .collect();
        let mut events = events.into_iter().peekable();
        let mut started: Option<(String, u64)> = None;
        let (mut passed, mut blocked) = (0, 0);
        for index in 0..=run.iterations.len() {
            // The events before this iteration started.
            while let Some((at, event)) = events.next_if(|(at, _)| at.is_none_or(|i| i < index)) {
                match event {
                    StoryEvent::StoryStarted {
                        story_id, attempt, ..
                    } => started = Some((story_id, attempt)),
                    StoryEvent::StoryPassed { .. } => {
                        passed += 1;
                        if let Some(it) = at.map(|i| &mut run.iterations[i]) {
                            if it.outcome != IterationOutcome::Failed {
                                it.outcome = IterationOutcome::Converged;
                            }
                        }
                    }
                    StoryEvent::StoryBlocked { .. } => {
                        blocked += 1;
                        if let Some(i) = at {
                            run.iterations[i].outcome = IterationOutcome::Blocked;
                        }
                    }
                    StoryEvent::CircuitTripped {
                        story_id,
                        reason,
                        count,
                        ..
                    } => {
                        stories.trips.push(TripRecord {
                            iteration: at.map_or(0, |i| run.iterations[i].iteration),
                            story_id,
                            reason,
                            count,
                        });
                        if let Some(i) = at {
                            run.iterations[i].outcome = IterationOutcome::Blocked;
                        }
                    }
                    _ => {}
                }
            }
            let Some(it) = run.iterations.get(index) else {
                break;
            };
            let own = IterationStory::deserialize(&it.task).unwrap_or_default();
            let (story_id, attempt) = started.clone().unzip();
            stories.iterations.push(IterationStory {
                story_id: own.story_id.or(story_id),
                attempt: own.attempt.or(attempt),
            });
        }
        stories.counts = match &run.status {
            RunStatus::Ended { .. } => {
                StoriesSummary::from_fields(&run.task_summary).map(|s| StoryCounts {
                    passed: s.passed,
                    blocked: s.blocked,
                    remaining: Some(s.remaining),
                })
            }
            _ => (passed > 0 || blocked > 0).then_some(StoryCounts {
                passed,
                blocked,
                remaining: None,
            }),
        };
        stories
    }

    /// Whether any iteration worked on a story.
    pub fn story_mode(&self) -> bool {
        self.iterations.iter().any(|it| it.story_id.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_folder::parse_events;

    fn read(text: &str) -> (RunRecord, RunStories) {
        let mut run = RunRecord::from_events("r", &parse_events(text.as_bytes()), None);
        let stories = RunStories::read(&mut run);
        (run, stories)
    }

    #[test]
    fn an_iteration_without_story_fields_takes_the_story_started_before_it() {
        let (run, stories) = read(
            r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED"}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"STORY_STARTED","story_id":"US-1","title":"t","attempt":2,"max_attempts":3}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural"}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_FAILED","iteration":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"STORY_STARTED","story_id":"US-2","title":"t","attempt":1,"max_attempts":3}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":2,"story_id":"US-9"}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"RUN_ENDED","reason":"interrupted","exit_code":130,"stories":{"passed":0,"blocked":0,"remaining":1}}
"#,
        );
        assert_eq!(run.iterations[0].outcome, IterationOutcome::Failed);
        let of = |i: usize| {
            let it = &stories.iterations[i];
            (it.story_id.as_deref(), it.attempt)
        };
        assert_eq!(of(0), (Some("US-1"), Some(2)));
        // The event's own story wins; its missing attempt comes from STORY_STARTED.
        assert_eq!(of(1), (Some("US-9"), Some(1)));
        assert_eq!(
            stories.counts,
            Some(StoryCounts {
                passed: 0,
                blocked: 0,
                remaining: Some(1)
            })
        );
    }

    #[test]
    fn passes_blocks_and_trips_mark_their_iteration_and_are_counted_until_the_run_ends() {
        let text = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED"}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"CIRCUIT_TRIPPED","story_id":null,"reason":"blocked","count":1,"signature":null}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1,"story_id":"US-1","attempt":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","failed":false}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"STORY_PASSED","story_id":"US-1","attempts":1,"checkpoint":null}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":2,"story_id":"US-2","attempt":1}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":2,"exit_code":1,"termination":"natural","failed":true}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"STORY_PASSED","story_id":"US-2","attempts":1,"checkpoint":null}
{"ts":"2026-01-01T00:00:02.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":3,"story_id":"US-3","attempt":1}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":3,"exit_code":0,"termination":"natural","failed":false}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"CIRCUIT_TRIPPED","story_id":"US-3","reason":"same_error","count":3,"signature":"00ff00ff00ff00ff"}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"STORY_BLOCKED","story_id":"US-3","reason":"r"}
{"ts":"2026-01-01T00:00:03.000Z","run_id":"r","type":"ISSUE_CLOSED","number":7}
"#;
        let (run, stories) = read(text);
        let outcomes: Vec<_> = run.iterations.iter().map(|i| i.outcome).collect();
        assert_eq!(
            outcomes,
            [
                IterationOutcome::Converged,
                IterationOutcome::Failed,
                IterationOutcome::Blocked
            ]
        );
        let trips: Vec<_> = stories
            .trips
            .iter()
            .map(|t| {
                (
                    t.iteration,
                    t.story_id.as_deref(),
                    t.reason.as_str(),
                    t.count,
                )
            })
            .collect();
        assert_eq!(
            trips,
            [(0, None, "blocked", 1), (3, Some("US-3"), "same_error", 3)]
        );
        assert_eq!(
            stories.counts,
            Some(StoryCounts {
                passed: 2,
                blocked: 1,
                remaining: None
            })
        );
        // Once RUN_ENDED is written, its counts are the run's.
        let ended = format!(
            "{text}{}\n",
            r#"{"ts":"2026-01-01T00:00:04.000Z","run_id":"r","type":"RUN_ENDED","reason":"stories_blocked","exit_code":1,"stories":{"passed":2,"blocked":1,"remaining":0}}"#
        );
        assert_eq!(read(&ended).1.counts.and_then(|c| c.remaining), Some(0));
    }

    #[test]
    fn a_run_without_stories_has_none() {
        let (_, stories) = read(
            r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"RUN_ENDED","reason":"max_iterations","exit_code":0}
"#,
        );
        assert!(!stories.story_mode());
        assert_eq!(stories.iterations, [IterationStory::default()]);
        assert_eq!((stories.trips.len(), stories.counts), (0, None));
    }
}
