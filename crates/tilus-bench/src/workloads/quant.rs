//! The quantized-matmul workload ([`tilus_kernels::quant`]): `C = A · dequant(W)ᵀ` with W
//! int4 in groups of 128 along K (the registry's entries' default), random A and W, W
//! quantized on the host; the reference multiplies A by the dequantized weights rounded to
//! f16 (what every kernel multiplies): in f64 on the host, by cuBLAS on the device. The
//! kernels' arguments are `(m, n, k, a, w, scales, zeros, c)`, `w` the packed codes or, for
//! the fragment kernel, the prepacked words ([`Format`]).

use crate::alloc;
use crate::buffers::{drv, poisoned, ptr, upload};
use crate::harness::{self, Check, Cublas, Problem, Rng};
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::Result;
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus::lowp::I4;
use tilus_kernels::quant::{prepack, quantize, Quantized, Scheme};

/// The dimensions of the workload's size.
pub const DIMS: &[&str] = &["m", "n", "k"];

/// How the kernel reads W.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Packed codes, row by row (the few-rows and ring kernels).
    Packed,
    /// Prepacked words in fragment order (the fragment kernel).
    Prepacked,
}

/// The quantized matmul on int4 weights, groups of 128, as a kernel reads them.
pub struct QuantWorkload(pub Format);

/// The workload of the kernels that read packed codes.
pub static QUANT_PACKED: QuantWorkload = QuantWorkload(Format::Packed);
/// The workload of the fragment kernel.
pub static QUANT_PREPACKED: QuantWorkload = QuantWorkload(Format::Prepacked);

/// The compile-time constant: `k`.
pub fn consts(size: &Size) -> Vec<i64> {
    vec![size.values()[2] as i64]
}

/// The scheme of every case.
fn scheme() -> Scheme {
    Scheme::grouped(128)
}

/// Random A (f16) and W quantized to int4 from `seed`; the dequantized weights rounded to
/// f16, row-major `[n, k]`.
fn operands(
    what: &str,
    [m, n, k]: [usize; 3],
    seed: u64,
) -> Result<(Vec<f16>, Quantized, Vec<f16>)> {
    let (mk, nk) = (
        alloc::elements(what, &[m, k])?,
        alloc::elements(what, &[n, k])?,
    );
    // A, W in f32, its dequantized copy and the codes
    alloc::ensure(what, 2 * mk as u128 + 7 * nk as u128)?;
    let mut rng = Rng::new(seed);
    let a = harness::try_seed_inputs::<f16>(what, mk, k, &mut rng)?;
    let mut w = alloc::try_vec(what, nk, 0.0f32)?;
    for x in &mut w {
        *x = (rng.next_f64() * 2.0 - 1.0) as f32;
    }
    let q = quantize::<I4>(&w, (n, k), scheme());
    drop(w);
    let mut deq = alloc::try_vec(what, nk, f16::ZERO)?;
    for (i, d) in deq.iter_mut().enumerate() {
        *d = f16::from_f64(q.dequantized(i / k, i % k));
    }
    Ok((a, q, deq))
}

/// W and its scales as `format` gives them to the kernel: the quantizer's packed bytes and
/// `[n, groups]` scales, or the prepacked words and `[groups, tiles_n · 64]` scales (the
/// fragment kernel reads a step's scales of a tile as one run).
fn weights(format: Format, q: Quantized) -> Result<(HostWeights, Vec<f16>)> {
    Ok(match format {
        Format::Packed => (Weights::Bytes(q.packed), q.scales),
        Format::Prepacked => {
            let p = prepack(&q)?;
            (Weights::Words(p.words), p.scales)
        }
    })
}

/// W on the host, as the format gives it.
type HostWeights = Weights<Vec<u8>, Vec<u32>>;

/// W as the format gives it to the kernel: packed bytes or prepacked words.
enum Weights<B, W> {
    Bytes(B),
    Words(W),
}

struct OnHost {
    dims: [usize; 3],
    a: Vec<f16>,
    w: HostWeights,
    scales: Vec<f16>,
    /// A zero point per group (one element for int4, which reads none).
    zeros: Vec<f16>,
    deq: Vec<f16>,
    c: Vec<f16>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let [m, n, k] = self.dims;
        let w = match &self.w {
            Weights::Bytes(b) => InterpValue::buffer(b),
            Weights::Words(w) => InterpValue::buffer(w),
        };
        vec![
            InterpValue::Int(m as i64),
            InterpValue::Int(n as i64),
            InterpValue::Int(k as i64),
            InterpValue::buffer(&self.a),
            w,
            InterpValue::buffer(&self.scales),
            InterpValue::buffer(&self.zeros),
            InterpValue::buffer_mut(&mut self.c),
        ]
    }

    fn check(&self) -> Result<Check> {
        let [m, n, k] = self.dims;
        let expect = harness::try_cpu_reference(&self.a, &self.deq, m, n, k)?;
        Ok(harness::compare(&self.c, &expect))
    }
}

struct OnDevice {
    p: Problem,
    blas: Cublas,
    w: Weights<CudaSlice<u8>, CudaSlice<u32>>,
    scales: CudaSlice<f16>,
    zeros: CudaSlice<f16>,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let w = match &self.w {
            Weights::Bytes(b) => ptr(b, stream),
            Weights::Words(w) => ptr(w, stream),
        };
        vec![
            HostValue::Int(self.p.m as i64),
            HostValue::Int(self.p.n as i64),
            HostValue::Int(self.p.k as i64),
            ptr(&self.p.a, stream),
            w,
            ptr(&self.scales, stream),
            ptr(&self.zeros, stream),
            ptr(&self.p.c, stream),
        ]
    }

    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        Ok(self.blas.reference(stream, &self.p)?)
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        harness::check(stream, &self.p)
    }
}

impl Workload for QuantWorkload {
    fn dims(&self) -> &'static [&'static str] {
        DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let dims = size.dims()?;
        let what = format!("a {size} quantized matmul on the host");
        let (a, q, deq) = operands(&what, dims, seed)?;
        let (w, scales) = weights(self.0, q)?;
        let c = alloc::try_vec(&what, dims[0] * dims[1], f16::NAN)?;
        Ok(Box::new(OnHost {
            dims,
            a,
            w,
            scales,
            zeros: vec![f16::ZERO],
            deq,
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
        let what = format!("a {size} quantized matmul");
        let (a, q, deq) = operands(&what, [m, n, k], seed)?;
        let p = Problem {
            m,
            n,
            k,
            a: upload(stream, &a)?,
            b: upload(stream, &deq)?,
            c: poisoned::<f16>(stream, &what, m * n)?,
            c_ref: poisoned::<f16>(stream, &what, m * n)?,
        };
        let (w, scales) = weights(self.0, q)?;
        let w = match w {
            Weights::Bytes(b) => {
                Weights::Bytes(stream.clone_htod(&b).map_err(drv("cuMemcpyHtoD"))?)
            }
            Weights::Words(w) => {
                Weights::Words(stream.clone_htod(&w).map_err(drv("cuMemcpyHtoD"))?)
            }
        };
        Ok(Box::new(OnDevice {
            p,
            blas: Cublas::new(stream)?,
            w,
            scales: upload(stream, &scales)?,
            zeros: upload(stream, &[f16::ZERO])?,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "cuBLAS on the dequantized weights"
    }
}
