//! `flash_forward_ws`: flash attention forward with warp specialization, FlashAttention-3's
//! structure. Each block takes 128 queries of one head: a producer warp group (few registers,
//! `setmaxnreg`) copies Q once and streams K and V through a ring ([`Pipeline`]: a full and
//! an empty barrier per stage), and two consumer warp groups (the registers the producer gave
//! up) each own 64 of the queries.
//!
//! A consumer's step `t` issues two products together, `S_t = Q·K_tᵀ` and `O += P_{t-1}·V_{t-1}`,
//! then runs the softmax of `S_t` while the second is still on the tensor cores (`overlap`:
//! it waits for the first product only), then waits for the second, frees its stage,
//! rescales `O` and keeps `P_t` for the next step. With `ping_pong`, the two consumers issue
//! their products in turns ([`PingPongOrder`]: a warp group issues step `t`'s products once
//! the other has issued its own), so that one's softmax runs while the other's products do.
//!
//! The work is numbered in items (a block of 128 queries of one head of one sequence), the
//! blocks of queries fastest (the blocks running at once share keys and values in L2) and,
//! for causal attention, each head's in reverse: the longest first. A
//! block takes one item, or with `persistent` (one block per multiprocessor) every
//! `blocks`-th item, its rings and Q's barrier going on from one item to the next, so that
//! the next item's copies are in flight while the last one's output is stored.
//!
//! Both consumers walk the same blocks of keys (the block's: up to its last query's diagonal
//! when causal; the mask takes the rows a block does not reach), so that their turns and the
//! ring's releases line up. Everything else (packed sequences, GQA, masks only on the blocks
//! that need them, the log-sum-exp) is as in [`super::FlashForward`].

use super::forward::{AttentionElement, FlashArgs, BLOCK_Q};
use super::softmax::{Mask, OnlineSoftmax, Place, Views};
use crate::gemm::pingpong::PingPongOrder;
use std::marker::PhantomData;
use tilus::lang::WgmmaTarget;
use tilus::prelude::*;

/// Registers per thread of the producer warp group (`setmaxnreg.dec`).
pub const PRODUCER_REGISTERS: u32 = 40;
/// Registers per thread of the consumer warp groups (`setmaxnreg.inc`).
pub const CONSUMER_REGISTERS: u32 = 232;

/// The kernel for elements of type `T`. Fields are compile-time hyperparameters.
pub struct FlashForwardWs<T> {
    /// The head dimension: 64, 128 or 256.
    pub head_dim: i32,
    /// Keys per step: 64 or 128.
    pub block_kv: i32,
    /// Stages of the key and value ring.
    pub stages: i32,
    /// Causal attention.
    pub causal: bool,
    /// The softmax of a step runs while the step's `P·V` product of the step before is on
    /// the tensor cores (otherwise each step waits for both products first).
    pub overlap: bool,
    /// The consumers issue their products in turns.
    pub ping_pong: bool,
    /// A persistent grid (one block per multiprocessor, each taking items in turn) instead
    /// of one block per item.
    pub persistent: bool,
    /// One copy of the consumers' code for both warp groups (`thread_groups`, the group's
    /// index known at run time) instead of one each: half the instructions, and half
    /// NVRTC's time.
    pub one_copy: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> FlashForwardWs<T> {
    /// The kernel for `head_dim`, causal or not: 128 keys per step below head dimension 256
    /// (64 there), two stages, the softmax under the products, no ping-pong (measured 1–3%
    /// slower with it, docs/perf.md), one copy of the consumers' code below head dimension
    /// 256 (there the group's runtime offsets of Q's descriptors and rows cost the consumers
    /// 8 to 12 bytes of spills at 168 registers).
    pub fn new(head_dim: i32, causal: bool) -> FlashForwardWs<T> {
        FlashForwardWs {
            head_dim,
            block_kv: if head_dim >= 256 { 64 } else { 128 },
            stages: 2,
            causal,
            overlap: true,
            ping_pong: false,
            persistent: false,
            one_copy: head_dim < 256,
            _t: PhantomData,
        }
    }

    /// The same kernel with `block_kv` keys per step and `stages` stages.
    pub fn with_tiles(mut self, block_kv: i32, stages: i32) -> FlashForwardWs<T> {
        (self.block_kv, self.stages) = (block_kv, stages);
        self
    }

    /// The same kernel with the softmax overlapped or not, and ping-pong or not.
    pub fn with_schedule(mut self, overlap: bool, ping_pong: bool) -> FlashForwardWs<T> {
        (self.overlap, self.ping_pong) = (overlap, ping_pong);
        self
    }

    /// The same kernel on a persistent grid, or not.
    pub fn with_persistent(mut self, persistent: bool) -> FlashForwardWs<T> {
        self.persistent = persistent;
        self
    }

    /// The same kernel with one copy of the consumers' code, or one per warp group.
    pub fn with_one_copy(mut self, one_copy: bool) -> FlashForwardWs<T> {
        self.one_copy = one_copy;
        self
    }

    fn key(&self) -> (i32, i32, i32, [bool; 5]) {
        let s = self;
        let flags = [s.causal, s.overlap, s.ping_pong, s.persistent, s.one_copy];
        (s.head_dim, s.block_kv, s.stages, flags)
    }
}

impl<T: AttentionElement> Script for FlashForwardWs<T> {
    type Args = FlashArgs<T>;

    fn arg_names() -> &'static [&'static str] {
        <super::FlashForward<T> as Script>::arg_names()
    }

    fn name(&self) -> String {
        format!("flash_forward_ws_{}", T::NAME)
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (batch, hq, hkv, max_q, scale_log2) = (args.0, args.1, args.2, args.3, args.6);
        let (d, bkv, stages, causal) = (self.head_dim, self.block_kv, self.stages, self.causal);
        let (rows, bq) = (BLOCK_Q, 2 * BLOCK_Q);
        // the work: a block of 128 queries of one head of one sequence per item, the blocks
        // of queries fastest (see `Item`)
        let items = cdiv(max_q, bq) * hq * batch;
        // a persistent grid's loop: the items' end and the blocks launched
        let round = if self.persistent {
            let blocks = k.persistent_blocks(items.clone());
            Some((k.let_i32(items), blocks))
        } else {
            k.blocks([items]);
            None
        };
        k.warps(12);
        let first = k.let_i32(k.block_idx().x);
        let views = Views::new(k, &args, d);
        // Q and K in chunks of 64 along the head dimension (K-major operand rows of at most
        // 128 bytes); Q's chunks of consumer `g` at `g · chunks ..`
        let chunks = d / 64;
        let sq = k.shared_tensor::<T>([2 * chunks, rows, 64]);
        let sk = k.shared_tensor::<T>([stages * chunks, bkv, 64]);
        let sv = k.shared_tensor::<T>([stages, bkv, d]);
        // Q once per item (freed by both consumers after their last scores), keys and values
        // in rings of their own, so that a stage of keys is freed as soon as its scores are
        // computed; one arrival per consumer warp group frees a stage
        let pipe_q = Pipeline::new(k, 1, 2);
        let pipe_k = Pipeline::new(k, stages as u32, 2);
        let pipe_v = Pipeline::new(k, stages as u32, 2);
        let order = self.ping_pong.then(|| PingPongOrder::new(k));
        let item_of = |k: &mut Kernel, item: Val| {
            Item::decode(
                k,
                item,
                (max_q, hq, hkv),
                bq,
                causal,
                (&views.cu_q, &views.cu_kv),
            )
        };

        // the producer: per item with work, Q once, then each step's keys and values into
        // the rings (their steps counted over the block's items)
        k.thread_group(256, 128, |k| {
            k.set_max_registers(PRODUCER_REGISTERS);
            k.single_thread(|k| {
                let done = k.var_i32(0);
                let n = k.var_i32(0);
                each_item(k, first, round, |k, item| {
                    let it = item_of(k, item);
                    let (steps, _) = it.place.key_blocks(k, it.q0, bq, bkv, causal);
                    k.if_(it.q0.lt(it.place.seq_q).and(steps.gt(0)), |k| {
                        let slot = pipe_q.producer_acquire(k, n, sq.nbytes());
                        for g in 0..2 {
                            for c in 0..chunks {
                                let qs = sq.at(Val::constant(g * chunks + c));
                                let at = (it.place.q_start + it.q0 + g * rows, it.h * d + c * 64);
                                k.tma().global_to_shared(&views.q, &qs, at, slot.barrier());
                            }
                        }
                        k.for_range(0, steps, 1, |k, j| {
                            let row = k.let_i32(it.place.kv_start + j * bkv);
                            let step = k.let_i32(done + j);
                            let slot = pipe_k.producer_acquire(k, step, sk.nbytes() / stages);
                            for c in 0..chunks {
                                let ks = sk.at(k.let_i32(slot.stage() * chunks + c));
                                let col = it.hk * d + c * 64;
                                k.tma()
                                    .global_to_shared(&views.k, &ks, (row, col), slot.barrier());
                            }
                            let slot = pipe_v.producer_acquire(k, step, sv.nbytes() / stages);
                            let vs = sv.at(slot.stage());
                            k.tma().global_to_shared(
                                &views.v,
                                &vs,
                                (row, it.hk * d),
                                slot.barrier(),
                            );
                        });
                        k.assign(done, done + steps);
                        k.assign(n, n + 1);
                    });
                });
            });
        });

        // the consumers: warp group `g` owns queries `q0 + 64 g ..` of each item (with
        // `one_copy`, one copy of the code for both, `g` known at run time)
        let consumer = |k: &mut Kernel, g: Val| {
            k.set_max_registers(CONSUMER_REGISTERS);
            let softmax = OnlineSoftmax::new(k, rows, bkv, scale_log2, causal);
            let acc = k.register_tensor::<f32>([rows, d], 0.0);
            let s = k.register_tensor::<f32>([rows, bkv], None::<f64>);
            let p = k.register_tensor::<T>([rows, bkv], None::<f64>);
            // ring steps, items with work and turns taken in the block's earlier items
            let done = k.var_i32(0);
            let n = k.var_i32(0);
            let turns = k.var_i32(0);
            // S = Q·K_tᵀ from stage `stage`, over the head dimension's chunks
            let scores = |k: &mut Kernel, stage: Val| {
                for c in 0..chunks {
                    let target = if c == 0 {
                        WgmmaTarget::all().overwriting()
                    } else {
                        WgmmaTarget::all()
                    };
                    let qs = sq.at(k.let_i32(g * chunks + c));
                    let ks = sk.at(k.let_i32(stage * chunks + c));
                    k.wgmma().mma_to(&qs, &ks.transpose(), &s, target);
                }
                k.wgmma().commit_group();
            };
            // O += P·V from the stage of step `t`
            let values = |k: &mut Kernel, stage: Val| {
                k.wgmma().mma(&p, &sv.at(stage), &acc);
                k.wgmma().commit_group();
            };
            let wait_turn = |k: &mut Kernel, t: Scalar| {
                if let Some(order) = &order {
                    let index = k.let_i32(turns + t);
                    order.wait_turn_of(k, g, index);
                }
            };
            let pass_turn = |k: &mut Kernel| {
                if let Some(order) = &order {
                    order.pass_turn_of(k, g);
                }
            };
            let release = |k: &mut Kernel, pipe: &Pipeline, step: Scalar| {
                k.single_thread(|k| pipe.consumer_release_step(k, step));
            };
            each_item(k, first, round, |k, item| {
                let it = item_of(k, item);
                let (steps, free) = it.place.key_blocks(k, it.q0, bq, bkv, causal);
                let r0 = k.let_i32(it.q0 + g * rows);
                k.if_(it.q0.lt(it.place.seq_q), |k| {
                    k.assign_tile(&softmax.m, f32::NEG_INFINITY);
                    k.assign_tile(&softmax.l, 0.0f32);
                    k.assign_tile(&acc, 0.0f32);
                    k.if_(steps.gt(0), |k| {
                        let q_slot = pipe_q.consumer_acquire(k, n);
                        drop(q_slot); // freed by step, after the item's last scores
                        let last = k.let_i32(steps - 1);
                        let free_q = |k: &mut Kernel, t: Scalar| {
                            k.if_(t.eq_(last), |k| release(k, &pipe_q, n.into()));
                        };
                        // step 0: its scores only, always through the mask (which keeps
                        // every key of a block that needs none): one copy of the softmax
                        // fewer in the kernel's code, for a mask computed once an item
                        let slot = pipe_k.consumer_acquire(k, done);
                        wait_turn(k, Scalar::from(0));
                        k.wgmma().fence();
                        scores(k, slot.stage());
                        pass_turn(k);
                        k.wgmma().wait_group(0);
                        drop(slot);
                        release(k, &pipe_k, done.into());
                        free_q(k, Scalar::from(0));
                        let mask = Mask {
                            j: Val::constant(0),
                            r0,
                        };
                        let (pt, _) = softmax.update(k, &s, &it.place, Some(mask));
                        k.assign_tile(&p, pt.cast::<T>());
                        // step t: S_t and O += P_{t-1}·V_{t-1} together, the softmax of
                        // S_t under the second
                        let step = |k: &mut Kernel, t: Val, masked: bool| {
                            let ring = k.let_i32(done + t);
                            let keys = pipe_k.consumer_acquire(k, ring);
                            let vals = pipe_v.consumer_acquire(k, ring - 1);
                            wait_turn(k, t.into());
                            k.wgmma().fence();
                            scores(k, keys.stage());
                            values(k, vals.stage());
                            pass_turn(k);
                            // the scores are done (the products complete in order)
                            k.wgmma().wait_group(if self.overlap { 1 } else { 0 });
                            drop(keys);
                            release(k, &pipe_k, ring.into());
                            free_q(k, t.into());
                            let mask = masked.then_some(Mask { j: t, r0 });
                            let (pt, alpha) = softmax.update(k, &s, &it.place, mask);
                            k.wgmma().wait_group(0);
                            drop(vals);
                            release(k, &pipe_v, ring - 1);
                            k.assign_tile(&acc, acc * alpha);
                            k.assign_tile(&p, pt.cast::<T>());
                        };
                        let masked_from = k.var_i32(free);
                        k.if_(masked_from.lt(1), |k| k.assign(masked_from, 1));
                        k.for_range(1, masked_from, 1, |k, t| step(k, t, false));
                        k.for_range(masked_from, steps, 1, |k, t| step(k, t, true));
                        // the last step's values
                        let vals = pipe_v.consumer_acquire(k, done + last);
                        wait_turn(k, steps.into());
                        k.wgmma().fence();
                        values(k, vals.stage());
                        pass_turn(k);
                        k.wgmma().wait_group(0);
                        drop(vals);
                        release(k, &pipe_v, done + last);
                        k.assign(done, done + steps);
                        k.assign(n, n + 1);
                        k.assign(turns, turns + steps + 1);
                    });
                    let col = it.h * d;
                    softmax.store(k, &acc, (&views.o, &views.lse), &it.place, r0, (it.h, col));
                });
            });
        };
        if self.one_copy {
            k.thread_groups(0, 128, 2, consumer);
        } else {
            for g in 0..2 {
                k.thread_group(128 * g as u32, 128, |k| consumer(k, Val::constant(g)));
            }
        }
    }
}

/// Runs `body` for the block's items: its own (`first`, `blockIdx.x`), or on a persistent
/// grid (`round`: the items' end and the blocks launched) every `blocks`-th from it (a loop
/// only there: one item's code has no loop around it).
fn each_item(
    k: &mut Kernel,
    first: Val,
    round: Option<(Val, Val)>,
    body: impl FnOnce(&mut Kernel, Val),
) {
    match round {
        Some((end, stride)) => k.for_range(first, end, stride, body),
        None => body(k, first),
    }
}

/// One item of the work: a block of 128 queries of one head of one sequence. Items are
/// numbered with the blocks of queries fastest, then the heads, then the sequences, so that
/// the blocks running at once share their heads' keys and values in L2; for causal attention
/// each head's blocks of queries go in reverse, the longest first, so that the short ones
/// fill the last wave.
struct Item {
    q0: Val,
    h: Val,
    hk: Val,
    place: Place,
}

impl Item {
    fn decode(
        k: &mut Kernel,
        item: Val,
        (max_q, hq, hkv): (Val, Val, Val),
        bq: i32,
        causal: bool,
        (cu_q, cu_kv): (&GlobalTensor<i32>, &GlobalTensor<i32>),
    ) -> Item {
        let blocks = k.let_i32(cdiv(max_q, bq));
        let rank = k.let_i32(item % blocks);
        let rest = k.let_i32(item / blocks);
        let h = k.let_i32(rest % hq);
        let b = k.let_i32(rest / hq);
        let qb = if causal {
            k.let_i32(blocks - 1 - rank)
        } else {
            rank
        };
        let q0 = k.let_i32(qb * bq);
        let place = Place::read(k, b, cu_q, cu_kv);
        let hk = k.let_i32(h / (hq / hkv));
        Item { q0, h, hk, place }
    }
}

impl<T: AttentionElement> super::FlashKernel<T> for FlashForwardWs<T> {
    fn head_dim(&self) -> i32 {
        self.head_dim
    }
}

// by hand: the element type is named in the kernel's name, not among its hyperparameters
// (and the derives would ask it for `Hash`)
impl<T> Clone for FlashForwardWs<T> {
    fn clone(&self) -> Self {
        FlashForwardWs {
            _t: PhantomData,
            ..*self
        }
    }
}

impl<T> PartialEq for FlashForwardWs<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}

impl<T> Eq for FlashForwardWs<T> {}

impl<T> std::hash::Hash for FlashForwardWs<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h);
    }
}

impl<T> std::fmt::Debug for FlashForwardWs<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlashForwardWs")
            .field("head_dim", &self.head_dim)
            .field("block_kv", &self.block_kv)
            .field("stages", &self.stages)
            .field("causal", &self.causal)
            .field("overlap", &self.overlap)
            .field("ping_pong", &self.ping_pong)
            .field("persistent", &self.persistent)
            .field("one_copy", &self.one_copy)
            .finish()
    }
}
