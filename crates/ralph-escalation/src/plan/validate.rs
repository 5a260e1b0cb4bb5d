//! A plan checked before anything is written: ids present and unique (in the plan and against
//! the list), every dependency naming a task, no cycle, a title and acceptance criteria on
//! every task. Every error is found at once, in words the agent can act on.

use std::collections::{BTreeMap, BTreeSet};

use ralph_tasks::ListedTask;

use super::{PlanFormat, PlannedTask};

/// Every reason `tasks` cannot be added to a list holding `existing`; empty when it can.
pub fn check(format: PlanFormat, tasks: &[PlannedTask], existing: &[ListedTask]) -> Vec<String> {
    let mut errors = Vec::new();
    if tasks.is_empty() {
        errors.push("the plan has no tasks".to_owned());
        return errors;
    }
    // A checklist item's id is made from its title: the title is what the agent wrote.
    let name = |i: usize, task: &PlannedTask| match (format, task.id.is_empty()) {
        (PlanFormat::Markdown, _) => format!("task \"{}\"", task.title),
        (_, true) => format!("task {}", i + 1),
        (_, false) => format!("task {}", task.id),
    };
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, task) in tasks.iter().enumerate() {
        let who = name(i, task);
        if task.id.is_empty() {
            errors.push(format!("{who}: no \"id\"; give every task its own id"));
        } else if let Some(j) = first.insert(task.id.as_str(), i) {
            errors.push(match format {
                PlanFormat::Markdown => format!(
                    "\"{}\" is the title of two items; give each task its own title",
                    task.title
                ),
                _ => format!(
                    "{who}: id {} is given to tasks {} and {}; each task needs its own id",
                    task.id,
                    j + 1,
                    i + 1
                ),
            });
        }
        if let Some(old) = existing
            .iter()
            .find(|t| t.id == task.id && !t.id.is_empty())
        {
            errors.push(format!(
                "{who}: the list already has a task {} (\"{}\"); give the new one another id \
                 (or run `ralph plan --renumber` to have ralph do it)",
                old.id, old.title
            ));
        }
        if task.title.is_empty() {
            errors.push(format!("{who}: no title"));
        } else if task.title.contains('\n') {
            errors.push(format!("{who}: the title is more than one line"));
        }
        if task.acceptance_criteria.iter().all(|c| c.is_empty()) {
            errors.push(format!(
                "{who}: no acceptance criteria; give at least one checkable outcome"
            ));
        }
        for dep in &task.depends_on {
            let known = tasks.iter().any(|t| &t.id == dep) || existing.iter().any(|t| &t.id == dep);
            if dep == &task.id {
                errors.push(format!("{who}: depends on itself"));
            } else if !known {
                errors.push(format!(
                    "{who}: dependsOn names {dep}, which is no task of the plan or the list"
                ));
            }
        }
    }
    if let Some(cycle) = cycle(tasks, existing) {
        errors.push(format!("dependency cycle: {}", cycle.join(" -> ")));
    }
    errors
}

/// A cycle among the dependencies of the plan and the list, as ids from a task back to it.
fn cycle(tasks: &[PlannedTask], existing: &[ListedTask]) -> Option<Vec<String>> {
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for t in existing {
        edges.insert(
            t.id.as_str(),
            t.depends_on.iter().map(String::as_str).collect(),
        );
    }
    for t in tasks {
        edges.insert(
            t.id.as_str(),
            t.depends_on.iter().map(String::as_str).collect(),
        );
    }
    let mut done = BTreeSet::new();
    for start in tasks.iter().map(|t| t.id.as_str()) {
        let mut path = Vec::new();
        if let Some(found) = visit(start, &edges, &mut path, &mut done) {
            return Some(found);
        }
    }
    None
}

/// Depth first from `id`: the cycle found, if any.
fn visit<'a>(
    id: &'a str,
    edges: &BTreeMap<&'a str, Vec<&'a str>>,
    path: &mut Vec<&'a str>,
    done: &mut BTreeSet<&'a str>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|p| *p == id) {
        let mut cycle: Vec<String> = path[at..].iter().map(|s| (*s).to_owned()).collect();
        cycle.push(id.to_owned());
        return Some(cycle);
    }
    if !done.insert(id) {
        return None;
    }
    path.push(id);
    for dep in edges.get(id).into_iter().flatten() {
        if let Some(found) = visit(dep, edges, path, done) {
            return Some(found);
        }
    }
    path.pop();
    None
}

/// `tasks` with each id the list already has replaced by a fresh one (`--renumber`), and the
/// plan's dependencies on it following: the prefix of the list's ids (`US-`), numbered on from
/// the highest, as wide as they are written.
pub fn renumber(tasks: &mut [PlannedTask], existing: &[ListedTask]) {
    let mut taken: BTreeSet<String> = existing.iter().map(|t| t.id.clone()).collect();
    taken.extend(tasks.iter().map(|t| t.id.clone()));
    let mut renamed = BTreeMap::new();
    for task in tasks.iter_mut() {
        if !existing.iter().any(|t| t.id == task.id) {
            continue;
        }
        let (prefix, width) = numbering(&task.id);
        let mut n = taken
            .iter()
            .filter_map(|id| id.strip_prefix(prefix.as_str())?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        let fresh = loop {
            n += 1;
            let id = format!("{prefix}{n:0width$}");
            if !taken.contains(&id) {
                break id;
            }
        };
        taken.insert(fresh.clone());
        renamed.insert(std::mem::replace(&mut task.id, fresh.clone()), fresh);
    }
    for task in tasks.iter_mut() {
        for dep in &mut task.depends_on {
            if let Some(fresh) = renamed.get(dep) {
                dep.clone_from(fresh);
            }
        }
    }
}

/// An id's prefix and the width of its number: `US-007` is (`US-`, 3); `setup` is (`setup-`, 1).
fn numbering(id: &str) -> (String, usize) {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    match digits {
        0 => (format!("{id}-"), 1),
        n => (id[..id.len() - n].to_owned(), n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, deps: &[&str]) -> PlannedTask {
        let mut t = PlannedTask::new(id, format!("Do {id}"));
        t.acceptance_criteria = vec!["it works".to_owned()];
        t.depends_on = deps.iter().map(|d| (*d).to_owned()).collect();
        t
    }

    #[test]
    fn a_good_plan_has_no_errors() {
        let existing = [ListedTask::new("US-001", "Old")];
        let plan = [task("US-002", &["US-001"]), task("US-003", &["US-002"])];
        assert_eq!(
            check(PlanFormat::Prd, &plan, &existing),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_error_is_named_at_once() {
        let existing = [ListedTask::new("US-001", "Old")];
        let mut no_criteria = task("B", &["nope"]);
        no_criteria.acceptance_criteria.clear();
        no_criteria.title.clear();
        let plan = [
            task("US-001", &[]),
            no_criteria,
            task("C", &["D"]),
            task("D", &["C"]),
            task("E", &[]),
            task("E", &[]),
        ];
        assert_eq!(
            check(PlanFormat::Prd, &plan, &existing),
            [
                "task US-001: the list already has a task US-001 (\"Old\"); give the new one \
                 another id (or run `ralph plan --renumber` to have ralph do it)",
                "task B: no title",
                "task B: no acceptance criteria; give at least one checkable outcome",
                "task B: dependsOn names nope, which is no task of the plan or the list",
                "task E: id E is given to tasks 5 and 6; each task needs its own id",
                "dependency cycle: C -> D -> C",
            ]
        );
    }

    #[test]
    fn renumbering_continues_the_list_s_numbers_and_rewires_the_plan() {
        let existing = [
            ListedTask::new("US-001", "a"),
            ListedTask::new("US-002", "b"),
        ];
        let mut plan = [task("US-002", &[]), task("US-003", &["US-002"])];
        renumber(&mut plan, &existing);
        assert_eq!(plan[0].id, "US-004");
        assert_eq!(plan[1].id, "US-003");
        assert_eq!(plan[1].depends_on, ["US-004"]);
        assert!(check(PlanFormat::Prd, &plan, &existing).is_empty());
    }
}
