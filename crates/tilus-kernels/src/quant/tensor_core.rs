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

use half::f16;
use std::marker::PhantomData;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// The kernel for weights of type `T`. Fields are compile-time hyperparameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QuantMatmulTc<T> {
    /// Rows of W (columns of C) per block: a multiple of 64 (wgmma's M).
    pub block_n: i32,
    /// Rows of A per block: a multiple of 8, at most 256 (wgmma's N).
    pub block_m: i32,
    /// Elements of K per step: 64 (128-byte rows of A), a divisor of the group.
    pub block_k: i32,
    /// Elements of a row of W that share a scale (0: the whole row).
    pub group: i32,
    _t: PhantomData<fn() -> T>,
}

impl<T> QuantMatmulTc<T> {
    /// The kernel for `group` (0: per channel): 64 rows of W and 128 of A per block, 64 of K
    /// per step.
    pub fn new(group: i32) -> QuantMatmulTc<T> {
        QuantMatmulTc {
            block_n: 64,
            block_m: 128,
            block_k: 64,
            group,
            _t: PhantomData,
        }
    }
}

impl<T> Script for QuantMatmulTc<T>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    // as QuantMatmul's: m, n runtime; k a compile-time constant
    type Args = (
        i32,
        i32,
        Const<i32>,
        Ptr<f16>,
        Ptr<u8>,
        Ptr<f16>,
        Ptr<f16>,
        PtrMut<f16>,
    );

    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "k", "a", "w", "scales", "zeros", "c"]
    }

    fn name(&self) -> String {
        format!("quant_matmul_tc_{}", <T as LowpElement>::DTYPE)
    }

    fn body(&self, k: &mut Kernel, (m, n, kk, a, w, s, z, c): Handles<Self::Args>) {
        let (bn, bm, bk) = (self.block_n, self.block_m, self.block_k);
        let unsigned = matches!(<T as LowpElement>::DTYPE, tilus::ir::DType::UInt(_));
        k.blocks([cdiv(n, bn), cdiv(m, bm)]);
        k.warps(4);
        let n0 = k.let_i32(bn * k.block_idx().x);
        let m0 = k.let_i32(bm * k.block_idx().y);
        let width = kk.as_const().unwrap_or(1).max(1);
        let groups = if self.group > 0 {
            (width + self.group as i64 - 1) / self.group as i64
        } else {
            1
        } as i32;
        let ga = k.global_view::<f16>(a, [m, kk]);
        let gw = k.global_view_packed::<T>(w, [n, kk]);
        let gs = k.global_view::<f16>(s, [n, Val::constant(groups)]);
        let gz = unsigned.then(|| k.global_view::<f16>(z, [n, Val::constant(groups)]));
        let gc = k.global_view::<f16>(c, [m, n]);
        let sa = k.shared_tensor::<f16>([bm, bk]);
        let acc = k.register_tensor::<f32>([bn, bm], 0.0);
        let bar = k.mbarrier().alloc([1]);
        let group = self.group;
        k.for_range(0, kk, bk, |k, k0| {
            // A's step on its way while the warp group dequantizes W's
            k.single_thread(|k| {
                k.mbarrier().arrive_and_expect_tx(bar[0], sa.nbytes());
                k.tma().global_to_shared(&ga, &sa, (m0, k0), bar[0]);
            });
            let g = if group > 0 {
                k.let_i32(k0 / group)
            } else {
                k.let_i32(0)
            };
            let codes = k.load_global(&gw, (n0, k0), [bn, bk]);
            let scale = k.load_global(&gs, (n0, g), [bn, 1]);
            let deq = if let Some(gz) = &gz {
                let zero = k.load_global(gz, (n0, g), [bn, 1]);
                k.compute(
                    ((codes.cast::<f32>() - zero.cast::<f32>()) * scale.cast::<f32>())
                        .cast::<f16>(),
                )
            } else {
                k.compute((codes.cast::<f32>() * scale.cast::<f32>()).cast::<f16>())
            };
            k.mbarrier().wait(bar[0], (k0 / bk) % 2);
            k.wgmma().fence();
            k.wgmma().mma(&deq, &sa.transpose(), &acc);
            k.wgmma().commit_group();
            k.wgmma().wait_group(0);
            // the next step's copy overwrites A's tile only once every thread is done with it
            k.sync();
        });
        let out = k.compute(acc.cast::<f16>());
        k.store_global(&gc, &out.transpose(), (m0, n0));
    }
}
