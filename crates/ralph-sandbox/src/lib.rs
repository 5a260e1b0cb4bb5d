//! The sandbox of a ralph loop: it owns what the agent, its commands and checks may write,
//! read and reach, and enforces it on Linux through Landlock, the kernel's own unprivileged
//! sandbox, with a small proxy of ralph's for the network. [`Sandbox::start`] prepares
//! everything (the ruleset with its rules, a private temporary folder, the proxy) before any
//! process starts; [`Sandbox::confine_thread`] is the step a thread of ralph's takes to
//! apply the prepared ruleset to itself, two system calls, after which every process spawned
//! from that thread (a `posix_spawn`, nothing run between fork and exec) inherits it. [`decide`] says, from the kernel's Landlock ABI, what can be enforced, and
//! refuses what cannot unless `best_effort` says so; [`describe`] says it in words for
//! `ralph check` and `--dry-run`.
//!
//! It must never loosen what it was asked to enforce without saying so, never confine ralph
//! itself (only the children it is applied to), never keep what passes through its proxy (it
//! copies bytes from one socket to the other and keeps nothing), and never print: denied
//! connections are handed to the caller ([`Sandbox::take_denials`]) for its events.

use std::path::{Path, PathBuf};

use ralph_frontmatter::{AgentNeeds, Network, SandboxConfig};

mod proxy;
#[cfg(target_os = "linux")]
mod rules;

pub use proxy::Denial;

/// The Landlock ABI whose network rules (TCP connect) the network confinement needs.
pub const NETWORK_ABI: u32 = 4;

/// Why a sandbox cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The kernel lacks what the policy needs, and `best_effort` is off.
    #[error(
        "sandbox: this machine lacks {missing}; ralph refuses to run unconfined (set \
         `sandbox: {{best_effort: true}}` to run with what it has, or `--no-sandbox`)"
    )]
    Unsupported {
        /// What is missing, in words.
        missing: String,
    },
    /// A path to deny reading lies inside a writable folder: Landlock only adds rights, so
    /// the folder's would cover it.
    #[error(
        "sandbox: {denied} cannot be kept unreadable inside {writable}, which the agent may \
         write (Landlock cannot take away what a folder grants); move the loop or drop the path"
    )]
    DeniedInsideWritable {
        /// The path to deny.
        denied: PathBuf,
        /// The writable folder holding it.
        writable: PathBuf,
    },
    /// The private temporary folder or the proxy could not be set up.
    #[error("sandbox: cannot {what}: {cause}")]
    Setup {
        /// What was being done.
        what: String,
        /// Why it failed.
        cause: std::io::Error,
    },
    /// The kernel refused the ruleset or one of its rules.
    #[error("sandbox: Landlock refused the rules: {0}")]
    Landlock(String),
}

/// What the sandbox enforces on this machine, decided by [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// The kernel's Landlock ABI, `None` without Landlock.
    pub abi: Option<u32>,
    /// Whether Landlock confines the files (writes and the denied reads).
    pub files: bool,
    /// Whether Landlock confines TCP connections (to the proxy's port and listed local ports).
    pub network: bool,
    /// What is not enforced, in words (always at least what Landlock cannot do).
    pub gaps: Vec<String>,
}

/// What the sandbox enforces given the kernel's Landlock ABI (`None`: no Landlock), or why it
/// refuses to start. Pure: the ABI comes in, so every kernel can be tested here.
pub fn decide(config: &SandboxConfig, abi: Option<u32>) -> Result<Enforcement, SandboxError> {
    let wants_network = config.network != Network::All;
    let mut missing = Vec::new();
    let files = abi.is_some();
    if !files {
        missing.push("Landlock (Linux 5.13 or later with Landlock among its LSMs)".to_owned());
    }
    let network = wants_network && abi.is_some_and(|abi| abi >= NETWORK_ABI);
    if wants_network && !network && files {
        missing.push(format!(
            "Landlock's network rules (ABI {NETWORK_ABI}, Linux 6.7; this kernel has ABI {})",
            abi.unwrap_or(0)
        ));
    }
    if !missing.is_empty() && !config.best_effort {
        return Err(SandboxError::Unsupported {
            missing: missing.join(" and "),
        });
    }
    let mut gaps: Vec<String> = missing
        .iter()
        .map(|what| format!("without {what}: not enforced (best_effort)"))
        .collect();
    if !files {
        gaps.push("files: not confined".to_owned());
    }
    if wants_network && !network {
        gaps.push(
            "network: the proxy is only asked for (HTTPS_PROXY), not enforced: a program that \
             ignores it connects anywhere"
                .to_owned(),
        );
    }
    if network {
        gaps.push(
            "UDP (DNS included) is not confined: Landlock has no UDP rules; a listed local \
             port is open at every address"
                .to_owned(),
        );
    }
    if files && abi.is_some_and(|abi| abi < 3) {
        gaps.push("truncating a readable file is not confined (Landlock ABI 3)".to_owned());
    }
    Ok(Enforcement {
        abi,
        files,
        network,
        gaps,
    })
}

/// The kernel's Landlock ABI version; `None` without Landlock (or off Linux).
pub fn landlock_abi() -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        rules::abi()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The hosts the processes may reach: the built-in agent's, then the listed ones; empty for
/// `network: none` and `all` (which does not confine).
pub fn allowed_hosts(config: &SandboxConfig, agent: Option<&AgentNeeds>) -> Vec<String> {
    match &config.network {
        Network::Listed(listed) => agent
            .map_or(&[][..], |agent| agent.hosts)
            .iter()
            .map(|host| (*host).to_owned())
            .chain(listed.iter().cloned())
            .collect(),
        Network::None | Network::All => Vec::new(),
    }
}

/// `~/` at the start of `path` read as the home folder (`HOME`); other paths as they are,
/// relative ones from `base`.
pub fn expand(path: &str, home: Option<&Path>, base: &Path) -> PathBuf {
    let expanded = match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" => home.map_or_else(|| PathBuf::from(path), Path::to_path_buf),
        _ => PathBuf::from(path),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    }
}

/// The effective policy in words, a line each, for `ralph check` and `ralph run --dry-run`:
/// the ABI found, what is confined and how, and what is not. `work` is the loop's folder.
pub fn describe(
    config: &SandboxConfig,
    agent: Option<&AgentNeeds>,
    work: &Path,
    abi: Option<u32>,
) -> Result<Vec<String>, SandboxError> {
    let enforcement = decide(config, abi)?;
    let mut lines = vec![match abi {
        Some(abi) => format!("Landlock ABI {abi} found"),
        None => "no Landlock on this machine".to_owned(),
    }];
    let mut writes = vec![format!("{} (the loop's folder)", work.display())];
    writes.push("a private temporary folder (TMPDIR)".to_owned());
    writes.extend(config.write.iter().cloned());
    writes.extend(
        agent
            .into_iter()
            .flat_map(|agent| agent.writes.iter().map(|w| (*w).to_owned())),
    );
    let confined = |on: bool| if on { "enforced" } else { "NOT enforced" };
    lines.push(format!(
        "writes ({}): only {}",
        confined(enforcement.files),
        writes.join(", ")
    ));
    let denied: Vec<String> = ralph_frontmatter::sandbox::SECRET_PATHS
        .iter()
        .map(|p| (*p).to_owned())
        .chain(config.deny_read.iter().cloned())
        .collect();
    lines.push(format!(
        "reads ({}): everything but {}",
        confined(enforcement.files),
        denied.join(", ")
    ));
    lines.push(match &config.network {
        Network::All => "network: not confined (network: all)".to_owned(),
        Network::None => format!(
            "network ({}): no TCP connection",
            confined(enforcement.network)
        ),
        Network::Listed(_) => format!(
            "network ({}): only {} through ralph's proxy on 127.0.0.1",
            confined(enforcement.network),
            match allowed_hosts(config, agent) {
                hosts if hosts.is_empty() => "no host".to_owned(),
                hosts => hosts.join(", "),
            }
        ),
    });
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    names.sort();
    let withheld = config.withheld(agent, names.iter().map(String::as_str));
    lines.push(format!(
        "environment: withheld {}",
        match withheld.is_empty() {
            true => "nothing of this environment".to_owned(),
            false => withheld.join(", "),
        }
    ));
    lines.extend(
        enforcement
            .gaps
            .iter()
            .map(|gap| format!("not enforced: {gap}")),
    );
    Ok(lines)
}

/// The home folder, from `HOME`.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

/// A run's sandbox, started: the prepared ruleset, the private temporary folder and the
/// proxy. Dropping it ends the proxy and removes the folder.
#[derive(Debug)]
pub struct Sandbox {
    #[cfg(target_os = "linux")]
    ruleset: Option<std::os::fd::OwnedFd>,
    tmp: tempfile::TempDir,
    proxy: Option<proxy::Proxy>,
    env: Vec<(String, String)>,
    enforcement: Enforcement,
}

/// Variables a sandboxed process goes without whatever ralph's environment holds: hosts the
/// proxy should be skipped for would be reached directly.
const PROXY_BYPASS: &[&str] = &["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"];

impl Sandbox {
    /// Prepares the sandbox of a loop whose folder is `work`, for the built-in agent `agent`
    /// (its key, host and own files allowed): decides from this kernel's ABI, builds the
    /// ruleset, makes the private temporary folder and, for listed hosts, starts the proxy
    /// (on the current tokio runtime, which must be running).
    pub fn start(
        config: &SandboxConfig,
        agent: Option<&AgentNeeds>,
        work: &Path,
    ) -> Result<Self, SandboxError> {
        let enforcement = decide(config, landlock_abi())?;
        let tmp = tempfile::Builder::new()
            .prefix("ralph-sandbox-")
            .tempdir()
            .map_err(|cause| SandboxError::Setup {
                what: "make the private temporary folder".to_owned(),
                cause,
            })?;
        let proxy = match &config.network {
            Network::Listed(_) => Some(proxy::Proxy::start(allowed_hosts(config, agent)).map_err(
                |cause| SandboxError::Setup {
                    what: "start the proxy on 127.0.0.1".to_owned(),
                    cause,
                },
            )?),
            Network::None | Network::All => None,
        };
        let mut env = vec![("TMPDIR".to_owned(), tmp.path().display().to_string())];
        if let Some(proxy) = &proxy {
            let url = format!("http://127.0.0.1:{}", proxy.port());
            for name in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
                env.push((name.to_owned(), url.clone()));
            }
        }
        #[cfg(target_os = "linux")]
        let ruleset = match enforcement.files {
            true => {
                let home = home();
                let plan = rules::Plan::new(
                    config,
                    agent,
                    work,
                    tmp.path(),
                    home.as_deref(),
                    enforcement.network.then(|| {
                        let mut ports = proxy::local_ports(&allowed_hosts(config, agent));
                        ports.extend(proxy.as_ref().map(proxy::Proxy::port));
                        ports
                    }),
                )?;
                Some(plan.build(enforcement.abi.unwrap_or(1))?)
            }
            false => None,
        };
        Ok(Self {
            #[cfg(target_os = "linux")]
            ruleset,
            tmp,
            proxy,
            env,
            enforcement,
        })
    }

    /// What this sandbox enforces.
    pub fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Variables every sandboxed process gets: `TMPDIR` (the private temporary folder) and
    /// the proxy's address under the four names programs read.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Variables every sandboxed process goes without: the ones that would skip the proxy.
    pub fn env_remove(&self) -> &'static [&'static str] {
        PROXY_BYPASS
    }

    /// The private temporary folder.
    pub fn temp_dir(&self) -> &Path {
        self.tmp.path()
    }

    /// The step that confines the thread taking it, and every process it starts afterwards:
    /// `no_new_privs`, then the prepared ruleset applied to itself (both hold for the calling
    /// thread only). For `ralph_process::ChildSetup::new`, whose thread the run's processes
    /// are spawned from: each spawn stays a `posix_spawn`, nothing runs between fork and exec,
    /// and ralph's other threads stay free. `None` when Landlock confines nothing here
    /// (`best_effort` without it).
    pub fn confine_thread(&self) -> Option<impl FnOnce() -> std::io::Result<()> + Send + 'static> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd as _;
            let fd = self.ruleset.as_ref()?.as_raw_fd();
            Some(move || rules::restrict_self(fd))
        }
        #[cfg(not(target_os = "linux"))]
        {
            None::<fn() -> std::io::Result<()>>
        }
    }

    /// The connections the proxy refused since the last call, in order, and how many more it
    /// refused beyond the 1,000 it keeps.
    pub fn take_denials(&self) -> (Vec<Denial>, u64) {
        self.proxy
            .as_ref()
            .map_or((Vec::new(), 0), proxy::Proxy::take_denials)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(network: Network, best_effort: bool) -> SandboxConfig {
        SandboxConfig {
            network,
            best_effort,
            ..SandboxConfig::default()
        }
    }

    #[test]
    fn without_landlock_the_sandbox_refuses_to_start_unless_best_effort() {
        let err = decide(&config(Network::default(), false), None).unwrap_err();
        assert!(err.to_string().contains("lacks Landlock"), "{err}");
        let run = decide(&config(Network::default(), true), None).unwrap();
        assert!(!run.files && !run.network);
        assert!(run.gaps.iter().any(|gap| gap == "files: not confined"));
    }

    #[test]
    fn a_kernel_without_network_rules_refuses_a_confined_network_unless_best_effort() {
        let err = decide(&config(Network::default(), false), Some(3)).unwrap_err();
        assert!(err.to_string().contains("network rules (ABI 4"), "{err}");
        let err = decide(&config(Network::None, false), Some(3)).unwrap_err();
        assert!(err.to_string().contains("this kernel has ABI 3"), "{err}");
        let all = decide(&config(Network::All, false), Some(3)).unwrap();
        assert!(all.files && !all.network);
        let best = decide(&config(Network::default(), true), Some(3)).unwrap();
        assert!(best.files && !best.network);
        assert!(best.gaps.iter().any(|gap| gap.contains("not enforced")));
    }

    #[test]
    fn a_kernel_with_network_rules_enforces_both() {
        for abi in [4, 7, 9] {
            let run = decide(&config(Network::default(), false), Some(abi)).unwrap();
            assert!(run.files && run.network, "{abi}");
            assert!(run.gaps.iter().any(|gap| gap.contains("UDP")));
        }
    }

    #[test]
    fn hosts_are_the_agents_then_the_listed_ones() {
        let claude = ralph_frontmatter::agent_needs(&["claude".to_owned()]);
        let listed = config(Network::Listed(vec!["127.0.0.1:9".to_owned()]), false);
        assert_eq!(
            allowed_hosts(&listed, claude),
            ["api.anthropic.com", "127.0.0.1:9"]
        );
        assert!(allowed_hosts(&config(Network::None, false), claude).is_empty());
    }

    #[test]
    fn home_relative_paths_are_expanded() {
        let home = Path::new("/home/me");
        let base = Path::new("/work");
        assert_eq!(
            expand("~/.ssh", Some(home), base),
            Path::new("/home/me/.ssh")
        );
        assert_eq!(expand("cache", Some(home), base), Path::new("/work/cache"));
        assert_eq!(expand("/opt", Some(home), base), Path::new("/opt"));
    }
}
