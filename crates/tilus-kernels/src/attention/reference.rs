//! The host's attention in f64: the referee of the kernel's tests and benchmarks.

use super::decode::CacheElement;
use super::{AttentionElement, Heads, Sequences};

/// One row's exact attention: the output of query `row` (a row of Q, counted over the whole
/// packed batch) at query head `h`, and its natural log-sum-exp; zeros and −∞ for a row that
/// sees no key. `q`, `k`, `v` as [`attention`] takes them.
#[allow(clippy::too_many_arguments)]
pub fn attention_row<T: AttentionElement>(
    seqs: &Sequences,
    heads: Heads,
    scale: f64,
    causal: bool,
    (q, k, v): (&[T], &[T], &[T]),
    row: usize,
    h: usize,
) -> (Vec<f64>, f64) {
    let off = seqs.offsets().expect("a valid batch");
    let (hq, hkv, d) = (heads.q_heads, heads.kv_heads, heads.head_dim);
    let b = off.cu_q.partition_point(|&c| c as usize <= row) - 1;
    let (q0, q1) = (off.cu_q[b] as usize, off.cu_q[b + 1] as usize);
    let (k0, k1) = (off.cu_kv[b] as usize, off.cu_kv[b + 1] as usize);
    let i = row - q0;
    let shift = (k1 - k0) as i64 - (q1 - q0) as i64;
    let last = if causal {
        (i as i64 + shift).min((k1 - k0) as i64 - 1)
    } else {
        (k1 - k0) as i64 - 1
    };
    if last < 0 {
        return (vec![0.0; d], f64::NEG_INFINITY);
    }
    let hk = h / (hq / hkv);
    let qi = &q[(row * hq + h) * d..][..d];
    let keys = (0..=last as usize).map(|j| {
        let at = ((k0 + j) * hkv + hk) * d;
        (&k[at..][..d], &v[at..][..d])
    });
    softmax_row(qi, keys, scale, 1.0)
}

/// The exact output and natural log-sum-exp of query `qi` over `keys` (each a key and its
/// value): scores `scale · q·k` in f64, their softmax, the weighted sum of the values times
/// `value_scale`; zeros and −∞ over no key.
pub(crate) fn softmax_row<'a, T: CacheElement, C: CacheElement + 'a>(
    qi: &[T],
    keys: impl Iterator<Item = (&'a [C], &'a [C])>,
    scale: f64,
    value_scale: f64,
) -> (Vec<f64>, f64) {
    let (scores, values): (Vec<f64>, Vec<&[C]>) = keys
        .map(|(kj, vj)| {
            let dot: f64 = qi
                .iter()
                .zip(kj)
                .map(|(a, b)| a.to_f64() * b.to_f64())
                .sum();
            (dot * scale, vj)
        })
        .unzip();
    let mut out = vec![0.0; qi.len()];
    if scores.is_empty() {
        return (out, f64::NEG_INFINITY);
    }
    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
    for (s, vj) in scores.iter().zip(values) {
        let p = (s - max).exp() / sum;
        for (x, y) in out.iter_mut().zip(vj) {
            *x += p * y.to_f64() * value_scale;
        }
    }
    (out, max + sum.ln())
}

/// The exact attention of one batch: `O` (`[rows_q, q_heads, head_dim]`) and the natural
/// log-sum-exp of each row's scaled scores (`[q_heads, rows_q]`), in f64 from the inputs'
/// values. Causal attention aligns the diagonal to the bottom right (query `i` of a sequence
/// sees keys up to `i + s_kv - s_q`); a row that sees no key gets zeros and −∞.
///
/// Panics on a batch the kernel's host API would refuse (it is a test's tool).
pub fn attention<T: AttentionElement>(
    seqs: &Sequences,
    heads: Heads,
    scale: f64,
    causal: bool,
    q: &[T],
    k: &[T],
    v: &[T],
) -> (Vec<f64>, Vec<f64>) {
    let off = seqs.offsets().expect("a valid batch");
    let (hq, hkv, d) = (heads.q_heads, heads.kv_heads, heads.head_dim);
    let (rows_q, rows_kv) = (off.rows_q(), off.rows_kv());
    assert_eq!(q.len(), rows_q * hq * d, "q's length");
    assert_eq!(k.len(), rows_kv * hkv * d, "k's length");
    assert_eq!(v.len(), rows_kv * hkv * d, "v's length");
    let mut o = vec![0.0; rows_q * hq * d];
    let mut lse = vec![f64::NEG_INFINITY; hq * rows_q];
    for row in 0..rows_q {
        for h in 0..hq {
            let (out, l) = attention_row(seqs, heads, scale, causal, (q, k, v), row, h);
            o[(row * hq + h) * d..][..d].copy_from_slice(&out);
            lse[h * rows_q + row] = l;
        }
    }
    (o, lse)
}
