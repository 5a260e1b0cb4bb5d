//! A description of every frontmatter field: its type, default, allowed values and a one-line
//! summary.
//!
//! Validation takes its key lists and allowed values from these tables, a test checks the
//! defaults against what validation fills in, and `cargo xtask schema` turns them into
//! `docs/ralph.schema.json`. One table, three users: the JSON Schema an editor checks against
//! cannot drift from what `ralph check` accepts. Plain data, so this crate stays free of I/O and
//! of a JSON dependency.

/// One key of the frontmatter or of one of its blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field {
    /// The key as written in YAML.
    pub name: &'static str,
    /// What the value may be.
    pub kind: Kind,
    /// Whether the key must be present.
    pub required: bool,
    /// The value used when the key is absent, if there is a fixed one.
    pub default: Option<DefaultValue>,
    /// A one-line summary for users (the schema's `description`).
    pub doc: &'static str,
}

/// The type of a field's value, with the bounds validation enforces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A non-empty string.
    String,
    /// A non-empty string naming a file.
    Path,
    /// A name usable in a placeholder: letters, digits, `-` and `_`.
    Name,
    /// `true` or `false`.
    Bool,
    /// An integer of at least `min`.
    Integer {
        /// The smallest allowed value.
        min: u64,
    },
    /// An integer from `min` to `max`, both included.
    IntegerRange {
        /// The smallest allowed value.
        min: u64,
        /// The largest allowed value.
        max: u64,
    },
    /// A finite number of at least `min`.
    Number {
        /// The smallest allowed value.
        min: f64,
    },
    /// A size in bytes: an integer, or a string with a unit (`64KiB`, `1MB`).
    ByteSize {
        /// The smallest allowed value.
        min: u64,
    },
    /// A humantime string (`30s`, `1h 30m`) or a bare number of seconds.
    Duration {
        /// Whether zero is rejected.
        positive: bool,
    },
    /// One of a fixed set of strings.
    Choice(&'static [&'static str]),
    /// A list of values of one kind.
    List {
        /// The kind of each item.
        item: &'static Kind,
        /// Whether items must be distinct.
        unique: bool,
    },
    /// One value of this kind, or a list of them (`notify.webhook`).
    OneOrList(&'static Kind),
    /// A list of mappings with these keys (`commands`).
    Table(&'static [Field]),
    /// A mapping with these keys; written with no value, it means "on, with the defaults".
    Block(&'static [Field]),
    /// `true` (on, with the defaults), `false` (off), or a mapping with these keys (`sandbox`).
    Switch(&'static [Field]),
    /// One of a fixed set of strings, or a list of values of one kind (`sandbox.network`).
    ChoiceOrList {
        /// The strings allowed alone.
        choices: &'static [&'static str],
        /// The kind of each item of a list.
        item: &'static Kind,
    },
    /// A mapping from names the user picks (matching `pattern`, none of `reserved`) to blocks
    /// with these keys (`states`).
    Map {
        /// A regular expression every name matches.
        pattern: &'static str,
        /// Names that cannot be used.
        reserved: &'static [&'static str],
        /// The keys of each entry.
        fields: &'static [Field],
    },
}

/// A field's default value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Integer(u64),
    /// A number.
    Number(f64),
    /// A size in bytes.
    Bytes(u64),
    /// A duration in humantime syntax.
    Duration(&'static str),
    /// A string (a path).
    Text(&'static str),
    /// One of a [`Kind::Choice`]'s values.
    Choice(&'static str),
    /// The empty list.
    EmptyList,
}

/// The values of `pty.mode`.
pub const PTY_MODES: &[&str] = &["autonomous", "interactive"];
/// The values of `output`.
pub const OUTPUT_FORMATS: &[&str] = &[
    "text",
    "claude-stream-json",
    "claude-json",
    "codex-json",
    "gemini-stream-json",
    "opencode-json",
    "cursor-stream-json",
    "amp-stream-json",
];

/// The values of `states.NAME.then`.
pub const STATE_THEN: &[&str] = &["stop", "continue", "wait", "hold"];
/// States with a built-in meaning, which `states` cannot redefine.
pub const BUILT_IN_STATES: &[&str] = &["idle", "done", "blocked"];
/// The reasons `RUN_ENDED` gives for the engine's own endings. A declared state that stops
/// gives its name as the reason, so `states` cannot take one of these: its stop would read as
/// that ending. A plug's endings (story mode's `stories_done`, ...) are its own words,
/// registered with [`PlugVocabulary::end_reasons`](crate::PlugVocabulary::end_reasons). This
/// crate sits below the engine, which tests that its reasons are listed here.
pub const BUILT_IN_END_REASONS: &[&str] = &[
    "max_iterations",
    "idle_limit",
    "interrupted",
    "cancelled",
    "agent_failed",
    "agent_failing",
    "agent_done",
    "converged",
    "max_attempts_reached",
    "pty_idle_timeout",
    "max_cost",
    "max_runtime",
];
/// The words `ralph runs`, `ralph status` and a resumed run's `previous_reason` use for a run
/// without an ending of its own: `killed` (it ended without a word), `running` (it still runs).
/// A declared state that stops gives its name as the reason, so `states` cannot take these
/// either: its stop would read as a killed or a running run.
pub const RUN_STATUS_WORDS: &[&str] = &["killed", "running"];
/// Names `states` cannot declare: [`BUILT_IN_STATES`], [`BUILT_IN_END_REASONS`], then
/// [`RUN_STATUS_WORDS`].
pub const RESERVED_STATE_NAMES: &[&str] =
    &concat::<{ BUILT_IN_STATES.len() + BUILT_IN_END_REASONS.len() + RUN_STATUS_WORDS.len() }>(&[
        BUILT_IN_STATES,
        BUILT_IN_END_REASONS,
        RUN_STATUS_WORDS,
    ]);

/// `lists` one after the other, for one list made of several at compile time.
const fn concat<const N: usize>(lists: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    let mut list = 0;
    while list < lists.len() {
        let mut j = 0;
        while j < lists[list].len() {
            out[i] = lists[list][j];
            i += 1;
            j += 1;
        }
        list += 1;
    }
    out
}
/// What a declared state's name looks like: a marker name as the agent's marker is read
/// (lowercase).
pub const STATE_NAME_PATTERN: &str = "^[a-z][a-z0-9_-]*$";

/// Top-level keys of ralphify's RALPH.md that ralph accepts, ignores and warns about. ralphify
/// ignores every key it does not use, and its named ralphs were documented with `description:`
/// and `enabled:`; rejecting them would break files that must run unchanged. They are not
/// [`FIELDS`]: ralph gives them no meaning; the JSON Schema allows them, marked deprecated.
pub const IGNORED_RALPHIFY_KEYS: &[&str] = &["description", "enabled"];

/// What one command contributes to the prompt at most, when its `max_output` is not set: 64 KiB.
/// The one home of this default; validation fills it in and the JSON Schema shows it.
pub const DEFAULT_MAX_OUTPUT: u64 = 64 * 1024;

/// A command's (and a state hook's) time limit when it sets no `timeout`, as the field table
/// writes it; [`default_command_timeout`] is the same as a `Duration`.
pub const DEFAULT_COMMAND_TIMEOUT: &str = "60s";

/// [`DEFAULT_COMMAND_TIMEOUT`] as a `Duration`: the time limit the engine gives a command or a
/// state hook that sets no `timeout` (an embedder may change it in its options).
pub fn default_command_timeout() -> std::time::Duration {
    default_duration(COMMAND_FIELDS, "timeout")
}

/// The keys of one `commands` entry.
pub const COMMAND_FIELDS: &[Field] = &[
    required(
        "name",
        Kind::Name,
        "The name used in `{{ commands.NAME }}`; unique.",
    ),
    required(
        "run",
        Kind::String,
        "The command: split into words and run directly, or through `sh -c` when it has shell \
             syntax (pipes, redirections, `$`, ...; see docs/config.md).",
    ),
    optional(
        "timeout",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration(DEFAULT_COMMAND_TIMEOUT)),
        "Kill the command (its whole process group) after this long.",
    ),
    optional(
        "max_output",
        Kind::ByteSize { min: 1 },
        Some(DefaultValue::Bytes(DEFAULT_MAX_OUTPUT)),
        "Most of the command's output that goes into the prompt (`64KiB`, `1MB` or bytes): \
         the head and the tail are kept, the middle is cut with a note saying how much.",
    ),
];

/// The keys of the `idle` block.
pub const IDLE_FIELDS: &[Field] = &[
    optional(
        "delay",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration("30s")),
        "Wait after the first idle iteration.",
    ),
    optional(
        "backoff",
        Kind::Number { min: 1.0 },
        Some(DefaultValue::Number(2.0)),
        "Multiplier for each further idle iteration.",
    ),
    optional(
        "max_delay",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration("5m")),
        "Cap on one wait; raised to `delay` when `delay` is longer; must be >= `delay`.",
    ),
    optional(
        "max",
        Kind::Duration { positive: true },
        None,
        "Stop the loop once a streak of idle time would pass this.",
    ),
];

/// The keys of the `convergence` block.
pub const CONVERGENCE_FIELDS: &[Field] = &[
    optional(
        "max_attempts",
        Kind::Integer { min: 1 },
        Some(DefaultValue::Integer(6)),
        "Attempts before the loop gives up.",
    ),
    optional(
        "backoff",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration("1s")),
        "Base of the retry wait: attempt N (from 2) waits `backoff` x 2^(N-1), so 2s, 4s, 8s... with 1s.",
    ),
    optional(
        "max_backoff",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration("1m")),
        "Cap on one retry wait; must be >= `backoff`.",
    ),
    optional(
        "feedback",
        Kind::Bool,
        Some(DefaultValue::Bool(true)),
        "Whether the next prompt carries what failed.",
    ),
    optional(
        "check_timeout",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration("10m")),
        "Time limit of one `done_when` check; one running past it is stopped (its process group killed) and fails.",
    ),
];

/// The keys of the `escalation` block.
pub const ESCALATION_FIELDS: &[Field] = &[
    optional(
        "prd",
        Kind::Path,
        None,
        "A prd.json path; turns story mode on.",
    ),
    optional(
        "progress",
        Kind::Path,
        Some(DefaultValue::Text("progress.txt")),
        "The progress file.",
    ),
    optional(
        "same_error_limit",
        Kind::Integer { min: 1 },
        Some(DefaultValue::Integer(3)),
        "Trip after this many consecutive failures with the same error.",
    ),
    optional(
        "revert",
        Kind::Bool,
        Some(DefaultValue::Bool(true)),
        "Revert to the last checkpoint when the breaker trips.",
    ),
    optional(
        "split",
        Kind::Bool,
        Some(DefaultValue::Bool(false)),
        "Split a story the breaker blocks into smaller ones (`ralph plan --split`), then go on \
         (prd.json lists; see docs/plan.md).",
    ),
];

/// The keys of one entry of `states`.
pub const STATE_FIELDS: &[Field] = &[
    optional(
        "run",
        Kind::String,
        None,
        "A shell command run (like `commands`) when an iteration ends in the state; \
         `{{ state.KEY }}` are the marker's attributes, shell-quoted.",
    ),
    optional(
        "timeout",
        Kind::Duration { positive: true },
        None,
        "With `run`: kill the hook after this long (by default a command's `timeout`).",
    ),
    optional(
        "then",
        Kind::Choice(STATE_THEN),
        Some(DefaultValue::Choice("continue")),
        "What the loop does next: `stop` the run, `continue`, `wait`, or `hold` (run no agent \
         until `run` succeeds, checked every `poll`).",
    ),
    optional(
        "wait",
        Kind::Duration { positive: true },
        None,
        "With `then: wait` (and required by it): how long to wait.",
    ),
    optional(
        "poll",
        Kind::Duration { positive: true },
        None,
        "With `then: hold` (and required by it): how often `run` checks whether to go on.",
    ),
    optional(
        "exit_code",
        Kind::IntegerRange { min: 0, max: 255 },
        Some(DefaultValue::Integer(0)),
        "With `then: stop`: ralph's exit code.",
    ),
];

/// The keys of the `pty` block.
pub const PTY_FIELDS: &[Field] = &[
    optional(
        "mode",
        Kind::Choice(PTY_MODES),
        Some(DefaultValue::Choice("autonomous")),
        "`autonomous`: silence is a safety stop; `interactive`: silence ends the iteration.",
    ),
    optional(
        "idle_timeout",
        Kind::Duration { positive: false },
        Some(DefaultValue::Duration("30s")),
        "Old spelling of the top-level `idle_timeout`; on a terminal its default is this one.",
    ),
];

/// The events `notify.on` may name.
pub const NOTIFY_EVENTS: &[&str] = &["ended", "blocked", "asked", "rate_limited", "budget"];

/// The events notified when `notify.on` is absent.
pub const DEFAULT_NOTIFY_EVENTS: &[&str] = &["ended", "blocked", "asked"];

/// The values of `notify.format`.
pub const NOTIFY_FORMATS: &[&str] = &["json", "slack", "discord", "ntfy"];

/// The keys of the `notify` block.
pub const NOTIFY_FIELDS: &[Field] = &[
    optional(
        "on",
        Kind::List {
            item: &Kind::Choice(NOTIFY_EVENTS),
            unique: true,
        },
        None,
        "The events that send a message; `ended`, `blocked` and `asked` when absent.",
    ),
    optional(
        "webhook",
        Kind::OneOrList(&Kind::String),
        None,
        "An http(s) URL, or a list of them, each sent a JSON POST; `${VAR}` is expanded.",
    ),
    optional(
        "format",
        Kind::Choice(NOTIFY_FORMATS),
        Some(DefaultValue::Choice("json")),
        "The webhook's payload: `json` (the event and a `message`), `slack`, `discord` or `ntfy`.",
    ),
    optional(
        "command",
        Kind::String,
        None,
        "A command run with each message (`{{ message }}`, shell-quoted); `${VAR}` is expanded.",
    ),
];

/// The keys of the `failure` block (#17: failing agents back off).
pub const FAILURE_FIELDS: &[Field] = &[
    optional(
        "delay",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration("5s")),
        "Wait after the first failed run of a streak.",
    ),
    optional(
        "backoff",
        Kind::Number { min: 1.0 },
        Some(DefaultValue::Number(2.0)),
        "Multiplier for each further consecutive failure.",
    ),
    optional(
        "max_delay",
        Kind::Duration { positive: true },
        Some(DefaultValue::Duration("5m")),
        "Cap on one wait; raised to `delay` when `delay` is longer; must be >= `delay`.",
    ),
    optional(
        "max_consecutive",
        Kind::Integer { min: 1 },
        Some(DefaultValue::Integer(10)),
        "End the loop (`agent_failing`, exit 1) after this many failed runs in a row.",
    ),
];

/// The keys of the `rate_limit` block.
pub const RATE_LIMIT_FIELDS: &[Field] = &[optional(
    "max_wait",
    Kind::Duration { positive: true },
    Some(DefaultValue::Duration("6h")),
    "Longest wait for a rate limit's reset; a later reset time is waited for this long.",
)];

/// The variables of ralph's environment that no agent, command, check or hook gets unless
/// `env.pass` names them: the forges' tokens and Linear's API key (what the task lists read and
/// write with; an agent's prompt may be issue text anyone can write), and an API address
/// (`GITHUB_API_URL`, `GITLAB_API_URL`) when it holds a user or password.
pub const WITHHELD_VARIABLES: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_API_URL",
    "GITLAB_TOKEN",
    "GITLAB_API_URL",
    "LINEAR_API_KEY",
];

/// The keys of the `env` block.
pub const ENV_FIELDS: &[Field] = &[optional(
    "pass",
    Kind::List {
        item: &Kind::Choice(WITHHELD_VARIABLES),
        unique: true,
    },
    Some(DefaultValue::EmptyList),
    "Withheld variables the agent, commands, checks and hooks get all the same, by name.",
)];

/// The words `sandbox.network` takes instead of a list of hosts.
pub const SANDBOX_NETWORK_WORDS: &[&str] = &["none", "all"];

/// The keys of the `sandbox` block.
pub const SANDBOX_FIELDS: &[Field] = &[
    optional(
        "network",
        Kind::ChoiceOrList {
            choices: SANDBOX_NETWORK_WORDS,
            item: &Kind::String,
        },
        Some(DefaultValue::EmptyList),
        "Hosts (`host` or `host:port`) reachable beyond the built-in agent's own, through \
         ralph's proxy; `none` for no connection, `all` for no confinement of the network.",
    ),
    optional(
        "write",
        Kind::List {
            item: &Kind::Path,
            unique: true,
        },
        Some(DefaultValue::EmptyList),
        "Paths writable beyond the loop's folder (or lane's worktree) and a private \
         temporary folder; `~/` is the home folder.",
    ),
    optional(
        "deny_read",
        Kind::List {
            item: &Kind::Path,
            unique: true,
        },
        Some(DefaultValue::EmptyList),
        "Paths unreadable beyond the default secret paths (`~/.ssh`, `~/.aws`, ...).",
    ),
    optional(
        "env",
        Kind::List {
            item: &Kind::String,
            unique: true,
        },
        Some(DefaultValue::EmptyList),
        "Variables passed on although they look like secrets (`*_TOKEN`, `*_KEY`, ...).",
    ),
    optional(
        "best_effort",
        Kind::Bool,
        Some(DefaultValue::Bool(false)),
        "Run with what the kernel enforces instead of refusing to start without Landlock or \
         its network rules.",
    ),
];

/// The top-level keys of the frontmatter.
pub const FIELDS: &[Field] = &[
    required(
        "agent",
        Kind::String,
        "The agent's command line, split like a shell would; `{prompt_file}` or `{prompt}` \
         place the prompt, else it goes to stdin.",
    ),
    optional(
        "commands",
        Kind::Table(COMMAND_FIELDS),
        Some(DefaultValue::EmptyList),
        "Commands run at the start of every iteration; their output fills \
         `{{ commands.NAME }}`.",
    ),
    optional(
        "args",
        Kind::List {
            item: &Kind::Name,
            unique: true,
        },
        Some(DefaultValue::EmptyList),
        "Names of user arguments, in positional order; each fills `{{ args.NAME }}`.",
    ),
    optional(
        "credit",
        Kind::Bool,
        None,
        "Accepted for ralphify compatibility.",
    ),
    optional(
        "max_iterations",
        Kind::Integer { min: 1 },
        None,
        "Stop after this many iterations (unlimited when absent).",
    ),
    optional(
        "timeout",
        Kind::Duration { positive: true },
        None,
        "Kill an agent run that takes longer.",
    ),
    optional(
        "idle_timeout",
        Kind::Duration { positive: false },
        Some(DefaultValue::Duration("10m")),
        "End an agent run that prints nothing for this long (0: never); \
         30s on a terminal (`pty`) unless set.",
    ),
    optional(
        "delay",
        Kind::Duration { positive: false },
        Some(DefaultValue::Duration("0s")),
        "Wait between iterations.",
    ),
    optional(
        "idle",
        Kind::Block(IDLE_FIELDS),
        None,
        "Backoff when the agent reports `<!-- ralph:state idle -->`; off when absent.",
    ),
    optional(
        "done_when",
        Kind::List {
            item: &Kind::String,
            unique: false,
        },
        Some(DefaultValue::EmptyList),
        "Shell commands that must all exit 0 for the work to count as done.",
    ),
    optional(
        "convergence",
        Kind::Block(CONVERGENCE_FIELDS),
        None,
        "Attempts and backoff for `done_when`; always on.",
    ),
    optional(
        "states",
        Kind::Map {
            pattern: STATE_NAME_PATTERN,
            reserved: RESERVED_STATE_NAMES,
            fields: STATE_FIELDS,
        },
        None,
        "States the agent can report (`<!-- ralph:state NAME key=\"value\" -->`) and what each \
         does: a hook, then stop, continue or wait.",
    ),
    optional(
        "completion_signal",
        Kind::String,
        None,
        "ralphify: `<promise>TEXT</promise>` in the agent's final answer counts as \
         `<!-- ralph:state done -->`.",
    ),
    optional(
        "stop_on_completion_signal",
        Kind::Bool,
        Some(DefaultValue::Bool(true)),
        "ralphify: whether `completion_signal` is looked for; `false` ignores it.",
    ),
    optional(
        "max_turns",
        Kind::Integer { min: 1 },
        None,
        "ralphify: passed to `claude -p` as `--max-turns`; no effect (a warning) for other agents.",
    ),
    optional(
        "max_turns_grace",
        Kind::Integer { min: 0 },
        None,
        "ralphify: accepted; has no effect (a warning).",
    ),
    optional(
        "escalation",
        Kind::Block(ESCALATION_FIELDS),
        None,
        "Stories, circuit breaker and revert; off when absent.",
    ),
    optional(
        "pty",
        Kind::Block(PTY_FIELDS),
        None,
        "Run the agent in a pseudo-terminal; off when absent.",
    ),
    optional(
        "output",
        Kind::Choice(OUTPUT_FORMATS),
        None,
        "How the agent's output is read; chosen from the agent command when absent.",
    ),
    optional(
        "failure",
        Kind::Block(FAILURE_FIELDS),
        None,
        "Backoff after failed agent runs, and how many in a row end the loop; always on.",
    ),
    optional(
        "rate_limit",
        Kind::Block(RATE_LIMIT_FIELDS),
        None,
        "Waits for an agent's rate limit to reset; always on.",
    ),
    optional(
        "fallback",
        Kind::List {
            item: &Kind::String,
            unique: true,
        },
        Some(DefaultValue::EmptyList),
        "Agents run in the agent's place, the first one not rate-limited, while the agent is \
         rate-limited with a reset further than `fallback_after` away; each a command line.",
    ),
    optional(
        "fallback_after",
        Kind::Duration { positive: false },
        Some(DefaultValue::Duration("10m")),
        "How far away a rate limit's reset must be for a `fallback` agent to run meanwhile; a \
         nearer reset is waited for.",
    ),
    optional(
        "max_cost",
        Kind::Number { min: 0.0 },
        None,
        "Start no iteration once the agents' reported cost reached this many US dollars.",
    ),
    optional(
        "max_runtime",
        Kind::Duration { positive: true },
        None,
        "Start no iteration or wait after the run has lasted this long; a wait is cut short.",
    ),
    optional(
        "env",
        Kind::Block(ENV_FIELDS),
        None,
        "The child processes' environment: ralph's own, less GitHub tokens unless passed on.",
    ),
    optional(
        "sandbox",
        Kind::Switch(SANDBOX_FIELDS),
        None,
        "Confine the agent, commands and checks (Linux, Landlock): writes only in the loop's \
         folder, no secret read, only listed hosts reached; `true` for every default.",
    ),
    optional(
        "notify",
        Kind::Block(NOTIFY_FIELDS),
        None,
        "Messages to a person (webhooks, a command) when a run ends, is blocked or asks; off \
         when absent.",
    ),
];

const fn required(name: &'static str, kind: Kind, doc: &'static str) -> Field {
    Field {
        name,
        kind,
        required: true,
        default: None,
        doc,
    }
}

const fn optional(
    name: &'static str,
    kind: Kind,
    default: Option<DefaultValue>,
    doc: &'static str,
) -> Field {
    Field {
        name,
        kind,
        required: false,
        default,
        doc,
    }
}

/// The keys of `fields`, in table order.
pub fn names(fields: &[Field]) -> Vec<&'static str> {
    fields.iter().map(|f| f.name).collect()
}

/// The fields of the block or table `name` at the top level.
pub(crate) fn nested(name: &str) -> &'static [Field] {
    match FIELDS.iter().find(|f| f.name == name).map(|f| f.kind) {
        Some(
            Kind::Block(fields)
            | Kind::Switch(fields)
            | Kind::Table(fields)
            | Kind::Map { fields, .. },
        ) => fields,
        _ => &[],
    }
}

/// The default of duration field `name` in `fields`; zero when it has none (a test checks that
/// every duration default parses). Validation reads defaults from here, so each is written once.
pub(crate) fn default_duration(fields: &[Field], name: &str) -> std::time::Duration {
    match fields
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| f.default)
    {
        Some(DefaultValue::Duration(text)) => humantime::parse_duration(text).unwrap_or_default(),
        _ => std::time::Duration::ZERO,
    }
}

/// The default of number field `name` in `fields`; 1.0 when it has none.
pub(crate) fn default_number(fields: &[Field], name: &str) -> f64 {
    match fields
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| f.default)
    {
        Some(DefaultValue::Number(n)) => n,
        _ => 1.0,
    }
}

/// The default of integer field `name` in `fields`; 1 when it has none.
pub(crate) fn default_integer(fields: &[Field], name: &str) -> u64 {
    match fields
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| f.default)
    {
        Some(DefaultValue::Integer(n)) => n,
        _ => 1,
    }
}

#[cfg(test)]
mod tests;
