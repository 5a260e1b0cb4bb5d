//! How a command line with `{{ args.NAME }}` placeholders is run, and how each user value is
//! placed in it so that it never becomes shell code.
//!
//! Two decisions, one function each: [`has_shell_syntax`] says whether a command needs `sh -c`
//! at all (without shell syntax it is split into words and run directly, as ralphify runs every
//! command), and `placement` says, for a command that does, how a placeholder's value is quoted
//! where it stands, or that it cannot be quoted there and the file is refused at load. The
//! lexer behind both follows POSIX sh closely enough to know the quoting context of every
//! placeholder; where it cannot be sure, it refuses.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::template;

/// How a command runs, decided from its text. Exhaustive on purpose: a caller that runs
/// commands must handle every way there is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// Through `sh -c` with this script: the command has shell syntax.
    Shell(String),
    /// Directly, with these words (program first): the command has no shell syntax.
    Words(Vec<String>),
}

/// Where a `{{ args.NAME }}` cannot be quoted safely, so the command is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unquotable {
    /// Inside a here-document's body.
    HereDocument,
    /// As (part of) a here-document's delimiter.
    HereDocumentDelimiter,
    /// Inside `` `...` ``.
    Backticks,
    /// Inside a `#` comment.
    Comment,
    /// Right after a `\`.
    AfterBackslash,
    /// Right after a `$`.
    AfterDollar,
    /// Inside `${ ... }`.
    ParameterExpansion,
    /// Inside `$(( ... ))` or bash's `(( ... ))`.
    Arithmetic,
    /// After syntax the lexer does not follow (`$'...'`, `$[ ]`, `<( )`, `case` inside `$( )`,
    /// quotes inside backticks).
    Unfollowed,
}

impl Unquotable {
    /// Where the placeholder stands and what to do instead, after "`{{ args.x }}` ".
    pub fn explain(self) -> &'static str {
        match self {
            Self::HereDocument => {
                "inside a here-document cannot be quoted safely; set a variable before it \
                 (`v={{ args.NAME }}`) and write \"$v\" in the here-document"
            }
            Self::HereDocumentDelimiter => {
                "as a here-document delimiter cannot be quoted safely; write the delimiter out"
            }
            Self::Backticks => {
                "inside backticks cannot be quoted safely; use `$( ... )` instead, where it is quoted"
            }
            Self::Comment => {
                "inside a shell comment cannot be quoted safely (a newline in the value would \
                 end the comment); remove it from the comment"
            }
            Self::AfterBackslash => {
                "right after a `\\` cannot be quoted safely; remove the backslash"
            }
            Self::AfterDollar => {
                "right after a `$` cannot be quoted safely; remove the `$` or put a space after it"
            }
            Self::ParameterExpansion => {
                "inside `${ ... }` cannot be quoted safely; set a variable before it \
                 (`v={{ args.NAME }}`) and use \"$v\""
            }
            Self::Arithmetic => {
                "inside `$(( ... ))` or `(( ... ))` cannot be quoted safely; use it outside the \
                 arithmetic"
            }
            Self::Unfollowed => {
                "cannot be quoted safely after shell syntax ralph does not follow (`$'...'`, \
                 `$[ ]`, `<( )`, `>( )`, `case` inside `$( )`, quotes inside backticks); move it \
                 before that syntax or into a variable set before it"
            }
        }
    }
}

/// How one placeholder's value is written into a `sh -c` script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Outside quotes (also inside `$( )`): one single-quoted word.
    Bare,
    /// Inside `'...'`: close, escape each `'`, reopen.
    SingleQuoted,
    /// Inside `"..."`: `\`, `$`, `` ` `` and `"` backslash-escaped.
    DoubleQuoted,
    /// Nowhere safe: refused at load.
    Refused(Unquotable),
}

/// A lexer state: what the text at hand is part of.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Frame {
    /// Command text: the top level, or inside `$( ... )`. `parens` counts open `(`.
    Command {
        subst: bool,
        parens: u32,
    },
    Single,
    Double,
    Param,
    Arith {
        parens: u32,
    },
    Backticks,
    Comment,
    HereDoc {
        delimiter: String,
        strip_tabs: bool,
    },
}

/// What the lexer learnt about a command.
struct Analysis {
    /// Shell syntax outside the placeholders (operators, expansions, quotes left open, ...).
    shell_syntax: bool,
    /// Each `{{ args.NAME }}`, with its span and placement.
    args: Vec<(Range<usize>, Placement)>,
}

/// The innermost reason a placeholder in `stack` cannot be quoted, if any.
fn refusal(stack: &[Frame]) -> Option<Unquotable> {
    stack.iter().rev().find_map(|frame| match frame {
        Frame::Param => Some(Unquotable::ParameterExpansion),
        Frame::Arith { .. } => Some(Unquotable::Arithmetic),
        Frame::Backticks => Some(Unquotable::Backticks),
        Frame::Comment => Some(Unquotable::Comment),
        Frame::HereDoc { .. } => Some(Unquotable::HereDocument),
        _ => None,
    })
}

/// Where a placeholder stands, given the lexer's state just before it.
fn placement(stack: &[Frame], after: Option<Unquotable>, lost: bool) -> Placement {
    if lost {
        return Placement::Refused(Unquotable::Unfollowed);
    }
    if let Some(reason) = refusal(stack).or(after) {
        return Placement::Refused(reason);
    }
    match stack.last() {
        Some(Frame::Single) => Placement::SingleQuoted,
        Some(Frame::Double) => Placement::DoubleQuoted,
        _ => Placement::Bare,
    }
}

/// Shell keywords and the builtins that exist only inside a shell: a command starting with one
/// of these needs `sh` even without any other syntax.
const SHELL_WORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
    "case", "esac", "in", "function", "select", "[[", "]]", ".", ":", "alias", "break", "cd",
    "continue", "eval", "exec", "exit", "export", "readonly", "return", "set", "shift", "source",
    "trap", "umask", "unalias", "unset", "wait", "local", "type", "ulimit", "hash", "command",
    "jobs", "fg", "bg", "getopts", "read",
];

/// Lexes `template` as a POSIX sh script whose `{{ args.NAME }}` placeholders stand for one
/// word part each.
fn analyze(template: &str) -> Analysis {
    let bytes = template.as_bytes();
    let spans: Vec<(Range<usize>, bool)> = template::scan(template)
        .into_iter()
        .map(|f| (f.span, VALUE_NAMESPACES.contains(&f.placeholder.namespace)))
        .collect();
    // Placeholders are met in order; `upcoming` is the first not met yet.
    let mut upcoming = 0;
    let mut stack = vec![Frame::Command {
        subst: false,
        parens: 0,
    }];
    let mut args = Vec::new();
    let mut shell_syntax = false;
    let mut lost = false;
    let mut word_start = true;
    let mut line_start = false;
    // A `\` or `$` whose next character is a placeholder.
    let mut after: Option<Unquotable> = None;
    let mut pending: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        // One jumped over with an escaped character or a here-document's last line: it is
        // inside something that cannot be quoted.
        while let Some((span, is_args)) = spans.get(upcoming).filter(|(s, _)| s.start < i) {
            if *is_args {
                let reason = refusal(&stack).unwrap_or(Unquotable::HereDocumentDelimiter);
                args.push((span.clone(), Placement::Refused(reason)));
            }
            upcoming += 1;
        }
        if let Some((span, is_args)) = spans.get(upcoming).filter(|(s, _)| s.start == i) {
            if *is_args {
                args.push((span.clone(), placement(&stack, after, lost)));
            }
            upcoming += 1;
            after = None;
            i = span.end;
            word_start = false;
            line_start = false;
            continue;
        }
        let placeholder_next = spans.get(upcoming).is_some_and(|(s, _)| s.start == i + 1);
        after = None;
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        let top = stack.last_mut().expect("the top frame is never popped");
        match top {
            Frame::HereDoc {
                delimiter,
                strip_tabs,
            } => {
                if line_start {
                    line_start = false;
                    let mut start = i;
                    if *strip_tabs {
                        while bytes.get(start) == Some(&b'\t') {
                            start += 1;
                        }
                    }
                    let end = template[start..]
                        .find('\n')
                        .map_or(bytes.len(), |n| start + n);
                    if template[start..end] == **delimiter {
                        stack.pop();
                        i = end;
                        continue;
                    }
                }
                if c == b'\n' {
                    line_start = true;
                }
                i += 1;
            }
            Frame::Single => {
                if c == b'\'' {
                    stack.pop();
                }
                i += 1;
            }
            Frame::Comment => {
                if c == b'\n' {
                    // The newline ends the command line (and may start here-document bodies).
                    stack.pop();
                } else {
                    i += 1;
                }
            }
            Frame::Backticks => match c {
                b'\\' => i += 2,
                b'`' => {
                    stack.pop();
                    i += 1;
                }
                // Shells disagree on whether a quote inside backticks hides a backtick: where
                // they end is no longer certain.
                b'\'' | b'"' => {
                    lost = true;
                    i += 1;
                }
                _ => i += 1,
            },
            Frame::Double | Frame::Param | Frame::Arith { .. } => {
                let in_double = matches!(top, Frame::Double);
                match c {
                    b'\\' => {
                        shell_syntax = true;
                        if placeholder_next {
                            after = Some(Unquotable::AfterBackslash);
                            i += 1;
                        } else {
                            i += 2;
                        }
                    }
                    b'$' | b'`' => {
                        i = expansion(template, i, &mut stack, &mut after, placeholder_next);
                        shell_syntax = true;
                    }
                    b'"' if in_double => {
                        stack.pop();
                        i += 1;
                    }
                    b'}' if matches!(top, Frame::Param) => {
                        stack.pop();
                        i += 1;
                    }
                    b'\'' if matches!(top, Frame::Param) => {
                        stack.push(Frame::Single);
                        i += 1;
                    }
                    b'"' => {
                        stack.push(Frame::Double);
                        i += 1;
                    }
                    b'(' => {
                        if let Frame::Arith { parens } = top {
                            *parens += 1;
                        }
                        i += 1;
                    }
                    b')' => {
                        if let Frame::Arith { parens } = top {
                            if *parens == 0 && next == Some(b')') {
                                stack.pop();
                                i += 2;
                                continue;
                            }
                            *parens = parens.saturating_sub(1);
                        }
                        i += 1;
                    }
                    _ => i += 1,
                }
            }
            Frame::Command { subst, parens } => {
                let was_word_start = word_start;
                word_start = false;
                match c {
                    b' ' | b'\t' => {
                        word_start = true;
                        i += 1;
                    }
                    b'\n' => {
                        word_start = true;
                        if !template[i..].trim().is_empty() {
                            shell_syntax = true;
                        }
                        i += 1;
                        if !pending.is_empty() {
                            // Bodies follow in the order the `<<`s were written.
                            stack.extend(pending.drain(..).rev());
                            line_start = true;
                        }
                    }
                    b'\\' => {
                        if placeholder_next {
                            after = Some(Unquotable::AfterBackslash);
                            i += 1;
                        } else {
                            i += 2;
                        }
                    }
                    b'\'' => {
                        stack.push(Frame::Single);
                        i += 1;
                    }
                    b'"' => {
                        stack.push(Frame::Double);
                        i += 1;
                    }
                    b'#' if was_word_start => {
                        shell_syntax = true;
                        stack.push(Frame::Comment);
                        i += 1;
                    }
                    b'~' if was_word_start => {
                        shell_syntax = true;
                        i += 1;
                    }
                    // bash's ANSI-C quotes and old arithmetic `$[ ]`.
                    b'$' if matches!(next, Some(b'\'' | b'[')) => {
                        shell_syntax = true;
                        lost = true;
                        i += 1;
                    }
                    b'$' | b'`' => {
                        shell_syntax = true;
                        i = expansion(template, i, &mut stack, &mut after, placeholder_next);
                        word_start = matches!(stack.last(), Some(Frame::Command { .. }));
                    }
                    b'<' | b'>' if next == Some(b'(') => {
                        shell_syntax = true;
                        lost = true;
                        i += 1;
                    }
                    // bash's here-string: the word after it is an ordinary word.
                    b'<' if next == Some(b'<') && bytes.get(i + 2) == Some(&b'<') => {
                        shell_syntax = true;
                        word_start = true;
                        i += 3;
                    }
                    b'<' if next == Some(b'<') => {
                        shell_syntax = true;
                        i = here_document(template, i + 2, &mut pending, &mut args, &spans);
                        // Its placeholders are recorded.
                        while spans.get(upcoming).is_some_and(|(s, _)| s.start < i) {
                            upcoming += 1;
                        }
                    }
                    // bash's arithmetic command (`(( n + 1 ))`, `for ((`): its text is
                    // expanded as in double quotes, so even a '...' word runs `$( )`. In dash
                    // it is two subshells; refusing there too costs little.
                    b'(' if was_word_start && next == Some(b'(') => {
                        shell_syntax = true;
                        stack.push(Frame::Arith { parens: 0 });
                        i += 2;
                    }
                    b'(' => {
                        shell_syntax = true;
                        // bash's array assignment (`x=(a b)`): its parser recovers from an
                        // error in it (`x=((`) at the next line, so a newline in a quoted value
                        // after it would start a command. Not followed: refused after it.
                        if i > 0 && bytes[i - 1] == b'=' {
                            lost = true;
                        }
                        word_start = true;
                        *parens += 1;
                        i += 1;
                    }
                    b')' => {
                        shell_syntax = true;
                        if *subst && *parens == 0 {
                            stack.pop();
                        } else {
                            *parens = parens.saturating_sub(1);
                        }
                        i += 1;
                    }
                    b'|' | b'&' | b';' | b'<' | b'>' => {
                        shell_syntax = true;
                        word_start = true;
                        i += 1;
                    }
                    _ => {
                        // `case` patterns close parentheses they never opened: inside `$( )`
                        // the lexer would lose track of where the substitution ends.
                        if *subst && was_word_start && c == b'c' && is_word(template, i, "case") {
                            lost = true;
                        }
                        i += 1;
                    }
                }
            }
        }
    }
    for (span, is_args) in &spans[upcoming.min(spans.len())..] {
        if *is_args {
            let reason = refusal(&stack).unwrap_or(Unquotable::HereDocumentDelimiter);
            args.push((span.clone(), Placement::Refused(reason)));
        }
    }
    // A quote or substitution left open: sh reports it; the words cannot be known.
    if stack.len() > 1 || !pending.is_empty() {
        shell_syntax = true;
    }
    Analysis { shell_syntax, args }
}

/// Whether `word` stands at `i` as a whole word.
fn is_word(template: &str, i: usize, word: &str) -> bool {
    template[i..].starts_with(word)
        && template[i + word.len()..]
            .bytes()
            .next()
            .is_none_or(|b| b.is_ascii_whitespace() || b == b';')
}

/// Handles the `$` or `` ` `` at `i`: pushes the frame it opens; returns where lexing goes on.
fn expansion(
    template: &str,
    i: usize,
    stack: &mut Vec<Frame>,
    after: &mut Option<Unquotable>,
    placeholder_next: bool,
) -> usize {
    let rest = &template.as_bytes()[i..];
    if rest[0] == b'`' {
        stack.push(Frame::Backticks);
        return i + 1;
    }
    if placeholder_next {
        *after = Some(Unquotable::AfterDollar);
        return i + 1;
    }
    match rest.get(1) {
        Some(b'(') if rest.get(2) == Some(&b'(') => {
            stack.push(Frame::Arith { parens: 0 });
            i + 3
        }
        Some(b'(') => {
            stack.push(Frame::Command {
                subst: true,
                parens: 0,
            });
            i + 2
        }
        Some(b'{') => {
            stack.push(Frame::Param);
            i + 2
        }
        _ => i + 1,
    }
}

/// Reads the delimiter of the here-document whose `<<` ends before `i`, queues its body and
/// returns where lexing goes on. A placeholder in the delimiter is refused.
fn here_document(
    template: &str,
    mut i: usize,
    pending: &mut Vec<Frame>,
    args: &mut Vec<(Range<usize>, Placement)>,
    spans: &[(Range<usize>, bool)],
) -> usize {
    let bytes = template.as_bytes();
    let begin = i;
    let strip_tabs = bytes.get(i) == Some(&b'-');
    if strip_tabs {
        i += 1;
    }
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    let mut delimiter = String::new();
    let mut quote = None;
    while i < bytes.len() {
        if let Some((span, _)) = spans.iter().find(|(span, _)| span.start == i) {
            delimiter.push_str(&template[span.clone()]);
            i = span.end;
            continue;
        }
        // `i` is a char boundary below the length, so there is always one.
        let Some(c) = template[i..].chars().next() else {
            break;
        };
        match (quote, c) {
            (None, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')') => break,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            (None, '\\') => {
                i += 1;
                if let Some(escaped) = template[i..].chars().next() {
                    delimiter.push(escaped);
                    i += escaped.len_utf8();
                }
                continue;
            }
            _ => delimiter.push(c),
        }
        i += c.len_utf8();
    }
    for (span, is_args) in spans {
        if *is_args && (begin..i).contains(&span.start) {
            args.push((
                span.clone(),
                Placement::Refused(Unquotable::HereDocumentDelimiter),
            ));
        }
    }
    pending.push(Frame::HereDoc {
        delimiter,
        strip_tabs,
    });
    i
}

/// Whether `command` needs a shell: outside quotes, any of `| & ; < > ( )`, a newline followed
/// by more text, a `#` or `~` starting a word; outside single quotes, `$` or `` ` ``; a quote
/// left open; or a first word that is a shell keyword, a shell-only builtin (`cd`, `export`,
/// ...) or a variable assignment (`X=1 make`). Glob characters (`*`, `?`, `[`) are not shell
/// syntax: as in ralphify, `find . -name *.md` passes `*.md` to `find` as written.
/// `{{ args.NAME }}` placeholders count as plain word text, whatever their values.
///
/// ```
/// use ralph_frontmatter::has_shell_syntax;
/// assert!(!has_shell_syntax("find tasks -maxdepth 1 -type f -name *.md"));
/// assert!(!has_shell_syntax("grep -rn 'a | b' {{ args.dir }}"));
/// assert!(has_shell_syntax("cargo test 2>&1 | tail -50"));
/// assert!(has_shell_syntax("echo $HOME"));
/// ```
pub fn has_shell_syntax(command: &str) -> bool {
    if analyze(command).shell_syntax {
        return true;
    }
    let first = command.trim_start();
    let first = first
        .split(|c: char| c.is_ascii_whitespace())
        .next()
        .unwrap_or_default();
    let assignment = first.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    });
    assignment || SHELL_WORDS.contains(&first)
}

/// Every `{{ args.NAME }}` in `command` that cannot be quoted where it stands, with its byte
/// range. Empty for a command without shell syntax (its values are whole words, never parsed).
pub fn unquotable_args(command: &str) -> Vec<(Range<usize>, Unquotable)> {
    if !has_shell_syntax(command) {
        return Vec::new();
    }
    analyze(command)
        .args
        .into_iter()
        .filter_map(|(span, placement)| match placement {
            Placement::Refused(reason) => Some((span, reason)),
            _ => None,
        })
        .collect()
}

/// `value` written for `placement`. NUL bytes, which no shell or program argument can hold,
/// are dropped.
fn quote_for(placement: Placement, value: &str) -> String {
    let value = value.replace('\0', "");
    match placement {
        Placement::Bare | Placement::Refused(_) => format!("'{}'", value.replace('\'', "'\\''")),
        // Close the quote, add an escaped quote, reopen: '...'\''...'.
        Placement::SingleQuoted => value.replace('\'', "'\\''"),
        Placement::DoubleQuoted => {
            let mut out = String::with_capacity(value.len());
            for c in value.chars() {
                if matches!(c, '\\' | '$' | '`' | '"') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
    }
}

/// Renders a command's `run` with the user's values: each `{{ args.NAME }}` becomes `args[NAME]`
/// as literal text, never shell code. A command without shell syntax (see
/// [`has_shell_syntax`]) becomes words to run directly, each value inside one word; one with
/// shell syntax becomes a `sh -c` script with each value quoted for where it stands. A value not
/// given is nothing at all (`ls {{ args.dir }}` runs `ls`); other placeholders stay as written.
///
/// Fails with the first placeholder that cannot be quoted where it stands (validation refuses
/// such a file at load, so this only happens to a `Config` built by hand).
///
/// ```
/// use std::collections::BTreeMap;
/// use ralph_frontmatter::{CommandLine, command_line};
///
/// let args = BTreeMap::from([("dir".to_owned(), "my docs; rm -rf ~".to_owned())]);
/// assert_eq!(
///     command_line("find {{ args.dir }} -name *.md", &args).unwrap(),
///     CommandLine::Words(vec!["find".into(), "my docs; rm -rf ~".into(), "-name".into(), "*.md".into()])
/// );
/// assert_eq!(
///     command_line("ls \"{{ args.dir }}\" | wc -l", &args).unwrap(),
///     CommandLine::Shell("ls \"my docs; rm -rf ~\" | wc -l".to_owned())
/// );
/// ```
pub fn command_line(
    command: &str,
    args: &BTreeMap<String, String>,
) -> Result<CommandLine, (Range<usize>, Unquotable)> {
    command_line_with(command, |namespace, name| match namespace {
        "args" => args.get(name).map(String::as_str),
        _ => None,
    })
}

/// Namespaces whose placeholders hold outside values, placed as literal text by
/// [`command_line_with`]: the user's `{{ args.NAME }}` and a marker's `{{ state.KEY }}` (in a
/// state's hook).
pub const VALUE_NAMESPACES: &[&str] = &["args", "state"];

/// [`command_line`] with the values of every [`VALUE_NAMESPACES`] placeholder given by `value`
/// (namespace, name); `None` is a value not given. A state hook's `{{ state.KEY }}` attributes
/// are placed this way, with the same quoting as user arguments.
pub fn command_line_with<'v>(
    command: &str,
    value: impl Fn(&str, &str) -> Option<&'v str>,
) -> Result<CommandLine, (Range<usize>, Unquotable)> {
    if !has_shell_syntax(command) {
        return Ok(CommandLine::Words(words(command, &value)));
    }
    let mut out = String::with_capacity(command.len());
    let mut copied = 0;
    for (span, placement) in analyze(command).args {
        if let Placement::Refused(reason) = placement {
            return Err((span, reason));
        }
        out.push_str(&command[copied..span.start]);
        copied = span.end;
        let found = template::scan(&command[span]);
        // A value given empty is an empty word; one not given is nothing, as in ralphify.
        if let Some(given) = found
            .first()
            .and_then(|f| value(f.placeholder.namespace, f.placeholder.name))
        {
            out.push_str(&quote_for(placement, given));
        }
    }
    out.push_str(&command[copied..]);
    Ok(CommandLine::Shell(out))
}

/// Splits a command without shell syntax into words as sh would (quotes and backslashes
/// removed), each `{{ args.NAME }}` value going verbatim into the word it stands in. A word that
/// is only an unquoted placeholder whose value is not given is no word at all.
fn words<'v>(command: &str, value: &impl Fn(&str, &str) -> Option<&'v str>) -> Vec<String> {
    let spans = template::scan(command);
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < command.len() {
        if let Some(found) = spans.iter().find(|f| f.span.start == i) {
            if VALUE_NAMESPACES.contains(&found.placeholder.namespace) {
                if let Some(given) = value(found.placeholder.namespace, found.placeholder.name) {
                    word.push_str(given);
                    started = true;
                }
            } else {
                word.push_str(&command[found.span.clone()]);
                started = true;
            }
            i = found.span.end;
            continue;
        }
        // `i` is a char boundary below the length, so there is always one.
        let Some(c) = command[i..].chars().next() else {
            break;
        };
        i += c.len_utf8();
        match (quote, c) {
            (None, ' ' | '\t' | '\n') => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (Some(q), _) if q == c => quote = None,
            (None | Some('"'), '\\') => {
                let escaped = command[i..].chars().next();
                match escaped {
                    // A backslash-newline joins lines.
                    Some('\n') => i += 1,
                    // Inside "...", a backslash escapes only these; elsewhere it stays.
                    Some(e) if quote.is_none() || matches!(e, '\\' | '"' | '$' | '`') => {
                        word.push(e);
                        started = true;
                        i += e.len_utf8();
                    }
                    _ => {
                        word.push('\\');
                        started = true;
                    }
                }
            }
            _ => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests;
