//! RALPH.md: a markdown prompt with YAML frontmatter that configures a ralph loop.
//!
//! This crate owns the file format, its strict validation and the `{{ placeholder }}` template
//! syntax of the prompt body. It must never do I/O, spawn anything, read the clock or start an
//! async runtime: callers read the file and pass its text in, and get back either a [`Config`]
//! and a prompt body, or every problem of the file located by line and column. The reference for
//! users is `docs/config.md`.
//!
//! The parser knows ralph's own words only. A plug (a task source, such as story mode) brings
//! its own, a [`PlugVocabulary`]: placeholder namespace, `RUN_ENDED` reasons, reserved states and
//! a section of the frontmatter; [`parse_with`] checks a file against the plugs registered in a
//! [`Vocabulary`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_norway::{Mapping, Value};

mod args;
mod body;
mod document;
mod duration;
mod locate;
mod notify;
pub mod sandbox;
pub mod schema;
mod section;
mod shell;
mod suggest;
mod template;
mod validate;
mod vocabulary;

use locate::{Locator, Pos};

pub use args::{ArgsError, match_args, used_args};
pub use duration::{DURATION_SYNTAX, DurationError, parse_duration};
pub use notify::{
    MissingVariable, NotifyConfig, NotifyEvent, NotifyFormat, expand_env, redact_url,
};
pub use ralph_backoff::{FailurePolicy, IdlePolicy, RetryPolicy};
pub use sandbox::{AgentNeeds, Network, SandboxConfig, agent_needs};
pub use shell::{
    CommandLine, Unquotable, VALUE_NAMESPACES, command_line, command_line_with, has_shell_syntax,
    unquotable_args,
};
pub use suggest::nearest;
pub use vocabulary::{
    BUILT_IN_NAMESPACES, Names, Namespace, PlugVocabulary, SectionCheck, SectionProblem,
    Vocabulary, VocabularyError,
};

/// The field and the number of the YAML parser's error for an integer beyond 64 bits, which
/// names Rust types rather than the problem: ``idle.delay: invalid type: integer `1` as u128,
/// expected any YAML value`` (with a longer number).
fn number_too_large(message: &str) -> Option<(&str, &str)> {
    let (path, rest) = message.split_once(": invalid type: integer `")?;
    let (number, rest) = rest.split_once('`')?;
    (rest.starts_with(" as u128") || rest.starts_with(" as i128")).then_some((path, number))
}

/// A parsed, validated RALPH.md.
#[derive(Debug, Clone, PartialEq)]
pub struct RalphFile {
    /// The loop's configuration, from the frontmatter.
    pub config: Config,
    /// The prompt body: the text after the frontmatter, author comments removed.
    pub body: String,
    /// The plugs' sections (see [`PlugVocabulary::section`]), by top-level key, as written,
    /// read as JSON values.
    pub sections: BTreeMap<String, serde_json::Value>,
}

/// The frontmatter of a RALPH.md, with defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The agent command line as written.
    pub agent: String,
    /// The agent command line split into words like a shell would (no shell runs it).
    pub agent_argv: Vec<String>,
    /// Commands run at the start of every iteration, in order.
    pub commands: Vec<CommandSpec>,
    /// Names of user arguments (`ralph run PATH --name value`).
    pub args: Vec<String>,
    /// ralphify's `credit` flag; accepted and ignored.
    pub credit: Option<bool>,
    /// Stop after this many iterations.
    pub max_iterations: Option<u64>,
    /// Kill an agent run that takes longer than this.
    pub timeout: Option<Duration>,
    /// End an agent run that prints nothing for this long (zero: never), as the file says it
    /// (`idle_timeout`, or its old spelling `pty.idle_timeout`); `None` when it does not, for
    /// the default of [`default_idle_timeout`](Self::default_idle_timeout).
    pub idle_timeout: Option<Duration>,
    /// Wait between iterations.
    pub delay: Duration,
    /// Idle handling; `None` when the file has no `idle` key.
    pub idle: Option<IdlePolicy>,
    /// Shell commands that must all exit 0 for the work to count as done.
    pub done_when: Vec<String>,
    /// Attempts and backoff for `done_when`.
    pub convergence: ConvergenceConfig,
    /// States given a meaning in the file (`states`), by lowercase name.
    pub states: BTreeMap<String, StateSpec>,
    /// ralphify-fork `completion_signal`: `<promise>TEXT</promise>` in the agent's final answer
    /// counts as `<!-- ralph:state done -->`.
    pub completion_signal: Option<String>,
    /// ralphify-fork `stop_on_completion_signal`: whether the completion signal is looked for
    /// (default true).
    pub stop_on_completion_signal: bool,
    /// ralphify-fork `max_turns`: passed to `claude -p` as `--max-turns`; no effect on other
    /// agents.
    pub max_turns: Option<u64>,
    /// ralphify-fork `max_turns_grace`: accepted, no effect.
    pub max_turns_grace: Option<u64>,
    /// Escalation (stories, circuit breaker, revert); `None` when absent.
    pub escalation: Option<EscalationConfig>,
    /// Pseudo-terminal mode; `None` when absent.
    pub pty: Option<PtyConfig>,
    /// How the agent's output is read; `None` lets ralph choose from the agent command.
    pub output: Option<OutputFormat>,
    /// `output:` naming a format a plug reads ([`PlugVocabulary::outputs`]): the embedder's
    /// adapter by that name reads the agent. `output` is then `None`.
    pub output_adapter: Option<String>,
    /// Backoff after failed agent runs, and how many in a row end the loop.
    pub failure: FailurePolicy,
    /// Waits for an agent's rate limit to reset.
    pub rate_limit: RateLimitConfig,
    /// Agents run in the agent's place while it is rate-limited (`fallback`), in order.
    pub fallback: Vec<AgentLine>,
    /// How far away a rate limit's reset must be for a fallback agent to run meanwhile
    /// (`fallback_after`); a nearer one is waited for.
    pub fallback_after: Duration,
    /// Start no iteration once the agents' reported cost reached this many US dollars.
    pub max_cost: Option<f64>,
    /// Start no iteration or wait once the run has lasted this long.
    pub max_runtime: Option<Duration>,
    /// The child processes' environment.
    pub env: EnvConfig,
    /// The sandbox the agent, commands and checks run in; `None` when absent or `false`.
    pub sandbox: Option<SandboxConfig>,
    /// Messages to a person; `None` when absent.
    pub notify: Option<NotifyConfig>,
}

/// The `env` block: which of the [`schema::WITHHELD_VARIABLES`] the agent, the commands, the
/// checks and the state hooks get all the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvConfig {
    /// The withheld variables passed on, by name, as written.
    pub pass: Vec<String>,
}

impl EnvConfig {
    /// The variables a child's environment goes without: the withheld ones not passed on, of
    /// which an API address (`GITHUB_API_URL`, `GITLAB_API_URL`) only when it holds a user or
    /// password (`https://USER:TOKEN@HOST`).
    /// `var` reads ralph's environment (`std::env::var` in a program, a map in a test).
    pub fn withheld(&self, var: impl Fn(&str) -> Option<String>) -> Vec<&'static str> {
        schema::WITHHELD_VARIABLES
            .iter()
            .copied()
            .filter(|name| !self.pass.iter().any(|p| p == name))
            .filter(|&name| {
                !name.ends_with("_API_URL") || var(name).is_some_and(|v| has_userinfo(&v))
            })
            .collect()
    }
}

/// Whether the address holds a user (and maybe a password) before its host.
fn has_userinfo(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#'])
        .next()
        .is_some_and(|authority| authority.contains('@'))
}

/// An agent command line: as written, and split into words like a shell would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentLine {
    /// The command line as written.
    pub line: String,
    /// Its words (no shell runs it).
    pub argv: Vec<String>,
}

/// The `rate_limit` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// Longest wait for a rate limit's reset.
    pub max_wait: Duration,
}

impl Config {
    /// The text that counts as `done` in the agent's final answer: `completion_signal` as the
    /// shell Ralph writes it, `<promise>TEXT</promise>` (so a bare word in the agent's prose,
    /// "not COMPLETE yet", does not end the work), or as written when it holds a tag already.
    /// `None` without a signal or with `stop_on_completion_signal: false`.
    pub fn completion_text(&self) -> Option<String> {
        let signal = self
            .completion_signal
            .as_deref()
            .filter(|_| self.stop_on_completion_signal)?;
        Some(match signal.contains('<') {
            true => signal.to_owned(),
            false => format!("<promise>{signal}</promise>"),
        })
    }
}

/// One state of `states`: what an iteration ending in `<!-- ralph:state NAME -->` leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSpec {
    /// A shell command run when an iteration ends in the state; `{{ state.KEY }}` are the
    /// marker's attributes, shell-quoted.
    pub run: Option<String>,
    /// Kill the hook after this long; `None` means the engine's command timeout.
    pub timeout: Option<Duration>,
    /// What the loop does next.
    pub then: StateThen,
}

/// What the loop does after an iteration that ended in a declared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateThen {
    /// End the run with this exit code.
    Stop {
        /// ralph's exit code.
        exit_code: u8,
    },
    /// Go on with the next iteration, as without the state.
    Continue,
    /// Wait this long before the next iteration.
    Wait(Duration),
    /// Run no agent until the state's `run` exits 0, checked every `poll`; then go on with the
    /// next iteration.
    Hold {
        /// How often the check runs.
        poll: Duration,
    },
}

impl StateThen {
    /// `stop`, `continue` or `wait`, as written in the file.
    pub fn as_str(&self) -> &'static str {
        match self {
            StateThen::Stop { .. } => "stop",
            StateThen::Continue => "continue",
            StateThen::Wait(_) => "wait",
            StateThen::Hold { .. } => "hold",
        }
    }
}

/// One entry of `commands`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The name used in `{{ commands.NAME }}`.
    pub name: String,
    /// The command line: run as words, or through `sh -c` when it has shell syntax (see
    /// [`command_line`]).
    pub run: String,
    /// Kill the command after this long; `None` means the engine's default.
    pub timeout: Option<Duration>,
    /// Most bytes of its output that go into the prompt: the head and the tail are kept, the
    /// middle is cut ([`schema::DEFAULT_MAX_OUTPUT`] when the file does not say).
    pub max_output: u64,
}

/// The `convergence` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvergenceConfig {
    /// Attempts before the loop gives up.
    pub max_attempts: u64,
    /// The wait before each attempt after the first.
    pub retry: RetryPolicy,
    /// Whether the next prompt carries what failed.
    pub feedback: bool,
    /// Time limit of one `done_when` check; one running past it is stopped and fails.
    pub check_timeout: Duration,
}

impl Default for ConvergenceConfig {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            retry: RetryPolicy::default(),
            feedback: true,
            check_timeout: Duration::from_secs(10 * 60),
        }
    }
}

/// The `escalation` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscalationConfig {
    /// prd.json path; `Some` turns story mode on.
    pub prd: Option<PathBuf>,
    /// progress.txt path.
    pub progress: PathBuf,
    /// Trip after this many consecutive failures with the same error.
    pub same_error_limit: u64,
    /// Revert to the last checkpoint when the breaker trips.
    pub revert: bool,
    /// Split a story the breaker blocks into smaller ones (`ralph plan --split`), then go on.
    pub split: bool,
}

impl Default for EscalationConfig {
    /// The block's defaults, what an empty `escalation:` means: no prd.json, `progress.txt`,
    /// trip after 3 same errors, revert.
    fn default() -> Self {
        Self {
            prd: None,
            progress: PathBuf::from("progress.txt"),
            same_error_limit: 3,
            revert: true,
            split: false,
        }
    }
}

/// The `pty` block. Its `idle_timeout` is the old spelling of the top-level one
/// ([`Config::idle_timeout`]), which every agent run has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PtyConfig {
    /// Autonomous or interactive.
    pub mode: PtyMode,
}

impl PtyConfig {
    /// A `pty` block in `mode`.
    #[must_use]
    pub const fn new(mode: PtyMode) -> Self {
        Self { mode }
    }
}

impl Default for PtyConfig {
    /// An empty `pty:` block (and `--pty` without one): autonomous.
    fn default() -> Self {
        Self {
            mode: PtyMode::Autonomous,
        }
    }
}

impl Config {
    /// The variables of ralph's environment a child goes without: the `env` block's withheld
    /// ones ([`EnvConfig::withheld`]) and, with a `sandbox`, every variable that looks like a
    /// secret ([`SandboxConfig::withheld`]); a name `sandbox.env` lists is passed on. `names`
    /// are the environment's variable names and `var` reads one (`std::env` in a program, a
    /// map in a test): the parser itself reads no environment.
    pub fn withheld_variables<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        let mut withheld: Vec<String> = self
            .env
            .withheld(var)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if let Some(sandbox) = &self.sandbox {
            let agent = agent_needs(&self.agent_argv);
            for name in sandbox.withheld(agent, names) {
                if !withheld.contains(&name) {
                    withheld.push(name);
                }
            }
            withheld.retain(|name| !sandbox.env.contains(name));
        }
        withheld
    }

    /// How long an agent run may print nothing when the file does not say: the field table's
    /// `idle_timeout` (10 minutes, past the minutes an agent CLI waits on a slow model), or on
    /// a terminal (`pty`) its `pty.idle_timeout` (30 s: an interactive agent waits for input
    /// when it is done).
    #[must_use]
    pub fn default_idle_timeout(pty: bool) -> Duration {
        match pty {
            true => schema::default_duration(schema::PTY_FIELDS, "idle_timeout"),
            false => schema::default_duration(schema::FIELDS, "idle_timeout"),
        }
    }
}

/// How a PTY agent is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtyMode {
    /// No user at the keyboard: silence is a safety stop.
    Autonomous,
    /// A user drives the agent: silence ends the iteration.
    Interactive,
}

/// How the agent's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputFormat {
    /// Plain text, shown as is.
    Text,
    /// Claude Code's `--output-format stream-json`.
    ClaudeStreamJson,
    /// Claude Code's `--output-format json` (one result object).
    ClaudeJson,
    /// Codex's `codex exec --json`.
    CodexJson,
    /// Gemini CLI's `--output-format stream-json`.
    GeminiStreamJson,
    /// opencode's `opencode run --format json`.
    OpencodeJson,
    /// Cursor's `cursor-agent --output-format stream-json`.
    CursorStreamJson,
    /// Amp's `amp --stream-json` (Claude Code's stream-json events).
    AmpStreamJson,
}

impl OutputFormat {
    /// Every format, in the order of [`schema::OUTPUT_FORMATS`].
    pub const ALL: [OutputFormat; 8] = [
        OutputFormat::Text,
        OutputFormat::ClaudeStreamJson,
        OutputFormat::ClaudeJson,
        OutputFormat::CodexJson,
        OutputFormat::GeminiStreamJson,
        OutputFormat::OpencodeJson,
        OutputFormat::CursorStreamJson,
        OutputFormat::AmpStreamJson,
    ];

    /// The format's name as `output:` spells it.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Text => "text",
            OutputFormat::ClaudeStreamJson => "claude-stream-json",
            OutputFormat::ClaudeJson => "claude-json",
            OutputFormat::CodexJson => "codex-json",
            OutputFormat::GeminiStreamJson => "gemini-stream-json",
            OutputFormat::OpencodeJson => "opencode-json",
            OutputFormat::CursorStreamJson => "cursor-stream-json",
            OutputFormat::AmpStreamJson => "amp-stream-json",
        }
    }

    /// The format `output:` names `name`, if any.
    pub fn from_name(name: &str) -> Option<OutputFormat> {
        OutputFormat::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Whether `argv` runs Claude Code in print mode (`claude -p` or `--print`), the one agent ralph
/// knows the flags of.
pub fn is_claude_print(argv: &[String]) -> bool {
    let is_claude = argv
        .first()
        .and_then(|program| std::path::Path::new(program).file_name())
        .is_some_and(|name| name == "claude");
    is_claude && argv[1..].iter().any(|a| a == "-p" || a == "--print")
}

/// A problem in a RALPH.md, located in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {path}: {message}")]
pub struct ConfigError {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Field path (`idle.backoff`, `commands[1].name`), or `frontmatter` for the whole block.
    pub path: String,
    /// What was found and what is allowed.
    pub message: String,
}

/// Every error found in one file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} error(s) in {}", .errors.len(), .file)]
pub struct ConfigErrors {
    /// The file as the user named it.
    pub file: String,
    /// The errors, in file order.
    pub errors: Vec<ConfigError>,
}

/// A parsed file and its warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The file.
    pub file: RalphFile,
    /// Non-fatal problems, rendered like errors.
    pub warnings: Vec<ConfigError>,
}

/// Parses and validates a RALPH.md. `file` names it in messages.
///
/// The text may start with a UTF-8 byte order mark and use CRLF line endings. On success the
/// body has its author comments removed (ralph markers stay) and its leading blank lines and
/// trailing whitespace trimmed; placeholders that name nothing known come back as warnings. On
/// failure every problem of the file is returned at once, sorted by position.
///
/// ```
/// let text = "---\nagent: claude -p\nidle: {delay: 1m}\n---\n\nFix the next failing test.\n\
///             <!-- note to self: keep it short -->\n";
/// let parsed = ralph_frontmatter::parse("RALPH.md", text).unwrap();
/// assert_eq!(parsed.file.config.agent_argv, ["claude", "-p"]);
/// assert_eq!(parsed.file.body, "Fix the next failing test.");
/// assert_eq!(parsed.file.config.idle.unwrap().delay.as_secs(), 60);
///
/// let errors = ralph_frontmatter::parse("RALPH.md", "---\nagent: x\nidle: {backoff: fast}\n---\n")
///     .unwrap_err();
/// assert_eq!(
///     errors.errors[0].to_string(),
///     "RALPH.md:3:17: idle.backoff: expected a number >= 1.0, got \"fast\""
/// );
/// ```
pub fn parse(file: &str, text: &str) -> Result<Parsed, ConfigErrors> {
    parse_with(file, text, &Vocabulary::default())
}

/// [`parse`], with the words of the plugs in `vocabulary` too: their placeholder namespaces,
/// their sections (each checked by its plug, its problems located like any error), their
/// endings and states (which `states` cannot take). A namespace, section or ending no plug
/// registered is treated as in a plain file.
///
/// ```
/// use ralph_frontmatter::{Namespace, PlugVocabulary, Vocabulary};
///
/// let tasks = PlugVocabulary::new("checklist").namespace(Namespace::closed("task", ["item"]));
/// let vocabulary = Vocabulary::default().with(tasks).unwrap();
/// let parsed = ralph_frontmatter::parse_with("RALPH.md", "---\nagent: x\n---\n{{ tsak.item }}\n", &vocabulary)
///     .unwrap();
/// assert_eq!(
///     parsed.warnings[0].to_string(),
///     "RALPH.md:4:1: tsak.item: unknown placeholder namespace `tsak`; known: commands, args, \
///      ralph, task; did you mean `task`?"
/// );
/// ```
pub fn parse_with(file: &str, text: &str, vocabulary: &Vocabulary) -> Result<Parsed, ConfigErrors> {
    let text = document::normalize(text);
    let fail = |errors: Vec<ConfigError>| ConfigErrors {
        file: file.to_owned(),
        errors,
    };
    let located = |pos: Pos, path: &str, message: String| ConfigError {
        file: file.to_owned(),
        line: pos.line,
        column: pos.column,
        path: path.to_owned(),
        message,
    };
    let doc = document::split(&text)
        .map_err(|problem| fail(vec![located(problem.pos, "frontmatter", problem.message)]))?;

    let locator = Locator::new(doc.frontmatter, doc.frontmatter_line, document::OPENING);
    let value: Value = serde_norway::from_str(doc.frontmatter).map_err(|error| {
        // serde_norway stops at the first repeated key in file order, the locator's first (up
        // to a syntax error, as serde_norway). Should something before it fail too (a number too
        // large), the repeated key is told first.
        fail(vec![match locator.duplicates().first() {
            Some(duplicate) => located(
                duplicate.again,
                &duplicate.path.to_string(),
                format!("key written twice; first on line {}", duplicate.first.line),
            ),
            None => {
                let (pos, message) = document::yaml_error(&doc, &error);
                match number_too_large(&message) {
                    Some((path, number)) => located(
                        pos,
                        path,
                        format!("expected a number ralph can hold (64 bits), got {number}"),
                    ),
                    None => located(pos, "frontmatter", message),
                }
            }
        }])
    })?;
    let root = match value {
        Value::Mapping(mapping) => mapping,
        // `---` directly followed by `---`, or only comments: no keys at all.
        Value::Null => Mapping::new(),
        other => {
            let kind = match other {
                Value::Sequence(_) => "a list".to_owned(),
                Value::String(text) => format!("{text:?}"),
                _ => "a single value".to_owned(),
            };
            return Err(fail(vec![located(
                locator.root(),
                "frontmatter",
                format!("expected a mapping of `key: value` lines, got {kind}"),
            )]));
        }
    };

    let mut checker = validate::Checker::new(file, &locator);
    let config = validate::config(&mut checker, &root, document::OPENING, vocabulary);
    let (mut errors, config_warnings) = (checker.errors, checker.warnings);
    let sections = plug_sections(&root, vocabulary, &mut errors, |field, problem| {
        let path = field_path(&field);
        let pos = match problem.at_key {
            true => locator.key(&path),
            false => locator.value(&path),
        };
        located(pos, &field, problem.message)
    });
    errors.sort_by_key(|e| (e.line, e.column));
    let config = match config {
        Some(config) if errors.is_empty() => config,
        _ => return Err(fail(errors)),
    };

    let stripped = body::strip_comments(doc.body);
    let file_read = RalphFile {
        config,
        body: body::trim_prompt(&stripped.text),
        sections,
    };
    let mut warnings = config_warnings;
    warnings.extend(placeholder_warnings(
        file,
        &doc,
        &stripped.removed,
        &file_read,
        vocabulary,
    ));
    if let Some(offset) = stripped.unclosed {
        warnings.push(located(
            doc.body_pos(offset),
            "body",
            "this HTML comment is never closed (no `-->`), so it and all text after it stay in \
             the prompt"
                .to_owned(),
        ));
    }
    warnings.sort_by_key(|w| (w.line, w.column));
    Ok(Parsed {
        file: file_read,
        warnings,
    })
}

/// The sections of `root` some plug in `vocabulary` registered, as JSON, each handed to its
/// plug's check; every problem (JSON's, then the plug's) goes into `errors`, located by
/// `locate` from its full field path.
fn plug_sections(
    root: &Mapping,
    vocabulary: &Vocabulary,
    errors: &mut Vec<ConfigError>,
    locate: impl Fn(String, vocabulary::SectionProblem) -> ConfigError,
) -> BTreeMap<String, serde_json::Value> {
    let mut sections = BTreeMap::new();
    for key in vocabulary.section_keys() {
        let (Some(value), Some(check)) = (root.get(key), vocabulary.section_check(key)) else {
            continue;
        };
        // What JSON cannot hold is the file's error; the plug checks only what it can read.
        let (value, problems) = match section::to_json(value) {
            Ok(value) => {
                let problems = check(&value);
                (Some(value), problems)
            }
            Err(problems) => (None, problems),
        };
        for problem in problems {
            let field = match problem.field.as_str() {
                "" => key.to_owned(),
                inner if inner.starts_with('[') => format!("{key}{inner}"),
                inner => format!("{key}.{inner}"),
            };
            errors.push(locate(field, problem));
        }
        if let Some(value) = value {
            sections.insert(key.to_owned(), value);
        }
    }
    sections
}

/// An error about the value of `field` (dotted keys, such as `escalation.progress`) in the
/// RALPH.md `text` named `file`, located like the parser's own: for a problem that only the
/// caller can see, one that needs the file system (a symlink that makes two paths one file).
/// Where the value is not written, it points at the nearest field around it that is.
///
/// ```
/// let text = "---\nagent: x\nescalation:\n  progress: notes.txt\n---\n";
/// let error = ralph_frontmatter::error_at("RALPH.md", text, "escalation.progress", "is a link");
/// assert_eq!(error.to_string(), "RALPH.md:4:13: escalation.progress: is a link");
/// ```
pub fn error_at(file: &str, text: &str, field: &str, message: impl Into<String>) -> ConfigError {
    located(file, text, field, message.into(), false)
}

/// Like [`error_at`], located at the key of `field` rather than its value: for a problem with
/// a whole block or setting (`idle` is on, `escalation.revert` is on). `field` may index a
/// list: `done_when[0]`, `commands[1].run`.
///
/// ```
/// let text = "---\nagent: x\nescalation:\n  revert: true\n---\n";
/// let error = ralph_frontmatter::error_at_key("RALPH.md", text, "escalation.revert", "no git");
/// assert_eq!(error.to_string(), "RALPH.md:4:3: escalation.revert: no git");
/// ```
pub fn error_at_key(
    file: &str,
    text: &str,
    field: &str,
    message: impl Into<String>,
) -> ConfigError {
    located(file, text, field, message.into(), true)
}

fn located(file: &str, text: &str, field: &str, message: String, at_key: bool) -> ConfigError {
    let text = document::normalize(text);
    let pos = match document::split(&text) {
        Ok(doc) => {
            let locator = Locator::new(doc.frontmatter, doc.frontmatter_line, document::OPENING);
            let path = field_path(field);
            if at_key {
                locator.key(&path)
            } else {
                locator.value(&path)
            }
        }
        Err(_) => document::OPENING,
    };
    ConfigError {
        file: file.to_owned(),
        line: pos.line,
        column: pos.column,
        path: field.to_owned(),
        message,
    }
}

/// `commands[1].run` as a field path: dotted keys, each followed by any `[index]`es.
fn field_path(field: &str) -> locate::FieldPath {
    let mut path = locate::FieldPath::default();
    for part in field.split('.') {
        let (key, mut indexes) = part
            .split_once('[')
            .map_or((part, ""), |(k, rest)| (k, rest));
        path = path.key(key);
        while let Some((index, rest)) = indexes.split_once(']') {
            match index.parse() {
                Ok(index) => path = path.index(index),
                Err(_) => break,
            }
            indexes = rest.strip_prefix('[').unwrap_or("");
        }
    }
    path
}

/// The names the engine fills in under `{{ ralph.* }}`: the one list validation checks a
/// body against (a test in the engine checks that each gets a value).
pub const RALPH_PLACEHOLDERS: &[&str] = &["name", "iteration", "max_iterations", "failures"];

/// Warnings for body placeholders that name nothing the engine or a registered plug can fill
/// in.
fn placeholder_warnings(
    file: &str,
    doc: &document::Document<'_>,
    removed: &[std::ops::Range<usize>],
    ralph_file: &RalphFile,
    vocabulary: &Vocabulary,
) -> Vec<ConfigError> {
    let config = &ralph_file.config;
    let commands: Vec<&str> = config.commands.iter().map(|c| c.name.as_str()).collect();
    let args: Vec<&str> = config.args.iter().map(String::as_str).collect();
    let namespaces = vocabulary.namespace_names();
    let mut warnings = Vec::new();
    for found in template::scan(doc.body) {
        let in_comment = removed
            .iter()
            .any(|r| r.start < found.span.end && found.span.start < r.end);
        if in_comment {
            continue;
        }
        let Placeholder { namespace, name } = found.placeholder;
        let plug = vocabulary.namespaces().find(|n| n.name() == namespace);
        let message = match (namespace, plug) {
            ("commands", _) => unknown_name(
                name,
                &commands,
                "no command of that name is declared",
                "declared",
            ),
            ("args", _) => unknown_name(
                name,
                &args,
                "no argument of that name is declared in `args`",
                "declared",
            ),
            ("ralph", _) => unknown_name(
                name,
                RALPH_PLACEHOLDERS,
                "`ralph` has no such value",
                "known",
            ),
            (_, Some(plug)) => match (plug.unfilled_in(ralph_file), plug.names()) {
                (Some(otherwise), _) => Some(otherwise.to_owned()),
                (None, Names::Open) => None,
                (None, Names::Closed(known)) => {
                    let known: Vec<&str> = known.iter().map(String::as_str).collect();
                    unknown_name(
                        name,
                        &known,
                        &format!("`{namespace}` has no such value"),
                        "known",
                    )
                }
            },
            (_, None) => Some(with_suggestion(
                format!(
                    "unknown placeholder namespace `{namespace}`; known: {}",
                    namespaces.join(", ")
                ),
                suggest::nearest(namespace, &namespaces),
            )),
        };
        if let Some(message) = message {
            let pos = doc.body_pos(found.span.start);
            warnings.push(ConfigError {
                file: file.to_owned(),
                line: pos.line,
                column: pos.column,
                path: format!("{namespace}.{name}"),
                message,
            });
        }
    }
    warnings
}

/// `None` when `name` is known, else `problem` with a suggestion and the known names.
fn unknown_name(name: &str, known: &[&str], problem: &str, label: &str) -> Option<String> {
    if known.contains(&name) {
        return None;
    }
    let listed = if known.is_empty() {
        format!("none are {label}")
    } else {
        format!("{label}: {}", known.join(", "))
    };
    Some(with_suggestion(
        format!("{problem} ({listed})"),
        suggest::nearest(name, known),
    ))
}

fn with_suggestion(message: String, suggestion: Option<&str>) -> String {
    match suggestion {
        Some(suggestion) => format!("{message}; did you mean `{suggestion}`?"),
        None => message,
    }
}

/// A `{{ namespace.name }}` placeholder in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder<'a> {
    /// `commands`, `args`, `ralph`, or a plug's (`story`, ...).
    pub namespace: &'a str,
    /// The name after the dot.
    pub name: &'a str,
}

/// Replaces every `{{ namespace.name }}` in `template` in one pass. `resolve` returns the text for
/// a placeholder, or `None` to leave it as written. Inserted text is never scanned again.
///
/// Spaces inside the braces are optional; both names are made of letters, digits, `-` and `_`.
///
/// ```
/// use ralph_frontmatter::render;
///
/// let prompt = render("Tests:\n{{ commands.tests }}\nIteration {{ralph.iteration}} {{ x.y }}", |p| {
///     match (p.namespace, p.name) {
///         ("commands", "tests") => Some("ok {{ ralph.iteration }}".to_owned()),
///         ("ralph", "iteration") => Some("3".to_owned()),
///         _ => None,
///     }
/// });
/// // The inserted command output is not scanned again; the unresolved placeholder stays.
/// assert_eq!(prompt, "Tests:\nok {{ ralph.iteration }}\nIteration 3 {{ x.y }}");
/// ```
pub fn render<'t>(
    template: &'t str,
    mut resolve: impl FnMut(&Placeholder<'t>) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut copied_up_to = 0;
    for found in template::scan(template) {
        out.push_str(&template[copied_up_to..found.span.start]);
        match resolve(&found.placeholder) {
            Some(text) => out.push_str(&text),
            None => out.push_str(&template[found.span.clone()]),
        }
        copied_up_to = found.span.end;
    }
    out.push_str(&template[copied_up_to..]);
    out
}

/// Every placeholder in `template`, in order.
pub fn placeholders(template: &str) -> Vec<Placeholder<'_>> {
    template::scan(template)
        .into_iter()
        .map(|found| found.placeholder)
        .collect()
}

/// Every placeholder in `template` with the byte range of its whole `{{ ... }}` text, in order.
/// For callers that need the context around a placeholder (the engine quotes user arguments
/// differently inside and outside shell quotes).
///
/// ```
/// let spans = ralph_frontmatter::placeholder_spans("echo {{ args.dir }}");
/// assert_eq!(spans[0].0, 5..19);
/// assert_eq!(spans[0].1.name, "dir");
/// ```
pub fn placeholder_spans(template: &str) -> Vec<(std::ops::Range<usize>, Placeholder<'_>)> {
    template::scan(template)
        .into_iter()
        .map(|found| (found.span, found.placeholder))
        .collect()
}
