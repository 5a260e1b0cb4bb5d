//! The labels ralph sets on an issue and the comments it writes there, the same on every forge
//! (both GitHub and GitLab render Markdown and keep an HTML comment out of sight).

/// A label `priority:N` (N a whole number, 0 first) runs the issue before those with a larger
/// N and before every issue without one.
pub const PRIORITY_PREFIX: &str = "priority:";
/// The label a passed issue gets when `close: false` keeps it open.
pub const DONE_LABEL: &str = "ralph:done";
/// The label a blocked issue gets; ralph skips issues that carry it.
pub const BLOCKED_LABEL: &str = "ralph:blocked";
/// Ends every comment ralph writes, so its own comments are never taken for a person's
/// answer, even when ralph runs with that person's token. Not a `ralph:` marker, so an agent
/// that quotes it states nothing. Anyone can end a comment with it: a comment is ralph's only
/// when its author is ralph's account too.
pub const SIGNATURE: &str = "<!-- posted by ralph -->";

/// The smallest N of `labels`' `priority:N`.
pub fn priority<'a>(labels: impl IntoIterator<Item = &'a str>) -> Option<u32> {
    labels
        .into_iter()
        .filter_map(|label| label.strip_prefix(PRIORITY_PREFIX))
        .filter_map(|n| n.trim().parse().ok())
        .min()
}

/// Whether a comment's text is signed by ralph (its author must be ralph's too).
#[must_use]
pub fn is_signed(body: &str) -> bool {
    body.trim_end().ends_with(SIGNATURE)
}

/// A comment's text without ralph's signature (a person's too: it is no more than a mark).
#[must_use]
pub fn unsigned(body: &str) -> &str {
    body.trim_end()
        .strip_suffix(SIGNATURE)
        .unwrap_or(body)
        .trim_end()
}

/// The comment a passed issue gets: the commit(s) and the branch.
#[must_use]
pub fn passed_comment(commits: &[&str], branch: Option<&str>) -> String {
    let commits = match commits {
        [] => "with no commit of its own".to_owned(),
        [one] => format!("in commit {one}"),
        many => format!("in commits {}", many.join(", ")),
    };
    let branch = branch.map_or_else(String::new, |b| {
        format!(
            " on branch `{}`",
            b.strip_prefix("refs/heads/").unwrap_or(b)
        )
    });
    format!("ralph finished this task {commits}{branch}.\n\n{SIGNATURE}")
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
        "ralph blocked this task: {reason}.{saved}\n\nRemove the `{BLOCKED_LABEL}` label to \
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ralphs_comments_name_commits_branch_reason_and_saved_ref_and_are_signed() {
        let passed = passed_comment(&["abc1234"], Some("refs/heads/main"));
        assert!(
            passed.contains("commit abc1234 on branch `main`"),
            "{passed}"
        );
        let blocked = blocked_comment("same error 3 times", Some("refs/ralph/attempts/7/1"));
        assert!(blocked.contains("same error 3 times"), "{blocked}");
        assert!(blocked.contains("refs/ralph/attempts/7/1"), "{blocked}");
        for body in [passed, blocked, question_comment("Which?")] {
            assert!(is_signed(&body), "{body}");
            assert!(!unsigned(&body).contains(SIGNATURE));
        }
    }

    #[test]
    fn the_smallest_whole_priority_counts() {
        assert_eq!(priority(["ralph", "priority:2", "priority:1"]), Some(1));
        assert_eq!(priority(["priority:high"]), None);
    }
}
