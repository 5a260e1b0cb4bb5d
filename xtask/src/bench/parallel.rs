//! `ralph run --parallel 32`: what ralph itself costs while 32 agents work, and how long 32
//! worktrees take to start.

use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::harness::{self, Ctx, Result};
use super::table::Row;

const LANES: usize = 32;
/// How long each agent sleeps.
const AGENT_SECS: u64 = 30;
/// How long ralph's CPU is measured while every agent sleeps.
const WINDOW: Duration = Duration::from_secs(20);

const START: &str = "`--parallel 32`: from `PARALLEL_STARTED` to the 32nd `LANE_STARTED` \
                     (32 worktrees and branches made, 32 loops started)";
const START_TARGET: &str = "< 3 s";
const CPU: &str = "`--parallel 32`: ralph's CPU while 32 agents sleep (20 s window)";
const CPU_TARGET: &str = "< 1% of one core";
const RSS: &str = "`--parallel 32`: ralph's peak RSS over the whole run (32 landings included)";
const RSS_TARGET: &str = "< 64 MiB";
const LANDING: &str = "`--parallel 32`: landing 32 tasks through the merge queue (merge, \
                       check, landing commit, fast-forward), first `MERGE_STARTED` to last \
                       `TASK_LANDED`";

/// What one run showed.
struct Measured {
    start: Duration,
    cpu_percent: f64,
    peak_rss_kib: u64,
    landing: Duration,
}

/// Runs 32 lanes whose agents sleep 30 s.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    eprintln!("bench: 32 parallel loops (about 45 s)");
    match run(ctx) {
        Ok(m) => vec![
            Row::measured(
                START,
                format!("{:.2} s", m.start.as_secs_f64()),
                "–".to_owned(),
                START_TARGET,
                Some(m.start < Duration::from_secs(3)),
            ),
            Row::measured(
                CPU,
                format!("{:.2}% of one core", m.cpu_percent),
                "–".to_owned(),
                CPU_TARGET,
                Some(m.cpu_percent < 1.0),
            ),
            Row::measured(
                RSS,
                format!("{:.1} MiB", m.peak_rss_kib as f64 / 1024.0),
                "–".to_owned(),
                RSS_TARGET,
                Some(m.peak_rss_kib < 64 * 1024),
            ),
            Row::measured(
                LANDING,
                format!("{:.2} s", m.landing.as_secs_f64()),
                "–".to_owned(),
                "–",
                None,
            ),
        ],
        Err(why) => vec![
            Row::skipped(START, START_TARGET, &why),
            Row::skipped(CPU, CPU_TARGET, &why),
            Row::skipped(RSS, RSS_TARGET, &why),
            Row::skipped(LANDING, "–", &why),
        ],
    }
}

/// `/proc/<pid>/stat`'s clock ticks a second (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// The process's user and system time in clock ticks (`/proc/<pid>/stat`), its exited threads
/// included: the queue's git steps run on threads that come and go, which the live threads'
/// `schedstat` would miss.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new("git")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .map_err(|err| format!("cannot run git: {err}"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("git {}: {status}", args.join(" "))),
    }
}

/// A repository of 32 stories whose agent sleeps, then writes its story's file.
fn repository(dir: &Path) -> Result<()> {
    git(dir, &["init", "-q", "-b", "main"])?;
    git(dir, &["config", "user.name", "Bench"])?;
    git(dir, &["config", "user.email", "bench@example.com"])?;
    git(dir, &["config", "commit.gpgsign", "false"])?;
    let stories: Vec<String> = (1..=LANES)
        .map(|i| {
            format!(
                "{{\"id\": \"S-{i:02}\", \"title\": \"story {i}\", \"description\": \"d\", \
                 \"acceptanceCriteria\": [\"ok\"], \"priority\": {i}, \"passes\": false, \
                 \"notes\": \"\"}}"
            )
        })
        .collect();
    harness::write(
        &dir.join("prd.json"),
        &format!("{{\"userStories\": [\n{}\n]}}\n", stories.join(",\n")),
    )?;
    harness::write(
        &dir.join("agent.sh"),
        &format!(
            "story=$(grep -o 'STORY=S-[0-9]*' | cut -d= -f2)\nsleep {AGENT_SECS}\n\
             echo ok > \"$story.txt\"\n"
        ),
    )?;
    harness::write_ralph_md(
        dir,
        "agent: sh agent.sh\ndone_when:\n  - ls S-*.txt\nescalation:\n  prd: prd.json\n",
        "STORY={{ story.id }}\n",
    )?;
    harness::write(&dir.join(".gitignore"), "events.jsonl\n")?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "init"])
}

fn run(ctx: &Ctx) -> Result<Measured> {
    let work = harness::scratch("parallel")?;
    let dir = work.path();
    repository(dir)?;
    let events_path = dir.join("events.jsonl");
    let mut child = Command::new(&ctx.ralph)
        .args(["run", "--parallel", "32", "--quiet", "--events"])
        .arg(&events_path)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| format!("cannot start ralph: {err}"))?;
    let pid = child.id();
    let result = (|| {
        let count = |kind: &str| -> Result<usize> {
            Ok(harness::read_events(&events_path)
                .unwrap_or_default()
                .iter()
                .filter(|e| harness::event_type(e) == kind)
                .count())
        };
        let deadline = Instant::now() + Duration::from_secs(AGENT_SECS);
        while count("LANE_ITERATION_STARTED")? < LANES {
            if Instant::now() > deadline {
                return Err("32 lanes did not start their agents in 30 s".to_owned());
            }
            thread::sleep(Duration::from_millis(50));
        }
        // The agents sleep: what ralph spends now is its own.
        thread::sleep(Duration::from_secs(1));
        let before = cpu_ticks(pid).ok_or("ralph exited")?;
        let from = Instant::now();
        thread::sleep(WINDOW);
        let after = cpu_ticks(pid).ok_or("ralph exited")?;
        let cpu_percent =
            after.saturating_sub(before) as f64 / TICKS_PER_SEC / from.elapsed().as_secs_f64()
                * 100.0;
        let mut peak = 0;
        let deadline = Instant::now() + Duration::from_secs(AGENT_SECS * 3);
        while let Some(kib) = harness::peak_rss_kib(pid) {
            peak = peak.max(kib);
            if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                break;
            }
            if Instant::now() > deadline {
                return Err("the run did not end in 90 s after the window".to_owned());
            }
            thread::sleep(Duration::from_millis(10));
        }
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("ralph run --parallel 32: {status}"));
        }
        let events = harness::read_events(&events_path)?;
        let ts = |kind: &str, last: bool| -> Result<std::time::SystemTime> {
            let mut of = events.iter().filter(|e| harness::event_type(e) == kind);
            let event = match last {
                true => of.next_back(),
                false => of.next(),
            };
            harness::event_ts(event.ok_or(format!("no {kind}"))?)
        };
        let span = |a, b| {
            let (a, b) = (a?, b?);
            std::time::SystemTime::duration_since(&b, a).map_err(|e| e.to_string())
        };
        Ok(Measured {
            start: span(ts("PARALLEL_STARTED", false), ts("LANE_STARTED", true))?,
            cpu_percent,
            peak_rss_kib: peak,
            landing: span(ts("MERGE_STARTED", false), ts("TASK_LANDED", true))?,
        })
    })();
    if result.is_err() {
        harness::abandon(&mut child);
    }
    result
}
