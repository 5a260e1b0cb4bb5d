//! `ralph runs`: the runs of a folder, newest first.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ralph_events::parallel::ParallelRecord;
use ralph_events::run_folder::{self, RunRecord, RunStatus};
use ralph_events::story::run_folder::{RunStories, StoryCounts};
use ralph_events::story::{StoryEnd, TaskWords};
use serde_json::{Map, Value, json};

use crate::error::CliError;
use crate::render::human_duration;

/// Prints the runs of `folder` (in `log_dir`, when its runs went there) as a table, or as a
/// JSON array with `json`. A parallel run is one row, its lanes' loops under it.
pub(crate) fn runs(folder: &Path, log_dir: Option<&Path>, json: bool) -> Result<i32, CliError> {
    let holder = ralph_engine::FolderClaim::running_in(folder);
    let runs_dir = runs_dir(folder, log_dir);
    let parallel = parallel_runs(folder);
    let mut records = Vec::new();
    for dir in run_folder::list_runs_in(&runs_dir)? {
        let events = run_folder::read_events(&dir.events_path())?;
        let lane = parallel.iter().find_map(|run| {
            let (task, _) = run.lanes.iter().find(|(_, id)| *id == dir.id)?;
            Some((run.run_id.clone(), task.clone()))
        });
        // A lane's loop runs under its parallel run's lock: it runs while that run does.
        let holder = match &lane {
            Some((run, _)) => holder.clone().filter(|h| h.run_id == *run).map(|mut h| {
                h.run_id.clone_from(&dir.id);
                h
            }),
            None => holder.clone(),
        };
        let mut listed = Listed::new(RunRecord::from_events(&dir.id, &events, holder.as_ref()));
        listed.lane = lane;
        records.push(listed);
    }
    let parallel: Vec<ParallelListed> = parallel
        .into_iter()
        .map(|run| ParallelListed {
            pid: holder
                .as_ref()
                .filter(|h| h.run_id == run.run_id)
                .map(|h| h.pid),
            // The lanes' lists are the run's list: their endings name its kind.
            words: records
                .iter()
                .filter(|r| r.lane.as_ref().is_some_and(|(id, _)| *id == run.run_id))
                .find(|r| r.run.task_summary.contains_key(TaskWords::FIELD))
                .map_or(TaskWords::TASK, |r| {
                    TaskWords::from_fields(&r.run.task_summary)
                }),
            run,
        })
        .collect();
    let text = if json {
        let mut list: Vec<(&str, Value)> = records
            .iter()
            .map(|r| (r.run.run_id.as_str(), summary_json(r)))
            .collect();
        list.extend(
            parallel
                .iter()
                .map(|p| (p.run.run_id.as_str(), parallel_json(p))),
        );
        // Newest first, as the run folders are listed: run ids sort by their start.
        list.sort_by(|a, b| b.0.cmp(a.0));
        let list: Vec<Value> = list.into_iter().map(|(_, v)| v).collect();
        format!(
            "{}\n",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        )
    } else if records.is_empty() && parallel.is_empty() {
        format!("no runs in {} yet\n", runs_dir.display())
    } else {
        table_with_parallel(&records, &parallel, SystemTime::now())
    };
    crate::print_out(text.as_bytes())?;
    Ok(0)
}

/// The parallel runs of the repository `folder` is in, oldest first; none outside git.
fn parallel_runs(folder: &Path) -> Vec<ParallelRecord> {
    ralph_parallel::events_file(folder)
        .and_then(|path| ralph_events::parallel::read_events(&path).ok())
        .map(|events| ParallelRecord::all(&events))
        .unwrap_or_default()
}

/// A parallel run as `ralph runs` lists it: its record and the process running it.
pub(crate) struct ParallelListed {
    run: ParallelRecord,
    /// The process running it, when one is.
    pid: Option<u32>,
    /// The words for its list's tasks.
    words: TaskWords,
}

impl ParallelListed {
    /// `running`, `ended`, or `stopped` (interrupted or killed: `--resume` goes on with it).
    fn status(&self) -> &'static str {
        match (self.pid, &self.run.ended) {
            (Some(_), _) => "running",
            (None, Some(_)) => "ended",
            (None, None) => "stopped",
        }
    }

    fn end(&self) -> String {
        let (reason, code) = match (self.pid, &self.run.ended) {
            (Some(pid), _) => return format!("running, pid {pid}"),
            (None, None) => return "stopped".to_owned(),
            (None, Some(ended)) => ended,
        };
        let one = self.words.one;
        let reason = match StoryEnd::of(reason) {
            Some(StoryEnd::StoriesDone) => format!("every {one} landed"),
            Some(StoryEnd::StoriesBlocked) => format!("no {one} left; some blocked"),
            Some(StoryEnd::WorkLeft) => "work left".to_owned(),
            _ => reason.to_string(),
        };
        match code {
            0 => reason,
            code => format!("{reason} (exit {code})"),
        }
    }

    fn duration(&self, now: SystemTime) -> Duration {
        let to = match self.pid {
            Some(_) => now,
            None => self.run.last,
        };
        let took = to.duration_since(self.run.started).unwrap_or_default();
        Duration::from_secs(took.as_secs())
    }

    fn tasks(&self) -> String {
        let run = &self.run;
        let mut text = format!("{}/{} landed", run.landed, run.tasks.len());
        if run.blocked > 0 {
            text.push_str(&format!(", {} blocked", run.blocked));
        }
        text
    }
}

/// A parallel run for `--json`.
fn parallel_json(listed: &ParallelListed) -> Value {
    let run = &listed.run;
    let started = humantime::format_rfc3339_seconds(run.started).to_string();
    let mut object = Map::new();
    object.insert("run_id".into(), json!(run.run_id));
    object.insert("kind".into(), json!("parallel"));
    object.insert("started_at".into(), json!(started));
    object.insert(
        "duration_ms".into(),
        json!(
            run.last
                .duration_since(run.started)
                .unwrap_or_default()
                .as_millis() as u64
        ),
    );
    object.insert("status".into(), json!(listed.status()));
    if let Some(pid) = listed.pid {
        object.insert("pid".into(), json!(pid));
    }
    if let Some((reason, code)) = &run.ended {
        object.insert("reason".into(), json!(reason));
        object.insert("exit_code".into(), json!(code));
    }
    object.insert("parallel".into(), json!(run.parallel));
    object.insert("iterations".into(), json!(run.iterations));
    object.insert("cost_usd".into(), json!(run.cost_usd));
    object.insert(
        "tasks".into(),
        json!({"total": run.tasks.len(), "landed": run.landed, "blocked": run.blocked}),
    );
    let lanes: Vec<Value> = run
        .lanes
        .iter()
        .map(|(task, id)| json!({"task_id": task, "run_id": id}))
        .collect();
    object.insert("lanes".into(), json!(lanes));
    Value::Object(object)
}

/// Where the runs of the loop in `folder` are: `log_dir` (as `ralph run --log-dir` was given
/// it, in that folder) or `.ralph/runs/`.
pub(crate) fn runs_dir(folder: &Path, log_dir: Option<&Path>) -> PathBuf {
    folder.join(log_dir.unwrap_or(Path::new(run_folder::RUNS_DIR)))
}

/// A run as `ralph runs` lists it: its record and, in story mode, its stories.
pub(crate) struct Listed {
    run: RunRecord,
    stories: Option<StoryCounts>,
    /// For a lane's loop: the parallel run's id and the lane's task.
    lane: Option<(String, String)>,
}

impl Listed {
    fn new(mut run: RunRecord) -> Self {
        let stories = RunStories::read(&mut run).counts;
        Self {
            run,
            stories,
            lane: None,
        }
    }
}

/// One run for `--json`: the record without its per-iteration detail, its keys in the order
/// `ralph runs --json` has always written them.
fn summary_json(listed: &Listed) -> Value {
    let run = &listed.run;
    let mut object = Map::new();
    object.insert("run_id".into(), json!(run.run_id));
    object.insert("started_at".into(), json!(run.started_at));
    object.insert("duration_ms".into(), json!(run.duration_ms));
    object.insert("max_iterations".into(), json!(run.max_iterations));
    if let Ok(Value::Object(status)) = serde_json::to_value(&run.status) {
        object.extend(status);
    }
    object.insert("iterations".into(), json!(run.iterations.len()));
    object.insert("tokens".into(), json!(run.tokens));
    object.insert("cost_usd".into(), json!(run.cost_usd));
    object.insert("stories".into(), json!(listed.stories));
    if let Some((parallel, task)) = &listed.lane {
        object.insert("parallel_run_id".into(), json!(parallel));
        object.insert("task_id".into(), json!(task));
    }
    Value::Object(object)
}

/// What the END column says: a task list's ending in the list's own words.
fn end(run: &RunRecord) -> String {
    match &run.status {
        RunStatus::Ended { reason, exit_code } => {
            let words = TaskWords::from_fields(&run.task_summary);
            let reason = StoryEnd::of(reason)
                .and_then(|end| crate::render::story_end_sentence(end, words))
                .unwrap_or_else(|| reason.to_string());
            match exit_code {
                Some(code) if *code != 0 => format!("{reason} (exit {code})"),
                _ => reason,
            }
        }
        RunStatus::Running { pid } => format!("running, pid {pid}"),
        RunStatus::Killed => "killed".to_owned(),
        _ => String::new(),
    }
}

/// How long a run took; for one still running, how long it has been going at `now`.
fn duration(run: &RunRecord, now: SystemTime) -> Duration {
    match (&run.status, run.started) {
        (RunStatus::Running { .. }, Some(started)) => now
            .duration_since(started)
            .map_or(Duration::ZERO, |d| Duration::from_secs(d.as_secs())),
        _ => Duration::from_millis(run.duration_ms),
    }
}

/// The table `ralph runs` prints for single loops.
#[cfg(test)]
pub(crate) fn table(runs: &[Listed], now: SystemTime) -> String {
    table_with_parallel(runs, &[], now)
}

/// The table `ralph runs` prints: newest first, a parallel run as one row with its lanes'
/// loops under it.
pub(crate) fn table_with_parallel(
    runs: &[Listed],
    parallel: &[ParallelListed],
    now: SystemTime,
) -> String {
    let header = [
        "RUN",
        "STARTED",
        "DURATION",
        "ITERATIONS",
        "END",
        "TASKS",
        "COST",
    ];
    let cost = |c: Option<f64>| c.map_or_else(|| "-".to_owned(), |c| format!("${c:.2}"));
    let loop_row = |Listed { run, stories, lane }: &Listed, id: String| {
        [
            id,
            run.started_at.clone().unwrap_or_default(),
            human_duration(duration(run, now)),
            run.iterations.len().to_string(),
            end(run),
            match lane {
                Some((_, task)) => task.clone(),
                None => stories.map_or_else(
                    || "-".to_owned(),
                    |s| match s.remaining {
                        Some(left) => {
                            format!("{}/{} passed", s.passed, s.passed + s.blocked + left)
                        }
                        None => format!("{} passed", s.passed),
                    },
                ),
            },
            cost(run.cost_usd),
        ]
    };
    // Newest first: run ids sort by their start.
    let mut top: Vec<(&str, Option<&ParallelListed>, Option<&Listed>)> = runs
        .iter()
        .filter(|r| {
            r.lane
                .as_ref()
                .is_none_or(|(id, _)| !parallel.iter().any(|p| p.run.run_id == *id))
        })
        .map(|r| (r.run.run_id.as_str(), None, Some(r)))
        .collect();
    top.extend(
        parallel
            .iter()
            .map(|p| (p.run.run_id.as_str(), Some(p), None)),
    );
    top.sort_by(|a, b| b.0.cmp(a.0));
    let mut rows: Vec<[String; 7]> = Vec::new();
    for (id, parallel, single) in top {
        if let Some(single) = single {
            rows.push(loop_row(single, id.to_owned()));
            continue;
        }
        let Some(p) = parallel else { continue };
        rows.push([
            format!("{id} (parallel {})", p.run.parallel),
            humantime::format_rfc3339_seconds(p.run.started).to_string(),
            human_duration(p.duration(now)),
            p.run.iterations.to_string(),
            p.end(),
            p.tasks(),
            cost(p.run.cost_usd),
        ]);
        for (_, lane_id) in &p.run.lanes {
            if let Some(lane) = runs.iter().find(|r| r.run.run_id == *lane_id) {
                rows.push(loop_row(lane, format!("  └ {lane_id}")));
            }
        }
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut push = |cells: &[&str]| {
        let line: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    };
    push(&header);
    for row in &rows {
        push(&row.each_ref().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_events::run_folder::LockHolder;
    use ralph_events::run_folder::parse_events;
    use ralph_frontmatter::schema::RUN_STATUS_WORDS;

    fn record(id: &str, lines: &[&str], holder: Option<&LockHolder>) -> Listed {
        let text: String = lines
            .iter()
            .map(|l| format!("{{\"run_id\":\"{id}\",{l}}}\n"))
            .collect();
        Listed::new(RunRecord::from_events(
            id,
            &parse_events(text.as_bytes()),
            holder,
        ))
    }

    #[test]
    fn runs_table_names_each_ending() {
        let mut holder = LockHolder::this_process("20260101T100000000-3", Path::new("."));
        holder.pid = 4242;
        let runs = [
            record(
                "20260101T100000000-3",
                &[
                    r#""ts":"2026-01-01T10:00:00.000Z","type":"RUN_STARTED""#,
                    r#""ts":"2026-01-01T10:00:00.000Z","type":"ITERATION_STARTED","iteration":1"#,
                ],
                Some(&holder),
            ),
            record(
                "20260101T090000000-2",
                &[
                    r#""ts":"2026-01-01T09:00:00.000Z","type":"RUN_STARTED""#,
                    r#""ts":"2026-01-01T09:00:00.000Z","type":"ITERATION_STARTED","iteration":1"#,
                    r#""ts":"2026-01-01T09:00:42.000Z","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","usage":{"cost_usd":1.25}"#,
                    r#""ts":"2026-01-01T09:00:43.000Z","type":"ITERATION_STARTED","iteration":2"#,
                ],
                None,
            ),
            record(
                "20260101T080000000-1",
                &[
                    r#""ts":"2026-01-01T08:00:00.000Z","type":"RUN_STARTED""#,
                    r#""ts":"2026-01-01T08:00:00.000Z","type":"ITERATION_STARTED","iteration":1"#,
                    r#""ts":"2026-01-01T08:10:00.000Z","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural""#,
                    r#""ts":"2026-01-01T08:12:30.000Z","type":"RUN_ENDED","reason":"max_iterations","exit_code":1,"stories":{"passed":3,"blocked":1,"remaining":2}"#,
                ],
                None,
            ),
            record(
                "20260101T070000000-0",
                &[
                    r#""ts":"2026-01-01T07:00:00.000Z","type":"RUN_STARTED""#,
                    r#""ts":"2026-01-01T07:00:01.500Z","type":"RUN_ENDED","reason":"converged","exit_code":0"#,
                ],
                None,
            ),
        ];
        let now = humantime::parse_rfc3339("2026-01-01T10:05:00Z").unwrap();
        insta::assert_snapshot!(table(&runs, now));
        let json: Vec<Value> = runs.iter().map(summary_json).collect();
        insta::assert_snapshot!(
            "runs_json_names_each_ending",
            serde_json::to_string_pretty(&json).unwrap()
        );
        let json = summary_json(&runs[0]);
        assert_eq!(json["status"], "running");
        assert_eq!(json["pid"], 4242);
        assert_eq!(json["iterations"], 1);
    }

    /// A declared state that stops names the run's ending, so the words for a run without an
    /// ending of its own are names `states` cannot take.
    #[test]
    fn the_words_for_a_killed_or_running_run_are_names_states_cannot_take() {
        let holder = LockHolder::this_process("20260101T100000000-3", Path::new("."));
        let started = [r#""ts":"2026-01-01T10:00:00.000Z","type":"RUN_STARTED""#];
        for run in [
            record("20260101T100000000-3", &started, Some(&holder)),
            record("20260101T100000000-3", &started, None),
        ] {
            let status = summary_json(&run)["status"].as_str().unwrap().to_owned();
            let end = end(&run.run);
            let word = end.split(',').next().unwrap();
            assert_eq!(word, status);
            assert!(RUN_STATUS_WORDS.contains(&word), "{end}");
        }
    }

    /// Story counts: from `RUN_ENDED` once a run has ended, counted from the events while it
    /// has not (no `remaining` then).
    #[test]
    fn runs_count_stories_from_run_ended_or_from_the_events() {
        let runs = [
            record(
                "20260101T073000000-9",
                &[
                    r#""ts":"2026-01-01T07:30:00.000Z","type":"RUN_STARTED""#,
                    r#""ts":"2026-01-01T07:30:00.000Z","type":"STORY_STARTED","story_id":"US-1","title":"a","attempt":1,"max_attempts":3"#,
                    r#""ts":"2026-01-01T07:30:00.000Z","type":"ITERATION_STARTED","iteration":1,"story_id":"US-1","attempt":1"#,
                    r#""ts":"2026-01-01T07:31:00.000Z","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","failed":false"#,
                    r#""ts":"2026-01-01T07:31:00.000Z","type":"STORY_PASSED","story_id":"US-1","attempts":1,"checkpoint":null"#,
                    r#""ts":"2026-01-01T07:31:00.000Z","type":"STORY_BLOCKED","story_id":"US-2","reason":"r""#,
                    r#""ts":"2026-01-01T07:31:00.000Z","type":"STORY_PASSED","story_id":"US-3","attempts":1,"checkpoint":null"#,
                ],
                None,
            ),
            record(
                "20260101T080000000-1",
                &[
                    r#""ts":"2026-01-01T08:00:00.000Z","type":"RUN_STARTED""#,
                    r#""ts":"2026-01-01T08:00:00.000Z","type":"STORY_PASSED","story_id":"US-1","attempts":1,"checkpoint":null"#,
                    r#""ts":"2026-01-01T08:12:30.000Z","type":"RUN_ENDED","reason":"stories_done","exit_code":0,"stories":{"passed":4,"blocked":0,"remaining":0}"#,
                ],
                None,
            ),
        ];
        let now = humantime::parse_rfc3339("2026-01-01T10:05:00Z").unwrap();
        insta::assert_snapshot!(table(&runs, now));
        let json: Vec<Value> = runs.iter().map(summary_json).collect();
        insta::assert_snapshot!(serde_json::to_string_pretty(&json).unwrap());
    }
}
