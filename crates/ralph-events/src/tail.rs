//! What people are shown of a process's output: its last lines.

/// Longest line [`last_lines`] keeps whole; a longer one is cut, with `…`.
const LINE_CHARS: usize = 300;

/// The last `n` lines of a process's output as people read it: terminal escape sequences
/// removed, a lone `\r` (a progress line redrawn in place) taken as a new line, trailing
/// blank lines dropped, each line at most [`LINE_CHARS`] characters.
pub(crate) fn last_lines(text: &str, n: usize) -> Vec<String> {
    let text = ralph_marker::strip_ansi(text).replace("\r\n", "\n");
    let lines: Vec<&str> = text
        .split(['\n', '\r'])
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .skip_while(|line| line.is_empty())
        .take(n)
        .collect();
    lines
        .into_iter()
        .rev()
        .map(|line| match line.char_indices().nth(LINE_CHARS) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_are_the_last_lines_people_would_read() {
        let out = "one\ntwo\r\n\x1b[31mthree\x1b[0m  \n10%\r100%\n\n\n";
        assert_eq!(last_lines(out, 3), ["three", "10%", "100%"]);
        assert_eq!(last_lines(out, 10), ["one", "two", "three", "10%", "100%"]);
        assert!(last_lines("\n\n", 10).is_empty());
        let long = last_lines(&"é".repeat(LINE_CHARS + 5), 1);
        assert_eq!(long[0].chars().count(), LINE_CHARS + 1);
        assert!(long[0].ends_with('…'));
    }
}
