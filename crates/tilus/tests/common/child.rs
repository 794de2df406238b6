//! Running one test of the current binary in a child process: for what a process does once
//! (loading NVRTC, reading its environment) and for two processes racing on one cache.
//!
//! The child test is an ordinary `#[test]` that returns at once unless a variable the parent
//! sets says that the process is its child ([`has_child_cache`] for [`CHILD_CACHE`], or one of
//! the test's own); the parent starts it with [`command`] and reads what it prints.

use std::process::Command;

use super::CHILD_CACHE;

/// The full name of test `name` in the module `module_path` (pass `module_path!()`), as
/// libtest knows it: the module path without the crate's name.
pub fn test_name(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    }
}

/// A command that runs exactly the test `test` (see [`test_name`]) of this binary on one
/// thread, with its output shown, in a child process whose cache directory is `cache` (or,
/// with `None`, a fresh one of its own).
pub fn command(test: &str, cache: Option<&std::path::Path>) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", test, "--nocapture", "--test-threads", "1"]);
    match cache {
        Some(dir) => cmd.env(CHILD_CACHE, dir),
        None => cmd.env_remove(CHILD_CACHE),
    };
    cmd
}

/// Whether this process is a child started by [`command`] with a cache directory.
pub fn has_child_cache() -> bool {
    std::env::var_os(CHILD_CACHE).is_some()
}
