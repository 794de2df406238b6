//! The quantized matmul's reference, shared by its interpreter and GPU tests: every weight
//! dequantized exactly on the host and rounded to f16, the product summed in f64, and the check
//! of C against it.

use half::f16;
use tilus::lowp::LowpElement;
use tilus_bench::harness::Rng;
use tilus_kernels::quant::{quantize, Quantized, Scheme};

/// Random inputs of an `(m, n, k)` product: `A` f16 and `W` in `[-1, 1)`, `W` quantized into
/// `T` by `scheme` on the host.
pub fn inputs<T: LowpElement>(
    rng: &mut Rng,
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
) -> (Vec<f16>, Quantized) {
    let w: Vec<f32> = (0..n * k)
        .map(|_| (rng.next_f64() * 2.0 - 1.0) as f32)
        .collect();
    let a: Vec<f16> = (0..m * k)
        .map(|_| f16::from_f64(rng.next_f64() * 2.0 - 1.0))
        .collect();
    (a, quantize::<T>(&w, (n, k), scheme))
}

/// A seed from `TILUS_TEST_SEED`, or a fresh one (printed, so that a failure can be replayed).
pub fn seed() -> u64 {
    let s = std::env::var("TILUS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        });
    println!("inputs from seed {s} (replay with TILUS_TEST_SEED={s})");
    s
}

/// `C = A · dequant(W)ᵀ` in f64 with every dequantized weight rounded to f16 first: what both
/// kernels multiply (the tensor cores' f16 operands; the few-rows kernel rounds the same way),
/// summed exactly.
pub fn reference(a: &[f16], w: &Quantized, m: usize) -> (Vec<f64>, Vec<f64>) {
    product(a, w, m, |x| f16::from_f64(x).to_f64())
}

/// `C = A · dequant(W)ᵀ` in f64 on the exact dequantized weights (what the fragment kernel
/// with its sums scaled by group computes: `Σ a·q` per group, then the scale).
pub fn reference_exact(a: &[f16], w: &Quantized, m: usize) -> (Vec<f64>, Vec<f64>) {
    product(a, w, m, |x| x)
}

/// The product on the weights dequantized, then passed through `round`.
fn product(a: &[f16], w: &Quantized, m: usize, round: impl Fn(f64) -> f64) -> (Vec<f64>, Vec<f64>) {
    let (n, k) = w.shape;
    let deq: Vec<f64> = (0..n * k)
        .map(|i| round(w.dequantized(i / k, i % k)))
        .collect();
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for x in 0..k {
                let p = a[i * k + x].to_f64() * deq[j * k + x];
                c[i * n + j] += p;
                mag[i * n + j] += p.abs();
            }
        }
    }
    (c, mag)
}

/// Every element of C (`[m, n]` f16) within the f16 output's rounding of the exact sum (and
/// the f32 sums' error, bounded by the terms' magnitude), none NaN.
pub fn assert_matches(what: &str, c: &[f16], (want, mag): (Vec<f64>, Vec<f64>), n: usize) {
    assert_eq!(c.len(), want.len(), "{what}");
    for (i, (&got, (&e, &s))) in c.iter().zip(want.iter().zip(&mag)).enumerate() {
        let got = got.to_f64();
        let tol = e.abs() * 2f64.powi(-10) + s * 1e-6 + 1e-7;
        assert!(
            (got - e).abs() <= tol,
            "{what}: C[{}, {}] = {got}, exactly {e}",
            i / n,
            i % n
        );
    }
}
