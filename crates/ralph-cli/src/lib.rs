//! `ralph-loop`: the `ralph` command as a library: argument parsing, the subcommands, the
//! renderers, and the one place errors become text. The `ralph` binary is a thin `main` calling
//! [`main`]; `xtask` takes the argument definition ([`Cli`]) from here for the man pages, so the
//! pages and `ralph --help` cannot differ. The loop itself lives in the library crates: this
//! crate wires them to a terminal and must never hold a rule of the loop of its own. Its public
//! surface is those two items, nothing else: it is not a plug-in API.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod auto_split;
mod check;
mod cli;
mod dry_run;
mod error;
mod forge;
mod init;
mod interrupts;
mod logs_cmd;
mod notify_cmd;
mod parallel;
mod plan_cmd;
mod pull_requests;
mod ralph_file;
mod render;
mod report;
mod resume;
mod run;
mod runs;
mod sandbox_cmd;
mod start_wait;
mod status;
mod status_line;
mod tasks_cmd;
mod terminal;
mod watch;

use std::process::ExitCode;

pub use crate::cli::Cli;
use crate::cli::Command;
use crate::error::CliError;

/// Keeps memory the loop frees for its next iteration: each iteration allocates and frees a few
/// 64 KiB buffers (its log's, its children's pipes'), which the C library would otherwise hand
/// back to the system at once and fault in again, page by page, an iteration later (2,800 page
/// faults in `ralph run -n 200`, 390 with this). The heap then stays at its high-water mark, a
/// few hundred KiB for a loop.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the C library's allocator, before any thread
    // starts.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Runs `ralph` with the process's arguments, to its exit code: all the binary's `main` does.
/// It sets process-wide state (the allocator's tunables, the log subscriber): call it once,
/// from `main`.
pub fn main() -> ExitCode {
    keep_freed_memory();
    let cli = Cli::parse_with_user_args();
    init_tracing();
    let result = match cli.command {
        Command::Check(args) => check(&args.path),
        Command::Run(args) => run::run(args),
        Command::Init(args) => init(&args),
        Command::Status(args) => status::status(&args),
        Command::Watch(args) => watch::watch(&args),
        Command::Tasks(args) => tasks_cmd::tasks(&args.path, args.json),
        Command::Notify(args) => notify_cmd::test(&args.path),
        Command::Plan(args) => plan_cmd::plan(&args),
        Command::Completions(args) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Into memory first: clap_complete panics on a write error.
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut command, "ralph", &mut script);
            print_out(&script).map(|()| 0)
        }
        Command::Runs(args) => runs::runs(&args.path, args.log_dir.as_deref(), args.json),
        Command::Logs(args) => logs_cmd::logs(
            &args.dir,
            args.log_dir.as_deref(),
            args.run_id.as_deref(),
            args.iteration,
            args.follow,
        ),
        Command::Report(args) => report::write(
            &args.dir,
            args.log_dir.as_deref(),
            args.run_id.as_deref(),
            args.output.as_deref(),
        ),
    };
    match result {
        Ok(code) => exit(code),
        Err(err) => {
            report(&err);
            exit(err.exit_code())
        }
    }
}

fn check(path: &std::path::Path) -> Result<i32, CliError> {
    let loaded = ralph_file::load(path)?;
    let shown = ralph_file::display_path(&loaded.path);
    let text = std::fs::read_to_string(&loaded.path).unwrap_or_default();
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut warnings = loaded.parsed.warnings.clone();
    warnings.extend(ralph_escalation::preflight::warnings(
        &shown,
        &text,
        &loaded.parsed.file,
        &cwd,
    ));
    warnings.sort_by_key(|w| (w.line, w.column));
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    // Checked from where `ralph run` runs, so paths read as it would say them.
    let here = std::path::Path::new(".");
    let refusals = ralph_escalation::preflight::refusals(
        &shown,
        &text,
        &loaded.parsed.file,
        here,
        ralph_file::task_list(&loaded.parsed.file, here)?,
    );
    for refusal in &refusals {
        eprintln!("error: {refusal}");
    }
    let verdict = match refusals.is_empty() {
        true => "ok",
        false => "valid, but `ralph run` would refuse to start",
    };
    let mut summary = check::summary(&shown, verdict, &loaded.parsed.file);
    // The policy as this machine would enforce it; one it cannot is refused by `ralph run`.
    let refused_sandbox = match sandbox_cmd::policy_lines(&loaded.parsed.file.config, here) {
        Ok(lines) => {
            let mut label = "sandbox";
            for line in lines {
                summary.push_str(&format!("  {label:<15} {line}\n"));
                label = "";
            }
            false
        }
        Err(err) => {
            eprintln!("error: {err}");
            true
        }
    };
    if let Some(mut list) = ralph_file::task_list(&loaded.parsed.file, here)? {
        // A list that cannot be read is a refusal above already.
        if let Ok(tasks) = list.load() {
            summary.push_str(&tasks_cmd::run_order_lines(list.as_ref(), &tasks));
        }
    }
    print_out(summary.as_bytes())?;
    Ok(i32::from(!refusals.is_empty() || refused_sandbox))
}

fn init(args: &cli::InitArgs) -> Result<i32, CliError> {
    let mut text = String::new();
    for path in init::init(args)? {
        text.push_str(&format!("wrote {}\n", ralph_file::display_path(&path)));
    }
    let dir = ralph_file::display_path(&args.dir);
    text.push_str(&format!(
        "next: edit RALPH.md, then `ralph check {dir}` and `ralph run {dir}`\n"
    ));
    print_out(text.as_bytes())?;
    Ok(0)
}

/// Writes `bytes` to stdout. A reader that went away (`ralph check | head -1`) is not an
/// error: what it did not read it did not want, so ralph ends as usual, as `cat` or `ls` would
/// under a shell that ignores SIGPIPE.
pub(crate) fn print_out(bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(err)),
        _ => Ok(()),
    }
}

/// The one place errors become text. Written with `writeln!`, not `eprintln!`, which panics
/// when stderr is closed.
fn report(err: &CliError) {
    use std::io::Write as _;
    let mut stderr = std::io::stderr().lock();
    let _ = match err {
        CliError::Config(errors) => {
            for e in &errors.errors {
                let _ = writeln!(stderr, "error: {e}");
            }
            let n = errors.errors.len();
            writeln!(
                stderr,
                "ralph: {} has {n} error{}",
                errors.file,
                if n == 1 { "" } else { "s" }
            )
        }
        other => writeln!(stderr, "ralph: {other}"),
    };
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(ralph_events::exit::FAILURE as u8))
}

/// Warnings from the libraries go to stderr; `RALPH_LOG` sets the filter (e.g. `debug`).
fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("RALPH_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(Plain)
        .init();
}

/// `warning: MESSAGE`, the way `ralph check` prints its warnings: no colour codes (stderr is
/// often a log file), no timestamps, no module paths.
struct Plain;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        write!(writer, "{level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
