//! The report of a parallel run (`ralph run --parallel N`): a lane per task (its iterations and
//! its time in the merge queue on one timeline) and the merge queue's steps, built from the
//! run's events in `.ralph/parallel/events.jsonl`. Each lane's own loop keeps its run folder;
//! `ralph report <lane run id>` reports it in full.

use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use super::{LABEL, LANE, STYLE, WIDTH, dur, escape};

/// A parallel run's events, in the order they were written.
pub(crate) struct ParallelRun {
    run_id: String,
    events: Vec<Value>,
}

impl ParallelRun {
    /// The parallel run `id` (a run id or a unique prefix of one) of the repository `folder` is
    /// in; with no id, the repository's parallel run when it is newer than the folder's last
    /// single loop. `None` when there is no such parallel run (the id may name a loop's run).
    pub(crate) fn find(folder: &Path, id: Option<&str>) -> Option<Self> {
        let wanted = match id {
            None => crate::status::newest_parallel_run(folder)?.run_id,
            Some(_) => String::new(),
        };
        let text = std::fs::read_to_string(ralph_parallel::events_file(folder)?).ok()?;
        // A half-written last line (a run killed mid-write) is skipped, not an error.
        let all: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let run_id = match id {
            None => wanted,
            Some(prefix) => {
                let mut ids: Vec<&str> = all
                    .iter()
                    .filter(|e| e["type"] == "PARALLEL_STARTED")
                    .filter_map(|e| e["run_id"].as_str())
                    .filter(|r| r.starts_with(prefix))
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                match ids.as_slice() {
                    [one] => (*one).to_owned(),
                    _ => ids.iter().find(|r| **r == prefix)?.to_string(),
                }
            }
        };
        let events: Vec<Value> = all
            .into_iter()
            .filter(|e| e["run_id"].as_str() == Some(&run_id))
            .collect();
        (!events.is_empty()).then_some(Self { run_id, events })
    }
}

fn ts(event: &Value) -> Option<SystemTime> {
    humantime::parse_rfc3339(event["ts"].as_str()?).ok()
}

fn text<'a>(event: &'a Value, key: &str) -> &'a str {
    event[key].as_str().unwrap_or("")
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
    /// (start, end, class, what) of each bar.
    bars: Vec<(u64, Option<u64>, &'static str, String)>,
    outcome: String,
}

/// The whole report of a parallel run.
pub(crate) fn render(run: &ParallelRun) -> String {
    let start = run.events.iter().find_map(ts);
    let end = run.events.iter().rev().find_map(ts);
    let at = |e: &Value| -> u64 {
        match (start, ts(e)) {
            (Some(s), Some(t)) => t
                .duration_since(s)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            _ => 0,
        }
    };
    let total = match (start, end) {
        (Some(s), Some(e)) => e
            .duration_since(s)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        _ => 0,
    };
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
    for e in &run.events {
        let t = at(e);
        let task = text(e, "task_id");
        match text(e, "type") {
            "PARALLEL_STARTED" => {
                if facts.is_empty() {
                    facts.push(format!(
                        "base <b>{}</b> at {}",
                        escape(text(e, "base")),
                        escape(short(text(e, "base_commit")))
                    ));
                    facts.push(format!("<b>{}</b> at a time", e["parallel"]));
                }
                if e["resumed"] == true {
                    facts.push(format!("resumed after {}", dur(t)));
                }
                // The tasks in prd.json order, so a task that never started has its lane too.
                for id in e["tasks"].as_array().into_iter().flatten() {
                    lane_of(&mut lanes, id.as_str().unwrap_or(""));
                }
            }
            "LANE_STARTED" => {
                let i = lane_of(&mut lanes, task);
                lanes[i].title = text(e, "title").to_owned();
                lanes[i].loops.push(text(e, "lane_run_id").to_owned());
            }
            "LANE_ITERATION_STARTED" => {
                let i = lane_of(&mut lanes, task);
                let what = format!("iteration {}", e["iteration"]);
                lanes[i].bars.push((t, None, "running", what));
            }
            "LANE_ITERATION_ENDED" => {
                let i = lane_of(&mut lanes, task);
                let class = match (e["failed"] == true, text(e, "state")) {
                    (true, _) => "failed",
                    (false, "idle") => "idle",
                    _ => "worked",
                };
                close(&mut lanes[i], t, class);
            }
            "LANE_ENDED" => {
                let i = lane_of(&mut lanes, task);
                lanes[i].iterations += e["iterations"].as_u64().unwrap_or(0);
                // The task's cost so far, over all its loops.
                lanes[i].cost = e["cost_usd"].as_f64().unwrap_or(lanes[i].cost);
                lanes[i].outcome = format!("loop ended: {}", escape(text(e, "reason")));
                close(&mut lanes[i], t, "interrupted");
            }
            "MERGE_QUEUED" => {
                let what = format!("queued, position {}", e["position"]);
                queue_rows.push((t, task.to_owned(), "queued".to_owned(), what));
            }
            "MERGE_STARTED" => {
                let i = lane_of(&mut lanes, task);
                lanes[i].bars.push((t, None, "merging", "merge".to_owned()));
                let what = format!(
                    "{} merged with the base at {}",
                    escape(short(text(e, "branch_commit"))),
                    escape(short(text(e, "base_commit")))
                );
                queue_rows.push((t, task.to_owned(), "merging".to_owned(), what));
            }
            "MERGE_CONFLICT" => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "failed");
                let files: Vec<String> = e["files"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str().map(escape))
                    .collect();
                let what = format!(
                    "conflict in {}; back to its loop (saved under {})",
                    files.join(", "),
                    escape(text(e, "saved_ref"))
                );
                queue_rows.push((t, task.to_owned(), "failed".to_owned(), what));
            }
            "MERGE_CHECK_FAILED" => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "failed");
                let checks: Vec<String> = e["checks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| format!("{} (exit {})", escape(text(c, "command")), c["exit_code"]))
                    .collect();
                let what = format!(
                    "check failed on the merged result: {}; back to its loop (saved under {})",
                    checks.join(", "),
                    escape(text(e, "saved_ref"))
                );
                queue_rows.push((t, task.to_owned(), "failed".to_owned(), what));
            }
            "TASK_LANDED" => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "converged");
                let commit = escape(short(text(e, "commit")));
                lanes[i].outcome = format!("landed as {commit}");
                let what = format!("landed on the base as {commit}");
                queue_rows.push((t, task.to_owned(), "converged".to_owned(), what));
            }
            "TASK_BLOCKED" => {
                let i = lane_of(&mut lanes, task);
                close(&mut lanes[i], t, "blocked");
                let reason = escape(text(e, "reason"));
                lanes[i].outcome = format!("blocked: {reason}");
                let what = format!("blocked: {reason}");
                queue_rows.push((t, task.to_owned(), "blocked".to_owned(), what));
            }
            "PARALLEL_ENDED" => ended = Some(e),
            _ => {}
        }
    }
    let status = match ended {
        Some(e) => format!(
            "ended: <b>{}</b> (exit {}) · <b>{}</b> landed, {} blocked, {} left · cost <b>${:.2}</b>",
            escape(text(e, "reason")),
            e["exit_code"],
            e["landed"],
            e["blocked"],
            e["remaining"],
            e["cost_usd"].as_f64().unwrap_or(0.0)
        ),
        None => "<b>not ended</b> (running, or stopped: `ralph run --parallel N --resume` goes on)"
            .to_owned(),
    };
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
         back by the queue</span><span><i class=\"merging\"></i>in the merge queue</span>\
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
            "<g class=\"lane\" data-task=\"{task}\"><text x=\"4\" y=\"{:.1}\">{task}</text>",
            y + 14.0
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

fn lane_table(html: &mut String, lanes: &[Lane]) {
    html.push_str(
        "<table class=\"lanes\"><tr><th>task</th><th>title</th><th>loops (run ids: \
         <code>ralph report ID</code>)</th><th>iterations</th><th>cost</th><th>outcome</th></tr>\n",
    );
    for lane in lanes {
        let loops: Vec<String> = lane.loops.iter().map(|l| escape(l)).collect();
        let outcome = match lane.outcome.as_str() {
            "" if lane.loops.is_empty() => "did not start",
            "" => "running, or stopped",
            o => o,
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>${:.2}</td><td>{outcome}</td></tr>",
            escape(&lane.task),
            escape(&lane.title),
            loops.join("<br>"),
            lane.iterations,
            lane.cost
        );
    }
    html.push_str("</table>\n");
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
