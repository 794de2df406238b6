//! Attention in the flash style on `dot` (`mma.sync`), for one head: `O = softmax(Q·Kᵀ/√d)·V`
//! with Q, K and V `[seq, 64]` in f16 and O in f32, causal (query `i` sees keys `0 ..= i`) or
//! not, at any `seq ≥ 1`.
//!
//! Each block takes 64 queries and walks the keys 64 at a time, keeping for each query the
//! running maximum `m` of its scores, the running sum `l` of their exponentials and the
//! running output `acc`, all rescaled when the maximum grows (the online softmax, in base 2
//! with the scale folded in). Two things a first version needs the language for:
//!
//! - **masks**: the keys past `seq`, and for causal attention the keys after the query, are
//!   −∞ before the exponential: a comparison of index tiles (`k.arange`) and `where_`;
//! - **a layout conversion**: the probabilities `P` are the first product's accumulator and
//!   the second product's operand; `k.convert_layout` moves them between the two layouts
//!   (`tilus ir` says whether through registers or shared memory). Here the 64 × 64 product
//!   spreads its four warps over rows and columns, and the operand's layout spreads them over
//!   rows only, so `P` goes through 16 KiB of shared memory behind two barriers; where every
//!   thread holds its part already (one warp per 16 rows), the conversion is free.
//!
//! ```
//! use first_kernels::causal_attention::CausalAttention;
//! use half::f16;
//!
//! let seq = 70;
//! let x: Vec<f16> = (0..seq * 64).map(|i| f16::from_f32(((i * 7) % 13) as f32 / 13.0 - 0.5)).collect();
//! let mut o = vec![f32::NAN; seq * 64];
//! let s = CausalAttention { causal: true };
//! tilus::interpret(&s, (seq as i32, &x[..], &x[..], &x[..], &mut o[..])).unwrap();
//! let want = CausalAttention::reference(&x, &x, &x, seq, true);
//! assert!(o.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 2e-3 * w.abs().max(1.0)));
//! ```

use half::f16;
use tilus::prelude::*;

/// The head dimension.
pub const D: i32 = 64;
/// Queries per block, and keys per step.
pub const BLOCK: i32 = 64;
/// `log2(e) / √D`: scores times this are in base-2 units.
const SCALE_LOG2: f64 = std::f64::consts::LOG2_E / 8.0;

/// One head of attention, causal or not.
#[derive(Clone, Copy, Debug, Hash)]
pub struct CausalAttention {
    pub causal: bool,
}

impl CausalAttention {
    /// The host's answer in f64 for `q`, `k`, `v` `[seq, 64]` row-major.
    pub fn reference(q: &[f16], k: &[f16], v: &[f16], seq: usize, causal: bool) -> Vec<f32> {
        let d = D as usize;
        let mut o = vec![0.0f32; seq * d];
        for i in 0..seq {
            let keys = if causal { i + 1 } else { seq };
            let s: Vec<f64> = (0..keys)
                .map(|j| {
                    (0..d)
                        .map(|x| {
                            f64::from(q[i * d + x].to_f32()) * f64::from(k[j * d + x].to_f32())
                        })
                        .sum::<f64>()
                        / (d as f64).sqrt()
                })
                .collect();
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            for c in 0..d {
                let acc: f64 = (0..keys)
                    .map(|j| e[j] * f64::from(v[j * d + c].to_f32()))
                    .sum();
                o[i * d + c] = (acc / sum) as f32;
            }
        }
        o
    }
}

impl Script for CausalAttention {
    type Args = (i32, Ptr<f16>, Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["seq", "q", "k", "v", "o"]
    }
    fn body(&self, k: &mut Kernel, (seq, q, kp, vp, o): Handles<Self::Args>) {
        k.blocks([cdiv(seq, BLOCK)]);
        k.warps(4);
        let gq = k.global_view(q, [seq, Val::constant(D)]);
        let gk = k.global_view(kp, [seq, Val::constant(D)]);
        let gv = k.global_view(vp, [seq, Val::constant(D)]);
        let go = k.global_view(o, [seq, Val::constant(D)]);
        let q0 = k.let_i32(k.block_idx().x * BLOCK);
        let tq = k.load_global(&gq, (q0, 0), [BLOCK, D]);
        let m = k.register_tensor::<f32>([BLOCK, 1], f64::NEG_INFINITY);
        let l = k.register_tensor::<f32>([BLOCK, 1], 0.0);
        let acc = k.register_tensor::<f32>([BLOCK, D], 0.0);
        // causal: the key blocks up to this block's last query (the diagonal block is the
        // block's own: its first query is below `seq`)
        let steps = if self.causal {
            k.let_i32(k.block_idx().x + 1)
        } else {
            k.let_i32(cdiv(seq, BLOCK))
        };
        let causal = self.causal;
        k.for_range(0, steps, 1, |k, j| {
            let k0 = k.let_i32(j * BLOCK);
            let tk = k.load_global(&gk, (k0, 0), [BLOCK, D]);
            let tv = k.load_global(&gv, (k0, 0), [BLOCK, D]);
            let s = k.register_tensor::<f32>([BLOCK, BLOCK], 0.0);
            k.dot(&tq, &tk.transpose(), &s, &s);
            // masks: keys past the sequence, and (causal) keys after the query
            let key = k.arange([1, BLOCK], 1) + k0;
            let query = k.arange([BLOCK, 1], 0) + q0;
            let keep = if causal {
                key.clone().lt(seq).and(key.le(query))
            } else {
                key.lt(seq)
            };
            let x = k.compute(where_(keep, s * SCALE_LOG2, f32::NEG_INFINITY));
            // the online softmax: a larger maximum rescales what was summed so far
            let row_max = k.max(x, 1, true);
            let m_new = k.compute(row_max.maximum(m));
            let alpha = k.compute((m - m_new).exp2());
            let p = k.compute((x - m_new).exp2());
            let row_sum = k.sum(p, 1, true);
            k.assign_tile(&l, l * alpha + row_sum);
            k.assign_tile(&acc, acc * alpha);
            // P: the first product's accumulator, the second's operand
            let p16 = k.cast::<f16>(&p);
            let pa = k.convert_layout(&p16);
            k.dot(&pa, &tv, &acc, &acc);
            k.assign_tile(&m, m_new);
        });
        let out = k.compute(acc / l);
        k.store_global(&go, &out, (q0, 0));
    }
}
