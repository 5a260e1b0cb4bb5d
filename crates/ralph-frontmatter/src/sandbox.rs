//! The `sandbox` section as the loop reads it: what the agent, its commands and checks may
//! write, read, reach and see. The defaults (secret paths, secret variable patterns, each
//! built-in agent's own key, host and folders) are written here once; `ralph-sandbox` enforces
//! them, and the environment's part is applied where the `env` block's is
//! ([`SandboxConfig::withheld`]).

/// Paths under the home folder no sandboxed process reads (nor lists): where people keep
/// keys, cloud and registry credentials. `deny_read` adds to them.
pub const SECRET_PATHS: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials.toml",
    "~/.cargo/credentials",
    "~/.password-store",
];

/// Variables withheld by name (upper case) in the sandbox: an SSH or GPG agent signs for
/// whoever reaches its socket.
pub const SECRET_VARIABLES: &[&str] = &["SSH_AUTH_SOCK", "GPG_AGENT_INFO", "MYSQL_PWD"];

/// Variable name patterns (upper case, `*` for any run of characters) withheld in the sandbox
/// unless `sandbox.env` lists the name.
pub const SECRET_PATTERNS: &[&str] = &[
    "*_TOKEN",
    "*_SECRET",
    "*SECRET_*",
    "*_KEY",
    "*PASSWORD*",
    "*_PASSWD",
    "*_CREDENTIALS",
];

/// The built-in agents' needs, allowed by default: each one's API key variables, model hosts
/// and own files.
pub const AGENTS: &[AgentNeeds] = &[
    AgentNeeds {
        program: "claude",
        keys: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ],
        hosts: &["api.anthropic.com"],
        writes: &["~/.claude/", "~/.claude.json"],
    },
    AgentNeeds {
        program: "codex",
        keys: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        hosts: &["api.openai.com", "chatgpt.com"],
        writes: &["~/.codex/"],
    },
    AgentNeeds {
        program: "gemini",
        keys: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        hosts: &["generativelanguage.googleapis.com"],
        writes: &["~/.gemini/"],
    },
    AgentNeeds {
        program: "opencode",
        keys: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_API_KEY"],
        hosts: &["api.anthropic.com", "api.openai.com", "opencode.ai"],
        writes: &[
            "~/.local/share/opencode/",
            "~/.config/opencode/",
            "~/.cache/opencode/",
        ],
    },
    AgentNeeds {
        program: "cursor-agent",
        keys: &["CURSOR_API_KEY"],
        hosts: &["api2.cursor.sh"],
        writes: &["~/.cursor/"],
    },
    AgentNeeds {
        program: "amp",
        keys: &["AMP_API_KEY"],
        hosts: &["ampcode.com"],
        writes: &["~/.config/amp/", "~/.local/share/amp/", "~/.cache/amp/"],
    },
];

/// Where the sandboxed processes may connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// The built-in agent's own model host and these hosts (`host` for any port, `host:port`
    /// for one), through ralph's proxy; nothing else.
    Listed(Vec<String>),
    /// No connection at all (`network: none`).
    None,
    /// Any connection: the network is not confined (`network: all`).
    All,
}

impl Default for Network {
    fn default() -> Self {
        Self::Listed(Vec::new())
    }
}

/// The `sandbox` section (`sandbox: true` for every default).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    /// Where the processes may connect.
    pub network: Network,
    /// Paths writable beyond the loop's folder and the private temporary folder, as written
    /// (`~/` is the home folder).
    pub write: Vec<String>,
    /// Paths unreadable beyond [`SECRET_PATHS`], as written.
    pub deny_read: Vec<String>,
    /// Variables passed on beyond the defaults: a withheld name listed here reaches the
    /// processes.
    pub env: Vec<String>,
    /// Run with what the kernel offers when it lacks Landlock or its network rules, saying
    /// what is not enforced, instead of refusing to start.
    pub best_effort: bool,
}

/// What a built-in agent needs inside the sandbox, allowed by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentNeeds {
    /// The agent's program name (its command line's first word, without folders).
    pub program: &'static str,
    /// Its API key variables.
    pub keys: &'static [&'static str],
    /// Its model hosts.
    pub hosts: &'static [&'static str],
    /// Its own files under the home folder (`~/`), which it writes as it runs; a folder ends
    /// with `/`, and is made when missing (the agent would make it, in a home it cannot write).
    pub writes: &'static [&'static str],
}

impl SandboxConfig {
    /// The variables of ralph's environment (`names`) the processes go without because the
    /// sandbox withholds them: those matching [`SECRET_PATTERNS`] or
    /// named in [`SECRET_VARIABLES`], unless listed in `env` or the
    /// built-in agent's own key (`agent`, from [`agent_needs`]). ralph's own `RALPH_`
    /// variables are never withheld.
    pub fn withheld<'a>(
        &self,
        agent: Option<&AgentNeeds>,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Vec<String> {
        names
            .into_iter()
            .filter(|name| is_secret_name(name))
            .filter(|name| !self.env.iter().any(|passed| passed == name))
            .filter(|name| !agent.is_some_and(|agent| agent.keys.contains(name)))
            .map(str::to_owned)
            .collect()
    }
}

/// Whether variable `name` holds a secret by the documented patterns.
pub fn is_secret_name(name: &str) -> bool {
    if name.starts_with("RALPH_") {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    SECRET_VARIABLES.contains(&upper.as_str())
        || SECRET_PATTERNS
            .iter()
            .any(|pattern| glob_matches(pattern, &upper))
}

/// `*` in `pattern` matches any run of characters; nothing else is special.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().unwrap_or((&"", &[]));
    let Some(mut left) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

/// What the built-in agent `argv` names needs in the sandbox; `None` for any other program.
pub fn agent_needs(argv: &[String]) -> Option<&'static AgentNeeds> {
    let program = std::path::Path::new(argv.first()?).file_name()?.to_str()?;
    AGENTS.iter().find(|agent| agent.program == program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_follow_the_documented_patterns() {
        for name in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "ANTHROPIC_API_KEY",
            "DB_PASSWORD",
            "MYSQL_PWD",
            "NPM_TOKEN",
            "STRIPE_SECRET",
            "SSH_AUTH_SOCK",
            "my_password_here",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "RALPH_RUN_TOKEN",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn the_agents_own_key_and_listed_names_are_passed_on() {
        let config = SandboxConfig {
            env: vec!["NPM_TOKEN".to_owned()],
            ..SandboxConfig::default()
        };
        let claude = agent_needs(&["/usr/bin/claude".to_owned()]);
        let names = [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "NPM_TOKEN",
            "GITHUB_TOKEN",
            "PATH",
        ];
        assert_eq!(
            config.withheld(claude, names),
            ["OPENAI_API_KEY", "GITHUB_TOKEN"]
        );
        let codex = agent_needs(&["codex".to_owned(), "exec".to_owned()]);
        assert_eq!(
            config.withheld(codex, names),
            ["ANTHROPIC_API_KEY", "GITHUB_TOKEN"]
        );
        assert_eq!(
            config.withheld(None, names),
            ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN"]
        );
    }

    #[test]
    fn globs_match_the_whole_name() {
        assert!(glob_matches("*_TOKEN", "A_TOKEN"));
        assert!(!glob_matches("*_TOKEN", "A_TOKENS"));
        assert!(glob_matches("*PASSWORD*", "PASSWORD"));
        assert!(glob_matches("*PASSWORD*", "X_PASSWORD_FILE"));
        assert!(!glob_matches("*_KEY", "KEY"));
    }
}
