//! `ralph logs`: a run's iteration logs, printed or followed as `tail -f` does.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_engine::run_folder::{self, RunDir};

use crate::error::CliError;

/// How often `-f` looks for new output.
const POLL: Duration = Duration::from_millis(100);

/// Prints the iteration logs of run `id` (the newest by default) in `folder`: one iteration's
/// with `iteration`, and with `follow` goes on printing as the run writes, until it ends.
pub(crate) fn logs(
    folder: &Path,
    id: Option<&str>,
    iteration: Option<u64>,
    follow: bool,
) -> Result<i32, CliError> {
    let run = run_folder::find_run(folder, id)?;
    let mut out = std::io::stdout().lock();
    if follow {
        follow_run(&mut out, folder, &run, iteration)?;
        return Ok(0);
    }
    let logs = run.iteration_logs()?;
    let chosen: Vec<_> = logs
        .iter()
        .filter(|(n, _)| iteration.is_none_or(|want| *n == want))
        .collect();
    if chosen.is_empty() {
        if let Some(n) = iteration {
            return Err(CliError::Usage(format!(
                "{}: no log of iteration {n} (the run has {} iteration log{})",
                run.path.display(),
                logs.len(),
                if logs.len() == 1 { "" } else { "s" }
            )));
        }
    }
    for (n, path) in chosen {
        print_iteration(&mut out, &run, *n, path)?;
    }
    Ok(0)
}

fn read_error(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// One iteration: a header naming the log, the prompt the agent got (when it was kept), then
/// the log (commands, agent output, end line).
fn print_iteration(
    out: &mut impl Write,
    run: &RunDir,
    n: u64,
    path: &Path,
) -> Result<(), CliError> {
    let _ = writeln!(out, "===== {} =====", path.display());
    let prompt = run.prompt_file(n);
    if let Ok(text) = std::fs::read(&prompt) {
        let _ = writeln!(out, "\n===== prompt ({}) =====", prompt.display());
        let _ = out.write_all(&text);
    }
    let mut file = File::open(path).map_err(read_error(path))?;
    std::io::copy(&mut file, out).map_err(read_error(path))?;
    let _ = writeln!(out);
    Ok(())
}

/// `-f`: from the start of the latest (or the given) iteration's log, everything written, one
/// log after the other, until the run ends (`RUN_ENDED`, or its process is gone).
fn follow_run(
    out: &mut impl Write,
    folder: &Path,
    run: &RunDir,
    from: Option<u64>,
) -> Result<(), CliError> {
    let latest = run.iteration_logs()?.last().map_or(1, |(n, _)| *n);
    let mut current = from.unwrap_or(latest);
    let mut tail: Option<Tail> = None;
    let mut events = Tail::new(run.events_path());
    let mut pending = Vec::new();
    let mut ended = false;
    loop {
        // Whether the run was over is decided before reading, so that what it wrote last is
        // read after.
        let over = ended || !is_running(folder, run);
        if tail.is_none() && run.iteration_log(current).exists() {
            let path = run.iteration_log(current);
            let _ = writeln!(out, "===== {} =====", path.display());
            tail = Some(Tail::new(path));
        }
        if let Some(t) = &mut tail {
            t.copy_new(out)?;
            if run.iteration_log(current + 1).exists() {
                // The next iteration started: this log is complete.
                t.copy_new(out)?;
                tail = None;
                current += 1;
                continue;
            }
        }
        if over {
            break;
        }
        // Only whole lines are parsed; a line being written waits for the next look.
        events.copy_new(&mut pending)?;
        if let Some(end) = pending.iter().rposition(|b| *b == b'\n') {
            ended = run_folder::parse_events(&pending[..end])
                .iter()
                .any(|e| e["type"] == "RUN_ENDED");
            pending.drain(..=end);
        }
        let _ = out.flush();
        std::thread::sleep(POLL);
    }
    let _ = out.flush();
    Ok(())
}

fn is_running(folder: &Path, run: &RunDir) -> bool {
    run_folder::running(folder).is_some_and(|h| h.run_id == run.id)
}

/// A file read from where the last read stopped.
struct Tail {
    path: PathBuf,
    offset: u64,
}

impl Tail {
    fn new(path: PathBuf) -> Self {
        Self { path, offset: 0 }
    }

    fn copy_new(&mut self, out: &mut impl Write) -> Result<(), CliError> {
        let Ok(mut file) = File::open(&self.path) else {
            return Ok(());
        };
        file.seek(SeekFrom::Start(self.offset))
            .map_err(read_error(&self.path))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).map_err(read_error(&self.path))?;
        self.offset += buf.len() as u64;
        let _ = out.write_all(&buf);
        Ok(())
    }
}
