//! How an output compares with its reference: the counts and the error of a comparison
//! ([`Check`]), the tolerance it is made within ([`Tolerance`]), and the comparison itself over
//! f64 values ([`compare_within`]). Every workload's check and the matmul checks use them.

/// How an output compares with the reference.
#[derive(Clone, Debug, Default)]
pub struct Check {
    /// Elements compared.
    pub total: usize,
    /// NaN or infinite outputs (always failures).
    pub non_finite: usize,
    /// Finite elements outside `atol + rtol · |ref|` ([`Tolerance`]; for a matmul rtol 1e-3
    /// and atol 1e-5, as for f16 in `torch.testing.assert_close`).
    pub mismatches: usize,
    /// Largest absolute difference among finite elements.
    pub max_abs: f64,
    /// ‖C − C_ref‖ / ‖C_ref‖ over finite elements.
    pub rel_err: f64,
    /// Mismatches recomputed exactly by a referee ([`crate::referee`]; 0 where none ran).
    pub refereed: usize,
    /// Of those, the ones where the output is within the rounding of the exact value: the
    /// reference was the one off, and the mismatch is not the output's.
    pub refereed_ok: usize,
    /// Of those, the ones where the reference is farther from the exact value than its own
    /// rounding allows.
    pub reference_off: usize,
}

impl Check {
    /// Whether every element is finite and within tolerance of the reference, or, where a
    /// referee recomputed it, within the rounding of the exact value.
    pub fn passed(&self) -> bool {
        self.non_finite == 0 && self.mismatches == self.refereed_ok && self.total > 0
    }
}

/// How far an output may be from its reference: `atol + rtol · |ref|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative part.
    pub rtol: f64,
    /// Absolute part.
    pub atol: f64,
}

impl Tolerance {
    /// f16 outputs against a reference rounded to f16 (`torch.testing.assert_close`'s).
    pub const F16: Tolerance = Tolerance {
        rtol: 1e-3,
        atol: 1e-5,
    };
    /// bf16 outputs against a reference rounded to bf16: one step of bf16's 8-bit
    /// significand (2⁻⁸ relative) apart, where the two accumulations round differently.
    pub const BF16: Tolerance = Tolerance {
        rtol: 8e-3,
        atol: 1e-5,
    };
    /// Bit for bit (up to the sign of zero).
    pub const EXACT: Tolerance = Tolerance {
        rtol: 0.0,
        atol: 0.0,
    };
}

/// Compares outputs with their reference, element for element: a non-finite output is always a
/// failure, so is a non-finite reference.
pub fn compare_within(
    actual: impl Iterator<Item = f64>,
    expect: impl Iterator<Item = f64>,
    tol: Tolerance,
) -> Check {
    let mut c = Check::default();
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (x, y) in actual.zip(expect) {
        c.total += 1;
        if !x.is_finite() {
            c.non_finite += 1;
            continue;
        }
        let d = (x - y).abs();
        if d > tol.atol + tol.rtol * y.abs() || !y.is_finite() {
            c.mismatches += 1;
        }
        c.max_abs = c.max_abs.max(d);
        num += d * d;
        den += y * y;
    }
    c.rel_err = if den > 0.0 {
        (num / den).sqrt()
    } else if num == 0.0 && c.total > 0 {
        0.0
    } else {
        f64::NAN
    };
    c
}
