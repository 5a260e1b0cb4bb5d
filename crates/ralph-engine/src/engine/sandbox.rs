//! `sandbox`: the run's sandbox (RALPH.md `sandbox`), started before anything runs, put on
//! every process the run starts, and the connections its proxy refused said as events.

use ralph_process::{ChildSetup, ProcessSpec};

use super::{EngineError, Run};
use crate::event::{EventKind, WarningKind};
use crate::logs::IterationLog;

impl Run {
    /// Starts the sandbox the RALPH.md asks for, around the loop's folder; an error ends the
    /// run before it starts.
    pub(super) fn start_sandbox(&mut self) -> Result<(), EngineError> {
        let config = &self.engine.options.file.config;
        if let Some(sandbox) = &config.sandbox {
            let agent = ralph_frontmatter::agent_needs(&config.agent_argv);
            let work = &self.engine.options.cwd;
            let sandbox = ralph_sandbox::Sandbox::start(sandbox, agent, work)?;
            self.child_setup = sandbox
                .confine_thread()
                .map(ChildSetup::new)
                .transpose()
                .map_err(|cause| ralph_sandbox::SandboxError::Setup {
                    what: "confine the thread the run's processes start from".to_owned(),
                    cause,
                })?;
            self.sandbox = Some(sandbox);
        }
        Ok(())
    }

    /// `spec` put in the run's sandbox, if it has one: spawned from the confined thread, its
    /// variables set and the proxy's bypass removed.
    pub(super) fn confine(&self, spec: &mut ProcessSpec) {
        let Some(sandbox) = &self.sandbox else {
            return;
        };
        spec.child_setup = self.child_setup.clone();
        spec.env.extend(sandbox.env().iter().cloned());
        spec.env_remove
            .extend(sandbox.env_remove().iter().map(|name| (*name).to_owned()));
    }

    /// Each connection the proxy refused since the last look, as a `SANDBOX_DENIED` event of
    /// `iteration`, and a line of `log` when the iteration's log is still open.
    pub(super) fn report_denials(&mut self, iteration: u64, mut log: Option<&mut IterationLog>) {
        let Some(sandbox) = &self.sandbox else {
            return;
        };
        let (denials, more) = sandbox.take_denials();
        for denial in denials {
            if let Some(log) = log.as_deref_mut() {
                let line = format!(
                    "\nsandbox: denied {}:{} (not in sandbox.network)\n",
                    denial.host, denial.port
                );
                log.write(line.as_bytes());
            }
            self.emit(EventKind::SandboxDenied {
                iteration,
                host: denial.host,
                port: denial.port,
            });
        }
        if more > 0 {
            self.warn(
                WarningKind::Containment,
                format!("the sandbox refused {more} more connections, not each said"),
            );
        }
    }
}
