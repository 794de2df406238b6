//! The host API of [`MatmulFp8`]: shapes, buffers and the rule on K checked before anything is
//! launched; one configuration, or the search space tuned per shape.

use super::kernel::MatmulFp8;
use crate::host::{dim, elements, length};
use crate::{Error, Result};
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use tilus::interp::Pod;
use tilus::lang::Element;
use tilus::runtime::Device;
use tilus::tune::{FixedOrTuned, Tunable};

pub(super) const NAME: &str = "gemm_fp8";

/// `c [m, n] = (scale_a · scale_b) · a [m, k] · b [n, k]ᵀ` on FP8 codes `T` (`F8E4M3`,
/// `F8E5M2`) with output `O` (bf16, f16, f32), on device buffers. `scales` holds A's scale,
/// then B's, on the device (so that a quantizing kernel can write them without a
/// synchronization). Any `m, n ≥ 1`; `k` a multiple of 16 (each row of codes a multiple of 16
/// bytes, as the tensor memory accelerator reads them).
///
/// ```no_run
/// use tilus::lowp::F8E4M3;
/// use tilus_kernels::gemm::fp8::Fp8GemmOp;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let stream = device.stream();
/// let (m, n, k) = (4096, 4096, 4096);
/// let op = Fp8GemmOp::<F8E4M3, half::bf16>::new(&device)?; // tuned per shape
/// let a = stream.clone_htod(&vec![F8E4M3::from_f32(1.0); m * k])?;
/// let b = stream.clone_htod(&vec![F8E4M3::from_f32(0.5); n * k])?;
/// let scales = stream.clone_htod(&[0.01f32, 0.02])?;
/// let mut c = stream.alloc_zeros::<half::bf16>(m * n)?;
/// op.run(stream, (m, n, k), (&a, &b), &scales, &mut c)?;
/// # Ok(()) }
/// ```
pub struct Fp8GemmOp<T: Element, O: Element> {
    kernel: FixedOrTuned<MatmulFp8<T, O>>,
}

impl<T, O> Fp8GemmOp<T, O>
where
    T: Element + DeviceRepr,
    O: Element + DeviceRepr,
{
    /// Tuned per shape on first use of each (the search space of [`MatmulFp8`]).
    pub fn new(device: &Device) -> Result<Self> {
        Ok(Fp8GemmOp {
            kernel: FixedOrTuned::Tuned(MatmulFp8::<T, O>::autotuned(device)?),
        })
    }

    /// One configuration for every shape.
    pub fn fixed(config: MatmulFp8<T, O>, device: &Device) -> Self {
        Fp8GemmOp {
            kernel: FixedOrTuned::Fixed(tilus::Jit::new(config, device)),
        }
    }

    /// Runs on `stream`, after checking the shape and the buffers' lengths (nothing is
    /// launched when they do not fit).
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize, usize),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        scales: &CudaSlice<f32>,
        c: &mut CudaSlice<O>,
    ) -> Result<()> {
        let (m, n, k) = checked::<T>(shape, (a.len(), b.len(), scales.len(), c.len()))?;
        self.kernel
            .launch(stream, (m, n, k, a, b, scales, c))
            .map_err(Error::from)
    }

    /// The configuration a run of `shape` uses (tuning first when needed), not launched.
    pub fn config(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize, usize),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        scales: &CudaSlice<f32>,
        c: &mut CudaSlice<O>,
    ) -> Result<MatmulFp8<T, O>> {
        use tilus::lang::ArgList;
        let (m, n, k) = checked::<T>(shape, (a.len(), b.len(), scales.len(), c.len()))?;
        let args = (m, n, k, a, b, scales, c);
        let values =
            <<MatmulFp8<T, O> as tilus::Script>::Args as ArgList>::host_values(&args, stream);
        Ok(self.kernel.config(stream, &values)?)
    }
}

impl<T: Element + Pod, O: Element + Pod> Fp8GemmOp<T, O> {
    /// The same computation by `config` on the CPU interpreter, on host slices.
    ///
    /// ```
    /// use tilus::lowp::F8E5M2;
    /// use tilus_kernels::gemm::fp8::{Fp8GemmOp, MatmulFp8};
    /// let (m, n, k) = (3, 5, 32);
    /// let a = vec![F8E5M2::from_f32(1.5); m * k];
    /// let b = vec![F8E5M2::from_f32(-2.0); n * k];
    /// let mut c = vec![f32::NAN; m * n];
    /// let config = MatmulFp8::<F8E5M2, f32>::default();
    /// Fp8GemmOp::interpret(&config, (m, n, k), (&a, &b), &[1.0, 0.5], &mut c)?;
    /// assert!(c.iter().all(|&v| v == -48.0));
    /// // K must be a multiple of 16: nothing runs otherwise
    /// let e = Fp8GemmOp::interpret(&config, (m, n, 24), (&a[..72], &b[..120]), &[1.0, 1.0], &mut c);
    /// assert!(e.unwrap_err().to_string().contains("multiple of 16"));
    /// # Ok::<(), tilus_kernels::Error>(())
    /// ```
    pub fn interpret(
        config: &MatmulFp8<T, O>,
        shape: (usize, usize, usize),
        (a, b): (&[T], &[T]),
        scales: &[f32],
        c: &mut [O],
    ) -> Result<()> {
        let (m, n, k) = checked::<T>(shape, (a.len(), b.len(), scales.len(), c.len()))?;
        tilus::interpret(config, (m, n, k, a, b, scales, c))?;
        Ok(())
    }
}

/// The shape as the kernel's arguments, after every rule: positive dimensions that fit `i32`,
/// K a multiple of 16, 8-bit float operands, buffers of the lengths the shape needs (per-tensor
/// scales: 2).
fn checked<T: Element>(
    shape: (usize, usize, usize),
    (a, b, scales, c): (usize, usize, usize, usize),
) -> Result<(i32, i32, i32)> {
    let dims = checked_operands::<T>(shape, (a, b, c))?;
    length(NAME, "scales", scales, 2)?;
    Ok(dims)
}

/// [`checked`] less the scales.
pub(super) fn checked_operands<T: Element>(
    (m, n, k): (usize, usize, usize),
    (a, b, c): (usize, usize, usize),
) -> Result<(i32, i32, i32)> {
    let dt = T::DTYPE;
    if dt.bits() != 8 || !dt.is_float() {
        return Err(Error::Shape {
            kernel: NAME,
            message: format!(
                "{}: the operands are 8-bit floats (f8e4m3, f8e5m2)",
                dt.name()
            ),
        });
    }
    let (mi, ni, ki) = (
        dim(NAME, "m", m, 1)?,
        dim(NAME, "n", n, 1)?,
        dim(NAME, "k", k, 1)?,
    );
    if k % 16 != 0 {
        return Err(Error::Shape {
            kernel: NAME,
            message: format!(
                "k = {k}: must be a multiple of 16 (rows of codes of 16-byte multiples, \
                 as the tensor memory accelerator reads them)"
            ),
        });
    }
    length(NAME, "a", a, elements(NAME, m, k)?)?;
    length(NAME, "b", b, elements(NAME, n, k)?)?;
    length(NAME, "c", c, elements(NAME, m, n)?)?;
    Ok((mi, ni, ki))
}
