//! `ralph status [RUN_ID] [-C DIR] [--json]`: a run of the loop in DIR (its last by default),
//! from its session file and the lock file's holder. Never takes the lock: a running loop is
//! only read about.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ralph_events::WaitReason;
use ralph_events::run_folder;
use ralph_events::run_folder::LockHolder;
use ralph_events::session::{self, Session};
use ralph_events::story::{StoriesSummary, TaskWords};
use serde_json::json;

use crate::cli::StatusArgs;
use crate::error::CliError;

/// What `ralph status` knows of a run.
struct Status {
    session: Session,
    /// The loop's folder.
    folder: PathBuf,
    log_dir: PathBuf,
    /// The process running it, when one is.
    holder: Option<LockHolder>,
}

/// Prints the run; exit 0, or 2 when there is no such run (or none has started in the folder).
pub(crate) fn status(args: &StatusArgs) -> Result<i32, CliError> {
    let folder = &args.dir;
    if let Some(parallel) = latest_parallel_run(args) {
        let text = parallel_status(&parallel, args.json, folder);
        crate::print_out(text.as_bytes())?;
        return Ok(0);
    }
    let log_dir = match (&args.run_id, &args.log_dir) {
        // `.ralph/current` names the last run, wherever its logs went.
        (None, None) => ralph_events::session::last_run(folder).ok_or_else(|| {
            CliError::Usage(format!(
                "{}: no ralph run has started in this folder ({} is missing)",
                folder.display(),
                session::CURRENT_FILE
            ))
        })?,
        (id, log_dir) => {
            let runs = crate::runs::runs_dir(folder, log_dir.as_deref());
            match run_folder::find_run_in(&runs, id.as_deref()) {
                Ok(run) => run.path,
                Err(err) => return Err(not_found(err, id.as_deref())),
            }
        }
    };
    // The folder's run, when one is going: it may have started after `.ralph/current` was
    // read, or not have written its session yet. Only the folder's last run (no id asked for)
    // can be that one.
    let starting = (args.run_id.is_none() && args.log_dir.is_none())
        .then(|| ralph_engine::FolderClaim::running_in(folder))
        .flatten();
    let session = match Session::read(&log_dir) {
        Ok(session) => session,
        Err(err) => match starting {
            Some(holder) if !log_dir.join(session::SESSION_FILE).exists() => {
                return print_starting(&holder, args.json);
            }
            _ => return Err(CliError::Usage(err.to_string())),
        },
    };
    if let Some(holder) = starting.filter(|h| h.run_id != session.run_id) {
        return print_starting(&holder, args.json);
    }
    let holder = running(folder, &session.run_id);
    let status = Status {
        session,
        folder: folder.clone(),
        log_dir,
        holder,
    };
    let text = match args.json {
        true => format!("{}\n", status.json()),
        false => status.text(SystemTime::now()),
    };
    crate::print_out(text.as_bytes())?;
    Ok(0)
}

/// The folder's parallel run, when it is the run `ralph status` should show: the run id asked
/// for is its id (or the start of it), or none is asked for and it started after the folder's
/// last single loop.
fn latest_parallel_run(args: &StatusArgs) -> Option<ralph_events::parallel::ParallelStatus> {
    if args.log_dir.is_some() {
        return None;
    }
    match &args.run_id {
        Some(id) => ralph_parallel::read_status(&args.dir)
            .ok()
            .flatten()
            .filter(|run| run.run_id.starts_with(id.as_str())),
        None => newest_parallel_run(&args.dir),
    }
}

/// The parallel run of the repository `folder` is in, when it started after the folder's last
/// single loop (so it is "the last run" of `ralph status` and `ralph report`).
pub(crate) fn newest_parallel_run(folder: &Path) -> Option<ralph_events::parallel::ParallelStatus> {
    let parallel = ralph_parallel::read_status(folder).ok().flatten()?;
    let last_loop = ralph_events::session::last_run(folder)
        .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()));
    // Run ids sort by their start time.
    last_loop
        .is_none_or(|id| parallel.run_id > id)
        .then_some(parallel)
}

/// `ralph status` of a parallel run: its lanes and its merge queue.
fn parallel_status(
    run: &ralph_events::parallel::ParallelStatus,
    json: bool,
    folder: &Path,
) -> String {
    let alive = running(folder, &run.run_id).is_some();
    let state = match (alive, run.ended) {
        (true, _) => "running",
        (false, true) => "ended",
        (false, false) => "stopped",
    };
    // A lane of a ralph that was killed is recorded running: it is not.
    let lane_state = |lane: &ralph_events::parallel::LaneStatus| match lane.state {
        ralph_events::parallel::LaneState::Running if !alive => "stopped",
        state => state.as_str(),
    };
    let pulls = crate::pull_requests::of_parallel_run(folder, &run.run_id);
    if json {
        let lanes: Vec<serde_json::Value> = run
            .lanes
            .iter()
            .map(|lane| {
                json!({
                    "task_id": lane.task_id,
                    "state": lane_state(lane),
                    "returns": lane.returns,
                    "run_id": lane.run_id,
                    "refused": lane.refused,
                    "held": lane.held,
                    "question": lane.question,
                    "answer_at": lane.answer_at,
                    "pull_request": pulls.get(&lane.task_id).map(crate::pull_requests::PullRequest::json),
                })
            })
            .collect();
        return format!(
            "{}\n",
            json!({
                "run_id": run.run_id,
                "parallel": run.parallel,
                "base": run.base,
                "state": state,
                "lanes": lanes,
                "queue": run.queue,
            })
        );
    }
    let mut text = format!(
        "parallel run {} on {} ({} at a time): {state}\n",
        run.run_id, run.base, run.parallel
    );
    let width = run
        .lanes
        .iter()
        .map(|lane| lane.task_id.chars().count())
        .max()
        .unwrap_or(0);
    for lane in &run.lanes {
        // A landing the base refused waits for `--resume`, not in the queue; one a person's
        // changes hold waits in the queue for them.
        let state = match (&lane.refused, lane.held.is_empty()) {
            (_, false) => "waiting",
            (Some(_), true) => "refused",
            (None, true) if lane.question.is_some() && lane_state(lane) == "running" => "asking",
            (None, true) => lane_state(lane),
        };
        text.push_str(&format!(
            "  {:<width$}  {:<8} {}\n",
            lane.task_id,
            state,
            lane.run_id
                .as_deref()
                .map(|id| format!("ralph logs {id}"))
                .unwrap_or_default()
        ));
        if let Some(pr) = pulls.get(&lane.task_id) {
            text.push_str(&format!("    pull request: {}\n", pr.words()));
        }
        if !lane.held.is_empty() {
            text.push_str(&format!(
                "    waiting on your uncommitted changes to: {}\n",
                lane.held.join(", ")
            ));
        }
        if let Some(question) = &lane.question {
            let at = match &lane.answer_at {
                // An issue's address is a page the answer goes on; a file is a place it goes in.
                Some(at) if at.contains("://") => format!("on {at}"),
                Some(at) => format!("in {at}"),
                None => "once the merge queue puts the question there".to_owned(),
            };
            text.push_str(&format!(
                "    asks \"{question}\": waiting for an answer {at}\n"
            ));
        }
        if let Some(why) = &lane.refused {
            text.push_str("    landing refused:\n");
            for line in why.lines() {
                text.push_str(&format!("      {line}\n"));
            }
        }
    }
    if !run.queue.is_empty() {
        text.push_str(&format!("merge queue: {}\n", run.queue.join(", ")));
    }
    text
}

/// No run `id`; when `id` names a folder, the run id was most likely meant as the loop's folder
/// (`ralph status DIR`), and the words say how to give that.
fn not_found(err: run_folder::RunFolderError, id: Option<&str>) -> CliError {
    match id.filter(|id| Path::new(id).is_dir()) {
        Some(dir) => CliError::Usage(format!(
            "{err}; for the last run of the loop in the folder {dir}: `ralph status -C {}`",
            shlex::try_quote(dir).unwrap_or_else(|_| dir.into())
        )),
        None => err.into(),
    }
}

/// The holder of `folder`'s lock, when it runs `run_id` and is alive (the lock is only read).
fn running(folder: &Path, run_id: &str) -> Option<LockHolder> {
    ralph_engine::FolderClaim::running_in(folder).filter(|holder| holder.run_id == run_id)
}

/// A run that holds the folder but has not written its session yet: what is known of it.
fn print_starting(holder: &LockHolder, json: bool) -> Result<i32, CliError> {
    let text = match json {
        true => format!(
            "{}\n",
            json!({
                "run_id": holder.run_id,
                "running": true,
                "pid": holder.pid,
                "started": holder.started,
                "state": "starting",
            })
        ),
        false => format!(
            "run {}\nrunning: pid {}, since {}\nstate: starting\n",
            holder.run_id, holder.pid, holder.started
        ),
    };
    crate::print_out(text.as_bytes())?;
    Ok(0)
}

impl Status {
    /// `working`, `idle`, `failing`, `rate_limited`, `waiting` while running; `ended` after a
    /// reported end; `stopped` when its process is gone without one (killed, crashed).
    fn state(&self, now: SystemTime) -> &'static str {
        let s = &self.session;
        if self.holder.is_none() {
            return match s.ended {
                Some(_) => "ended",
                None => "stopped",
            };
        }
        match self.waiting(now) {
            _ if s.working => "working",
            Some(WaitReason::Idle) => "idle",
            Some(WaitReason::Failure) => "failing",
            Some(WaitReason::RateLimit) => "rate_limited",
            Some(_) => "waiting",
            None => "working",
        }
    }

    /// Why the running loop waits now, if it does.
    fn waiting(&self, now: SystemTime) -> Option<WaitReason> {
        let wait = self.session.wait.as_ref()?;
        // A task source's wait lasts until the source says go on, looking again and again.
        let on = wait.until > now || wait.reason == WaitReason::Task;
        (self.holder.is_some() && !self.session.working && on).then_some(wait.reason)
    }

    /// The story's attempt in progress (escalation's breaker count plus this one).
    fn attempt(&self) -> Option<u64> {
        let task = self.session.task.as_ref()?;
        let done = task.get("breaker")?.get("attempts")?.as_u64()?;
        self.session.task_id.as_ref().map(|_| done + 1)
    }

    fn json(&self) -> serde_json::Value {
        let s = &self.session;
        let now = SystemTime::now();
        let ts = |t: SystemTime| humantime::format_rfc3339_seconds(t).to_string();
        let retrying = match self.state(now) {
            "working" => agent_retrying(&self.log_dir),
            _ => None,
        };
        json!({
            "run_id": s.run_id,
            "running": self.holder.is_some(),
            "pid": self.holder.as_ref().map(|h| h.pid),
            "started": ts(s.started),
            "updated": ts(s.updated),
            "reason": s.ended.as_ref().map(|e| e.reason.as_str()),
            "exit_code": s.ended.as_ref().map(|e| e.exit_code),
            "ended_at": s.ended.as_ref().map(|e| ts(e.at)),
            "resumable": self.holder.is_none() && s.resumable(),
            "iterations": s.tally.iteration,
            "state": self.state(now),
            "consecutive_idle": s.consecutive_idle,
            "consecutive_failures": s.tally.consecutive_failures,
            "waiting_until": self.waiting(now).and(s.wait.as_ref().map(|w| ts(w.until))),
            "waiting_for": self.waiting(now).and(s.wait.as_ref().and_then(|w| w.why.clone())),
            "story": s.task_id.as_ref().filter(|_| StoriesSummary::from_fields(&s.task_fields).is_some()),
            "attempt": self.attempt().filter(|_| StoriesSummary::from_fields(&s.task_fields).is_some()),
            "stories": StoriesSummary::from_fields(&s.task_fields).map(|st| json!({
                "passed": st.passed, "blocked": st.blocked, "remaining": st.remaining,
            })),
            "agent_retrying": retrying.as_ref().map(|(count, last)| json!({
                "retries": count, "last": last,
            })),
            "sandbox_denied": sandbox_denied(&self.log_dir).map(|(count, last)| json!({
                "connections": count, "last": last,
            })),
            "pull_requests": crate::pull_requests::of_run_folder(&self.log_dir)
                .iter()
                .map(|(task, pr)| {
                    let mut value = pr.json();
                    value["task_id"] = json!(task);
                    value
                })
                .collect::<Vec<_>>(),
            "cost_usd": s.tally.cost_usd(),
            "input_tokens": s.tally.usage.as_ref().and_then(|u| u.input_tokens),
            "output_tokens": s.tally.usage.as_ref().and_then(|u| u.output_tokens),
            "log_dir": self.log_dir.display().to_string(),
        })
    }

    fn text(&self, now: SystemTime) -> String {
        let s = &self.session;
        let ts = |t: SystemTime| humantime::format_rfc3339_seconds(t).to_string();
        let mut lines = vec![format!("run {}", s.run_id)];
        lines.push(match (&self.holder, &s.ended) {
            (Some(h), _) => format!("running: pid {}, since {}", h.pid, h.started),
            (None, Some(e)) => {
                format!("ended: {}, exit {}, at {}", e.reason, e.exit_code, ts(e.at))
            }
            (None, None) => format!(
                "stopped without a word (killed or crashed) after {}",
                ts(s.updated)
            ),
        });
        lines.push(format!("iterations: {}", s.tally.iteration));
        if self.holder.is_some() {
            let until = s.wait.as_ref().map(|w| ts(w.until)).unwrap_or_default();
            let why = s.wait.as_ref().and_then(|w| w.why.clone());
            lines.push(format!(
                "state: {}",
                match self.state(now) {
                    "idle" => format!("idle ×{}, waiting until {until}", s.consecutive_idle),
                    "failing" => format!(
                        "failing ×{}, waiting until {until}",
                        s.tally.consecutive_failures
                    ),
                    "rate_limited" => format!("rate-limited until {until}"),
                    "waiting" => match why {
                        Some(why) => why,
                        None => format!("waiting until {until}"),
                    },
                    _ => match agent_retrying(&self.log_dir) {
                        Some((count, last)) => format!(
                            "working on iteration {}; the agent is retrying: {last} \
                             ({count} {} so far)",
                            s.tally.iteration,
                            if count == 1 { "retry" } else { "retries" }
                        ),
                        None => format!("working on iteration {}", s.tally.iteration),
                    },
                }
            ));
        }
        if let (Some(story), Some(stories)) =
            (&s.task_id, StoriesSummary::from_fields(&s.task_fields))
        {
            let attempt = self
                .attempt()
                .map(|n| format!(", attempt {n}"))
                .unwrap_or_default();
            let words = TaskWords::from_fields(&s.task_fields);
            lines.push(format!("{}: {story}{attempt}", words.one));
            lines.push(stories_line(stories, words));
        } else if let Some(stories) = StoriesSummary::from_fields(&s.task_fields) {
            lines.push(stories_line(
                stories,
                TaskWords::from_fields(&s.task_fields),
            ));
        }
        for (task, pr) in crate::pull_requests::of_run_folder(&self.log_dir) {
            let words = TaskWords::from_fields(&s.task_fields);
            lines.push(format!(
                "pull request for {} {task}: {}",
                words.one,
                pr.words()
            ));
        }
        let spent = s.tally.usage.clone().unwrap_or_default();
        if spent.cost_usd.is_some() || spent.input_tokens.is_some() {
            let mut usage = Vec::new();
            if let Some(cost) = spent.cost_usd {
                usage.push(format!("${cost:.2}"));
            }
            if let (Some(i), Some(o)) = (spent.input_tokens, spent.output_tokens) {
                usage.push(format!("{i} input and {o} output tokens"));
            }
            // Tokens without a cost: the agent reports none (Codex, gemini-cli), not $0.
            if spent.cost_usd.is_none() {
                usage.push("cost unknown".to_owned());
            }
            lines.push(format!("cost: {}", usage.join(", ")));
        }
        if let Some((count, last)) = sandbox_denied(&self.log_dir) {
            lines.push(format!(
                "sandbox: denied {count} {} (last: {last})",
                if count == 1 {
                    "connection"
                } else {
                    "connections"
                }
            ));
        }
        lines.push(format!("logs: {}", self.log_dir.display()));
        lines.push(match (&self.holder, s.resumable()) {
            (Some(_), _) => format!(
                "follow: {}",
                crate::logs_cmd::follow_command(&self.folder, &self.log_dir)
            ),
            (None, true) => "resume: ralph run --resume".to_owned(),
            (None, false) => "start a new run: ralph run".to_owned(),
        });
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }
}

/// The connections the sandbox refused (`SANDBOX_DENIED` in the end of the run's
/// `events.jsonl`): how many, and the last as `host:port`. `None` when it refused none.
fn sandbox_denied(log_dir: &Path) -> Option<(u64, String)> {
    let text = events_tail(log_dir)?;
    let mut found = None;
    for line in text.lines().filter(|l| l.contains("\"SANDBOX_DENIED\"")) {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let last = format!(
            "{}:{}",
            event["host"].as_str().unwrap_or_default(),
            event["port"]
        );
        let count = found.as_ref().map_or(0, |(n, _)| *n) + 1;
        found = Some((count, last));
    }
    found
}

/// How much of the end of `events.jsonl` is read for the agent's retries and the sandbox's
/// refusals.
const RETRY_TAIL_BYTES: u64 = 256 * 1024;

/// The last [`RETRY_TAIL_BYTES`] of the run's `events.jsonl` (its first line may be cut).
fn events_tail(log_dir: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(log_dir.join("events.jsonl")).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(RETRY_TAIL_BYTES)))
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The running agent's own retries in the iteration under way (`AGENT_RETRYING` since the last
/// `ITERATION_STARTED`, read from the end of the run's `events.jsonl`): how many, and the last
/// as the status line shows it. `None` when it has not retried.
fn agent_retrying(log_dir: &Path) -> Option<(u64, String)> {
    let text = events_tail(log_dir)?;
    let (mut count, mut last) = (0, None);
    for line in text.lines().rev() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match event["type"].as_str() {
            Some("AGENT_RETRYING") => {
                count += 1;
                last.get_or_insert_with(|| {
                    ralph_events::describe_retry(
                        event["reason"].as_str().unwrap_or_default(),
                        event["attempt"].as_u64(),
                        event["max_attempts"].as_u64(),
                    )
                });
            }
            Some("ITERATION_STARTED" | "ITERATION_ENDED") => break,
            _ => {}
        }
    }
    last.map(|last| (count, last))
}

/// `stories: 1 passed, 0 blocked, 2 remaining` (`tasks:` for a list of tasks).
fn stories_line(stories: StoriesSummary, words: TaskWords) -> String {
    format!(
        "{}: {} passed, {} blocked, {} remaining",
        words.many, stories.passed, stories.blocked, stories.remaining
    )
}
