//! What a state handler puts into the agent's next prompt: text once
//! (`StateContext::add_to_next_prompt`) and placeholder values of its own plug
//! (`StateContext::set_placeholder`), here from a hold that releases the loop.

use std::time::Duration;

use ralph_engine::{
    Engine, EngineOptions, HoldAnswer, HoldVerdict, StateContext, StateDecision, StateHandler,
};
use ralph_frontmatter::{Namespace, PlugVocabulary, Vocabulary};

/// Holds for two looks, then releases with the reviewer's words and the next round's number.
struct Review {
    looks: u32,
    round: u32,
}

impl StateHandler for Review {
    type State = ();

    fn on_state(&mut self, _cx: &mut StateContext<'_>) -> StateDecision {
        self.looks = 0;
        StateDecision::hold(Duration::from_millis(5), "a review")
    }

    fn poll_hold(&mut self, cx: &mut StateContext<'_>) -> HoldAnswer {
        self.looks += 1;
        if self.looks < 2 {
            return HoldVerdict::Hold.into();
        }
        self.round += 1;
        if self.round == 1 {
            cx.add_to_next_prompt("The reviewer asks for a test of the empty case.");
        }
        cx.set_placeholder("review", "round", self.round.to_string());
        HoldVerdict::Release.into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_hold_puts_its_words_in_the_next_prompt_once_and_its_values_in_every_later_one()
{
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.txt");
    std::fs::write(
        dir.path().join("RALPH.md"),
        format!(
            "---\nagent: sh -c 'cat >> {0}; echo ==== >> {0}; echo \"<!-- ralph:state review -->\"'\n\
             max_iterations: 3\n---\nRound {{{{ review.round }}}}.\n",
            prompts.display()
        ),
    )
    .unwrap();
    let words = PlugVocabulary::new("review").namespace(Namespace::closed("review", ["round"]));
    let vocabulary = Vocabulary::default().with(words).unwrap();
    let options = EngineOptions::load_with(dir.path(), &vocabulary)
        .unwrap()
        .in_folder(dir.path());
    let mut engine = Engine::new(options);
    engine
        .state_handlers()
        .register("review", Review { looks: 0, round: 0 });
    let outcome = engine.run().await.unwrap();
    assert_eq!(outcome.iterations, 3);
    let text = std::fs::read_to_string(&prompts).unwrap();
    let prompts: Vec<&str> = text.split("====\n").filter(|p| !p.is_empty()).collect();
    assert_eq!(prompts.len(), 3, "{text}");
    // Before the handler gives it a value, the placeholder stays as written.
    assert_eq!(prompts[0].trim(), "Round {{ review.round }}.");
    assert_eq!(
        prompts[1].trim(),
        "Round 1.\n\nThe reviewer asks for a test of the empty case."
    );
    assert_eq!(
        prompts[2].trim(),
        "Round 2.",
        "the words were for one prompt"
    );
}

/// Emits a `RUN_ENDED` of its own, and a `REVIEW_ASKED`.
struct Forger;

impl StateHandler for Forger {
    type State = ();

    fn on_state(&mut self, cx: &mut StateContext<'_>) -> StateDecision {
        let mut fields = serde_json::Map::new();
        fields.insert("reason".into(), "review".into());
        cx.emit(ralph_engine::TaskEvent::new("RUN_ENDED", fields.clone()));
        cx.emit(ralph_engine::TaskEvent::new("REVIEW_ASKED", fields));
        StateDecision::Continue
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_emits_its_own_events_and_never_the_engines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("RALPH.md"),
        "---\nagent: echo '<!-- ralph:state review -->'\nmax_iterations: 3\n---\nGo.\n",
    )
    .unwrap();
    let mut engine = Engine::new(
        EngineOptions::load(dir.path())
            .unwrap()
            .in_folder(dir.path()),
    );
    engine.state_handlers().register("review", Forger);
    let outcome = engine.run().await.unwrap();
    let events = std::fs::read_to_string(outcome.log_dir.unwrap().join("events.jsonl")).unwrap();
    let count = |ty: &str| {
        events
            .lines()
            .filter(|l| l.contains(&format!("\"type\":\"{ty}\"")))
            .count()
    };
    assert_eq!(count("RUN_ENDED"), 1, "{events}");
    assert_eq!(count("REVIEW_ASKED"), 3);
    assert!(
        events
            .contains("a state handler emitted a `RUN_ENDED` event, which only the engine writes"),
        "{events}"
    );
}
