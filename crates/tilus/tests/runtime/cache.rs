//! The on-disk program cache, without a GPU (NVRTC only): hits, misses, invalidation when the
//! generated source changes, corrupt entries rebuilt, and two processes compiling the same
//! program at once (it is compiled once).
//!
//! All tests of this binary share the process's fresh cache directory (`common::cache_dir`);
//! each test uses its own scripts so that they do not interfere.

use crate::common::{cache_dir, child};
use tilus::prelude::*;
use tilus::tune::{compile_candidates, Binding, Space, Tunable};

/// Fills `[n]` f32 with a constant through registers: tiny, and a new `value` is a new source.
#[derive(Clone, Debug, Hash)]
struct Fill {
    value: i32,
    block: i32,
}

impl Script for Fill {
    type Args = (i32, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
        k.blocks([cdiv(n, self.block)]);
        k.warps(1);
        let off = k.let_i32(self.block * k.block_idx().x);
        let t = k.register_tensor::<f32>([self.block], self.value as f64);
        let g = k.global_view::<f32>(out, [n]);
        k.store_global(&g, &t, [off]);
    }
}

impl Tunable for Fill {
    fn space() -> Space {
        // 0 is not a script; 32768 f32 per warp is 1024 registers a thread: rejected.
        Space::new().values("block", &[32, 0, 64, 32768]).unwrap()
    }
    fn from_binding(b: &Binding) -> Result<Fill, String> {
        let block = b.get("block").ok_or("no block")? as i32;
        if block <= 0 {
            return Err(format!("block must be positive, got {block}"));
        }
        Ok(Fill { value: 7, block })
    }
}

#[test]
fn a_second_build_hits_the_cache_with_the_same_cubin() {
    cache_dir();
    let a = tilus::build(
        &Fill {
            value: 1,
            block: 32,
        },
        &[],
    )
    .unwrap();
    assert!(!a.from_cache);
    let b = tilus::build(
        &Fill {
            value: 1,
            block: 32,
        },
        &[],
    )
    .unwrap();
    assert!(b.from_cache);
    assert_eq!(a.cubin, b.cubin);
    assert_eq!(a.key, b.key);
    let dir = b.cache_dir.unwrap();
    assert!(dir.starts_with(cache_dir()));
    for f in ["source.cu", "kernel.cubin", "ptxas.log", "meta.json"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("source.cu")).unwrap(),
        b.source
    );
}

#[test]
fn a_change_in_the_generated_source_is_a_miss() {
    cache_dir();
    let a = tilus::build(
        &Fill {
            value: 2,
            block: 32,
        },
        &[],
    )
    .unwrap();
    let b = tilus::build(
        &Fill {
            value: 3,
            block: 32,
        },
        &[],
    )
    .unwrap();
    assert_ne!(a.source, b.source);
    assert_ne!(a.key, b.key);
    assert!(!b.from_cache);
    // the key covers every byte of the source
    let k1 = tilus::compile::content_key(&a.source).unwrap();
    let k2 = tilus::compile::content_key(&format!("{} ", a.source)).unwrap();
    assert_ne!(k1, k2);
    assert!(tilus::compile::cache::load(&a.name, &k2).is_none());
}

#[test]
fn a_truncated_cubin_is_rebuilt() {
    cache_dir();
    let a = tilus::build(
        &Fill {
            value: 4,
            block: 32,
        },
        &[],
    )
    .unwrap();
    let cubin = a.cache_dir.as_ref().unwrap().join("kernel.cubin");
    let len = std::fs::metadata(&cubin).unwrap().len();
    std::fs::write(&cubin, &a.cubin[..a.cubin.len() / 2]).unwrap();
    let b = tilus::build(
        &Fill {
            value: 4,
            block: 32,
        },
        &[],
    )
    .unwrap();
    assert!(!b.from_cache, "a truncated cubin must not be used");
    assert_eq!(b.cubin, a.cubin);
    assert_eq!(std::fs::metadata(&cubin).unwrap().len(), len);
    assert!(
        tilus::build(
            &Fill {
                value: 4,
                block: 32
            },
            &[]
        )
        .unwrap()
        .from_cache
    );
}

#[test]
fn a_garbage_meta_json_is_rebuilt() {
    cache_dir();
    let a = tilus::build(
        &Fill {
            value: 5,
            block: 32,
        },
        &[],
    )
    .unwrap();
    let meta = a.cache_dir.as_ref().unwrap().join("meta.json");
    std::fs::write(&meta, b"{ not json").unwrap();
    let b = tilus::build(
        &Fill {
            value: 5,
            block: 32,
        },
        &[],
    )
    .unwrap();
    assert!(!b.from_cache);
    assert!(serde_json_ok(&meta));
}

fn serde_json_ok(p: &std::path::Path) -> bool {
    let s = std::fs::read_to_string(p).unwrap();
    s.trim_start().starts_with('{') && s.contains("cubin_sha256")
}

#[test]
fn candidates_compile_in_parallel_and_failures_keep_their_reason() {
    cache_dir();
    let bindings = Fill::space().bindings();
    let out = compile_candidates::<Fill>(&bindings, &[], &|| {});
    assert_eq!(out.len(), 4);
    let summary: Vec<(i64, String)> = out
        .iter()
        .map(|(b, r)| {
            (
                b.get("block").unwrap(),
                match r {
                    Ok((s, c)) => {
                        assert_eq!(s.block as i64, b.get("block").unwrap());
                        assert!(!c.cubin.is_empty());
                        "ok".to_string()
                    }
                    Err((status, reason)) => {
                        assert!(!reason.is_empty());
                        status.clone()
                    }
                },
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (32, "ok".into()),
            (0, "invalid".into()),
            (64, "ok".into()),
            (32768, "rejected".into())
        ]
    );
    let reason = &out[3].1.as_ref().err().unwrap().1;
    assert!(
        reason.contains("registers per thread") && reason.contains("cache.rs:"),
        "{reason}"
    );
}

/// Run as a child process by the test below: builds one program and reports whether it had to
/// compile it.
#[test]
fn child_build() {
    if !child::has_child_cache() {
        return;
    }
    cache_dir();
    let c = tilus::build(
        &Fill {
            value: 99,
            block: 64,
        },
        &[],
    )
    .unwrap();
    println!(
        "CHILD-RESULT {}",
        if c.from_cache { "cached" } else { "compiled" }
    );
}

#[test]
fn two_processes_building_at_once_compile_once() {
    let dir = std::env::temp_dir().join(format!("tilus-cache-race-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let test = child::test_name(module_path!(), "child_build");
    let children: Vec<_> = (0..2)
        .map(|_| {
            child::command(&test, Some(&dir))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<String> = children
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.wait_with_output().unwrap().stdout).into_owned())
        .collect();
    let compiled = outputs
        .iter()
        .filter(|o| o.contains("CHILD-RESULT compiled"))
        .count();
    let cached = outputs
        .iter()
        .filter(|o| o.contains("CHILD-RESULT cached"))
        .count();
    assert_eq!((compiled, cached), (1, 1), "{outputs:?}");
    let entries = std::fs::read_dir(dir.join("programs")).unwrap().count();
    assert_eq!(entries, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run as a child process by the test below: prints the cache directory it starts with.
#[test]
fn child_reports_its_cache() {
    if std::env::var_os("TILUS_TEST_REPORT_CACHE").is_none() {
        return;
    }
    // read before anything of the harness runs in this test
    let at_start = std::env::var("TILUS_CACHE_DIR").unwrap_or_default();
    let root = tilus::compile::cache::cache_root();
    println!("CHILD-CACHE {at_start}");
    println!("CHILD-ROOT {}", root.display());
}

/// Every test process compiles into a fresh directory of its own under the temporary
/// directory, set before `main` even when the user has set `TILUS_CACHE_DIR`, and removed
/// when the process exits: no test writes into the user's cache.
#[test]
#[cfg(target_os = "linux")]
fn a_test_process_has_a_cache_of_its_own_from_the_start() {
    let test = child::test_name(module_path!(), "child_reports_its_cache");
    let out = child::command(&test, None)
        .env("TILUS_TEST_REPORT_CACHE", "1")
        .env("TILUS_CACHE_DIR", "/nonexistent/the-users-cache")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = |tag: &str| {
        text.lines()
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no {tag:?} in {text}"))
            .to_string()
    };
    let dir = std::path::PathBuf::from(line("CHILD-CACHE "));
    assert_eq!(line("CHILD-ROOT "), dir.display().to_string());
    assert!(dir.starts_with(std::env::temp_dir()), "{}", dir.display());
    assert_ne!(dir.as_path(), cache_dir(), "each process has its own");
    assert!(!dir.exists(), "{} is left behind", dir.display());
}
