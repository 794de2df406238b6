//! Host references of the row-wise and element-wise ops, in f64, and the closeness check the
//! ops' tests share (on the interpreter and on the GPU).

use half::f16;
use tilus_bench::harness::Rng;

/// `n` values in `[lo, hi)` from `rng`, rounded to f16.
pub fn random(n: usize, rng: &mut Rng, lo: f64, hi: f64) -> Vec<f16> {
    (0..n)
        .map(|_| f16::from_f64(lo + (hi - lo) * rng.next_f64()))
        .collect()
}

/// Every output within `rtol · |expect| + atol` of the reference, and none NaN.
pub fn assert_close(what: &str, actual: &[f16], expect: &[f64], (rtol, atol): (f64, f64)) {
    assert_eq!(actual.len(), expect.len(), "{what}");
    for (i, (a, e)) in actual.iter().zip(expect).enumerate() {
        let a = a.to_f64();
        assert!(
            (a - e).abs() <= rtol * e.abs() + atol,
            "{what}: element {i} is {a}, the reference {e}"
        );
    }
}

/// The softmax of each row of `x`.
pub fn softmax(x: &[f16], cols: usize) -> Vec<f64> {
    let mut out = vec![];
    for row in x.chunks(cols) {
        let m = row.iter().map(|v| v.to_f64()).fold(f64::MIN, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v.to_f64() - m).exp()).collect();
        let s: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| v / s));
    }
    out
}

/// The layer norm of each row of `x`.
pub fn layer_norm(x: &[f16], (w, b): (&[f16], &[f16]), eps: f32) -> Vec<f64> {
    let cols = w.len();
    let mut out = vec![];
    for row in x.chunks(cols) {
        let v: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
        let mean = v.iter().sum::<f64>() / cols as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / cols as f64;
        let rstd = 1.0 / (var + eps as f64).sqrt();
        out.extend(
            v.iter()
                .enumerate()
                .map(|(j, x)| (x - mean) * rstd * w[j].to_f64() + b[j].to_f64()),
        );
    }
    out
}

/// The RMSNorm of each row of `x`.
pub fn rms_norm(x: &[f16], w: &[f16], eps: f32) -> Vec<f64> {
    let cols = w.len();
    let mut out = vec![];
    for row in x.chunks(cols) {
        let v: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
        let mean_square = v.iter().map(|x| x * x).sum::<f64>() / cols as f64;
        let rrms = 1.0 / (mean_square + eps as f64).sqrt();
        out.extend(v.iter().enumerate().map(|(j, x)| x * rrms * w[j].to_f64()));
    }
    out
}

/// `act(alpha · A·Bᵀ + beta · D + bias)` in f64, A `[m, k]`, B `[n, k]`, D `[m, n]`, bias `[n]`.
pub fn fused_epilogue<A: tilus_kernels::gemm::epilogue::Activation>(
    (m, n, k): (usize, usize, usize),
    (alpha, beta): (f32, f32),
    (a, b, d, bias): (&[f16], &[f16], &[f16], &[f16]),
) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k)
                .map(|p| a[i * k + p].to_f64() * b[j * k + p].to_f64())
                .sum();
            let x =
                f64::from(alpha) * dot + f64::from(beta) * d[i * n + j].to_f64() + bias[j].to_f64();
            out[i * n + j] = A::reference(x);
        }
    }
    out
}

/// Softmax's tolerance: f32 arithmetic and one f16 rounding, one subnormal step absolute.
pub const SOFTMAX_TOLERANCE: (f64, f64) = (1e-3, 6e-8);
/// The norms' tolerance: about two f16 rounding steps.
pub const NORM_TOLERANCE: (f64, f64) = (2e-3, 2e-3);
