//! `docs/embedding.md` shows `examples/custom_state.rs`, `examples/parallel_engines.rs` and
//! `examples/checklist_source.rs` word for word, and the examples run: what the page tells an
//! embedder to write works, with the library crates alone.

use std::path::Path;

use ralph_engine::EventKind;

#[allow(dead_code)] // its `main` is the example's; the test calls `run_loop` itself
#[path = "../examples/custom_state.rs"]
mod example;

#[allow(dead_code)] // its `main` is the example's; the test calls `run_both` itself
#[path = "../examples/parallel_engines.rs"]
mod parallel;

#[allow(dead_code)] // its `main` is the example's; the test calls `run_checklist` itself
#[path = "../examples/checklist_source.rs"]
mod checklist;

#[allow(dead_code)] // its `main` is the example's; the test calls `start_in` itself
#[path = "../examples/claimed_folder.rs"]
mod claimed;

#[allow(dead_code)] // its `main` is the example's; the test calls `start` itself
#[path = "../examples/holding_state.rs"]
mod holding;

#[allow(dead_code)] // its `main` is the example's; the test calls `run_acme` itself
#[path = "../examples/named_adapter.rs"]
mod named;

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
    let examples = [
        "examples/custom_state.rs",
        "examples/parallel_engines.rs",
        "examples/checklist_source.rs",
        "examples/claimed_folder.rs",
        "examples/holding_state.rs",
        "examples/named_adapter.rs",
    ]
    .map(|file| std::fs::read_to_string(root.join(file)).unwrap());
    let blocks = rust_blocks(&page);
    assert_eq!(
        blocks.len(),
        10,
        "the engine API, many loops at once, a loop in its folder, a task source's words, its \
         parsing, the source itself, a custom state, a holding state, a custom sink, a named \
         adapter"
    );
    for block in blocks {
        assert!(
            examples.iter().any(|example| example.contains(block)),
            "docs/embedding.md shows code that no example has:\n{block}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_embedding_example_runs_its_custom_state_and_writes_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("RALPH.md");
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    let ralph_md = example::RALPH_MD.replacen("---\n", "---\nidle_timeout: 0\n", 1);
    std::fs::write(&path, ralph_md).unwrap();
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

/// `tokio::spawn(engine.run())` compiles: the run's future is `Send`.
#[test]
fn a_run_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let parsed = ralph_frontmatter::parse("RALPH.md", "---\nagent: echo\n---\nx\n").unwrap();
    let engine =
        ralph_engine::Engine::new(ralph_engine::EngineOptions::new("RALPH.md", parsed.file));
    let fut = engine.run();
    assert_send(&fut);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_engines_run_at_once_and_one_is_cancelled_from_another_task_then_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let (tests, docs) = (dir.path().join("tests"), dir.path().join("docs"));
    for (folder, text) in [(&tests, parallel::TESTS_MD), (&docs, parallel::DOCS_MD)] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(folder.join("RALPH.md"), text).unwrap();
    }
    let started = std::time::Instant::now();
    let [tests_outcome, cancelled, resumed] = parallel::run_both(&tests, &docs).await.unwrap();
    assert_eq!(tests_outcome.reason.as_str(), "max_iterations");
    assert_eq!((tests_outcome.iterations, tests_outcome.exit_code), (3, 0));
    assert_eq!(cancelled.reason.as_str(), "cancelled");
    assert_eq!(cancelled.exit_code, 1);
    assert!(cancelled.resumable);
    // The resumed run is the cancelled one, gone on to its own limit.
    assert_eq!(resumed.run_id, cancelled.run_id);
    assert_eq!(resumed.reason.as_str(), "max_iterations");
    assert_eq!((resumed.iterations, resumed.exit_code), (2, 0));
    // Laid out as `ralph run` lays it out: one run folder, named in `.ralph/current`.
    let log_dir = resumed.log_dir.clone().unwrap();
    assert_eq!(log_dir, docs.join(".ralph/runs").join(&resumed.run_id));
    assert_eq!(
        ralph_events::session::last_run(&docs),
        Some(log_dir.clone())
    );
    let events = std::fs::read_to_string(log_dir.join("events.jsonl")).unwrap();
    let ended: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"RUN_ENDED\""))
        .collect();
    assert_eq!(ended.len(), 2, "cancelled, then the end: {events}");
    assert!(events.contains("\"RUN_RESUMED\""), "{events}");
    // The cancelled agent (`sleep 1`, twice more at most) was stopped, not waited for.
    assert!(started.elapsed() < std::time::Duration::from_secs(50));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_hands_over_every_event_of_its_run_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("a"), dir.path().join("b"));
    for folder in [&first, &second] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(folder.join("RALPH.md"), parallel::TESTS_MD).unwrap();
    }
    let (mut a, mut b) = (
        parallel::start(&first).unwrap(),
        parallel::start(&second).unwrap(),
    );
    let types = |events: Vec<ralph_engine::Event>| {
        let ids: std::collections::BTreeSet<String> =
            events.iter().map(|e| e.run_id.clone()).collect();
        assert_eq!(ids.len(), 1, "one run's events: {ids:?}");
        let json: Vec<serde_json::Value> = events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        (
            ids.into_iter().next().unwrap(),
            json.iter()
                .map(|e| e["type"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>(),
        )
    };
    let (mut ea, mut eb) = (Vec::new(), Vec::new());
    while let Some(event) = a.next_event().await {
        ea.push(event);
    }
    while let Some(event) = b.next_event().await {
        eb.push(event);
    }
    let (id_a, types_a) = types(ea);
    let (id_b, types_b) = types(eb);
    assert_ne!(id_a, id_b, "each run its own id");
    for types in [&types_a, &types_b] {
        assert_eq!(types.first().map(String::as_str), Some("RUN_STARTED"));
        assert_eq!(types.last().map(String::as_str), Some("RUN_ENDED"));
        assert_eq!(types.iter().filter(|t| *t == "ITERATION_ENDED").count(), 3);
    }
    assert_eq!(a.wait().await.unwrap().exit_code, 0);
    assert_eq!(b.wait().await.unwrap().exit_code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_source_with_its_own_placeholders_and_section_works_through_its_checklist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("RALPH.md");
    std::fs::write(&path, checklist::RALPH_MD).unwrap();
    std::fs::write(dir.path().join("TODO.md"), checklist::TODO_MD).unwrap();
    let outcome = checklist::run_checklist(&path).await.unwrap();
    assert_eq!(outcome.reason.as_str(), "checklist_done");
    assert_eq!((outcome.iterations, outcome.exit_code), (2, 0));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("TODO.md")).unwrap(),
        "# Release\n- [x] write the changelog\n- [x] tag v1.0\n"
    );
}

/// An agent that reports an API error while exiting 0 has failed: the guide's source leaves
/// the item open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checklist_source_leaves_an_item_open_when_the_agent_failed_but_exited_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("RALPH.md");
    let agent = dir.path().join("agent.sh");
    std::fs::write(
        &agent,
        r#"cat >/dev/null
echo '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 overloaded"}'
"#,
    )
    .unwrap();
    let failing = format!(
        "---\nagent: sh {}\noutput: claude-stream-json\nmax_iterations: 2\n\
         failure: {{delay: 10ms}}\nchecklist:\n  file: TODO.md\n---\nDo {{{{ task.item }}}}.\n",
        agent.display()
    );
    std::fs::write(&path, failing).unwrap();
    std::fs::write(dir.path().join("TODO.md"), checklist::TODO_MD).unwrap();
    let outcome = checklist::run_checklist(&path).await.unwrap();
    assert_eq!(outcome.reason.as_str(), "max_iterations");
    assert_eq!(
        (outcome.iterations, outcome.exit_code),
        (2, 1),
        "the last run failed"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("TODO.md")).unwrap(),
        checklist::TODO_MD,
        "nothing ticked off a failed run"
    );
}

#[test]
fn the_checklist_sources_words_are_checked_where_they_are_written() {
    use ralph_frontmatter::{Vocabulary, parse, parse_with};
    let vocabulary = Vocabulary::default()
        .with(checklist::checklist_words())
        .unwrap();
    let parsed = parse_with("RALPH.md", checklist::RALPH_MD, &vocabulary).unwrap();
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);

    let bad = "---\nagent: cat\nchecklist:\n  file: [TODO.md]\nstates:\n  checklist_done:\n---\n\
               {{ task.iten }}\n";
    let errors: Vec<String> = parse_with("RALPH.md", bad, &vocabulary)
        .unwrap_err()
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0], "RALPH.md:4:9: checklist.file: expected a path");
    assert!(
        errors[1].starts_with("RALPH.md:6:3: states.checklist_done: `checklist_done` is a reason"),
        "{errors:?}"
    );
    let warned = parse_with(
        "RALPH.md",
        "---\nagent: cat\n---\n{{ task.iten }}\n",
        &vocabulary,
    )
    .unwrap()
    .warnings;
    assert_eq!(
        warned[0].to_string(),
        "RALPH.md:4:1: task.iten: `task` has no such value (known: item); did you mean `item`?"
    );

    // Parsed without the source's words, its section is an unknown key.
    let plain = parse("RALPH.md", checklist::RALPH_MD).unwrap_err();
    assert!(
        plain.errors[0]
            .to_string()
            .starts_with("RALPH.md:3:1: checklist: unknown key"),
        "{plain:?}"
    );
}

/// What `ralph status` and `ralph runs` read of a folder: a library-driven run holding its
/// folder is running there, named in `.ralph/current`, and a second loop is refused; once it
/// ends, it reads as ended and the folder is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_claims_its_folder_reads_as_running_and_refuses_a_second_loop() {
    use ralph_engine::FolderClaim;
    use ralph_events::run_folder::{self, RunRecord};
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path();
    std::fs::write(
        folder.join("RALPH.md"),
        "---\nagent: sleep 60\n---\nTidy up.\n",
    )
    .unwrap();
    let mut run = claimed::start_in(folder).unwrap();
    while let Some(event) = run.next_event().await {
        if matches!(event.kind, ralph_engine::EventKind::IterationStarted { .. }) {
            break;
        }
    }
    let holder = FolderClaim::running_in(folder).expect("the folder's lock names the run");
    assert_eq!(holder.pid, std::process::id());
    let found = run_folder::find_run(folder, None).unwrap();
    assert_eq!(found.id, holder.run_id);
    assert!(
        RunRecord::read(&found, FolderClaim::running_in(folder).as_ref())
            .unwrap()
            .is_running(),
        "as `ralph runs` reads it"
    );
    let current = ralph_events::session::read_current(folder).expect(".ralph/current");
    let session = ralph_events::session::Session::read(&current).unwrap();
    assert_eq!(session.run_id, holder.run_id, "as `ralph status` finds it");
    let refused = claimed::start_in(folder).unwrap_err().to_string();
    assert!(refused.contains(&holder.run_id), "{refused}");

    run.cancel();
    let outcome = run.wait().await.unwrap();
    assert_eq!(outcome.reason.as_str(), "cancelled");
    assert!(
        FolderClaim::running_in(folder).is_none(),
        "the folder is let go"
    );
    assert!(
        !RunRecord::read(&found, FolderClaim::running_in(folder).as_ref())
            .unwrap()
            .is_running()
    );
    // Other tests of this process spawn meanwhile, and a child between its fork and its exec
    // holds a copy of every descriptor, the folder's lock too: a new claim may wait for that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let again = loop {
        match claimed::start_in(folder) {
            Ok(run) => break run,
            Err(err) if std::time::Instant::now() < deadline => {
                assert!(err.to_string().contains("this folder"), "{err}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(err) => panic!("the folder was never let go: {err}"),
        }
    };
    again.cancel();
    again.wait().await.unwrap();
}

/// A state that holds the loop until a file appears: one agent run, however long it holds, and
/// the hold announced once however many times the handler is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holding_state_waits_for_a_file_with_exactly_one_agent_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("RALPH.md"), holding::RALPH_MD).unwrap();
    let mut run = holding::start(dir.path()).unwrap();
    let mut kinds = Vec::new();
    while let Some(event) = run.next_event().await {
        if let EventKind::WaitStarted { why, .. } = &event.kind {
            assert!(why.as_deref().unwrap().contains("APPROVED"), "{why:?}");
            // Held for a while: many polls, no agent run.
            tokio::time::sleep(std::time::Duration::from_millis(400)).await;
            std::fs::write(dir.path().join("APPROVED"), "lgtm\n").unwrap();
        }
        kinds.push(event.kind);
    }
    let outcome = run.wait().await.unwrap();
    assert_eq!(outcome.reason.as_str(), "approved");
    assert_eq!((outcome.iterations, outcome.exit_code), (1, 0));
    let count = |f: fn(&EventKind) -> bool| kinds.iter().filter(|k| f(k)).count();
    assert_eq!(
        count(|k| matches!(k, EventKind::IterationStarted { .. })),
        1
    );
    assert_eq!(count(|k| matches!(k, EventKind::WaitStarted { .. })), 1);
    let session = ralph_events::session::Session::read(&outcome.log_dir.unwrap()).unwrap();
    assert_eq!(session.tally.iteration, 1);
}

/// `output: acme-json` names the embedder's adapter: it reads the agent (its result's marker
/// ends the run, its cost is the run's); a file naming an adapter nobody registered does not
/// start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_named_in_the_ralph_md_reads_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("RALPH.md"), named::RALPH_MD).unwrap();
    let outcome = named::run_acme(dir.path()).await.unwrap();
    assert_eq!(outcome.reason.as_str(), "agent_done");
    assert_eq!(outcome.iterations, 1);
    assert_eq!(outcome.cost_usd, Some(0.25));
    let log = std::fs::read_to_string(outcome.log_dir.unwrap().join("iteration-001.log"))
        .unwrap_or_default();
    assert!(log.contains("fixing"), "{log}");

    let words = ralph_frontmatter::PlugVocabulary::new("acme").outputs(["acme-json"]);
    let vocabulary = ralph_frontmatter::Vocabulary::default()
        .with(words)
        .unwrap();
    let options = ralph_engine::EngineOptions::load_with(dir.path(), &vocabulary).unwrap();
    let err = ralph_engine::Engine::new(options).run().await.unwrap_err();
    assert!(
        matches!(&err, ralph_engine::EngineError::NoAdapter { name } if name == "acme-json"),
        "{err}"
    );
    // Without the plug's words, the name is no output format.
    let unknown = ralph_engine::EngineOptions::load(dir.path())
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("output: expected \"text\""), "{unknown}");
}
