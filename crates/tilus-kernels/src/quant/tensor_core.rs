//! `quant_matmul_tc`: the quantized matmul on the tensor cores, for many rows of A (prefill,
//! batches): `Cᵀ = dequant(W) · Aᵀ` per tile, so that the dequantized weights are wgmma's
//! register operand (`[block_n, block_k]` f16, rows of W as the instruction's M) and A, as it
//! is stored (`[block_m, block_k]`, K-major), its shared operand B, brought by TMA. The warp
//! group dequantizes a K step of W while TMA brings the same step of A; the accumulator
//! `[block_n, block_m]` f32 is stored transposed into C.
//!
//! Rows of A past M and columns past K arrive as zeros (TMA fills them), rows of W past N and
//! columns past K load zeros, so every M and N are taken; K is a compile-time constant whose
//! rows of A are whole 16-byte units (a multiple of 8) and whose packed rows of W are whole
//! bytes. This first form keeps one stage and reads W with the loads' own layout (converted to
//! the fragment's): correct for every type, not yet tuned.

use super::views::{QuantArgs, QuantViews, ARG_NAMES};
use half::f16;
use std::marker::PhantomData;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// The kernel for weights of type `T`. Fields are compile-time hyperparameters.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct QuantMatmulTc<T> {
    /// Rows of W (columns of C) per block: a multiple of 64 (wgmma's M).
    pub block_n: i32,
    /// Rows of A per block: a multiple of 8, at most 256 (wgmma's N).
    pub block_m: i32,
    /// Elements of K per step: 64 (128-byte rows of A), or 32 for groups of 32 (a step lies
    /// in one group).
    pub block_k: i32,
    /// Elements of a row of W that share a scale (0: the whole row).
    pub group: i32,
    _t: PhantomData<fn() -> T>,
}

impl<T> QuantMatmulTc<T> {
    /// The kernel for `group` (0: per channel): 64 rows of W and 128 of A per block, 64 of K
    /// per step (32 for groups of 32: a step lies in one group).
    pub fn new(group: i32) -> QuantMatmulTc<T> {
        QuantMatmulTc {
            block_n: 64,
            block_m: 128,
            block_k: if group > 0 { group.min(64) } else { 64 },
            group,
            _t: PhantomData,
        }
    }
}

impl<T> QuantMatmulTc<T> {
    /// The same kernel with `block_m` rows of A per block (a multiple of 8, at most 256).
    pub fn with_block_m(mut self, block_m: i32) -> QuantMatmulTc<T> {
        self.block_m = block_m;
        self
    }
}

impl<T> Script for QuantMatmulTc<T>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    type Args = QuantArgs;

    fn arg_names() -> &'static [&'static str] {
        ARG_NAMES
    }

    fn name(&self) -> String {
        format!("quant_matmul_tc_{}", <T as LowpElement>::DTYPE)
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (bn, bm, bk) = (self.block_n, self.block_m, self.block_k);
        let (m, n, kk) = (args.0, args.1, args.2);
        k.blocks([cdiv(n, bn), cdiv(m, bm)]);
        k.warps(4);
        let n0 = k.let_i32(bn * k.block_idx().x);
        let m0 = k.let_i32(bm * k.block_idx().y);
        let v = QuantViews::<T>::new(k, args, self.group);
        let sa = k.shared_tensor::<f16>([bm, bk]);
        let acc = k.register_tensor::<f32>([bn, bm], 0.0);
        let bar = k.mbarrier().alloc([1]);
        k.for_range(0, kk, bk, |k, k0| {
            // A's step on its way while the warp group dequantizes W's
            k.single_thread(|k| {
                k.mbarrier().arrive_and_expect_tx(bar[0], sa.nbytes());
                k.tma().global_to_shared(&v.a, &sa, (m0, k0), bar[0]);
            });
            let deq = v.dequantized(k, (n0, k0), [bn, bk]);
            k.mbarrier().wait(bar[0], (k0 / bk) % 2);
            k.wgmma().fence();
            k.wgmma().mma(&deq, &sa.transpose(), &acc);
            k.wgmma().commit_group();
            k.wgmma().wait_group(0);
            // the next step's copy overwrites A's tile only once every thread is done with it
            k.sync();
        });
        let out = k.compute(acc.cast::<f16>());
        k.store_global(&v.c, &out.transpose(), (m0, n0));
    }
}

// by hand: the type marker is named in the kernel's name, not among its hyperparameters
impl<T> std::fmt::Debug for QuantMatmulTc<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuantMatmulTc")
            .field("block_n", &self.block_n)
            .field("block_m", &self.block_m)
            .field("block_k", &self.block_k)
            .field("group", &self.group)
            .finish()
    }
}
