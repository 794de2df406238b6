//! `matmul_epilogue`: v6's main loop (two consumer warp groups on a warp-specialized ring, a
//! persistent grid) with a fused epilogue, run by each consumer warp group on its share of a
//! tile (half of it, or all of it in ping-pong), `C = act(alpha · A·Bᵀ + beta · D + bias)`, so that the scaled product, the residual
//! `D` and the bias never make a round trip through global memory between two kernels. Where
//! C's rows allow TMA, D and the bias are copied into shared memory halfway through each
//! tile's main loop and C is stored with TMA from the same buffers
//! (`gemm/epilogue/operands.rs`); otherwise they are loaded from global memory in the
//! epilogue and C is stored from registers.
//!
//! A `[M, K]`, B `[N, K]` (both K-major), D and C `[M, N]`, bias `[N]` (one value per
//! column, broadcast over the rows), all f16; `alpha` and `beta` are f32 arguments. The
//! accumulator stays in f32 and the whole epilogue is computed in f32 (D and the bias are
//! widened exactly), then rounded once to f16.
//!
//! The activation is a type ([`Identity`], [`Relu`], [`GeluTanh`], or any [`Activation`] of
//! your own): each is its own kernel, and the tile expression it builds is fused into the
//! same instruction as the scale and the adds.

mod fused;
pub(crate) mod operands;

pub use fused::{EpilogueInputs, FusedGemm};

use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;
use tilus::prelude::*;
use tilus::tune::{Binding, Space};

use crate::gemm::epilogue::operands::StagedOperands;
use crate::gemm::persistent::MatmulPersistent;
use crate::gemm::tile_epilogue::{columns, CStores, TileAt, TileEpilogue};

/// Columns of the epilogue's chunks: a chunk's D, bias and result (16 registers each at
/// most) are alive beside the accumulator, not the whole tile's, and the staged operands get
/// several buffers in flight.
const CHUNK: i32 = 32;

/// An elementwise activation, applied to the f32 pre-activation tile on the GPU and to f64
/// values by the host reference.
///
/// An activation of your own is a type with a tile expression and its f64 twin; the fused
/// kernel it makes is checked here on the interpreter against that twin:
///
/// ```
/// use tilus::prelude::*;
/// use tilus_kernels::gemm::epilogue::{Activation, EpilogueInputs, FusedGemm, MatmulEpilogue};
///
/// /// `act(x) = max(x, x / 8)`.
/// #[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
/// struct LeakyRelu;
///
/// impl Activation for LeakyRelu {
///     const NAME: &'static str = "leaky_relu";
///     fn apply(x: Tile<f32>) -> Tile<f32> {
///         x.clone().maximum(x * 0.125)
///     }
///     fn reference(x: f64) -> f64 {
///         x.max(x / 8.0)
///     }
/// }
///
/// let (m, n, k) = (128, 128, 64);
/// let a = vec![f16::from_f32(-0.5); m * k];
/// let b = vec![f16::ONE; n * k];
/// let (d, bias) = (vec![f16::ZERO; m * n], vec![f16::ONE; n]);
/// let mut c = vec![f16::NAN; m * n];
/// let inputs = EpilogueInputs { a: &a[..], b: &b[..], d: &d[..], bias: &bias[..] };
/// let config = MatmulEpilogue::<LeakyRelu>::default();
/// FusedGemm::interpret(&config, (m, n, k), (1.0, 0.0), inputs, &mut c)?;
/// // -0.5 · 64 + 1 = -31, and max(-31, -31 / 8) = -3.875
/// assert!(c.iter().all(|&v| v == f16::from_f32(LeakyRelu::reference(-31.0) as f32)));
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub trait Activation: Clone + Debug + Hash + Default + Send + Sync + 'static {
    /// Its name in kernel names and tables (`gelu`).
    const NAME: &'static str;
    /// The activation of a tile expression.
    fn apply(x: Tile<f32>) -> Tile<f32>;
    /// The same function in f64, for references.
    fn reference(x: f64) -> f64;
}

/// `act(x) = x`.
///
/// ```
/// use tilus_kernels::gemm::epilogue::{Activation, Identity};
/// assert_eq!((Identity::NAME, Identity::reference(-2.5)), ("identity", -2.5));
/// ```
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub struct Identity;

impl Activation for Identity {
    const NAME: &'static str = "identity";
    fn apply(x: Tile<f32>) -> Tile<f32> {
        x
    }
    fn reference(x: f64) -> f64 {
        x
    }
}

/// `act(x) = max(x, 0)`.
///
/// ```
/// use tilus_kernels::gemm::epilogue::{Activation, Relu};
/// assert_eq!((Relu::reference(-2.5), Relu::reference(1.5)), (0.0, 1.5));
/// ```
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub struct Relu;

impl Activation for Relu {
    const NAME: &'static str = "relu";
    fn apply(x: Tile<f32>) -> Tile<f32> {
        x.maximum(0.0)
    }
    fn reference(x: f64) -> f64 {
        x.max(0.0)
    }
}

/// GELU in its tanh form: `0.5 · x · (1 + tanh(u))` with `u = √(2/π) · (x + 0.044715 · x³)`,
/// computed as the equal `x / (1 + 2^(-2u · log2 e))` (since `(1 + tanh(u)) / 2` is the
/// logistic function of `2u`), with the hardware's approximations for the power of two and the
/// reciprocal (`exp2_approx`, `recip_approx`: fast math, asked for here; relative errors of a
/// few f32 ulps, far below the f16 output's rounding). The exponent is
/// `x · (c3 · x² + c1)` with log2(e) folded into the constants: one fused multiply-add and two
/// products, then the two special-function instructions, an add and a product: six float
/// instructions and two on the special-function unit per element. An accurate `tanhf` or an
/// IEEE division costs several times as many instructions, and `tanh.approx.f32`'s error of
/// about 2^-11 of `tanh` is too large where `1 + tanh(u)` is small (negative `x`).
///
/// ```
/// use tilus_kernels::gemm::epilogue::{Activation, GeluTanh};
/// assert!((GeluTanh::reference(1.0) - 0.841192).abs() < 1e-6);
/// ```
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub struct GeluTanh;

/// √(2/π).
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

impl Activation for GeluTanh {
    const NAME: &'static str = "gelu";
    fn apply(x: Tile<f32>) -> Tile<f32> {
        // -2u · log2(e) = x · (c3 · x² + c1), c1 = -2√(2/π) · log2(e), c3 = 0.044715 · c1
        let c1 = -2.0 * SQRT_2_OVER_PI * std::f64::consts::LOG2_E;
        let square = x.clone() * x.clone();
        let exponent = x.clone() * square.mul_add(0.044715 * c1, c1);
        x * (exponent.exp2_approx() + 1.0).recip_approx()
    }
    fn reference(x: f64) -> f64 {
        0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
    }
}

/// The kernel: v6's configuration (its hyperparameters and search space) and the activation.
///
/// Launched through [`FusedGemm`], or run as it is (its arguments: [`EpilogueArgs`]):
///
/// ```
/// use tilus::Script;
/// use tilus_kernels::gemm::epilogue::{MatmulEpilogue, Relu};
/// let kernel = MatmulEpilogue::<Relu>::default();
/// assert_eq!(kernel.name(), "matmul_epilogue_relu");
/// assert_eq!(kernel.tile.block_n, 256); // the persistent kernel's default tile
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct MatmulEpilogue<A: Activation> {
    /// The block tile of the main loop.
    pub tile: MatmulPersistent,
    act: PhantomData<A>,
}

impl<A: Activation> Debug for MatmulEpilogue<A> {
    /// The block tile's hyperparameters and the activation's name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.tile;
        f.debug_struct("MatmulEpilogue")
            .field("block_m", &t.block_m)
            .field("block_n", &t.block_n)
            .field("block_k", &t.block_k)
            .field("stages", &t.stages)
            .field("group_m", &t.group_m)
            .field("persistent", &t.persistent)
            .field("tma_store", &t.tma_store)
            .field("cluster_m", &t.cluster_m)
            .field("hilbert", &t.hilbert)
            .field("ping_pong", &t.ping_pong)
            .field("act", &format_args!("{}", A::NAME))
            .finish()
    }
}

impl<A: Activation> Default for MatmulEpilogue<A> {
    /// v6's default configuration (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulEpilogue::new(MatmulPersistent::default())
    }
}

impl<A: Activation> MatmulEpilogue<A> {
    /// The kernel with this block tile.
    pub fn new(tile: MatmulPersistent) -> Self {
        MatmulEpilogue {
            tile,
            act: PhantomData,
        }
    }
}

/// The search space is v6's: the epilogue adds no hyperparameter.
impl<A: Activation> Tunable for MatmulEpilogue<A> {
    fn space() -> Space {
        <MatmulPersistent as Tunable>::space()
    }
    fn from_binding(binding: &Binding) -> Result<Self, String> {
        <MatmulPersistent as Tunable>::from_binding(binding).map(MatmulEpilogue::new)
    }
    fn to_binding(&self) -> Option<Binding> {
        self.tile.to_binding()
    }
}

/// The arguments: `(m, n, k, alpha, beta, a, b, d, bias, c)`; `n` and `k` are compile-time
/// constants, as in the series.
///
/// ```
/// use tilus_kernels::gemm::epilogue::{EpilogueArgs, GeluTanh, MatmulEpilogue};
/// fn takes<S: tilus::Script<Args = EpilogueArgs>>() {}
/// takes::<MatmulEpilogue<GeluTanh>>();
/// ```
pub type EpilogueArgs = (
    i32,
    Const<i32>,
    Const<i32>,
    f32,
    f32,
    Ptr<f16>,
    Ptr<f16>,
    Ptr<f16>,
    Ptr<f16>,
    PtrMut<f16>,
);

impl<A: Activation> Script for MatmulEpilogue<A> {
    type Args = EpilogueArgs;

    fn name(&self) -> String {
        format!("matmul_epilogue_{}", A::NAME)
    }

    fn arg_names() -> &'static [&'static str] {
        &[
            "m_size", "n_size", "k_size", "alpha", "beta", "a_ptr", "b_ptr", "d_ptr", "bias_ptr",
            "c_ptr",
        ]
    }

    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, alpha, beta, a_ptr, b_ptr, d_ptr, bias_ptr, c_ptr): Handles<
            Self::Args,
        >,
    ) {
        let t = &self.tile;
        let gd = k
            .name_next("gd")
            .global_view::<f16>(d_ptr, [m_size, n_size]);
        let gbias = k.name_next("gbias").global_view::<f16>(bias_ptr, [n_size]);
        let gc = k
            .name_next("gc")
            .global_view::<f16>(c_ptr, [m_size, n_size]);
        // TMA for D, the bias and C where C's rows are a multiple of 16 bytes, as TMA needs
        // (`n` is a compile-time constant: the choice is made per specialization)
        let rows_aligned = n_size.as_const().is_some_and(|n| n % 8 == 0);
        let operands = if t.tma_store != 0 && rows_aligned {
            // the bias in rows of 8 for its copies (n is a multiple of 8 here)
            let rows_of_8 = n_size / 8;
            let gbias = k
                .name_next("gbias8")
                .global_view::<f16>(bias_ptr, [rows_of_8, Scalar::from(8)]);
            Operands::Staged(Box::new(StagedOperands::new(k, (gd, gbias, gc), t, CHUNK)))
        } else {
            Operands::Loaded {
                stores: t.c_stores(k, gc, n_size, CHUNK),
                gd,
                gbias,
            }
        };
        let epilogue = Fused::<A> {
            operands,
            alpha,
            beta,
            group_rows: t.group_rows(),
            block_n: t.block_n,
            act: PhantomData,
        };
        // the main loop: v6's; each consumer warp group then runs the epilogue on its half
        // (a generic impl: `#[tilus::script]` does not apply, so the names are given by hand)
        t.tiles(k, (m_size, n_size, k_size), (a_ptr, b_ptr), &epilogue, None);
    }
}

/// Where the epilogue's D and bias come from.
enum Operands {
    /// Copied with TMA during the main loop, C stored with TMA from the same buffers.
    Staged(Box<StagedOperands>),
    /// Loaded from global memory in the epilogue (C's rows not a multiple of 16 bytes), C
    /// stored as v6 stores it.
    Loaded {
        stores: CStores<f16>,
        gd: GlobalTensor<f16>,
        gbias: GlobalTensor<f16>,
    },
}

/// The fused epilogue of one kernel: its operands, the scales and the activation.
struct Fused<A: Activation> {
    operands: Operands,
    alpha: Val,
    beta: Val,
    /// Rows of a consumer warp group's accumulator.
    group_rows: i32,
    block_n: i32,
    act: PhantomData<A>,
}

impl<A: Activation> Fused<A> {
    /// C's chunk from the accumulator's columns, D and the bias: one fused expression.
    fn chunk(
        &self,
        k: &mut Kernel,
        part: RegisterTensor<f32>,
        d: RegisterTensor<f16>,
        bias: RegisterTensor<f16>,
    ) -> RegisterTensor<f16> {
        // the pre-activation once: an activation that reads it several times (GELU) reads
        // its registers, not copies of the expression; two fused multiply-adds
        // (`alpha · acc + (beta · D + bias)`), each rounded once
        let residual = d.cast::<f32>().mul_add(self.beta, bias.cast::<f32>());
        let pre = k
            .name_next("pre")
            .compute(part.mul_add(self.alpha, residual));
        k.name_next("out")
            .compute(A::apply(pre.into_tile()).cast::<f16>())
    }
}

impl<A: Activation> TileEpilogue for Fused<A> {
    fn tile(&self, k: &mut Kernel, g: usize, acc: &RegisterTensor<f32>, at: &TileAt) {
        match &self.operands {
            Operands::Staged(staged) => {
                staged.tile(k, g, acc, at, &|k, part, d, bias| {
                    self.chunk(k, part, d, bias)
                });
            }
            Operands::Loaded { stores, gd, gbias } => {
                stores.store(k, g, at.place(), |k, c| {
                    // D and the bias are loaded straight into the accumulator's layout
                    // (masked at the edges)
                    let on = k.let_i32(at.cols + c * CHUNK);
                    k.name_next("acc_part");
                    let part = columns(k, (acc, self.block_n), c * CHUNK, CHUNK);
                    let d =
                        k.name_next("d")
                            .load_global(gd, [at.rows, on], [self.group_rows, CHUNK]);
                    let bias = k.name_next("bias").load_global(gbias, [on], [CHUNK]);
                    self.chunk(k, part, d, bias)
                });
            }
        }
    }

    fn finish(&self, k: &mut Kernel, g: usize) {
        match &self.operands {
            Operands::Staged(staged) => staged.finish(k, g),
            Operands::Loaded { stores, .. } => stores.finish(k, g),
        }
    }

    fn prefetches(&self) -> bool {
        matches!(self.operands, Operands::Staged(_))
    }

    fn prefetch(&self, k: &mut Kernel, g: usize, at: &TileAt) {
        if let Operands::Staged(staged) = &self.operands {
            staged.prefetch(k, g, at);
        }
    }
}
