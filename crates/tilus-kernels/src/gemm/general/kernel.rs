//! The kernel of the general GEMM: v6's main loop on operands in either order, from strided,
//! batched views, with `C = alpha · A · B + beta · C` in its epilogue.

use crate::gemm::persistent::{MatmulPersistent, Operands};
use crate::gemm::ring_operands::RingOperands;
use crate::gemm::tile_epilogue::{CStores, CastAndStore, STORE_CHUNK};
use tilus::lang::Element;
use tilus::prelude::*;
use tilus::tune::{Binding, Space};

use super::scale::ScaleAndStore;

/// The arguments of [`MatmulGeneral`]: `(batch, m, n, k, form, a, lda, stride_a, a_batches,
/// b, ldb, stride_b, b_batches, c, ldc, stride_c, alpha, beta)` in element type `T`. `n`, `k`
/// and `form` (the bits of [`Form`]) are compile-time constants; the leading dimensions and
/// batch strides are in elements and positive. `a_batches` and `b_batches` are the matrices
/// each operand holds: the batch, or 1 for one matrix every product shares (product `b`
/// reads matrix `b % batches`).
///
/// ```
/// use tilus_kernels::gemm::general::{GeneralArgsOf, MatmulGeneral};
/// fn takes<S: tilus::Script<Args = A>, A>() {}
/// takes::<MatmulGeneral, GeneralArgsOf<half::f16>>();
/// ```
pub type GeneralArgsOf<T> = (
    i32,
    i32,
    Const<i32>,
    Const<i32>,
    Const<i32>,
    Ptr<T>,
    i32,
    i32,
    i32,
    Ptr<T>,
    i32,
    i32,
    i32,
    PtrMut<T>,
    i32,
    i32,
    f32,
    f32,
);

/// The handles of [`GeneralArgsOf`].
type GeneralHandles<T> = (
    Val,
    Val,
    Val,
    Val,
    Val,
    PtrVal<T>,
    Val,
    Val,
    Val,
    PtrVal<T>,
    Val,
    Val,
    Val,
    PtrVal<T>,
    Val,
    Val,
    Val,
    Val,
);

/// The names of the arguments in the generated code.
const GENERAL_ARG_NAMES: &[&str] = &[
    "batch",
    "m_size",
    "n_size",
    "k_size",
    "form",
    "a_ptr",
    "lda",
    "stride_a",
    "a_batches",
    "b_ptr",
    "ldb",
    "stride_b",
    "b_batches",
    "c_ptr",
    "ldc",
    "stride_c",
    "alpha",
    "beta",
];

/// What a specialization of [`MatmulGeneral`] is compiled for: the operands' orders, whether
/// the epilogue scales (`alpha`, `beta`), and whether C's rows allow TMA stores. One
/// compile-time argument, so that each form is its own kernel.
///
/// ```
/// use tilus_kernels::gemm::general::Form;
/// let f = Form { a_col_major: true, scaled: true, a_tma: true, ..Form::default() };
/// assert_eq!(Form::from_bits(f.bits()), f);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Form {
    /// A is column-major (stored `[K, M]`).
    pub a_col_major: bool,
    /// B is column-major (stored `[N, K]`); row-major B is stored `[K, N]`.
    pub b_col_major: bool,
    /// `C = alpha · A · B + beta · C`; else `C = A · B` (alpha 1, beta 0: C is not read).
    pub scaled: bool,
    /// C's leading dimension, batch stride and address allow TMA stores (multiples of 16
    /// bytes).
    pub c_tma: bool,
    /// A's allow TMA copies; else the producer's threads load A.
    pub a_tma: bool,
    /// B's allow TMA copies; else the producer's threads load B.
    pub b_tma: bool,
}

impl Form {
    /// The form as the kernel's compile-time argument.
    pub fn bits(self) -> i32 {
        self.a_col_major as i32
            | (self.b_col_major as i32) << 1
            | (self.scaled as i32) << 2
            | (self.c_tma as i32) << 3
            | (self.a_tma as i32) << 4
            | (self.b_tma as i32) << 5
    }

    /// The form of [`Form::bits`].
    pub fn from_bits(bits: i32) -> Form {
        Form {
            a_col_major: bits & 1 != 0,
            b_col_major: bits & 2 != 0,
            scaled: bits & 4 != 0,
            c_tma: bits & 8 != 0,
            a_tma: bits & 16 != 0,
            b_tma: bits & 32 != 0,
        }
    }
}

/// `C[b] = alpha · op(A)[b] · op(B)[b] + beta · C[b]` for every product `b` of a batch: v6's
/// persistent, warp-specialized main loop (two consumer warp groups or ping-pong, a producer
/// filling a TMA ring), its operands read as stored whichever their order (MN-major tiles,
/// the tensor cores' transpose bits: no transposing copy), from views with any leading
/// dimension and batch stride that TMA takes (multiples of 16 bytes). The tiles of every
/// product are one persistent grid. C is row-major `[batch, m, n]` with its own leading
/// dimension and batch stride; the epilogue computes in f32 and rounds once.
///
/// ```
/// use tilus_kernels::gemm::general::{Form, MatmulGeneral};
/// // C = A · B, A row-major [128, 64], B row-major [64, 128] (MN-major on the tensor cores)
/// let (m, n, k) = (128usize, 128usize, 64usize);
/// let a = vec![half::f16::ONE; m * k];
/// let b = vec![half::f16::from_f32(0.5); k * n];
/// let mut c = vec![half::f16::NAN; m * n];
/// let form = Form { a_tma: true, b_tma: true, ..Form::default() }.bits();
/// let (mi, ni, ki) = (m as i32, n as i32, k as i32);
/// tilus::interpret(
///     &MatmulGeneral::default(),
///     (1, mi, ni, ki, form, &a[..], ki, mi * ki, 1, &b[..], ni, ki * ni, 1,
///      &mut c[..], ni, mi * ni, 1.0f32, 0.0f32),
/// )?;
/// assert!(c.iter().all(|&v| v == half::f16::from_f32(32.0)));
/// # Ok::<(), tilus::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MatmulGeneral {
    /// The main loop's tile (v6's hyperparameters; blocks alone, no pairs).
    pub tile: MatmulPersistent,
}

impl Default for MatmulGeneral {
    /// v6's default tile.
    fn default() -> Self {
        MatmulGeneral {
            tile: MatmulPersistent::default(),
        }
    }
}

crate::gemm::operand::f16_and_bf16_scripts!(
    MatmulGeneral,
    "matmul_general",
    GeneralArgsOf,
    GENERAL_ARG_NAMES,
    general
);

/// The hyperparameters the general GEMM's search space covers (v6's others keep their defaults).
const GENERAL_TUNED: &[&str] = &[
    "block_m",
    "block_n",
    "ping_pong",
    "stages",
    "group_m",
    "tma_store",
];

/// v6's tiles, stages, orders and epilogue stores (blocks alone: pairs share K-major B
/// tiles of contiguous operands).
impl Tunable for MatmulGeneral {
    fn space() -> Space {
        Space::new()
            .axis(
                &["block_m", "block_n", "ping_pong"],
                vec![
                    vec![128, 128, 0],
                    vec![128, 256, 0],
                    vec![256, 128, 0],
                    vec![128, 128, 1],
                    vec![64, 256, 1],
                ],
            )
            .and_then(|s| s.values("stages", &[3, 4]))
            .and_then(|s| s.values("group_m", &[1, 8]))
            .and_then(|s| s.values("tma_store", &[0, 1]))
            .expect("the general GEMM's space is well formed")
    }

    fn from_binding(binding: &Binding) -> Result<Self, String> {
        MatmulPersistent::from_subset(binding, GENERAL_TUNED).map(|tile| MatmulGeneral { tile })
    }

    fn to_binding(&self) -> Option<Binding> {
        Some(self.tile.subset_binding(GENERAL_TUNED))
    }
}

impl MatmulGeneral {
    /// The body for element type `T`.
    pub(crate) fn general<T: Element>(&self, k: &mut Kernel, args: GeneralHandles<T>) {
        let (batch, m_size, n_size, k_size, form, a_ptr, lda, a_step, a_count) = (
            args.0, args.1, args.2, args.3, args.4, args.5, args.6, args.7, args.8,
        );
        let (b_ptr, ldb, b_step, b_count) = (args.9, args.10, args.11, args.12);
        let (c_ptr, ldc, stride_c, alpha, beta) = (args.13, args.14, args.15, args.16, args.17);
        let form = Form::from_bits(form.as_const().unwrap_or(0) as i32);
        let t = MatmulPersistent {
            cluster_m: 1,
            ..self.tile.clone()
        };
        let (a_mn, b_mn) = RingOperands::<T>::orders(form.a_col_major, form.b_col_major);
        let view = |k: &mut Kernel, name: &str, ptr, count, mn: bool, rows, step, ld| {
            let (r, c) = if mn { (k_size, rows) } else { (rows, k_size) };
            k.name_next(name)
                .global_view_strided::<T>(ptr, (count, r, c), (step, ld, 1))
        };
        let ga = view(k, "ga", a_ptr, a_count, a_mn, m_size, a_step, lda);
        let gb = view(k, "gb", b_ptr, b_count, b_mn, n_size, b_step, ldb);
        let ops = RingOperands {
            ga,
            gb,
            a_mn,
            b_mn,
            batches: Some((a_count, b_count)),
            a_loaded: !form.a_tma,
            b_loaded: !form.b_tma,
        };
        let gc = k.name_next("gc").global_view_strided::<T>(
            c_ptr,
            (batch, m_size, n_size),
            (stride_c, ldc, 1),
        );
        let width = if t.group_rows() > 64 {
            STORE_CHUNK / 2
        } else {
            STORE_CHUNK
        };
        let tma = t.tma_store != 0 && form.c_tma;
        let stores = CStores::plan_batched(k, gc, width, (t.group_rows(), t.block_n, tma));
        let operands = Operands::Views {
            ops,
            batch: Some(batch),
            b_loader: None,
        };
        let dims = (m_size, n_size, k_size);
        if form.scaled {
            let shape = (t.group_rows(), t.block_n);
            let epilogue = ScaleAndStore::new(stores, gc, shape, (alpha, beta));
            t.tiles_on(k, dims, operands, &epilogue, None);
        } else {
            let defer = t.defer_stores != 0 && t.ping_pong == 0 && form.a_tma && form.b_tma;
            let epilogue = CastAndStore::new(stores, t.block_n, defer);
            t.tiles_on(k, dims, operands, &epilogue, None);
        }
    }
}
