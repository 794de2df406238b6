//! Programmatic dependent launch: a kernel that waits for the grid before it
//! ([`crate::Kernel::wait_for_prior_grid`]) may be launched with the driver's programmatic
//! stream serialization, so that its launch and its blocks' start overlap the end of that
//! grid instead of following it. Off unless `TILUS_PROGRAMMATIC_LAUNCH=1`: measured once
//! (docs/perf.md, 2026-12-07: the decode merge at 1 × 8192, 5% off the pair's time), not yet
//! across shapes, and the ordinary launch is what every other figure there used.

use super::device::driver_err;
use crate::Result;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::OnceLock;

/// Whether launches of kernels that wait for the grid before them use programmatic stream
/// serialization (`TILUS_PROGRAMMATIC_LAUNCH=1`; read once per process).
pub fn programmatic_launch() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("TILUS_PROGRAMMATIC_LAUNCH").is_ok_and(|v| v.trim() == "1"))
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
