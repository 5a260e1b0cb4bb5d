//! The sandbox on the command line: `--sandbox`/`--no-sandbox` over the RALPH.md's
//! `sandbox`, the refusal before anything runs on a machine that cannot enforce it, and the
//! effective policy in words for `ralph check` and `ralph run --dry-run`.

use std::path::Path;

use ralph_frontmatter::{Config, SandboxConfig};

use crate::error::CliError;

/// `--sandbox` turns the sandbox on with every default where the file has none; `--no-sandbox`
/// turns it off.
pub(crate) fn apply_flags(config: &mut Config, on: bool, off: bool) {
    if off {
        config.sandbox = None;
    } else if on && config.sandbox.is_none() {
        config.sandbox = Some(SandboxConfig::default());
    }
}

/// Refuses (exit 2) a sandbox this machine cannot enforce, unless `best_effort`.
pub(crate) fn refuse_unsupported(config: &Config) -> Result<(), CliError> {
    if let Some(sandbox) = &config.sandbox {
        ralph_sandbox::decide(sandbox, ralph_sandbox::landlock_abi())?;
    }
    Ok(())
}

/// The effective policy on this machine, a line each, `sandbox: ` first; `off` without one.
pub(crate) fn policy_lines(config: &Config, work: &Path) -> Result<Vec<String>, CliError> {
    let Some(sandbox) = &config.sandbox else {
        return Ok(vec!["off".to_owned()]);
    };
    let agent = ralph_frontmatter::agent_needs(&config.agent_argv);
    let work = std::path::absolute(work).unwrap_or_else(|_| work.to_path_buf());
    Ok(ralph_sandbox::describe(
        sandbox,
        agent,
        &work,
        ralph_sandbox::landlock_abi(),
    )?)
}
