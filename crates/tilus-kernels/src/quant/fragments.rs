//! `quant_matmul_fragments`: the quantized matmul for few rows of A (decoding) on the tensor
//! cores, from weights prepacked in fragment order ([`super::prepack`]). Per K step of 64,
//! each thread of the warp group loads its run of words (one plain vector load), unpacks the
//! codes, relabels them as its part of the `[64, 64]` WGMMA register operand (no data moves:
//! the host put them there), dequantizes them in registers (`(q - z) · s`, rounded to f16 as
//! every path) and multiplies: `Cᵀ = dequant(W) · Aᵀ`, A's `[block_m, 64]` tile (TMA) the
//! shared operand, WGMMA's N the rows of A (8 for one row: the tensor cores' spare rows cost
//! nothing where the time is the weights' bytes).
//!
//! The words of `stages` K steps (and A's tiles, and the steps' scales) are in flight ahead
//! of the step being multiplied, so that each thread keeps that many 16-byte loads
//! outstanding: the weights stream at the memory's rate while the registers hold only packed
//! words. Rows of A past M arrive as zeros (TMA), rows of W past N are the prepack's padding
//! (code 0, scale 0 past the view), and C is stored under its bounds: every M and N are
//! taken; K is a multiple of 8 (TMA reads A's rows).

use super::prepack::{fragment_layout, Prepacked, CODES, THREADS, TILE_K, TILE_N};
use half::f16;
use std::marker::PhantomData;
use tilus::layout::RegisterLayout;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// The arguments: `m`, `n` (runtime); `k` (compile-time); `a [m, k]` f16; `w` the prepacked
/// words; scales and zero points `[n, groups]` f16 (zero points read for unsigned types
/// only); `c [m, n]` f16.
pub type FragmentArgs = (
    i32,
    i32,
    Const<i32>,
    Ptr<f16>,
    Ptr<u32>,
    Ptr<f16>,
    Ptr<f16>,
    PtrMut<f16>,
);

/// The kernel for weights of type `T` (1, 2, 4 or 8 bits). Fields are compile-time
/// hyperparameters.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct QuantMatmulFragments<T> {
    /// Rows of A per block: WGMMA's N, a multiple of 8 up to 256.
    pub block_m: i32,
    /// K steps in flight ahead of the one multiplied (registers of words, stages of A).
    pub stages: i32,
    /// Elements of a row of W that share a scale (0: the whole row; otherwise 64 or more).
    pub group: i32,
    _t: PhantomData<fn() -> T>,
}

impl<T> QuantMatmulFragments<T> {
    /// The kernel for `group` (0: per channel) and `block_m` rows of A per block, four K
    /// steps in flight.
    pub fn new(group: i32, block_m: i32) -> QuantMatmulFragments<T> {
        QuantMatmulFragments {
            block_m,
            stages: 4,
            group,
            _t: PhantomData,
        }
    }

    /// The same kernel with `stages` K steps in flight.
    pub fn with_stages(mut self, stages: i32) -> QuantMatmulFragments<T> {
        self.stages = stages;
        self
    }
}

impl<T> Script for QuantMatmulFragments<T>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    type Args = FragmentArgs;

    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "k", "a", "w", "scales", "zeros", "c"]
    }

    fn name(&self) -> String {
        format!("quant_matmul_fragments_{}", <T as LowpElement>::DTYPE)
    }

    fn body(&self, k: &mut Kernel, (m, n, kk, a, w, s, z, c): Handles<Self::Args>) {
        let t = <T as LowpElement>::DTYPE;
        let run = Prepacked::words_per_thread(t) as i32;
        let width = kk.as_const().unwrap_or(1).max(1);
        let tiles_k = ((width + TILE_K as i64 - 1) / TILE_K as i64) as i32;
        // no more stages than steps: every copy issued is waited for
        let (bm, stages) = (self.block_m, self.stages.clamp(1, tiles_k.max(1)));
        // the runs of one tile row of W (an expression: the host checks the buffer by it)
        let row_runs = Scalar::from(Val::constant(tiles_k)) * THREADS as i32;
        let groups = if self.group > 0 {
            (width + self.group as i64 - 1) / self.group as i64
        } else {
            1
        } as i32;
        k.blocks([cdiv(n, TILE_N as i32), cdiv(m, bm)]);
        k.warps(4);
        let tn = k.let_i32(k.block_idx().x);
        let n0 = k.let_i32(tn * TILE_N as i32);
        let m0 = k.let_i32(bm * k.block_idx().y);
        // (an expression of the arguments: the host checks the buffer against it)
        let tiles_n = cdiv(n, TILE_N as i32);
        let ga = k.global_view::<f16>(a, [m, kk]);
        let gw = k.global_view::<u32>(w, [tiles_n * row_runs.clone(), Val::constant(run).into()]);
        let gs = k.global_view::<f16>(s, [n, Val::constant(groups)]);
        let unsigned = matches!(t, tilus::ir::DType::UInt(_));
        let gz = unsigned.then(|| k.global_view::<f16>(z, [n, Val::constant(groups)]));
        let gc = k.global_view::<f16>(c, [m, n]);
        let steps = tiles_k;
        let sa = k.shared_tensor::<f16>([stages, bm, TILE_K as i32]);
        let bars = k.mbarrier().alloc_counts(&vec![1; stages as usize]);
        let acc = k.register_tensor::<f32>([TILE_N as i32, bm], 0.0);
        let first_run = k.let_i32(tn * row_runs);
        let group = self.group;
        // A's tile of step `i` on its way into stage `j`
        let fetch_a = |k: &mut Kernel, i: Val, j: i32| {
            k.single_thread(|k| {
                let stage = sa.at(Val::constant(j));
                k.mbarrier()
                    .arrive_and_expect_tx(bars[j as usize], stage.nbytes());
                let k0 = k.let_i32(i * TILE_K as i32);
                k.tma()
                    .global_to_shared(&ga, &stage, (m0, k0), bars[j as usize]);
            });
        };
        // step `i`'s words, scales and zero points
        let fetch_w = |k: &mut Kernel, i: Val| {
            let row = k.let_i32(first_run + i * THREADS as i32);
            let words = k.load_global(&gw, (row, Val::constant(0)), [THREADS as i32, run]);
            // a run per thread, as the prepack wrote it
            let runs = RegisterLayout::spatial(&[THREADS as i64, 1])
                .compose(&RegisterLayout::local(&[1, run as i64]));
            k.annotate_layout(&words, runs);
            let g = if group > 0 {
                k.let_i32(i * TILE_K as i32 / group)
            } else {
                k.let_i32(0)
            };
            let scale = k.load_global(&gs, (n0, g), [TILE_N as i32, 1]);
            let zero = gz.map(|gz| k.load_global(&gz, (n0, g), [TILE_N as i32, 1]));
            (words, scale, zero)
        };
        // the registers that carry each stage's words, scales and zero points across steps
        let held: Vec<_> = (0..stages)
            .map(|j| {
                fetch_a(k, Val::constant(j), j);
                let (words, scale, zero) = fetch_w(k, Val::constant(j));
                let w = k.register_tensor::<u32>([THREADS as i32, run], None::<f64>);
                k.assign_tile(&w, words);
                let s = k.register_tensor::<f16>([TILE_N as i32, 1], None::<f64>);
                k.assign_tile(&s, scale);
                let z = zero.map(|zero| {
                    let z = k.register_tensor::<f16>([TILE_N as i32, 1], None::<f64>);
                    k.assign_tile(&z, zero);
                    z
                });
                (w, s, z)
            })
            .collect();
        // a thread's run of codes, and the same registers as its part of the fragment
        let plain = RegisterLayout::spatial(&[THREADS as i64, 1])
            .compose(&RegisterLayout::local(&[1, CODES as i64]));
        let fragment = fragment_layout();
        // each pass takes `stages` steps: all of them dequantized first (their registers then
        // take the steps a pass later), then their products issued back to back and waited
        // for once, then their stages of A refilled
        k.for_range(0, steps, stages, |k, i0| {
            let mut deqs = Vec::new();
            for (j, (words, scale, zero)) in held.iter().enumerate() {
                let j = j as i32;
                let i = k.let_i32(i0 + j);
                let codes = k.unpack::<T>(words);
                let codes = k.relabel(&codes, plain.clone(), fragment.clone());
                let deq = match zero {
                    Some(zero) => k.compute(
                        ((codes.cast::<f32>() - zero.cast::<f32>()) * scale.cast::<f32>())
                            .cast::<f16>(),
                    ),
                    None => k.compute((codes.cast::<f32>() * scale.cast::<f32>()).cast::<f16>()),
                };
                let next = k.let_i32(i + stages);
                k.if_(next.lt(steps), |k| {
                    let (w2, s2, z2) = fetch_w(k, next);
                    k.assign_tile(words, w2);
                    k.assign_tile(scale, s2);
                    if let (Some(z), Some(z2)) = (zero, z2) {
                        k.assign_tile(z, z2);
                    }
                });
                deqs.push((i, deq));
            }
            for (j, (i, deq)) in deqs.iter().enumerate() {
                let j = j as i32;
                k.if_(i.lt(steps), |k| {
                    k.mbarrier().wait(bars[j as usize], (i0 / stages) % 2);
                    k.wgmma().fence();
                    k.wgmma()
                        .mma(deq, &sa.at(Val::constant(j)).transpose(), &acc);
                    k.wgmma().commit_group();
                });
            }
            k.wgmma().wait_group(0);
            // the stages are free once their products are complete
            for (j, (i, _)) in deqs.iter().enumerate() {
                let next = k.let_i32(*i + stages);
                k.if_(next.lt(steps), |k| fetch_a(k, next, j as i32));
            }
        });
        let out = k.compute(acc.cast::<f16>());
        k.store_global(&gc, &out.transpose(), (m0, n0));
    }
}

// by hand: the type marker is named in the kernel's name, not among its hyperparameters
impl<T> std::fmt::Debug for QuantMatmulFragments<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuantMatmulFragments")
            .field("block_m", &self.block_m)
            .field("stages", &self.stages)
            .field("group", &self.group)
            .finish()
    }
}
