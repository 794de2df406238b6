//! Timing candidates on the real arguments: CUDA events around each run, warm-up first, the L2
//! cache flushed before every timed run so each candidate starts from the same state, and the
//! median kept. Outputs go to scratch copies so the caller's buffers are untouched.

use crate::ir::HostValue;
use crate::runtime::LoadedKernel;
use crate::{Error, Result};
use cudarc::driver::{sys, CudaSlice, CudaStream};
use std::sync::Arc;

fn drv(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Driver {
        call,
        message: format!("{e:?}"),
    }
}

/// Bytes written between timed runs to evict the L2 cache (the H100/H200 L2 is 50-60 MB).
pub const L2_FLUSH_BYTES: usize = 256 << 20;

/// A buffer of [`L2_FLUSH_BYTES`] whose write, queued before a timed run, evicts the L2 cache
/// (and keeps the device busy while the run's launch is queued behind it).
pub struct L2Flush(CudaSlice<u8>);

impl L2Flush {
    /// Allocates the buffer on `stream`'s device.
    pub fn new(stream: &Arc<CudaStream>) -> Result<L2Flush> {
        let buf = stream
            .alloc_zeros::<u8>(L2_FLUSH_BYTES)
            .map_err(drv("cuMemAlloc"))?;
        Ok(L2Flush(buf))
    }

    /// Queues the write of the whole buffer on `stream`.
    pub fn run(&mut self, stream: &CudaStream) -> Result<()> {
        let (p, _g) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut self.0, stream);
        // SAFETY: writes the whole flush buffer, which this struct owns.
        unsafe {
            cudarc::driver::result::memset_d8_async(p, 0x5a, L2_FLUSH_BYTES, stream.cu_stream())
        }
        .map_err(drv("cuMemsetD8Async"))
    }
}

/// Device buffers the benchmark needs for one set of arguments.
pub struct BenchScratch {
    flush: L2Flush,
    outputs: Vec<CudaSlice<u8>>,
    /// The arguments with every mutable buffer replaced by its scratch copy.
    pub values: Vec<HostValue>,
}

impl BenchScratch {
    /// Copies the buffers at `mutable` positions of `values` into scratch buffers.
    pub fn new(
        stream: &Arc<CudaStream>,
        values: &[HostValue],
        mutable: &[usize],
    ) -> Result<BenchScratch> {
        let flush = L2Flush::new(stream)?;
        let mut values = values.to_vec();
        let mut outputs = vec![];
        for &i in mutable {
            if let HostValue::Ptr { ptr, bytes } = values[i] {
                let mut s = stream
                    .alloc_zeros::<u8>(bytes.max(1))
                    .map_err(drv("cuMemAlloc"))?;
                let (dst, _g) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut s, stream);
                // SAFETY: both ranges are `bytes` long device allocations; the copy is ordered
                // on `stream` before any launch that reads the scratch buffer.
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(dst, ptr, bytes, stream.cu_stream())
                }
                .map_err(drv("cuMemcpyDtoDAsync"))?;
                drop(_g);
                values[i] = HostValue::Ptr { ptr: dst, bytes };
                outputs.push(s);
            }
        }
        Ok(BenchScratch {
            flush,
            outputs,
            values,
        })
    }

    /// `runs` untimed runs of `kernel` (its module loaded, its caches warm).
    pub fn warm_up(
        &mut self,
        stream: &Arc<CudaStream>,
        kernel: &LoadedKernel,
        runs: usize,
    ) -> Result<()> {
        for _ in 0..runs {
            kernel.launch(stream, &self.values)?;
        }
        Ok(())
    }

    /// The median time in milliseconds of `reps` runs after `warmup` runs.
    pub fn time(
        &mut self,
        stream: &Arc<CudaStream>,
        kernel: &LoadedKernel,
        warmup: usize,
        reps: usize,
    ) -> Result<f64> {
        let _ = &self.outputs;
        self.warm_up(stream, kernel, warmup)?;
        let ctx = stream.context();
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            self.flush.run(stream)?;
            let start = ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("cuEventCreate"))?;
            let end = ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("cuEventCreate"))?;
            start.record(stream).map_err(drv("cuEventRecord"))?;
            kernel.launch(stream, &self.values)?;
            end.record(stream).map_err(drv("cuEventRecord"))?;
            end.synchronize().map_err(drv("cuEventSynchronize"))?;
            times.push(start.elapsed_ms(&end).map_err(drv("cuEventElapsedTime"))? as f64);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        Ok(times[times.len() / 2])
    }
}
