//! A task source's `default_max_iterations` applies to a run that sets no `max_iterations`
//! of its own (story mode's 10 comes this way), and never overrides one that does.

use ralph_engine::{
    Engine, EngineOptions, IterationReport, NextTask, Task, TaskContext, TaskDecision, TaskSource,
};

/// One endless task, with a default limit of 2 iterations.
struct Endless;

impl TaskSource for Endless {
    type State = ();

    fn next_task(&mut self, _cx: &mut TaskContext<'_>) -> NextTask {
        NextTask::Work(Task::new("endless"))
    }

    fn iteration_ended(
        &mut self,
        _report: &IterationReport<'_>,
        _cx: &mut TaskContext<'_>,
    ) -> TaskDecision {
        TaskDecision::Continue
    }

    fn default_max_iterations(&self) -> Option<u64> {
        Some(2)
    }
}

async fn iterations(max_iterations: Option<u64>) -> u64 {
    let text = "---\nagent: 'true'\n---\nx\n";
    let parsed = ralph_frontmatter::parse("RALPH.md", text).expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    options.overrides.max_iterations = max_iterations;
    let mut engine = Engine::new(options);
    engine.set_task_source(Endless);
    let outcome = engine.run().await.expect("the run ends");
    assert_eq!(outcome.reason.as_str(), "max_iterations");
    outcome.iterations
}

#[tokio::test(start_paused = true)]
async fn the_sources_default_limit_applies_when_the_run_sets_none() {
    assert_eq!(iterations(None).await, 2);
}

#[tokio::test(start_paused = true)]
async fn a_limit_the_run_sets_wins_over_the_sources_default() {
    assert_eq!(iterations(Some(3)).await, 3);
}

/// Iterations of a run of a file with `max_iterations: 5`, its config changed after
/// `EngineOptions::new` to `file_max`, with `-n` as `overrides`.
async fn iterations_of(file_max: Option<u64>, overridden: Option<u64>) -> u64 {
    let text = "---\nagent: 'true'\nmax_iterations: 5\n---\nx\n";
    let parsed = ralph_frontmatter::parse("RALPH.md", text).expect("valid RALPH.md");
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    // On the paused clock time jumps to the next timer while the agent runs: the no-output
    // limit (idle_timeout) would end every agent run at once.
    options.overrides.idle_timeout = Some(std::time::Duration::ZERO);
    options.cwd = std::env::temp_dir();
    options.file.config.max_iterations = file_max;
    options.overrides.max_iterations = overridden;
    let mut engine = Engine::new(options);
    engine.set_task_source(Endless);
    engine.run().await.expect("the run ends").iterations
}

#[tokio::test(start_paused = true)]
async fn the_files_limit_set_after_the_options_were_made_takes_effect() {
    assert_eq!(iterations_of(Some(1), None).await, 1);
    // A file that sets none takes the task source's.
    assert_eq!(iterations_of(None, None).await, 2);
}

#[tokio::test(start_paused = true)]
async fn an_override_beats_the_files_limit() {
    assert_eq!(iterations_of(Some(1), Some(3)).await, 3);
}
