//! What a key-value cache may hold: the attention's own type (f16 or bf16), or FP8 codes
//! (e4m3) with one scale per key-value head, which halve the bytes a decode step reads.
//!
//! A cache of codes holds `code = sat(x / scale[h])` for a value `x` of head `h` (what
//! [`super::DecodeOp::append`] writes); the kernel multiplies the keys' scale into the
//! softmax's and the values' scale into the output, so that the codes themselves go to the
//! tensor cores converted to the attention's type, unscaled (every e4m3 code is exact in f16
//! and in bf16).

use half::{bf16, f16};
use tilus::lang::Element;
use tilus::lowp::F8E4M3;

/// An element of the key-value cache. The cache of the attention's own type `T` is read as
/// stored; any other type is converted to `T` in shared memory before the products.
pub trait CacheElement:
    Element
    + tilus::interp::Pod
    + tilus::cudarc::driver::DeviceRepr
    + std::fmt::Debug
    + Copy
    + Send
    + Sync
    + 'static
{
    /// The type's name in the kernels' names: `f16`, `bf16` or `e4m3`.
    const NAME: &'static str;
    /// The cache holds codes of a value divided by its key-value head's scale (the call
    /// passes the scales); otherwise the values themselves.
    const SCALED: bool;
    /// The code's value, exactly (before its scale).
    fn to_f64(self) -> f64;
    /// `x` rounded to the nearest code (saturated where the format saturates).
    fn from_f64(x: f64) -> Self;
    /// The largest finite value of a scaled type's codes (448 for e4m3), where a head's
    /// largest magnitude goes; 1 for a type that is not scaled (its values are themselves).
    fn code_range() -> f64 {
        if Self::SCALED {
            Self::from_f64(f64::INFINITY).to_f64()
        } else {
            1.0
        }
    }
}

impl CacheElement for f16 {
    const NAME: &'static str = "f16";
    const SCALED: bool = false;
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
}

impl CacheElement for bf16 {
    const NAME: &'static str = "bf16";
    const SCALED: bool = false;
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
}

impl CacheElement for F8E4M3 {
    const NAME: &'static str = "e4m3";
    const SCALED: bool = true;
    fn to_f64(self) -> f64 {
        F8E4M3::to_f64(self)
    }
    fn from_f64(x: f64) -> Self {
        F8E4M3::from_f64(x)
    }
}

/// The scale of each key-value head that makes its largest magnitude in `values` (`[rows,
/// kv_heads, head_dim]`) the format's largest finite code, for a cache of `C` (1 for a type
/// that is not scaled, and for a head of zeros); `[kv_heads]`. A host's quantizer: what a
/// serving stack computes once from its calibration data.
pub fn head_scales<C: CacheElement>(values: &[f64], kv_heads: usize, head_dim: usize) -> Vec<f32> {
    let mut top = vec![0.0f64; kv_heads];
    for (i, x) in values.iter().enumerate() {
        let h = i / head_dim % kv_heads;
        if x.is_finite() {
            top[h] = top[h].max(x.abs());
        }
    }
    top.iter()
        .map(|&t| {
            if !C::SCALED || t == 0.0 {
                1.0
            } else {
                (t / C::code_range()) as f32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{head_scales, CacheElement};
    use half::{bf16, f16};
    use tilus::lowp::F8E4M3;

    /// Each type's codes: values it holds come back exactly, others round to the nearest
    /// (e4m3 saturates at 448), NaN stays NaN; the test caches are drawn through these.
    #[test]
    fn cache_elements_round_to_their_codes() {
        fn back<C: CacheElement>(x: f64) -> f64 {
            C::from_f64(x).to_f64()
        }
        for x in [1.5, -0.25, 3.0] {
            assert_eq!(back::<f16>(x), x);
            assert_eq!(back::<bf16>(x), x);
            assert_eq!(back::<F8E4M3>(x), x);
        }
        assert_eq!(back::<f16>(1.0 + 1.0 / 4096.0), 1.0);
        assert_eq!(back::<bf16>(1.0 + 1.0 / 512.0), 1.0);
        assert_eq!(back::<F8E4M3>(1.0 + 1.0 / 32.0), 1.0);
        assert_eq!(back::<F8E4M3>(1000.0), 448.0);
        assert_eq!((F8E4M3::code_range(), f16::code_range()), (448.0, 1.0));
        assert!(back::<f16>(f64::NAN).is_nan() && back::<F8E4M3>(f64::NAN).is_nan());
    }

    /// Each head's largest magnitude lands on e4m3's largest code (448); a head of zeros, and
    /// every head of a type that is not scaled, keeps 1; NaN is left out of the maximum.
    #[test]
    fn head_scales_put_each_head_s_largest_value_on_the_largest_code() {
        // [2 rows, 3 heads, 2 dims]
        let values = [
            1.0,
            -4.0,
            0.0,
            0.0,
            0.5,
            0.25, //
            -2.0,
            3.0,
            0.0,
            0.0,
            f64::NAN,
            -0.75,
        ];
        assert_eq!(
            head_scales::<F8E4M3>(&values, 3, 2),
            [(4.0 / 448.0) as f32, 1.0, (0.75 / 448.0) as f32]
        );
        assert_eq!(head_scales::<f16>(&values, 3, 2), [1.0, 1.0, 1.0]);
    }
}
