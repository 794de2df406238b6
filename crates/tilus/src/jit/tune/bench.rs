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

/// Where each timed run starts from.
///
/// Every run is bracketed by CUDA events. What the events see depends on the device's state
/// when the start event is reached: on an idle device, the start event fires as soon as it
/// arrives, and the time the host then takes to launch the kernel (argument packing, a
/// library's heuristics) is counted as the kernel's; with work queued ahead of it, the launch
/// is in the queue before the start event fires, and the events time the kernel alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timing {
    /// Before every run the L2 cache is evicted by a write of [`L2_FLUSH_BYTES`] on the stream
    /// (so no run finds the inputs another left in L2, and the launch is queued while the
    /// write runs); a round is waited for once, at its end. The device stays busy throughout,
    /// as under sustained load (its power limit in force). The autotuner times candidates
    /// the same way.
    #[default]
    Flushed,
    /// Every run alone on an idle device: the run before is waited for, nothing is evicted.
    /// Times what one call costs from idle, its launch included.
    Idle,
}

impl Timing {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Flushed => "flushed",
            Timing::Idle => "idle",
        }
    }

    /// The timing named `name` (`flushed` or `idle`).
    pub fn parse(name: &str) -> std::result::Result<Timing, String> {
        match name {
            "flushed" => Ok(Timing::Flushed),
            "idle" => Ok(Timing::Idle),
            other => Err(format!("unknown timing `{other}` (flushed, idle)")),
        }
    }
}

/// Times several launchers interleaved (one run of each per round), with CUDA events around
/// every run, after `warmup` rounds; returns each launcher's median in milliseconds. `timing`
/// says what precedes each run. The launchers' error type is the caller's (any that a
/// [`tilus::Error`](Error) converts into).
pub fn time_interleaved<E: From<Error>>(
    stream: &Arc<CudaStream>,
    launchers: &mut [&mut dyn FnMut() -> std::result::Result<(), E>],
    (warmup, rounds): (usize, usize),
    timing: Timing,
) -> std::result::Result<Vec<f64>, E> {
    if rounds == 0 {
        return Err(Error::Argument {
            arg: "rounds".into(),
            message: "at least one timed round is needed".into(),
        }
        .into());
    }
    let ctx = stream.context();
    let ev = || {
        ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(drv("cuEventCreate"))
    };
    let mut flush = match timing {
        Timing::Flushed => Some(L2Flush::new(stream)?),
        Timing::Idle => None,
    };
    let mut samples = vec![vec![]; launchers.len()];
    for round in 0..warmup + rounds {
        let mut events = Vec::with_capacity(launchers.len());
        for f in launchers.iter_mut() {
            if let Some(flush) = flush.as_mut() {
                flush.run(stream)?;
            }
            let (start, end) = (ev()?, ev()?);
            start.record(stream).map_err(drv("cuEventRecord"))?;
            f()?;
            end.record(stream).map_err(drv("cuEventRecord"))?;
            if timing == Timing::Idle {
                end.synchronize().map_err(drv("cuEventSynchronize"))?;
            }
            events.push((start, end));
        }
        // the round's last run ends after all the others (one stream)
        if let Some((_, end)) = events.last() {
            end.synchronize().map_err(drv("cuEventSynchronize"))?;
        }
        if round >= warmup {
            for (i, (start, end)) in events.iter().enumerate() {
                samples[i].push(start.elapsed_ms(end).map_err(drv("cuEventElapsedTime"))? as f64);
            }
        }
    }
    Ok(samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(|a, b| a.total_cmp(b));
            s[s.len() / 2]
        })
        .collect())
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
