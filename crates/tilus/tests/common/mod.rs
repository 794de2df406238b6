//! The harness every test binary of `crates/tilus/tests` shares (each declares `mod common;`).
//!
//! - [`Body`]: a script whose body is a plain function, for scripts written inline in a test.
//! - [`at`], [`note`], [`mark`]: line markers. A call written as `at(line!(), call)` on one
//!   line is the call a diagnostic must point at; the marker records its file and line.
//! - [`check`]: the verifier's form, `check::<Args>(body).fails_once("phrase")` (and its
//!   variants: among others, noting a second line, with constants, with an edited program).
//! - [`interp`]: interpreting a body and expecting a fault at a marked call.
//! - [`inputs`]: deterministic inputs; [`scripts`]: the scripts that several binaries run
//!   (compile tests, the interpreter, the GPU).
//! - [`child`]: running one test of the current binary in a child process.
//!
//! **No test writes into the user's cache.** Before `main` (an ELF `.init_array` entry, on
//! Linux; elsewhere at the first call of [`cache_dir`], which every compile helper makes) the
//! process points `TILUS_CACHE_DIR` at a fresh directory of its own under the system's
//! temporary directory, and removes it when it exits. A child process started through
//! [`child`] uses the directory its parent hands it in [`CHILD_CACHE`] instead (and leaves it
//! in place). A test that sets `TILUS_CACHE_DIR` itself must do so in a child process.

// Each binary uses part of the harness; `mark(.., k.sync())` passes the unit result of the
// marked call on purpose.
#![allow(dead_code, unused_imports, clippy::unit_arg)]

pub mod arith;
mod body;
pub mod child;
pub mod inputs;
pub mod interp;
mod marks;
pub mod scripts;
pub mod staged;
mod verify;
pub mod views;

pub use body::Body;
pub use marks::{at, clear_marks, line_of, mark, marked, note, Mark};
pub use verify::{check, check_script, Check, Diagnostics};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable through which a test hands a child process its cache directory (see
/// [`child`]); its presence also tells the child that it is one.
pub const CHILD_CACHE: &str = "TILUS_TEST_CHILD_CACHE";

struct CacheDir {
    path: PathBuf,
    /// Made by this process (and removed when it exits), not handed down by a parent.
    owned: bool,
}

static CACHE: OnceLock<CacheDir> = OnceLock::new();

/// The compile cache of this test process (`TILUS_CACHE_DIR`), set up on the first call.
pub fn cache_dir() -> &'static Path {
    &CACHE
        .get_or_init(|| {
            let (path, owned) = match std::env::var_os(CHILD_CACHE) {
                Some(d) => (PathBuf::from(d), false),
                None => (
                    std::env::temp_dir().join(format!("tilus-test-cache-{}", std::process::id())),
                    true,
                ),
            };
            if owned {
                // a directory left by an earlier process with the same id
                let _ = std::fs::remove_dir_all(&path);
            }
            // a directory that cannot be made shows up as the cache's own warning later
            let _ = std::fs::create_dir_all(&path);
            // Before `main` no other thread exists; afterwards every caller goes through
            // this `OnceLock`, so the variable is set once, before any test reads it.
            std::env::set_var("TILUS_CACHE_DIR", &path);
            CacheDir { path, owned }
        })
        .path
}

extern "C" fn before_main() {
    cache_dir();
}

extern "C" fn at_exit() {
    if let Some(c) = CACHE.get() {
        if c.owned {
            let _ = std::fs::remove_dir_all(&c.path);
        }
    }
}

/// Runs [`cache_dir`] before `main`, so before libtest starts any thread.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;

/// Removes this process's own cache directory when it exits.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".fini_array")]
static AT_EXIT: extern "C" fn() = at_exit;

/// Traces `script` and runs every pass; the diagnostics, or none when it compiles.
pub fn diagnostics_of<S: tilus::Script>(script: &S, consts: &[i64]) -> Vec<tilus::Diagnostic> {
    cache_dir();
    clear_marks();
    let p = tilus::trace(script, consts).expect("the script traces");
    match tilus::passes::compile_program(p) {
        Err(tilus::Error::Script(d)) => d,
        Err(e) => panic!("{e}"),
        Ok(_) => vec![],
    }
}

/// Traces, checks, plans and compiles `script` with NVRTC (into this process's cache).
#[track_caller]
pub fn build<S: tilus::Script>(script: &S, consts: &[i64]) -> tilus::compile::CompiledProgram {
    cache_dir();
    tilus::build(script, consts).unwrap_or_else(|e| panic!("{script:?}: {e}"))
}
