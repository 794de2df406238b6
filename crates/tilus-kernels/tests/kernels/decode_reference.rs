//! What the decode tests share: a random step over a cache of either layout (the pages of
//! each sequence shuffled, every position no context holds set to NaN, as a cache's unused
//! rows may be), of the attention's type or of scaled e4m3 codes, and the comparison of an
//! output with the exact f64 decode step (`tilus_kernels::attention::decode::reference`).

use tilus_bench::harness::Rng;
use tilus_kernels::attention::decode::{
    head_scales, reference, Cache, CacheElement, Decode, KvLayout,
};
use tilus_kernels::attention::{AttentionElement, Heads};

use crate::attention_reference::inputs;

/// A decode step's inputs on the host: queries of `T`, a cache of `C`.
pub struct Step<T, C = T> {
    pub call: Decode,
    pub q: Vec<T>,
    pub k: Vec<C>,
    pub v: Vec<C>,
    /// A cache of scaled codes: the keys' scale of each key-value head, then the values'.
    pub scales: Option<Vec<f32>>,
    pub table: Option<Vec<i32>>,
    pub lens: Vec<i32>,
}

impl<T: AttentionElement, C: CacheElement> Step<T, C> {
    /// Random Q, a cache of `lens` contexts in `page_size` pages (`None`: contiguous, of
    /// capacity `max(lens)` rounded up to 16) shuffled among twice the pages needed. A cache
    /// of scaled codes holds keys and values of another magnitude in each head (the keys'
    /// growing with the head, the values' shrinking), quantized with
    /// [`head_scales`]' scales.
    pub fn random(
        rng: &mut Rng,
        (queries, heads): (usize, Heads),
        lens: &[i32],
        page_size: Option<usize>,
    ) -> Self {
        let (batch, max) = (lens.len(), *lens.iter().max().unwrap() as usize);
        let (hq, hkv, d) = (heads.q_heads, heads.kv_heads, heads.head_dim);
        let (layout, table, rows) = match page_size {
            None => {
                let capacity = max.div_ceil(16) * 16;
                (KvLayout::Contiguous { capacity }, None, batch * capacity)
            }
            Some(ps) => {
                let pages_per_seq = max.div_ceil(ps);
                let pages = 2 * batch * pages_per_seq;
                // a random permutation of the pages; each sequence takes its share
                let mut order: Vec<i32> = (0..pages as i32).collect();
                for i in (1..pages).rev() {
                    order.swap(i, (rng.next_f64() * (i + 1) as f64) as usize % (i + 1));
                }
                let table = order[..batch * pages_per_seq].to_vec();
                let layout = KvLayout::Paged {
                    page_size: ps,
                    pages,
                    pages_per_seq,
                };
                (layout, Some(table), pages * ps)
            }
        };
        let call = Decode {
            batch,
            queries,
            heads,
            layout,
            max_context: max,
        };
        let q = inputs::<T>(rng, batch * queries * hq * d);
        let mut k = vec![f64::NAN; rows * hkv * d];
        let mut v = k.clone();
        // each head's magnitude: 1 for a cache of the attention's type (values of `T`)
        let (mag_k, mag_v) = if C::SCALED {
            let mag_k: Vec<f64> = (0..hkv).map(|h| 0.5 + h as f64).collect();
            let mag_v: Vec<f64> = (0..hkv).map(|h| 3.0 / (1.0 + h as f64)).collect();
            (mag_k, mag_v)
        } else {
            (vec![1.0; hkv], vec![1.0; hkv])
        };
        let mut draw = |mag: &[f64]| -> Vec<f64> {
            let x = inputs::<T>(rng, hkv * d);
            x.iter()
                .enumerate()
                .map(|(i, x)| x.to_f64() * mag[i / d])
                .collect()
        };
        for (b, &len) in lens.iter().enumerate() {
            for p in 0..len as usize {
                let r = match (&call.layout, &table) {
                    (KvLayout::Contiguous { capacity }, _) => b * capacity + p,
                    (
                        KvLayout::Paged {
                            page_size,
                            pages_per_seq,
                            ..
                        },
                        Some(t),
                    ) => t[b * pages_per_seq + p / page_size] as usize * page_size + p % page_size,
                    _ => unreachable!(),
                };
                let at = r * hkv * d..(r + 1) * hkv * d;
                k[at.clone()].copy_from_slice(&draw(&mag_k));
                v[at].copy_from_slice(&draw(&mag_v));
            }
        }
        let (ks, vs) = (head_scales::<C>(&k, hkv, d), head_scales::<C>(&v, hkv, d));
        let codes = |x: &[f64], s: &[f32]| -> Vec<C> {
            x.iter()
                .enumerate()
                .map(|(i, x)| C::from_f64(x / s[i / d % hkv] as f64))
                .collect()
        };
        Step {
            call,
            q,
            k: codes(&k, &ks),
            v: codes(&v, &vs),
            scales: C::SCALED.then(|| [ks, vs].concat()),
            table,
            lens: lens.to_vec(),
        }
    }

    /// The scale of element `i` of a cache row (keys: `which` 0, values: 1).
    fn scale_at(&self, which: usize, i: usize) -> f64 {
        let (hkv, d) = (self.call.heads.kv_heads, self.call.heads.head_dim);
        self.scales
            .as_ref()
            .map_or(1.0, |s| s[which * hkv + i / d % hkv] as f64)
    }

    /// The cache rows of the new tokens, sequence by sequence, token by token.
    pub fn new_token_rows(&self) -> Vec<usize> {
        let nq = self.call.queries;
        let mut rows = Vec::new();
        for (b, &len) in self.lens.iter().enumerate() {
            for t in 0..nq {
                let p = len as usize - nq + t;
                rows.push(match (&self.call.layout, &self.table) {
                    (KvLayout::Contiguous { capacity }, _) => b * capacity + p,
                    (
                        KvLayout::Paged {
                            page_size,
                            pages_per_seq,
                            ..
                        },
                        Some(tab),
                    ) => {
                        tab[b * pages_per_seq + p / page_size] as usize * page_size + p % page_size
                    }
                    _ => unreachable!(),
                });
            }
        }
        rows
    }

    /// Takes the new tokens' keys and values out of the cache (NaN in their place) and returns
    /// them, `[batch, queries, kv_heads · head_dim]` each, in `T` (a code times its scale):
    /// what an append writes back.
    pub fn take_new_tokens(&mut self) -> (Vec<T>, Vec<T>) {
        let width = self.call.heads.kv_heads * self.call.heads.head_dim;
        let rows = self.new_token_rows();
        let mut take = |which: usize| -> Vec<T> {
            let mut out = Vec::new();
            for &r in &rows {
                for i in 0..width {
                    let scale = self.scale_at(which, i);
                    let cache = if which == 0 { &mut self.k } else { &mut self.v };
                    let code = std::mem::replace(&mut cache[r * width + i], C::from_f64(f64::NAN));
                    out.push(T::from_f64(code.to_f64() * scale));
                }
            }
            out
        };
        (take(0), take(1))
    }

    /// The cache's buffers.
    pub fn cache(&self) -> Cache<'_, [C], [i32]> {
        Cache {
            k: &self.k,
            v: &self.v,
            table: self.table.as_deref(),
            lens: &self.lens,
            scales: self.scales.as_deref(),
        }
    }

    /// Checks `o` and `lse` against the exact step: O within the element type's rounding
    /// of P and of O itself, the log-sum-exp within 1e-3; NaN fails.
    pub fn assert_matches(&self, what: &str, scale: f32, (o, lse): (&[T], &[f32])) {
        let (want_o, want_lse) =
            reference::decode(&self.call, scale as f64, &self.q, &self.cache());
        let d = self.call.heads.head_dim;
        let eps = if T::NAME == "bf16" {
            1.0 / 128.0
        } else {
            1.0 / 1024.0
        };
        for (i, (got, want)) in o.iter().zip(&want_o).enumerate() {
            let got = got.to_f64();
            assert!(
                (got - want).abs() <= 2.0 * eps * (1.0 + want.abs()),
                "{what}: o[{i}] (row {}, column {}) = {got}, expected {want}",
                i / d,
                i % d
            );
        }
        for (i, (&got, &want)) in lse.iter().zip(&want_lse).enumerate() {
            assert!(
                (got as f64 - want).abs() <= 1e-3 * (1.0 + want.abs()),
                "{what}: lse[{i}] = {got}, expected {want}"
            );
        }
    }
}
