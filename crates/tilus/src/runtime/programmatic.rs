//! Programmatic dependent launch: a kernel that waits for the grid before it
//! ([`crate::Kernel::wait_for_prior_grid`]) may be launched with the driver's programmatic
//! stream serialization, so that its launch and its blocks' start overlap the end of that
//! grid instead of following it. On unless `TILUS_PROGRAMMATIC_LAUNCH=0`: measured twice in
//! alternation with the ordinary launch (docs/perf.md, 2026-12-07, twenty-fifth session): the
//! decode step 6% faster at 1 × 8192 and 3% at 4 × 8192, unchanged at the larger batches and
//! at split-K's sums; the GPU tests of both pass either way.

use super::device::driver_err;
use crate::Result;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::OnceLock;

/// Whether launches of kernels that wait for the grid before them use programmatic stream
/// serialization (yes unless `TILUS_PROGRAMMATIC_LAUNCH=0`; read once per process).
pub fn programmatic_launch() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let setting = std::env::var("TILUS_PROGRAMMATIC_LAUNCH");
        !matches!(setting.as_deref().map(str::trim), Ok("0"))
    })
}

/// `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` set.
///
/// # Safety
/// As `cuLaunchKernel`: `func` is a loaded kernel, `args` one pointer per parameter in the
/// order and with the types of its signature, and everything they point at outlives the call;
/// the kernel starts with `griddepcontrol.wait` before it touches memory.
pub(crate) unsafe fn launch(
    func: sys::CUfunction,
    grid: [u32; 3],
    block_threads: u32,
    smem_bytes: u32,
    stream: sys::CUstream,
    args: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: a plain-data union of C types; zeroed is a valid value (the driver reads the
    // member `id` selects).
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    let config = sys::CUlaunchConfig {
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block_threads,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: smem_bytes,
        hStream: stream,
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: `config` and `attr` live across the call; the caller vouches for `func` and
    // `args` (see above).
    unsafe { sys::cuLaunchKernelEx(&config, func, args.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
        .map_err(driver_err("cuLaunchKernelEx"))
}
