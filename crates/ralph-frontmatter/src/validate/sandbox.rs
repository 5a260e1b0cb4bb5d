//! The `sandbox` section: `true`, `false`, no value (the defaults) or a block.

use serde_norway::{Mapping, Value};

use super::{Checker, keys, present};
use crate::locate::FieldPath;
use crate::sandbox::{Network, SandboxConfig};
use crate::schema::SANDBOX_NETWORK_WORDS;

/// The section; `Some(None)` when it is `false`.
pub(super) fn sandbox(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    value: &Value,
) -> Option<Option<SandboxConfig>> {
    let mapping = match value {
        Value::Null => return Some(Some(SandboxConfig::default())),
        Value::Mapping(mapping) => mapping,
        _ => {
            return match checker.bool(path, value) {
                Some(true) => Some(Some(SandboxConfig::default())),
                Some(false) => Some(None),
                None => None,
            };
        }
    };
    checker.unknown_keys(path, mapping, &keys("sandbox"), &[]);
    let network = match present(mapping, "network") {
        Some(v) => network(checker, &path.key("network"), v),
        None => Some(Network::default()),
    };
    let write = list(checker, path, mapping, "write", "a path", |_| Ok(()));
    let deny_read = list(checker, path, mapping, "deny_read", "a path", |_| Ok(()));
    let env = list(checker, path, mapping, "env", "a variable name", |name| {
        let mut chars = name.chars();
        let first = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if first && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Ok(())
        } else {
            Err("a variable name (letters, digits and `_`, not starting with a digit)")
        }
    });
    let best_effort = match present(mapping, "best_effort") {
        Some(v) => checker.bool(&path.key("best_effort"), v),
        None => Some(false),
    };
    Some(Some(SandboxConfig {
        network: network?,
        write: write?,
        deny_read: deny_read?,
        env: env?,
        best_effort: best_effort?,
    }))
}

fn network(checker: &mut Checker<'_>, path: &FieldPath, value: &Value) -> Option<Network> {
    if let Value::String(word) = value {
        return match checker.choice(path, value, SANDBOX_NETWORK_WORDS)? {
            "none" => Some(Network::None),
            "all" => Some(Network::All),
            _ => {
                checker.value_error(path, format!("unknown word {word:?}"));
                None
            }
        };
    }
    let Value::Sequence(items) = value else {
        checker.expected(
            path,
            value,
            "a list of hosts (`host` or `host:port`), \"none\" or \"all\"",
        );
        return None;
    };
    let mut hosts: Vec<String> = Vec::new();
    let mut ok = true;
    for (index, item) in items.iter().enumerate() {
        let at = path.index(index);
        let Value::String(host) = item else {
            checker.expected(&at, item, "a host (`host` or `host:port`)");
            ok = false;
            continue;
        };
        if let Err(problem) = host_problem(host) {
            let got = checker.describe(&at, item);
            checker.value_error(&at, format!("expected {problem}, got {got}"));
            ok = false;
        } else if hosts.contains(host) {
            checker.value_error(&at, format!("{host} is listed twice"));
            ok = false;
        } else {
            hosts.push(host.clone());
        }
    }
    ok.then_some(Network::Listed(hosts))
}

/// What is wrong with a `network` entry, if anything: a host name or IP address, with an
/// optional port (`[...]` around an IPv6 address).
fn host_problem(entry: &str) -> Result<(), &'static str> {
    const EXPECTED: &str = "a host name or IP address, with an optional `:port` from 1 to 65535 \
                            (such as api.example.com or \"127.0.0.1:8080\")";
    let (host, port) = match entry.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, rest)) => (host, Some(rest.strip_prefix(':').ok_or(EXPECTED)?)),
            None => return Err(EXPECTED),
        },
        None => match entry.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (entry, None),
        },
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    let port_ok = port.is_none_or(|port| port.parse::<u16>().is_ok_and(|port| port > 0));
    if host_ok && port_ok {
        Ok(())
    } else {
        Err(EXPECTED)
    }
}

/// The list `key` of `mapping`: non-empty strings, each accepted by `check`, none twice.
fn list(
    checker: &mut Checker<'_>,
    path: &FieldPath,
    mapping: &Mapping,
    key: &str,
    what: &str,
    check: impl Fn(&str) -> Result<(), &'static str>,
) -> Option<Vec<String>> {
    let Some(value) = present(mapping, key) else {
        return Some(Vec::new());
    };
    let path = path.key(key);
    let Value::Sequence(items) = value else {
        checker.expected(&path, value, &format!("a list, each item {what}"));
        return None;
    };
    let mut found: Vec<String> = Vec::new();
    let mut ok = true;
    for (index, item) in items.iter().enumerate() {
        let at = path.index(index);
        let text = match item {
            Value::String(text) if !text.trim().is_empty() => text,
            _ => {
                checker.expected(&at, item, what);
                ok = false;
                continue;
            }
        };
        if let Err(problem) = check(text) {
            checker.expected(&at, item, problem);
            ok = false;
        } else if found.contains(text) {
            checker.value_error(&at, format!("{text} is listed twice"));
            ok = false;
        } else {
            found.push(text.clone());
        }
    }
    ok.then_some(found)
}

#[cfg(test)]
mod tests {
    use crate::{Network, SandboxConfig};

    fn parse(section: &str) -> Result<Option<SandboxConfig>, String> {
        crate::parse("RALPH.md", &format!("---\nagent: x\n{section}---\n"))
            .map(|parsed| parsed.file.config.sandbox)
            .map_err(|err| {
                let lines: Vec<String> = err.errors.iter().map(ToString::to_string).collect();
                lines.join("\n")
            })
    }

    #[test]
    fn true_no_value_and_an_empty_block_take_every_default_and_false_is_off() {
        let defaults = Some(SandboxConfig::default());
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("sandbox: false\n").unwrap(), None);
        assert_eq!(parse("sandbox: true\n").unwrap(), defaults);
        assert_eq!(parse("sandbox:\n").unwrap(), defaults);
        assert_eq!(parse("sandbox: {}\n").unwrap(), defaults);
    }

    #[test]
    fn a_full_block_is_read_as_written() {
        let config = parse(
            "sandbox:\n  network: [api.anthropic.com, \"127.0.0.1:8080\", \"[::1]:99\"]\n  \
             write: [~/.cache/cargo]\n  deny_read: [~/clients/acme]\n  env: [NPM_TOKEN]\n  \
             best_effort: true\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            config.network,
            Network::Listed(vec![
                "api.anthropic.com".to_owned(),
                "127.0.0.1:8080".to_owned(),
                "[::1]:99".to_owned()
            ])
        );
        assert_eq!(config.write, ["~/.cache/cargo"]);
        assert_eq!(config.deny_read, ["~/clients/acme"]);
        assert_eq!(config.env, ["NPM_TOKEN"]);
        assert!(config.best_effort);
        let none = parse("sandbox:\n  network: none\n").unwrap().unwrap();
        assert_eq!(none.network, Network::None);
        let all = parse("sandbox:\n  network: all\n").unwrap().unwrap();
        assert_eq!(all.network, Network::All);
    }

    #[test]
    fn bad_values_are_refused_at_their_place() {
        let err = parse("sandbox: maybe\n").unwrap_err();
        assert_eq!(
            err,
            "RALPH.md:3:10: sandbox: expected true or false, got \"maybe\""
        );
        let err = parse("sandbox:\n  network: some\n").unwrap_err();
        assert!(
            err.starts_with("RALPH.md:4:12: sandbox.network: expected \"none\" or \"all\""),
            "{err}"
        );
        let err = parse("sandbox:\n  network: [\"a.com:0\", b.com, b.com]\n").unwrap_err();
        assert!(
            err.contains("RALPH.md:4:13: sandbox.network[0]: expected a host name"),
            "{err}"
        );
        assert!(
            err.contains("sandbox.network[2]: b.com is listed twice"),
            "{err}"
        );
        let err = parse("sandbox:\n  env: [\"1X\"]\n  wirte: []\n").unwrap_err();
        assert!(
            err.contains("sandbox.env[0]: expected a variable name"),
            "{err}"
        );
        assert!(
            err.contains("sandbox.wirte: unknown key; did you mean `write`?"),
            "{err}"
        );
        let err = parse("sandbox:\n  write: ~/x\n").unwrap_err();
        assert!(
            err.contains("sandbox.write: expected a list, each item a path"),
            "{err}"
        );
    }
}
