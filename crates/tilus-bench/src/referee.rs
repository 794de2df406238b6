//! The exact referee of a matmul check. Where the output under test and cuBLAS's differ beyond
//! the tolerance, the disputed elements are recomputed in f64 from the same inputs (f16 and
//! bf16 products are exact in f64, and their sum's error is far below either type's rounding),
//! and each side is measured against that exact value: an element is the kernel's fault only
//! if the kernel is farther from it than rounding to the output type after an f32
//! accumulation allows. So a reference that is itself off (cuBLAS with reduced-precision
//! reductions, say) cannot fail a correct kernel, and the report says which side was off.

use crate::compare::{Check, Tolerance};
use crate::operand::Operand;

/// At most this many disputed elements are recomputed per check; the rest stay mismatches (a
/// kernel that wrong fails anyway, and the recomputation costs `k` products per element).
pub const MAX_REFEREED: usize = 4096;

/// The unit roundoff of the f32 accumulator.
const F32_UNIT: f64 = 1.0 / (1u64 << 24) as f64;

/// The distance between `x` and the next value of `T` away from zero (`T`'s spacing at `x`,
/// subnormals included).
fn spacing<T: Operand>(x: f64) -> f64 {
    let exp = x.abs().log2().floor().max(T::MIN_NORMAL_EXP as f64);
    (exp - T::MANTISSA_BITS as f64).exp2()
}

/// How far an output of `T` may lie from the exact dot product `exact`, whose terms' absolute
/// values sum to `magnitude`, over `k` terms: the f32 accumulation's error bound
/// (`k · 2⁻²⁴ · Σ|aᵢbᵢ|`) and half a spacing of `T` for the final rounding.
pub fn allowed<T: Operand>(exact: f64, magnitude: f64, k: usize) -> f64 {
    let accumulation = k as f64 * F32_UNIT * magnitude;
    accumulation + 0.5 * spacing::<T>(exact.abs() + accumulation)
}

/// Recomputes the disputed elements of `check` (`actual` against `expect`, outside `tol`) of
/// `C = A · Bᵀ` with A `[m, k]` and B `[n, k]`, and records in `check` how many were
/// recomputed, how many of those the output got right, and where the reference was off.
pub fn referee<T: Operand>(
    check: &mut Check,
    (a, b): (&[T], &[T]),
    (m, n, k): (usize, usize, usize),
    (actual, expect): (&[T], &[T]),
    tol: Tolerance,
) {
    let disputed = actual
        .iter()
        .zip(expect)
        .enumerate()
        .filter(|(_, (x, y))| {
            let (x, y) = (x.to_f64(), y.to_f64());
            x.is_finite() && ((x - y).abs() > tol.atol + tol.rtol * y.abs() || !y.is_finite())
        })
        .take(MAX_REFEREED)
        .map(|(i, _)| i);
    for i in disputed {
        let (row, col) = (i / n.max(1), i % n.max(1));
        if row >= m {
            break;
        }
        let (ar, br) = (&a[row * k..(row + 1) * k], &b[col * k..(col + 1) * k]);
        let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
        for (x, y) in ar.iter().zip(br) {
            let t = x.to_f64() * y.to_f64();
            exact += t;
            magnitude += t.abs();
        }
        let bound = allowed::<T>(exact, magnitude, k);
        check.refereed += 1;
        if (actual[i].to_f64() - exact).abs() <= bound {
            check.refereed_ok += 1;
        }
        let reference = expect[i].to_f64();
        if !reference.is_finite() || (reference - exact).abs() > bound {
            check.reference_off += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare_within;
    use half::{bf16, f16};

    fn dispute<T: Operand>(
        actual: &[T],
        expect: &[T],
        a: &[T],
        b: &[T],
        mnk: (usize, usize, usize),
    ) -> Check {
        let mut c = compare_within(
            actual.iter().map(|x| x.to_f64()),
            expect.iter().map(|x| x.to_f64()),
            T::TOLERANCE,
        );
        referee(&mut c, (a, b), mnk, (actual, expect), T::TOLERANCE);
        c
    }

    #[test]
    fn a_reference_that_is_off_does_not_fail_a_kernel_that_is_exact() {
        // one row of A, two rows of B, k = 4: C = [1.0, 0.5]
        let a: Vec<bf16> = [0.25, 0.25, 0.25, 0.25].map(bf16::from_f32).to_vec();
        let b: Vec<bf16> = [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]
            .map(bf16::from_f32)
            .to_vec();
        let kernel: Vec<bf16> = [1.0, 0.5].map(bf16::from_f32).to_vec();
        let reference: Vec<bf16> = [1.0625, 0.5].map(bf16::from_f32).to_vec(); // 8 bf16 steps off
        let c = dispute(&kernel, &reference, &a, &b, (1, 2, 4));
        assert_eq!(
            (c.mismatches, c.refereed, c.refereed_ok, c.reference_off),
            (1, 1, 1, 1)
        );
        assert!(c.passed(), "{c:?}");

        // the other way round: the kernel is off, the reference right
        let c = dispute(&reference, &kernel, &a, &b, (1, 2, 4));
        assert_eq!(
            (c.mismatches, c.refereed, c.refereed_ok, c.reference_off),
            (1, 1, 0, 0)
        );
        assert!(!c.passed(), "{c:?}");
    }

    #[test]
    fn the_bound_is_half_a_spacing_of_the_type_plus_the_accumulation() {
        // f16 spacing at 1.0 is 2^-10, at 1000 it is 0.5; bf16's at 1.0 is 2^-7
        assert_eq!(allowed::<f16>(1.0, 0.0, 1), 0.5 / 1024.0);
        assert_eq!(allowed::<f16>(1000.0, 0.0, 1), 0.25);
        assert_eq!(allowed::<bf16>(1.0, 0.0, 1), 0.5 / 128.0);
        // subnormal f16: the spacing stops at 2^-24
        assert_eq!(allowed::<f16>(1e-7, 0.0, 1), 0.5 * (2f64).powi(-24));
        // 16 terms whose magnitudes sum to 16: 16 · 2^-24 · 16 = 2^-16 more
        let with = allowed::<f16>(1.0, 16.0, 16);
        assert_eq!(with, 2f64.powi(-16) + 0.5 / 1024.0);
    }

    #[test]
    fn a_kernel_one_rounding_step_off_fails_and_nan_is_never_refereed() {
        let a: Vec<f16> = vec![f16::from_f32(0.5); 8];
        let b: Vec<f16> = vec![f16::from_f32(0.5); 8];
        // exact 2.0 (8 · 0.25); two f16 steps off (2^-9 each at 2.0) and out of tolerance
        let off = [f16::from_f64(2.0 + 2.0 * 2f64.powi(-9) * 2.0)];
        let exact = [f16::from_f32(2.0)];
        let c = dispute(&off, &exact, &a, &b, (1, 1, 8));
        assert!(!c.passed(), "{c:?}");
        let c = dispute(&[f16::NAN], &exact, &a, &b, (1, 1, 8));
        assert_eq!((c.non_finite, c.refereed), (1, 0));
        assert!(!c.passed());
    }
}
