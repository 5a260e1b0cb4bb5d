//! What the task source makes of issues and their notes, with no network: the run order
//! (priority label, then oldest first), which notes are ralph's, the notes as a prompt shows
//! them, and the answer to a question among the notes after it. The words ralph writes are
//! `ralph_rest::words`, the same as on GitHub.

use ralph_rest::words;

use crate::{Issue, Note};

/// The issue's priority: the smallest N of its `priority:N` labels.
#[must_use]
pub fn priority(issue: &Issue) -> Option<u32> {
    words::priority(issue.labels.iter().map(String::as_str))
}

/// `issues` in the order they run: by priority label, then oldest first (by `created_at`, then
/// number).
#[must_use]
pub fn run_order(mut issues: Vec<Issue>) -> Vec<Issue> {
    issues.sort_by(|a, b| {
        let rank = |i: &Issue| priority(i).map_or((1, 0), |p| (0, p));
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.created_at.cmp(&b.created_at))
            .then_with(|| a.iid.cmp(&b.iid))
    });
    issues
}

/// Whether ralph wrote the note: signed, by ralph's account `ralph` (a username; GitLab's
/// compare ignoring case). A person's note that ends with the signature is that person's.
#[must_use]
pub fn is_ralphs(note: &Note, ralph: &str) -> bool {
    !note.system && words::is_signed(&note.body) && note.author.eq_ignore_ascii_case(ralph)
}

/// The notes as `{{ task.comments }}` shows them: each headed by its author and time (ralph's
/// as `ralph`), oldest first, separated by a blank line; GitLab's system notes left out.
#[must_use]
pub fn render_notes(notes: &[Note], ralph: &str) -> String {
    notes
        .iter()
        .filter(|n| !n.system)
        .map(|n| {
            let author = if is_ralphs(n, ralph) {
                "ralph"
            } else {
                &n.author
            };
            format!("{author} ({}):\n{}", n.created_at, words::unsigned(&n.body))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The answer to the question posted as note `question_id`: every note after it that a person
/// wrote (not ralph's, not GitLab's system notes), joined by a blank line; `None` while there
/// is none.
#[must_use]
pub fn answer_after(notes: &[Note], question_id: u64, ralph: &str) -> Option<String> {
    let start = notes.iter().position(|n| n.id == question_id)? + 1;
    let answers: Vec<&str> = notes[start..]
        .iter()
        .filter(|n| !n.system && !is_ralphs(n, ralph))
        .map(|n| words::unsigned(&n.body))
        .collect();
    (!answers.is_empty()).then(|| answers.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IssueState;

    fn issue(iid: u64, created_at: &str, labels: &[&str]) -> Issue {
        Issue {
            iid,
            title: format!("issue {iid}"),
            description: String::new(),
            url: format!("https://gitlab.com/g/p/-/issues/{iid}"),
            state: IssueState::Open,
            created_at: created_at.into(),
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
            author: "a-person".into(),
        }
    }

    fn note(id: u64, author: &str, body: &str, system: bool) -> Note {
        Note {
            id,
            body: body.into(),
            author: author.into(),
            created_at: format!("2026-01-01T00:00:{id:02}Z"),
            system,
        }
    }

    #[test]
    fn priority_labels_run_first_smallest_first_then_the_oldest() {
        let issues = vec![
            issue(1, "2026-01-01T00:00:01Z", &["ralph"]),
            issue(2, "2026-01-02T00:00:00Z", &["priority:2"]),
            issue(3, "2026-01-03T00:00:00Z", &["priority:1", "priority:9"]),
            issue(4, "2025-12-31T00:00:00Z", &["priority:high"]),
        ];
        let order: Vec<u64> = run_order(issues).iter().map(|i| i.iid).collect();
        assert_eq!(order, [3, 2, 4, 1]);
    }

    #[test]
    fn the_answer_is_what_people_wrote_after_the_question_not_system_notes() {
        let question = words::question_comment("Which database?");
        let mut notes = vec![
            note(1, "a-person", "earlier words", false),
            note(2, "ralph-bot", &question, false),
            note(3, "a-person", "added ~ralph label", true),
        ];
        assert_eq!(answer_after(&notes, 2, "ralph-bot"), None);
        assert_eq!(answer_after(&notes, 99, "ralph-bot"), None);
        notes.push(note(4, "mallory", &words::passed_comment(&[], None), false));
        notes.push(note(
            5,
            "Ralph-Bot",
            &words::passed_comment(&[], None),
            false,
        ));
        let answer = answer_after(&notes, 2, "ralph-bot").unwrap();
        assert!(answer.starts_with("ralph finished this task"), "{answer}");
        assert_eq!(answer.matches("ralph finished").count(), 1, "{answer}");
    }

    #[test]
    fn notes_show_ralphs_as_ralph_without_the_signature_or_system_notes() {
        let notes = [
            note(1, "a-person", "please hurry", false),
            note(2, "a-person", "closed", true),
            note(3, "bot", &words::question_comment("Which one?"), false),
        ];
        let shown = render_notes(&notes, "bot");
        assert!(shown.starts_with("a-person (2026-01-01T00:00:01Z):\nplease hurry\n\nralph ("));
        assert!(shown.contains("**ralph asks:** Which one?"));
        assert!(!shown.contains(words::SIGNATURE));
        assert!(!shown.contains("closed"), "{shown}");
    }
}
