//! Helpers for the series' tests.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Points the compile cache (`TILUS_CACHE_DIR`) of this test process at a directory of its
/// own, `dir/tilus-cache` (tests pass `env!("CARGO_TARGET_TMPDIR")`), so that tests never
/// write into the user's cache. Call it first in every test that compiles; later calls wait for
/// the first and return the same directory.
///
/// The first call sets an environment variable, which is only sound while no other thread may
/// read the environment (C code such as NVRTC or the loader reads it without Rust's lock): make
/// it before any test thread starts, as the series' test binary does before `main`
/// (`examples/hopper_matmul/tests/series/main.rs` and the kernel library's, CLI's and bench's test binaries); the calls in the tests then only find the
/// directory.
pub fn use_test_cache(dir: &str) -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(dir).join("tilus-cache");
        // a directory that cannot be made shows up as the cache's own warning later
        let _ = std::fs::create_dir_all(&d);
        std::env::set_var("TILUS_CACHE_DIR", &d);
        d
    })
}

/// [`use_test_cache`] with the calling test crate's `CARGO_TARGET_TMPDIR`: the first line of
/// every test that compiles, `hopper_matmul::test_cache!();`.
#[macro_export]
macro_rules! test_cache {
    () => {
        $crate::testing::use_test_cache(env!("CARGO_TARGET_TMPDIR"))
    };
}

/// The first statement of a generated kernel's body (past its comments), trimmed: what a
/// kernel does before anything else (`None` when `source` has no `__global__` body).
pub fn first_statement(source: &str) -> Option<&str> {
    let (_, kernel) = source.split_once("__global__")?;
    let (_, body) = kernel.split_once("\n{\n")?;
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("//"))
}
