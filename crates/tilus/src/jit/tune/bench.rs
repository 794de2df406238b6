//! Timing candidates on the real arguments: CUDA events around each run, warm-up first, the L2
//! cache flushed (and left clean) before every timed run so each candidate starts from the
//! same state, and the median kept. Outputs go to scratch copies so the caller's buffers are untouched.

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

/// Bytes read after that write, so that the L2 is left holding clean lines: the write leaves
/// its last 50-60 MB dirty in L2, and a timed kernel that then read more than L2 holds would
/// pay for their write-back to DRAM (about 15 us on an H100, measured as a fixed cost in
/// every bandwidth-bound kernel and in cuBLAS alike; docs/perf.md). Read here, that
/// write-back happens before the timed run starts.
pub const L2_SWEEP_BYTES: usize = 128 << 20;

/// The kernel that reads the sweep buffer: every 16-byte word, grid-stride, XOR-folded into
/// a value stored only when it equals an impossible one (the buffer holds zeros), so the
/// reads stay.
const SWEEP_SOURCE: &str = r#"
extern "C" __global__ void l2_sweep(const uint4* __restrict__ p, unsigned long long n,
                                    unsigned int* __restrict__ out) {
    unsigned int acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}
"#;

/// The sweep's cubin, compiled by NVRTC on the first flush of the process and kept (every
/// timing and every autotuning run makes a flush).
fn sweep_cubin() -> Result<Vec<u8>> {
    static CUBIN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    if let Some(cubin) = CUBIN.get() {
        return Ok(cubin.clone());
    }
    let compiled = crate::compile::compile_cubin(SWEEP_SOURCE, "l2_sweep")?;
    let cubin = compiled.cubin.ok_or_else(|| Error::Compile {
        kernel: "l2_sweep".into(),
        source_path: "(built into the benchmark)".into(),
        log: compiled.log,
    })?;
    Ok(CUBIN.get_or_init(|| cubin).clone())
}

/// A buffer of [`L2_FLUSH_BYTES`] whose write, queued before a timed run, evicts the L2 cache
/// (and keeps the device busy while the run's launch is queued behind it), then a read of
/// [`L2_SWEEP_BYTES`] that leaves the cache clean.
pub struct L2Flush {
    write: CudaSlice<u8>,
    sweep: CudaSlice<u8>,
    out: CudaSlice<u32>,
    func: cudarc::driver::CudaFunction,
    blocks: u32,
    /// Whether [`L2Flush::run`] reads the sweep buffer after the write ([`Timing::Written`]:
    /// not).
    clean: bool,
    _module: Arc<cudarc::driver::CudaModule>,
}

impl L2Flush {
    /// Allocates the buffers on `stream`'s device and loads the sweep (compiled once a
    /// process).
    pub fn new(stream: &Arc<CudaStream>) -> Result<L2Flush> {
        let write = stream
            .alloc_zeros::<u8>(L2_FLUSH_BYTES)
            .map_err(drv("cuMemAlloc"))?;
        let sweep = stream
            .alloc_zeros::<u8>(L2_SWEEP_BYTES)
            .map_err(drv("cuMemAlloc"))?;
        let out = stream.alloc_zeros::<u32>(1).map_err(drv("cuMemAlloc"))?;
        let cubin = sweep_cubin()?;
        let module = stream
            .context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(drv("cuModuleLoadData"))?;
        let func = module
            .load_function("l2_sweep")
            .map_err(drv("cuModuleGetFunction"))?;
        let sms = stream
            .context()
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(drv("cuDeviceGetAttribute"))?;
        Ok(L2Flush {
            write,
            sweep,
            out,
            func,
            blocks: sms.max(1) as u32 * 4,
            clean: true,
            _module: module,
        })
    }

    /// As [`L2Flush::new`], its runs the write alone ([`Timing::Written`]).
    pub fn written(stream: &Arc<CudaStream>) -> Result<L2Flush> {
        Ok(L2Flush {
            clean: false,
            ..L2Flush::new(stream)?
        })
    }

    /// Queues the write of the whole flush buffer, then (unless [`L2Flush::written`]) the
    /// sweep's read, on `stream`.
    pub fn run(&mut self, stream: &CudaStream) -> Result<()> {
        use cudarc::driver::PushKernelArg;
        let (p, _g) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut self.write, stream);
        // SAFETY: writes the whole flush buffer, which this struct owns.
        unsafe {
            cudarc::driver::result::memset_d8_async(p, 0x5a, L2_FLUSH_BYTES, stream.cu_stream())
        }
        .map_err(drv("cuMemsetD8Async"))?;
        drop(_g);
        if !self.clean {
            return Ok(());
        }
        let words = (L2_SWEEP_BYTES / 16) as u64;
        let mut launch = stream.launch_builder(&self.func);
        launch.arg(&self.sweep).arg(&words).arg(&mut self.out);
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (512, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: `l2_sweep(const uint4*, unsigned long long, unsigned int*)` gets the sweep
        // buffer (`words` 16-byte words, 16-byte aligned as every allocation), its count and a
        // one-word output, all owned by this struct and alive until the stream has run it.
        unsafe { launch.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
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
    /// write runs), then cleaned by a read of [`L2_SWEEP_BYTES`] (so no run pays for the
    /// write-back of the flush's dirty lines); a round is waited for once, at its end. The
    /// device stays busy throughout, as under sustained load (its power limit in force). The
    /// autotuner times candidates the same way.
    #[default]
    Flushed,
    /// As [`Timing::Flushed`] without the read: the write's last 50-60 MB stay dirty in L2
    /// and a run that reads past them pays for their write-back (the flush of nvbench and of
    /// Triton's `do_bench`; kept to compare with figures timed that way).
    Written,
    /// Every run alone on an idle device: the run before is waited for, nothing is evicted.
    /// Times what one call costs from idle, its launch included.
    Idle,
}

impl Timing {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Flushed => "flushed",
            Timing::Written => "written",
            Timing::Idle => "idle",
        }
    }

    /// The timing named `name` (`flushed`, `written` or `idle`).
    pub fn parse(name: &str) -> std::result::Result<Timing, String> {
        match name {
            "flushed" => Ok(Timing::Flushed),
            "written" => Ok(Timing::Written),
            "idle" => Ok(Timing::Idle),
            other => Err(format!("unknown timing `{other}` (flushed, written, idle)")),
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
        Timing::Written => Some(L2Flush::written(stream)?),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_l2_sweep_compiles_with_nvrtc_to_a_cubin() {
        let cubin = sweep_cubin().unwrap();
        assert_eq!(&cubin[..4], b"\x7fELF");
        assert_eq!(sweep_cubin().unwrap(), cubin, "compiled once, then kept");
    }
}
