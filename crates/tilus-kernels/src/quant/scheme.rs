//! How weights are quantized: the element type, the groups that share a scale (and a zero
//! point, for unsigned integers) along K, and the host's quantizer and exact dequantizer,
//! which tests and examples use as the reference.

use half::f16;
use tilus::ir::DType;
use tilus::lowp::LowpElement;

/// The weights of `C = A · dequant(W)ᵀ`: `W [N, K]` of type `T`, packed along K
/// ([`tilus::lowp::pack`], row by row), with one f16 scale per `group` elements of a row
/// (`None`: one per row, per channel) and, for unsigned integers, one f16 zero point per
/// group: `dequant(w) = (q - z) · s` (unsigned), `q · s` (signed integers and floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Scheme {
    /// Elements of a row that share a scale: 32, 64, 128, ...; `None` for a row each.
    pub group: Option<usize>,
}

impl Scheme {
    /// Groups of `group` elements along K.
    pub fn grouped(group: usize) -> Scheme {
        Scheme { group: Some(group) }
    }

    /// One scale per row.
    pub fn per_channel() -> Scheme {
        Scheme { group: None }
    }

    /// Groups per row of `k` elements.
    pub fn groups(&self, k: usize) -> usize {
        self.group.map_or(1, |g| k.div_ceil(g))
    }

    /// The group of element `x` of a row.
    pub fn group_of(&self, x: usize) -> usize {
        self.group.map_or(0, |g| x / g)
    }
}

/// Weights quantized for [`super::QuantMatmul`]: packed codes (row by row, each row
/// starting on a byte), scales `[N, groups]` and, for unsigned types, zero points
/// `[N, groups]`.
#[derive(Clone, Debug)]
pub struct Quantized {
    /// Rows and columns of W.
    pub shape: (usize, usize),
    /// The codes, [`tilus::lowp::pack`]ed row by row.
    pub packed: Vec<u8>,
    /// One scale per group, row-major `[N, groups]`.
    pub scales: Vec<f16>,
    /// One zero point per group for unsigned types (empty otherwise).
    pub zeros: Vec<f16>,
    /// The type and the groups.
    pub scheme: Scheme,
    /// The element type.
    pub dtype: DType,
}

/// The largest magnitude type `t` holds (the positive side for signed integers).
fn type_max(t: DType) -> f64 {
    match t {
        DType::Int(b) => ((1i64 << (b - 1)) - 1).max(1) as f64,
        DType::UInt(b) => ((1i64 << b) - 1) as f64,
        t => t.float_format().map_or(1.0, |f| f.max_value()),
    }
}

/// Quantizes `w` (`[n, k]` row-major) into type `T` with `scheme`: per group, a scale that
/// maps its largest magnitude to the type's largest value (signed integers and floats, codes
/// rounded to nearest), or its range onto `0 ..= 2^b - 1` with a zero point (unsigned).
/// Scales and zero points are f16, and the codes are computed from the f16 scale, so that
/// dequantizing reproduces what the kernel computes.
pub fn quantize<T: LowpElement>(w: &[f32], (n, k): (usize, usize), scheme: Scheme) -> Quantized {
    assert_eq!(w.len(), n * k, "w holds [n, k]");
    let t = T::DTYPE;
    let groups = scheme.groups(k);
    let width = scheme.group.unwrap_or(k);
    let (mut scales, mut zeros) = (vec![], vec![]);
    let mut codes: Vec<T> = Vec::with_capacity(n * k);
    let mut row_bytes = vec![];
    for r in 0..n {
        let row = &w[r * k..(r + 1) * k];
        let mut row_codes = Vec::with_capacity(k);
        for g in 0..groups {
            let part = &row[g * width..((g + 1) * width).min(k)];
            let (lo, hi) = part
                .iter()
                .fold((0f32, 0f32), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            if let DType::UInt(_) = t {
                let s = f16::from_f32(((hi - lo) / type_max(t) as f32).max(f32::MIN_POSITIVE));
                let s = if s.to_f32() == 0.0 {
                    f16::MIN_POSITIVE
                } else {
                    s
                };
                let z = f16::from_f32((-lo / s.to_f32()).round().clamp(0.0, type_max(t) as f32));
                for &x in part {
                    let q = (x / s.to_f32() + z.to_f32())
                        .round()
                        .clamp(0.0, type_max(t) as f32);
                    row_codes.push(T::from_code(q as u8));
                }
                scales.push(s);
                zeros.push(z);
            } else {
                let m = lo.abs().max(hi.abs());
                let s = f16::from_f32((m / type_max(t) as f32).max(f32::MIN_POSITIVE));
                let s = if s.to_f32() == 0.0 {
                    f16::MIN_POSITIVE
                } else {
                    s
                };
                for &x in part {
                    let v = f64::from(x / s.to_f32());
                    let code = match t.float_format() {
                        Some(f) => f.encode(v) as u8,
                        None => {
                            let q = v.round().clamp(-type_max(t) - 1.0, type_max(t));
                            (q as i64 & ((1 << t.bits()) - 1)) as u8
                        }
                    };
                    row_codes.push(T::from_code(code));
                }
                scales.push(s);
            }
        }
        // rows start on bytes: pack each row on its own
        row_bytes.extend(tilus::lowp::pack(&row_codes));
        codes.extend(row_codes);
    }
    Quantized {
        shape: (n, k),
        packed: row_bytes,
        scales,
        zeros,
        scheme,
        dtype: t,
    }
}

impl Quantized {
    /// Bytes of one packed row.
    pub fn row_bytes(&self) -> usize {
        (self.shape.1 * self.dtype.bits() as usize).div_ceil(8)
    }

    /// The code of element `(r, x)`.
    pub fn code(&self, r: usize, x: usize) -> u32 {
        let b = self.dtype.bits() as usize;
        let at = r * self.row_bytes() * 8 + x * b;
        let lo = u32::from(self.packed[at / 8]);
        let hi = self.packed.get(at / 8 + 1).map_or(0, |&v| u32::from(v));
        (((hi << 8) | lo) >> (at % 8)) & ((1 << b) - 1)
    }

    /// The exact value of element `(r, x)` after dequantization (f64: the product of the
    /// code's value, less the zero point, and the f16 scale).
    pub fn dequantized(&self, r: usize, x: usize) -> f64 {
        let t = self.dtype;
        let c = self.code(r, x);
        let q = match t {
            DType::Int(b) => tilus::ir::wrap_to(i64::from(c), DType::Int(b)) as f64,
            DType::UInt(_) => f64::from(c),
            t => t.float_format().map_or(0.0, |f| f.decode(c)),
        };
        let g = r * self.scheme.groups(self.shape.1) + self.scheme.group_of(x);
        let z = self.zeros.get(g).map_or(0.0, |z| z.to_f64());
        (q - z) * self.scales[g].to_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilus::lowp::{F4E2M1, I4, U4};

    #[test]
    fn quantized_weights_come_back_within_half_a_step() {
        let (n, k) = (3, 96);
        let w: Vec<f32> = (0..n * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
            .collect();
        for scheme in [Scheme::grouped(32), Scheme::per_channel()] {
            let q = quantize::<I4>(&w, (n, k), scheme);
            assert_eq!(q.packed.len(), n * k / 2);
            // each group's largest magnitude takes the type's largest code: the whole range used
            for r in 0..n {
                for g in 0..scheme.groups(k) {
                    let width = scheme.group.unwrap_or(k);
                    let top = (g * width..((g + 1) * width).min(k))
                        .map(|x| {
                            tilus::ir::wrap_to(i64::from(q.code(r, x)), tilus::ir::DType::I4).abs()
                        })
                        .max();
                    assert_eq!(top, Some(7), "i4 row {r} group {g}");
                }
            }
            for r in 0..n {
                for x in 0..k {
                    let g = r * scheme.groups(k) + scheme.group_of(x);
                    let step = q.scales[g].to_f64();
                    let err = (q.dequantized(r, x) - f64::from(w[r * k + x])).abs();
                    assert!(
                        err <= step * 0.5 * (1.0 + 1e-3) + 1e-6,
                        "i4 ({r}, {x}): {err} > {step} / 2"
                    );
                }
            }
            let u = quantize::<U4>(&w, (n, k), scheme);
            assert_eq!(u.zeros.len(), u.scales.len());
            // each group's range spans the codes, 0 ..= 15 (within one step of each end)
            for r in 0..n {
                for g in 0..scheme.groups(k) {
                    let width = scheme.group.unwrap_or(k);
                    let codes: Vec<u32> = (g * width..((g + 1) * width).min(k))
                        .map(|x| u.code(r, x))
                        .collect();
                    let (lo, hi) = (codes.iter().min(), codes.iter().max());
                    assert!(
                        lo <= Some(&1) && hi >= Some(&14),
                        "u4 row {r} group {g}: {lo:?}..{hi:?}"
                    );
                }
            }
            for r in 0..n {
                for x in 0..k {
                    let g = r * scheme.groups(k) + scheme.group_of(x);
                    let err = (u.dequantized(r, x) - f64::from(w[r * k + x])).abs();
                    assert!(err <= u.scales[g].to_f64() * 1.01, "u4 ({r}, {x}): {err}");
                }
            }
            let f = quantize::<F4E2M1>(&w, (n, k), scheme);
            // the largest magnitude of each group maps onto 6, the format's largest value
            let g0: f64 = (0..k.min(32))
                .map(|x| f.dequantized(0, x).abs())
                .fold(0.0, f64::max);
            let w0 = w[..k.min(32)].iter().fold(0f32, |m, x| m.max(x.abs()));
            if scheme.group.is_some() {
                assert!(
                    (g0 - f64::from(w0)).abs() <= f64::from(w0) * 2e-3,
                    "{g0} vs {w0}"
                );
            }
        }
    }
}
