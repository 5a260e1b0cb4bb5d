//! Measures how long loading a large prd.json takes: 100,000 small stories, one per line (about
//! 7 MB), loaded with `Prd::load` three times; prints the median. Then the same through
//! `prd::Cache` when the file has not changed (what escalation's second and later reads in one
//! step cost).
//!
//! Run with `cargo run --release --example prd_load -p ralph-tasks`.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use ralph_tasks::{Prd, prd::Cache};

const STORIES: usize = 100_000;
const RUNS: usize = 3;

fn main() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("prd.json");
    let stories: Vec<serde_json::Value> = (0..STORIES)
        .map(|i| {
            serde_json::json!({
                "id": format!("US-{i:06}"),
                "title": format!("Story {i}"),
                "priority": i % 10,
                "passes": i % 3 == 0
            })
        })
        .collect();
    let lines: Vec<String> = stories.iter().map(|s| format!("    {s}")).collect();
    let text = format!(
        "{{\n  \"project\": \"Big\",\n  \"userStories\": [\n{}\n  ]\n}}\n",
        lines.join(",\n")
    );
    std::fs::write(&path, &text).expect("prd.json written");

    let median = |load: &mut dyn FnMut() -> Prd| {
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                let prd = load();
                let elapsed = start.elapsed();
                assert_eq!(prd.stories().len(), STORIES);
                elapsed
            })
            .collect();
        times.sort();
        times[RUNS / 2].as_secs_f64()
    };
    let parse = median(&mut || Prd::load(&path).expect("prd.json loads"));
    let mut cache = Cache::default();
    cache.load(&path).expect("prd.json loads");
    let cached = median(&mut || cache.load(&path).expect("prd.json loads"));
    println!(
        "prd.json with {STORIES} stories ({:.1} MB): median load {parse:.3} s, unchanged re-read \
         through prd::Cache {cached:.3} s ({RUNS} runs each)",
        text.len() as f64 / 1e6,
    );
}
