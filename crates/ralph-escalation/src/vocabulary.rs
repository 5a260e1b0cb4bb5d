//! Story mode's words in a RALPH.md: the `{{ story.* }}` placeholders and the `RUN_ENDED`
//! reasons escalation gives, registered with the parser as any plug's would be.

use ralph_engine::frontmatter::{Namespace, PlugVocabulary, RalphFile};

use crate::events::StoryEnd;

/// The names story mode fills in under `{{ story.* }}`, from this list.
pub const STORY_PLACEHOLDERS: &[&str] =
    &["id", "title", "description", "acceptance_criteria", "json"];

/// Escalation's words: the `story` namespace (filled only with `escalation.prd`) and its
/// endings (every [`StoryEnd`], and [`ESCALATION_FAILED`](crate::ESCALATION_FAILED)). Parse a
/// RALPH.md that may use story mode with a vocabulary that has them:
///
/// ```
/// use ralph_engine::frontmatter::{self, Vocabulary};
///
/// let vocabulary = Vocabulary::default().with(ralph_escalation::vocabulary()).unwrap();
/// let text = "---\nagent: x\nescalation:\n  prd: prd.json\n---\nDo {{ story.title }}.\n";
/// let parsed = frontmatter::parse_with("RALPH.md", text, &vocabulary).unwrap();
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
        .chain([crate::ESCALATION_FAILED]);
    PlugVocabulary::new("story mode")
        .namespace(story)
        .end_reasons(endings)
}

/// Whether `file` runs in story mode: `escalation.prd` is set.
fn story_mode(file: &RalphFile) -> bool {
    file.config
        .escalation
        .as_ref()
        .is_some_and(|escalation| escalation.prd.is_some())
}
