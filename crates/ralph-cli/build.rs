//! Puts the commit ralph is built from into `ralph --version`, as `RALPH_VERSION`.
//!
//! In a git checkout the commit is asked of git; in a packaged crate (crates.io, `cargo install`)
//! there is no `.git`, and the commit is the one cargo recorded in `.cargo_vcs_info.json` when it
//! packaged the crate. A build from neither (a tarball) says so rather than guessing.

// Cargo reads a build script's instructions from its standard output.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let version = std::env::var("CARGO_PKG_VERSION").expect("set by cargo");
    // A packaged crate first: one unpacked inside some other repository must not take its HEAD.
    let commit = commit_from_vcs_info(&manifest_dir)
        .or_else(|| commit_from_git(&manifest_dir))
        .unwrap_or_else(|| "commit unknown".to_owned());
    println!("cargo:rustc-env=RALPH_VERSION={version} ({commit})");
    // Without any rerun-if-changed line cargo would run this again on every change in the
    // package; this file is always there.
    println!("cargo:rerun-if-changed=build.rs");
    watch(&manifest_dir.join(".cargo_vcs_info.json"));
}

/// Tells cargo to run this again when `path` changes, if it exists: cargo runs a build script
/// whose watched file is missing on every build, which re-links `ralph` each time.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `commit 1a2b3c4d5e6f`, and tells cargo to run this again when HEAD moves.
fn commit_from_git(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let sha = git(&["rev-parse", "--short=12", "HEAD"])?;
    // HEAD, its reflog, the branch it names and packed-refs: a commit, checkout or reset
    // changes one of them. The reflog also catches a branch that lived only in packed-refs
    // getting its loose file on the next commit.
    let git_dir = PathBuf::from(git(&["rev-parse", "--absolute-git-dir"])?);
    let common_dir = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map(PathBuf::from)
        .unwrap_or_else(|| git_dir.clone());
    watch(&git_dir.join("HEAD"));
    watch(&git_dir.join("logs").join("HEAD"));
    watch(&common_dir.join("packed-refs"));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&common_dir.join(branch));
    }
    Some(format!("commit {sha}"))
}

/// The commit `cargo package` recorded, `{"git": {"sha1": "...", "dirty": true}, ...}`
/// (`dirty` when it packaged uncommitted changes).
fn commit_from_vcs_info(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let sha = value.get("git")?.get("sha1")?.as_str()?;
    let dirty = value["git"]["dirty"].as_bool() == Some(true);
    Some(format!(
        "commit {}{}",
        sha.get(..12).unwrap_or(sha),
        if dirty { ", modified" } else { "" }
    ))
}
