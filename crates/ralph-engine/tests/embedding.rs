//! `docs/embedding.md` shows `examples/custom_state.rs` word for word, and the example runs:
//! what the page tells an embedder to write works, with the library crates alone.

use std::path::Path;

#[allow(dead_code)] // its `main` is the example's; the test calls `run_loop` itself
#[path = "../examples/custom_state.rs"]
mod example;

/// The ```rust blocks of a markdown text.
fn rust_blocks(markdown: &str) -> Vec<&str> {
    markdown
        .split("```rust\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("```\n").map(|(code, _)| code))
        .collect()
}

#[test]
fn every_rust_block_of_the_embedding_page_is_in_the_example_word_for_word() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("../../docs/embedding.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/custom_state.rs")).unwrap();
    let blocks = rust_blocks(&page);
    assert_eq!(
        blocks.len(),
        3,
        "the engine API, a custom state, a custom sink"
    );
    for block in blocks {
        assert!(
            example.contains(block),
            "docs/embedding.md shows code that examples/custom_state.rs does not have:\n{block}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_embedding_example_runs_its_custom_state_and_writes_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("RALPH.md");
    std::fs::write(&path, example::RALPH_MD).unwrap();
    let logs = dir.path().join("logs");
    let outcome = example::run_loop(&path, logs.clone()).await.unwrap();
    assert_eq!(outcome.reason.as_str(), "max_iterations");
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(outcome.iterations, 3);

    // The engine keeps the run's own copy of its events in the log folder.
    let events = std::fs::read_to_string(logs.join("events.jsonl")).unwrap();
    let waits: Vec<u64> = events
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|e| e["type"] == "WAIT_STARTED")
        .map(|e| e["delay_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(waits, [1_000, 2_000], "the handler's growing polls");
    let last = events.lines().last().unwrap();
    assert!(last.contains("\"RUN_ENDED\""), "{last}");
}
