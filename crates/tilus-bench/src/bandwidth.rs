//! The benchmark of the memory-bound kernels (`tilus bench memory`): each kernel is checked
//! against its host reference on fresh random data, then timed interleaved with a
//! device-to-device copy (`cuMemcpyDtoDAsync`) that reads and writes as many bytes as the
//! kernel does, in the same process, on the same stream. A memory-bound kernel's goal is the
//! copy's bandwidth: the ratio says how close it comes.
//!
//! Effective bandwidth is the bytes a launch must read and write (inputs once, outputs once;
//! parameters such as a layer norm's weights once) over its time; the copy of `bytes / 2`
//! bytes reads and writes `bytes` in all and is measured the same way.

use crate::buffers::drv;
use crate::harness::{time_interleaved, Check};
use crate::registry::{Entry, Settings};
use crate::run::BenchOptions;
use crate::size::Size;
use crate::{Error, Result};
use std::io::Write;
use std::sync::Arc;
use tilus::runtime::{Device, LoadedKernel};

/// One kernel at one size: what it moved, how long it and the copy took.
#[derive(Clone, Debug)]
pub struct BandwidthRow {
    /// The kernel's name in the registry.
    pub kernel: &'static str,
    /// Its size (`rows x cols`, or `n` for a vector).
    pub size: String,
    /// The configuration that ran, as `name=value` pairs.
    pub config: String,
    /// Bytes one launch reads and writes.
    pub bytes: u128,
    /// The kernel's median time, in milliseconds.
    pub kernel_ms: f64,
    /// The copy's median time, in milliseconds.
    pub copy_ms: f64,
}

impl BandwidthRow {
    /// The kernel's effective bandwidth, in GB/s (10^9 bytes per second).
    pub fn kernel_gbs(&self) -> f64 {
        self.bytes as f64 / (self.kernel_ms * 1e-3) / 1e9
    }

    /// The copy's bandwidth over the same bytes, in GB/s.
    pub fn copy_gbs(&self) -> f64 {
        self.bytes as f64 / (self.copy_ms * 1e-3) / 1e9
    }

    /// The kernel's bandwidth as a fraction of the copy's.
    pub fn ratio(&self) -> f64 {
        self.copy_ms / self.kernel_ms
    }
}

/// Which configuration each kernel runs.
#[derive(Clone, Copy, Debug)]
pub enum Choice<'a> {
    /// The autotuner's, for each size (tuned on first use, then read from its table).
    Tuned,
    /// The kernel's default with these hyperparameters replaced.
    Fixed(&'a Settings),
}

/// The kernel `e` runs at `size` under `choice`, loaded, with its configuration.
fn kernel_for(
    e: &Entry,
    choice: Choice<'_>,
    device: &Device,
    size: &Size,
    values: &[tilus::lang::HostValue],
) -> Result<(Arc<LoadedKernel>, String)> {
    match (choice, &e.memory) {
        (Choice::Tuned, Some(m)) => (m.tuned)(device, device.stream(), values),
        (Choice::Fixed(settings), _) => {
            let script = (e.configure)(settings)?;
            let (kernel, _) = e.load(script.as_ref(), size, device)?;
            Ok((Arc::new(kernel), script.config()))
        }
        (Choice::Tuned, None) => Err(Error::Usage(format!(
            "{} is not a memory-bound kernel",
            e.name
        ))),
    }
}

fn check_line(out: &mut dyn Write, e: &Entry, config: &str, size: &Size, c: &Check) -> Result<()> {
    writeln!(
        out,
        "check {} [{config}] {size}: {} (non-finite {}, mismatches {} of {}, max |diff| {:.2e}, \
         rel. error {:.2e}; against {})",
        e.name,
        if c.passed() { "PASS" } else { "FAIL" },
        c.non_finite,
        c.mismatches,
        c.total,
        c.max_abs,
        c.rel_err,
        e.workload.device_reference(),
    )?;
    Ok(())
}

/// Checks each memory-bound entry at each `(rows, cols)` shape against its host reference,
/// then times it interleaved with a device-to-device copy of the same byte count. Writes a
/// `check` line per entry and shape to `out`; returns the rows of the table and whether every
/// check passed. A kernel whose check fails is not timed.
pub fn verify_and_time(
    out: &mut dyn Write,
    device: &Device,
    entries: &[&Entry],
    shapes: &[(usize, usize)],
    choice: Choice<'_>,
    opts: &BenchOptions,
) -> Result<(Vec<BandwidthRow>, bool)> {
    if opts.rounds == 0 {
        return Err(Error::Usage(
            "at least one timed round is needed (--rounds)".into(),
        ));
    }
    let stream = device.stream().clone();
    let mut rows = vec![];
    let mut all_ok = true;
    for (i, &(r, c)) in shapes.iter().enumerate() {
        for e in entries {
            let Some(m) = &e.memory else {
                return Err(Error::Usage(format!(
                    "{} is not a memory-bound kernel",
                    e.name
                )));
            };
            let size = Size::new(e.workload.dims(), &(m.size)(r, c))?;
            let bytes = (m.traffic)(&size)?;
            let mut case =
                e.workload
                    .device_case(&stream, &size, opts.seed.wrapping_add(i as u64))?;
            let values = case.args(&stream);
            let (kernel, config) = kernel_for(e, choice, device, &size, &values)?;
            kernel.launch(&stream, &values)?;
            stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
            let check = case.check(&stream)?;
            check_line(out, e, &config, &size, &check)?;
            if !check.passed() {
                all_ok = false;
                continue;
            }
            let half = usize::try_from(bytes / 2)
                .map_err(|_| Error::Usage(format!("{size}: too many bytes for one copy")))?;
            let src = stream
                .alloc_zeros::<u8>(half.max(1))
                .map_err(drv("cuMemAlloc"))?;
            let mut dst = stream
                .alloc_zeros::<u8>(half.max(1))
                .map_err(drv("cuMemAlloc"))?;
            let mut run_kernel = || -> Result<()> { Ok(kernel.launch(&stream, &values)?) };
            let mut run_copy = || -> Result<()> {
                stream
                    .memcpy_dtod(&src, &mut dst)
                    .map_err(drv("cuMemcpyDtoDAsync"))?;
                Ok(())
            };
            let times = time_interleaved(
                &stream,
                &mut [&mut run_kernel, &mut run_copy],
                (opts.warmup, opts.rounds),
                opts.timing,
            )?;
            rows.push(BandwidthRow {
                kernel: e.name,
                size: size.to_string(),
                config,
                bytes,
                kernel_ms: times[0],
                copy_ms: times[1],
            });
        }
    }
    Ok((rows, all_ok))
}

/// The table of a benchmark: per kernel and size, the bytes moved, both bandwidths and their
/// ratio.
pub fn write_table(out: &mut dyn Write, rows: &[BandwidthRow]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>14} {:>12} {:>9} {:>12} {:>11} {:>10} {:>10} {:>7}  config",
        "kernel", "size", "MiB", "kernel (ms)", "copy (ms)", "kernel GB/s", "copy GB/s", "ratio"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:>14} {:>12} {:>9.1} {:>12.4} {:>11.4} {:>10.1} {:>10.1} {:>6.1}%  {}",
            r.kernel,
            r.size,
            r.bytes as f64 / (1u64 << 20) as f64,
            r.kernel_ms,
            r.copy_ms,
            r.kernel_gbs(),
            r.copy_gbs(),
            100.0 * r.ratio(),
            r.config
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths_are_bytes_over_time() {
        let r = BandwidthRow {
            kernel: "softmax",
            size: "16384x8192".into(),
            config: "block_rows=1 warps=8".into(),
            bytes: 1 << 30,
            kernel_ms: 0.5,
            copy_ms: 0.4,
        };
        assert!((r.kernel_gbs() - 2147.483648).abs() < 1e-6);
        assert!((r.ratio() - 0.8).abs() < 1e-12);
        let mut text = vec![];
        write_table(&mut text, &[r]).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("80.0%"), "{text}");
        assert!(text.contains("1024.0"), "{text}");
    }
}
