//! The fused-epilogue workload: `C = act(alpha · A·Bᵀ + beta · D + bias)` with the matmul's
//! inputs, a random residual D and bias and random `alpha` and `beta`. The host reference is
//! the product in f64 and the epilogue in f64; on the device, cuBLAS computes the product with
//! its f32 accumulator kept (no rounding to f16 in between) and the host applies the epilogue
//! in f64. Both round once to f16 and are compared as the matmul is (`harness::compare`).

use crate::alloc;
use crate::buffers::{download, poisoned, ptr, upload};
use crate::harness::{self, Check, Cublas, Problem, Rng};
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::Result;
use half::f16;
use std::marker::PhantomData;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus_kernels::gemm::epilogue::Activation;

/// The workload of the epilogue kernel with activation `A`.
pub struct EpilogueWorkload<A>(PhantomData<fn() -> A>);

impl<A> EpilogueWorkload<A> {
    /// The workload (the registry keeps one per activation).
    pub const fn new() -> Self {
        EpilogueWorkload(PhantomData)
    }
}

impl<A> Default for EpilogueWorkload<A> {
    fn default() -> Self {
        Self::new()
    }
}

/// The epilogue's inputs beside A and B: `alpha`, `beta`, D `[m, n]` and bias `[n]`, drawn
/// from `seed` (values in [-1, 1), alpha in [0.5, 2), beta in [-1, 1)).
pub(crate) struct Extra {
    pub(crate) alpha: f32,
    pub(crate) beta: f32,
    pub(crate) d: Vec<f16>,
    pub(crate) bias: Vec<f16>,
}

impl Extra {
    pub(crate) fn draw(what: &str, m: usize, n: usize, seed: u64) -> Result<Extra> {
        // a stream of its own, apart from the one that draws A and B
        let mut rng = Rng::new(seed.wrapping_add(0xE91_10C0E));
        let alpha = (0.5 + 1.5 * rng.next_f64()) as f32;
        let beta = (2.0 * rng.next_f64() - 1.0) as f32;
        let mut draw = |len: usize| -> Result<Vec<f16>> {
            let mut v = alloc::try_vec(what, len, f16::ZERO)?;
            for x in &mut v {
                *x = f16::from_f64(2.0 * rng.next_f64() - 1.0);
            }
            Ok(v)
        };
        let d = draw(alloc::elements(what, &[m, n])?)?;
        let bias = draw(n)?;
        Ok(Extra {
            alpha,
            beta,
            d,
            bias,
        })
    }

    /// The expected C from the product (in f64 or from f32), rounded once to f16.
    pub(crate) fn expect<A: Activation>(
        &self,
        product: impl Fn(usize) -> f64,
        n: usize,
    ) -> Vec<f16> {
        (0..self.d.len())
            .map(|i| {
                let pre = self.alpha as f64 * product(i)
                    + self.beta as f64 * self.d[i].to_f64()
                    + self.bias[i % n].to_f64();
                f16::from_f64(A::reference(pre))
            })
            .collect()
    }
}

struct OnHost<A> {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<f16>,
    b: Vec<f16>,
    extra: Extra,
    c: Vec<f16>,
    act: PhantomData<fn() -> A>,
}

impl<A: Activation> HostCase for OnHost<A> {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        vec![
            InterpValue::Int(self.m as i64),
            InterpValue::Int(self.n as i64),
            InterpValue::Int(self.k as i64),
            InterpValue::Float(self.extra.alpha as f64),
            InterpValue::Float(self.extra.beta as f64),
            InterpValue::buffer(&self.a),
            InterpValue::buffer(&self.b),
            InterpValue::buffer(&self.extra.d),
            InterpValue::buffer(&self.extra.bias),
            InterpValue::buffer_mut(&mut self.c),
        ]
    }

    fn check(&self) -> Result<Check> {
        let (n, k) = (self.n, self.k);
        let b: Vec<f64> = self.b.iter().map(|x| x.to_f64()).collect();
        let product = |i: usize| {
            let (row, col) = (i / n, i % n);
            let a = &self.a[row * k..(row + 1) * k];
            let b = &b[col * k..(col + 1) * k];
            a.iter().zip(b).map(|(x, y)| x.to_f64() * y).sum::<f64>()
        };
        let expect = self.extra.expect::<A>(product, n);
        Ok(harness::compare(&self.c, &expect))
    }
}

struct OnDevice<A> {
    p: Problem,
    blas: Cublas,
    extra: Extra,
    d: CudaSlice<f16>,
    bias: CudaSlice<f16>,
    product: CudaSlice<f32>,
    act: PhantomData<fn() -> A>,
}

impl<A: Activation> DeviceCase for OnDevice<A> {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let p = &self.p;
        vec![
            HostValue::Int(p.m as i64),
            HostValue::Int(p.n as i64),
            HostValue::Int(p.k as i64),
            HostValue::Float(self.extra.alpha as f64),
            HostValue::Float(self.extra.beta as f64),
            ptr(&p.a, stream),
            ptr(&p.b, stream),
            ptr(&self.d, stream),
            ptr(&self.bias, stream),
            ptr(&p.c, stream),
        ]
    }

    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        Ok(self.blas.matmul_f32(stream, &self.p, &mut self.product)?)
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the epilogue check";
        let actual = download(stream, what, &self.p.c)?;
        let product = download(stream, what, &self.product)?;
        let expect = self.extra.expect::<A>(|i| product[i] as f64, self.p.n);
        Ok(harness::compare(&actual, &expect))
    }
}

impl<A: Activation> Workload for EpilogueWorkload<A> {
    fn dims(&self) -> &'static [&'static str] {
        crate::workloads::matmul::DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [m, n, k] = size.dims()?;
        let what = format!("a {size} matmul with an epilogue on the host");
        // D, C and the reference's C
        let (a, b) = crate::workloads::matmul::host_operands(&what, [m, n, k], seed, 3)?;
        let extra = Extra::draw(&what, m, n, seed)?;
        let c = alloc::try_vec(&what, m * n, f16::NAN)?;
        Ok(Box::new(OnHost::<A> {
            m,
            n,
            k,
            a,
            b,
            extra,
            c,
            act: PhantomData,
        }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [m, n, k] = size.dims()?;
        let what = format!("a {size} matmul with an epilogue");
        let mn = alloc::elements(&what, &[m, n])?;
        // D, the f32 product and C on the host during the check
        alloc::ensure(&what, 8 * mn as u128 + 2 * n as u128)?;
        let blas = Cublas::new(stream)?;
        let p = Problem::new(stream, m, n, k, seed)?;
        let extra = Extra::draw(&what, m, n, seed)?;
        let d = upload(stream, &extra.d)?;
        let bias = upload(stream, &extra.bias)?;
        let product = poisoned(stream, &what, mn)?;
        Ok(Box::new(OnDevice::<A> {
            p,
            blas,
            extra,
            d,
            bias,
            product,
            act: PhantomData,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "cuBLAS (f32 product) and the epilogue on the host"
    }
}
