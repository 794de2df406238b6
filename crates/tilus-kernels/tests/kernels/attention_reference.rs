//! What the attention tests share: random inputs, the rows of a batch, and the comparison of
//! a kernel's output with the exact f64 attention (`tilus_kernels::attention::reference`).

use tilus_bench::harness::Rng;
use tilus_kernels::attention::{reference, AttentionElement, Heads, Sequences};

/// Random values in (-1, 1).
pub fn inputs<T: AttentionElement>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f64(rng.next_f64() * 2.0 - 1.0))
        .collect()
}

/// Random Q, K and V for the batch and heads.
pub fn batch<T: AttentionElement>(
    rng: &mut Rng,
    seqs: &Sequences,
    heads: Heads,
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (rows_q, rows_kv) = rows(seqs);
    let (hq, hkv, d) = (heads.q_heads, heads.kv_heads, heads.head_dim);
    let q = inputs::<T>(rng, rows_q * hq * d);
    let k = inputs::<T>(rng, rows_kv * hkv * d);
    let v = inputs::<T>(rng, rows_kv * hkv * d);
    (q, k, v)
}

/// The batch's rows of Q and of K.
pub fn rows(seqs: &Sequences) -> (usize, usize) {
    match seqs {
        Sequences::Fixed {
            batch,
            seq_q,
            seq_kv,
        } => (batch * seq_q, batch * seq_kv),
        Sequences::Packed { cu_q, cu_kv } => (
            *cu_q.last().unwrap() as usize,
            *cu_kv.last().unwrap() as usize,
        ),
    }
}

/// Checks O and the log-sum-exp against the exact attention: O within the element type's
/// rounding of P (rounded before `O += P·V`) and of O itself, the log-sum-exp within 1e-3
/// (−∞ exactly where a row sees no key); NaN fails. `what` names the case in failures.
pub fn assert_matches<T: AttentionElement>(
    what: &str,
    (seqs, heads, scale, causal): (&Sequences, Heads, f32, bool),
    (q, k, v): (&[T], &[T], &[T]),
    (o, lse): (&[T], &[f32]),
) {
    let (rows_q, _) = rows(seqs);
    let (hq, d) = (heads.q_heads, heads.head_dim);
    let (want_o, want_lse) = reference::attention(seqs, heads, scale as f64, causal, q, k, v);
    let eps = if T::NAME == "bf16" {
        1.0 / 128.0
    } else {
        1.0 / 1024.0
    };
    for (i, (got, want)) in o.iter().zip(&want_o).enumerate() {
        let got = got.to_f64();
        assert!(
            (got - want).abs() <= 2.0 * eps * (1.0 + want.abs()),
            "{what}: o[{i}] (row {}, head {}, column {}) = {got}, expected {want}",
            i / (hq * d),
            i / d % hq,
            i % d
        );
    }
    for (i, (&got, &want)) in lse.iter().zip(&want_lse).enumerate() {
        let ok = if want == f64::NEG_INFINITY {
            got == f32::NEG_INFINITY
        } else {
            (got as f64 - want).abs() <= 1e-3 * (1.0 + want.abs())
        };
        assert!(
            ok,
            "{what}: lse[{i}] (head {}, row {}) = {got}, expected {want}",
            i / rows_q,
            i % rows_q
        );
    }
}
