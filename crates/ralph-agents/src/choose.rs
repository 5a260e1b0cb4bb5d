//! Which built-in adapter reads an agent, from its command line and `output:`.

use std::path::Path;

use ralph_frontmatter::OutputFormat;

use super::{
    ClaudeStreamJsonAdapter, CodexJsonAdapter, CursorStreamJsonAdapter, GeminiStreamJsonAdapter,
    OpencodeJsonAdapter, OutputAdapter, TextAdapter,
};

/// The adapter ralph uses for an agent command line, why, and words it adds to that line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputChoice {
    /// Which built-in adapter reads the output.
    pub format: OutputFormat,
    /// Appended to the agent's command line (`--output-format stream-json --verbose` for a
    /// `claude -p` that chose no format).
    pub extra_args: Vec<String>,
    /// Why this adapter, in words (`output: codex-json in RALPH.md`, `codex exec --json`).
    pub reason: String,
}

impl OutputChoice {
    /// A fresh adapter for one agent run.
    pub fn adapter(&self) -> Box<dyn OutputAdapter> {
        match self.format {
            OutputFormat::ClaudeStreamJson => Box::new(ClaudeStreamJsonAdapter::new()),
            OutputFormat::ClaudeJson => Box::new(ClaudeStreamJsonAdapter::json()),
            OutputFormat::AmpStreamJson => Box::new(ClaudeStreamJsonAdapter::amp()),
            OutputFormat::CodexJson => Box::new(CodexJsonAdapter::new()),
            OutputFormat::GeminiStreamJson => Box::new(GeminiStreamJsonAdapter::new()),
            OutputFormat::OpencodeJson => Box::new(OpencodeJsonAdapter::new()),
            OutputFormat::CursorStreamJson => Box::new(CursorStreamJsonAdapter::new()),
            _ => Box::new(TextAdapter),
        }
    }
}

/// The value of `flag` in `args` (`--flag value` or `--flag=value`), `""` when it ends the line.
fn flag_value<'a>(args: &'a [String], flags: &[&str]) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        flags.iter().find_map(|flag| {
            if a == flag {
                Some(args.get(i + 1).map_or("", String::as_str))
            } else {
                a.strip_prefix(flag)?.strip_prefix('=')
            }
        })
    })
}

/// Picks the adapter for `argv` (the agent command line, split) and the frontmatter's `output`.
///
/// `output:` wins when set (`text` turns detection off). Otherwise the agent line decides:
/// a `claude` run with `-p`/`--print` and no `--output-format` gets `--output-format
/// stream-json --verbose` (Claude Code requires `--verbose` with stream-json in print mode) and
/// the stream-json adapter, as ralphify does; an agent that asks for its own JSON format is
/// read with that format's adapter (`codex exec --json`, `gemini -o stream-json`, `opencode run
/// --format json`, `cursor-agent --output-format stream-json`, `amp --stream-json`, `claude -p
/// --output-format json`); anything else is text.
pub fn choose_output(argv: &[String], configured: Option<OutputFormat>) -> OutputChoice {
    let program = argv
        .first()
        .and_then(|program| Path::new(program).file_name())
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    let args = argv.get(1..).unwrap_or_default();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let choice = |format, extra_args: Vec<String>, reason: String| OutputChoice {
        format,
        extra_args,
        reason,
    };

    let prints = has("-p") || has("--print");
    let claude_format = flag_value(args, &["--output-format"]);
    let claude_needs_format = program == "claude" && prints && claude_format.is_none();
    let mut claude_args = Vec::new();
    if claude_needs_format {
        claude_args.extend(["--output-format".to_owned(), "stream-json".to_owned()]);
        if !has("--verbose") {
            claude_args.push("--verbose".to_owned());
        }
    }

    if let Some(format) = configured {
        let reason = format!("output: {} in RALPH.md", format.name());
        // Forcing stream-json on a `claude -p` that chose no format still needs its flags.
        let extra = if format == OutputFormat::ClaudeStreamJson {
            claude_args
        } else {
            Vec::new()
        };
        return choice(format, extra, reason);
    }
    if claude_needs_format {
        return choice(
            OutputFormat::ClaudeStreamJson,
            claude_args,
            "claude -p with no --output-format".to_owned(),
        );
    }
    let detected = match program {
        "claude" => match claude_format {
            Some("stream-json") => Some((
                OutputFormat::ClaudeStreamJson,
                "claude --output-format stream-json",
            )),
            Some("json") => Some((OutputFormat::ClaudeJson, "claude --output-format json")),
            _ => None,
        },
        "codex" if has("exec") && (has("--json") || has("--experimental-json")) => {
            Some((OutputFormat::CodexJson, "codex exec --json"))
        }
        "gemini" if flag_value(args, &["--output-format", "-o"]) == Some("stream-json") => Some((
            OutputFormat::GeminiStreamJson,
            "gemini --output-format stream-json",
        )),
        "opencode" if has("run") && flag_value(args, &["--format"]) == Some("json") => {
            Some((OutputFormat::OpencodeJson, "opencode run --format json"))
        }
        "cursor-agent" if claude_format == Some("stream-json") => Some((
            OutputFormat::CursorStreamJson,
            "cursor-agent --output-format stream-json",
        )),
        "amp" if has("--stream-json") => Some((OutputFormat::AmpStreamJson, "amp --stream-json")),
        _ => None,
    };
    match detected {
        Some((format, line)) => choice(format, Vec::new(), format!("the agent line runs {line}")),
        None => choice(
            OutputFormat::Text,
            Vec::new(),
            "no JSON output format recognised on the agent line".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(line: &str, configured: Option<OutputFormat>) -> (OutputFormat, String) {
        let c = choose_output(&shlex::split(line).unwrap(), configured);
        (c.format, c.extra_args.join(" "))
    }

    #[test]
    fn claude_in_print_mode_without_a_format_gets_stream_json() {
        use OutputFormat::{ClaudeJson, ClaudeStreamJson as Json, Text};
        let added = "--output-format stream-json --verbose".to_owned();
        let cases = [
            ("claude -p", None, (Json, added.clone())),
            (
                "/usr/local/bin/claude --print --model opus",
                None,
                (Json, added.clone()),
            ),
            (
                "claude -p --verbose",
                None,
                (Json, "--output-format stream-json".to_owned()),
            ),
            (
                "claude -p --dangerously-skip-permissions",
                Some(Json),
                (Json, added.clone()),
            ),
            // `output: text` turns detection off.
            ("claude -p", Some(Text), (Text, String::new())),
            // The user chose a format: theirs stands, read with its adapter.
            (
                "claude -p --output-format json",
                None,
                (ClaudeJson, String::new()),
            ),
            (
                "claude -p --output-format=text",
                None,
                (Text, String::new()),
            ),
            (
                "claude -p --output-format stream-json --verbose",
                None,
                (Json, String::new()),
            ),
            // Not print mode, or not claude.
            ("claude", None, (Text, String::new())),
            ("claude-wrapper -p", None, (Text, String::new())),
            ("./agent.sh -p", None, (Text, String::new())),
            ("codex exec -p", None, (Text, String::new())),
            ("./agent.sh", Some(Json), (Json, String::new())),
        ];
        for (line, configured, want) in cases {
            assert_eq!(choice(line, configured), want, "{line} with {configured:?}");
        }
        assert_eq!(choose_output(&[], None).format, Text);
    }

    #[test]
    fn each_agent_asking_for_its_json_gets_its_adapter() {
        use OutputFormat::*;
        let cases = [
            ("codex exec --json --full-auto -", CodexJson),
            ("/opt/bin/codex exec --experimental-json", CodexJson),
            ("codex exec", Text),
            ("codex --json", Text),
            (
                "gemini -p --output-format stream-json --yolo",
                GeminiStreamJson,
            ),
            ("gemini -o stream-json", GeminiStreamJson),
            ("gemini --output-format=stream-json", GeminiStreamJson),
            ("gemini -o json", Text),
            ("opencode run --format json", OpencodeJson),
            ("opencode run --format=json", OpencodeJson),
            ("opencode run", Text),
            (
                "cursor-agent -p --output-format stream-json",
                CursorStreamJson,
            ),
            ("cursor-agent -p --output-format text", Text),
            ("amp -x --stream-json", AmpStreamJson),
            ("amp -x", Text),
            ("./my-codex exec --json", Text),
        ];
        for (line, want) in cases {
            assert_eq!(choice(line, None), (want, String::new()), "{line}");
        }
        let forced = choose_output(&shlex::split("./wrapper.sh").unwrap(), Some(CodexJson));
        assert_eq!(forced.format, CodexJson);
        assert_eq!(forced.reason, "output: codex-json in RALPH.md");
        let detected = choose_output(&shlex::split("codex exec --json").unwrap(), None);
        assert_eq!(detected.reason, "the agent line runs codex exec --json");
    }
}
