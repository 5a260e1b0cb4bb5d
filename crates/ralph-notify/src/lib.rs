//! Notifications for ralph loops: the `notify` section of RALPH.md, put to work.
//!
//! A [`NotifySink`] is an [`EventSink`](ralph_engine::EventSink) the CLI adds to a run: it turns
//! the events a person should hear about (the run ended, a task is blocked, the agent asked, a
//! rate limit, a budget) into one message each and hands it to a [`Delivery`], a thread of its
//! own with a bounded queue, which posts it to the webhooks and runs the command with a short
//! timeout and a few retries. The loop never waits for a webhook: a full queue drops the message
//! (and says so in the next), a failing webhook is reported once, as the sink's failure. A
//! parallel run's coordinator events go through a [`LaneNotifier`] the same way.
//!
//! Webhook URLs are secrets: nothing this crate says (errors, failures, [`Targets::describe`])
//! holds one; they are shown as [`redact_url`] shows them.

mod deliver;
mod lanes;
mod message;
mod sent;
mod sink;

pub use deliver::{Delivery, DeliveryReport, Failures};
pub use lanes::LaneNotifier;
pub use message::{Message, Place};
pub use sink::NotifySink;

use ralph_frontmatter::{NotifyConfig, NotifyFormat, expand_env, redact_url};

/// What went wrong setting notifications up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// A `${VAR}` in `notify.webhook` or `notify.command` is not set.
    #[error(
        "{file}: {field}: `${{{name}}}` is not set in the environment; set it, or write the \
         value in the file"
    )]
    MissingVariable {
        /// The RALPH.md.
        file: String,
        /// `notify.webhook` or `notify.command`.
        field: &'static str,
        /// The variable.
        name: String,
    },
}

/// Where messages go: the webhooks with `${VAR}` expanded, and the command.
#[derive(Clone)]
pub struct Targets {
    webhooks: Vec<Webhook>,
    format: NotifyFormat,
    command: Option<String>,
}

/// One webhook: the URL to post to, and the only form of it ever shown.
#[derive(Clone)]
struct Webhook {
    url: String,
    shown: String,
}

impl Targets {
    /// The targets of `config`, each `${VAR}` read through `lookup` (the process environment,
    /// for `ralph run`); `file` names the RALPH.md in errors.
    pub fn new(
        config: &NotifyConfig,
        file: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, NotifyError> {
        let missing = |field: &'static str| {
            move |err: ralph_frontmatter::MissingVariable| NotifyError::MissingVariable {
                file: file.to_owned(),
                field,
                name: err.name,
            }
        };
        let mut webhooks = Vec::new();
        for written in &config.webhooks {
            let url = expand_env(written, &lookup).map_err(missing("notify.webhook"))?;
            webhooks.push(Webhook {
                shown: redact_url(written),
                url,
            });
        }
        let command = match &config.command {
            Some(command) => Some(expand_env(command, &lookup).map_err(missing("notify.command"))?),
            None => None,
        };
        Ok(Self {
            webhooks,
            format: config.format,
            command,
        })
    }

    /// Where messages go, in words, with every webhook redacted: one line each.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .webhooks
            .iter()
            .map(|w| format!("webhook {} ({})", w.shown, self.format.as_str()))
            .collect();
        if self.command.is_some() {
            lines.push("command".to_owned());
        }
        lines
    }
}

impl std::fmt::Debug for Targets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.describe()).finish()
    }
}
