//! From a planned program to a cubin: CUDA C++ emission, NVRTC, and the on-disk cache.

pub mod cache;
mod nvrtc;
mod report;

pub use nvrtc::{compile_cubin, nvrtc, options, NvrtcInfo, NvrtcOutput};
pub use report::ResourceReport;

use crate::ir::{LaunchPlan, Program};
use crate::{Error, Result};
use std::path::PathBuf;
use std::time::Instant;

/// The target architecture.
pub const ARCH: &str = "sm_90a";

static NVRTC_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many programs this process has compiled with NVRTC (cache hits not counted).
pub fn nvrtc_runs() -> usize {
    NVRTC_RUNS.load(std::sync::atomic::Ordering::Relaxed)
}

/// A compiled program, ready to load.
#[derive(Clone, Debug)]
pub struct CompiledProgram {
    /// Kernel name.
    pub name: String,
    /// Generated CUDA C++.
    pub source: String,
    /// The sm_90a cubin.
    pub cubin: Vec<u8>,
    /// Registers, spills, stack.
    pub report: ResourceReport,
    /// What the host needs to launch it.
    pub plan: LaunchPlan,
    /// The cache entry, when the cache is writable.
    pub cache_dir: Option<PathBuf>,
    /// Content key.
    pub key: String,
    /// Whether the cubin came from the cache.
    pub from_cache: bool,
    /// Seconds NVRTC took (when it ran).
    pub compile_seconds: f64,
}

/// The content key of a source under the current NVRTC.
pub fn content_key(source: &str) -> Result<String> {
    let info = nvrtc()?;
    let version = format!("{}.{}", info.version.0, info.version.1);
    let opts = options().join(" ");
    Ok(cache::sha256_hex(&[
        source.as_bytes(),
        opts.as_bytes(),
        version.as_bytes(),
        ARCH.as_bytes(),
    ]))
}

/// Emits, compiles (or finds in the cache) a planned program.
pub fn compile(program: &Program, plan: &LaunchPlan) -> Result<CompiledProgram> {
    let source = crate::codegen::emit_cuda(program, plan);
    let key = content_key(&source)?;
    let name = program.name.clone();
    let dir = cache::entry_dir(&name, &key);
    if let Some((cubin, meta)) = cache::load(&name, &key) {
        return Ok(CompiledProgram {
            name,
            source,
            cubin,
            report: meta.report,
            plan: plan.clone(),
            cache_dir: Some(dir),
            key,
            from_cache: true,
            compile_seconds: 0.0,
        });
    }
    // One compilation per program across processes: whoever holds the entry's lock compiles,
    // the others find the finished entry when they get the lock.
    let _lock = cache::EntryLock::acquire(&name, &key);
    if let Some((cubin, meta)) = cache::load(&name, &key) {
        return Ok(CompiledProgram {
            name,
            source,
            cubin,
            report: meta.report,
            plan: plan.clone(),
            cache_dir: Some(dir),
            key,
            from_cache: true,
            compile_seconds: 0.0,
        });
    }
    let t0 = Instant::now();
    let out = compile_cubin(&source, &name)?;
    NVRTC_RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let secs = t0.elapsed().as_secs_f64();
    let source_path = cache::store_source(&name, &key, &source, &out.log);
    let Some(cubin) = out.cubin else {
        return Err(Error::Compile {
            kernel: name,
            source_path: source_path
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "<not written>".into()),
            log: out.log,
        });
    };
    let report = ResourceReport::parse(&out.log);
    let info = nvrtc()?;
    let meta = cache::Meta {
        kernel: name.clone(),
        key: key.clone(),
        nvrtc: format!("{}.{}", info.version.0, info.version.1),
        arch: ARCH.into(),
        options: options(),
        cubin_sha256: cache::sha256_hex(&[&cubin]),
        report: report.clone(),
        compile_seconds: secs,
    };
    cache::store_cubin(&name, &key, &cubin, &meta);
    Ok(CompiledProgram {
        name,
        source,
        cubin,
        report,
        plan: plan.clone(),
        cache_dir: source_path.map(|_| dir),
        key,
        from_cache: false,
        compile_seconds: secs,
    })
}
