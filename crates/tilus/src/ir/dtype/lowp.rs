//! The codes of the low-precision floats: which are special, what each means, and how a value
//! rounds to one. The interpreter computes with these functions and the generated code's
//! conversions follow the same rules, so that both give the same bits for every code.
//!
//! The conventions are the OCP microscaling formats' (and Python Tilus's):
//! - formats with 5 exponent bits are IEEE-like: the top exponent holds the infinities
//!   (mantissa 0) and NaNs;
//! - E4M3 (8 bits) has no infinity, and its codes with every exponent and mantissa bit set are
//!   NaN (`e4m3fn`);
//! - every other format (under 8 bits, exponent under 5 bits) has no special code: all are
//!   finite.
//!
//! Conversion into a format rounds to nearest, ties to even, and saturates: a magnitude past the
//! largest finite value, infinities included, becomes the largest finite value of its sign (the
//! hardware's `.satfinite`). NaN becomes the format's NaN, or, in a format without one, the
//! largest positive value.

/// The layout of a low-precision float's code: a sign bit above `exp` exponent bits above
/// `man` mantissa bits, the exponent biased by `2^(exp-1) - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FloatFormat {
    /// Exponent bits.
    pub exp: u32,
    /// Mantissa bits.
    pub man: u32,
}

impl FloatFormat {
    pub(super) fn new(exp: u8, man: u8) -> FloatFormat {
        FloatFormat {
            exp: exp as u32,
            man: man as u32,
        }
    }

    /// Bits of a code.
    pub fn bits(self) -> u32 {
        1 + self.exp + self.man
    }

    /// The exponent bias.
    pub fn bias(self) -> i32 {
        (1 << (self.exp - 1)) - 1
    }

    /// Whether the top exponent holds infinities and NaNs (IEEE-like: 5 exponent bits).
    pub fn has_inf(self) -> bool {
        self.exp == 5
    }

    /// Whether some code is NaN.
    pub fn has_nan(self) -> bool {
        self.has_inf() || self.is_e4m3()
    }

    fn is_e4m3(self) -> bool {
        (self.exp, self.man) == (4, 3)
    }

    fn exp_mask(self) -> u32 {
        (1 << self.exp) - 1
    }

    fn man_mask(self) -> u32 {
        (1 << self.man) - 1
    }

    fn sign_bit(self) -> u32 {
        1 << (self.exp + self.man)
    }

    /// The code of the largest finite value (positive).
    pub fn max_code(self) -> u32 {
        let all = self.sign_bit() - 1;
        if self.has_inf() {
            // the top exponent is special: one below it, every mantissa bit
            ((self.exp_mask() - 1) << self.man) | self.man_mask()
        } else if self.is_e4m3() {
            all - 1
        } else {
            all
        }
    }

    /// The largest finite value.
    pub fn max_value(self) -> f64 {
        self.decode(self.max_code())
    }

    /// The code conversions give NaN: every exponent and mantissa bit set, sign clear (`None`
    /// for formats without NaN).
    pub fn nan_code(self) -> Option<u32> {
        self.has_nan().then(|| self.sign_bit() - 1)
    }

    /// The value of a code (its low `bits()` bits): NaN for a NaN code, infinities for an
    /// infinity code, and `-0.0` for the negative zero.
    pub fn decode(self, code: u32) -> f64 {
        let code = code & ((self.sign_bit() << 1) - 1);
        let sign = if code & self.sign_bit() != 0 {
            -1.0
        } else {
            1.0
        };
        let e = (code >> self.man) & self.exp_mask();
        let m = code & self.man_mask();
        if self.has_inf() && e == self.exp_mask() {
            return if m == 0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        if self.is_e4m3() && e == self.exp_mask() && m == self.man_mask() {
            return f64::NAN;
        }
        // subnormals share the smallest normal exponent, without the implicit bit
        let (significand, scale) = if e == 0 {
            (m as f64, 1 - self.bias())
        } else {
            ((m | (1 << self.man)) as f64, e as i32 - self.bias())
        };
        sign * significand * pow2(scale - self.man as i32)
    }

    /// The code of `x` rounded to nearest (ties to even), saturating (see the module's doc).
    pub fn encode(self, x: f64) -> u32 {
        if x.is_nan() {
            return self.nan_code().unwrap_or(self.max_code());
        }
        let sign = if x.is_sign_negative() {
            self.sign_bit()
        } else {
            0
        };
        let a = x.abs();
        let max = self.max_value();
        if a >= max {
            return sign | self.max_code();
        }
        // the spacing of the format's values around `a`: that of the binade `a` lies in, or
        // the subnormals' below the smallest normal exponent
        let emin = 1 - self.bias();
        let binade = if a == 0.0 {
            emin
        } else {
            exponent(a).max(emin)
        };
        let quantum = pow2(binade - self.man as i32);
        // exact: scaling by a power of two; then rounding to an integer count of quanta
        let q = (a / quantum).round_ties_even();
        let v = q * quantum;
        if v >= max {
            return sign | self.max_code();
        }
        if v == 0.0 {
            return sign;
        }
        let code = if v < pow2(emin) {
            q as u32
        } else {
            let e = exponent(v);
            let m = (v / pow2(e - self.man as i32)) as u32 & self.man_mask();
            (((e + self.bias()) as u32) << self.man) | m
        };
        sign | code
    }
}

/// `2^e` for the small exponents these formats use (exact).
fn pow2(e: i32) -> f64 {
    f64::powi(2.0, e)
}

/// The binary exponent of a positive, finite, normal `f64`: `floor(log2(a))`.
fn exponent(a: f64) -> i32 {
    ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;

    fn formats() -> Vec<FloatFormat> {
        let mut v = vec![];
        for exp in 1..=5 {
            for man in 1..=6 {
                if let Some(f) = DType::float(exp, man).and_then(DType::float_format) {
                    v.push(f);
                }
            }
        }
        v
    }

    #[test]
    fn every_code_round_trips_and_the_values_ascend() {
        for f in formats() {
            let n = 1u32 << f.bits();
            let mut last = f64::NEG_INFINITY;
            // positive codes in order give ascending values up to the specials
            for c in 0..(n / 2) {
                let v = f.decode(c);
                if v.is_nan() {
                    assert!(f.has_nan(), "{f:?} code {c:#x}");
                    continue;
                }
                assert!(v > last || (v == 0.0 && c == 0), "{f:?} code {c:#x}");
                last = v;
                if v.is_finite() {
                    assert_eq!(f.encode(v), c, "{f:?} value {v}");
                    assert_eq!(f.encode(-v), c | f.sign_bit(), "{f:?} value -{v}");
                }
            }
            assert_eq!(f.decode(f.max_code()), f.max_value());
        }
    }

    #[test]
    fn midpoints_round_to_even_and_past_the_top_saturates() {
        for f in formats() {
            let finite: Vec<u32> = (0..(1u32 << (f.bits() - 1)))
                .filter(|&c| f.decode(c).is_finite())
                .collect();
            for w in finite.windows(2) {
                let (lo, hi) = (f.decode(w[0]), f.decode(w[1]));
                let mid = (lo + hi) / 2.0;
                let even = if w[0] % 2 == 0 { w[0] } else { w[1] };
                assert_eq!(f.encode(mid), even, "{f:?} between {lo} and {hi}");
                let below = mid - (hi - lo) / 8.0;
                let above = mid + (hi - lo) / 8.0;
                assert_eq!(f.encode(below), w[0], "{f:?} just below {mid}");
                assert_eq!(f.encode(above), w[1], "{f:?} just above {mid}");
            }
            let max = f.max_value();
            assert_eq!(f.encode(max * 4.0), f.max_code());
            assert_eq!(f.encode(f64::INFINITY), f.max_code());
            assert_eq!(f.encode(f64::NEG_INFINITY), f.max_code() | f.sign_bit());
            assert_eq!(f.encode(-0.0), f.sign_bit());
            assert_eq!(f.encode(1e-30), 0);
            match f.nan_code() {
                Some(c) => {
                    assert!(f.decode(f.encode(f64::NAN)).is_nan() && c == f.encode(f64::NAN))
                }
                None => assert_eq!(f.encode(f64::NAN), f.max_code()),
            }
        }
    }

    #[test]
    fn the_ocp_formats_have_their_published_extremes() {
        let f = |t: DType| t.float_format().unwrap();
        assert_eq!(f(DType::F8E4M3).max_value(), 448.0);
        assert_eq!(f(DType::F8E4M3).decode(1), 2f64.powi(-9));
        assert_eq!(f(DType::F8E5M2).max_value(), 57344.0);
        assert_eq!(f(DType::F8E5M2).decode(1), 2f64.powi(-16));
        assert_eq!(f(DType::F8E5M2).decode(0x7c), f64::INFINITY);
        assert_eq!(f(DType::F6E3M2).max_value(), 28.0);
        assert_eq!(f(DType::F6E3M2).decode(1), 0.0625);
        assert_eq!(f(DType::F6E2M3).max_value(), 7.5);
        assert_eq!(f(DType::F6E2M3).decode(1), 0.125);
        let e2m1: Vec<f64> = (0..8).map(|c| f(DType::F4E2M1).decode(c)).collect();
        assert_eq!(e2m1, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        let e1m1: Vec<f64> = (0..8).map(|c| f(DType::F3E1M1).decode(c)).collect();
        assert_eq!(e1m1, [0.0, 1.0, 2.0, 3.0, -0.0, -1.0, -2.0, -3.0]);
    }
}
