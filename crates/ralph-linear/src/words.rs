//! What the task source makes of Linear's issues, with no network: their run order (Linear's
//! priority, then oldest first), the comments ralph writes, and the answer to a question found
//! among the comments after it.

use crate::{Comment, Issue};

/// The label a blocked issue gets; ralph skips issues that carry it.
pub const BLOCKED_LABEL: &str = "ralph:blocked";

/// Ends every comment ralph writes, so its own comments are never taken for a person's
/// answer, even when ralph runs with that person's API key. A comment is ralph's only when its
/// author is the key's account too (see [`is_ralphs`]).
pub const SIGNATURE: &str = "*— posted by ralph*";

/// `issues` in the order they run: by Linear's priority (urgent, high, medium, low, then
/// none), then oldest first (by creation time, then identifier).
#[must_use]
pub fn run_order(mut issues: Vec<Issue>) -> Vec<Issue> {
    // Linear's 0 is "no priority": after low (4).
    let rank = |i: &Issue| if i.priority == 0 { 5 } else { i.priority };
    issues.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.created_at.cmp(&b.created_at))
            .then_with(|| a.identifier.cmp(&b.identifier))
    });
    issues
}

/// Whether ralph wrote the comment: signed, by the account ralph's key acts for (`ralph_id`).
#[must_use]
pub fn is_ralphs(comment: &Comment, ralph_id: &str) -> bool {
    comment.body.trim_end().ends_with(SIGNATURE) && comment.author_id == ralph_id
}

/// A comment's text without ralph's signature.
fn text(comment: &Comment) -> &str {
    comment
        .body
        .trim_end()
        .strip_suffix(SIGNATURE)
        .unwrap_or(&comment.body)
        .trim_end()
}

/// The comments as `{{ task.comments }}` shows them: each headed by its author and time
/// (ralph's as `ralph`), oldest first, separated by a blank line.
#[must_use]
pub fn render_comments(comments: &[Comment], ralph_id: &str) -> String {
    comments
        .iter()
        .map(|c| {
            let author = if is_ralphs(c, ralph_id) {
                "ralph"
            } else {
                &c.author
            };
            format!("{author} ({}):\n{}", c.created_at, text(c))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The comment a passed issue gets: the commit, the branch and the state it moves to.
#[must_use]
pub fn passed_comment(commit: Option<&str>, branch: Option<&str>, state: &str) -> String {
    let commit = commit.map_or_else(
        || "with no commit of its own".to_owned(),
        |c| format!("in commit `{c}`"),
    );
    let branch = branch.map_or_else(String::new, |b| {
        format!(
            " on branch `{}`",
            b.strip_prefix("refs/heads/").unwrap_or(b)
        )
    });
    format!("ralph finished this issue {commit}{branch}, and moves it to {state}.\n\n{SIGNATURE}")
}

/// The comment a blocked issue gets: why, and where the abandoned work is.
#[must_use]
pub fn blocked_comment(reason: &str, saved_ref: Option<&str>) -> String {
    let saved = saved_ref.map_or_else(String::new, |r| {
        format!(
            "\n\nThe abandoned work is saved under `{r}` (`git log -p {r}` shows it, `git \
             checkout {r} -- .` brings it back)."
        )
    });
    format!(
        "ralph blocked this issue: {reason}.{saved}\n\nRemove the `{BLOCKED_LABEL}` label to \
         let ralph try again.\n\n{SIGNATURE}"
    )
}

/// The comment that puts the agent's question to a person.
#[must_use]
pub fn question_comment(question: &str) -> String {
    format!(
        "**ralph asks:** {question}\n\nAnswer in a comment here: the loop waits for it, and \
         the next iteration reads it.\n\n{SIGNATURE}"
    )
}

/// The answer to the question posted as comment `question_id`: every comment after it that
/// ralph did not write, joined by a blank line; `None` while there is none.
#[must_use]
pub fn answer_after(comments: &[Comment], question_id: &str, ralph_id: &str) -> Option<String> {
    let start = comments.iter().position(|c| c.id == question_id)? + 1;
    let answers: Vec<&str> = comments[start..]
        .iter()
        .filter(|c| !is_ralphs(c, ralph_id))
        .map(text)
        .collect();
    (!answers.is_empty()).then(|| answers.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkflowState;

    fn issue(identifier: &str, priority: u8, created_at: &str) -> Issue {
        Issue {
            id: format!("id-{identifier}"),
            identifier: identifier.into(),
            title: identifier.into(),
            description: String::new(),
            url: format!("https://linear.app/acme/issue/{identifier}"),
            priority,
            created_at: created_at.into(),
            state: WorkflowState {
                id: "todo".into(),
                name: "Todo".into(),
                kind: "unstarted".into(),
                position: 0.0,
            },
            labels: Vec::new(),
        }
    }

    fn comment(id: &str, author_id: &str, body: &str) -> Comment {
        Comment {
            id: id.into(),
            body: body.into(),
            author_id: author_id.into(),
            author: format!("name of {author_id}"),
            created_at: format!("2026-01-01T00:00:0{id}.000Z"),
            url: String::new(),
        }
    }

    #[test]
    fn urgent_runs_first_no_priority_last_then_the_oldest() {
        let issues = vec![
            issue("ENG-1", 0, "2026-01-01T00:00:00.000Z"),
            issue("ENG-2", 3, "2026-01-02T00:00:00.000Z"),
            issue("ENG-3", 1, "2026-01-03T00:00:00.000Z"),
            issue("ENG-4", 3, "2026-01-01T12:00:00.000Z"),
            issue("ENG-5", 4, "2025-12-01T00:00:00.000Z"),
        ];
        let order: Vec<String> = run_order(issues)
            .into_iter()
            .map(|i| i.identifier)
            .collect();
        assert_eq!(order, ["ENG-3", "ENG-4", "ENG-2", "ENG-5", "ENG-1"]);
    }

    #[test]
    fn the_answer_is_what_others_wrote_after_the_question() {
        let comments = [
            comment("1", "person", "earlier words"),
            comment("2", "me", &question_comment("Which database?")),
        ];
        assert_eq!(answer_after(&comments, "2", "me"), None);
        assert_eq!(answer_after(&comments, "9", "me"), None);
        let mut answered = comments.to_vec();
        // The key's own account answering, unsigned, is a person's answer.
        answered.push(comment("3", "me", "Postgres, please"));
        answered.push(comment("4", "someone", "and use sqlx"));
        assert_eq!(
            answer_after(&answered, "2", "me").as_deref(),
            Some("Postgres, please\n\nand use sqlx")
        );
    }

    #[test]
    fn a_signed_comment_is_ralphs_only_by_the_keys_account() {
        let signed = passed_comment(Some("abc1234"), Some("refs/heads/main"), "Done");
        assert!(is_ralphs(&comment("1", "me", &signed), "me"));
        assert!(!is_ralphs(&comment("1", "mallory", &signed), "me"));
        let shown = render_comments(
            &[
                comment("1", "person", "please hurry"),
                comment("2", "me", &signed),
            ],
            "me",
        );
        assert!(shown.starts_with("name of person ("), "{shown}");
        assert!(shown.contains("\n\nralph ("), "{shown}");
        assert!(shown.contains("commit `abc1234` on branch `main`, and moves it to Done"));
        assert!(!shown.contains(SIGNATURE), "{shown}");
    }

    #[test]
    fn the_blocked_comment_names_the_reason_and_the_saved_ref() {
        let blocked = blocked_comment("same error 3 times", Some("refs/ralph/attempts/ENG-7/1"));
        assert!(blocked.contains("same error 3 times"), "{blocked}");
        assert!(blocked.contains("refs/ralph/attempts/ENG-7/1"), "{blocked}");
        assert!(blocked.contains(BLOCKED_LABEL), "{blocked}");
    }
}
