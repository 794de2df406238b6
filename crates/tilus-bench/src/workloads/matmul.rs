//! The matmul workload: `C = A · Bᵀ` with A `[m, k]`, B `[n, k]`, C `[m, n]` in f16 (or bf16,
//! [`MATMUL_BF16`]), the arguments `(m, n, k, a, b, c)` every kernel of the series takes;
//! inputs drawn as the seed draws them, the f64 CPU reference on the host and cuBLAS on the
//! device.

use crate::alloc;
use crate::buffers::ptr;
use crate::harness::{self, Check, Cublas, Problem, Rng};
use crate::operand::Operand;
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::Result;
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::CudaStream;
use tilus::interp::InterpValue;
use tilus::lang::HostValue;

/// The dimensions of a matmul's size.
pub const DIMS: &[&str] = &["m", "n", "k"];

/// The matmul workload in operand type `T` (see the module documentation).
pub struct Matmul<T: Operand = f16>(std::marker::PhantomData<T>);

/// The f16 workload the registry points at.
pub static MATMUL: Matmul = Matmul(std::marker::PhantomData);

/// The bf16 workload (v6 on bf16 operands).
pub static MATMUL_BF16: Matmul<half::bf16> = Matmul(std::marker::PhantomData);

/// The matmul's compile-time constants: `n` and `k` (`m` is a runtime argument).
pub fn consts(size: &Size) -> Vec<i64> {
    size.values().iter().skip(1).map(|&v| v as i64).collect()
}

/// A and B of an `[m, n, k]` matmul on the host, drawn from `seed` as the seed draws them,
/// once the host is known to hold them, B in f64 (for the reference) and `outputs` `[m, n]`
/// f16 buffers beside them; a size it cannot hold is an error naming `what`.
pub(crate) fn host_operands<T: Operand>(
    what: &str,
    [m, n, k]: [usize; 3],
    seed: u64,
    outputs: u128,
) -> Result<(Vec<T>, Vec<T>)> {
    let (mk, nk, mn) = (
        alloc::elements(what, &[m, k])?,
        alloc::elements(what, &[n, k])?,
        alloc::elements(what, &[m, n])?,
    );
    let needed = 2 * (mk as u128 + nk as u128 + outputs * mn as u128) + 8 * nk as u128;
    alloc::ensure(what, needed)?;
    let mut rng = Rng::new(seed);
    let a = harness::try_seed_inputs(what, mk, k, &mut rng)?;
    let b = harness::try_seed_inputs(what, nk, k, &mut rng)?;
    Ok((a, b))
}

struct OnHost<T: Operand> {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
}

/// The interpreter's arguments `(m, n, k, a, b, out)` of a matmul-shaped kernel.
pub(crate) fn host_args<'a, T: Operand>(
    (m, n, k): (usize, usize, usize),
    (a, b): (&'a [T], &'a [T]),
    out: InterpValue<'a>,
) -> Vec<InterpValue<'a>> {
    vec![
        InterpValue::Int(m as i64),
        InterpValue::Int(n as i64),
        InterpValue::Int(k as i64),
        InterpValue::buffer(a),
        InterpValue::buffer(b),
        out,
    ]
}

/// The launch arguments `(m, n, k, a, b, out)` of a matmul-shaped kernel on `p`'s operands.
pub(crate) fn device_args<T: Operand>(
    p: &Problem<T>,
    out: HostValue,
    stream: &Arc<CudaStream>,
) -> Vec<HostValue> {
    vec![
        HostValue::Int(p.m as i64),
        HostValue::Int(p.n as i64),
        HostValue::Int(p.k as i64),
        ptr(&p.a, stream),
        ptr(&p.b, stream),
        out,
    ]
}

impl<T: Operand> HostCase for OnHost<T> {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let out = InterpValue::buffer_mut(&mut self.c);
        host_args((self.m, self.n, self.k), (&self.a, &self.b), out)
    }

    fn check(&self) -> Result<Check> {
        let expect = harness::try_cpu_reference(&self.a, &self.b, self.m, self.n, self.k)?;
        Ok(harness::compare(&self.c, &expect))
    }
}

struct OnDevice<T: Operand> {
    p: Problem<T>,
    blas: Cublas,
}

impl<T: Operand> DeviceCase for OnDevice<T> {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        device_args(&self.p, ptr(&self.p.c, stream), stream)
    }

    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        Ok(self.blas.reference(stream, &self.p)?)
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        harness::check(stream, &self.p)
    }
}

impl<T: Operand> Workload for Matmul<T> {
    fn dims(&self) -> &'static [&'static str] {
        DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [m, n, k] = size.dims()?;
        let what = format!("a {size} matmul on the host");
        // C and the reference's own C
        let (a, b) = host_operands::<T>(&what, [m, n, k], seed, 2)?;
        let c = alloc::try_vec(&what, m * n, T::NAN)?;
        Ok(Box::new(OnHost { m, n, k, a, b, c }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [m, n, k] = size.dims()?;
        let blas = Cublas::new(stream)?;
        let p = Problem::<T>::new(stream, m, n, k, seed)?;
        Ok(Box::new(OnDevice { p, blas }))
    }

    fn device_reference(&self) -> &'static str {
        "cuBLAS"
    }
}
