//! What escalation reports: its events and end reasons are wire types, ralph-events' (a
//! reader needs no escalation to read them), re-exported here as escalation's API.

pub use ralph_events::story::{StoriesSummary, StoryAttempt, StoryEnd, StoryEvent, TaskWords};

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_engine::EndReason;

    #[test]
    fn every_ending_of_escalation_is_a_name_states_cannot_take() {
        let vocabulary = ralph_frontmatter::Vocabulary::default()
            .with(crate::vocabulary())
            .unwrap();
        let reserved = vocabulary.reserved_state_names();
        let reasons = StoryEnd::ALL.map(StoryEnd::as_str);
        for reason in reasons.into_iter().chain([crate::ESCALATION_FAILED]) {
            assert!(reserved.contains(&reason), "{reason}");
        }
    }

    #[test]
    fn only_work_left_is_resumable_and_only_done_is_converged() {
        assert!(ralph_events::session::resumable(
            &StoryEnd::MaxIterationsWorkLeft.reason()
        ));
        assert!(!ralph_events::session::resumable(
            &StoryEnd::StoriesDone.reason()
        ));
        assert!(matches!(
            StoryEnd::StoriesDone.reason(),
            EndReason::Task {
                converged: true,
                ..
            }
        ));
    }
}
