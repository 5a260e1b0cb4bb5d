//! What the task source makes of issues, with no network: their run order (priority label,
//! then oldest first), the labels ralph sets, the comments it writes, and the answer to a
//! question found among the comments after it.

use crate::{Comment, Issue};

pub use ralph_rest::words::{
    BLOCKED_LABEL, DONE_LABEL, PRIORITY_PREFIX, SIGNATURE, blocked_comment, passed_comment,
    question_comment,
};

/// Who ralph's comments are written by: the login of the account its token acts for, or, for
/// a token that may not read its own user (a GitHub App's, such as GitHub Actions'
/// `GITHUB_TOKEN`, whose comments are an app's), any app (`NAME[bot]`) until ralph learns the
/// login from a comment it posts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// The token's login.
    Login(String),
    /// Not known: an app's login.
    AnyApp,
}

impl Author {
    /// Whether `login` is ralph's. Logins are compared as GitHub does, ignoring case.
    #[must_use]
    pub fn is(&self, login: &str) -> bool {
        match self {
            Author::Login(me) => me.eq_ignore_ascii_case(login),
            Author::AnyApp => login.ends_with("[bot]"),
        }
    }
}

/// The issue's priority: the smallest N of its `priority:N` labels.
#[must_use]
pub fn priority(issue: &Issue) -> Option<u32> {
    ralph_rest::words::priority(issue.labels.iter().map(String::as_str))
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
            .then_with(|| a.number.cmp(&b.number))
    });
    issues
}

/// Whether ralph wrote the comment: signed, by ralph's account (a person's comment that ends
/// with the signature is that person's).
#[must_use]
pub fn is_ralphs(comment: &Comment, ralph: &Author) -> bool {
    ralph_rest::words::is_signed(&comment.body) && ralph.is(&comment.author)
}

/// A comment's text without ralph's signature (a person's too: it is no more than a mark).
fn text(comment: &Comment) -> &str {
    ralph_rest::words::unsigned(&comment.body)
}

/// The comments as `{{ task.comments }}` shows them: each headed by its author and time
/// (ralph's as `ralph`, see [`is_ralphs`]), oldest first, separated by a blank line.
#[must_use]
pub fn render_comments(comments: &[Comment], ralph: &Author) -> String {
    comments
        .iter()
        .map(|c| {
            let author = if is_ralphs(c, ralph) {
                "ralph"
            } else {
                &c.author
            };
            format!("{author} ({}):\n{}", c.created_at, text(c))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The answer to the question posted as comment `question_id`: every comment after it that
/// ralph did not write ([`is_ralphs`]), joined by a blank line; `None` while there is none.
#[must_use]
pub fn answer_after(comments: &[Comment], question_id: u64, ralph: &Author) -> Option<String> {
    let start = comments.iter().position(|c| c.id == question_id)? + 1;
    let answers: Vec<&str> = comments[start..]
        .iter()
        .filter(|c| !is_ralphs(c, ralph))
        .map(text)
        .collect();
    (!answers.is_empty()).then(|| answers.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IssueState;

    fn issue(number: u64, created_at: &str, labels: &[&str]) -> Issue {
        Issue {
            number,
            title: format!("issue {number}"),
            body: String::new(),
            url: format!("https://github.com/o/r/issues/{number}"),
            state: IssueState::Open,
            created_at: created_at.into(),
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
            author: "a-person".into(),
        }
    }

    fn comment(id: u64, author: &str, body: &str) -> Comment {
        Comment {
            id,
            body: body.into(),
            author: author.into(),
            created_at: format!("2026-01-01T00:00:{id:02}Z"),
            url: String::new(),
        }
    }

    #[test]
    fn priority_labels_run_first_smallest_first_then_the_oldest() {
        let issues = vec![
            issue(1, "2026-01-01T00:00:01Z", &["ralph"]),
            issue(2, "2026-01-02T00:00:00Z", &["priority:2"]),
            issue(3, "2026-01-03T00:00:00Z", &["priority:1", "priority:9"]),
            issue(4, "2025-12-31T00:00:00Z", &["priority:high"]),
            issue(5, "2026-01-04T00:00:00Z", &["priority:1"]),
        ];
        let order: Vec<u64> = run_order(issues).iter().map(|i| i.number).collect();
        assert_eq!(order, [3, 5, 2, 4, 1]);
    }

    #[test]
    fn the_answer_is_what_others_wrote_after_the_question() {
        let question = question_comment("Which database?");
        let comments = [
            comment(1, "a-person", "earlier words"),
            comment(2, "me", &question),
            comment(3, "me", &passed_comment(&["abc"], None)),
        ];
        let me = Author::Login("me".into());
        assert_eq!(answer_after(&comments, 2, &me), None);
        assert_eq!(answer_after(&comments, 99, &me), None);
        let mut answered = comments.to_vec();
        answered.push(comment(4, "me", "Postgres, please"));
        answered.push(comment(5, "someone", "and use sqlx"));
        assert_eq!(
            answer_after(&answered, 2, &me).as_deref(),
            Some("Postgres, please\n\nand use sqlx")
        );
    }

    #[test]
    fn comments_show_ralphs_as_ralph_without_the_signature() {
        let comments = [
            comment(1, "a-person", "please hurry"),
            comment(2, "bot", &question_comment("Which one?")),
        ];
        let shown = render_comments(&comments, &Author::Login("bot".into()));
        assert!(shown.starts_with("a-person (2026-01-01T00:00:01Z):\nplease hurry\n\nralph ("));
        assert!(shown.contains("**ralph asks:** Which one?"));
        assert!(!shown.contains(SIGNATURE));
    }

    #[test]
    fn ralphs_comments_name_commits_branch_reason_and_saved_ref() {
        let passed = passed_comment(&["abc1234"], Some("refs/heads/main"));
        assert!(
            passed.contains("commit abc1234 on branch `main`"),
            "{passed}"
        );
        let blocked = blocked_comment("same error 3 times", Some("refs/ralph/attempts/7/1"));
        assert!(blocked.contains("same error 3 times"), "{blocked}");
        assert!(blocked.contains("refs/ralph/attempts/7/1"), "{blocked}");
        for body in [passed, blocked] {
            assert!(is_ralphs(
                &comment(1, "x", &body),
                &Author::Login("X".into())
            ));
        }
    }

    #[test]
    fn a_signed_comment_is_ralphs_only_by_ralphs_account() {
        let signed = passed_comment(&["abc"], None);
        let me = Author::Login("ralph-bot".into());
        assert!(!is_ralphs(&comment(1, "mallory", &signed), &me));
        assert!(!is_ralphs(&comment(1, "ralph-bot", "unsigned"), &me));
        assert!(is_ralphs(
            &comment(1, "github-actions[bot]", &signed),
            &Author::AnyApp
        ));
        assert!(!is_ralphs(&comment(1, "mallory", &signed), &Author::AnyApp));
        let shown = render_comments(&[comment(1, "mallory", &signed)], &me);
        assert!(shown.starts_with("mallory ("), "{shown}");
    }
}
