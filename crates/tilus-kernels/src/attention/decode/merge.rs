//! The second pass of split decoding: each row's partial outputs, one per split, weighed by
//! their log-sum-exp into the output (flash-decoding's reduction).
//!
//! Split `s` of a row left `O_s` (its keys' softmax-weighted values, normalized by its own
//! sum) and `lse_s`. The row's output is `Σ w_s · O_s / Σ w_s` with `w_s = exp(lse_s − max
//! lse)`, its log-sum-exp `max lse + ln Σ w_s`; a split that saw no key has `lse_s = −∞` and
//! weighs nothing. One warp group per row reads every split at once (a `[max_splits, d]`
//! tile, the rows past `splits` weighed by zero), from the decode kernel's partial slots.

use super::super::forward::AttentionElement;
use std::marker::PhantomData;
use tilus::layout::RegisterLayout;
use tilus::prelude::*;

/// The arguments: `rows` (the output's rows: batch · queries · query heads), `splits`, `hq`,
/// `hkv`, `queries`, the decode kernel's `slot` and blocks of rows per key-value head,
/// `o_part` and `lse_part`, both the decode kernel's partial slots (`DecodeArgs`: each row
/// the output, then the log-sum-exp in column `d`), `o [rows, d]` and `lse [rows]`.
pub type MergeArgs<T> = (
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    Ptr<f32>,
    Ptr<f32>,
    PtrMut<T>,
    PtrMut<f32>,
);

/// The merge for outputs of type `T`. Fields are compile-time hyperparameters.
pub struct DecodeMerge<T> {
    /// The head dimension: 64, 128 or 256.
    pub head_dim: i32,
    /// The most splits a launch may have: a power of two.
    pub max_splits: i32,
    _t: PhantomData<fn() -> T>,
}

impl<T> DecodeMerge<T> {
    /// The merge of up to `max_splits` splits (rounded up to a power of two) of heads of
    /// `head_dim`.
    pub fn new(head_dim: i32, max_splits: i32) -> DecodeMerge<T> {
        DecodeMerge {
            head_dim,
            max_splits: (max_splits.max(1) as u32).next_power_of_two() as i32,
            _t: PhantomData,
        }
    }
}

impl<T: AttentionElement> Script for DecodeMerge<T> {
    type Args = MergeArgs<T>;

    fn arg_names() -> &'static [&'static str] {
        &[
            "rows",
            "splits",
            "hq",
            "hkv",
            "queries",
            "slot",
            "row_blocks",
            "o_part",
            "lse_part",
            "o",
            "lse",
        ]
    }

    fn name(&self) -> String {
        format!("decode_merge_{}", T::NAME)
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (rows, splits, d, n) = (args.0, args.1, self.head_dim, self.max_splits);
        let (hq, hkv, nq, slot, row_blocks) = (args.2, args.3, args.4, args.5, args.6);
        k.blocks([rows]);
        k.warps(4);
        // it reads the slots the decode kernel just wrote: launched as its programmatic
        // dependent (when asked for), it waits for that kernel first
        k.wait_for_prior_grid();
        // the partial slots as `[slots, 64 · d]`: a row's splits are a column block of
        // consecutive slots
        let slots = Scalar::from(rows) / nq / hq * hkv * row_blocks * splits;
        // (each slot row `d + 4` wide: the output, then the log-sum-exp in column `d`)
        let width = d + 4;
        let o_part = k.global_view::<f32>(args.7, [slots.clone(), Scalar::from(width * 64)]);
        let lse_part = k.global_view::<f32>(args.8, [slots, Scalar::from(width * 64)]);
        let o = k.global_view::<T>(args.9, [Scalar::from(rows), Scalar::from(d)]);
        let lse = k.global_view::<f32>(args.10, [Scalar::from(rows), Scalar::from(1)]);

        // output row (b, t, h) is row `(t % tokens) · slot + h % group` of the slots of
        // block of rows `t / tokens` of key-value head `h / group`
        let row = k.let_i32(k.block_idx().x);
        let h = k.let_i32(row % hq);
        let t = k.let_i32(row / hq % nq);
        let b = k.let_i32(row / hq / nq);
        let group = k.let_i32(hq / hkv);
        let tokens = k.let_i32(Scalar::from(64) / slot);
        let r = k.let_i32(t % tokens * slot + h % group);
        let block = k.let_i32((b * hkv + h / group) * row_blocks + t / tokens);
        let first = k.let_i32(block * splits);
        let (out, total) =
            merge_row::<T>(k, (&o_part, &lse_part), (first, r), splits, (n, d, false));
        k.store_global(&o, &out, (row, 0));
        k.store_global(&lse, &total, (row, 0));
    }
}

/// One row's merge: row `r` of the slots `first .. first + splits` (of `[slots, 64 · (d + 4)]`
/// views of the partial slots, `o_part` and `lse_part` the same buffer), read at once as an
/// `[n, d]` tile (`n` a power of two, at least `splits`), weighed by their log-sum-exps. The
/// row's output in `T` (`[1, d]`) and its log-sum-exp (`[1, 1]`). Run by the whole group
/// that calls it: a block ([`DecodeMerge`]), or one warp (`in_warp`) of the decode kernel's
/// block that merges in the kernel, whose threads each hold every split of a few columns
/// (the weights in every thread), so that nothing crosses threads but the loads.
pub(super) fn merge_row<T: AttentionElement>(
    k: &mut Kernel,
    (o_part, lse_part): (&GlobalTensor<f32>, &GlobalTensor<f32>),
    (first, r): (Val, Val),
    splits: impl Into<Scalar>,
    (n, d, in_warp): (i32, i32, bool),
) -> (RegisterTensor<T>, RegisterTensor<f32>) {
    let splits = splits.into();
    let width = d + 4;
    let l = k.load_global_or(lse_part, (first, r * width + d), [n, 1], f64::NEG_INFINITY);
    // (the outputs requested beside the log-sum-exps: one round trip to memory, not two)
    let parts = k.load_global(o_part, (first, r * width), [n, d]);
    if in_warp {
        let (n, d) = (n as i64, d as i64);
        let columns =
            RegisterLayout::spatial(&[1, 32]).compose(&RegisterLayout::local(&[n, d / 32]));
        k.annotate_layout(&parts, columns);
        let every = RegisterLayout::replicate(2, 32).compose(&RegisterLayout::local(&[n, 1]));
        k.annotate_layout(&l, every);
    }
    // the rows past this row's splits are the next row's: weighed by zero
    let mine = k.arange([n, 1], 0).lt(splits.clone());
    let l = k.compute(where_(mine, l, f32::NEG_INFINITY));
    let top = k.max(l, 0, true);
    let top = k.compute(where_(top.eq_(f32::NEG_INFINITY), 0.0f32, top));
    let w = k.compute((l - top).exp());
    // the weights spread as the partial outputs' rows are (already, in a warp)
    let w_rows = if in_warp { w } else { k.convert_layout(&w) };
    // (the slots past this row's splits belong to other blocks, written or not)
    let mine = k.arange([n, 1], 0).lt(splits);
    let weighted = k.compute(where_(mine, parts * w_rows, 0.0f32));
    let num = k.sum(weighted, 0, true);
    let num = if in_warp { num } else { k.convert_layout(&num) };
    let den = k.sum(w, 0, true);
    let seen = den.gt(0.0f32);
    let out = k.compute(where_(seen.clone(), num / den, 0.0f32).cast::<T>());
    let total = k.compute(where_(seen, top + den.log(), f32::NEG_INFINITY));
    (out, total)
}

impl<T> Clone for DecodeMerge<T> {
    fn clone(&self) -> Self {
        DecodeMerge {
            _t: PhantomData,
            ..*self
        }
    }
}

impl<T> PartialEq for DecodeMerge<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.head_dim, self.max_splits) == (o.head_dim, o.max_splits)
    }
}

impl<T> Eq for DecodeMerge<T> {}

impl<T> std::hash::Hash for DecodeMerge<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.head_dim, self.max_splits).hash(h);
    }
}

impl<T> std::fmt::Debug for DecodeMerge<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeMerge")
            .field("head_dim", &self.head_dim)
            .field("max_splits", &self.max_splits)
            .finish()
    }
}
