//! Warp-group products on operands in either order, as stored: A `[M, K]` (K-major) or
//! `[K, M]` (MN-major, through `.transpose()`), B `[N, K]` (K-major, through `.transpose()`)
//! or `[K, N]` (MN-major), from batched, strided views (one block per matrix of the batch,
//! TMA boxes that leave the batch dimension out).

use half::f16;
use tilus::prelude::*;

/// Rows of C (and of A).
pub const M: usize = 128;
/// Columns of C (and of B).
pub const N: usize = 128;
/// Depth of the product.
pub const K: usize = 128;
/// Matrices in the batch.
pub const BATCH: usize = 2;
/// Elements between rows of each stored operand: wider than any row (16-byte multiples).
pub const LD: usize = 136;
/// Elements between the matrices of a batch (M, N and K are all 128).
pub const BATCH_STRIDE: usize = 128 * LD;

/// `C[b] = A[b] · B[b]` for `b < BATCH` with wgmma, A and B stored in the orders the fields
/// say, C `[BATCH, M, N]` f32 contiguous. One block per matrix, one warp group, K steps of
/// 64.
#[derive(Clone, Debug, Hash)]
pub struct OperandOrders {
    /// A stored `[K, M]` (MN-major); else `[M, K]`.
    pub mn_a: bool,
    /// B stored `[K, N]` (MN-major); else `[N, K]`.
    pub mn_b: bool,
}

impl OperandOrders {
    /// The shape of a stored operand of logical rows `r` along M or N: `[K, r]` MN-major,
    /// `[r, K]` K-major.
    fn stored(mn: bool, r: usize) -> [usize; 2] {
        if mn {
            [K, r]
        } else {
            [r, K]
        }
    }

    /// Elements of a stored batched operand.
    pub fn len() -> usize {
        BATCH * BATCH_STRIDE
    }

    /// Element `(b, i, kk)` of the logical A `[M, K]` (or B as `[N, K]`: `i` along N) in a
    /// buffer stored in order `mn`.
    pub fn at(mn: bool, b: usize, i: usize, kk: usize) -> usize {
        let (r, c) = if mn { (kk, i) } else { (i, kk) };
        b * BATCH_STRIDE + r * LD + c
    }

    /// The f64 product of the logical operands, `[BATCH, M, N]`.
    pub fn reference(&self, a: &[f16], b: &[f16]) -> Vec<f64> {
        let mut c = vec![0.0; BATCH * M * N];
        for bt in 0..BATCH {
            for i in 0..M {
                for j in 0..N {
                    c[(bt * M + i) * N + j] = (0..K)
                        .map(|kk| {
                            a[Self::at(self.mn_a, bt, i, kk)].to_f64()
                                * b[Self::at(self.mn_b, bt, j, kk)].to_f64()
                        })
                        .sum();
                }
            }
        }
        c
    }
}

impl Script for OperandOrders {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);

    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        k.blocks([BATCH as i32]);
        k.warps(4);
        let batch = k.let_i32(k.block_idx().x);
        let view = |k: &mut Kernel, ptr, mn: bool, r: usize| {
            let [rows, cols] = Self::stored(mn, r);
            k.global_view_strided::<f16>(
                ptr,
                (BATCH as i32, rows as i32, cols as i32),
                (BATCH_STRIDE as i32, LD as i32, 1),
            )
        };
        let ga = view(k, a, self.mn_a, M);
        let gb = view(k, b, self.mn_b, N);
        let step = 64usize;
        let tile = |mn: bool, r: usize| if mn { [step, r] } else { [r, step] };
        let [ar, ac] = tile(self.mn_a, M);
        let [br, bc] = tile(self.mn_b, N);
        let sa = k.shared_tensor::<f16>([ar as i32, ac as i32]);
        let sb = k.shared_tensor::<f16>([br as i32, bc as i32]);
        let bar = k.mbarrier().alloc([1]);
        let acc = k.register_tensor::<f32>([M as i32, N as i32], 0.0);
        let phase = k.var_u32(0u32);
        k.for_range(0, K as i32, step as i32, |k, kk| {
            // the box's offsets: (batch, K, M/N) MN-major, (batch, M/N, K) K-major
            let at = |mn: bool| -> [Scalar; 3] {
                if mn {
                    [batch.into(), kk.into(), 0.into()]
                } else {
                    [batch.into(), 0.into(), kk.into()]
                }
            };
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                k.tma().global_to_shared(&ga, &sa, at(self.mn_a), bar[0]);
                k.tma().global_to_shared(&gb, &sb, at(self.mn_b), bar[0]);
            });
            k.mbarrier().wait(bar[0], phase);
            k.wgmma().fence();
            let a_op = if self.mn_a { sa.transpose() } else { sa };
            let b_op = if self.mn_b { sb } else { sb.transpose() };
            k.wgmma().mma(&a_op, &b_op, &acc);
            k.wgmma().commit_group();
            k.wgmma().wait_group(0);
            k.sync();
            k.assign(phase, phase ^ 1);
        });
        let gc = k.global_view(c, [BATCH as i32, M as i32, N as i32]);
        let out = k.unsqueeze(&acc, 0);
        k.store_global(&gc, &out, (batch, 0, 0));
    }
}
