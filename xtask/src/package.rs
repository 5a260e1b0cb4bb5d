//! `cargo xtask package`: what a user installing ralph by name gets, checked before a release.
//!
//! 1. `cargo package --workspace --no-verify` packs every published crate.
//! 2. The `.crate` files are unpacked into a scratch folder and `ralph-loop` is installed from
//!    its own with `cargo install`, into a scratch root, its library crates taken from their
//!    `.crate` files too (`[patch]`, as crates.io would serve them), with the lock file the
//!    package ships (`--locked`). Every published crate is in `ralph-loop`'s dependency tree (a
//!    test here checks), so this one build compiles each from its packaged files alone: a file a
//!    build needs but the package leaves out fails here, not on crates.io. `cargo package`'s own
//!    verification would build the ralph crates a second time, for nothing it does not check.
//! 3. The installed `ralph` says its version and the commit it was packaged from, and runs the
//!    bundled demo to its first idle iteration.
//!
//! The verification and the install (a debug build: what is checked is the package's contents;
//! the release profile's size is `cargo xtask bench`'s row) build in a target folder of their
//! own, emptied each time, and what earlier runs unpacked of these crates is removed first: cargo
//! holds a crate's version to be its contents, and ours change under one version between
//! releases.

use std::path::Path;
use std::process::Command;

/// The published crates, libraries first; the last is the CLI package. `ralph-test-support`
/// (`publish = false`, test code) is not one: it is neither packed nor installed.
const CRATES: [&str; 18] = [
    "ralph-atomic",
    "ralph-marker",
    "ralph-events",
    "ralph-frontmatter",
    "ralph-backoff",
    "ralph-agents",
    "ralph-process",
    "ralph-sandbox",
    "ralph-engine",
    "ralph-tasks",
    "ralph-escalation",
    "ralph-parallel",
    "ralph-rest",
    "ralph-github",
    "ralph-gitlab",
    "ralph-linear",
    "ralph-notify",
    CLI_PACKAGE,
];
const CLI_PACKAGE: &str = "ralph-loop";
/// The workspace's packages that are never published.
const UNPUBLISHED: [&str; 2] = ["xtask", "ralph-test-support"];
/// The workspace's version, which every crate inherits.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Packs, installs from the packages and runs the installed binary; the first failure is the error.
pub(crate) fn run(root: &Path) -> Result<(), String> {
    let target = crate::target_dir(root);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());

    forget_earlier_unpacks()?;
    // Cargo takes a registry crate it has built as built, whatever its sources now say: the
    // packages are verified in a target folder of their own, emptied first.
    let verify_target = target.join("package-verify");
    match std::fs::remove_dir_all(&verify_target) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(format!("cannot empty {}: {err}", verify_target.display())),
    }
    eprintln!("package: cargo package --workspace --no-verify, but for {UNPUBLISHED:?}");
    let mut package = Command::new(&cargo);
    package.args(["package", "--workspace", "--no-verify"]);
    for name in UNPUBLISHED {
        package.args(["--exclude", name]);
    }
    run_ok(
        package
            .arg("--target-dir")
            .arg(&verify_target)
            .current_dir(root),
    )?;

    let scratch =
        tempfile::tempdir().map_err(|err| format!("cannot make a scratch folder: {err}"))?;
    let sources = scratch.path().join("src");
    std::fs::create_dir(&sources).map_err(|err| format!("{}: {err}", sources.display()))?;
    for name in CRATES {
        let file = verify_target
            .join("package")
            .join(format!("{name}-{VERSION}.crate"));
        run_ok(
            Command::new("tar")
                .arg("-xzf")
                .arg(&file)
                .arg("-C")
                .arg(&sources),
        )?;
    }
    let unpacked = |name: &str| sources.join(format!("{name}-{VERSION}"));

    eprintln!("package: cargo install {CLI_PACKAGE} from its .crate file");
    let install_root = scratch.path().join("root");
    let mut install = Command::new(&cargo);
    install
        .arg("install")
        .arg("--path")
        .arg(unpacked(CLI_PACKAGE))
        .arg("--root")
        .arg(&install_root)
        .args(["--debug", "--locked", "--target-dir"])
        .arg(&verify_target);
    for name in &CRATES[..CRATES.len() - 1] {
        install.arg("--config").arg(format!(
            "patch.crates-io.{name}.path='{}'",
            unpacked(name).display()
        ));
    }
    run_ok(&mut install)?;
    let ralph = install_root.join("bin").join("ralph");

    check_version(&ralph, root)?;
    run_demo(&ralph, root, scratch.path())?;
    eprintln!("package: ok, {CLI_PACKAGE} {VERSION} installs from its package and runs");
    Ok(())
}

/// Removes what earlier runs unpacked of these crates from cargo's registry cache.
///
/// `cargo package` verifies each crate against the others through a local registry it makes in
/// the target folder; cargo unpacks a crate from it into `$CARGO_HOME/registry/src/-<hash>/` and
/// never unpacks the same name and version again. A second run on the same machine, sources
/// changed but the version not, would build against the first run's code. These crates come from
/// no other registry (`-<hash>` folders are local ones), so what is there is only ever stale.
fn forget_earlier_unpacks() -> Result<(), String> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let registries = match std::fs::read_dir(cargo_home.join("registry").join("src")) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(format!("cannot list cargo's registry sources: {err}")),
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for name in CRATES {
            let unpacked = registry.path().join(format!("{name}-{VERSION}"));
            match std::fs::remove_dir_all(&unpacked) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(format!("cannot remove {}: {err}", unpacked.display())),
            }
        }
    }
    Ok(())
}

/// `ralph --version` names this version and the commit the package was made from.
fn check_version(ralph: &Path, root: &Path) -> Result<(), String> {
    let version = output(Command::new(ralph).arg("--version"))?;
    let head = output(
        Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(root),
    )?;
    let expected = format!("ralph {VERSION} (commit {}", head.trim());
    if !version.starts_with(&expected) {
        return Err(format!(
            "the installed `ralph --version` printed {:?}, expected it to start with {expected:?}",
            version.trim()
        ));
    }
    eprintln!("package: {}", version.trim());
    Ok(())
}

/// The README's first command with the installed binary: the demo works, then goes idle.
fn run_demo(ralph: &Path, root: &Path, scratch: &Path) -> Result<(), String> {
    let events = scratch.join("events.jsonl");
    let out = Command::new(ralph)
        .args(["run", "fixtures/demo", "--no-color", "-n", "3", "--events"])
        .arg(&events)
        .arg("--log-dir")
        .arg(scratch.join("runs"))
        .current_dir(root)
        .output()
        .map_err(|err| format!("cannot run {}: {err}", ralph.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains("Task 2 done.") {
        return Err(format!(
            "the installed ralph's demo run ended {}:\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let events =
        std::fs::read_to_string(&events).map_err(|err| format!("{}: {err}", events.display()))?;
    if !events.contains("\"ITERATION_IDLE\"") {
        return Err(format!("the demo never went idle; its events:\n{events}"));
    }
    eprintln!("package: the installed ralph ran the demo to its first idle iteration");
    Ok(())
}

fn run_ok(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|err| format!("cannot run {cmd:?}: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?}: {status}"))
    }
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|err| format!("cannot run {cmd:?}: {err}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{cmd:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crate names here and the workspace's published members agree; the unpublished
    /// ones say `publish = false`.
    #[test]
    fn every_published_crate_is_packed_and_installed() {
        let root = crate::workspace_root();
        let mut members = Vec::new();
        for entry in std::fs::read_dir(root.join("crates")).unwrap() {
            let manifest =
                std::fs::read_to_string(entry.unwrap().path().join("Cargo.toml")).unwrap();
            let name = manifest
                .lines()
                .find_map(|line| line.strip_prefix("name = "))
                .unwrap()
                .trim_matches('"')
                .to_owned();
            let published = !manifest.lines().any(|line| line == "publish = false");
            assert_eq!(
                published,
                !UNPUBLISHED.contains(&name.as_str()),
                "{name}: `publish = false` and UNPUBLISHED disagree"
            );
            if published {
                members.push(name);
            }
        }
        members.sort();
        let mut listed: Vec<String> = CRATES.iter().map(|name| (*name).to_owned()).collect();
        listed.sort();
        assert_eq!(members, listed);
        assert_eq!(CRATES.last(), Some(&CLI_PACKAGE));
    }

    /// Installing the CLI builds every published crate from its package: none is left out of
    /// its dependency tree (the packing itself verifies nothing).
    #[test]
    fn installing_the_cli_builds_every_published_crate() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let tree = output(
            Command::new(cargo)
                .args([
                    "tree",
                    "--offline",
                    "--prefix",
                    "none",
                    "--edges",
                    "normal,build",
                ])
                .args(["--package", CLI_PACKAGE])
                .current_dir(crate::workspace_root()),
        )
        .unwrap();
        let built: Vec<&str> = tree
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        for name in CRATES {
            assert!(
                built.contains(&name),
                "{name} is not in {CLI_PACKAGE}'s dependency tree: installing it would not build it"
            );
        }
    }
}
