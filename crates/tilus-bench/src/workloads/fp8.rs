//! The FP8 GEMM workload ([`tilus_kernels::gemm::fp8`]): `C = (s_a · s_b) · A · Bᵀ` on random
//! e4m3 codes ([`crate::fp8_bench::codes`]) with per-tensor scales, bf16 out.
//! The host's reference is the exact product of the codes' values; the device's is
//! cuBLASLt's FP8 GEMM on the same codes and scales ([`crate::cublaslt_fp8`]). The kernel's
//! arguments are `(m, n, k, a, b, scales, c)`.

use crate::alloc;
use crate::buffers::{download, poisoned, ptr, upload, Sample};
use crate::compare::{compare_within, Check, Tolerance};
use crate::cublaslt_fp8::CublasLtFp8;
use crate::fp8_bench::{codes, tensor_scales};
use crate::harness::Rng;
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::Result;
use half::bf16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus::lowp::F8E4M3;
use tilus_kernels::gemm::fp8::reference::product;

/// The dimensions of the workload's size.
pub const DIMS: &[&str] = &["m", "n", "k"];

/// The FP8 GEMM on e4m3 codes into bf16.
pub struct Fp8Workload;

/// The workload of the registry's FP8 entry.
pub static FP8: Fp8Workload = Fp8Workload;

/// The compile-time constants: `n` and `k`.
pub fn consts(size: &Size) -> Vec<i64> {
    let v = size.values();
    vec![v[1] as i64, v[2] as i64]
}

/// Two roundings to bf16 apart (ours and the reference's), and the f32 accumulations'
/// differences on sums that cancel.
const TOLERANCE: Tolerance = Tolerance {
    rtol: 1.0 / 128.0,
    atol: 1e-3,
};

/// Random codes of A and B and the two scales, from `seed`.
fn operands(
    what: &str,
    [m, n, k]: [usize; 3],
    seed: u64,
) -> Result<(Vec<F8E4M3>, Vec<F8E4M3>, [f32; 2])> {
    let (mk, nk) = (
        alloc::elements(what, &[m, k])?,
        alloc::elements(what, &[n, k])?,
    );
    // the codes and C in bf16, checked against what the machine has before any is allocated
    let mn = alloc::elements(what, &[m, n])?;
    alloc::ensure(what, mk as u128 + nk as u128 + 2 * mn as u128)?;
    let mut rng = Rng::new(seed);
    let (a, b) = (codes(&mut rng, mk), codes(&mut rng, nk));
    let s = tensor_scales(&mut rng);
    Ok((a, b, s))
}

struct OnHost {
    dims: [usize; 3],
    a: Vec<F8E4M3>,
    b: Vec<F8E4M3>,
    scales: [f32; 2],
    c: Vec<bf16>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let [m, n, k] = self.dims;
        vec![
            InterpValue::Int(m as i64),
            InterpValue::Int(n as i64),
            InterpValue::Int(k as i64),
            InterpValue::buffer(&self.a),
            InterpValue::buffer(&self.b),
            InterpValue::buffer(&self.scales[..]),
            InterpValue::buffer_mut(&mut self.c),
        ]
    }

    fn check(&self) -> Result<Check> {
        let [m, n, k] = self.dims;
        let (s, (a, b)) = (self.scales, (&self.a[..], &self.b[..]));
        let (exact, _) = product((m, n, k), (a, b), (s[0], s[1]));
        let got = self.c.iter().map(|&x| x.to_f64());
        Ok(compare_within(got, exact.into_iter(), TOLERANCE))
    }
}

struct OnDevice {
    dims: [usize; 3],
    a: CudaSlice<F8E4M3>,
    b: CudaSlice<F8E4M3>,
    scales: CudaSlice<f32>,
    /// The same scales one a buffer (cuBLASLt's).
    each: (CudaSlice<f32>, CudaSlice<f32>),
    c: CudaSlice<bf16>,
    c_ref: CudaSlice<bf16>,
    lt: CublasLtFp8,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let [m, n, k] = self.dims;
        vec![
            HostValue::Int(m as i64),
            HostValue::Int(n as i64),
            HostValue::Int(k as i64),
            ptr(&self.a, stream),
            ptr(&self.b, stream),
            ptr(&self.scales, stream),
            ptr(&self.c, stream),
        ]
    }

    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        let [m, n, k] = self.dims;
        let scales = (&self.each.0, &self.each.1);
        let operands = (&self.a, &self.b);
        Ok(self
            .lt
            .matmul(stream, (m, n, k), operands, scales, &mut self.c_ref)?)
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the FP8 GEMM's output";
        let got = download(stream, what, &self.c)?;
        let want = download(stream, what, &self.c_ref)?;
        Ok(compare_within(
            got.iter().map(|&x| x.to_f64()),
            want.iter().map(|&x| Sample::to_f64(x)),
            TOLERANCE,
        ))
    }
}

impl Workload for Fp8Workload {
    fn dims(&self) -> &'static [&'static str] {
        DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let dims = size.dims()?;
        let what = format!("a {size} FP8 GEMM on the host");
        let (a, b, scales) = operands(&what, dims, seed)?;
        let c = alloc::try_vec(&what, dims[0] * dims[1], bf16::NAN)?;
        Ok(Box::new(OnHost {
            dims,
            a,
            b,
            scales,
            c,
        }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let dims @ [m, n, _] = size.dims()?;
        let what = format!("a {size} FP8 GEMM");
        let (a, b, s) = operands(&what, dims, seed)?;
        Ok(Box::new(OnDevice {
            dims,
            a: upload(stream, &a)?,
            b: upload(stream, &b)?,
            scales: upload(stream, &s)?,
            each: (upload(stream, &s[..1])?, upload(stream, &s[1..])?),
            c: poisoned::<bf16>(stream, &what, m * n)?,
            c_ref: poisoned::<bf16>(stream, &what, m * n)?,
            lt: CublasLtFp8::new(stream)?,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "cuBLASLt's FP8 GEMM"
    }
}
