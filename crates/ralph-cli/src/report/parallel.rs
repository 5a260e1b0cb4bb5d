//! The report of a parallel run (`ralph run --parallel N`): a lane per task (its iterations and
//! its time in the merge queue on one timeline) and the merge queue's steps, built from the
//! run's events in `.ralph/parallel/events.jsonl`. Each lane's own loop keeps its run folder;
//! `ralph report <lane run id>` reports it in full.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ralph_events::parallel::{ParallelEvent, ParallelEventKind};
use ralph_events::run_folder::{self, CheckRecord, RunDir, RunRecord};

use super::{LABEL, LANE, STYLE, WIDTH, dur, escape};

/// A parallel run's events, in the order they were written, and what its lanes' loops' own
/// run folders say.
pub(crate) struct ParallelRun {
    run_id: String,
    events: Vec<ParallelEvent>,
    /// Each lane's loop by its run id: where its logs are and its last checks.
    loops: BTreeMap<String, LoopFolder>,
}

/// A lane's loop as its run folder tells it.
#[derive(Debug, Clone, Default, PartialEq)]
struct LoopFolder {
    /// Its run folder, absolute where it could be made so.
    dir: PathBuf,
    /// Its last `done_when` attempt's checks (none before the first).
    checks: Vec<CheckRecord>,
}

impl ParallelRun {
    /// The parallel run `id` (a run id or a unique prefix of one) of the repository `folder` is
    /// in; with no id, the repository's parallel run when it is newer than the folder's last
    /// single loop. `None` when there is no such parallel run (the id may name a loop's run).
    /// Its own folder, `.ralph/parallel/<run id>/` at the top of the repository, where its
    /// report goes by default.
    pub(crate) fn folder(&self, folder: &Path) -> Option<PathBuf> {
        let events = ralph_parallel::events_file(folder)?;
        Some(events.parent()?.join(&self.run_id))
    }

    pub(crate) fn find(folder: &Path, id: Option<&str>) -> Option<Self> {
        let wanted = match id {
            None => crate::status::newest_parallel_run(folder)?.run_id,
            Some(_) => String::new(),
        };
        // A half-written last line (a run killed mid-write) is skipped, not an error.
        let all =
            ralph_events::parallel::read_events(&ralph_parallel::events_file(folder)?).ok()?;
        let run_id = match id {
            None => wanted,
            Some(prefix) => ralph_events::parallel::find_run(&all, Some(prefix))?,
        };
        let events: Vec<ParallelEvent> = all.into_iter().filter(|e| e.run_id == run_id).collect();
        let loops = events
            .iter()
            .filter_map(|e| match &e.kind {
                ParallelEventKind::LaneStarted {
                    lane_run_id,
                    log_dir,
                    ..
                } => Some((lane_run_id.clone(), loop_folder(folder, log_dir))),
                _ => None,
            })
            .collect();
        (!events.is_empty()).then_some(Self {
            run_id,
            events,
            loops,
        })
    }
}

/// The lane loop whose run folder is `log_dir` (as `LANE_STARTED` names it, relative to the
/// folder the run was started in): where it is, and its last attempt's checks.
fn loop_folder(folder: &Path, log_dir: &str) -> LoopFolder {
    let dir = folder.join(log_dir);
    let run = RunDir {
        id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: dir.canonicalize().unwrap_or(dir),
    };
    let events = run_folder::read_events(&run.events_path()).unwrap_or_default();
    let record = RunRecord::from_events(&run.id, &events, None);
    let checks = record
        .attempts
        .last()
        .map(|a| a.checks.clone())
        .unwrap_or_default();
    LoopFolder {
        dir: run.path,
        checks,
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// One task's lane on the timeline: its iterations and its merges, in ms from the run's start.
#[derive(Default)]
struct Lane {
    task: String,
    title: String,
    loops: Vec<String>,
    iterations: u64,
    cost: f64,
    /// Input plus output tokens its agents reported.
    tokens: u64,
    /// (start, end, class, what) of each bar.
    bars: Vec<(u64, Option<u64>, &'static str, String)>,
    outcome: String,
    /// Its latest loop's folder, as its run folder tells it.
    latest: Option<LoopFolder>,
}

/// The whole report of a parallel run.
pub(crate) fn render(run: &ParallelRun) -> String {
    let start = run.events.first().map(|e| e.ts);
    let since_start = |t: SystemTime| -> u64 {
        start.map_or(0, |s| {
            t.duration_since(s)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        })
    };
    let total = run.events.last().map_or(0, |e| since_start(e.ts));
    let mut lanes: Vec<Lane> = Vec::new();
    let mut queue_rows: Vec<(u64, String, String, String)> = Vec::new();
    let lane_of = |lanes: &mut Vec<Lane>, task: &str| -> usize {
        if let Some(i) = lanes.iter().position(|l| l.task == task) {
            return i;
        }
        lanes.push(Lane {
            task: task.to_owned(),
            ..Lane::default()
        });
        lanes.len() - 1
    };
    let mut facts = Vec::new();
    let mut ended = None;
    let mut all_tokens = 0;
    for e in &run.events {
        let t = since_start(e.ts);
        let task = e.kind.task_id().unwrap_or("");
        match &e.kind {
            ParallelEventKind::ParallelStarted {
                base,
                base_commit,
                parallel,
                tasks,
                resumed,
            } => {
                if facts.is_empty() {
                    facts.push(format!(
                        "base <b>{}</b> at {}",
                        escape(base),
                        escape(short(base_commit))
                    ));
                    facts.push(format!("<b>{parallel}</b> at a time"));
                }
                if *resumed {
                    facts.push(format!("resumed after {}", dur(t)));
                }
                // The tasks in the task list's order, so a task that never started has its
                // lane too.
                for id in tasks {
                    lane_of(&mut lanes, id);
                }
            }
            ParallelEventKind::LaneStarted {
                title, lane_run_id, ..
            } => {
                let i = lane_of(&mut lanes, task);
                lanes[i].title.clone_from(title);
                lanes[i].loops.push(lane_run_id.clone());
                lanes[i].latest = run.loops.get(lane_run_id).cloned();
            }
            ParallelEventKind::LaneIterationStarted { iteration, .. } => {
                let i = lane_of(&mut lanes, task);
                let what = format!("iteration {iteration}");
                lanes[i].bars.push((t, None, "running", what));
            }
            ParallelEventKind::LaneIterationEnded {
                failed,
                state,
                tokens,
                ..
            } => {
                let i = lane_of(&mut lanes, task);
                lanes[i].tokens += tokens.unwrap_or(0);
                all_tokens += tokens.unwrap_or(0);
                let class = match (failed, state.as_deref()) {
                    (true, _) => "failed",
                    (false, Some("idle")) => "idle",
                    _ => "worked",
                };
                close(&mut lanes[i], t, class);
            }
            // Its iteration ended before its loop said why: a rate limit refused it.
            ParallelEventKind::LaneRateLimited { until, .. } => {
                let i = lane_of(&mut lanes, task);
                if let Some(bar) = lanes[i].bars.iter_mut().rev().find(|b| b.1.is_some()) {
                    bar.2 = "rate_limited";
                    bar.3 = format!("{}, rate-limited until {until}", bar.3);
                }
            }
            ParallelEventKind::LaneEnded {
                reason,
                iterations,
                cost_usd,
                ..
            } => {
                let i = lane_of(&mut lanes, task);
                lanes[i].iterations += iterations;
                // The task's cost so far, over all its loops.
                lanes[i].cost = *cost_usd;
                lanes[i].outcome = format!("loop ended: {}", escape(reason.as_str()));
                close(&mut lanes[i], t, "interrupted");
            }
            ParallelEventKind::MergeQueued { position, .. } => {
                let what = format!("queued, position {position}");
                queue_rows.push((t, task.to_owned(), "queued".to_owned(), what));
            }
            ParallelEventKind::MergeStarted {
                base_commit,
                branch_commit,
                ..
            } => {
                let i = lane_of(&mut lanes, task);
                lanes[i].bars.push((t, None, "merging", "merge".to_owned()));
                // Only a try: a conflict or a failing check follows when it fails.
                let what = format!(
                    "merging {} with the base at {}, then the checks",
                    escape(short(branch_commit)),
                    escape(short(base_commit))
                );
                queue_rows.push((t, task.to_owned(), "merging".to_owned(), what));
            }
            ParallelEventKind::MergeHeld { files, .. } => {
                let files: Vec<String> = files.iter().map(|f| escape(f)).collect();
                let what = format!("waits on your uncommitted changes to {}", files.join(", "));
                queue_rows.push((t, task.to_owned(), "queued".to_owned(), what));
            }
            ParallelEventKind::MergeConflict {
                files, saved_ref, ..
            } => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "failed");
                let files: Vec<String> = files.iter().map(|f| escape(f)).collect();
                let what = format!(
                    "merge failed: a conflict in {}; back to its loop (saved under {})",
                    files.join(", "),
                    escape(saved_ref)
                );
                queue_rows.push((t, task.to_owned(), "failed".to_owned(), what));
            }
            ParallelEventKind::MergeCheckFailed {
                checks, saved_ref, ..
            } => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "failed");
                let checks: Vec<String> = checks
                    .iter()
                    .map(|c| {
                        let exit = c
                            .exit_code
                            .map_or_else(|| "null".to_owned(), |c| c.to_string());
                        format!("{} (exit {exit})", escape(&c.command))
                    })
                    .collect();
                let what = format!(
                    "merge failed: a check failed on the merged result: {}; back to its loop \
                     (saved under {})",
                    checks.join(", "),
                    escape(saved_ref)
                );
                queue_rows.push((t, task.to_owned(), "failed".to_owned(), what));
            }
            // The queue puts the question where the task lives, as a step of its own.
            ParallelEventKind::LaneAsked { question, at, .. } => {
                let what = format!(
                    "asks a person \"{}\": answer in {}",
                    escape(question),
                    escape(at)
                );
                queue_rows.push((t, task.to_owned(), "queued".to_owned(), what));
            }
            ParallelEventKind::TaskLanded { commit, .. } => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "converged");
                let commit = escape(short(commit));
                lanes[i].outcome = format!("landed as {commit}");
                let what = format!("landed on the base as {commit}");
                queue_rows.push((t, task.to_owned(), "converged".to_owned(), what));
            }
            ParallelEventKind::PrOpened { url, state, .. }
            | ParallelEventKind::PrUpdated { url, state, .. }
            | ParallelEventKind::PrClosed { url, state, .. } => {
                let i = lane_of(&mut lanes, task);
                let done = match &e.kind {
                    ParallelEventKind::PrOpened { .. } => "opened",
                    ParallelEventKind::PrUpdated { .. } => "updated",
                    _ => "found closed, left so",
                };
                let link = format!("<a href=\"{0}\">{0}</a> ({1})", escape(url), escape(state));
                lanes[i].outcome = format!("pull request {link}");
                let what = format!("pull request {done}: {link}");
                queue_rows.push((t, task.to_owned(), "converged".to_owned(), what));
            }
            ParallelEventKind::TaskBlocked { reason, .. } => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "blocked");
                let reason = escape(reason);
                lanes[i].outcome = format!("blocked: {reason}");
                let what = format!("blocked: {reason}");
                queue_rows.push((t, task.to_owned(), "blocked".to_owned(), what));
            }
            ParallelEventKind::ParallelEnded {
                reason,
                landed,
                blocked,
                remaining,
                cost_usd,
                exit_code,
            } => {
                ended = Some(format!(
                    "ended: <b>{}</b> (exit {exit_code}) · <b>{landed}</b> landed, {blocked} \
                     blocked, {remaining} left · {}",
                    escape(reason.as_str()),
                    spent(*cost_usd, all_tokens),
                ));
            }
            _ => {}
        }
    }
    let status = ended.unwrap_or_else(|| {
        "<b>not ended</b> (running, or stopped: `ralph run --resume` goes on with it, \
         `ralph run --abandon` gives it up)"
            .to_owned()
    });
    facts.insert(0, status);
    facts.push(format!("duration <b>{}</b>", dur(total)));

    let id = escape(&run.run_id);
    let mut html = String::with_capacity(32 * 1024);
    let _ = write!(
        html,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>ralph parallel run {id}</title><style>{STYLE}</style></head><body>\n\
         <h1>ralph parallel run {id}</h1><p class=\"meta\">{}</p>\n",
        facts.join(" · ")
    );
    timeline(&mut html, &lanes, total);
    lane_table(&mut html, &lanes);
    queue_table(&mut html, &queue_rows);
    html.push_str("</body></html>\n");
    html
}

/// Ends the lane's open bar (an iteration, or a merge) at `t`.
/// `$1.20`; `12.3k tokens, cost unknown` for agents that report tokens but no cost (Codex,
/// gemini-cli); `cost unknown` when they report neither. The coordinator counts only costs
/// above zero, so zero is none reported.
fn spent(cost_usd: f64, tokens: u64) -> String {
    match (cost_usd > 0.0, tokens) {
        (true, _) => format!("${cost_usd:.2}"),
        (false, 0) => "cost unknown".to_owned(),
        (false, n) => format!("{} tokens, cost unknown", crate::render::compact(n)),
    }
}

fn close(lane: &mut Lane, t: u64, class: &'static str) {
    if let Some(bar) = lane.bars.iter_mut().rev().find(|b| b.1.is_none()) {
        bar.1 = Some(t);
        bar.2 = class;
    }
}

fn timeline(html: &mut String, lanes: &[Lane], total: u64) {
    let scale = (WIDTH - LABEL) / total.max(1) as f64;
    let height = lanes.len() as f64 * LANE + 24.0;
    html.push_str(
        "<h2>Lanes</h2><p class=\"legend\"><span><i class=\"worked\"></i>iteration</span>\
         <span><i class=\"idle\"></i>idle</span><span><i class=\"failed\"></i>failed, or sent \
         back by the queue</span><span><i class=\"rate_limited\"></i>rate-limited</span><span><i class=\"merging\"></i>in the merge queue</span>\
         <span><i class=\"converged\"></i>landed</span><span><i class=\"blocked\"></i>blocked\
         </span><span><i class=\"running\"></i>not finished</span></p>\n",
    );
    let _ = writeln!(
        html,
        "<svg viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"a lane per task\">\
         <style>.merging{{fill:#bf8700;background:#bf8700}}</style>"
    );
    for (row, lane) in lanes.iter().enumerate() {
        let y = row as f64 * LANE + 4.0;
        let task = escape(&lane.task);
        let _ = writeln!(
            html,
            "<g class=\"lane\" data-task=\"{task}\"><text x=\"4\" y=\"{:.1}\">{}<title>{task}: \
             {}</title></text>",
            y + 14.0,
            escape(&label(row, lane)),
            escape(&lane.title),
        );
        for (from, to, class, what) in &lane.bars {
            let to = to.unwrap_or(total);
            let x = LABEL + *from as f64 * scale;
            let w = ((to.saturating_sub(*from)) as f64 * scale).max(2.0);
            let _ = writeln!(
                html,
                "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" \
                 height=\"{:.1}\"><title>{task} {}: {} to {}</title></rect>",
                LANE - 6.0,
                escape(what),
                dur(*from),
                dur(to)
            );
        }
        html.push_str("</g>\n");
    }
    let _ = writeln!(
        html,
        "<text x=\"{LABEL}\" y=\"{:.1}\">0</text><text x=\"{:.1}\" y=\"{:.1}\" \
         text-anchor=\"end\">{}</text></svg>",
        height - 6.0,
        WIDTH - 4.0,
        height - 6.0,
        dur(total)
    );
}

/// Characters of a title a timeline label holds, its number aside.
const LABEL_CHARS: usize = 11;

/// A lane's label on the timeline: its number in the table and the start of its title (the id
/// without one). Numbered, since titles (and a checklist's ids, made from them) often start
/// alike.
fn label(row: usize, lane: &Lane) -> String {
    let name = match lane.title.is_empty() {
        true => &lane.task,
        false => &lane.title,
    };
    let mut short: String = name.chars().take(LABEL_CHARS).collect();
    if name.chars().count() > LABEL_CHARS {
        short.push('…');
    }
    format!("{}. {short}", row + 1)
}

fn lane_table(html: &mut String, lanes: &[Lane]) {
    html.push_str(
        "<table class=\"lanes\"><tr><th>#</th><th>task</th><th>title</th><th>loops (run ids: \
         <code>ralph report ID</code>)</th><th>iterations</th><th>cost</th><th>last checks</th>\
         <th>outcome</th></tr>\n",
    );
    for (row, lane) in lanes.iter().enumerate() {
        let loops: Vec<String> = lane.loops.iter().map(|l| escape(l)).collect();
        let outcome = match lane.outcome.as_str() {
            "" if lane.loops.is_empty() => "did not start",
            "" => "running, or stopped",
            o => o,
        };
        let (checks, logs) = match &lane.latest {
            Some(latest) => (checks_cell(&latest.checks), logs_link(&latest.dir)),
            None => (String::new(), String::new()),
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}{logs}</td><td>{}</td><td>{}</td>\
             <td>{checks}</td><td>{outcome}</td></tr>",
            row + 1,
            escape(&lane.task),
            escape(&lane.title),
            loops.join("<br>"),
            lane.iterations,
            spent(lane.cost, lane.tokens),
        );
    }
    html.push_str("</table>\n");
}

/// A loop's last checks: each command, passed or failed, a failure's last line of output.
fn checks_cell(checks: &[CheckRecord]) -> String {
    if checks.is_empty() {
        return "none run".to_owned();
    }
    let lines: Vec<String> = checks
        .iter()
        .map(|check| {
            let command = escape(&check.command);
            match (
                check.passed,
                check.last_lines.iter().rev().find(|l| !l.trim().is_empty()),
            ) {
                (true, _) => format!("<span class=\"pass\">✓</span> <code>{command}</code>"),
                (false, Some(line)) => format!(
                    "<span class=\"fail\">✗</span> <code>{command}</code>: {}",
                    escape(line.trim())
                ),
                (false, None) => format!("<span class=\"fail\">✗</span> <code>{command}</code>"),
            }
        })
        .collect();
    lines.join("<br>")
}

/// A link to a loop's run folder (its iteration logs and prompts), opened from the machine the
/// report was written on.
fn logs_link(dir: &Path) -> String {
    let path = dir.to_string_lossy();
    let href: String = path
        .chars()
        .map(|c| match c {
            ' ' => "%20".to_owned(),
            '#' => "%23".to_owned(),
            '?' => "%3F".to_owned(),
            '%' => "%25".to_owned(),
            c => c.to_string(),
        })
        .collect();
    format!("<br><a href=\"file://{}\">logs</a>", escape(&href))
}

fn queue_table(html: &mut String, rows: &[(u64, String, String, String)]) {
    html.push_str("<h2>Merge queue</h2>\n");
    if rows.is_empty() {
        html.push_str("<p class=\"meta\">No task reached the merge queue.</p>\n");
        return;
    }
    html.push_str("<table class=\"queue\"><tr><th>at</th><th>task</th><th>step</th></tr>\n");
    for (t, task, class, what) in rows {
        let _ = writeln!(
            html,
            "<tr class=\"{class}-step\"><td>{}</td><td>{}</td><td>{what}</td></tr>",
            dur(*t),
            escape(task)
        );
    }
    html.push_str("</table>\n");
}
