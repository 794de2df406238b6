//! The GPU: driver discovery, context and stream.

use crate::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// Whether the CUDA driver library can be loaded. cudarc panics when it cannot, so every
/// entry point checks this first and returns [`Error::NoGpu`] instead.
pub fn driver_available() -> bool {
    // SAFETY: only tries to open the library by name.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

pub(crate) fn driver_err(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Driver {
        call,
        message: format!("{e:?}"),
    }
}

/// A Hopper GPU: its context and a stream.
#[derive(Clone, Debug)]
pub struct Device {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (i32, i32),
}

impl Device {
    /// Opens GPU `ordinal`; fails with a clear error when there is no driver, no GPU, or the GPU
    /// is not sm_90.
    pub fn open(ordinal: usize) -> Result<Device> {
        if !driver_available() {
            return Err(Error::NoGpu(
                "the CUDA driver (libcuda.so) is not installed or not on the loader path".into(),
            ));
        }
        let count = CudaContext::device_count()
            .map_err(|e| Error::NoGpu(format!("cuInit/cuDeviceGetCount failed: {e:?}")))?;
        if count <= ordinal as i32 {
            return Err(Error::NoGpu(format!(
                "GPU {ordinal} requested, {count} present"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(driver_err("cuCtxCreate"))?;
        let name = ctx.name().map_err(driver_err("cuDeviceGetName"))?;
        let cc = ctx
            .compute_capability()
            .map_err(driver_err("cuDeviceGetAttribute"))?;
        if cc.0 != 9 {
            return Err(Error::UnsupportedGpu {
                name,
                major: cc.0,
                minor: cc.1,
            });
        }
        // Tilus launches on the stream it is given; callers order work across streams
        // themselves, as in CUDA. Skipping cudarc's per-buffer event tracking keeps launches cheap.
        // SAFETY: no buffers have been allocated in this context yet by us; buffers allocated
        // later are ordered by their streams.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Device {
            ctx,
            stream,
            name,
            compute_capability: cc,
        })
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device's default stream.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The GPU's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The driver's CUDA version, e.g. 13000 for 13.0.
    pub fn driver_version(&self) -> i32 {
        let mut v = 0;
        // SAFETY: writes one int; the driver is loaded (a context exists).
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
        v
    }

    /// `(major, minor)` compute capability.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }
}
