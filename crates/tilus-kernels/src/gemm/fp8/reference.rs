//! The FP8 GEMM's host reference: each code's exact value (FP8 values are exact in f64), the
//! products summed in f64, the scales applied; and the bound an output rounded to its type
//! after an f32 accumulation may stray from it.

use tilus::lowp::LowpElement;

/// `(scale_a · scale_b) · Σ_k a[i, k] · b[j, k]` for every `(i, j)`, in f64, with each row's
/// sum of magnitudes `Σ_k |a[i, k] · b[j, k]|` (scaled the same way), which bounds the f32
/// accumulation's error.
///
/// ```
/// use tilus::lowp::F8E4M3;
/// use tilus_kernels::gemm::fp8::reference::product;
/// let a = [F8E4M3::from_f32(2.0), F8E4M3::from_f32(-1.0)];
/// let b = [F8E4M3::from_f32(3.0), F8E4M3::from_f32(4.0)];
/// let (c, mag) = product((1, 1, 2), (&a, &b), (0.5, 1.0));
/// assert_eq!((c[0], mag[0]), (1.0, 5.0));
/// ```
pub fn product<T: LowpElement>(
    (m, n, k): (usize, usize, usize),
    (a, b): (&[T], &[T]),
    (scale_a, scale_b): (f32, f32),
) -> (Vec<f64>, Vec<f64>) {
    let format = T::DTYPE
        .float_format()
        .expect("the FP8 GEMM's operands are floats");
    let value = |x: &T| format.decode(u32::from(x.code()));
    let av: Vec<f64> = a.iter().map(value).collect();
    let bv: Vec<f64> = b.iter().map(value).collect();
    let s = f64::from(scale_a) * f64::from(scale_b);
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        let ar = &av[i * k..(i + 1) * k];
        for j in 0..n {
            let br = &bv[j * k..(j + 1) * k];
            let (mut sum, mut abs) = (0.0, 0.0);
            for (x, y) in ar.iter().zip(br) {
                sum += x * y;
                abs += (x * y).abs();
            }
            c[i * n + j] = s * sum;
            mag[i * n + j] = s.abs() * abs;
        }
    }
    (c, mag)
}

/// The product with fine-grained scales ([`super::MatmulFp8Blocks`]): each term
/// `a[i, x] · b[j, x]` times `a_scales[x / 128, i] · b_scales[j / 128, x / 128]`, in f64, and
/// the sum of the terms' magnitudes.
///
/// ```
/// use tilus::lowp::F8E4M3;
/// use tilus_kernels::gemm::fp8::reference::product_blocks;
/// let (a, b) = (vec![F8E4M3::from_f32(1.0); 256], vec![F8E4M3::from_f32(-1.0); 256]);
/// let (c, mag) = product_blocks((1, 1, 256), (&a, &b), (&[1.0, 2.0], &[0.5, 0.25]));
/// assert_eq!((c[0], mag[0]), (-128.0, 128.0));
/// ```
pub fn product_blocks<T: LowpElement>(
    (m, n, k): (usize, usize, usize),
    (a, b): (&[T], &[T]),
    (a_scales, b_scales): (&[f32], &[f32]),
) -> (Vec<f64>, Vec<f64>) {
    let format = T::DTYPE
        .float_format()
        .expect("the FP8 GEMM's operands are floats");
    let value = |x: &T| format.decode(u32::from(x.code()));
    let av: Vec<f64> = a.iter().map(value).collect();
    let bv: Vec<f64> = b.iter().map(value).collect();
    let k_blocks = k.div_ceil(128);
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut sum, mut abs) = (0.0, 0.0);
            for x in 0..k {
                let kb = x / 128;
                let s =
                    f64::from(a_scales[kb * m + i]) * f64::from(b_scales[j / 128 * k_blocks + kb]);
                let p = av[i * k + x] * bv[j * k + x] * s;
                sum += p;
                abs += p.abs();
            }
            c[i * n + j] = sum;
            mag[i * n + j] = abs;
        }
    }
    (c, mag)
}

/// How far an output of `unit_roundoff` (2⁻⁸ for bf16, 2⁻¹¹ for f16, 2⁻²⁴ for f32) may lie
/// from the exact `value` after `k` terms accumulated in f32 (sum of magnitudes `mag`): the
/// output's rounding, plus `k` roundings of f32 on the magnitudes (a bound, not an estimate),
/// plus the scale's own rounding in f32.
pub fn tolerance(value: f64, mag: f64, k: usize, unit_roundoff: f64) -> f64 {
    let f32_u = f64::from(f32::EPSILON) / 2.0;
    unit_roundoff * value.abs() + (k as f64 + 2.0) * f32_u * mag + f64::from(f32::MIN_POSITIVE)
}

/// The unit of the FP8 tensor cores' accumulator: it keeps 13 bits of mantissa (e8m13) and
/// truncates, so each of its roundings is within 2⁻¹³ of the running magnitude (measured on
/// Hopper by the public analyses of its FP8 matrix units; NVIDIA does not document it).
pub const FP8_ACCUMULATOR_UNIT: f64 = 1.0 / 8192.0;

/// [`tolerance`] for a GEMM whose K steps of 128 codes are summed by the FP8 tensor cores
/// before being promoted into f32 (as ours and cuBLASLt's are): on top of the f32 bound, one
/// accumulator rounding per WGMMA of k = 32 in a step and one for the step's sum, each at most
/// [`FP8_ACCUMULATOR_UNIT`] of the magnitudes summed (a model of the hardware, not a proof:
/// the GPU tests print how much of it the kernels use). An error of one term's size (a code
/// dropped, a scale misplaced) is still outside it once K is past a few hundred.
pub fn tensor_core_tolerance(value: f64, mag: f64, k: usize, unit_roundoff: f64) -> f64 {
    let per_step = f64::from(super::FP8_BLOCK_K / 32 + 1);
    tolerance(value, mag, k, unit_roundoff) + per_step * FP8_ACCUMULATOR_UNIT * mag
}

#[cfg(test)]
mod tests {
    use super::{product, product_blocks, tensor_core_tolerance, tolerance};
    use tilus::lowp::F8E4M3;

    fn codes(v: &[f32]) -> Vec<F8E4M3> {
        v.iter().map(|&x| F8E4M3::from_f32(x)).collect()
    }

    /// Values and magnitude sums of a product with cancellation, per tensor and per block
    /// (two blocks of K, two of N), and the bound's parts.
    #[test]
    fn products_values_magnitudes_and_the_bound() {
        // A [1, 2], B [2, 2]: c = [2·3 − 1·4, 2·(−0.5) − 1·1.5] = [2, −2.5]
        let (a, b) = (codes(&[2.0, -1.0]), codes(&[3.0, 4.0, -0.5, 1.5]));
        let (c, mag) = product((1, 2, 2), (&a, &b), (0.5, 4.0));
        assert_eq!((c, mag), (vec![4.0, -5.0], vec![20.0, 5.0]));
        // K of 256 (two blocks) and N of 130 (two blocks): a's row 1, b's rows ±1
        let a = codes(&[1.0; 256]);
        let mut bv = vec![1.0f32; 130 * 256];
        bv[129 * 256..].iter_mut().for_each(|x| *x = -1.0);
        let b = codes(&bv);
        // a_scales [2, 1]; b_scales [2, 2]
        let (c, mag) = product_blocks(
            (1, 130, 256),
            (&a, &b),
            (&[1.0, 2.0], &[1.0, 3.0, 0.5, 0.25]),
        );
        assert_eq!((c[0], mag[0]), (128.0 + 128.0 * 6.0, 128.0 + 128.0 * 6.0));
        assert_eq!((c[129], mag[129]), (-(64.0 + 64.0), 64.0 + 64.0));
        assert_eq!(c.len(), 130);
        // the output's rounding of the value, the accumulation's of the magnitudes
        let (u, f32_u) = (1.0 / 256.0, f64::from(f32::EPSILON) / 2.0);
        let t = tolerance(-8.0, 100.0, 10, u) - f64::from(f32::MIN_POSITIVE);
        assert!((t - (8.0 * u + 12.0 * f32_u * 100.0)).abs() < 1e-15, "{t}");
        // the tensor cores' part: five roundings of 2^-13 on the magnitudes
        let tc = tensor_core_tolerance(-8.0, 100.0, 10, u) - tolerance(-8.0, 100.0, 10, u);
        assert!((tc - 5.0 * 100.0 / 8192.0).abs() < 1e-12, "{tc}");
    }
}
