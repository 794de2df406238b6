//! Embeds the commit the `tilus` binary is built from as `TILUS_COMMIT`, for the rows
//! `tilus bench matmul --record` writes: the binary runs on GPU hosts that have neither git nor
//! the source tree, so the commit must travel inside it.
//!
//! - `TILUS_COMMIT` set in the build's environment wins (a packager that knows better);
//! - otherwise `git rev-parse --short=12 HEAD`, with `-dirty` when `git status` shows changes to
//!   tracked files (untracked files do not change what is built);
//! - `unknown` when git, or the repository, is not there (a build from a source archive): the
//!   build never fails for want of a commit.
//!
//! The script reruns when HEAD moves (a checkout, a commit: `HEAD`, the branch's ref file,
//! `packed-refs`), the index changes (staging), or anything under the workspace's sources
//! changes (`crates/`, `examples/`, the manifests): an edit that is not staged makes the next
//! build `-dirty` at once. (Before, such an edit left the mark off until the next commit or
//! `git add`, and rows were recorded under a clean hash for code that was not committed.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TILUS_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let commit = match std::env::var("TILUS_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => from_git().unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=TILUS_COMMIT={commit}");
}

/// The directory git runs in: the crate's own (cargo's working directory for build scripts).
fn here() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The output of `git ARGS` when it ran and succeeded, trimmed.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(here())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Asks cargo to rerun this script when the file git keeps at `git_path` (`HEAD`,
/// `refs/heads/main`) changes, if it exists: a missing file would make cargo rerun the script
/// on every build (a packed ref has no file of its own; `packed-refs` is watched for it).
fn watch(git_path: &str) {
    if let Some(p) = git(&["rev-parse", "--git-path", git_path]) {
        let p = Path::new(&p);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            here().join(p)
        };
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}

/// The short commit of HEAD, `-dirty` when tracked files differ from it; `None` without git or
/// outside a repository.
fn from_git() -> Option<String> {
    let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
    if hash.is_empty() {
        return None;
    }
    watch("HEAD");
    watch("index");
    watch("packed-refs");
    // the sources: cargo scans a watched directory for any changed file
    if let Some(top) = git(&["rev-parse", "--show-toplevel"]) {
        for part in ["crates", "examples", "Cargo.toml", "Cargo.lock"] {
            let p = Path::new(&top).join(part);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    // the branch HEAD points to; none when HEAD is detached
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&r);
    }
    // without optional locks git does not rewrite the index it reads, which would make the
    // watched index newer than this run and rerun the script on the next build
    let dirty = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ])
    .is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}
