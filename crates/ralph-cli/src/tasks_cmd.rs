//! `ralph tasks [--json]`: the task list a RALPH.md names, in the order a run takes it.

use std::fmt::Write as _;
use std::path::Path;

use ralph_escalation::EscalationError;
use ralph_tasks::{ListedTask, TaskList, TaskState};
use serde_json::json;

use crate::error::CliError;
use crate::ralph_file;
use crate::render::inert;

/// The version of `ralph tasks --json`'s shape.
const TASKS_JSON_VERSION: u64 = 1;

/// Prints the tasks of the file at `path`; exit 0, or 2 when it names no task list.
pub(crate) fn tasks(path: &Path, json: bool) -> Result<i32, CliError> {
    let loaded = ralph_file::load(path)?;
    let here = Path::new(".");
    let Some(mut list) = ralph_file::task_list(&loaded.parsed.file, here)? else {
        return Err(CliError::Usage(format!(
            "{}: no task list; name one with `tasks: {{markdown: TODO.md}}` (or prd, github, \
             gitlab) \
             or `escalation.prd`",
            ralph_file::display_path(&loaded.path)
        )));
    };
    let listed = list.load().map_err(EscalationError::from)?;
    let text = match json {
        true => {
            let mut out =
                serde_json::to_string_pretty(&as_json(list.as_ref(), &listed)).unwrap_or_default();
            out.push('\n');
            out
        }
        false => table(&listed),
    };
    crate::print_out(text.as_bytes())?;
    Ok(0)
}

/// Every task: those a run would take, in its order, then the rest in the list's order.
fn in_order(listed: &[ListedTask]) -> Vec<(Option<usize>, &ListedTask)> {
    let order = ralph_tasks::run_order(listed);
    let mut rows: Vec<(Option<usize>, &ListedTask)> = order
        .iter()
        .enumerate()
        .map(|(i, t)| (Some(i + 1), *t))
        .collect();
    rows.extend(
        listed
            .iter()
            .filter(|t| !order.iter().any(|o| o.id == t.id))
            .map(|t| (None, t)),
    );
    rows
}

/// `ralph tasks --json`.
fn as_json(list: &dyn TaskList, listed: &[ListedTask]) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = in_order(listed)
        .into_iter()
        .map(|(order, t)| {
            json!({
                "id": t.id,
                "title": t.title,
                "state": t.state.as_str(),
                "order": order,
                "priority": t.priority,
                "depends_on": t.depends_on,
            })
        })
        .collect();
    json!({
        "version": TASKS_JSON_VERSION,
        "source": list.kind(),
        "location": list.location(),
        "tasks": rows,
    })
}

/// The table `ralph tasks` prints.
pub(crate) fn table(listed: &[ListedTask]) -> String {
    let mut out = String::new();
    for (order, t) in in_order(listed) {
        let _ = writeln!(out, "{}", row(order, t));
    }
    if listed.is_empty() {
        out.push_str("no tasks\n");
    }
    out
}

fn row(order: Option<usize>, t: &ListedTask) -> String {
    let order = order.map_or_else(|| "-".to_owned(), |n| n.to_string());
    let state = match (t.state, order.as_str()) {
        (TaskState::Pending, "-") => "waiting (dependencies)",
        (state, _) => state.as_str(),
    };
    let deps = match t.depends_on.is_empty() {
        true => String::new(),
        false => format!(" (after {})", t.depends_on.join(", ")),
    };
    format!(
        "{order:>3}  {state:<8}  {}  {}{deps}",
        inert(&t.id),
        inert(&t.title)
    )
}

/// `ralph check`'s lines: the tasks a run would work on, in order.
pub(crate) fn run_order_lines(list: &dyn TaskList, listed: &[ListedTask]) -> String {
    let order = ralph_tasks::run_order(listed);
    let (passed, blocked, pending) = ralph_tasks::counts(listed);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  {:<15} {} {} · {pending} to do, {passed} done, {blocked} blocked",
        "tasks",
        list.kind(),
        list.location()
    );
    for (i, t) in order.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {:<15} {}. {}  {}",
            "",
            i + 1,
            inert(&t.id),
            inert(&t.title)
        );
    }
    out
}
