//! Drawing `ralph watch`: a pure function of what is known ([`Screen`]) onto a ratatui frame,
//! so every layout is pinned by a snapshot on ratatui's `TestBackend`.

use std::time::{Duration, SystemTime};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table, Wrap};

use super::model::{LaneState, WatchModel};

/// Everything one frame shows.
pub(crate) enum Screen<'a> {
    /// No run to show yet: waiting for one to start in `folder`.
    Waiting {
        /// The loop's folder, as given.
        folder: &'a str,
        /// The folder's last run, ended or stopped, in words, when there is one.
        last: Option<&'a str>,
    },
    /// A run.
    Run(RunScreen<'a>),
}

/// A run's frame.
pub(crate) struct RunScreen<'a> {
    /// The run, from its events.
    pub(crate) model: &'a WatchModel,
    /// The selected loop (an index into `model.lanes`).
    pub(crate) selected: usize,
    /// The last lines of the selected loop's current log, ready to show.
    pub(crate) log: &'a [String],
    /// Whether the run's process is alive; a run neither alive nor ended was stopped (killed).
    pub(crate) alive: bool,
    /// The time elapsed times are counted to.
    pub(crate) now: SystemTime,
}

/// Draws `screen` on the whole frame.
pub(crate) fn draw(frame: &mut Frame<'_>, screen: &Screen<'_>) {
    match screen {
        Screen::Waiting { folder, last } => draw_waiting(frame, folder, *last),
        Screen::Run(run) => draw_run(frame, run),
    }
}

fn draw_waiting(frame: &mut Frame<'_>, folder: &str, last: Option<&str>) {
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(
        Line::from(format!(" ralph watch · waiting for a run in {folder}"))
            .style(Style::new().add_modifier(Modifier::BOLD)),
        header,
    );
    let mut lines = vec![
        Line::from(""),
        Line::from(" No run is going on here. The run shows here as soon as `ralph run` starts"),
        Line::from(" in this folder."),
    ];
    if let Some(last) = last {
        lines.push(Line::from(""));
        lines.push(Line::from(format!(" The last run: {last}")));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(keys(" q quit"), footer);
}

fn draw_run(frame: &mut Frame<'_>, run: &RunScreen<'_>) {
    let model = run.model;
    let rows = u16::try_from(model.lanes.len().max(1)).unwrap_or(u16::MAX);
    let queue_rows = match model.parallel {
        true => u16::try_from(model.queue.len().max(1)).unwrap_or(u16::MAX),
        false => 0,
    };
    let [header, lanes, queue, log, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(rows.saturating_add(3)),
        Constraint::Length(match queue_rows {
            0 => 0,
            n => n.saturating_add(2),
        }),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());

    frame.render_widget(
        Line::from(header_text(run)).style(Style::new().add_modifier(Modifier::BOLD)),
        header,
    );
    draw_lanes(frame, run, lanes);
    if model.parallel {
        let lines: Vec<Line<'_>> = match model.queue.is_empty() {
            true => vec![Line::from("(empty)")],
            false => model
                .queue
                .iter()
                .enumerate()
                .map(|(i, q)| Line::from(format!("{}. {}  {}", i + 1, q.task, q.step)))
                .collect(),
        };
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(" merge queue ")),
            queue,
        );
    }
    draw_log(frame, run, log);
    let words = match (model.end.is_some(), run.alive) {
        (false, true) => " ↑/↓ or j/k select a loop · q quit (the run goes on)",
        _ => " ↑/↓ or j/k select a loop · q quit",
    };
    frame.render_widget(keys(words), footer);
}

fn header_text(run: &RunScreen<'_>) -> String {
    let model = run.model;
    let status = match (&model.end, run.alive) {
        (Some(end), _) => match end.exit_code {
            Some(code) => format!("ended: {}, exit {code}", end.reason),
            None => format!("ended: {}", end.reason),
        },
        (None, true) => "running".to_owned(),
        (None, false) => {
            "stopped without an end (killed?): `ralph run --resume` goes on with it".to_owned()
        }
    };
    let until = model.end.as_ref().and_then(|e| e.at).unwrap_or(run.now);
    format!(
        " ralph watch · run {} · {status} · {} · {}",
        model.run_id,
        elapsed(model.started, until),
        cost(model.cost_usd())
    )
}

fn draw_lanes(frame: &mut Frame<'_>, run: &RunScreen<'_>, area: Rect) {
    let model = run.model;
    let rows: Vec<Row<'_>> = match model.lanes.is_empty() {
        true => vec![Row::new(["", "(starting)"])],
        false => model
            .lanes
            .iter()
            .enumerate()
            .map(|(i, lane)| {
                let selected = i == run.selected;
                let state = match (&lane.state, model.end.is_some() || run.alive) {
                    (LaneState::Ended(reason), _) => reason.clone(),
                    (_, false) => "stopped".to_owned(),
                    (LaneState::Starting, _) => "starting".to_owned(),
                    (LaneState::Working, _) => "working".to_owned(),
                    (LaneState::Waiting(reason), _) => format!("waiting ({reason})"),
                    (LaneState::Between(None), _) => "iteration ended".to_owned(),
                    (LaneState::Between(Some(state)), _) => format!("iteration ended ({state})"),
                    (LaneState::Merging, _) => queue_step(model, &lane.name),
                    (LaneState::SentBack(why), _) => format!("sent back: {why}"),
                    (LaneState::Asking { question, at }, _) => {
                        format!("asks \"{question}\": answer in {at}")
                    }
                };
                let state = match &lane.pull_request {
                    Some(pr) => format!("{state} · {}", pr.words()),
                    None => state,
                };
                let until = lane.ended.unwrap_or(run.now);
                let row = Row::new([
                    if selected { "›" } else { " " }.to_owned(),
                    short_name(&lane.name),
                    lane.task.clone().unwrap_or_default(),
                    lane.iteration.to_string(),
                    state,
                    elapsed(lane.started, until),
                    cost(lane.cost_usd()),
                ]);
                match selected {
                    true => row.style(Style::new().add_modifier(Modifier::REVERSED)),
                    false => row,
                }
            })
            .collect(),
    };
    let widths = [
        Constraint::Length(1),
        Constraint::Length(u16::try_from(NAME_WIDTH).unwrap_or(u16::MAX)),
        Constraint::Min(8),
        Constraint::Length(4),
        Constraint::Min(16),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    let table = Table::new(rows, widths)
        .header(
            Row::new(["", "loop", "task", "iter", "state", "time", "cost"])
                .style(Style::new().add_modifier(Modifier::BOLD)),
        )
        .block(Block::bordered().title(" loops "));
    frame.render_widget(table, area);
}

/// Where task `name` stands in the merge queue, in the loops table: `queued (2nd)`,
/// `merging + checks`, `waiting on you` (a person's changes hold its landing).
fn queue_step(model: &WatchModel, name: &str) -> String {
    let Some(at) = model.queue.iter().position(|q| q.task == name) else {
        return "merging".to_owned();
    };
    match model.queue[at].step.as_str() {
        "queued" => format!("queued ({})", ordinal(at + 1)),
        "merging" => "merging + checks".to_owned(),
        // The queue's box names the files.
        _ => "waiting on you".to_owned(),
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The longest loop name shown whole in the loops table.
const NAME_WIDTH: usize = 14;

/// A loop's name as the loops table shows it: a long task id (a checklist's is its title as a
/// slug, then 8 hex digits) keeps its start and its end, which tells tasks apart; the title
/// is in the next column.
fn short_name(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= NAME_WIDTH {
        return name.to_owned();
    }
    let head: String = chars[..NAME_WIDTH - 9].iter().collect();
    let tail: String = chars[chars.len() - 8..].iter().collect();
    format!("{head}…{tail}")
}

fn draw_log(frame: &mut Frame<'_>, run: &RunScreen<'_>, area: Rect) {
    let lane = run.model.lanes.get(run.selected);
    let title = match lane.and_then(|l| l.log_file().map(|f| (l, f))) {
        Some((lane, file)) => format!(" {}: {} ", short_name(&lane.name), file.display()),
        None => " log ".to_owned(),
    };
    let height = usize::from(area.height.saturating_sub(2));
    let shown = &run.log[run.log.len().saturating_sub(height)..];
    let lines: Vec<Line<'_>> = shown.iter().map(|l| Line::from(l.as_str())).collect();
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(title)),
        area,
    );
}

fn keys(words: &str) -> Line<'_> {
    Line::from(words).style(Style::new().add_modifier(Modifier::REVERSED))
}

/// `01:02:03` from `from` to `to`; `--:--:--` without a start.
fn elapsed(from: Option<SystemTime>, to: SystemTime) -> String {
    let Some(from) = from else {
        return "--:--:--".to_owned();
    };
    let secs = to.duration_since(from).unwrap_or(Duration::ZERO).as_secs();
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

fn cost(usd: Option<f64>) -> String {
    usd.map_or_else(|| "-".to_owned(), |c| format!("${c:.2}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::model::{LaneState, WatchModel};
    use ralph_events::Event;
    use ralph_events::parallel::ParallelEvent;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn events(lines: &str) -> Vec<Event> {
        ralph_events::run_folder::parse_events(lines.as_bytes())
    }

    fn parallel_events(lines: &str) -> Vec<ParallelEvent> {
        ralph_events::parallel::parse_events(lines.as_bytes())
    }

    fn at(secs: u64) -> SystemTime {
        humantime::parse_rfc3339("2026-01-01T00:00:00Z").unwrap() + Duration::from_secs(secs)
    }

    fn render(screen: &Screen<'_>) -> String {
        let mut terminal = Terminal::new(TestBackend::new(80, 18)).unwrap();
        terminal.draw(|frame| draw(frame, screen)).unwrap();
        terminal.backend().to_string()
    }

    const SINGLE: &str = r#"{"ts":"2026-01-01T00:00:00Z","run_id":"r1","type":"RUN_STARTED","max_iterations":5}
{"ts":"2026-01-01T00:00:00Z","run_id":"r1","type":"ITERATION_STARTED","iteration":1,"story_id":"US-001","attempt":1}
{"ts":"2026-01-01T00:00:20Z","run_id":"r1","type":"ITERATION_ENDED","iteration":1,"exit_code":0,"termination":"natural","usage":{"cost_usd":0.25}}
{"ts":"2026-01-01T00:00:20Z","run_id":"r1","type":"WAIT_STARTED","iteration":1,"reason":"failure","delay_ms":10}
{"ts":"2026-01-01T00:00:21Z","run_id":"r1","type":"ITERATION_STARTED","iteration":2,"story_id":"US-001","attempt":2}
"#;

    fn log() -> Vec<String> {
        (1..=20).map(|i| format!("agent line {i}")).collect()
    }

    #[test]
    fn a_single_run_shows_its_loop_its_live_log_and_the_keys() {
        let model = WatchModel::from_events("r1", &events(SINGLE));
        let log = log();
        insta::assert_snapshot!(render(&Screen::Run(RunScreen {
            model: &model,
            selected: 0,
            log: &log,
            alive: true,
            now: at(83),
        })));
    }

    #[test]
    fn a_run_that_ended_shows_its_end() {
        let ended = format!(
            "{SINGLE}{}\n",
            r#"{"ts":"2026-01-01T00:01:00Z","run_id":"r1","type":"RUN_ENDED","reason":"all_done","exit_code":0,"iterations":2,"cost_usd":0.5}"#
        );
        let model = WatchModel::from_events("r1", &events(&ended));
        insta::assert_snapshot!(render(&Screen::Run(RunScreen {
            model: &model,
            selected: 0,
            log: &["done".to_owned()],
            alive: false,
            now: at(600),
        })));
    }

    #[test]
    fn a_run_whose_process_is_gone_without_an_end_says_it_stopped() {
        let model = WatchModel::from_events("r1", &events(SINGLE));
        let screen = render(&Screen::Run(RunScreen {
            model: &model,
            selected: 0,
            log: &[],
            alive: false,
            now: at(30),
        }));
        assert!(screen.contains("stopped without an end"), "{screen}");
        assert!(screen.contains("stopped "), "{screen}");
    }

    #[test]
    fn a_parallel_run_has_a_row_per_task_and_the_merge_queue() {
        let lines = r#"{"ts":"2026-01-01T00:00:00Z","run_id":"old","type":"PARALLEL_STARTED","base":"main","parallel":2,"tasks":["US-009"],"resumed":false}
{"ts":"2026-01-01T00:00:00Z","run_id":"old","type":"LANE_STARTED","task_id":"US-009","title":"Another run's","log_dir":"x","lane_run_id":"x","returns":0}
{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"PARALLEL_STARTED","base":"main","parallel":3,"tasks":["US-001","US-002","US-003","US-004"],"resumed":false}
{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"LANE_STARTED","task_id":"US-001","title":"Cart","log_dir":".ralph/runs/l1","lane_run_id":"l1","returns":0}
{"ts":"2026-01-01T00:00:01Z","run_id":"p","type":"LANE_STARTED","task_id":"US-002","title":"Checkout","log_dir":".ralph/runs/l2","lane_run_id":"l2","returns":0}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"LANE_STARTED","task_id":"US-003","title":"Search","log_dir":".ralph/runs/l3","lane_run_id":"l3","returns":0}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"LANE_ITERATION_STARTED","task_id":"US-001","iteration":1}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"LANE_ITERATION_STARTED","task_id":"US-002","iteration":1}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"LANE_ITERATION_STARTED","task_id":"US-003","iteration":1}
{"ts":"2026-01-01T00:00:30Z","run_id":"p","type":"LANE_ITERATION_ENDED","task_id":"US-001","iteration":1,"state":null,"failed":false,"cost_usd":1.5}
{"ts":"2026-01-01T00:00:30Z","run_id":"p","type":"LANE_ENDED","task_id":"US-001","reason":"stories_done","iterations":1,"cost_usd":1.5}
{"ts":"2026-01-01T00:00:30Z","run_id":"p","type":"MERGE_QUEUED","task_id":"US-001","position":1}
{"ts":"2026-01-01T00:00:31Z","run_id":"p","type":"MERGE_STARTED","task_id":"US-001","base_commit":"a","branch_commit":"b"}
{"ts":"2026-01-01T00:00:40Z","run_id":"p","type":"LANE_ITERATION_ENDED","task_id":"US-002","iteration":1,"state":null,"failed":false,"cost_usd":0.5}
{"ts":"2026-01-01T00:00:40Z","run_id":"p","type":"LANE_ENDED","task_id":"US-002","reason":"stories_done","iterations":1,"cost_usd":0.5}
{"ts":"2026-01-01T00:00:40Z","run_id":"p","type":"MERGE_QUEUED","task_id":"US-002","position":2}
{"ts":"2026-01-01T00:00:41Z","run_id":"p","type":"LANE_ITERATION_ENDED","task_id":"US-003","iteration":1,"state":"idle","failed":false,"cost_usd":0.25}
{"ts":"2026-01-01T00:00:42Z","run_id":"p","type":"LANE_ITERATION_STARTED","task_id":"US-003","iteration":2}
"#;
        let mut model = WatchModel::from_parallel_events("p", &parallel_events(lines));
        let log = log();
        insta::assert_snapshot!(render(&Screen::Run(RunScreen {
            model: &model,
            selected: 2,
            log: &log,
            alive: true,
            now: at(45),
        })));
        // The queue lands one, sends the other back to its loop.
        let more = r#"{"ts":"2026-01-01T00:00:50Z","run_id":"p","type":"TASK_LANDED","task_id":"US-001","commit":"c"}
{"ts":"2026-01-01T00:00:51Z","run_id":"p","type":"MERGE_STARTED","task_id":"US-002","base_commit":"c","branch_commit":"d"}
{"ts":"2026-01-01T00:00:52Z","run_id":"p","type":"MERGE_CONFLICT","task_id":"US-002","files":["a.rs"],"saved_ref":"refs/ralph/attempts/US-002/1"}
"#;
        for event in parallel_events(more) {
            model.apply_parallel(&event);
        }
        assert!(model.queue.is_empty(), "{:?}", model.queue);
        let states: Vec<_> = model.lanes.iter().map(|l| l.state.clone()).collect();
        assert_eq!(
            states[..2],
            [
                LaneState::Ended("landed".to_owned()),
                LaneState::SentBack("a conflict")
            ]
        );
        assert_eq!(model.cost_usd(), Some(2.25));
    }

    /// Checklist tasks' ids are their titles as slugs: at 80 columns each lane is told apart
    /// by the end of its id, its title beside it, and each queue step reads as it is.
    #[test]
    fn checklist_lanes_are_told_apart_at_80_columns_with_their_queue_steps() {
        let lines = r#"{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"PARALLEL_STARTED","base":"main","parallel":3,"tasks":[],"resumed":false}
{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"LANE_STARTED","task_id":"add-the-login-page-for-users-492743ba","title":"Add the login page for users","log_dir":".ralph/runs/l1","lane_run_id":"l1","returns":0}
{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"LANE_STARTED","task_id":"add-the-login-page-for-admins-a42fdb91","title":"Add the login page for admins","log_dir":".ralph/runs/l2","lane_run_id":"l2","returns":0}
{"ts":"2026-01-01T00:00:00Z","run_id":"p","type":"LANE_STARTED","task_id":"add-the-login-page-for-guests-0c1d2e3f","title":"Add the login page for guests","log_dir":".ralph/runs/l3","lane_run_id":"l3","returns":0}
{"ts":"2026-01-01T00:00:01Z","run_id":"p","type":"MERGE_QUEUED","task_id":"add-the-login-page-for-users-492743ba","position":1}
{"ts":"2026-01-01T00:00:01Z","run_id":"p","type":"MERGE_QUEUED","task_id":"add-the-login-page-for-admins-a42fdb91","position":2}
{"ts":"2026-01-01T00:00:01Z","run_id":"p","type":"MERGE_QUEUED","task_id":"add-the-login-page-for-guests-0c1d2e3f","position":3}
{"ts":"2026-01-01T00:00:02Z","run_id":"p","type":"MERGE_STARTED","task_id":"add-the-login-page-for-users-492743ba","base_commit":"a","branch_commit":"b"}
{"ts":"2026-01-01T00:00:03Z","run_id":"p","type":"MERGE_HELD","task_id":"add-the-login-page-for-guests-0c1d2e3f","files":["login.html"]}
"#;
        let model = WatchModel::from_parallel_events("p", &parallel_events(lines));
        let screen = render(&Screen::Run(RunScreen {
            model: &model,
            selected: 0,
            log: &[],
            alive: true,
            now: at(5),
        }));
        for (name, step) in [
            ("add-t…492743ba", "merging + checks"),
            ("add-t…a42fdb91", "queued (2nd)"),
            ("add-t…0c1d2e3f", "waiting on you"),
        ] {
            assert!(
                screen
                    .lines()
                    .any(|l| l.contains(name) && l.contains(step) && l.contains("Add the")),
                "{name} {step}:\n{screen}"
            );
        }
        insta::assert_snapshot!(screen);
    }

    #[test]
    fn names_keep_their_start_and_end_and_ordinals_their_suffix() {
        assert_eq!(short_name("US-001"), "US-001");
        assert_eq!(
            short_name("write-the-signup-form-a42fdb91"),
            "write…a42fdb91"
        );
        let ordinals: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22].map(ordinal).into();
        assert_eq!(
            ordinals,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd"
            ]
        );
    }

    #[test]
    fn no_run_yet_says_what_it_waits_for() {
        insta::assert_snapshot!(render(&Screen::Waiting {
            folder: "shop",
            last: Some("r0, ended: all_done, exit 0"),
        }));
    }
}
