//! Validation of the `notify` block. A webhook is a secret: no message here shows one.

use serde_norway::{Mapping, Value};

use super::{Checker, block, keys, present};
use crate::locate::FieldPath;
use crate::notify::{NotifyConfig, NotifyEvent, NotifyFormat, malformed_variable};
use crate::schema::{DEFAULT_NOTIFY_EVENTS, NOTIFY_EVENTS, NOTIFY_FORMATS};

pub(super) fn notify(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
) -> Option<NotifyConfig> {
    let Some(mapping) = block(checker, path, value, &keys("notify"))? else {
        checker.key_error(
            path,
            "sends nothing: add `webhook` (a URL) or `command` (a command line)".to_owned(),
        );
        return None;
    };
    let on = match present(mapping, "on") {
        Some(v) => on(checker, &path.key("on"), v),
        None => Some(
            DEFAULT_NOTIFY_EVENTS
                .iter()
                .filter_map(|name| NotifyEvent::from_name(name))
                .collect(),
        ),
    };
    let webhooks = match present(mapping, "webhook") {
        Some(v) => webhooks(checker, &path.key("webhook"), v),
        None => Some(Vec::new()),
    };
    let format = match present(mapping, "format") {
        Some(v) => checker
            .choice(&path.key("format"), v, NOTIFY_FORMATS)
            .and_then(NotifyFormat::from_name),
        None => Some(NotifyFormat::default()),
    };
    let command = present(mapping, "command").map(|v| command(checker, &path.key("command"), v));
    nothing_sent(checker, path, mapping);
    let command = super::optional(command)?;
    let webhooks = webhooks?;
    Some(NotifyConfig {
        on: on?,
        webhooks,
        format: format?,
        command,
    })
}

/// A block with neither `webhook` nor `command` is an error; `format` without `webhook` a
/// warning.
fn nothing_sent(checker: &mut Checker<'_>, path: &FieldPath, mapping: &Mapping) {
    let webhook = present(mapping, "webhook").is_some();
    if !webhook && present(mapping, "command").is_none() {
        checker.key_error(
            path,
            "sends nothing: add `webhook` (a URL) or `command` (a command line)".to_owned(),
        );
    }
    if !webhook && present(mapping, "format").is_some() {
        checker.key_warning(
            &path.key("format"),
            "has no effect without `webhook`: it is the webhook's payload".to_owned(),
        );
    }
}

fn on(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<Vec<NotifyEvent>> {
    let listed = NOTIFY_EVENTS.join(", ");
    let Value::Sequence(items) = value else {
        checker.expected(path, value, &format!("a list of events from: {listed}"));
        return None;
    };
    if items.is_empty() {
        checker.value_error(
            path,
            format!("an empty list sends nothing; list events from: {listed}, or remove `notify`"),
        );
        return None;
    }
    let mut events = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let item_path = path.index(i);
        match checker
            .choice(&item_path, item, NOTIFY_EVENTS)
            .and_then(NotifyEvent::from_name)
        {
            Some(event) if events.contains(&event) => {
                checker.value_error(&item_path, format!("`{}` is listed twice", event.as_str()));
                ok = false;
            }
            Some(event) => events.push(event),
            None => ok = false,
        }
    }
    ok.then_some(events)
}

fn webhooks(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<Vec<String>> {
    let items: Vec<(FieldPath, &Value)> = match value {
        Value::Sequence(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| (path.index(i), item))
            .collect(),
        Value::Sequence(_) => {
            checker.value_error(
                path,
                "an empty list: give a URL or a list of URLs".to_owned(),
            );
            return None;
        }
        _ => vec![(path.clone(), value)],
    };
    let mut urls = Vec::new();
    for (item_path, item) in items {
        if let Some(url) = webhook(checker, &item_path, item) {
            urls.push(url);
        }
    }
    (urls.len() == value.as_sequence().map_or(1, Vec::len)).then_some(urls)
}

/// One webhook: an http(s) URL or a `${VAR}` that holds one. The value is never quoted back.
fn webhook(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<String> {
    let Value::String(url) = value else {
        checker.expected(path, value, "an http:// or https:// URL, or a list of them");
        return None;
    };
    let url = url.trim();
    if let Some(bad) = malformed_variable(url) {
        // A `${...}` is a name, not the secret: safe to show.
        checker.value_error(
            path,
            format!("`{bad}` is not a variable: write `${{NAME}}` (letters, digits and `_`)"),
        );
        return None;
    }
    let lower = url.to_ascii_lowercase();
    let allowed =
        lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("${");
    if !allowed || url.chars().any(char::is_whitespace) {
        checker.value_error(
            path,
            "expected an http:// or https:// URL (or `${VAR}` holding one); the value is not \
             shown: a webhook is a secret"
                .to_owned(),
        );
        return None;
    }
    Some(url.to_owned())
}

fn command(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<String> {
    let command = checker.string(
        path,
        value,
        "a command line, such as `notify-send ralph \"{{ message }}\"`",
    )?;
    if let Some(bad) = malformed_variable(&command) {
        checker.value_error(
            path,
            format!("`{bad}` is not a variable: write `${{NAME}}` (letters, digits and `_`)"),
        );
        return None;
    }
    Some(command)
}

#[cfg(test)]
mod tests {
    fn errors(block: &str) -> Vec<String> {
        let text = format!("---\nagent: x\nnotify:\n{block}---\n");
        match crate::parse("RALPH.md", &text) {
            Ok(_) => Vec::new(),
            Err(err) => err.errors.iter().map(ToString::to_string).collect(),
        }
    }

    fn config(block: &str) -> crate::NotifyConfig {
        let text = format!("---\nagent: x\nnotify:\n{block}---\n");
        crate::parse("RALPH.md", &text)
            .expect("valid")
            .file
            .config
            .notify
            .expect("notify")
    }

    #[test]
    fn the_defaults_are_ended_blocked_asked_and_json() {
        let notify = config("  command: echo {{ message }}\n");
        let on: Vec<_> = notify.on.iter().map(|e| e.as_str()).collect();
        assert_eq!(on, ["ended", "blocked", "asked"]);
        assert_eq!(notify.format, crate::NotifyFormat::Json);
        assert!(notify.webhooks.is_empty());
    }

    #[test]
    fn a_webhook_is_one_url_or_a_list() {
        let one = config("  webhook: https://a.test/x\n");
        assert_eq!(one.webhooks, ["https://a.test/x"]);
        let two = config("  webhook: [\"https://a.test/x\", \"${HOOK}\"]\n");
        assert_eq!(two.webhooks, ["https://a.test/x", "${HOOK}"]);
    }

    #[test]
    fn errors_are_located_and_never_show_the_webhook() {
        assert_eq!(
            errors("  webhook: ftp://secret.test/TOKEN\n"),
            [
                "RALPH.md:4:12: notify.webhook: expected an http:// or https:// URL (or `${VAR}` \
              holding one); the value is not shown: a webhook is a secret"
            ]
        );
        assert_eq!(
            errors("  command: x\n  on: [ended, askd]\n"),
            [
                "RALPH.md:5:15: notify.on[1]: expected \"ended\" or \"blocked\" or \"asked\" or \
              \"rate_limited\" or \"budget\", got \"askd\"; did you mean \"asked\"?"
            ]
        );
        assert_eq!(
            errors("  format: slack\n"),
            [
                "RALPH.md:3:1: notify: sends nothing: add `webhook` (a URL) or `command` (a \
              command line)"
            ]
        );
        assert_eq!(
            errors("  command: echo ${NOT SET}\n"),
            [
                "RALPH.md:4:12: notify.command: `${NOT SET}` is not a variable: write `${NAME}` \
              (letters, digits and `_`)"
            ]
        );
        assert_eq!(
            errors("  command: x\n  on: [ended, ended]\n"),
            ["RALPH.md:5:15: notify.on[1]: `ended` is listed twice"]
        );
    }
}
