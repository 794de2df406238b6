//! What both attention kernels do per block of keys besides the products: where a block's
//! queries and keys lie (read from the batch's offsets), which blocks of keys its rows see
//! and which of those need a mask, and the online softmax in base 2 (the running maximum and
//! sum of each row, the scale folded into the exponent).

use tilus::prelude::*;

/// The kernels' global views: Q, K, V and O as `[rows, heads · d]` (a TMA box of one head
/// is `[rows, d]` at column `h · d`), the log-sum-exp `[hq, rows_q]`, the offsets
/// `[batch + 1]`.
pub(crate) struct Views<T> {
    pub q: GlobalTensor<T>,
    pub k: GlobalTensor<T>,
    pub v: GlobalTensor<T>,
    pub o: GlobalTensor<T>,
    pub lse: GlobalTensor<f32>,
    pub cu_q: GlobalTensor<i32>,
    pub cu_kv: GlobalTensor<i32>,
}

impl<T: Element> Views<T> {
    /// The views of the arguments for heads of `d`.
    pub fn new(k: &mut Kernel, args: &Handles<super::FlashArgs<T>>, d: i32) -> Views<T> {
        let (batch, hq, hkv, rows_q, rows_kv) = (args.0, args.1, args.2, args.4, args.5);
        let (rq, rkv) = (Scalar::from(rows_q), Scalar::from(rows_kv));
        Views {
            q: k.global_view::<T>(args.7, [rq.clone(), hq * d]),
            k: k.global_view::<T>(args.8, [rkv.clone(), hkv * d]),
            v: k.global_view::<T>(args.9, [rkv, hkv * d]),
            o: k.global_view::<T>(args.12, [rq, hq * d]),
            lse: k.global_view::<f32>(args.13, [hq, rows_q]),
            cu_q: k.global_view::<i32>(args.10, [batch + 1]),
            cu_kv: k.global_view::<i32>(args.11, [batch + 1]),
        }
    }
}

/// The block of queries a block takes: `blockIdx.x`, or for causal attention the blocks in
/// reverse, so that the blocks with the most keys (the last queries) start first and the
/// short ones fill the last wave.
pub(crate) fn query_block(k: &mut Kernel, max_q: Val, bq: i32, causal: bool) -> Val {
    if causal {
        k.let_i32(cdiv(max_q, bq) - 1 - k.block_idx().x)
    } else {
        k.let_i32(k.block_idx().x)
    }
}

/// Where a block's sequence lies, read by every thread from the batch's offsets.
pub(crate) struct Place {
    /// The sequence's first row of Q, and of K and V.
    pub q_start: Val,
    pub kv_start: Val,
    /// Its queries and keys.
    pub seq_q: Val,
    pub seq_kv: Val,
    /// `seq_kv - seq_q`: query `i` sees keys up to `i + shift` (causal, bottom right).
    pub shift: Val,
}

impl Place {
    /// Sequence `b`'s place by the offsets `cu_q`, `cu_kv` (`[batch + 1]`).
    pub fn read(
        k: &mut Kernel,
        b: Val,
        cu_q: &GlobalTensor<i32>,
        cu_kv: &GlobalTensor<i32>,
    ) -> Place {
        let q_start = k.load_global_scalar(cu_q, [b]);
        let q_end = k.load_global_scalar(cu_q, [b + 1]);
        let kv_start = k.load_global_scalar(cu_kv, [b]);
        let kv_end = k.load_global_scalar(cu_kv, [b + 1]);
        let seq_q = k.let_i32(q_end - q_start);
        let seq_kv = k.let_i32(kv_end - kv_start);
        let shift = k.let_i32(seq_kv - seq_q);
        Place {
            q_start,
            kv_start,
            seq_q,
            seq_kv,
            shift,
        }
    }

    /// The blocks of `bkv` keys that queries `r0 .. r0 + rows` see (`steps`: all of them, or
    /// up to the last query's diagonal) and how many of the first need no mask (`free`: every
    /// key inside the sequence and, causal, at or before the first query's diagonal).
    pub fn key_blocks(
        &self,
        k: &mut Kernel,
        r0: Val,
        rows: i32,
        bkv: i32,
        causal: bool,
    ) -> (Val, Val) {
        let seen = k.var_i32(self.seq_kv);
        let unmasked = k.var_i32(self.seq_kv);
        if causal {
            k.if_((r0 + rows + self.shift).lt(seen), |k| {
                k.assign(seen, r0 + rows + self.shift)
            });
            k.if_((r0 + 1 + self.shift).lt(unmasked), |k| {
                k.assign(unmasked, r0 + 1 + self.shift)
            });
        }
        k.if_(seen.lt(0), |k| k.assign(seen, 0));
        k.if_(unmasked.lt(0), |k| k.assign(unmasked, 0));
        let steps = k.let_i32(cdiv(seen, bkv));
        let free = k.let_i32(unmasked / bkv);
        (steps, free)
    }
}

/// The mask of one block of scores: keys `j · bkv ..` against queries `r0 ..`.
#[derive(Clone, Copy)]
pub(crate) struct Mask {
    /// The block of keys.
    pub j: Val,
    /// The first query's row in its sequence.
    pub r0: Val,
}

/// The running maximum `m` (of raw scores) and sum `l` of each of `rows` rows.
pub(crate) struct OnlineSoftmax {
    pub m: RegisterTensor<f32>,
    pub l: RegisterTensor<f32>,
    rows: i32,
    bkv: i32,
    scale_log2: Val,
    causal: bool,
}

impl OnlineSoftmax {
    /// No key seen yet: `m = −∞`, `l = 0`.
    pub fn new(k: &mut Kernel, rows: i32, bkv: i32, scale_log2: Val, causal: bool) -> Self {
        OnlineSoftmax {
            m: k.register_tensor::<f32>([rows, 1], f64::NEG_INFINITY),
            l: k.register_tensor::<f32>([rows, 1], 0.0),
            rows,
            bkv,
            scale_log2,
            causal,
        }
    }

    /// Folds the block of raw scores `s` in: the raw scores (−∞ where `mask` says a key is
    /// past the sequence or the diagonal), the new maxima, `l` rescaled and summed. Returns
    /// `P` (each score's exponential against the new maximum) and `alpha`, the factor the
    /// output accumulated so far is to be rescaled by.
    ///
    /// The maxima are kept in raw scores, and the scale enters once per score, in
    /// `exp2(s · c − m · c)`: one multiply-add before the exponential, where scaling the
    /// scores first costs a multiply more per score (the softmax runs under the tensor cores'
    /// products and its arithmetic is what may not fit there). A positive scale keeps the
    /// maximum of raw scores the maximum of scaled ones; the host API refuses any other.
    pub fn update(
        &self,
        k: &mut Kernel,
        s: &RegisterTensor<f32>,
        place: &Place,
        mask: Option<Mask>,
    ) -> (RegisterTensor<f32>, RegisterTensor<f32>) {
        let keep = mask.map(|Mask { j, r0 }| {
            let key = k.arange([1, self.bkv], 1) + j * self.bkv;
            let query = k.arange([self.rows, 1], 0) + r0;
            let keep = key.clone().lt(place.seq_kv);
            if self.causal {
                keep.and(key.le(query + place.shift))
            } else {
                keep
            }
        });
        self.fold(k, s, keep)
    }

    /// [`OnlineSoftmax::update`] with the scores to keep given as a `[rows, bkv]` tile
    /// (`None`: all of them), for kernels whose rows are not consecutive queries.
    pub fn fold(
        &self,
        k: &mut Kernel,
        s: &RegisterTensor<f32>,
        keep: Option<Tile<bool>>,
    ) -> (RegisterTensor<f32>, RegisterTensor<f32>) {
        let (m, l) = (&self.m, &self.l);
        let c = self.scale_log2;
        let masked = keep.map(|keep| k.compute(where_(keep, *s, f32::NEG_INFINITY)));
        let x = masked.as_ref().unwrap_or(s);
        let row_max = k.max(*x, 1, true);
        let m_new = k.compute(row_max.maximum(*m));
        // the new maximum in base 2; a row that has seen no key yet keeps −∞: subtract 0
        // instead (no −∞ − −∞)
        let m_sub = k.compute(where_(m_new.eq_(f32::NEG_INFINITY), 0.0f32, m_new * c));
        let alpha = k.compute((*m * c - m_sub).exp2_approx());
        let p = k.compute((*x * c - m_sub).exp2_approx());
        let row_sum = k.sum(p, 1, true);
        k.assign_tile(l, *l * alpha + row_sum);
        k.assign_tile(m, m_new);
        (p, alpha)
    }

    /// The output `acc / l` in `T` and each row's natural log-sum-exp `m · c · ln 2 + ln l`
    /// (`c` the scale in base 2, so `c · ln 2` is the softmax scale) as a `[1, rows]` row; a
    /// row that saw no key: zeros and −∞.
    pub fn finish<T: Element>(
        &self,
        k: &mut Kernel,
        acc: &RegisterTensor<f32>,
    ) -> (RegisterTensor<T>, RegisterTensor<f32>) {
        let (m, l) = (&self.m, &self.l);
        let seen_any = l.gt(0.0f32);
        let out = k.compute(where_(seen_any.clone(), *acc / *l, 0.0f32).cast::<T>());
        let lse = k.compute(where_(
            seen_any,
            *m * self.scale_log2 * std::f32::consts::LN_2 + l.log(),
            f32::NEG_INFINITY,
        ));
        (out, lse)
    }

    /// Stores rows `r0 ..` of the output (`[rows, d]` at column `col` of `o`'s rows from
    /// `first`) and their log-sum-exp (row `h` of `lse`), the rows inside the sequence only.
    #[allow(clippy::too_many_arguments)]
    pub fn store<T: Element>(
        &self,
        k: &mut Kernel,
        acc: &RegisterTensor<f32>,
        (o, lse): (&GlobalTensor<T>, &GlobalTensor<f32>),
        place: &Place,
        r0: Val,
        (h, col): (Val, Scalar),
    ) {
        let (out, lse_rows) = self.finish::<T>(k, acc);
        let first = place.q_start + r0;
        let inside = (k.arange([self.rows, 1], 0) + r0).lt(place.seq_q);
        k.store_global_where(o, &out, (first.clone(), col), inside);
        let inside = (k.arange([1, self.rows], 1) + r0).lt(place.seq_q);
        k.store_global_where(lse, &lse_rows.transpose(), (Scalar::from(h), first), inside);
    }
}
