//! `ralph runs`: the runs of a folder, newest first.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ralph_engine::run_folder::{self, RunRecord, RunStatus};
use ralph_escalation::run_folder::{RunStories, StoryCounts};
use serde_json::{Map, Value, json};

use crate::error::CliError;
use crate::render::human_duration;

/// Prints the runs of `folder` (in `log_dir`, when its runs went there) as a table, or as a
/// JSON array with `json`.
pub(crate) fn runs(folder: &Path, log_dir: Option<&Path>, json: bool) -> Result<i32, CliError> {
    let holder = run_folder::running(folder);
    let runs_dir = runs_dir(folder, log_dir);
    let mut records = Vec::new();
    for dir in run_folder::list_runs_in(&runs_dir)? {
        let events = run_folder::read_events(&dir.events_path())?;
        records.push(Listed::new(RunRecord::from_events(
            &dir.id,
            &events,
            holder.as_ref(),
        )));
    }
    let text = if json {
        let list: Vec<Value> = records.iter().map(summary_json).collect();
        format!(
            "{}\n",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        )
    } else if records.is_empty() {
        format!("no runs in {} yet\n", runs_dir.display())
    } else {
        table(&records, SystemTime::now())
    };
    crate::print_out(text.as_bytes())?;
    Ok(0)
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
}

impl Listed {
    fn new(mut run: RunRecord) -> Self {
        let stories = RunStories::read(&mut run).counts;
        Self { run, stories }
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
    Value::Object(object)
}

/// What the END column says.
fn end(run: &RunRecord) -> String {
    match &run.status {
        RunStatus::Ended { reason, exit_code } => match exit_code {
            Some(code) if *code != 0 => format!("{reason} (exit {code})"),
            _ => reason.clone(),
        },
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

/// The table `ralph runs` prints.
pub(crate) fn table(runs: &[Listed], now: SystemTime) -> String {
    let header = [
        "RUN",
        "STARTED",
        "DURATION",
        "ITERATIONS",
        "END",
        "STORIES",
        "COST",
    ];
    let rows: Vec<[String; 7]> = runs
        .iter()
        .map(|Listed { run, stories }| {
            [
                run.run_id.clone(),
                run.started_at.clone().unwrap_or_default(),
                human_duration(duration(run, now)),
                run.iterations.len().to_string(),
                end(run),
                stories.map_or_else(
                    || "-".to_owned(),
                    |s| match s.remaining {
                        Some(left) => {
                            format!("{}/{} passed", s.passed, s.passed + s.blocked + left)
                        }
                        None => format!("{} passed", s.passed),
                    },
                ),
                run.cost_usd
                    .map_or_else(|| "-".to_owned(), |c| format!("${c:.2}")),
            ]
        })
        .collect();
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
    use ralph_engine::lock::LockHolder;
    use ralph_engine::run_folder::parse_events;
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
