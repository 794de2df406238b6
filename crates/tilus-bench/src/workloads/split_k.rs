//! The split-K partials as a workload of their own (`tilus run hopper_matmul_split_k`): the
//! partial kernel's arguments `(m, n, k, a, b, workspace, counters, c)` with the workspace and
//! C poisoned with NaN, the workspace sized for the most splits and the counters zero. A
//! kernel that wrote C (`serial = 1`) is checked on C; one that did not, on the partials it
//! wrote (slabs of `[tiles_m · 64, n]`), added up in f64 and rounded once to f16. Either is
//! compared with the matmul reference (the f64 CPU reference on the host, cuBLAS on the
//! device).

use crate::buffers::{download, drv, poisoned, ptr};
use crate::harness::{self, Check, Cublas, Problem};
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::workloads::matmul::{device_args, host_args, host_operands, DIMS};
use crate::{alloc, Result};
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus_kernels::gemm::split_k::{counters_len, workspace_len, MAX_SPLITS, SPLIT_K_BLOCK_M};

/// The split-K partials' workload (see the module documentation).
pub struct SplitKPartials;

/// The one instance the registry points at.
pub static SPLIT_K_PARTIALS: SplitKPartials = SplitKPartials;

/// `C` as the sum of the partials the kernel wrote: every slab with a written element is
/// added (a partly written one adds NaN, which the check counts as a failure); with none,
/// `C` stays NaN.
fn summed(w: &[f32], m: usize, n: usize) -> Result<Vec<f16>> {
    let slab = m.div_ceil(SPLIT_K_BLOCK_M as usize) * SPLIT_K_BLOCK_M as usize * n;
    let written: Vec<usize> = (0..MAX_SPLITS)
        .filter(|&s| w[s * slab..(s + 1) * slab].iter().any(|x| !x.is_nan()))
        .collect();
    let mut c = alloc::try_vec("the summed partials", m * n, f16::NAN)?;
    if written.is_empty() {
        return Ok(c);
    }
    for (i, out) in c.iter_mut().enumerate() {
        let s: f64 = written.iter().map(|&s| w[s * slab + i] as f64).sum();
        *out = f16::from_f64(s);
    }
    Ok(c)
}

/// What the kernel computed: C where it wrote any of it, else the sum of its partials.
fn result(c: &[f16], w: &[f32], m: usize, n: usize) -> Result<Vec<f16>> {
    if c.iter().any(|x| !x.is_nan()) {
        Ok(c.to_vec())
    } else {
        summed(w, m, n)
    }
}

impl Workload for SplitKPartials {
    fn dims(&self) -> &'static [&'static str] {
        DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [m, n, k] = size.dims()?;
        let what = format!("a {size} split-K matmul on the host");
        let (a, b) = host_operands(&what, [m, n, k], seed, 1)?;
        let w = alloc::try_vec(&what, workspace_len(m, n, MAX_SPLITS), f32::NAN)?;
        let counters = alloc::try_vec(&what, counters_len(m, n), 0i32)?;
        let c = alloc::try_vec(&what, m * n, f16::NAN)?;
        Ok(Box::new(OnHost {
            m,
            n,
            k,
            a,
            b,
            w,
            counters,
            c,
        }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [m, n, k] = size.dims()?;
        let blas = Cublas::new(stream)?;
        let p = Problem::new(stream, m, n, k, seed)?;
        let w = poisoned::<f32>(
            stream,
            "the split-K workspace",
            workspace_len(m, n, MAX_SPLITS),
        )?;
        let counters = stream
            .alloc_zeros::<i32>(counters_len(m, n).max(1))
            .map_err(drv("cuMemAlloc"))?;
        Ok(Box::new(OnDevice {
            p,
            w,
            counters,
            blas,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "cuBLAS"
    }
}

struct OnHost {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<f16>,
    b: Vec<f16>,
    w: Vec<f32>,
    counters: Vec<i32>,
    c: Vec<f16>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let out = InterpValue::buffer_mut(&mut self.w);
        let mut args = host_args((self.m, self.n, self.k), (&self.a, &self.b), out);
        args.push(InterpValue::buffer_mut(&mut self.counters));
        args.push(InterpValue::buffer_mut(&mut self.c));
        args
    }

    fn check(&self) -> Result<Check> {
        let expect = harness::try_cpu_reference(&self.a, &self.b, self.m, self.n, self.k)?;
        let got = result(&self.c, &self.w, self.m, self.n)?;
        Ok(harness::compare(&got, &expect))
    }
}

struct OnDevice {
    p: Problem,
    w: CudaSlice<f32>,
    counters: CudaSlice<i32>,
    blas: Cublas,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let mut args = device_args(&self.p, ptr(&self.w, stream), stream);
        args.push(ptr(&self.counters, stream));
        args.push(ptr(&self.p.c, stream));
        args
    }

    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        Ok(self.blas.reference(stream, &self.p)?)
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let w = download(stream, "the split-K workspace", &self.w)?;
        let c = download(stream, "C", &self.p.c)?;
        let expect = download(stream, "the reference", &self.p.c_ref)?;
        Ok(harness::compare(
            &result(&c, &w, self.p.m, self.p.n)?,
            &expect,
        ))
    }
}
