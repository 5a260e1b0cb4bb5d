//! The `escalation` block: the circuit breaker, the revert, the story files, and where
//! progress.txt may live.

use std::path::{Component, Path, PathBuf};

use serde_norway::Value;

use super::{Checker, block, keys, present};
use crate::EscalationConfig;
use crate::locate::FieldPath;

pub(super) fn escalation(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
) -> Option<EscalationConfig> {
    let mut config = EscalationConfig::default();
    let Some(mapping) = block(checker, path, value, &keys("escalation"))? else {
        return Some(config);
    };
    let mut ok = true;
    if let Some(v) = present(mapping, "prd") {
        match checker.string(&path.key("prd"), v, "a path to a prd.json file") {
            Some(prd) => config.prd = Some(PathBuf::from(prd)),
            None => ok = false,
        }
    }
    if let Some(v) = present(mapping, "progress") {
        match checker.string(&path.key("progress"), v, "a path to a progress file") {
            Some(progress) => config.progress = PathBuf::from(progress),
            None => ok = false,
        }
    }
    if ok {
        let file = checker.file;
        if let Some(problem) = progress_problem(file, config.prd.as_deref(), &config.progress) {
            // Where the default `progress.txt` is the clash, point at `prd`.
            let at = match present(mapping, "progress") {
                Some(_) => "progress",
                None => "prd",
            };
            checker.value_error(&path.key(at), problem);
            ok = false;
        }
    }
    if let Some(v) = present(mapping, "same_error_limit") {
        match checker.integer_at_least(&path.key("same_error_limit"), v, 1) {
            Some(limit) => config.same_error_limit = limit,
            None => ok = false,
        }
    }
    if let Some(v) = present(mapping, "revert") {
        match checker.bool(&path.key("revert"), v) {
            Some(revert) => config.revert = revert,
            None => ok = false,
        }
    }
    if let Some(v) = present(mapping, "split") {
        match checker.bool(&path.key("split"), v) {
            Some(split) => config.split = split,
            None => ok = false,
        }
    }
    ok.then_some(config)
}

/// `path` with `.` steps dropped and each `..` taking the step before it away (`./a`, `x/../a`
/// and `a` are all `a`), as far as that can be told from the text alone.
pub(super) fn lexical(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(component),
            },
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// Why `progress` (from `escalation.progress`, or its default) would destroy data, as far as the
/// paths' text tells: it names the prd.json, this RALPH.md (`ralph_md`, as the user named it), or
/// a place inside a `.git` folder. Paths that differ only through a symlink are ralph's
/// escalation's to find, when it opens.
fn progress_problem(ralph_md: &str, prd: Option<&Path>, progress: &Path) -> Option<String> {
    let normal = lexical(progress);
    let shown = progress.display();
    if prd.is_some_and(|prd| lexical(prd) == normal) {
        return Some(format!(
            "\"{shown}\" is also escalation.prd; progress entries would overwrite the stories; \
             choose another file, such as \"progress.txt\""
        ));
    }
    if lexical(Path::new(ralph_md)) == normal {
        return Some(format!(
            "\"{shown}\" is this RALPH.md; progress entries would overwrite its prompt and \
             settings; choose another file, such as \"progress.txt\""
        ));
    }
    if normal.components().any(|c| c.as_os_str() == ".git") {
        return Some(format!(
            "\"{shown}\" is inside .git, git's own folder, where a file ralph writes can \
             damage the repository; choose a path outside it, such as \"progress.txt\""
        ));
    }
    None
}
