//! Where the persistent main loop's ring takes its operands from ([`RingOperands`]): A's and
//! B's global views in either order, batched or not, copied by TMA or loaded by the
//! producer's threads (`load_into`) where TMA cannot read them.

use tilus::lang::Element;
use tilus::prelude::*;

/// Where a ring's operands come from: A's and B's global views, each K-major (A `[m, k]`, B
/// `[n, k]`, K contiguous) or MN-major (A `[k, m]`, B `[k, n]`: a column-major A, a
/// row-major B), the tensor cores reading either as stored; batched views have a leading
/// batch dimension.
///
/// ```
/// use tilus_kernels::gemm::ring_operands::RingOperands;
/// // the orders of `C = A · B` for BLAS's transposes: A row-major is K-major, B row-major
/// // ([k, n]) MN-major
/// assert_eq!(RingOperands::<half::f16>::orders(false, false), (false, true));
/// ```
#[derive(Clone, Copy)]
pub struct RingOperands<T: Element> {
    /// A's view: `[m, k]`, or `[k, m]` when `a_mn`; `[batches, ..]` when batched.
    pub ga: GlobalTensor<T>,
    /// B's view: `[n, k]`, or `[k, n]` when `b_mn`; `[batches, ..]` when batched.
    pub gb: GlobalTensor<T>,
    /// A is MN-major (stored `[k, m]`).
    pub a_mn: bool,
    /// B is MN-major (stored `[k, n]`).
    pub b_mn: bool,
    /// Batched views: per operand the matrices its view holds (the batch, or 1 for an
    /// operand every matrix of the batch shares); the batch coordinate of product `b` in
    /// each is `b % count`.
    pub batches: Option<(Val, Val)>,
    /// A is loaded by the producer's threads (ordinary loads into registers, stored into the
    /// stage), not copied by TMA: for views whose rows do not start at multiples of 16
    /// bytes, which TMA cannot read.
    pub a_loaded: bool,
    /// B is loaded by the producer's threads.
    pub b_loaded: bool,
}

impl<T: Element> RingOperands<T> {
    /// A `[m, k]` and B `[n, k]`, both K-major and contiguous (`C = A · Bᵀ`).
    pub fn k_major(
        k: &mut Kernel,
        (m_size, n_size, k_size): (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<T>, PtrVal<T>),
    ) -> RingOperands<T> {
        let ga = k.name_next("ga").global_view::<T>(a_ptr, [m_size, k_size]);
        let gb = k.name_next("gb").global_view::<T>(b_ptr, [n_size, k_size]);
        RingOperands {
            ga,
            gb,
            a_mn: false,
            b_mn: false,
            batches: None,
            a_loaded: false,
            b_loaded: false,
        }
    }

    /// The orders `(a_mn, b_mn)` of `C = A · B` with A and B row-major (`false`) or
    /// column-major (`true`): a row-major A is K-major, a row-major B (`[k, n]`) MN-major.
    pub fn orders(a_col_major: bool, b_col_major: bool) -> (bool, bool) {
        (a_col_major, !b_col_major)
    }

    /// The box offsets of an operand's element `(row, k)` (row along M or N) in its view.
    pub(crate) fn offsets(mn: bool, batch: Option<Val>, row: Val, k_at: Val) -> Vec<Scalar> {
        let mut at: Vec<Scalar> = batch.into_iter().map(Scalar::from).collect();
        if mn {
            at.extend([Scalar::from(k_at), Scalar::from(row)]);
        } else {
            at.extend([Scalar::from(row), Scalar::from(k_at)]);
        }
        at
    }

    /// The batch coordinates `(a, b)` of product `batch` (None for views without one).
    pub(crate) fn batch_of(
        &self,
        k: &mut Kernel,
        batch: Option<Val>,
    ) -> (Option<Val>, Option<Val>) {
        match (self.batches, batch) {
            (Some((ca, cb)), Some(b)) => (
                Some(k.name_next("batch_a").let_i32(b % ca)),
                Some(k.name_next("batch_b").let_i32(b % cb)),
            ),
            _ => (None, None),
        }
    }

    /// Whether the producer's threads load an operand (the whole producer warp group then
    /// fills the ring: [`crate::gemm::cooperative::Cooperative::fill_loaded`]).
    pub fn loaded(&self) -> bool {
        self.a_loaded || self.b_loaded
    }

    /// A tile of `rows` rows of A or B (along M or N) by `depth` of K, as its order stores
    /// it.
    pub(crate) fn tile_shape(mn: bool, stages: i32, rows: i32, depth: i32) -> [i32; 3] {
        let [r, c] = Self::stage_shape(mn, rows, depth);
        [stages, r, c]
    }

    /// One stage of [`RingOperands::tile_shape`].
    pub(crate) fn stage_shape(mn: bool, rows: i32, depth: i32) -> [i32; 2] {
        if mn {
            [depth, rows]
        } else {
            [rows, depth]
        }
    }
}

/// Chunks of [`load_into`] whose loads are in flight together (`LOADED_PER_THREAD / 2`
/// registers each).
const LOADS_IN_FLIGHT: usize = 6;

/// Elements one producer thread loads per chunk of [`load_into`]: 8 (16 bytes of f16), so a
/// chunk of the 128 threads is 1024 elements.
const LOADED_PER_THREAD: i32 = 8;

/// Loads the box of `view` (an operand in order `mn`, at batch coordinate `batch`) whose
/// first element is `(row, k)` (row along M or N) into `tile` (one stage of the operand, of
/// `[rows, cols]` as stored) through registers, in chunks of the tile's rows; run by a warp group. Elements
/// outside the view read 0.
#[track_caller]
pub(crate) fn load_into<T: Element>(
    k: &mut Kernel,
    (view, mn, batch): (&GlobalTensor<T>, bool, Option<Val>),
    (tile, [rows, cols]): (&SharedTensor<T>, [i32; 2]),
    (row, k_at): (Val, Val),
) {
    // rows per chunk: 1024 elements, and at least 8 (a swizzle's pattern: where rows() may
    // start)
    let chunk = (128 * LOADED_PER_THREAD / cols).max(8).min(rows);
    let chunks: Vec<i32> = (0..rows / chunk).map(|c| c * chunk).collect();
    // the loads of a group of chunks are all in flight before the first of them is stored:
    // each thread waits for memory once per group, not once per chunk
    for group in chunks.chunks(LOADS_IN_FLIGHT) {
        let parts: Vec<RegisterTensor<T>> = group
            .iter()
            .map(|&first| {
                // the chunk's first stored row: along K (MN-major) or along M/N (K-major)
                let (r, col) = if mn {
                    (Scalar::from(k_at) + first, Scalar::from(row))
                } else {
                    (Scalar::from(row) + first, Scalar::from(k_at))
                };
                let mut at: Vec<Scalar> = batch.into_iter().map(Scalar::from).collect();
                at.extend([r, col]);
                match batch {
                    Some(_) => {
                        let part = k
                            .name_next("loaded")
                            .load_global(view, at, [1, chunk, cols]);
                        k.reshape(&part, [chunk, cols])
                    }
                    None => k.name_next("loaded").load_global(view, at, [chunk, cols]),
                }
            })
            .collect();
        for (&first, part) in group.iter().zip(&parts) {
            k.store_shared(&tile.rows(first, chunk), part);
        }
    }
}
