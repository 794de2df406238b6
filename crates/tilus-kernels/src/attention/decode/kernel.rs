//! The decode kernel: one warp group per block of key-value cache, split along the context.
//!
//! A block takes one key-value head `hk` of one sequence `b`, a share of its context (split
//! `x` of `splits`, `split_keys` keys each) and up to 64 rows of queries: every query head of
//! the group that reads `hk` (`hq / hkv` of them), for each of the sequence's new tokens. The
//! rows of one token are a *slot* of `slot` rows (the group rounded up to 8, where a swizzled
//! shared tile's rows may start), so that one TMA box per token and chunk brings them: Q's
//! heads of one token are consecutive rows of `q [rows, d]`. A slot's rows past the group
//! hold the next group's heads (computed, never stored).
//!
//! The keys and values stream through a ring of `stages` stages by TMA, as in
//! `flash_forward`; each step's rows come from the cache's pages: one box per page the step
//! covers (`box_rows` rows each: a page, or the whole step when pages hold several steps),
//! the page read from the sequence's row of the block table. A contiguous cache is read as
//! rows `b · capacity + position`. Rows past the context hold whatever the cache held there
//! (a page's tail, another page clamped in its place): their scores are masked, and the
//! step that holds them zeroes its values' rows in shared memory before `P·V` (zero times a
//! NaN left in a cache is NaN).
//!
//! New token `t` (of `queries`) sits at position `context − queries + t` and sees the keys up
//! to it. Each block writes its rows' output in f32, normalized by its own sum, and their
//! log-sum-exp, to its partial slot (its own 64 rows, only the real ones written), and
//! `DecodeMerge` weighs the splits by their log-sum-exp into the output; a launch of one
//! split writes the output itself (`direct`), and the last split's blocks can merge the
//! others' slots in the kernel (`merge`).

use super::super::forward::AttentionElement;
use super::super::products::{accumulate, chunks_of, issue_accumulate, issue_scores};
use super::super::softmax::OnlineSoftmax;
use super::convert;
use super::element::CacheElement;
use super::merge::merge_row;
use std::marker::PhantomData;
use tilus::prelude::*;

/// Rows of queries per block: WGMMA's M, one warp group.
pub const BLOCK_ROWS: i32 = 64;

/// Registers per thread of the products' warp group with converters (`setmaxnreg.inc`).
pub const PRODUCT_REGISTERS: u32 = 200;
/// Registers per thread of the converters' warp group (`setmaxnreg.dec`): with the
/// products', 256 a pair of threads, two blocks a multiprocessor (216 and 40 spilled up to
/// 36 words at head dimension 128: the converters' runs of a row need more than 40).
pub const CONVERTER_REGISTERS: u32 = 56;

/// The arguments: `batch`, `hq`, `hkv`, `splits`, `split_keys` (keys per split, a multiple
/// of the step), `page_size` (for a contiguous cache: its capacity per sequence),
/// `pages_per_seq` (the block table's row length), `rows_cache` (the cache's rows: pages ·
/// page size), `scale_log2` (the softmax scale times `log2(e)`), `q [batch · queries · hq,
/// d]`, the caches `k` and `v` `[rows_cache, hkv · d]`, `table [batch, pages_per_seq]`,
/// `lens [batch]` (context lengths, the new tokens included), `scales [2, hkv]` (the keys'
/// and the values' scale of each key-value head: read only for a cache of scaled codes,
/// [`CacheElement::SCALED`]; any buffer otherwise), the partial slots `parts
/// [batch · hkv · row blocks · splits · 64, d + 4]` (each block's 64 rows, the splits of one
/// block of rows consecutive; a row's output in its first `d` columns, its log-sum-exp in
/// column `d`, rows of 16-byte multiples), one ticket counter per block of rows `counts
/// [batch · hkv · row blocks]` (zero between launches); the output `o [batch · queries · hq,
/// d]` and `lse [same rows]`, which a kernel with [`DecodeAttention::direct`] or
/// [`DecodeAttention::merge`] writes.
pub type DecodeArgs<T, C = T> = (
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    f32,
    Ptr<T>,
    Ptr<C>,
    Ptr<C>,
    Ptr<i32>,
    Ptr<i32>,
    Ptr<f32>,
    PtrMut<f32>,
    PtrMut<i32>,
    PtrMut<T>,
    PtrMut<f32>,
);

/// The decode kernel for queries and output of type `T` over a cache of `C` (`T` itself, or
/// scaled FP8 codes: [`CacheElement`]). Fields are compile-time hyperparameters.
pub struct DecodeAttention<T, C = T> {
    /// The head dimension: 64, 128 or 256.
    pub head_dim: i32,
    /// New tokens per sequence: 1 to 8.
    pub queries: i32,
    /// Rows per token: the query heads per key-value head rounded up to 8 (at most 64).
    pub slot: i32,
    /// Keys per step: 64 or 128.
    pub block_kv: i32,
    /// Stages of the key and value ring.
    pub stages: i32,
    /// Rows per TMA box of the cache: the page size when a page is shorter than a step, else
    /// the step; 0 for a contiguous cache (one box per step).
    pub box_rows: i32,
    /// The launch is not split: each block writes its rows' output in `T` and their
    /// log-sum-exp straight to `o` and `lse` (no partial slots, no merge). Head dimensions
    /// up to 128 (at 256 the output in `T` beside the accumulator spills).
    pub direct: bool,
    /// A split launch merges in the kernel: every block writes its partial slot and takes a
    /// ticket, and the block that takes its group's last ticket weighs every split's slot
    /// into the output, each warp a row (no second launch, no block waiting for another).
    /// Head dimensions up to 128.
    pub merge: bool,
    /// The most splits the kernel's merge reads at once: a power of two, at least the
    /// launch's splits (each warp holds `merge_splits × head_dim` of a row); 0 without
    /// `merge`.
    pub merge_splits: i32,
    /// Step `j + 1`'s scores issued under step `j`'s values' product (the two products back
    /// to back), instead of each product waited for in turn. Within ±2% of the steps one after
    /// another on an H100 (docs/perf.md, 2026-12-07): off by default.
    pub overlap: bool,
    /// Q read into registers once (WGMMA's A operand from there): straight from global
    /// memory where its slots tile the 64 rows, else from its shared tile, which the
    /// converted copy of the step then reuses. The default over a cache of codes at head
    /// dimension 64 or 128: each step's scores read only the keys from shared memory (3-9%
    /// faster from batch 16 up on an H100, docs/perf.md). Over a cache of `T` only where the
    /// slots tile the rows (no faster on an H100: off by default).
    pub q_in_registers: bool,
    /// Over a cache of codes: a second warp group converts each step's keys and values into
    /// a ring of two converted copies while the first multiplies the step before
    /// (`setmaxnreg` moves registers from the converters to the products). Head dimensions
    /// up to 128, Q from global memory, no merge in the kernel; the default where those hold
    /// (10-12% faster than one warp group on an H100, docs/perf.md). With `overlap`, the
    /// next copy's scores are issued under the values' product (not yet timed).
    pub converters: bool,
    _t: PhantomData<fn() -> (T, C)>,
}

impl<T: Element, C: Element> DecodeAttention<T, C> {
    /// The kernel for `head_dim`, `queries` new tokens per sequence and `group` query heads
    /// per key-value head, over pages of `page_size` rows (`None`: a contiguous cache):
    /// steps of 64 keys, two stages; Q in registers over a cache of codes up to head
    /// dimension 128, with a warp group of converters where Q comes from global memory.
    pub fn new(
        head_dim: i32,
        queries: i32,
        group: i32,
        page_size: Option<i32>,
    ) -> DecodeAttention<T, C> {
        let block_kv = 64;
        DecodeAttention {
            head_dim,
            queries,
            slot: ((group + 7) / 8 * 8).min(BLOCK_ROWS),
            block_kv,
            // two stages: two blocks a multiprocessor up to head dimension 128, each with its
            // own chain of waits, beat one block with five stages (docs/perf.md: 2.91 against
            // 2.81 TB/s at 64 × 4096, 2.54 against 2.50 at 16 × 4096, equal at 1 × 8192)
            stages: 2,
            box_rows: page_size.map_or(0, |p| p.min(block_kv)),
            direct: false,
            merge: false,
            merge_splits: 0,
            overlap: false,
            q_in_registers: <C as Element>::DTYPE != <T as Element>::DTYPE && head_dim <= 128,
            converters: <C as Element>::DTYPE != <T as Element>::DTYPE
                && head_dim <= 128
                && BLOCK_ROWS % ((group + 7) / 8 * 8).min(BLOCK_ROWS) == 0,
            _t: PhantomData,
        }
    }
}

impl<T, C> DecodeAttention<T, C> {
    /// The same kernel with its steps overlapped or not.
    pub fn with_overlap(mut self, overlap: bool) -> DecodeAttention<T, C> {
        self.overlap = overlap;
        self
    }

    /// The same kernel merging a launch of up to `splits` splits itself (`splits` ≥ 2), or
    /// not (0 or 1: the slots left to [`super::merge::DecodeMerge`]).
    pub fn with_merge(mut self, splits: i32) -> DecodeAttention<T, C> {
        self.merge = splits > 1;
        self.converters &= !self.merge;
        self.merge_splits = if self.merge {
            (splits as u32).next_power_of_two() as i32
        } else {
            0
        };
        self
    }

    /// The same kernel writing the output directly (a launch of one split) or not.
    pub fn with_direct(mut self, direct: bool) -> DecodeAttention<T, C> {
        self.direct = direct;
        self
    }

    /// Tokens per block: the slots that fit in 64 rows.
    pub fn tokens_per_block(&self) -> i32 {
        BLOCK_ROWS / self.slot
    }

    /// Blocks of rows per key-value head and sequence.
    pub fn row_blocks(&self) -> i32 {
        (self.queries + self.tokens_per_block() - 1) / self.tokens_per_block()
    }

    /// Every hyperparameter, for equality and hashing.
    fn key(&self) -> [i32; 12] {
        [
            self.head_dim,
            self.queries,
            self.slot,
            self.block_kv,
            self.stages,
            self.box_rows,
            self.direct as i32,
            self.merge as i32,
            self.merge_splits,
            self.overlap as i32,
            self.q_in_registers as i32,
            self.converters as i32,
        ]
    }
}

impl<T: AttentionElement, C: CacheElement> Script for DecodeAttention<T, C> {
    type Args = DecodeArgs<T, C>;

    fn arg_names() -> &'static [&'static str] {
        &[
            "batch",
            "hq",
            "hkv",
            "splits",
            "split_keys",
            "page_size",
            "pages_per_seq",
            "rows_cache",
            "scale_log2",
            "q",
            "k",
            "v",
            "table",
            "lens",
            "scales",
            "parts",
            "counts",
            "o",
            "lse",
        ]
    }

    fn name(&self) -> String {
        if <C as Element>::DTYPE == <T as Element>::DTYPE {
            format!("decode_attention_{}", T::NAME)
        } else {
            format!("decode_attention_{}_{}_cache", T::NAME, C::NAME)
        }
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (batch, hq, hkv, splits, split_keys) = (args.0, args.1, args.2, args.3, args.4);
        let (page_size, pages_per_seq, rows_cache, scale_log2) = (args.5, args.6, args.7, args.8);
        let (d, bkv, stages, nq, slot) = (
            self.head_dim,
            self.block_kv,
            self.stages,
            self.queries,
            self.slot,
        );
        let fits = [64, 128, 256].contains(&d)
            && [64, 128].contains(&bkv)
            && (1..=8).contains(&stages)
            && (1..=8).contains(&nq)
            && slot % 8 == 0
            && (8..=BLOCK_ROWS).contains(&slot)
            && (self.box_rows == 0 || (self.box_rows >= 8 && bkv % self.box_rows == 0))
            && (!self.merge || (2..=64).contains(&self.merge_splits) && self.merge_splits.count_ones() == 1)
            // one converted copy of a step: the next step's scores cannot run ahead (the
            // converters' ring of two copies lets them)
            && !(self.overlap && <C as Element>::DTYPE != <T as Element>::DTYPE && !self.converters)
            // Q's registers beside O's accumulator fit up to head dimension 128; Q comes
            // from global memory where its slots tile the 64 rows, else through a shared
            // tile, which only a converted copy reuses
            && !(self.q_in_registers
                && (d > 128
                    || (<C as Element>::DTYPE == <T as Element>::DTYPE && BLOCK_ROWS % slot != 0)))
            // converters: a cache of codes, Q from global memory beside O up to 128
            && !(self.converters
                && (<C as Element>::DTYPE == <T as Element>::DTYPE
                    || d > 128
                    || self.merge
                    || !self.q_in_registers
                    || BLOCK_ROWS % slot != 0));
        if !fits {
            k.refuse_config(format!(
                "{self:?}: head_dim 64, 128 or 256, block_kv 64 or 128, 1 to 8 stages and \
                 queries, a slot of 8 to 64 rows in eights, box_rows 0 or a divisor of \
                 block_kv of at least 8; no overlap over a converted cache without \
                 converters; Q in registers up to head_dim 128, over a cache of the \
                 queries' type only for a slot dividing 64; converters only over a cache of \
                 codes with Q in registers from global memory, head_dim up to 128, without \
                 merge"
            ));
            return;
        }
        let (tokens, row_blocks) = (self.tokens_per_block(), self.row_blocks());
        k.blocks([Scalar::from(splits), hkv * row_blocks, batch.into()]);
        // with converters: their warp group after the products' (threads 128 ..), and two
        // blocks a multiprocessor, the products' registers taken from the converters'
        k.warps(if self.converters { 8 } else { 4 });
        if self.converters {
            k.min_blocks_per_sm(2);
        }
        // no `launch_dependents_early`: the merge scheduled beside this grid's blocks made
        // the step 0.3-0.5 µs slower at 1 × 1024, 1 × 8192 and 4 × 8192 (docs/perf.md)
        let rows_q = Scalar::from(batch) * nq * hq;
        let q = k.global_view::<T>(args.9, [rows_q.clone(), Scalar::from(d)]);
        let kc = k.global_view::<C>(args.10, [Scalar::from(rows_cache), hkv * d]);
        let vc = k.global_view::<C>(args.11, [Scalar::from(rows_cache), hkv * d]);
        let table = k.global_view::<i32>(args.12, [Scalar::from(batch), pages_per_seq.into()]);
        let lens = k.global_view::<i32>(args.13, [batch]);
        // a block's partial slot: 64 rows, the blocks of a sequence's key-value head and
        // row block one after another by split
        // (a direct kernel's slots are one unused row)
        let parts = if self.direct {
            Scalar::from(1)
        } else {
            Scalar::from(batch) * hkv * row_blocks * splits * BLOCK_ROWS
        };
        let part = k.global_view::<f32>(args.15, [parts, Scalar::from(d + 4)]);
        let groups = Scalar::from(batch) * hkv * row_blocks;
        let counts = k.global_view::<i32>(args.16, [groups]);

        let chunks = d / 64;
        let sk = k.shared_tensor::<C>([stages * chunks, bkv, 64]);
        let sv = k.shared_tensor::<C>([stages, bkv, d]);
        // Q in registers straight from global memory where its slots tile the 64 rows (the
        // WGMMA A fragment's rows are 4 warps × 2 × 8 lanes: whole slots); otherwise by way
        // of a shared tile (last: freed, its bytes start the converted copy's)
        let q_from_global = self.q_in_registers && BLOCK_ROWS % slot == 0;
        let q_tile = (!q_from_global).then(|| {
            (
                k.shared_tensor::<T>([chunks, BLOCK_ROWS, 64]),
                k.mbarrier().alloc([1]),
            )
        });
        let full = k.mbarrier().alloc_counts(&vec![1; stages as usize]);

        let x = k.let_i32(k.block_idx().x);
        let b = k.let_i32(k.block_idx().z);
        let hk = k.let_i32(k.block_idx().y / row_blocks);
        let t0 = k.let_i32(k.block_idx().y % row_blocks * tokens);
        let group = k.let_i32(hq / hkv);
        let ctx = k.load_global_scalar(&lens, [b]);
        // the block's last token sees keys up to `ctx − nq + last`; its split, `lo .. hi`
        let last = k.var_i32(t0 + tokens - 1);
        k.if_(last.ge(nq), |k| k.assign(last, nq - 1));
        let lo = k.let_i32(x * split_keys);
        let hi = k.var_i32(lo + split_keys);
        k.if_((ctx - nq + last + 1).lt(hi), |k| {
            k.assign(hi, ctx - nq + last + 1)
        });
        let steps = k.var_i32(cdiv(hi - lo, bkv));
        k.if_(steps.lt(0), |k| k.assign(steps, 0));
        // steps whose keys every row sees: inside the split, at or before the first token's
        let seen_by_all = k.var_i32(ctx - nq + t0 + 1);
        k.if_(hi.lt(seen_by_all), |k| k.assign(seen_by_all, hi));
        let free = k.var_i32((seen_by_all - lo) / bkv);
        k.if_(free.lt(0), |k| k.assign(free, 0));

        // step `j`'s keys and values into `stage`, a box per page it covers
        let fetch = |k: &mut Kernel, stage: Val, j: Scalar| {
            let (vs, bar) = (sv.at(stage), full.at(stage));
            k.mbarrier()
                .arrive_and_expect_tx(bar, sk.nbytes() / stages + vs.nbytes());
            let first = k.let_i32(lo + j * bkv);
            let boxes = if self.box_rows == 0 {
                vec![(0, bkv, k.let_i32(b * page_size + first))]
            } else {
                let n = bkv / self.box_rows;
                (0..n)
                    .map(|i| {
                        let pos = k.let_i32(first + i * self.box_rows);
                        // positions past the context read the sequence's last page
                        let page = k.var_i32(pos / page_size);
                        let last_page = k.let_i32((ctx - 1) / page_size);
                        k.if_(last_page.lt(page), |k| k.assign(page, last_page));
                        let at = k.load_global_scalar(&table, (b, page));
                        let row = k.let_i32(at * page_size + pos % page_size);
                        (i * self.box_rows, self.box_rows, row)
                    })
                    .collect()
            };
            for (start, len, row) in boxes {
                for c in 0..chunks {
                    let ks = sk.at(k.let_i32(stage * chunks + c)).rows(start, len);
                    k.tma()
                        .global_to_shared(&kc, &ks, (row, hk * d + c * 64), bar);
                }
                k.tma()
                    .global_to_shared(&vc, &vs.rows(start, len), (row, hk * d), bar);
            }
        };
        // a contiguous cache's first step is where the split starts whatever the context:
        // its copies go out beside the context length's load instead of after it (a block
        // whose split starts past its context waits for them before it ends)
        let early = self.box_rows == 0;
        k.single_thread(|k| {
            if early {
                fetch(k, Val::constant(0), Scalar::from(0));
            }
            if let Some((sq, qbar)) = &q_tile {
                // the slots that fit (a slot of 24 rows leaves 16 of the 64 unfilled)
                let q_bytes = sq.nbytes() / BLOCK_ROWS * (tokens * slot);
                k.mbarrier().arrive_and_expect_tx(qbar[0], q_bytes);
                for s in 0..tokens {
                    let row = k.let_i32((b * nq + t0 + s) * hq + hk * group);
                    for c in 0..chunks {
                        let qs = sq.at(Val::constant(c)).rows(s * slot, slot);
                        k.tma().global_to_shared(&q, &qs, (row, c * 64), qbar[0]);
                    }
                }
            }
            for s in (early as i32)..stages {
                k.if_(Scalar::from(s).lt(steps), |k| {
                    fetch(k, Val::constant(s), Scalar::from(s))
                });
            }
        });
        // with converters: the ring of two converted copies, and the converters' warp group,
        // which waits for each step's codes, converts them into the copy the products freed
        // (the values' rows past the context zeroed), hands it over and refills the stage
        let converted = self.converters.then(|| {
            (
                k.shared_tensor::<T>([2 * chunks, bkv, 64]),
                k.shared_tensor::<T>([2, bkv, d]),
                Pipeline::new(k, 2, 128),
            )
        });
        if let Some((ck, cv, pipe)) = &converted {
            k.thread_group(128, 128, |k| {
                k.set_max_registers(CONVERTER_REGISTERS);
                k.for_range(0, steps, 1, |k, j| {
                    let stage = k.let_i32(j % stages);
                    k.mbarrier().wait(full.at(stage), j / stages % 2);
                    let slot = pipe.producer_wait(k, j);
                    let buf = slot.stage();
                    let to = |k: &mut Kernel, c: i32| ck.at(k.let_i32(buf * chunks + c));
                    convert::keys(k, (&sk, stage, chunks), to, bkv);
                    let first = k.let_i32(j * bkv + lo);
                    let (from, to) = (sv.at(stage), cv.at(buf));
                    convert::values(k, (&from, &to), (first, ctx), (bkv, d, 16));
                    k.fence_proxy_async();
                    k.sync_group();
                    pipe.producer_commit(k, &slot, 0);
                    // every converter has read the stage: refill it
                    k.single_thread(|k| {
                        let next = j + stages;
                        k.if_(next.clone().lt(steps), |k| fetch(k, stage, next));
                    });
                });
                if early {
                    // the first step's copies went out unasked: they land before the block
                    // ends
                    k.if_(steps.eq_(0), |k| k.mbarrier().wait(full[0], 0u32));
                }
            });
        }
        let compute = |k: &mut Kernel| {
            let q = match &q_tile {
                None => {
                    // token `s`'s heads `hk · group ..` are a `[slot, 64]` box of Q seen as
                    // `[tokens, heads, d]`, and the box of the block's tokens, rows in order,
                    // is the chunk (heads past the last read 0; tokens past the sequence's,
                    // the next sequence's: computed, never stored)
                    let q3 = k.global_view::<T>(
                        args.9,
                        [Scalar::from(batch) * nq, hq.into(), Scalar::from(d)],
                    );
                    let regs = (0..chunks)
                        .map(|c| {
                            let at = (b * nq + t0, hk * group, Scalar::from(c * 64));
                            let x = k.load_global(&q3, at, [tokens, slot, 64]);
                            k.reshape(&x, [BLOCK_ROWS, 64])
                        })
                        .collect();
                    QueryOperand::Registers(regs)
                }
                Some((sq, qbar)) => {
                    k.mbarrier().wait(qbar[0], 0u32);
                    if self.q_in_registers {
                        let regs = (0..chunks)
                            .map(|c| k.load_shared(&sq.at(Val::constant(c))))
                            .collect();
                        // every warp has read Q before the copy below reuses its bytes
                        k.sync();
                        k.free_shared(sq);
                        QueryOperand::Registers(regs)
                    } else {
                        QueryOperand::Shared(chunks_of(sq, chunks))
                    }
                }
            };
            // the products' operands: the ring's stages themselves for a cache of `T`, else one
            // copy of a step converted to `T` (the products of a step are waited for before the
            // next step converts)
            let products = match (&converted, sk.as_type::<T>(), sv.as_type::<T>()) {
                (Some((ck, cv, pipe)), _, _) => Products::Pipelined(*ck, *cv, pipe.clone()),
                (None, Some(pk), Some(pv)) => Products::Ring(pk, pv),
                _ => Products::Converted(
                    k.shared_tensor::<T>([chunks, bkv, 64]),
                    k.shared_tensor::<T>([1, bkv, d]),
                ),
            };
            let issue_scores = |k: &mut Kernel, keys: &SharedTensor<T>, stage: Val, s| match &q {
                QueryOperand::Shared(q) => issue_scores(k, (q, keys), stage, s),
                QueryOperand::Registers(q) => issue_scores(k, (q, keys), stage, s),
            };

            // each row's token and head within the group
            let r = k.arange([BLOCK_ROWS, 1], 0);
            let token = r.clone() / slot;
            let head = r - token.clone() * slot;
            let token = token + t0;
            // a cache of codes: the keys' scale joins the softmax's, the values' the output's
            // (the values' read after the steps: a register less through them)
            let scales = C::SCALED.then(|| k.global_view::<f32>(args.14, [Scalar::from(hkv) * 2]));
            let scale_log2 = match &scales {
                Some(scales) => {
                    let ks = k.load_global_scalar(scales, [hk]);
                    k.let_f32(scale_log2 * ks)
                }
                None => scale_log2,
            };
            let softmax = OnlineSoftmax::new(k, BLOCK_ROWS, bkv, scale_log2, false);
            let acc = k.register_tensor::<f32>([BLOCK_ROWS, d], 0.0);
            let s = k.register_tensor::<f32>([BLOCK_ROWS, bkv], None::<f64>);
            // step `j`'s stage, once its copies landed
            let wait = |k: &mut Kernel, j: Scalar| -> (Val, Val) {
                let stage = k.let_i32(j.clone() % stages);
                k.mbarrier().wait(full.at(stage), j.clone() / stages % 2);
                (stage, k.let_i32(j * bkv + lo))
            };
            // every warp is done with step `j`'s stage: refill it with the keys `stages` ahead
            let release = |k: &mut Kernel, j: Scalar, stage: Val| {
                k.sync();
                k.single_thread(|k| {
                    let next = j + stages;
                    k.if_(next.clone().lt(steps), |k| fetch(k, stage, next));
                });
            };
            let keep = |k: &mut Kernel, first: Val| {
                let key = k.arange([1, bkv], 1) + first;
                key.clone().lt(hi).and(key.le(token.clone() + ctx - nq))
            };
            match &products {
                Products::Ring(pk, pv) => {
                    // the values' rows past the context zeroed (the cache may hold NaN there),
                    // 16 rows at a time (the whole stage beside O's accumulator would not fit
                    // the registers at head dimension 256)
                    let arrived = |k: &mut Kernel, j: Scalar| -> (Val, Val) {
                        let (stage, first) = wait(k, j);
                        k.if_((ctx - first).lt(bkv), |k| {
                            for i in 0..bkv / 16 {
                                let vs = pv.at(stage).rows(i * 16, 16);
                                let v = k.load_shared(&vs);
                                let row = k.arange([16, 1], 0) + first + i * 16;
                                let v = k.compute(where_(row.lt(ctx), v, 0.0));
                                k.store_shared(&vs, &v);
                            }
                            k.fence_proxy_async();
                            k.sync();
                        });
                        (stage, first)
                    };
                    if self.overlap {
                        // one step ahead: step `j + 1`'s scores are issued under step `j`'s
                        // values' product, so that the two products run back to back; the
                        // values' product is waited for within its step (O's accumulator in
                        // flight across the loop's back edge, ptxas serializes every product
                        // of the kernel: C7515)
                        k.if_(Scalar::from(0).lt(steps), |k| {
                            let (stage, _) = arrived(k, Scalar::from(0));
                            issue_scores(k, pk, stage, &s);
                        });
                        let step = |k: &mut Kernel, j: Val, masked: bool| {
                            k.wgmma().wait_group(0);
                            let stage = k.let_i32(j % stages);
                            let first = k.let_i32(j * bkv + lo);
                            let keep = masked.then(|| keep(k, first));
                            let (p, alpha) = softmax.fold(k, &s, keep);
                            issue_accumulate(k, (&p, &alpha), &pv.at(stage), &acc);
                            k.if_else(
                                (j + 1).lt(steps),
                                |k| {
                                    let (next, _) = arrived(k, j + 1);
                                    issue_scores(k, pk, next, &s);
                                    // the values' product done, the next scores in flight
                                    k.wgmma().wait_group(1);
                                },
                                |k| k.wgmma().wait_group(0),
                            );
                            release(k, j.into(), stage);
                        };
                        k.for_range(0, free, 1, |k, j| step(k, j, false));
                        k.for_range(free, steps, 1, |k, j| step(k, j, true));
                        // (the last step waited for everything; the text shows no product in
                        // flight)
                        k.wgmma().wait_group(0);
                    } else {
                        let step = |k: &mut Kernel, j: Val, masked: bool| {
                            let (stage, first) = arrived(k, j.into());
                            issue_scores(k, pk, stage, &s);
                            k.wgmma().wait_group(0);
                            let keep = masked.then(|| keep(k, first));
                            let (p, alpha) = softmax.fold(k, &s, keep);
                            accumulate(k, (&p, &alpha), &pv.at(stage), &acc);
                            release(k, j.into(), stage);
                        };
                        k.for_range(0, free, 1, |k, j| step(k, j, false));
                        k.for_range(free, steps, 1, |k, j| step(k, j, true));
                    }
                }
                Products::Pipelined(ck, cv, pipe) if !self.overlap => {
                    // step `j` from the copy the converters handed over, given back once its
                    // products are done
                    let step = |k: &mut Kernel, j: Val, masked: bool| {
                        let slot = pipe.consumer_acquire(k, j);
                        let buf = slot.stage();
                        issue_scores(k, ck, buf, &s);
                        k.wgmma().wait_group(0);
                        let first = k.let_i32(j * bkv + lo);
                        let keep = masked.then(|| keep(k, first));
                        let (p, alpha) = softmax.fold(k, &s, keep);
                        accumulate(k, (&p, &alpha), &cv.at(buf), &acc);
                        pipe.consumer_release(k, slot);
                    };
                    k.for_range(0, free, 1, |k, j| step(k, j, false));
                    k.for_range(free, steps, 1, |k, j| step(k, j, true));
                }
                Products::Pipelined(ck, cv, pipe) => {
                    // overlapped: step `j`'s scores were issued a step ahead; its values'
                    // product issued, the next copy's scores under it, and the copy given
                    // back once the values' product is done (the converters fill it with
                    // step `j + 2` while step `j + 1`'s softmax runs)
                    let scores = |k: &mut Kernel, j: Scalar| {
                        let slot = pipe.consumer_acquire(k, j);
                        issue_scores(k, ck, slot.stage(), &s);
                    };
                    k.if_(Scalar::from(0).lt(steps), |k| scores(k, Scalar::from(0)));
                    let step = |k: &mut Kernel, j: Val, masked: bool| {
                        k.wgmma().wait_group(0);
                        let first = k.let_i32(j * bkv + lo);
                        let keep = masked.then(|| keep(k, first));
                        let (p, alpha) = softmax.fold(k, &s, keep);
                        let buf = k.let_i32(j % 2);
                        issue_accumulate(k, (&p, &alpha), &cv.at(buf), &acc);
                        k.if_else(
                            (j + 1).lt(steps),
                            |k| {
                                scores(k, j + 1);
                                k.wgmma().wait_group(1);
                            },
                            |k| k.wgmma().wait_group(0),
                        );
                        pipe.consumer_release_step(k, j);
                    };
                    k.for_range(0, free, 1, |k, j| step(k, j, false));
                    k.for_range(free, steps, 1, |k, j| step(k, j, true));
                    // (the last step waited for everything; the text shows no product in
                    // flight)
                    k.wgmma().wait_group(0);
                }
                Products::Converted(pk, pv) => {
                    let pv = pv.at(Val::constant(0));
                    // step `j`'s keys converted (it waits for them) and their scores issued
                    let keys = |k: &mut Kernel, j: Scalar| {
                        let (stage, _) = wait(k, j);
                        let to = |_: &mut Kernel, c: i32| pk.at(Val::constant(c));
                        convert::keys(k, (&sk, stage, chunks), to, bkv);
                        k.fence_proxy_async();
                        k.sync();
                        issue_scores(k, pk, Val::constant(0), &s);
                    };
                    // the values converted, the rows past the context zeroed on the way (8 rows
                    // at a time at head dimension 256: 16 spill there)
                    let values = |k: &mut Kernel, stage: Val, first: Val| {
                        let n = if d == 256 { 8 } else { 16 };
                        let from = sv.at(stage);
                        convert::values(k, (&from, &pv), (first, ctx), (bkv, d, n));
                        k.fence_proxy_async();
                    };
                    // step `j`: its scores were issued a step ahead; its values are converted
                    // under them (the stage then refilled), its values' product issued, and the
                    // next step's keys converted and scores issued under that
                    k.if_(Scalar::from(0).lt(steps), |k| keys(k, Scalar::from(0)));
                    let step = |k: &mut Kernel, j: Val, masked: bool| {
                        let stage = k.let_i32(j % stages);
                        let first = k.let_i32(j * bkv + lo);
                        values(k, stage, first);
                        release(k, j.into(), stage);
                        k.wgmma().wait_group(0);
                        let keep = masked.then(|| keep(k, first));
                        let (p, alpha) = softmax.fold(k, &s, keep);
                        issue_accumulate(k, (&p, &alpha), &pv, &acc);
                        k.if_else(
                            (j + 1).lt(steps),
                            |k| {
                                keys(k, j + 1);
                                // the values' product done (the values' copy free), the next
                                // scores still in flight
                                k.wgmma().wait_group(1);
                            },
                            |k| k.wgmma().wait_group(0),
                        );
                    };
                    k.for_range(0, free, 1, |k, j| step(k, j, false));
                    k.for_range(free, steps, 1, |k, j| step(k, j, true));
                    // (the last step waited for everything; the text shows no product in flight)
                    k.wgmma().wait_group(0);
                }
            }
            if early && !self.converters {
                // the first step's copies went out unasked: they land before the block ends
                k.if_(steps.eq_(0), |k| k.mbarrier().wait(full[0], 0u32));
            }

            // normalized in place (a second tile of O would not fit at head dimension 256), by
            // each row's reciprocal: one division a row, not one (IEEE, with its slow path) an
            // element, in the epilogue every block runs once
            let seen = softmax.l.gt(0.0f32);
            let one = k.register_tensor::<f32>([BLOCK_ROWS, 1], 1.0);
            let inv = k.compute(where_(seen.clone(), one / softmax.l, 0.0f32));
            match scales.map(|scales| k.load_global_scalar(&scales, [hkv + hk])) {
                Some(vs) => k.assign_tile(&acc, where_(seen.clone(), acc * (inv * vs), 0.0f32)),
                None => k.assign_tile(&acc, where_(seen.clone(), acc * inv, 0.0f32)),
            }
            let lse = k.compute(where_(
                seen,
                softmax.m * scale_log2 * std::f32::consts::LN_2 + softmax.l.log(),
                f32::NEG_INFINITY,
            ));
            // the block's rows at its partial slot, the rows of real heads and tokens only
            let real = head.lt(group).and(token.lt(nq));
            let group_of_block = k.let_i32(b * hkv * row_blocks + k.block_idx().y);
            let first_row = k.let_i32((group_of_block * splits + x) * BLOCK_ROWS);
            // token slot `s`'s rows are consecutive rows of O, from row `row0 + s · slot`
            let store_output =
                |k: &mut Kernel, acc: &RegisterTensor<f32>, lse: &RegisterTensor<f32>| {
                    let o = k.global_view::<T>(args.17, [rows_q.clone(), Scalar::from(d)]);
                    let lse_out = k.global_view::<f32>(args.18, [rows_q.clone(), Scalar::from(1)]);
                    let out = k.cast::<T>(acc);
                    let r = k.arange([BLOCK_ROWS, 1], 0);
                    for s in 0..tokens {
                        let t = k.let_i32(t0 + s);
                        let row0 = k.let_i32((b * nq + t) * hq + hk * group - s * slot);
                        let mine = r.clone().ge(s * slot).and(r.clone().lt(group + s * slot));
                        let mine = mine.and(real.clone());
                        k.store_global_where(&o, &out, (row0, 0), mine.clone());
                        k.store_global_where(&lse_out, lse, (row0, 0), mine);
                    }
                };
            let store_part = |k: &mut Kernel| {
                k.store_global_where(&part, &acc, (first_row, 0), real.clone());
                k.store_global_where(&part, &lse, (first_row, d), real.clone());
            };
            if self.direct {
                store_output(k, &acc, &lse);
            } else if self.merge {
                // every block publishes its slot and takes a ticket; the block that takes the
                // last one (whichever split finishes last) merges the group's rows, each warp a
                // row with every split at once: no block waits for another
                store_part(k);
                k.fence_gpu();
                k.sync();
                let took_last = k.var_i32(0);
                k.single_thread(|k| {
                    let ticket = k.atomic_add_scalar(&counts, [group_of_block], 1);
                    k.if_(ticket.eq_(splits - 1), |k| {
                        k.assign(took_last, 1);
                        // back to zero for the next launch: every ticket of this one is taken
                        k.atomic_exchange_scalar(&counts, [group_of_block], 0);
                    });
                });
                let merges = k.sync_any(took_last.ne_(0));
                // (the flag alike in every thread again: the warps below run as whole warps)
                k.assign(took_last, 0);
                k.if_(merges, |k| {
                    // the other blocks' slots, published before their tickets
                    k.fence_gpu();
                    let width = d + 4;
                    let slots = Scalar::from(batch) * hkv * row_blocks * splits;
                    let o_part =
                        k.global_view::<f32>(args.15, [slots.clone(), (width * 64).into()]);
                    let lse_part = k.global_view::<f32>(args.15, [slots, (width * 64).into()]);
                    let o = k.global_view::<T>(args.17, [rows_q.clone(), Scalar::from(d)]);
                    let lse_out = k.global_view::<f32>(args.18, [rows_q.clone(), Scalar::from(1)]);
                    // the block's real rows: `group` heads of each of its tokens
                    let block_tokens = k.var_i32(Scalar::from(nq) - t0);
                    k.if_(Scalar::from(tokens).lt(block_tokens), |k| {
                        k.assign(block_tokens, tokens)
                    });
                    let real_rows = k.let_i32(block_tokens * group);
                    let first = k.let_i32(group_of_block * splits);
                    k.thread_groups(0, 32, 4, |k, w| {
                        k.for_range(w, real_rows, 4, |k, i| {
                            let (s, h) = (k.let_i32(i / group), k.let_i32(i % group));
                            let r = k.let_i32(s * slot + h);
                            let n = self.merge_splits;
                            let views = (&o_part, &lse_part);
                            let (out, total) =
                                merge_row::<T>(k, views, (first, r), splits, (n, d, true));
                            let row = k.let_i32((b * nq + t0 + s) * hq + hk * group + h);
                            k.store_global(&o, &out, (row, 0));
                            k.store_global(&lse_out, &total, (row, 0));
                        });
                    });
                });
            } else {
                store_part(k);
            }
        };
        if self.converters {
            k.thread_group(0, 128, |k| {
                k.set_max_registers(PRODUCT_REGISTERS);
                compute(k);
            });
        } else {
            compute(k);
        }
    }
}

// by hand: the element type is named in the kernel's name, not among its hyperparameters
// (and the derives would ask it for `Hash`)
impl<T, C> Clone for DecodeAttention<T, C> {
    fn clone(&self) -> Self {
        DecodeAttention {
            _t: PhantomData,
            ..*self
        }
    }
}

impl<T, C> PartialEq for DecodeAttention<T, C> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}

impl<T, C> Eq for DecodeAttention<T, C> {}

impl<T, C> std::hash::Hash for DecodeAttention<T, C> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h);
    }
}

impl<T, C> std::fmt::Debug for DecodeAttention<T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // the tunable hyperparameters first (the command line's `--set` takes those)
        f.debug_struct("DecodeAttention")
            .field("block_kv", &self.block_kv)
            .field("stages", &self.stages)
            .field("head_dim", &self.head_dim)
            .field("queries", &self.queries)
            .field("slot", &self.slot)
            .field("box_rows", &self.box_rows)
            .field("direct", &self.direct)
            .field("merge", &self.merge)
            .field("merge_splits", &self.merge_splits)
            .field("overlap", &self.overlap)
            .field("q_in_registers", &self.q_in_registers)
            .field("converters", &self.converters)
            .finish()
    }
}

/// Where `S = Q·Kᵀ` reads Q's chunks of 64 columns: the shared tile TMA filled, or registers
/// loaded from it once.
enum QueryOperand<T> {
    /// `sq.at(c)` for each chunk `c`.
    Shared(Vec<SharedTensor<T>>),
    /// Each chunk `[64, 64]` in registers.
    Registers(Vec<RegisterTensor<T>>),
}

/// Where the products read a step's keys and values: the ring's stages (a cache of the
/// products' type), one copy converted from the stage that arrived, or the ring of copies
/// the converters' warp group fills.
enum Products<T> {
    /// The keys `[2 · chunks, bkv, 64]` and values `[2, bkv, d]` of the converted copies, and
    /// their ring.
    Pipelined(SharedTensor<T>, SharedTensor<T>, Pipeline),
    /// The keys `[stages · chunks, bkv, 64]` and values `[stages, bkv, d]` of the ring.
    Ring(SharedTensor<T>, SharedTensor<T>),
    /// The keys `[chunks, bkv, 64]` and values `[1, bkv, d]` of the step being multiplied.
    Converted(SharedTensor<T>, SharedTensor<T>),
}

#[cfg(test)]
mod tests {
    use super::DecodeAttention;
    use half::f16;
    use tilus::lowp::F8E4M3;

    /// The generated code names the kernel's parameters as [`super::DecodeArgs`] documents
    /// them.
    #[test]
    fn the_parameters_carry_their_names() {
        let kernel = DecodeAttention::<f16, F8E4M3>::new(128, 1, 4, Some(16));
        let src = tilus::emit(&kernel, &[]).unwrap();
        let at = src.find("__global__").expect("a kernel");
        let head = &src[at..at + src[at..].find('{').expect("a body")];
        for name in [
            "split_keys",
            "pages_per_seq",
            "scale_log2",
            "table",
            "scales",
            "parts",
        ] {
            assert!(head.contains(name), "{name} in {head}");
        }
    }

    /// Q in registers gives its shared tile to the converted copy: a cache of e4m3 codes at
    /// head dimension 128 plans 64 KB of tiles (and the barriers and alignment's few KB:
    /// three blocks' worth of a multiprocessor's 227 KB, a KB of each reserved), against 80
    /// KB with Q in shared memory; at 64, half of each.
    #[test]
    fn q_in_registers_gives_its_shared_tile_to_the_converted_copy() {
        let smem = |d: i32, q_in_registers: bool| {
            let mut kernel = DecodeAttention::<f16, F8E4M3>::new(d, 1, 4, Some(16));
            assert_eq!(kernel.q_in_registers, d <= 128);
            assert_eq!(kernel.converters, d <= 128);
            (kernel.q_in_registers, kernel.converters) = (q_in_registers, false);
            let program = tilus::trace(&kernel, &[]).unwrap();
            let (_, plan) = tilus::passes::compile_program(program).unwrap();
            plan.smem_bytes as i32
        };
        for d in [64, 128] {
            let (registers, shared) = (smem(d, true), smem(d, false));
            let kb = d / 2 * 1024;
            assert!(registers > kb && registers <= kb + 4096, "{d}: {registers}");
            assert!(shared > kb * 5 / 4, "{d}: {shared}");
            assert!(3 * (registers + 1024) <= 227 * 1024);
        }
        // refused where it does not fit or saves nothing: head dimension 256, a cache of f16
        let mut wide = DecodeAttention::<f16, F8E4M3>::new(256, 1, 4, None);
        assert!(!wide.q_in_registers);
        wide.q_in_registers = true;
        assert!(tilus::trace(&wide, &[]).is_err());
        let mut odd = DecodeAttention::<f16>::new(64, 2, 24, None);
        odd.q_in_registers = true;
        assert!(tilus::trace(&odd, &[]).is_err());
    }

    /// Q straight from global memory over a cache of the queries' type plans no shared tile
    /// for it: at head dimension 128, three stages of keys and values (96 KB) and the
    /// barriers, twice in a multiprocessor's 228 KB (a KB of each block reserved); with Q's
    /// 16 KB tile they would not fit twice.
    #[test]
    fn q_from_global_memory_lets_three_stages_fit_twice() {
        let smem = |q_in_registers: bool| {
            let mut kernel = DecodeAttention::<f16>::new(128, 1, 4, None);
            kernel.stages = 3;
            kernel.q_in_registers = q_in_registers;
            let program = tilus::trace(&kernel, &[]).unwrap();
            let (_, plan) = tilus::passes::compile_program(program).unwrap();
            plan.smem_bytes as i32
        };
        let (registers, shared) = (smem(true), smem(false));
        assert!(
            registers >= 96 * 1024 && 2 * (registers + 1024) <= 228 * 1024,
            "{registers}"
        );
        assert!(
            shared >= 112 * 1024 && 2 * (shared + 1024) > 228 * 1024,
            "{shared}"
        );
    }
}
