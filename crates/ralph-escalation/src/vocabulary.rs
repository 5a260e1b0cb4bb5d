//! Story mode's words in a RALPH.md: the `{{ story.* }}` placeholders and the `RUN_ENDED`
//! reasons escalation gives, registered with the parser as any plug's would be.

use ralph_frontmatter::{Namespace, PlugVocabulary, RalphFile};
use ralph_tasks::{STORY_PLACEHOLDERS, TASK_PLACEHOLDERS};

use crate::events::StoryEnd;

/// The state an agent reports to put a question to a person:
/// `<!-- ralph:state ask question="..." -->`.
pub const ASK_STATE: &str = "ask";

/// Escalation's words: the `story` namespace (filled only with `escalation.prd`) and its
/// endings (every [`StoryEnd`], and [`ESCALATION_FAILED`](crate::ESCALATION_FAILED)). Parse a
/// RALPH.md that may use story mode with a vocabulary that has them:
///
/// ```
/// use ralph_frontmatter::Vocabulary;
///
/// let vocabulary = Vocabulary::default().with(ralph_escalation::vocabulary()).unwrap();
/// let text = "---\nagent: x\nescalation:\n  prd: prd.json\n---\nDo {{ story.title }}.\n";
/// let parsed = ralph_frontmatter::parse_with("RALPH.md", text, &vocabulary).unwrap();
/// assert!(parsed.warnings.is_empty());
/// ```
pub fn vocabulary() -> PlugVocabulary {
    let story = Namespace::closed("story", STORY_PLACEHOLDERS.iter().copied()).filled_only_if(
        story_mode,
        "story placeholders are filled only in story mode (`escalation.prd`); without it this \
         stays in the prompt as written",
    );
    let endings = StoryEnd::ALL
        .map(StoryEnd::as_str)
        .into_iter()
        .chain([crate::ESCALATION_FAILED])
        .chain([
            crate::plan::PLAN_WRITTEN,
            crate::plan::PLAN_SHOWN,
            crate::plan::PLAN_INVALID,
        ]);
    let task = Namespace::closed("task", TASK_PLACEHOLDERS.iter().copied()).filled_only_if(
        listed,
        "task placeholders are filled only when there is a task list (`tasks:` or \
         `escalation.prd`); without one this stays in the prompt as written",
    );
    PlugVocabulary::new("story mode")
        .namespace(story)
        .namespace(task)
        .end_reasons(endings)
        .reserved_states([ASK_STATE])
        .section("tasks", crate::tasks_config::check)
        .section("plan", crate::plan::config::check)
}

/// Whether `file` has a task list: a `tasks` section or `escalation.prd`.
fn listed(file: &RalphFile) -> bool {
    story_mode(file) || file.sections.contains_key("tasks")
}

/// Whether `file` runs in story mode with prd.json: `escalation.prd` is set, or
/// `tasks: {prd: ...}`.
fn story_mode(file: &RalphFile) -> bool {
    let tasks_prd = file
        .sections
        .get("tasks")
        .and_then(|tasks| tasks.get("prd"))
        .is_some();
    tasks_prd
        || file
            .config
            .escalation
            .as_ref()
            .is_some_and(|escalation| escalation.prd.is_some())
}

#[cfg(test)]
mod tests {
    use ralph_frontmatter::{Vocabulary, parse_with};

    /// The warnings of `fixtures/ralph-md/NAME.md` parsed with story mode's words, as `ralph`
    /// parses it.
    fn warnings(name: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/ralph-md")
            .join(format!("{name}.md"));
        let text = std::fs::read_to_string(path).unwrap();
        let vocabulary = Vocabulary::default().with(super::vocabulary()).unwrap();
        let parsed = parse_with("RALPH.md", &text, &vocabulary).unwrap();
        parsed.warnings.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_story_name_validation_does_not_know_is_a_warning_with_the_known_ones() {
        assert_eq!(
            warnings("valid-story-placeholders"),
            [
                "RALPH.md:6:42: story.points: `story` has no such value (known: id, title, \
                 description, acceptance_criteria, json, conflict)"
            ]
        );
    }

    #[test]
    fn story_placeholders_outside_story_mode_and_misspelt_namespaces_are_warnings() {
        let found = warnings("valid-placeholder-warnings");
        assert_eq!(
            found[3..],
            [
                "RALPH.md:11:1: story.title: story placeholders are filled only in story mode \
                 (`escalation.prd`); without it this stays in the prompt as written",
                "RALPH.md:11:19: story.points: story placeholders are filled only in story mode \
                 (`escalation.prd`); without it this stays in the prompt as written",
                "RALPH.md:12:1: stroy.id: unknown placeholder namespace `stroy`; known: \
                 commands, args, ralph, story, task; did you mean `story`?",
                "RALPH.md:12:16: env.HOME: unknown placeholder namespace `env`; known: commands, \
                 args, ralph, story, task",
            ]
        );
    }

    #[test]
    fn every_field_of_story_mode_parses_without_a_warning() {
        assert_eq!(warnings("valid-every-field"), Vec::<String>::new());
    }
}
