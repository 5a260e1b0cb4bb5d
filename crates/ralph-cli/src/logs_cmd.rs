//! `ralph logs`: a run's iteration logs, printed or followed as `tail -f` does.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_events::parallel::ParallelRecord;
use ralph_events::run_folder::{self, RunDir};

use crate::error::CliError;

/// How often `-f` looks for new output.
const POLL: Duration = Duration::from_millis(100);

/// Prints the iteration logs of run `id` (the newest by default) of the loop in `folder` (its
/// runs in `log_dir`, when they went there): one iteration's with `iteration`, and with
/// `follow` goes on printing as the run writes, until it ends.
/// A reader that went away (`ralph logs | head -1`) ends it quietly, as `crate::print_out` does.
pub(crate) fn logs(
    folder: &Path,
    log_dir: Option<&Path>,
    id: Option<&str>,
    iteration: Option<u64>,
    follow: bool,
) -> Result<i32, CliError> {
    match print_logs(folder, log_dir, id, iteration, follow) {
        Err(CliError::Stdout(err)) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        other => other.map(|()| 0),
    }
}

fn print_logs(
    folder: &Path,
    log_dir: Option<&Path>,
    id: Option<&str>,
    iteration: Option<u64>,
    follow: bool,
) -> Result<(), CliError> {
    let runs = crate::runs::runs_dir(folder, log_dir);
    let run = match run_folder::find_run_in(&runs, id) {
        Ok(run) => run,
        // A parallel run's task id names its lane's latest loop.
        Err(err) => match id.and_then(|id| lane_run_id(folder, id)) {
            Some(lane) => run_folder::find_run_in(&runs, Some(&lane))?,
            // A parallel run's own id names all its lanes.
            None => match id.and_then(|id| parallel_run(folder, id)) {
                Some(parallel) => return print_parallel(folder, &runs, &parallel, follow),
                None => return Err(err.into()),
            },
        },
    };
    let mut out = std::io::stdout().lock();
    if follow {
        return follow_run(&mut out, folder, &run, iteration);
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
    out.flush().map_err(CliError::Stdout)
}

/// The run id of the latest loop of task `task_id` in the folder's parallel run, if any.
fn lane_run_id(folder: &Path, task_id: &str) -> Option<String> {
    ralph_parallel::read_status(folder)
        .ok()
        .flatten()?
        .lanes
        .into_iter()
        .find(|lane| lane.task_id == task_id)?
        .run_id
}

/// The parallel run of the folder's repository that `id` names (its id or the start of it).
fn parallel_run(folder: &Path, id: &str) -> Option<ParallelRecord> {
    let events = ralph_events::parallel::read_events(&ralph_parallel::events_file(folder)?).ok()?;
    let run_id = ralph_events::parallel::find_run(&events, Some(id))?;
    ParallelRecord::all(&events)
        .into_iter()
        .find(|run| run.run_id == run_id)
}

/// Every lane of a parallel run: each loop's logs one after the other, under a line naming its
/// task; with `follow`, every lane's new output as it comes, each line after its task's id,
/// until the run ends.
fn print_parallel(
    folder: &Path,
    runs: &Path,
    parallel: &ParallelRecord,
    follow: bool,
) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if follow {
        return follow_parallel(&mut out, folder, runs, parallel);
    }
    for (task, lane) in &parallel.lanes {
        let run = run_folder::find_run_in(runs, Some(lane))?;
        writeln!(out, "##### task {task}: run {lane} #####").map_err(CliError::Stdout)?;
        for (n, path) in run.iteration_logs()? {
            print_iteration(&mut out, &run, n, &path)?;
        }
    }
    out.flush().map_err(CliError::Stdout)
}

/// One lane followed by `ralph logs -f <parallel run id>`.
struct FollowedLane {
    task: String,
    run: RunDir,
    /// The iteration whose log is read now.
    current: u64,
    tail: Option<Tail>,
    /// The start of a line not yet ended.
    partial: Vec<u8>,
}

/// `-f` for a parallel run: every lane's iteration logs, lanes that start later too, each line
/// after `[task id]`, until the run is no longer running (then what was written last is read).
fn follow_parallel(
    out: &mut impl Write,
    folder: &Path,
    runs: &Path,
    parallel: &ParallelRecord,
) -> Result<(), CliError> {
    let mut lanes: Vec<FollowedLane> = Vec::new();
    loop {
        let over = ralph_engine::FolderClaim::running_in(folder)
            .is_none_or(|h| h.run_id != parallel.run_id);
        // Lanes that started since the last look (a resume's loops too).
        let known = parallel_run(folder, &parallel.run_id).unwrap_or_else(|| parallel.clone());
        for (task, id) in &known.lanes {
            if lanes.iter().any(|l| l.run.id == *id) {
                continue;
            }
            if let Ok(run) = run_folder::find_run_in(runs, Some(id)) {
                lanes.push(FollowedLane {
                    task: task.clone(),
                    run,
                    current: 1,
                    tail: None,
                    partial: Vec::new(),
                });
            }
        }
        for lane in &mut lanes {
            lane.copy_new(out, over)?;
        }
        out.flush().map_err(CliError::Stdout)?;
        if over {
            return Ok(());
        }
        if reader_gone() {
            return Ok(());
        }
        std::thread::sleep(POLL);
    }
}

impl FollowedLane {
    /// Writes what the lane's logs gained since the last look, whole lines only (and the rest
    /// too when `last`), each after the task's id.
    fn copy_new(&mut self, out: &mut impl Write, last: bool) -> Result<(), CliError> {
        loop {
            if self.tail.is_none() {
                if !self.run.iteration_log(self.current).exists() {
                    break;
                }
                self.tail = Some(Tail::new(self.run.iteration_log(self.current)));
            }
            let Some(tail) = &mut self.tail else { break };
            tail.copy_new(&mut self.partial)?;
            let done = self.run.iteration_log(self.current + 1).exists();
            if done {
                // The next iteration started: this log is complete.
                tail.copy_new(&mut self.partial)?;
            }
            let whole = match done || last {
                true => self.partial.len(),
                false => self
                    .partial
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1),
            };
            for line in self.partial[..whole].split_inclusive(|b| *b == b'\n') {
                write!(out, "[{}] ", self.task).map_err(CliError::Stdout)?;
                out.write_all(line).map_err(CliError::Stdout)?;
                if !line.ends_with(b"\n") {
                    writeln!(out).map_err(CliError::Stdout)?;
                }
            }
            self.partial.drain(..whole);
            if !done {
                break;
            }
            self.tail = None;
            self.current += 1;
        }
        Ok(())
    }
}

/// The command that follows, from another terminal, the run in `run_dir` (`DIR/<run_id>`, as
/// `ralph run` was given it) of the loop in `folder`: `ralph logs -f`, with `-C` and
/// `--log-dir` where they are needed to find it.
pub(crate) fn follow_command(folder: &Path, run_dir: &Path) -> String {
    let quote = |path: &Path| {
        let text = path.to_string_lossy();
        shlex::try_quote(&text).map_or_else(|_| text.to_string(), |q| q.into_owned())
    };
    let mut command = "ralph logs -f".to_owned();
    if !same_dir(folder, Path::new(".")) {
        command.push_str(&format!(" -C {}", quote(folder)));
    }
    let root = run_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !same_dir(root, &folder.join(run_folder::RUNS_DIR)) {
        // `--log-dir` is read in the loop's folder: said from there when it is inside it,
        // else whole.
        let root = match (std::fs::canonicalize(root), std::fs::canonicalize(folder)) {
            (Ok(root), Ok(folder)) => match root.strip_prefix(&folder) {
                Ok(inside) if inside.as_os_str().is_empty() => PathBuf::from("."),
                Ok(inside) => inside.to_path_buf(),
                Err(_) => root,
            },
            _ => root.to_path_buf(),
        };
        command.push_str(&format!(" --log-dir {}", quote(&root)));
    }
    command
}

/// Whether `a` and `b` name the same folder (`.ralph/runs` and `./.ralph/runs`, or a path and
/// its absolute form).
fn same_dir(a: &Path, b: &Path) -> bool {
    use std::path::Component;
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => {
            let here = |c: &Component<'_>| *c != Component::CurDir;
            a.components().filter(here).eq(b.components().filter(here))
        }
    }
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
    writeln!(out, "===== {} =====", path.display()).map_err(CliError::Stdout)?;
    let prompt = run.prompt_file(n);
    if let Ok(text) = std::fs::read(&prompt) {
        writeln!(out, "\n===== prompt ({}) =====", prompt.display()).map_err(CliError::Stdout)?;
        out.write_all(&text).map_err(CliError::Stdout)?;
    }
    let mut file = File::open(path).map_err(read_error(path))?;
    // Not `io::copy`: its error does not say whether the log or stdout failed.
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(read_error(path)(err)),
        };
        out.write_all(&buf[..n]).map_err(CliError::Stdout)?;
    }
    writeln!(out).map_err(CliError::Stdout)
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
            writeln!(out, "===== {} =====", path.display()).map_err(CliError::Stdout)?;
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
            // A resumed run's events hold its earlier ending: only the last one counts.
            ended =
                run_folder::ends_run(&run_folder::parse_events(&pending[..end])).unwrap_or(ended);
            pending.drain(..=end);
        }
        out.flush().map_err(CliError::Stdout)?;
        if reader_gone() {
            return Ok(());
        }
        std::thread::sleep(POLL);
    }
    out.flush().map_err(CliError::Stdout)
}

/// Whether stdout is a pipe whose reader went away: `-f` must notice it while the run writes
/// nothing (an agent thinking for minutes), not only at its next write.
fn reader_gone() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let fd = rustix::stdio::stdout();
    let mut stdout = [PollFd::new(&fd, PollFlags::empty())];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut stdout, Some(&now)) == Ok(1) && stdout[0].revents().contains(PollFlags::ERR)
}

fn is_running(folder: &Path, run: &RunDir) -> bool {
    ralph_engine::FolderClaim::running_in(folder).is_some_and(|h| h.run_id == run.id)
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
        out.write_all(&buf).map_err(CliError::Stdout)
    }
}
