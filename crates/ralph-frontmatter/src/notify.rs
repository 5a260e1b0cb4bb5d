//! The `notify` section: who is told what, and how. Read here; sent by `ralph-notify`.

use std::fmt;

/// The `notify` block: messages to a person when a run needs them.
#[derive(Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// The events that send a message, in the order written.
    pub on: Vec<NotifyEvent>,
    /// The webhook URLs as written, `${VAR}` not yet expanded ([`expand_env`]). Secrets: never
    /// shown ([`redact_url`]).
    pub webhooks: Vec<String>,
    /// The webhooks' payload.
    pub format: NotifyFormat,
    /// A command run with each message, as written (`{{ message }}` in it, `${VAR}` not yet
    /// expanded).
    pub command: Option<String>,
}

// Written by hand so a `{:?}` of a config never shows a webhook.
impl fmt::Debug for NotifyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let webhooks: Vec<String> = self.webhooks.iter().map(|w| redact_url(w)).collect();
        f.debug_struct("NotifyConfig")
            .field("on", &self.on)
            .field("webhooks", &webhooks)
            .field("format", &self.format)
            .field("command", &self.command)
            .finish()
    }
}

/// What a message is sent for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NotifyEvent {
    /// The run ended (for any reason but a budget when `budget` is chosen too).
    Ended,
    /// A task is blocked (the agent said so, or the circuit breaker tripped).
    Blocked,
    /// The agent asked a person a question and the loop waits for the answer.
    Asked,
    /// The agent is rate-limited and the loop waits for the reset.
    RateLimited,
    /// The run ended on `max_cost` or `max_runtime`.
    Budget,
}

impl NotifyEvent {
    /// The name as written in `notify.on`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyEvent::Ended => "ended",
            NotifyEvent::Blocked => "blocked",
            NotifyEvent::Asked => "asked",
            NotifyEvent::RateLimited => "rate_limited",
            NotifyEvent::Budget => "budget",
        }
    }

    /// The event named `name` in `notify.on`.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            NotifyEvent::Ended,
            NotifyEvent::Blocked,
            NotifyEvent::Asked,
            NotifyEvent::RateLimited,
            NotifyEvent::Budget,
        ]
        .into_iter()
        .find(|e| e.as_str() == name)
    }
}

/// The body a webhook is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotifyFormat {
    /// The event as ralph writes it, plus `message`.
    #[default]
    Json,
    /// A Slack incoming webhook: `{"text": message}`.
    Slack,
    /// A Discord webhook: `{"content": message}`.
    Discord,
    /// An ntfy topic: the message as plain text, a title header.
    Ntfy,
}

impl NotifyFormat {
    /// The name as written in `notify.format`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyFormat::Json => "json",
            NotifyFormat::Slack => "slack",
            NotifyFormat::Discord => "discord",
            NotifyFormat::Ntfy => "ntfy",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            NotifyFormat::Json,
            NotifyFormat::Slack,
            NotifyFormat::Discord,
            NotifyFormat::Ntfy,
        ]
        .into_iter()
        .find(|f| f.as_str() == name)
    }
}

/// A `${VAR}` whose variable is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`${{{name}}}` is not set in the environment")]
pub struct MissingVariable {
    /// The variable.
    pub name: String,
}

/// `text` with every `${NAME}` replaced by `lookup(NAME)`; the first variable `lookup` does not
/// know is the error. Anything else, a lone `$` included, is kept as written (validation has
/// refused a `${` that is not a whole `${NAME}`).
pub fn expand_env(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, MissingVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}').filter(|end| is_variable(&after[..*end])) else {
            out.push_str("${");
            rest = after;
            continue;
        };
        let name = &after[..end];
        let value = lookup(name).ok_or_else(|| MissingVariable {
            name: name.to_owned(),
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The `${NAME}`s in `text` that are not a whole `${NAME}` (a `${` without its `}`, or with
/// something other than letters, digits and `_` before it).
pub(crate) fn malformed_variable(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if is_variable(&after[..end]) => rest = &after[end + 1..],
            Some(end) => return Some(&rest[start..start + 2 + end + 1]),
            None => return Some(&rest[start..]),
        }
    }
    None
}

/// An environment variable's name: a letter or `_`, then letters, digits and `_`.
fn is_variable(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A webhook as it may be shown: its scheme and host only (`https://hooks.slack.com/…`); the
/// path and query, where the secret lives, are never shown. A `${VAR}` is shown as written: it
/// names the secret without holding it.
pub fn redact_url(url: &str) -> String {
    if url.trim_start().starts_with("${") && !url.contains("://") {
        return url.to_owned();
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return "…".to_owned();
    };
    // The host, without any `user:password@` before it.
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    format!("{scheme}://{host}/…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "HOOK").then(|| "https://example.test/secret".to_owned())
    }

    #[test]
    fn variables_are_expanded_and_a_missing_one_is_named() {
        assert_eq!(
            expand_env("${HOOK}?a=$b", env).unwrap(),
            "https://example.test/secret?a=$b"
        );
        assert_eq!(
            expand_env("x ${NOPE} y", env).unwrap_err().to_string(),
            "`${NOPE}` is not set in the environment"
        );
    }

    #[test]
    fn a_malformed_variable_is_found() {
        assert_eq!(malformed_variable("a ${OK} b"), None);
        assert_eq!(malformed_variable("a ${NOT OK} b"), Some("${NOT OK}"));
        assert_eq!(malformed_variable("a ${OPEN"), Some("${OPEN"));
    }

    #[test]
    fn a_redacted_url_keeps_only_scheme_and_host() {
        assert_eq!(
            redact_url("https://user:pw@hooks.slack.com/services/T0/B0/XYZ?x=1"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(redact_url("${SLACK_HOOK}"), "${SLACK_HOOK}");
        assert_eq!(redact_url("not a url"), "…");
    }
}
