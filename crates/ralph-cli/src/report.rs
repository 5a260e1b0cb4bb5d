//! `ralph report`: one self-contained HTML file about a run, built from its `events.jsonl`
//! (and the tails of its iteration logs).
//!
//! Self-contained: inline CSS and SVG, no script, nothing fetched, so it opens anywhere and can
//! be mailed or attached to an issue. Everything that comes from events or logs is escaped.
//! Its size is bounded: the log tails share a fixed budget, as do the failing checks' last
//! lines, so a 1,000-iteration run stays well under 1 MiB.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use ralph_events::run_folder::{
    self, IterationOutcome, IterationRecord, RunDir, RunRecord, RunStatus,
};
use ralph_events::story::TaskWords;
use ralph_events::story::run_folder::RunStories;

use crate::error::CliError;
use crate::render::human_duration;

mod parallel;

/// Bytes of log tail (as escaped HTML) the whole report may hold, shared between iterations.
const TAIL_BUDGET: usize = 160 * 1024;
/// The most one iteration's tail may hold.
const TAIL_MAX: usize = 4096;
/// Bytes of failing checks' last lines (as escaped HTML) the whole report may hold, shared
/// between the failing checks of every attempt.
const CHECK_BUDGET: usize = 96 * 1024;
/// The timeline's drawing width, in SVG units.
const WIDTH: f64 = 1000.0;
/// One lane's height.
const LANE: f64 = 22.0;
/// Room for lane labels, left of the timeline.
const LABEL: f64 = 90.0;

/// Writes the report of run `id` (the newest by default) of the loop in `folder` (its runs in
/// `log_dir`, when they went there) to `output`, or to standard output for `-`; by default to
/// `report.html` in the run's own folder (a parallel run's: `.ralph/parallel/<run id>/`), where
/// git never sees it.
pub(crate) fn write(
    folder: &Path,
    log_dir: Option<&Path>,
    id: Option<&str>,
    output: Option<&Path>,
) -> Result<i32, CliError> {
    // A parallel run is "the last run" when it started after the folder's last loop; its id
    // is not a run folder's (its lanes' loops have those).
    let parallel = match (id, log_dir) {
        (None, Some(_)) => None,
        _ => parallel::ParallelRun::find(folder, id),
    };
    let (html, own_folder) = match parallel {
        Some(run) => (parallel::render(&run), run.folder(folder)),
        None => {
            let dir = run_folder::find_run_in(&crate::runs::runs_dir(folder, log_dir), id)?;
            let holder = ralph_engine::FolderClaim::running_in(folder);
            let mut run = RunRecord::read(&dir, holder.as_ref())?;
            let stories = RunStories::read(&mut run);
            let tails = tails(&dir, &run);
            let html = render(&run, &stories, &tails, task_words(&dir, &run));
            (html, Some(dir.path))
        }
    };
    let default;
    let output = match (output, own_folder) {
        (Some(output), _) => output,
        (None, Some(own)) => {
            std::fs::create_dir_all(&own).map_err(|source| CliError::Write {
                path: own.clone(),
                source,
            })?;
            default = own.join("report.html");
            &default
        }
        (None, None) => Path::new("ralph-report.html"),
    };
    if output == Path::new("-") {
        crate::print_out(html.as_bytes())?;
        return Ok(0);
    }
    let write_error = |source| CliError::Write {
        path: output.to_path_buf(),
        source,
    };
    // A FIFO or a device there (`/dev/stdout`) is written into, never replaced.
    ralph_atomic::write(output, html.as_bytes()).map_err(write_error)?;
    crate::print_out(format!("wrote {}\n", output.display()).as_bytes())?;
    Ok(0)
}

/// The tail of each iteration's log, escaped for HTML, within [`TAIL_BUDGET`].
fn tails(dir: &RunDir, run: &RunRecord) -> Vec<String> {
    let each = (TAIL_BUDGET / run.iterations.len().max(1)).min(TAIL_MAX);
    run.iterations
        .iter()
        .map(|it| {
            fit(
                &escape(&read_tail(&dir.iteration_log(it.iteration), each)),
                each,
            )
        })
        .collect()
}

/// The last whole lines of `escaped` that fit in `max` bytes (never half an entity).
fn fit(escaped: &str, max: usize) -> String {
    let mut start = escaped.len().saturating_sub(max);
    while start > 0 && !escaped.is_char_boundary(start) {
        start += 1;
    }
    match (start, escaped[start..].find('\n')) {
        (0, _) => escaped.to_owned(),
        (_, Some(nl)) => escaped[start + nl + 1..].to_owned(),
        (_, None) => String::new(),
    }
}

fn read_tail(path: &Path, max: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max as u64);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = log_text(&String::from_utf8_lossy(&bytes));
    match start {
        0 => text,
        // Cut at a line start, so the tail does not begin mid-line.
        _ => text
            .split_once('\n')
            .map_or(text.clone(), |(_, rest)| rest.to_owned()),
    }
}

/// The log as text: without the terminal escape sequences an agent may print (colours, cursor
/// moves, window titles), and with a lone `\r` (a progress line redrawn in place) as a new line.
fn log_text(text: &str) -> String {
    let text = ralph_marker::strip_ansi(text).replace("\r\n", "\n");
    text.replace('\r', "\n")
}

/// HTML-escapes `text` for element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A CSS class from text that came from events: lowercase letters, digits and `_` only.
fn class(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn dur(ms: u64) -> String {
    human_duration(Duration::from_millis(ms))
}

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1140px;padding:0 16px;color:#1f2328;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.meta{color:#57606a}.meta b{color:#1f2328}
svg{display:block;width:100%;height:auto;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px}
svg text{font:11px system-ui,sans-serif;fill:#57606a}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.worked{fill:#2da44e;background:#2da44e}.idle{fill:#8c959f;background:#8c959f}.failed{fill:#cf222e;background:#cf222e}
.rate_limited{fill:#fb8f44;background:#fb8f44}.converged{fill:#0969da;background:#0969da}.blocked{fill:#8250df;background:#8250df}.interrupted{fill:#bf8700;background:#bf8700}
.running{fill:#1b7c83;background:#1b7c83}
.wait{fill:#d0d7de;background:#d0d7de}.wait.failure,.wait.rate_limit{fill:#ffcecb;background:#ffcecb}.wait.retry{fill:#fff1c2;background:#fff1c2}
.cost{fill:#0969da}.cum{fill:none;stroke:#cf222e;stroke-width:1.5}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{background:#f6f8fa}td{font-variant-numeric:tabular-nums}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:600}
.badge{display:inline-block;font-weight:normal;padding:0 6px;border-radius:10px;color:#fff;font-size:12px}
pre{margin:4px 0 0;max-height:320px;overflow:auto;background:#f6f8fa;padding:8px;font-size:12px;white-space:pre-wrap;word-break:break-all}
summary{cursor:pointer;color:#0969da}
"#;

const OUTCOMES: [IterationOutcome; 8] = [
    IterationOutcome::Worked,
    IterationOutcome::Idle,
    IterationOutcome::Failed,
    IterationOutcome::RateLimited,
    IterationOutcome::Converged,
    IterationOutcome::Blocked,
    IterationOutcome::Interrupted,
    IterationOutcome::Running,
];

/// The whole report.
/// What the run's tasks are called: as its `RUN_ENDED` says, or, before its end, its session.
fn task_words(dir: &RunDir, run: &RunRecord) -> TaskWords {
    if run.task_summary.contains_key(TaskWords::FIELD) {
        return TaskWords::from_fields(&run.task_summary);
    }
    ralph_events::session::Session::read(&dir.path)
        .map_or(TaskWords::STORY, |s| TaskWords::from_fields(&s.task_fields))
}

pub(crate) fn render(
    run: &RunRecord,
    stories: &RunStories,
    tails: &[String],
    words: TaskWords,
) -> String {
    let mut html = String::with_capacity(64 * 1024 + run.iterations.len() * 700);
    let id = escape(&run.run_id);
    let _ = write!(
        html,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>ralph run {id}</title><style>{STYLE}</style></head><body>\n"
    );
    header(&mut html, run, stories, words);
    timeline(&mut html, run, stories);
    spending(&mut html, run);
    agents(&mut html, run);
    checks(&mut html, run, stories, words);
    iterations(&mut html, run, stories, tails, words);
    html.push_str("</body></html>\n");
    html
}

fn header(html: &mut String, run: &RunRecord, stories: &RunStories, words: TaskWords) {
    let status = match &run.status {
        RunStatus::Ended { reason, exit_code } => format!(
            "ended: <b>{}</b>{}",
            escape(reason.as_str()),
            exit_code.map_or(String::new(), |c| format!(" (exit {c})"))
        ),
        RunStatus::Running { pid } => format!("<b>running</b>, pid {pid}"),
        _ => "<b>killed</b> (no RUN_ENDED and no process)".to_owned(),
    };
    let mut facts = vec![
        status,
        format!(
            "started <b>{}</b>",
            escape(run.started_at.as_deref().unwrap_or("?"))
        ),
        format!("duration <b>{}</b>", dur(run.duration_ms)),
        format!(
            "<b>{}</b>{} iterations",
            run.iterations.len(),
            run.max_iterations
                .map_or(String::new(), |m| format!("/{m}"))
        ),
    ];
    if let Some(s) = stories.counts {
        facts.push(format!(
            "{}: <b>{}</b> passed, {} blocked{}",
            words.many,
            s.passed,
            s.blocked,
            s.remaining.map_or(String::new(), |r| format!(", {r} left"))
        ));
    }
    // `land.pr`: each task's pull request, as its last event told it.
    let events: Vec<serde_json::Value> = run
        .task_events
        .iter()
        .filter_map(|record| serde_json::to_value(&record.event).ok())
        .collect();
    for (task, pr) in crate::pull_requests::from_events(&events) {
        facts.push(format!(
            "pull request for {} <b>{}</b>: <a href=\"{2}\">{2}</a> ({3})",
            words.one,
            escape(&task),
            escape(&pr.url),
            escape(&pr.state)
        ));
    }
    if let Some(cost) = run.cost_usd {
        facts.push(format!("cost <b>${cost:.2}</b>"));
    }
    if let Some(tokens) = run.tokens {
        facts.push(format!("<b>{tokens}</b> tokens"));
    }
    let _ = writeln!(
        html,
        "<h1>ralph run {}</h1><p class=\"meta\">{}</p>",
        escape(&run.run_id),
        facts.join(" · ")
    );
}

/// Story lanes in order of first appearance; one unnamed lane without stories.
fn lanes(stories: &RunStories) -> Vec<Option<String>> {
    let mut lanes: Vec<Option<String>> = Vec::new();
    for it in &stories.iterations {
        if !lanes.contains(&it.story_id) {
            lanes.push(it.story_id.clone());
        }
    }
    if lanes.is_empty() {
        lanes.push(None);
    }
    lanes
}

fn timeline(html: &mut String, run: &RunRecord, stories: &RunStories) {
    let lanes = lanes(stories);
    let story_mode = lanes.iter().any(Option::is_some);
    let label = if story_mode { LABEL } else { 0.0 };
    let total = run.duration_ms.max(1) as f64;
    let scale = (WIDTH - label) / total;
    let height = lanes.len() as f64 * LANE + 24.0;
    html.push_str("<h2>Timeline</h2><p class=\"legend\">");
    for o in OUTCOMES {
        let _ = write!(
            html,
            "<span><i class=\"{}\"></i>{}</span>",
            o.as_str(),
            o.label()
        );
    }
    html.push_str(
        "<span><i class=\"wait\"></i>wait</span><span><i class=\"wait failure\"></i>wait after a \
         failure or rate limit</span><span><i class=\"wait retry\"></i>retry</span></p>\n",
    );
    let _ = write!(
        html,
        "<svg id=\"timeline\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" \
         aria-label=\"one bar per iteration\">"
    );
    let lane_of = |story: &Option<String>| lanes.iter().position(|l| l == story).unwrap_or(0);
    if story_mode {
        for (i, lane) in lanes.iter().enumerate() {
            let _ = write!(
                html,
                "<text x=\"4\" y=\"{:.1}\">{}</text>",
                i as f64 * LANE + 15.0,
                escape(lane.as_deref().unwrap_or("-"))
            );
        }
    }
    let mut waits = run.waits.iter().peekable();
    for (index, (it, on)) in run.iterations.iter().zip(&stories.iterations).enumerate() {
        let lane = lane_of(&on.story_id);
        let x = label + it.start_ms as f64 * scale;
        let w = (it.duration_ms as f64 * scale).max(0.5);
        let y = lane as f64 * LANE + 3.0;
        let story = on.story_id.as_deref().map_or(String::new(), |s| {
            format!(
                " {}{}",
                escape(s),
                on.attempt
                    .map_or(String::new(), |a| format!(" attempt {a}"))
            )
        });
        let _ = write!(
            html,
            "<rect class=\"bar {o}\" x=\"{x:.1}\" y=\"{y:.1}\" \
             width=\"{w:.1}\" height=\"{h}\"><title>iteration {n}{story}: {l}, {d}</title></rect>",
            o = it.outcome.as_str(),
            l = it.outcome.label(),
            n = it.iteration,
            h = LANE - 6.0,
            d = dur(it.duration_ms),
        );
        // The waits that followed this iteration, up to the next one's start.
        let next_start = run.iterations.get(index + 1).map(|n| n.start_ms);
        while let Some(wait) = waits.next_if(|w| w.iteration <= it.iteration) {
            let end = (wait.start_ms + wait.delay_ms).min(next_start.unwrap_or(u64::MAX));
            let wx = label + wait.start_ms as f64 * scale;
            let ww = (end.saturating_sub(wait.start_ms) as f64 * scale).max(0.5);
            let _ = write!(
                html,
                "<rect class=\"wait {c}\" x=\"{wx:.1}\" y=\"{wy:.1}\" width=\"{ww:.1}\" \
                 height=\"{wh}\"><title>wait after iteration {n}: {r}, {d}</title></rect>",
                c = class(wait.reason.as_str()),
                wy = lane as f64 * LANE + 8.0,
                wh = LANE - 16.0,
                n = wait.iteration,
                r = escape(wait.reason.as_str()),
                d = dur(wait.delay_ms),
            );
        }
    }
    let axis_y = lanes.len() as f64 * LANE + 16.0;
    for tick in 0..=4 {
        let t = run.duration_ms as f64 * f64::from(tick) / 4.0;
        let x = label + t * scale;
        let anchor = match tick {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = write!(
            html,
            "<text x=\"{x:.1}\" y=\"{axis_y:.1}\" text-anchor=\"{anchor}\">{}</text>",
            match tick {
                0 => "0s".to_owned(),
                _ => dur(t as u64),
            }
        );
    }
    html.push_str("</svg>\n");
}

fn spending(html: &mut String, run: &RunRecord) {
    if run.cost_usd.is_some() {
        let _ = write!(
            html,
            "<h2>Cost</h2><p class=\"meta\">bars: cost per iteration; line: cumulative, \
             <b>${:.2}</b> in all</p>",
            run.cost_usd.unwrap_or(0.0)
        );
        let costs: Vec<f64> = own_costs(run)
            .into_iter()
            .map(|c| c.unwrap_or(0.0))
            .collect();
        chart(html, "cost", run, &costs, |v| format!("${v:.2}"));
    }
    if run.tokens.is_some() {
        let _ = write!(
            html,
            "<h2>Tokens</h2><p class=\"meta\">bars: input and output tokens per iteration; \
             line: cumulative, <b>{}</b> in all</p>",
            run.tokens.unwrap_or(0)
        );
        let tokens: Vec<f64> = run
            .iterations
            .iter()
            .map(|i| i.tokens.unwrap_or(0) as f64)
            .collect();
        chart(html, "tokens", run, &tokens, |v| format!("{v:.0}"));
    }
}

/// With fallback agents, a table of the agents that ran: iterations, cost, last rate limit.
fn agents(html: &mut String, run: &RunRecord) {
    if run.agents.is_empty() {
        return;
    }
    html.push_str(
        "<h2>Agents</h2><table id=\"agents\"><tr><th>agent</th><th>iterations</th>\
         <th>cost</th><th>rate-limited until</th></tr>",
    );
    for agent in &run.agents {
        let _ = write!(
            html,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&agent.agent),
            agent.iterations,
            agent
                .cost_usd
                .map(|c| format!("${c:.2}"))
                .unwrap_or_default(),
            agent
                .limited_until
                .as_deref()
                .map(escape)
                .unwrap_or_default(),
        );
    }
    html.push_str("</table>\n");
}

/// What each iteration added to the run's cost (`None` where its agent reported none): the
/// step in the run's cost, which counts an agent session that goes on over several iterations
/// once, where the agent reports that session's running total.
fn own_costs(run: &RunRecord) -> Vec<Option<f64>> {
    let mut before = 0.0;
    run.iterations
        .iter()
        .map(|it| {
            let after = it.run_cost_usd.filter(|_| it.cost_usd.is_some())?;
            Some(after - std::mem::replace(&mut before, after))
        })
        .collect()
}

/// One bar per iteration and a line for the running total, scaled to the largest bar and to the
/// total. Bars get a tooltip while they are wide enough to point at.
fn chart(html: &mut String, id: &str, run: &RunRecord, values: &[f64], show: fn(f64) -> String) {
    let n = values.len().max(1) as f64;
    let max_bar = values.iter().copied().fold(0.0, f64::max).max(f64::EPSILON);
    let total = values.iter().sum::<f64>().max(f64::EPSILON);
    let (h, w) = (80.0, WIDTH / n);
    let _ = write!(
        html,
        "<svg id=\"{id}\" viewBox=\"0 -4 {WIDTH} {}\">",
        h + 8.0
    );
    let tooltips = values.len() <= 200;
    let mut points = String::new();
    let mut cumulative = 0.0;
    for (i, (it, value)) in run.iterations.iter().zip(values).enumerate() {
        let bh = value / max_bar * h;
        let _ = write!(
            html,
            "<rect class=\"cost\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\">",
            i as f64 * w,
            h - bh,
            (w * 0.8).max(0.3),
        );
        if tooltips {
            let _ = write!(
                html,
                "<title>iteration {}: {}</title>",
                it.iteration,
                show(*value)
            );
        }
        html.push_str("</rect>");
        cumulative += value;
        let _ = write!(
            points,
            "{:.1},{:.1} ",
            (i as f64 + 0.5) * w,
            h - cumulative / total * h
        );
    }
    let _ = writeln!(
        html,
        "<polyline class=\"cum\" points=\"{}\"><title>in all: {}</title></polyline></svg>",
        points.trim_end(),
        show(cumulative),
    );
}

fn checks(html: &mut String, run: &RunRecord, stories: &RunStories, words: TaskWords) {
    if run.attempts.is_empty() && stories.trips.is_empty() {
        return;
    }
    if !run.attempts.is_empty() {
        html.push_str("<h2>done_when checks</h2><table><tr><th>iteration</th><th>attempt</th>");
        let commands: Vec<&str> = run.attempts[0]
            .checks
            .iter()
            .map(|c| c.command.as_str())
            .collect();
        for c in &commands {
            let _ = write!(html, "<th><code>{}</code></th>", escape(c));
        }
        html.push_str("<th>verdict</th></tr>\n");
        let shown = run
            .attempts
            .iter()
            .flat_map(|a| &a.checks)
            .filter(|c| !c.last_lines.is_empty())
            .count();
        let each = (CHECK_BUDGET / shown.max(1)).min(TAIL_MAX);
        for a in &run.attempts {
            let _ = write!(html, "<tr><td>{}</td><td>{}</td>", a.iteration, a.attempt);
            for c in &a.checks {
                let (cls, mark) = if c.passed {
                    ("pass", "✓ pass")
                } else {
                    ("fail", "✗ fail")
                };
                let _ = write!(
                    html,
                    "<td class=\"{cls}\" title=\"{}\">{mark}",
                    escape(&c.command)
                );
                // Why it failed: its last lines of output.
                let lines = fit(&escape(&(c.last_lines.join("\n") + "\n")), each);
                if !lines.trim().is_empty() {
                    let _ = write!(
                        html,
                        "<details><summary>output</summary><pre>{lines}</pre></details>"
                    );
                }
                html.push_str("</td>");
            }
            let _ = writeln!(
                html,
                "<td class=\"{}\">{}</td></tr>",
                if a.ok { "pass" } else { "fail" },
                if a.ok { "converged" } else { "not yet" }
            );
        }
        html.push_str("</table>\n");
    }
    if !stories.trips.is_empty() {
        let _ = writeln!(
            html,
            "<h2>Circuit breaker</h2><table><tr><th>after iteration</th><th>{}</th>\
             <th>reason</th><th>count</th></tr>",
            words.one
        );
        for t in &stories.trips {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                t.iteration,
                escape(t.story_id.as_deref().unwrap_or("-")),
                escape(&t.reason),
                t.count
            );
        }
        html.push_str("</table>\n");
    }
}

fn exit_text(it: &IterationRecord) -> String {
    match (it.exit_code, it.signal) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => format!("signal {s}"),
        _ => "-".to_owned(),
    }
}

/// `tails` are escaped already.
fn iterations(
    html: &mut String,
    run: &RunRecord,
    stories: &RunStories,
    tails: &[String],
    words: TaskWords,
) {
    let story_mode = stories.story_mode();
    html.push_str("<h2>Iterations</h2><table id=\"iterations\"><tr><th>#</th>");
    if story_mode {
        let _ = write!(html, "<th>{}</th><th>attempt</th>", words.one);
    }
    html.push_str(
        "<th>outcome</th><th>state</th><th>exit</th><th>duration</th><th>cost</th><th>tokens</th>\
         <th>log tail</th></tr>\n",
    );
    let costs = own_costs(run);
    for (((it, on), tail), cost) in run
        .iterations
        .iter()
        .zip(&stories.iterations)
        .zip(tails)
        .zip(costs)
    {
        let (o, label) = (it.outcome.as_str(), it.outcome.label());
        let _ = write!(html, "<tr><td>{}</td>", it.iteration);
        if story_mode {
            let _ = write!(
                html,
                "<td>{}</td><td>{}</td>",
                escape(on.story_id.as_deref().unwrap_or("-")),
                on.attempt.map_or("-".to_owned(), |a| a.to_string())
            );
        }
        // An agent that retried on its own says so beside the outcome: a run of retries
        // without end reads as such, not as a quiet failure with no tokens.
        let retried = match (&it.last_retry, it.agent_retries) {
            (Some(last), n) => format!(
                " <span class=\"retries\">agent retrying ↻ {n} {}, last: {}</span>",
                if n == 1 { "retry" } else { "retries" },
                escape(last)
            ),
            (None, _) => String::new(),
        };
        let denied = match it.sandbox_denied.as_slice() {
            [] => String::new(),
            hosts => format!(
                " <span class=\"denied\">sandbox denied {}</span>",
                escape(&hosts.join(", "))
            ),
        };
        let _ = write!(
            html,
            "<td><b class=\"badge {o}\">{label}</b>{retried}{denied}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>",
            escape(it.state.as_deref().unwrap_or("-")),
            escape(&exit_text(it)),
            dur(it.duration_ms),
            cost.map_or("-".to_owned(), |c| format!("${c:.2}")),
            it.tokens.map_or("-".to_owned(), |t| t.to_string()),
        );
        if !tail.trim().is_empty() {
            let name = it
                .log_file
                .as_deref()
                .and_then(|f| f.rsplit('/').next())
                .unwrap_or("log");
            let _ = write!(
                html,
                "<details><summary>{}</summary><pre>{tail}</pre></details>",
                escape(name),
            );
        }
        html.push_str("</td></tr>\n");
    }
    html.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_events::run_folder::parse_events;

    #[test]
    fn everything_from_events_and_logs_is_escaped() {
        let text = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED"}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1,"story_id":"<script>x</script>"}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","state":"<b>"}
{"ts":"2026-01-01T00:00:01.000Z","run_id":"r","type":"WAIT_STARTED","iteration":1,"reason":"\"><img src=x>","delay_ms":5}
"#;
        let mut run = RunRecord::from_events("r<&>", &parse_events(text.as_bytes()), None);
        let stories = RunStories::read(&mut run);
        let html = render(
            &run,
            &stories,
            &[escape("</pre><script>alert(1)</script>")],
            TaskWords::STORY,
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>\"") && html.contains("&lt;b&gt;"));
        assert!(html.contains("ralph run r&lt;&amp;&gt;"));
    }

    /// Story mode as the report draws it: lanes, attempts (from `ITERATION_STARTED` or the
    /// `STORY_STARTED` before it), passes, blocks and trips, next to another source's event.
    #[test]
    fn a_story_run_reports_its_lanes_passes_blocks_and_trips() {
        let text = r#"{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"RUN_STARTED","max_iterations":5}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"STORY_STARTED","story_id":"US-1","title":"a","attempt":1,"max_attempts":3}
{"ts":"2026-01-01T00:00:00.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":1,"story_id":"US-1","attempt":1}
{"ts":"2026-01-01T00:00:10.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","failed":false,"usage":{"cost_usd":0.25,"input_tokens":100,"output_tokens":20}}
{"ts":"2026-01-01T00:00:12.000Z","run_id":"r","type":"ATTEMPT_ENDED","attempt":1,"max_attempts":3,"iteration":1,"ok":false,"results":[{"command":"cargo test","exit_code":101,"timed_out":false,"tail":"running 2 tests\ntest a ... ok\ntest b ... FAILED <here>\n\n"}]}
{"ts":"2026-01-01T00:00:12.000Z","run_id":"r","type":"CIRCUIT_TRIPPED","story_id":"US-1","reason":"same_error","count":3,"signature":"00ff00ff00ff00ff"}
{"ts":"2026-01-01T00:00:12.000Z","run_id":"r","type":"REVERTED","story_id":"US-1","checkpoint":"abc","saved_ref":"refs/ralph/attempts/US-1/1"}
{"ts":"2026-01-01T00:00:12.000Z","run_id":"r","type":"STORY_BLOCKED","story_id":"US-1","reason":"same error 3 times"}
{"ts":"2026-01-01T00:00:12.000Z","run_id":"r","type":"WAIT_STARTED","iteration":1,"reason":"delay","delay_ms":2000}
{"ts":"2026-01-01T00:00:14.000Z","run_id":"r","type":"STORY_STARTED","story_id":"US-2","title":"b","attempt":1,"max_attempts":3}
{"ts":"2026-01-01T00:00:14.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":2}
{"ts":"2026-01-01T00:00:20.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":2,"exit_code":0,"termination":"natural","failed":false}
{"ts":"2026-01-01T00:00:20.000Z","run_id":"r","type":"STORY_PASSED","story_id":"US-2","attempts":1,"checkpoint":null}
{"ts":"2026-01-01T00:00:20.000Z","run_id":"r","type":"ISSUE_CLOSED","number":7}
{"ts":"2026-01-01T00:00:21.000Z","run_id":"r","type":"STORY_STARTED","story_id":"US-3","title":"c","attempt":2,"max_attempts":3}
{"ts":"2026-01-01T00:00:21.000Z","run_id":"r","type":"ITERATION_STARTED","iteration":3,"story_id":"US-3"}
{"ts":"2026-01-01T00:00:30.000Z","run_id":"r","type":"ITERATION_ENDED","iteration":3,"exit_code":1,"termination":"natural","failed":true}
{"ts":"2026-01-01T00:00:30.000Z","run_id":"r","type":"ITERATION_FAILED","iteration":3,"consecutive_failures":1,"failure":"exit 1","next_delay_ms":null}
{"ts":"2026-01-01T00:00:30.000Z","run_id":"r","type":"STORY_PASSED","story_id":"US-3","attempts":2,"checkpoint":null}
{"ts":"2026-01-01T00:00:30.000Z","run_id":"r","type":"CIRCUIT_TRIPPED","story_id":null,"reason":"blocked","count":1,"signature":null}
{"ts":"2026-01-01T00:00:31.000Z","run_id":"r","type":"RUN_ENDED","reason":"stories_blocked","iterations":3,"exit_code":1,"stories":{"passed":2,"blocked":1,"remaining":0}}
"#;
        let mut run = RunRecord::from_events("r", &parse_events(text.as_bytes()), None);
        let stories = RunStories::read(&mut run);
        let tails = ["one\n".to_owned(), String::new(), "three\n".to_owned()];
        insta::assert_snapshot!(render(&run, &stories, &tails, TaskWords::STORY));
    }

    #[test]
    fn a_tail_keeps_the_last_whole_lines_that_fit() {
        assert_eq!(fit("one\ntwo &amp;\nthree\n", 12), "three\n");
        assert_eq!(fit("short\n", 12), "short\n");
        assert_eq!(fit("no newline at all", 5), "");
    }

    #[test]
    fn ansi_sequences_are_removed_from_tails() {
        assert_eq!(
            log_text("\x1b[1;32mok\x1b[0m\r\nnext\rover"),
            "ok\nnext\nover"
        );
        // Window titles and links (OSC) leave nothing, with either terminator.
        assert_eq!(
            log_text("\x1b]0;a title\x07a \x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\"),
            "a link"
        );
    }
}
