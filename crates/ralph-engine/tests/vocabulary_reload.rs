//! A RALPH.md edited during a run is read again with the plugs' words the run was given
//! (`EngineOptions::vocabulary`), not as a plain file.

use std::sync::{Arc, Mutex};

use ralph_engine::{Engine, EngineOptions, Event, EventKind, EventSink};
use ralph_frontmatter::{PlugVocabulary, Vocabulary};

/// Collects events for the test to read.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Event>>>);

impl EventSink for Recorder {
    fn event(&mut self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

/// The agent replaces the RALPH.md with NEXT.md, which declares a state named like the
/// plug's ending; the second iteration reloads it. What the reload said, per event.
async fn reload_with(vocabulary: Vocabulary) -> Vec<EventKind> {
    let dir = tempfile::tempdir().unwrap();
    let agent = "agent: sh -c 'cat > /dev/null; cp NEXT.md RALPH.md'";
    std::fs::write(
        dir.path().join("RALPH.md"),
        format!("---\n{agent}\n---\nx\n"),
    )
    .unwrap();
    let next = format!("---\n{agent}\nstates:\n  checklist_done:\n---\ny\n");
    std::fs::write(dir.path().join("NEXT.md"), next).unwrap();
    let path = dir.path().join("RALPH.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let parsed = ralph_frontmatter::parse_with("RALPH.md", &text, &vocabulary).unwrap();
    let mut options = EngineOptions::new(&path, parsed.file);
    options.vocabulary = vocabulary;
    options.reload = true;
    options.cwd = dir.path().to_path_buf();
    options.overrides.max_iterations = Some(2);
    let recorder = Recorder::default();
    let mut engine = Engine::new(options);
    engine.add_sink(recorder.clone());
    engine.run().await.unwrap();
    let events = recorder.0.lock().unwrap();
    events
        .iter()
        .map(|event| event.kind.clone())
        .filter(|kind| {
            matches!(
                kind,
                EventKind::ConfigReloaded { .. } | EventKind::ConfigRejected { .. }
            )
        })
        .collect()
}

#[tokio::test]
async fn an_edit_is_checked_with_the_vocabulary_the_run_was_given() {
    let checklist = PlugVocabulary::new("checklist").end_reasons(["checklist_done"]);
    let vocabulary = Vocabulary::default().with(checklist).unwrap();
    let said = reload_with(vocabulary).await;
    let [EventKind::ConfigRejected { iteration, errors }] = said.as_slice() else {
        panic!("expected one CONFIG_REJECTED: {said:?}");
    };
    assert_eq!(*iteration, 2);
    assert!(
        errors[0].contains("states.checklist_done: `checklist_done` is a reason ralph gives"),
        "{errors:?}"
    );

    // Without the plug, the name is free and the edit is taken.
    let said = reload_with(Vocabulary::default()).await;
    assert!(
        matches!(
            said.as_slice(),
            [EventKind::ConfigReloaded { iteration: 2 }]
        ),
        "{said:?}"
    );
}
