//! `quant_matmul`: `C [M, N] = A [M, K] · dequant(W)ᵀ` with `A` f16 and `W [N, K]` in a
//! low-precision type, packed along K, its scales (and zero points) per group along K or per
//! row ([`super::Scheme`]). This is the path for few rows of A (decoding: M of 1 to 16), where
//! the time is the weights' bytes: each block reads `block_n` rows of W in 16-byte vectors of
//! packed codes, dequantizes them in registers (`(q - z) · s` in f32, rounded to f16 as the
//! tensor-core path and cuBLAS on the dequantized weights see them) and multiplies them with
//! the `block_m` rows of A it shares them with, accumulating each row's products
//! elementwise (`mul_add`) over the K steps and summing them along K once at the end. Each
//! step loads `steps` tiles of W along K before it converts the first: the time is the
//! bytes in flight.
//!
//! The rows of A past M, the rows of W past N and the columns past K read zeros (the views
//! end there), so every shape is taken; the groups' scales are loaded once per K step, which
//! lies within one group (`block_k` divides the group).

use super::views::{QuantArgs, QuantViews, ARG_NAMES};
use half::f16;
use std::marker::PhantomData;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// The kernel for weights of type `T`. Fields are compile-time hyperparameters.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct QuantMatmul<T> {
    /// Rows of W (columns of C) per block.
    pub block_n: i32,
    /// Elements of K per step (a divisor of the group).
    pub block_k: i32,
    /// Rows of A per block (each block reads its rows of W once for all of them).
    pub block_m: i32,
    /// Tiles of `block_k` per step: each step loads all of them before it converts the
    /// first, so that more bytes are in flight per thread (the steps past K read zeros).
    pub steps: i32,
    /// Warps per block.
    pub warps: u32,
    /// Elements of a row of W that share a scale (0: the whole row).
    pub group: i32,
    _t: PhantomData<fn() -> T>,
}

impl<T> QuantMatmul<T> {
    /// The kernel for `group` (0: per channel) with its default tiles: 16 rows of W, tiles of
    /// 256 of K (or the group, if smaller), 256 of K per step, 4 rows of A, 4 warps.
    pub fn new(group: i32) -> QuantMatmul<T> {
        let block_k = if group > 0 { group.min(256) } else { 256 };
        QuantMatmul {
            block_n: 16,
            block_k,
            steps: 256 / block_k,
            block_m: 4,
            warps: 4,
            group,
            _t: PhantomData,
        }
    }

    /// The same kernel with `block_m` rows of A per block.
    pub fn with_block_m(mut self, block_m: i32) -> QuantMatmul<T> {
        self.block_m = block_m;
        self
    }

    /// The same kernel with `block_n` rows of W per block, `steps` tiles of K per step and
    /// `warps` warps.
    pub fn with_tiles(mut self, block_n: i32, steps: i32, warps: u32) -> QuantMatmul<T> {
        (self.block_n, self.steps, self.warps) = (block_n, steps, warps);
        self
    }
}

impl<T> Script for QuantMatmul<T>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    type Args = QuantArgs;

    fn arg_names() -> &'static [&'static str] {
        ARG_NAMES
    }

    fn name(&self) -> String {
        format!("quant_matmul_{}", <T as LowpElement>::DTYPE)
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (bn, bk, bm, steps) = (self.block_n, self.block_k, self.block_m, self.steps);
        let (m, n, kk) = (args.0, args.1, args.2);
        k.blocks([cdiv(n, bn), cdiv(m, bm)]);
        k.warps(self.warps);
        let n0 = k.let_i32(bn * k.block_idx().x);
        let m0 = k.let_i32(bm * k.block_idx().y);
        let v = QuantViews::<T>::new(k, args, self.group);
        // per row of A, the products summed elementwise over the K steps; reduced along K once,
        // at the end
        let accs: Vec<RegisterTensor<f32>> = (0..bm)
            .map(|_| k.register_tensor::<f32>([bn, bk], 0.0))
            .collect();
        k.for_range(0, kk, bk * steps, |k, k0| {
            // every load of W's step first, then the arithmetic (the rows of A, read by every
            // block, come from the caches)
            let tiles: Vec<_> = (0..steps)
                .map(|j| {
                    let kj = k.let_i32(k0 + j * bk);
                    (kj, v.load(k, (n0, kj), [bn, bk]))
                })
                .collect();
            for (kj, tile) in &tiles {
                let deq = tile.dequantized(k);
                let deq = k.compute(deq.cast::<f32>());
                for (i, acc) in accs.iter().enumerate() {
                    let row = k.load_global(&v.a, (m0 + i as i32, *kj), [1, bk]);
                    k.assign_tile(acc, row.cast::<f32>().mul_add(deq, acc));
                }
            }
        });
        for (i, acc) in accs.iter().enumerate() {
            let sum = k.sum(acc, 1, true);
            let out = k.compute(sum.cast::<f16>());
            k.store_global(&v.c, &out.transpose(), (m0 + i as i32, n0));
        }
    }
}

// by hand: the type marker is named in the kernel's name, not among its hyperparameters
impl<T> std::fmt::Debug for QuantMatmul<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuantMatmul")
            .field("block_n", &self.block_n)
            .field("block_k", &self.block_k)
            .field("steps", &self.steps)
            .field("block_m", &self.block_m)
            .field("warps", &self.warps)
            .field("group", &self.group)
            .finish()
    }
}
