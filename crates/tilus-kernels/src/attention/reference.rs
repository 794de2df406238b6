//! The host's attention in f64: the referee of the kernel's tests and benchmarks.

use super::{AttentionElement, Heads, Sequences};

/// The exact attention of one batch: `O` (`[rows_q, q_heads, head_dim]`) and the natural
/// log-sum-exp of each row's scaled scores (`[q_heads, rows_q]`), in f64 from the inputs'
/// values. Causal attention aligns the diagonal to the bottom right (query `i` of a sequence
/// sees keys up to `i + s_kv - s_q`); a row that sees no key gets zeros and −∞.
///
/// Panics on a batch the kernel's host API would refuse (it is a test's tool).
#[allow(clippy::too_many_arguments)]
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
    let mut scores = Vec::new();
    for b in 0..off.batch() {
        let (q0, q1) = (off.cu_q[b] as usize, off.cu_q[b + 1] as usize);
        let (k0, k1) = (off.cu_kv[b] as usize, off.cu_kv[b + 1] as usize);
        let shift = (k1 - k0) as i64 - (q1 - q0) as i64;
        for h in 0..hq {
            let hk = h / (hq / hkv);
            for i in 0..q1 - q0 {
                let row = q0 + i;
                let last = if causal {
                    (i as i64 + shift).min((k1 - k0) as i64 - 1)
                } else {
                    (k1 - k0) as i64 - 1
                };
                if last < 0 {
                    continue;
                }
                let qi = &q[(row * hq + h) * d..][..d];
                scores.clear();
                for j in 0..=last as usize {
                    let kj = &k[((k0 + j) * hkv + hk) * d..][..d];
                    let dot: f64 = qi
                        .iter()
                        .zip(kj)
                        .map(|(a, b)| a.to_f64() * b.to_f64())
                        .sum();
                    scores.push(dot * scale);
                }
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
                lse[h * rows_q + row] = max + sum.ln();
                let out = &mut o[(row * hq + h) * d..][..d];
                for (j, s) in scores.iter().enumerate() {
                    let p = (s - max).exp() / sum;
                    let vj = &v[((k0 + j) * hkv + hk) * d..][..d];
                    for (x, y) in out.iter_mut().zip(vj) {
                        *x += p * y.to_f64();
                    }
                }
            }
        }
    }
    (o, lse)
}
