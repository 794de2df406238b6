//! `flash_forward`: `O = softmax(scale · Q·Kᵀ) · V` per head, with the log-sum-exp of each
//! row, on the tensor cores, one warp group per block of 64 queries.
//!
//! Each block takes 64 queries of one head of one sequence. Q's tile arrives once by TMA; the
//! keys and values stream through a ring of `stages` stages (TMA, one barrier per stage, the
//! phase from the step). Per block of keys: `S = Q·Kᵀ` by WGMMA from shared memory into
//! registers (overwriting: no zeroing), the online softmax in base 2 with the scale folded in
//! (the running maximum `m`, the running sum `l`, the output rescaled when `m` grows), `P`
//! rounded to the element type and kept in registers as the A operand of `O += P·V` (the
//! accumulator's fragment and the operand's coincide per thread: no data moves), V used as
//! stored (an MN-major B operand).
//!
//! Sequences are packed: the rows of sequence `b` are `cu[b] .. cu[b + 1]` of Q (and of K and
//! V by their own offsets), read by every thread with `load_global_scalar`; a fixed-length
//! batch is the case `cu[b] = b · s`. Blocks past their sequence's queries do nothing; keys
//! past its keys, and for causal attention keys past the diagonal (aligned to the bottom
//! right: query `i` sees keys up to `i + s_kv - s_q`), are masked, and only on the blocks of
//! keys that hold such keys: the others run without a mask. A row that sees no key gets
//! zeros and a log-sum-exp of −∞. GQA: query head `h` reads key and value head
//! `h / (hq / hkv)`.

use super::decode::CacheElement;
use super::products::{accumulate, scores};
use super::softmax::{query_block, Mask, OnlineSoftmax, Place, Views};
use half::{bf16, f16};
use std::marker::PhantomData;
use tilus::prelude::*;

/// Queries per block: WGMMA's M, one warp group.
pub const BLOCK_Q: i32 = 64;

/// The element types the kernel takes (f16 and bf16); their names and exact values are
/// [`CacheElement`]'s (a cache may hold them too).
pub trait AttentionElement: CacheElement {}

impl AttentionElement for f16 {}

impl AttentionElement for bf16 {}

/// The arguments: `batch`, `hq`, `hkv`, the longest sequence of queries, the rows of Q (all
/// sequences') and of K and V, `scale_log2` (the softmax scale times `log2(e)`), `q
/// [rows_q, hq, d]`, `k` and `v` `[rows_kv, hkv, d]`, the cumulative offsets `cu_q` and
/// `cu_kv` (`batch + 1` each), `o [rows_q, hq, d]`, `lse [hq, rows_q]` (natural log).
pub type FlashArgs<T> = (
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    f32,
    Ptr<T>,
    Ptr<T>,
    Ptr<T>,
    Ptr<i32>,
    Ptr<i32>,
    PtrMut<T>,
    PtrMut<f32>,
);

/// What the host API asks of either attention kernel: the head dimension it was built for.
pub trait FlashKernel<T>: Script<Args = FlashArgs<T>> {
    /// The head dimension: 64, 128 or 256.
    fn head_dim(&self) -> i32;
}

impl<T: AttentionElement> FlashKernel<T> for FlashForward<T> {
    fn head_dim(&self) -> i32 {
        self.head_dim
    }
}

/// The kernel for elements of type `T`. Fields are compile-time hyperparameters.
pub struct FlashForward<T> {
    /// The head dimension: 64, 128 or 256.
    pub head_dim: i32,
    /// Keys per step (WGMMA's N of `S = Q·Kᵀ`, its K of `O += P·V`): 64 or 128.
    pub block_kv: i32,
    /// Stages of the key and value ring.
    pub stages: i32,
    /// Causal attention (queries see the keys up to their diagonal).
    pub causal: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> FlashForward<T> {
    /// The kernel for `head_dim`, causal or not: 128 keys per step below head dimension 256
    /// (64 there: the output's accumulator takes the registers), two stages.
    pub fn new(head_dim: i32, causal: bool) -> FlashForward<T> {
        FlashForward {
            head_dim,
            block_kv: if head_dim >= 256 { 64 } else { 128 },
            stages: 2,
            causal,
            _t: PhantomData,
        }
    }

    /// The same kernel with `block_kv` keys per step and `stages` stages.
    pub fn with_tiles(mut self, block_kv: i32, stages: i32) -> FlashForward<T> {
        (self.block_kv, self.stages) = (block_kv, stages);
        self
    }
}

impl<T: AttentionElement> Script for FlashForward<T> {
    type Args = FlashArgs<T>;

    fn arg_names() -> &'static [&'static str] {
        &[
            "batch",
            "hq",
            "hkv",
            "max_q",
            "rows_q",
            "rows_kv",
            "scale_log2",
            "q",
            "k",
            "v",
            "cu_q",
            "cu_kv",
            "o",
            "lse",
        ]
    }

    fn name(&self) -> String {
        format!("flash_forward_{}", T::NAME)
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (batch, hq, hkv, max_q, scale_log2) = (args.0, args.1, args.2, args.3, args.6);
        let (d, bq, bkv, stages) = (self.head_dim, BLOCK_Q, self.block_kv, self.stages);
        k.blocks([cdiv(max_q, bq), hq.into(), batch.into()]);
        k.warps(4);
        let views = Views::new(k, &args, d);
        // Q and K in chunks of 64 along the head dimension: a K-major WGMMA operand's rows
        // are at most 128 bytes (the swizzle's span), so S = Q·Kᵀ is a sum over the chunks
        let chunks = d / 64;
        let sq = k.shared_tensor::<T>([chunks, bq, 64]);
        let sk = k.shared_tensor::<T>([stages * chunks, bkv, 64]);
        let sv = k.shared_tensor::<T>([stages, bkv, d]);
        let qbar = k.mbarrier().alloc([1]);
        let full = k.mbarrier().alloc_counts(&vec![1; stages as usize]);

        let b = k.let_i32(k.block_idx().z);
        let h = k.let_i32(k.block_idx().y);
        let qb = query_block(k, max_q, bq, self.causal);
        let q0 = k.let_i32(qb * bq);
        let place = Place::read(k, b, &views.cu_q, &views.cu_kv);
        let hk = k.let_i32(h / (hq / hkv));
        k.if_(q0.lt(place.seq_q), |k| {
            let (steps, free_steps) = place.key_blocks(k, q0, bq, bkv, self.causal);
            // step `j`'s keys and values into `stage`
            let fetch = |k: &mut Kernel, stage: Val, j: Scalar| {
                let (vs, bar) = (sv.at(stage), full.at(stage));
                k.mbarrier()
                    .arrive_and_expect_tx(bar, sk.nbytes() / stages + vs.nbytes());
                let row = place.kv_start + j * bkv;
                for c in 0..chunks {
                    let ks = sk.at(k.let_i32(stage * chunks + c));
                    let col = hk * d + c * 64;
                    k.tma()
                        .global_to_shared(&views.k, &ks, (row.clone(), col), bar);
                }
                k.tma().global_to_shared(&views.v, &vs, (row, hk * d), bar);
            };
            k.single_thread(|k| {
                k.mbarrier().arrive_and_expect_tx(qbar[0], sq.nbytes());
                for c in 0..chunks {
                    let col = h * d + c * 64;
                    let qs = sq.at(Val::constant(c));
                    k.tma()
                        .global_to_shared(&views.q, &qs, (place.q_start + q0, col), qbar[0]);
                }
                for s in 0..stages {
                    k.if_(Scalar::from(s).lt(steps), |k| {
                        fetch(k, Val::constant(s), Scalar::from(s))
                    });
                }
            });
            k.mbarrier().wait(qbar[0], 0u32);

            let softmax = OnlineSoftmax::new(k, bq, bkv, scale_log2, self.causal);
            let acc = k.register_tensor::<f32>([bq, d], 0.0);
            let s = k.register_tensor::<f32>([bq, bkv], None::<f64>);
            let step = |k: &mut Kernel, j: Val, masked: bool| {
                let stage = k.let_i32(j % stages);
                k.mbarrier().wait(full.at(stage), j / stages % 2);
                scores(k, (&sq, &sk), (stage, chunks), &s);
                let mask = masked.then_some(Mask { j, r0: q0 });
                let (p, alpha) = softmax.update(k, &s, &place, mask);
                accumulate(k, (&p, &alpha), &sv.at(stage), &acc);
                // every warp is done with the stage: refill it with the keys `stages` ahead
                k.sync();
                k.single_thread(|k| {
                    let next = j + stages;
                    k.if_(next.clone().lt(steps), |k| fetch(k, stage, next));
                });
            };
            k.for_range(0, free_steps, 1, |k, j| step(k, j, false));
            k.for_range(free_steps, steps, 1, |k, j| step(k, j, true));
            softmax.store(k, &acc, (&views.o, &views.lse), &place, q0, (h, h * d));
        });
    }
}

// by hand: the element type is named in the kernel's name, not among its hyperparameters
// (and the derives would ask it for `Hash`)
impl<T> Clone for FlashForward<T> {
    fn clone(&self) -> Self {
        FlashForward {
            _t: PhantomData,
            ..*self
        }
    }
}

impl<T> PartialEq for FlashForward<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.head_dim, self.block_kv, self.stages, self.causal)
            == (o.head_dim, o.block_kv, o.stages, o.causal)
    }
}

impl<T> Eq for FlashForward<T> {}

impl<T> std::hash::Hash for FlashForward<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.head_dim, self.block_kv, self.stages, self.causal).hash(h);
    }
}

impl<T> std::fmt::Debug for FlashForward<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlashForward")
            .field("head_dim", &self.head_dim)
            .field("block_kv", &self.block_kv)
            .field("stages", &self.stages)
            .field("causal", &self.causal)
            .finish()
    }
}
