//! Embedding ralph: a task source with words of its own. It works through a Markdown checklist
//! one item per iteration, puts the item in the prompt as `{{ task.item }}`, reads where the
//! checklist is from a `checklist:` section of the RALPH.md, and ends the run as
//! `checklist_done`. `docs/embedding.md` shows this file's code, and `tests/embedding.rs`
//! checks that it shows it word for word and runs it. Run it with
//! `cargo run -p ralph-engine --example checklist_source`.

// An embedder's binary prints; the engine itself never does.
#![allow(clippy::print_stdout)]

/// The RALPH.md of this example: the agent prints its prompt, so the item shows.
pub(crate) const RALPH_MD: &str = "---\nagent: cat\nchecklist:\n  file: TODO.md\n---\n\
                                   Do this, and only this: {{ task.item }}\n";
/// The checklist it works through.
pub(crate) const TODO_MD: &str = "# Release\n- [ ] write the changelog\n- [ ] tag v1.0\n";

use ralph_frontmatter::{Namespace, PlugVocabulary, SectionProblem, Vocabulary};

/// The checklist source's words: `{{ task.item }}`, the `checklist:` section (which must name
/// a `file`) and the ending it gives.
pub(crate) fn checklist_words() -> PlugVocabulary {
    PlugVocabulary::new("checklist")
        .namespace(Namespace::closed("task", ["item"]))
        .end_reasons(["checklist_done"])
        .section("checklist", |section| match section.get("file") {
            Some(file) if file.is_string() => Vec::new(),
            Some(_) => vec![SectionProblem::at_value("file", "expected a path")],
            None => vec![SectionProblem::at_value("", "expected `file: PATH`")],
        })
}

use ralph_engine::{
    EndReason, IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource,
};
use std::path::PathBuf;

/// The unticked items of a Markdown checklist, one task each; an item is ticked in the file
/// once the agent exits 0 on it.
struct Checklist {
    path: PathBuf,
}

impl Checklist {
    fn next_item(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let line = text.lines().find(|line| line.starts_with("- [ ] "))?;
        Some(line["- [ ] ".len()..].to_owned())
    }
}

impl TaskSource for Checklist {
    type State = ();

    fn next_task(&mut self, _cx: &mut TaskContext<'_>) -> NextTask {
        let Some(item) = self.next_item() else {
            return NextTask::End(EndReason::Task {
                reason: "checklist_done".to_owned(), // registered in `checklist_words`
                exit_code: 0,
                converged: true,
                resumable: false,
            });
        };
        let mut task = Task::new(item.replace(' ', "-"));
        task.placeholders.insert("task.item".to_owned(), item); // `{{ task.item }}`
        NextTask::Work(task)
    }

    fn iteration_ended(
        &mut self,
        report: &IterationReport<'_>,
        cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        if report.failed {
            // A non-zero exit, a timeout, or an error the agent reported while exiting 0 (an
            // API error, a usage limit): the item stays open, the engine retries and backs off.
            return TaskDecision::Continue;
        }
        let item = &report.task.placeholders["task.item"];
        let ticked = std::fs::read_to_string(&self.path).map(|text| {
            let open = format!("- [ ] {item}");
            text.replacen(&open, &format!("- [x] {item}"), 1)
        });
        if let Err(err) = ticked.and_then(|text| std::fs::write(&self.path, text)) {
            cx.warn(format!("{}: {err}", self.path.display())); // a WARNING event
            return TaskDecision::Continue; // the item stays open for the next iteration
        }
        TaskDecision::NextTask
    }
}

use ralph_engine::{Engine, EngineOptions, RunOutcome};
use std::path::Path;

/// Runs the loop of the RALPH.md at `path` with the checklist its `checklist:` section names.
pub(crate) async fn run_checklist(path: &Path) -> Result<RunOutcome, Box<dyn std::error::Error>> {
    let vocabulary = Vocabulary::default().with(checklist_words())?; // ralph's words and ours
    let options = EngineOptions::load_with(path, &vocabulary)?; // an edit is read with them too
    // The section as written; `checklist_words` checked that `file` is a string.
    let file = options.file.sections["checklist"]["file"]
        .as_str()
        .unwrap_or_default();
    let checklist = Checklist {
        path: path.parent().unwrap_or(Path::new(".")).join(file),
    };
    let mut engine = Engine::new(options);
    engine.set_task_source(checklist);
    Ok(engine.run().await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("RALPH.md");
    std::fs::write(&path, RALPH_MD)?;
    std::fs::write(dir.path().join("TODO.md"), TODO_MD)?;
    let outcome = run_checklist(&path).await?;
    println!(
        "{} after {} iterations:\n{}",
        outcome.reason.as_str(),
        outcome.iterations,
        std::fs::read_to_string(dir.path().join("TODO.md"))?
    );
    Ok(())
}
