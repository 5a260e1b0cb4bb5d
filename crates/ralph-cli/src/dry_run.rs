//! `ralph run --dry-run`: the engine prepares iteration 1 without running the agent; this
//! prints what it would do. The prompt goes to stdout, exactly (so it can be piped or diffed);
//! the agent's command line and the commands that ran go to stderr.

use std::io::Write as _;

use ralph_engine::{DryRun, Engine, EngineOptions, exit_status};
use ralph_escalation::{Escalation, StoryEnd, TaskWords};

use crate::error::CliError;

/// Runs the commands, then prints the prompt and the agent command line. `tasks` (story mode)
/// picks the story whose placeholders fill the prompt.
pub(crate) fn dry_run(options: EngineOptions, tasks: Option<Escalation>) -> Result<i32, CliError> {
    let policy = crate::sandbox_cmd::policy_lines(&options.file.config, &options.cwd)?;
    let words = tasks
        .as_ref()
        .and_then(Escalation::task_words)
        .unwrap_or(TaskWords::STORY);
    let mut engine = Engine::new(options);
    if let Some(tasks) = tasks {
        engine.set_task_source(tasks);
    }
    let dry = crate::run::runtime()?.block_on(engine.dry_run())?;
    if let Some(end) = &dry.end {
        let why = match StoryEnd::of(end) {
            Some(StoryEnd::StoriesDone) => format!("every {} passes", words.one),
            Some(StoryEnd::StoriesBlocked) => {
                format!("no {} left to do; the rest are blocked", words.one)
            }
            _ => end.as_str().to_owned(),
        };
        eprintln!("dry run: no iteration would run: {why} ({end})");
        return Ok(0);
    }
    eprint!("{}", summary(&dry));
    for line in policy {
        eprintln!("dry run: sandbox: {line}");
    }
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = stdout.write_all(dry.prompt.as_bytes());
    let _ = stdout.write_all(b"\n");
    let _ = stdout.flush();
    Ok(0)
}

/// What would run: the agent's command line, shell-quoted, and where its prompt would go.
fn summary(dry: &DryRun) -> String {
    let mut s = String::new();
    if let Some(task) = &dry.task {
        s.push_str(&format!("dry run: iteration 1 works on {task}\n"));
    }
    for command in &dry.commands {
        let how = match (command.timed_out, command.exit_code, command.signal) {
            (true, _, _) => "timed out".to_owned(),
            (false, Some(0), _) => "ran".to_owned(),
            (false, None, None) => "could not start".to_owned(),
            (false, code, signal) => format!("failed: {}", exit_status(code, signal)),
        };
        s.push_str(&format!(
            "dry run: command {} {how} ({} bytes of output)\n",
            command.name,
            command.output.len()
        ));
    }
    s.push_str(&format!("dry run: agent: {}\n", shell_line(&dry.argv)));
    if let Some(output) = &dry.output {
        s.push_str(&format!(
            "dry run: output read as {} ({})\n",
            output.format.name(),
            output.reason
        ));
    }
    s.push_str(&format!(
        "dry run: the prompt ({} bytes) would go {}; it follows on stdout\n",
        dry.prompt.len(),
        if dry.stdin {
            "to the agent's stdin"
        } else {
            "in the command line"
        }
    ));
    s
}

/// `argv` as one line a POSIX shell would split back into the same words.
fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|word| {
            shlex::try_quote(word)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| format!("{:?}", word.replace('\0', "")))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_line_is_shell_quoted() {
        let argv = ["my-agent", "--label", "nightly run", "it's"].map(str::to_owned);
        assert_eq!(shell_line(&argv), "my-agent --label 'nightly run' \"it's\"");
    }
}
