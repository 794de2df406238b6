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

impl CompiledProgram {
    /// Blocks of this kernel that fit on one multiprocessor (by registers, shared memory and
    /// threads).
    pub fn blocks_per_sm(&self) -> u32 {
        blocks_by_registers(self.report.registers, self.plan.block_threads).min(
            blocks_by_shared_memory(self.plan.smem_bytes, self.plan.block_threads),
        )
    }
}

/// What an entry's `meta.json` records, by version: entries written before a field was added
/// would read as if ptxas had reported nothing there, so a new field keys new entries.
const META_FORMAT: &str = "meta v2: serialized wgmma";

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
        META_FORMAT.as_bytes(),
    ]))
}

/// Shared memory of one multiprocessor on sm_90, and what the driver reserves per block.
const SM_SHARED_BYTES: u32 = 228 * 1024;
const BLOCK_RESERVED_SHARED: u32 = 1024;

/// Blocks of `threads` threads with `smem` bytes of shared memory that fit on one
/// multiprocessor by shared memory and thread count alone.
pub fn blocks_by_shared_memory(smem: u32, threads: u32) -> u32 {
    let by_smem = SM_SHARED_BYTES / (smem + BLOCK_RESERVED_SHARED);
    by_smem.min(2048 / threads.max(1)).min(32)
}

/// Blocks that fit by registers (allocated per warp in units of 256: 8 per thread).
pub fn blocks_by_registers(registers: u32, threads: u32) -> u32 {
    let per_thread = registers.max(1).div_ceil(8) * 8;
    65536 / (per_thread * threads.max(1))
}

struct Attempt {
    source: String,
    cubin: Option<Vec<u8>>,
    log: String,
    report: ResourceReport,
    min_blocks: u32,
}

fn attempt(name: &str, source: String, min_blocks: u32) -> Result<Attempt> {
    let out = compile_cubin(&source, name)?;
    NVRTC_RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut report = ResourceReport::parse(&out.log);
    if let Some(cubin) = &out.cubin {
        report.code_bytes = report::code_bytes(cubin, name).unwrap_or(0);
    }
    Ok(Attempt {
        source,
        cubin: out.cubin,
        log: out.log,
        report,
        min_blocks,
    })
}

/// Emits, compiles (or finds in the cache) a planned program.
///
/// Unless the script fixed it (`min_blocks_per_sm`) or moves registers between warp groups,
/// the occupancy is chosen here: after the
/// first compilation, as long as shared memory would allow more blocks per multiprocessor than
/// the registers do, the program is compiled again asking for one more block, and the result
/// is kept if it neither spills, nor uses a stack frame, nor has its wgmmas serialized where
/// the compilation before had not. More resident blocks hide the latency
/// of the copies and barriers of the others.
pub fn compile(program: &Program, plan: &LaunchPlan) -> Result<CompiledProgram> {
    // moving registers between warp groups starts from the launch count, which the occupancy
    // fixes: such programs keep the occupancy they were written (and verified) with
    let auto = program.min_blocks.is_none() && !crate::ir::sets_max_registers(program);
    let emit_with = |min_blocks: u32| {
        let mut p = program.clone();
        p.min_blocks = Some(min_blocks);
        crate::codegen::emit_cuda(&p, plan)
    };
    let base_min = program.min_blocks.unwrap_or(1);
    let base = emit_with(base_min);
    let key = if auto {
        content_key(&format!("{base}\n// occupancy: search v2\n"))?
    } else {
        content_key(&base)?
    };
    let name = program.name.clone();
    let dir = cache::entry_dir(&name, &key);
    let hit = |cubin: Vec<u8>, meta: cache::Meta| CompiledProgram {
        name: name.clone(),
        // the kept compilation's source: the base one unless the occupancy search moved on
        source: if meta.min_blocks.max(1) == base_min {
            base.clone()
        } else {
            emit_with(meta.min_blocks)
        },
        // (entries written before the report counted the code: counted now)
        report: ResourceReport {
            code_bytes: match meta.report.code_bytes {
                0 => report::code_bytes(&cubin, &name).unwrap_or(0),
                n => n,
            },
            ..meta.report
        },
        cubin,
        plan: plan.clone(),
        cache_dir: Some(dir.clone()),
        key: key.clone(),
        from_cache: true,
        compile_seconds: 0.0,
    };
    if let Some((cubin, meta)) = cache::load(&name, &key) {
        return Ok(hit(cubin, meta));
    }
    // One compilation per program across processes: whoever holds the entry's lock compiles,
    // the others find the finished entry when they get the lock.
    let _lock = cache::EntryLock::acquire(&name, &key);
    if let Some((cubin, meta)) = cache::load(&name, &key) {
        return Ok(hit(cubin, meta));
    }
    let t0 = Instant::now();
    let mut best = attempt(&name, base.clone(), base_min)?;
    if auto && best.cubin.is_some() && best.report.spill_stores == 0 && best.report.stack_frame == 0
    {
        let threads = program.threads();
        let limit = blocks_by_shared_memory(plan.smem_bytes, threads);
        let mut have = blocks_by_registers(best.report.registers, threads).max(best.min_blocks);
        while have < limit {
            let next = attempt(&name, emit_with(have + 1), have + 1)?;
            // (squeezed registers may leave ptxas serializing the wgmmas instead of spilling,
            // C7512: slower than the occupancy gains)
            let clean = next.cubin.is_some()
                && next.report.spill_stores == 0
                && next.report.stack_frame == 0
                && (next.report.serialized_wgmma.is_none()
                    || best.report.serialized_wgmma.is_some());
            if !clean {
                break;
            }
            have = blocks_by_registers(next.report.registers, threads).max(next.min_blocks);
            best = next;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let source_path = cache::store_source(&name, &key, &best.source, &best.log);
    let Some(cubin) = best.cubin else {
        return Err(Error::Compile {
            kernel: name,
            source_path: source_path
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "<not written>".into()),
            log: best.log,
        });
    };
    let info = nvrtc()?;
    let meta = cache::Meta {
        kernel: name.clone(),
        key: key.clone(),
        nvrtc: format!("{}.{}", info.version.0, info.version.1),
        arch: ARCH.into(),
        options: options(),
        cubin_sha256: cache::sha256_hex(&[&cubin]),
        report: best.report.clone(),
        compile_seconds: secs,
        min_blocks: best.min_blocks,
    };
    cache::store_cubin(&name, &key, &cubin, &meta);
    Ok(CompiledProgram {
        name,
        source: best.source,
        cubin,
        report: best.report,
        plan: plan.clone(),
        cache_dir: source_path.map(|_| dir),
        key,
        from_cache: false,
        compile_seconds: secs,
    })
}
