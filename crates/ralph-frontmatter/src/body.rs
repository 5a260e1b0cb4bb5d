//! The prompt body: author comments removed, ralph markers kept.

use std::ops::Range;

/// The body with comments removed, and what was removed.
pub(crate) struct Stripped {
    /// The prompt text.
    pub(crate) text: String,
    /// Byte ranges of the input that were removed comments.
    pub(crate) removed: Vec<Range<usize>>,
    /// Byte offset of a `<!--` that is never closed, if any.
    pub(crate) unclosed: Option<usize>,
}

/// Whether the comment starting at `<!--` is a ralph marker (`<!-- ralph:...`), which the agent
/// must be able to see in its prompt.
fn is_marker(comment: &str) -> bool {
    let inner = comment[4..].trim_start();
    inner
        .get(..6)
        .is_some_and(|head| head.eq_ignore_ascii_case("ralph:"))
}

/// A code fence opening or closing line: up to three spaces, then three or more backticks or
/// tildes. Returns the fence character, its run length, and whether only spaces follow.
fn fence(line: &str) -> Option<(char, usize, bool)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let marker = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.chars().take_while(|c| *c == marker).count();
    (run >= 3).then(|| (marker, run, rest[run..].trim().is_empty()))
}

/// The end of the inline code span whose opening backtick run starts `rest`, as CommonMark
/// reads it: the next run of exactly as many backticks, within the paragraph (before a blank
/// line). `None` when the run is never closed, so its backticks are plain text.
fn code_span_end(rest: &str) -> Option<usize> {
    let run = rest.bytes().take_while(|b| *b == b'`').count();
    let paragraph_end = blank_line(rest).unwrap_or(rest.len());
    let mut i = run;
    while let Some(found) = rest[i..paragraph_end].find('`') {
        let start = i + found;
        let len = rest[start..].bytes().take_while(|b| *b == b'`').count();
        if len == run {
            return Some(start + len);
        }
        i = start + len;
    }
    None
}

/// The offset of the first blank line in `text` (a line holding only whitespace).
fn blank_line(text: &str) -> Option<usize> {
    let mut offset = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n > 0 && line.trim().is_empty() {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// Removes HTML comments from `body`, keeping ralph markers and anything inside fenced code
/// blocks or inline code spans (a prompt may show the agent an HTML sample, as ralphify keeps
/// it). A line left holding nothing but
/// whitespace by the removal disappears with its newline, so a note on its own line leaves no
/// blank line behind; a comment inside a line is removed alone.
pub(crate) fn strip_comments(body: &str) -> Stripped {
    let mut text = String::with_capacity(body.len());
    let mut removed = Vec::new();
    let mut unclosed = None;
    let mut open_fence: Option<(char, usize)> = None;
    // Whether the output's current line had a comment removed from it.
    let mut line_lost_comment = false;
    let mut i = 0;
    let mut at_line_start = true;
    while i < body.len() {
        if at_line_start {
            at_line_start = false;
            let line_end = body[i..].find('\n').map_or(body.len(), |n| i + n);
            let line = &body[i..line_end];
            match (open_fence, fence(line)) {
                (None, Some((marker, run, _))) => open_fence = Some((marker, run)),
                (Some((marker, run)), Some((m, r, bare))) if m == marker && r >= run && bare => {
                    open_fence = None;
                }
                _ => {}
            }
            if open_fence.is_some() || fence(line).is_some() {
                let copy_end = (line_end + 1).min(body.len());
                text.push_str(&body[i..copy_end]);
                i = copy_end;
                at_line_start = true;
                continue;
            }
        }
        let rest = &body[i..];
        if rest.starts_with('`') {
            // An inline code span is copied as written; an unclosed run is plain backticks.
            let end = code_span_end(rest)
                .unwrap_or_else(|| rest.bytes().take_while(|b| *b == b'`').count());
            text.push_str(&rest[..end]);
            i += end;
            continue;
        }
        if rest.starts_with("<!--") && unclosed.is_none() {
            match rest[4..].find("-->") {
                Some(close) => {
                    let end = i + 4 + close + 3;
                    if is_marker(&body[i..end]) {
                        text.push_str(&body[i..end]);
                    } else {
                        removed.push(i..end);
                        line_lost_comment = true;
                    }
                    // A comment may span lines; the fence state resumes after it.
                    i = end;
                    continue;
                }
                None => unclosed = Some(i),
            }
        }
        let c = rest.chars().next().unwrap_or('\n');
        if c == '\n' {
            let line_start = text.rfind('\n').map_or(0, |n| n + 1);
            if line_lost_comment && text[line_start..].trim().is_empty() {
                text.truncate(line_start);
            } else {
                text.push('\n');
            }
            line_lost_comment = false;
            at_line_start = true;
        } else {
            text.push(c);
        }
        i += c.len_utf8();
    }
    let line_start = text.rfind('\n').map_or(0, |n| n + 1);
    if line_lost_comment && text[line_start..].trim().is_empty() {
        text.truncate(line_start);
    }
    Stripped {
        text,
        removed,
        unclosed,
    }
}

/// The prompt as handed to the agent: leading blank lines and trailing whitespace removed, as
/// ralphify does, but the first line's indentation kept (it may be a code block).
pub(crate) fn trim_prompt(text: &str) -> String {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() {
            break;
        }
        start += line.len();
    }
    text[start..].trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(body: &str) -> String {
        strip_comments(body).text
    }

    #[test]
    fn comment_alone_on_a_line_removes_the_line() {
        assert_eq!(strip("a\n<!-- note -->\nb\n"), "a\nb\n");
        assert_eq!(strip("a\n  <!-- note -->  \nb"), "a\nb");
    }

    #[test]
    fn comment_inside_a_line_removes_only_the_comment() {
        assert_eq!(strip("do this <!-- why --> now\n"), "do this  now\n");
    }

    #[test]
    fn multi_line_comment_removes_its_lines() {
        assert_eq!(strip("a\n<!--\nnote\n-->\nb\n"), "a\nb\n");
        assert_eq!(strip("a <!--\nnote\n--> b\n"), "a  b\n");
    }

    #[test]
    fn ralph_marker_stays_in_the_prompt() {
        let body = "Write <!-- RALPH:state idle --> when done.\n<!--ralph:state blocked -->\n";
        assert_eq!(strip(body), body);
    }

    #[test]
    fn comment_in_a_fenced_code_block_stays() {
        let body = "```html\n<!-- sample -->\n```\n<!-- note -->\n~~~~\n<!-- x -->\n```\n~~~~\n";
        assert_eq!(
            strip(body),
            "```html\n<!-- sample -->\n```\n~~~~\n<!-- x -->\n```\n~~~~\n"
        );
    }

    #[test]
    fn comment_in_inline_code_stays() {
        assert_eq!(strip("a `<!-- x -->` b\n"), "a `<!-- x -->` b\n");
        assert_eq!(
            strip("a ``<!-- x ` y -->`` b <!-- z -->\n"),
            "a ``<!-- x ` y -->`` b \n"
        );
    }

    #[test]
    fn unclosed_backticks_do_not_protect_a_comment() {
        assert_eq!(strip("a ` b <!-- x --> c\n"), "a ` b  c\n");
        // A span does not run past its paragraph.
        assert_eq!(strip("a ` b\n\n<!-- x -->\n`\n"), "a ` b\n\n`\n");
        // A run of another length does not close it.
        assert_eq!(strip("``a` <!-- x -->\n"), "``a` \n");
    }

    #[test]
    fn unclosed_comment_is_kept_and_reported() {
        let stripped = strip_comments("a\n<!-- never closed\nb");
        assert_eq!(stripped.text, "a\n<!-- never closed\nb");
        assert_eq!(stripped.unclosed, Some(2));
    }

    #[test]
    fn removed_ranges_cover_the_comments() {
        let stripped = strip_comments("x<!-- a -->y");
        assert_eq!(stripped.removed, vec![Range { start: 1, end: 11 }]);
    }

    #[test]
    fn prompt_trim_keeps_first_line_indentation() {
        assert_eq!(trim_prompt("\n\n    code\ntext \n\n"), "    code\ntext");
    }
}
