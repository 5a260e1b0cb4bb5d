//! Embedding ralph: an output adapter for an agent ralph does not know, named in RALPH.md
//! (`output: acme-json`). The "acme" agent prints one JSON object per line: `{"say": ...}` to
//! show, `{"result": ..., "cost": ...}` at the end. The adapter builds on ralph's bounded line
//! reader (`ralph_agents::Lines`, `ralph_agents::ReadsLines`), as the built-in adapters do.
//! `docs/embedding.md` shows this file's code, and `tests/embedding.rs` checks that it shows it
//! word for word and runs it. Run it with `cargo run -p ralph-engine --example named_adapter`.

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

/// The RALPH.md of this example: the agent is a shell script standing in for "acme".
pub(crate) const RALPH_MD: &str = r#"---
agent: sh -c 'cat >/dev/null; echo "{\"say\":\"fixing\"}"; echo "{\"result\":\"<!-- ralph:state done -->\",\"cost\":0.25}"'
output: acme-json
---
Fix the bug.
"#;

use ralph_agents::{Lines, ReadsLines};
use ralph_engine::{AdapterOutput, OutputAdapter, Stream, Usage};

/// Reads acme's JSON Lines: what it says is shown, its result is the text markers are read in.
#[derive(Default)]
pub(crate) struct AcmeJson {
    lines: Lines,
    cost: Option<f64>,
}

impl ReadsLines for AcmeJson {
    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
    }

    fn line(&mut self, line: &[u8], out: &mut dyn AdapterOutput) {
        let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else {
            return out.show(Stream::Stdout, line); // not acme's JSON: shown as it is
        };
        if let Some(text) = event["say"].as_str() {
            out.show(Stream::Stdout, format!("{text}\n").as_bytes());
        }
        if let Some(result) = event["result"].as_str() {
            out.result_text(Stream::Stdout, result.as_bytes()); // markers are read here
            self.cost = event["cost"].as_f64();
        }
    }
}

impl OutputAdapter for AcmeJson {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        self.feed_lines(stream, bytes, out); // lines at most 16 MiB; stderr shown as is
    }

    fn finish(&mut self, out: &mut dyn AdapterOutput) -> Option<Usage> {
        self.finish_lines(out);
        let mut usage = Usage::default();
        usage.cost_usd = self.cost;
        Some(usage)
    }
}

use ralph_engine::{Engine, EngineOptions, RunOutcome};
use ralph_frontmatter::{PlugVocabulary, Vocabulary};
use std::path::Path;

/// Runs the loop of `folder`'s RALPH.md there, reading `output: acme-json` with [`AcmeJson`].
pub(crate) async fn run_acme(folder: &Path) -> Result<RunOutcome, Box<dyn std::error::Error>> {
    let words = PlugVocabulary::new("acme").outputs(["acme-json"]); // the parser takes the name
    let vocabulary = Vocabulary::default().with(words)?;
    let options = EngineOptions::load_with(folder, &vocabulary)?.in_folder(folder);
    let mut engine = Engine::new(options);
    engine.register_adapter("acme-json", || Box::new(AcmeJson::default())); // one per run
    Ok(engine.run().await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("RALPH.md"), RALPH_MD)?;
    let outcome = run_acme(dir.path()).await?;
    println!(
        "{} after {} iteration(s), ${:.2}",
        outcome.reason,
        outcome.iterations,
        outcome.cost_usd.unwrap_or_default()
    );
    Ok(())
}
