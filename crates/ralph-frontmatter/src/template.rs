//! The `{{ namespace.name }}` placeholder syntax of the prompt body.

use std::ops::Range;

use crate::Placeholder;

/// A placeholder and the byte range of its whole `{{ ... }}` text.
pub(crate) struct Found<'a> {
    pub(crate) span: Range<usize>,
    pub(crate) placeholder: Placeholder<'a>,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Every placeholder in `template`, left to right, never overlapping.
pub(crate) fn scan(template: &str) -> Vec<Found<'_>> {
    let bytes = template.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = template[from..].find("{{") {
        let start = from + offset;
        match match_at(template, start) {
            Some((end, placeholder)) => {
                found.push(Found {
                    span: start..end,
                    placeholder,
                });
                from = end;
            }
            // `{{{ x.y }}}` holds a placeholder one byte later: retry from the next brace.
            None => from = start + 1,
        }
        if from >= bytes.len() {
            break;
        }
    }
    found
}

/// Matches `{{ ws* NAME . NAME ws* }}` at `start`; returns the end offset and the placeholder.
fn match_at(template: &str, start: usize) -> Option<(usize, Placeholder<'_>)> {
    let bytes = template.as_bytes();
    let mut i = start + 2;
    let skip_ws = |mut i: usize| {
        while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
            i += 1;
        }
        i
    };
    let word = |i: usize| {
        let end = i + bytes[i..].iter().take_while(|b| is_name_byte(**b)).count();
        (end > i).then_some(end)
    };
    i = skip_ws(i);
    let namespace_end = word(i)?;
    let namespace = &template[i..namespace_end];
    if bytes.get(namespace_end) != Some(&b'.') {
        return None;
    }
    let name_start = namespace_end + 1;
    let name_end = word(name_start)?;
    let name = &template[name_start..name_end];
    i = skip_ws(name_end);
    if bytes.get(i..i + 2) != Some(b"}}") {
        return None;
    }
    Some((i + 2, Placeholder { namespace, name }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(template: &str) -> Vec<(String, String)> {
        scan(template)
            .into_iter()
            .map(|f| (f.placeholder.namespace.into(), f.placeholder.name.into()))
            .collect()
    }

    #[test]
    fn spaces_inside_the_braces_are_optional() {
        assert_eq!(
            names("{{commands.a}} {{  args.b\t}}"),
            [("commands".into(), "a".into()), ("args".into(), "b".into())]
        );
    }

    #[test]
    fn names_may_hold_dashes_and_underscores() {
        assert_eq!(
            names("{{ commands.git-log }} {{ story.acceptance_criteria }}"),
            [
                ("commands".into(), "git-log".into()),
                ("story".into(), "acceptance_criteria".into())
            ]
        );
    }

    #[test]
    fn text_that_is_not_a_placeholder_is_skipped() {
        assert!(names("{{ x }} {{ a. b }} {{ a.b c }} {{a.b} {{ .b }} {{").is_empty());
    }

    #[test]
    fn extra_braces_around_a_placeholder_are_left_outside() {
        let found = scan("{{{ ralph.name }}}");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].span, 1..17);
    }
}
