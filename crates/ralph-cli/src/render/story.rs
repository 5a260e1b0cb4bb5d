//! Lines for a task source's events: escalation's, one function per story event, from their
//! typed form; another source's, its type and fields.

use ralph_engine::TaskEvent;
use ralph_escalation::StoryEvent;

use super::{Style, inert, short_commit};

/// The line for a task event, if it has one. With `--quiet` only a story's fate is shown: a
/// tripped breaker, a revert, a blocked or passed story.
pub(super) fn task_line(style: Style, event: &TaskEvent) -> Option<String> {
    let Some(story) = StoryEvent::from_task_event(event) else {
        return (!style.quiet).then(|| other_source_line(event));
    };
    Some(match &story {
        StoryEvent::StoryStarted {
            story_id,
            title,
            attempt: 1,
            ..
        } if !style.quiet => story_started_line(style, &inert(story_id), &inert(title)),
        StoryEvent::CircuitTripped {
            story_id,
            reason,
            count,
            signature,
        } => circuit_tripped_line(
            style,
            story_id.as_deref().map(inert).as_deref(),
            &inert(reason),
            *count,
            signature.as_deref(),
        ),
        StoryEvent::Reverted {
            checkpoint,
            saved_ref,
            ..
        } => reverted_line(checkpoint, saved_ref),
        StoryEvent::StoryBlocked { story_id, reason } => {
            story_blocked_line(style, &inert(story_id), &inert(reason))
        }
        StoryEvent::StoryPassed {
            story_id,
            attempts,
            checkpoint,
        } => story_passed_line(style, story_id, *attempts, checkpoint.as_deref()),
        StoryEvent::PrOpened {
            story_id,
            url,
            base,
            ..
        } => format!(
            "{} for {}: {} (to {})",
            style.paint("1;32", "pull request opened"),
            inert(story_id),
            inert(url),
            inert(base)
        ),
        StoryEvent::PrUpdated { story_id, url, .. } => format!(
            "{} for {}: {}",
            style.paint("1;32", "pull request updated"),
            inert(story_id),
            inert(url)
        ),
        StoryEvent::PrClosed { story_id, url, .. } => format!(
            "{} for {}: {} (closed unmerged: left closed, nothing pushed)",
            style.paint("1;33", "pull request closed"),
            inert(story_id),
            inert(url)
        ),
        // A later attempt on a story: the iteration line names it.
        _ => return None,
    })
}

/// `  TYPE key=value key=value`: a source the renderer does not know.
fn other_source_line(event: &TaskEvent) -> String {
    let fields: Vec<String> = event
        .fields()
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    inert(&format!("  {} {}", event.type_name(), fields.join(" "))).into_owned()
}

/// A story's first attempt: its id and title.
fn story_started_line(style: Style, story_id: &str, title: &str) -> String {
    style.paint("1", &format!("{} {story_id}: {title}", style.words.one))
}

/// `circuit breaker tripped on US-002: same_error ×3 · error 3f2a9c0d1e2b4a5c`.
fn circuit_tripped_line(
    style: Style,
    story_id: Option<&str>,
    reason: &str,
    count: u64,
    signature: Option<&str>,
) -> String {
    let on = story_id.map(|id| format!(" on {id}")).unwrap_or_default();
    let sig = signature
        .map(|s| format!(" · error {s}"))
        .unwrap_or_default();
    format!(
        "{}{on}: {reason} ×{count}{sig}",
        style.paint("1;33", "circuit breaker tripped")
    )
}

/// `  reverted to 0123456789ab · abandoned work saved: git checkout refs/ralph/attempts/...`.
fn reverted_line(checkpoint: &str, saved_ref: &str) -> String {
    format!(
        "  reverted to {} · abandoned work saved: git checkout {saved_ref}",
        short_commit(checkpoint)
    )
}

/// `story blocked US-002: ` (`task blocked` for a list of tasks) and why, as written in its
/// notes.
fn story_blocked_line(style: Style, story_id: &str, reason: &str) -> String {
    format!(
        "{} {story_id}: {reason}",
        style.paint("1;31", &format!("{} blocked", style.words.one))
    )
}

/// `story passes US-001 (1 attempt) · checkpoint 0123456789ab` (`task passes` for a list of
/// tasks).
fn story_passed_line(
    style: Style,
    story_id: &str,
    attempts: u64,
    checkpoint: Option<&str>,
) -> String {
    let at = checkpoint
        .map(|c| format!(" · checkpoint {}", short_commit(c)))
        .unwrap_or_default();
    let s = if attempts == 1 { "" } else { "s" };
    format!(
        "{} {story_id} ({attempts} attempt{s}){at}",
        style.paint("1;32", &format!("{} passes", style.words.one))
    )
}
