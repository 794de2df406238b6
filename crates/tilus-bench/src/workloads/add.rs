//! The vector-add workload: inputs in [-4, 4), the host's sum (exact), the check
//! ([`tilus_kernels::elementwise::add`]).

use crate::buffers::{self, Sample};
use crate::harness::{compare_within, Check, Tolerance};
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::{alloc, Result};
use half::f16;
use std::marker::PhantomData;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;

/// The dimension of a vector's size.
pub const DIMS: &[&str] = &["n"];

/// The vector-add workload over elements of type `T`.
pub struct Add<T>(PhantomData<fn() -> T>);

/// The f16 workload.
pub static ADD_F16: Add<f16> = Add(PhantomData);
/// The f32 workload.
pub static ADD_F32: Add<f32> = Add(PhantomData);

/// No compile-time constants: the length is a runtime argument.
pub fn consts(_size: &Size) -> Vec<i64> {
    vec![]
}

/// Bytes a vector add of `n` elements of `elem` bytes moves: two vectors read, one written.
pub fn traffic(n: usize, elem: usize) -> u128 {
    3 * n as u128 * elem as u128
}

/// Bytes one launch moves at `size`, for elements of type `T`.
pub fn traffic_of<T>(size: &Size) -> Result<u128> {
    let [n] = size.dims()?;
    Ok(traffic(n, std::mem::size_of::<T>()))
}

/// `a + b` on the host, rounded once to `T` (exact for f16 and f32: see the module comment).
fn reference<'a, T: Sample>(a: &'a [T], b: &'a [T]) -> impl Iterator<Item = f64> + 'a {
    a.iter()
        .zip(b)
        .map(|(x, y)| T::from_f64(x.to_f64() + y.to_f64()).to_f64())
}

fn check<T: Sample>(c: &[T], a: &[T], b: &[T]) -> Check {
    compare_within(
        c.iter().map(|x| x.to_f64()),
        reference(a, b),
        Tolerance::EXACT,
    )
}

struct OnHost<T> {
    n: usize,
    a: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
}

impl<T: Sample> HostCase for OnHost<T> {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        vec![
            InterpValue::Int(self.n as i64),
            InterpValue::buffer(&self.a),
            InterpValue::buffer(&self.b),
            InterpValue::buffer_mut(&mut self.c),
        ]
    }

    fn check(&self) -> Result<Check> {
        Ok(check(&self.c, &self.a, &self.b))
    }
}

struct OnDevice<T> {
    n: usize,
    a: CudaSlice<T>,
    b: CudaSlice<T>,
    c: CudaSlice<T>,
}

impl<T: Sample> DeviceCase for OnDevice<T> {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        vec![
            HostValue::Int(self.n as i64),
            buffers::ptr(&self.a, stream),
            buffers::ptr(&self.b, stream),
            buffers::ptr(&self.c, stream),
        ]
    }

    fn reference(&mut self, _stream: &Arc<CudaStream>) -> Result<()> {
        // the host computes it in `check`, from the inputs brought back
        Ok(())
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the vector-add check";
        let a = buffers::download(stream, what, &self.a)?;
        let b = buffers::download(stream, what, &self.b)?;
        let c = buffers::download(stream, what, &self.c)?;
        Ok(check(&c, &a, &b))
    }
}

/// The inputs of a case: values in [-4, 4), a and b from different seeds.
fn inputs<T: Sample>(what: &str, n: usize, seed: u64) -> Result<(Vec<T>, Vec<T>)> {
    let a = buffers::random(what, n, seed, -4.0, 4.0)?;
    let b = buffers::random(what, n, seed ^ 0x5eed_0b0b, -4.0, 4.0)?;
    Ok((a, b))
}

impl<T: Sample> Workload for Add<T> {
    fn dims(&self) -> &'static [&'static str] {
        DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [n] = size.dims()?;
        let what = format!("a vector add of {size} elements on the host");
        alloc::ensure(&what, traffic(n, std::mem::size_of::<T>()))?;
        let (a, b) = inputs::<T>(&what, n, seed)?;
        let c = alloc::try_vec(&what, n, T::NAN)?;
        Ok(Box::new(OnHost { n, a, b, c }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [n] = size.dims()?;
        let what = format!("a vector add of {size} elements");
        // the check brings all three vectors back
        alloc::ensure(&what, traffic(n, std::mem::size_of::<T>()))?;
        let (a, b) = inputs::<T>(&what, n, seed)?;
        Ok(Box::new(OnDevice {
            n,
            a: buffers::upload(stream, &a)?,
            b: buffers::upload(stream, &b)?,
            c: buffers::poisoned(stream, &what, n)?,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "the host's sums"
    }
}
