//! Splitting a RALPH.md into its frontmatter and its body.

use std::borrow::Cow;

use crate::locate::Pos;

/// The opening `---`: where problems with the frontmatter as a whole are reported.
pub(crate) const OPENING: Pos = Pos { line: 1, column: 1 };

/// Removes a leading byte order mark and turns CRLF (and lone CR, which YAML also counts as a line
/// break) into LF, so that line numbers agree between this crate, serde_norway and editors.
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// A RALPH.md cut in two.
pub(crate) struct Document<'a> {
    /// The YAML between the `---` lines.
    pub(crate) frontmatter: &'a str,
    /// File line of the frontmatter's first line.
    pub(crate) frontmatter_line: usize,
    /// File line of the closing `---`.
    pub(crate) closing_line: usize,
    /// Everything after the closing `---` line.
    pub(crate) body: &'a str,
    /// File line of the body's first line.
    pub(crate) body_line: usize,
    /// The whole normalized text, to measure lines.
    text: &'a str,
}

/// Why a text is not a RALPH.md at all.
pub(crate) struct Problem {
    pub(crate) pos: Pos,
    pub(crate) message: String,
}

fn is_delimiter(line: &str) -> bool {
    line.trim_end() == "---"
}

/// Finds the `---` lines. The opening one must be the first line, as in ralphify; trailing
/// whitespace after either is allowed.
pub(crate) fn split(text: &str) -> Result<Document<'_>, Problem> {
    if text.trim().is_empty() {
        return Err(Problem {
            pos: OPENING,
            message: "the file is empty; expected `---`, YAML settings (at least `agent:`), \
                      `---`, then the prompt"
                .to_owned(),
        });
    }
    let first_end = text.find('\n').unwrap_or(text.len());
    let first = &text[..first_end];
    if !is_delimiter(first) {
        return Err(Problem {
            pos: OPENING,
            message: format!(
                "expected `---` on the first line to open the YAML frontmatter, got {:?}",
                first.trim_end()
            ),
        });
    }
    let frontmatter_start = (first_end + 1).min(text.len());
    let mut offset = frontmatter_start;
    let mut line = 2;
    while offset < text.len() {
        let end = text[offset..].find('\n').map_or(text.len(), |n| offset + n);
        if is_delimiter(&text[offset..end]) {
            let body_start = (end + 1).min(text.len());
            return Ok(Document {
                frontmatter: &text[frontmatter_start..offset],
                frontmatter_line: 2,
                closing_line: line,
                body: &text[body_start..],
                body_line: line + 1,
                text,
            });
        }
        offset = end + 1;
        line += 1;
    }
    Err(Problem {
        pos: OPENING,
        message: "the frontmatter opened here is never closed; add a line holding only `---` \
                  after the YAML settings"
            .to_owned(),
    })
}

impl Document<'_> {
    /// File position of byte `offset` of the body.
    pub(crate) fn body_pos(&self, offset: usize) -> Pos {
        let before = &self.body[..offset.min(self.body.len())];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        Pos {
            line: self.body_line + before.matches('\n').count(),
            column: before[line_start..].chars().count() + 1,
        }
    }

    /// The characters on file line `line` (1-based), or 0 past the end.
    fn line_width(&self, line: usize) -> usize {
        self.text
            .split('\n')
            .nth(line.saturating_sub(1))
            .map_or(0, |text| text.chars().count())
    }
}

/// Places a YAML syntax error on the file's lines and rewrites the positions serde_norway puts in
/// its message (counted from the frontmatter's first line) as file positions.
pub(crate) fn yaml_error(doc: &Document<'_>, error: &serde_norway::Error) -> (Pos, String) {
    let shift = doc.frontmatter_line - 1;
    let message = shift_line_numbers(&error.to_string(), shift);
    let Some(location) = error.location() else {
        return (OPENING, message);
    };
    let reported_line = location.line() + shift;
    let mentioned = format!(" at line {} column {}", reported_line, location.column());
    let message = message.replacen(&mentioned, "", 1);
    // The YAML ends on the line before the closing `---`; an error "at the end" lands there.
    let line = reported_line.clamp(doc.frontmatter_line, doc.closing_line);
    let column = location.column().clamp(1, doc.line_width(line) + 1);
    (Pos { line, column }, message)
}

/// Adds `shift` to every `line N` in `message`.
fn shift_line_numbers(message: &str, shift: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (before, after) = rest.split_at(at + "line ".len());
        out.push_str(before);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match after[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + shift).to_string()),
            Err(_) => out.push_str(&after[..digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_and_crlf_are_normalized() {
        assert_eq!(
            normalize("\u{feff}---\r\na: 1\r\n---\rx"),
            "---\na: 1\n---\nx"
        );
    }

    #[test]
    fn split_finds_frontmatter_and_body_lines() {
        let doc = split("---\nagent: x\n---  \nbody\n").ok().unwrap();
        assert_eq!(doc.frontmatter, "agent: x\n");
        assert_eq!(doc.closing_line, 3);
        assert_eq!(doc.body, "body\n");
        assert_eq!(doc.body_line, 4);
        assert_eq!(doc.body_pos(2), Pos { line: 4, column: 3 });
    }

    #[test]
    fn closing_line_may_end_the_file() {
        let doc = split("---\nagent: x\n---").ok().unwrap();
        assert_eq!(doc.body, "");
    }

    #[test]
    fn missing_opening_or_closing_is_a_problem() {
        assert!(split("agent: x\n").is_err());
        assert!(split("---\nagent: x\n").is_err());
        assert!(split(" \n\n").is_err());
    }

    #[test]
    fn line_numbers_in_yaml_messages_are_shifted() {
        assert_eq!(
            shift_line_numbers(
                "did not find key at line 3 column 1, while x at line 1 column 1",
                1
            ),
            "did not find key at line 4 column 1, while x at line 2 column 1"
        );
    }
}
