//! The fused epilogue's host API: `C = act(alpha · A·Bᵀ + beta · D + bias)` on f16 device
//! buffers, [`MatmulEpilogue`] autotuned on its first use of each shape.

use super::{Activation, MatmulEpilogue};
use crate::host::{dim, elements, length};
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::runtime::Device;
use tilus::tune::{Autotuned, Tunable};

/// The inputs of a fused product: `a` `[m, k]`, `b` `[n, k]` (both row-major, K innermost),
/// the residual `d` `[m, n]` and the `bias` `[n]`.
///
/// On host slices for [`FusedGemm::interpret`], on device buffers for [`FusedGemm::run`]:
///
/// ```
/// use tilus_kernels::gemm::epilogue::EpilogueInputs;
/// let (a, b, d, bias) = (vec![half::f16::ONE; 8], vec![half::f16::ONE; 8], vec![half::f16::ZERO; 4], vec![half::f16::ZERO; 2]);
/// let inputs = EpilogueInputs { a: &a[..], b: &b[..], d: &d[..], bias: &bias[..] };
/// assert_eq!(inputs.bias.len(), 2); // one per column of C
/// ```
pub struct EpilogueInputs<'a, B: ?Sized> {
    /// A, `[m, k]`.
    pub a: &'a B,
    /// B, `[n, k]`.
    pub b: &'a B,
    /// The residual D, `[m, n]`.
    pub d: &'a B,
    /// The bias, `[n]`, added to every row.
    pub bias: &'a B,
}

/// `C = act(alpha · A·Bᵀ + beta · D + bias)` in one kernel, the activation a type
/// ([`super::Identity`], [`super::Relu`], [`super::GeluTanh`] or one of your own).
///
/// ```no_run
/// use tilus_kernels::gemm::epilogue::{EpilogueInputs, FusedGemm, GeluTanh};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let gemm = FusedGemm::<GeluTanh>::new(&device)?;
/// let (m, n, k) = (4096, 4096, 4096);
/// let s = device.stream();
/// let a = s.clone_htod(&vec![half::f16::ONE; m * k])?;
/// let b = s.clone_htod(&vec![half::f16::ONE; n * k])?;
/// let d = s.clone_htod(&vec![half::f16::ZERO; m * n])?;
/// let bias = s.clone_htod(&vec![half::f16::ZERO; n])?;
/// let mut c = s.alloc_zeros::<half::f16>(m * n)?;
/// let inputs = EpilogueInputs { a: &a, b: &b, d: &d, bias: &bias };
/// gemm.run(s, (m, n, k), (1.0, 0.0), inputs, &mut c)?; // c = gelu(A·Bᵀ)
/// # Ok(()) }
/// ```
pub struct FusedGemm<A: Activation> {
    tuned: Autotuned<MatmulEpilogue<A>>,
}

impl<A: Activation> FusedGemm<A> {
    /// The kernel bound to `device` (nothing is compiled until a shape is first used).
    pub fn new(device: &Device) -> crate::Result<FusedGemm<A>> {
        Ok(FusedGemm {
            tuned: MatmulEpilogue::<A>::autotuned(device)?,
        })
    }

    /// `c = act(alpha · a·bᵀ + beta · d + bias)` on `stream`, `(alpha, beta)` given as
    /// `scale`; the buffers are checked against the shape (and, at the launch, the 16-byte
    /// alignment the copies need: `k` a multiple of 8) before anything runs.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize, usize),
        (alpha, beta): (f32, f32),
        x: EpilogueInputs<'_, CudaSlice<f16>>,
        c: &mut CudaSlice<f16>,
    ) -> crate::Result<()> {
        let lens = [x.a.len(), x.b.len(), x.d.len(), x.bias.len(), c.len()];
        let (m, n, k) = checked_shape(shape, lens)?;
        let args = (m, n, k, alpha, beta, x.a, x.b, x.d, x.bias, c);
        Ok(self.tuned.launch(stream, args)?)
    }

    /// The same computation by `config` on the CPU interpreter, on host slices.
    pub fn interpret(
        config: &MatmulEpilogue<A>,
        shape: (usize, usize, usize),
        (alpha, beta): (f32, f32),
        x: EpilogueInputs<'_, [f16]>,
        c: &mut [f16],
    ) -> crate::Result<()> {
        let lens = [x.a.len(), x.b.len(), x.d.len(), x.bias.len(), c.len()];
        let (m, n, k) = checked_shape(shape, lens)?;
        tilus::interpret(config, (m, n, k, alpha, beta, x.a, x.b, x.d, x.bias, c))?;
        Ok(())
    }
}

/// The kernel's `(m, n, k)`, once the lengths of A, B, D, the bias and C match the shape.
fn checked_shape(
    (m, n, k): (usize, usize, usize),
    [a, b, d, bias, c]: [usize; 5],
) -> crate::Result<(i32, i32, i32)> {
    const NAME: &str = "gemm::epilogue";
    let dims = (
        dim(NAME, "m", m, 1)?,
        dim(NAME, "n", n, 1)?,
        dim(NAME, "k", k, 1)?,
    );
    length(NAME, "a", a, elements(NAME, m, k)?)?;
    length(NAME, "b", b, elements(NAME, n, k)?)?;
    length(NAME, "d", d, elements(NAME, m, n)?)?;
    length(NAME, "bias", bias, n)?;
    length(NAME, "c", c, elements(NAME, m, n)?)?;
    Ok(dims)
}
