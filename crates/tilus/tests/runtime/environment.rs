//! Environment faults give clear errors, never panics: no CUDA driver or GPU, no NVRTC (or a
//! wrong TILUS_NVRTC_DIR), an unwritable cache directory. The NVRTC and cache cases run in a
//! child process, since NVRTC is loaded once per process.

use crate::common::child;
use std::path::Path;
use tilus::prelude::*;
use tilus::Error;

#[derive(Clone, Debug, Hash)]
struct Fill;

impl Script for Fill {
    type Args = (i32, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
        k.blocks([cdiv(n, 32)]);
        k.warps(1);
        let off = k.let_i32(32 * k.block_idx().x);
        let t = k.register_tensor::<f32>([32], 3.0);
        let g = k.global_view::<f32>(out, [n]);
        k.store_global(&g, &t, [off]);
    }
}

#[test]
fn opening_a_device_never_panics() {
    match tilus::runtime::Device::open(0) {
        Ok(d) => assert_eq!(d.compute_capability().0, 9),
        Err(Error::NoGpu(m)) => assert!(!m.is_empty()),
        Err(Error::UnsupportedGpu { major, .. }) => assert_ne!(major, 9),
        Err(e) => panic!("unexpected error kind: {e}"),
    }
    // a GPU that does not exist is an error too
    assert!(tilus::runtime::Device::open(4096).is_err());
}

/// Runs the test `test` of this module in a child process with `envs`, and a cache directory
/// of its own or `cache`.
fn child(test: &str, cache: Option<&Path>, envs: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = child::command(&child::test_name(module_path!(), test), cache);
    cmd.env("TILUS_ENV_CHILD", "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Child: a build without NVRTC fails with a typed error; tracing and emitting still work.
#[test]
fn child_without_nvrtc() {
    if std::env::var("TILUS_ENV_CHILD").is_err() {
        return;
    }
    assert!(tilus::emit(&Fill, &[]).unwrap().contains("__global__"));
    match tilus::build(&Fill, &[]) {
        Err(Error::NvrtcUnavailable(m)) => println!("CHILD-NVRTC-ERROR {m}"),
        other => panic!("expected NvrtcUnavailable, got {:?}", other.map(|c| c.name)),
    }
}

#[test]
fn a_wrong_nvrtc_directory_is_a_clear_error() {
    let (ok, text) = child(
        "child_without_nvrtc",
        None,
        &[("TILUS_NVRTC_DIR", "/nonexistent/nvrtc")],
    );
    assert!(ok, "{text}");
    assert!(
        text.contains("CHILD-NVRTC-ERROR") && text.contains("TILUS_NVRTC_DIR=/nonexistent/nvrtc"),
        "{text}"
    );
}

/// Child: with an unwritable cache, builds still succeed (kept in memory) and one warning says so.
#[test]
fn child_unwritable_cache() {
    if std::env::var("TILUS_ENV_CHILD").is_err() {
        return;
    }
    let a = tilus::build(&Fill, &[]).unwrap();
    let b = tilus::build(&Fill, &[]).unwrap();
    assert!(a.cache_dir.is_none() && !b.from_cache);
    assert_eq!(a.cubin, b.cubin);
    println!("CHILD-BUILT {}", a.cubin.len());
}

#[test]
fn an_unwritable_cache_degrades_to_memory_with_one_warning() {
    // a path below a regular file can never be created, even by root
    let file = std::env::temp_dir().join(format!("tilus-not-a-dir-{}", std::process::id()));
    std::fs::write(&file, b"x").unwrap();
    let cache = file.join("cache");
    let (ok, text) = child("child_unwritable_cache", Some(&cache), &[]);
    let _ = std::fs::remove_file(&file);
    assert!(ok, "{text}");
    assert!(text.contains("CHILD-BUILT"), "{text}");
    assert_eq!(
        text.matches("tilus: warning: cannot write the cache")
            .count(),
        1,
        "{text}"
    );
}

#[test]
fn doctor_reports_without_panicking() {
    let r = tilus::doctor::report();
    let text = r.to_string();
    for what in ["driver", "nvrtc", "cache"] {
        assert!(r.findings.iter().any(|f| f.what == what), "{text}");
    }
    assert!(text.contains("run kernels on the CPU interpreter"));
}
