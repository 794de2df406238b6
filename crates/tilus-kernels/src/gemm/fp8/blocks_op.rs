//! The host API of [`MatmulFp8Blocks`]: the per-tensor API's rules, and scales of the lengths
//! the shape's blocks need.

use super::blocks::MatmulFp8Blocks;
use super::op::{checked_operands, NAME};
use crate::host::{elements, length};
use crate::{Error, Result};
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use tilus::interp::Pod;
use tilus::lang::Element;
use tilus::runtime::Device;
use tilus::tune::{FixedOrTuned, Tunable};

/// `c [m, n]` = the product of FP8 codes `a [m, k]` and `b [n, k]` with DeepGEMM's
/// fine-grained scales: `a_scales [ceil(k / 128), m]` (one per row and block of 128 of K;
/// each block's scales of every row together) and `b_scales [ceil(n / 128), ceil(k / 128)]`
/// (one per block of 128 × 128 of B), on the device; out in `O` (bf16, f16, f32). Any
/// `m, n ≥ 1`; `k` a multiple of 16.
///
/// ```
/// use tilus::lowp::F8E4M3;
/// use tilus_kernels::gemm::fp8::{Fp8BlocksGemmOp, MatmulFp8Blocks};
/// let (m, n, k) = (3, 130, 144); // two blocks of N and of K, each partly filled
/// let a = vec![F8E4M3::from_f32(0.5); m * k];
/// let b = vec![F8E4M3::from_f32(1.0); n * k];
/// let a_scales = vec![2.0f32; 2 * m];
/// let b_scales = [1.0f32, 1.0, 4.0, 4.0]; // [n_blocks, k_blocks]
/// let mut c = vec![half::bf16::NAN; m * n];
/// let config = MatmulFp8Blocks::<F8E4M3, half::bf16>::default();
/// Fp8BlocksGemmOp::interpret(&config, (m, n, k), (&a, &b), (&a_scales, &b_scales), &mut c)?;
/// assert_eq!((c[0].to_f32(), c[n - 1].to_f32()), (144.0, 576.0));
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub struct Fp8BlocksGemmOp<T: Element, O: Element> {
    kernel: FixedOrTuned<MatmulFp8Blocks<T, O>>,
}

impl<T, O> Fp8BlocksGemmOp<T, O>
where
    T: Element + DeviceRepr,
    O: Element + DeviceRepr,
{
    /// Tuned per shape on first use of each.
    pub fn new(device: &Device) -> Result<Self> {
        Ok(Fp8BlocksGemmOp {
            kernel: FixedOrTuned::Tuned(MatmulFp8Blocks::<T, O>::autotuned(device)?),
        })
    }

    /// One configuration for every shape.
    pub fn fixed(config: MatmulFp8Blocks<T, O>, device: &Device) -> Self {
        Fp8BlocksGemmOp {
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
        (a_scales, b_scales): (&CudaSlice<f32>, &CudaSlice<f32>),
        c: &mut CudaSlice<O>,
    ) -> Result<()> {
        let lens = (a.len(), b.len(), c.len(), a_scales.len(), b_scales.len());
        let (m, n, k) = checked::<T>(shape, lens)?;
        self.kernel
            .launch(stream, (m, n, k, a, b, a_scales, b_scales, c))
            .map_err(Error::from)
    }
}

impl<T: Element + Pod, O: Element + Pod> Fp8BlocksGemmOp<T, O> {
    /// The same computation by `config` on the CPU interpreter, on host slices.
    pub fn interpret(
        config: &MatmulFp8Blocks<T, O>,
        shape: (usize, usize, usize),
        (a, b): (&[T], &[T]),
        (a_scales, b_scales): (&[f32], &[f32]),
        c: &mut [O],
    ) -> Result<()> {
        let lens = (a.len(), b.len(), c.len(), a_scales.len(), b_scales.len());
        let (m, n, k) = checked::<T>(shape, lens)?;
        tilus::interpret(config, (m, n, k, a, b, a_scales, b_scales, c))?;
        Ok(())
    }
}

/// The operands' rules, and each scale buffer's length: `ceil(k / 128) · m` and
/// `ceil(n / 128) · ceil(k / 128)`.
fn checked<T: Element>(
    shape @ (m, n, k): (usize, usize, usize),
    (a, b, c, a_scales, b_scales): (usize, usize, usize, usize, usize),
) -> Result<(i32, i32, i32)> {
    let dims = checked_operands::<T>(shape, (a, b, c))?;
    let (k_blocks, n_blocks) = (k.div_ceil(128), n.div_ceil(128));
    length(NAME, "a_scales", a_scales, elements(NAME, k_blocks, m)?)?;
    length(
        NAME,
        "b_scales",
        b_scales,
        elements(NAME, n_blocks, k_blocks)?,
    )?;
    Ok(dims)
}
