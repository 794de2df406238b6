//! Element types of scalars and tensors, and the low-precision formats' codes.

mod lowp;

pub use lowp::FloatFormat;

use std::fmt;

/// The type of a scalar value or of a tensor's elements.
///
/// Besides the word types, tiles and views may hold low-precision elements: integers of 1 to 8
/// bits ([`DType::Int`], [`DType::UInt`]) and floats of 3 to 8 bits ([`DType::Float`], whose
/// codes [`FloatFormat`] decodes). Those are element types only (no scalar variable has one);
/// elements narrower than a byte are packed, little-endian within bytes. Build them with the
/// checked constructors ([`DType::int`], [`DType::uint`], [`DType::float`]) or the constants
/// ([`DType::I8`], [`DType::F8E4M3`], ...); the verifier refuses a width outside those ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// A predicate.
    Bool,
    /// 32-bit signed integer: indices, sizes, offsets.
    I32,
    /// 32-bit unsigned integer: phases, bit patterns.
    U32,
    /// 64-bit signed integer.
    I64,
    /// 64-bit unsigned integer.
    U64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
    /// A two's-complement integer of 1 to 8 bits (`Int(8)` is `i8`).
    Int(u8),
    /// An unsigned integer of 1 to 8 bits (`UInt(8)` is `u8`).
    UInt(u8),
    /// A float of 3 to 8 bits: a sign bit, `exp` exponent bits and `man` mantissa bits
    /// ([`FloatFormat`] says which codes are special).
    Float {
        /// Exponent bits, 1 to 5.
        exp: u8,
        /// Mantissa bits, at least 1.
        man: u8,
    },
}

impl DType {
    /// `i8`.
    pub const I8: DType = DType::Int(8);
    /// `u8`.
    pub const U8: DType = DType::UInt(8);
    /// A signed 4-bit integer, -8..=7.
    pub const I4: DType = DType::Int(4);
    /// An unsigned 4-bit integer, 0..=15.
    pub const U4: DType = DType::UInt(4);
    /// A signed 2-bit integer, -2..=1.
    pub const I2: DType = DType::Int(2);
    /// An unsigned 2-bit integer, 0..=3.
    pub const U2: DType = DType::UInt(2);
    /// OCP FP8 E4M3 (`e4m3fn`): bias 7, no infinity, one NaN per sign, largest 448.
    pub const F8E4M3: DType = DType::Float { exp: 4, man: 3 };
    /// OCP FP8 E5M2: IEEE-like, bias 15, infinities and NaNs, largest 57344.
    pub const F8E5M2: DType = DType::Float { exp: 5, man: 2 };
    /// OCP FP6 E3M2: bias 3, every code finite, largest 28.
    pub const F6E3M2: DType = DType::Float { exp: 3, man: 2 };
    /// OCP FP6 E2M3: bias 1, every code finite, largest 7.5.
    pub const F6E2M3: DType = DType::Float { exp: 2, man: 3 };
    /// OCP FP4 E2M1: bias 1, every code finite, largest 6.
    pub const F4E2M1: DType = DType::Float { exp: 2, man: 1 };
    /// A 3-bit float E1M1: bias 0, the values 0, 1, 2, 3 and their negatives.
    pub const F3E1M1: DType = DType::Float { exp: 1, man: 1 };

    /// A signed integer of `bits` (1 to 8) bits; `None` for other widths.
    pub fn int(bits: u32) -> Option<DType> {
        (1..=8).contains(&bits).then_some(DType::Int(bits as u8))
    }

    /// An unsigned integer of `bits` (1 to 8) bits; `None` for other widths.
    pub fn uint(bits: u32) -> Option<DType> {
        (1..=8).contains(&bits).then_some(DType::UInt(bits as u8))
    }

    /// The float with `exp` exponent and `man` mantissa bits; `None` unless it is one of the
    /// formats [`FloatFormat`] describes (3 to 8 bits in all; of 8 bits, E4M3 and E5M2).
    pub fn float(exp: u32, man: u32) -> Option<DType> {
        let t = DType::Float {
            exp: u8::try_from(exp).ok()?,
            man: u8::try_from(man).ok()?,
        };
        t.is_valid().then_some(t)
    }

    /// Whether the type's widths are in range (always, for the word types).
    pub fn is_valid(self) -> bool {
        match self {
            DType::Int(b) | DType::UInt(b) => (1..=8).contains(&b),
            DType::Float { exp, man } => {
                let bits = 1 + exp as u32 + man as u32;
                (1..=5).contains(&exp)
                    && man >= 1
                    && (3..=8).contains(&bits)
                    && (bits < 8 || matches!((exp, man), (4, 3) | (5, 2)))
            }
            _ => true,
        }
    }

    /// Width of one element in bits.
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool => 8,
            DType::F16 | DType::BF16 => 16,
            DType::I32 | DType::U32 | DType::F32 => 32,
            DType::I64 | DType::U64 => 64,
            DType::Int(b) | DType::UInt(b) => b as u32,
            DType::Float { exp, man } => 1 + exp as u32 + man as u32,
        }
    }

    /// Width of one element in bytes, rounded up: a type narrower than a byte counts one.
    /// Memory of such a type is packed and addressed in bits ([`DType::is_subbyte`]); the
    /// verifier keeps it away from every instruction that addresses memory by bytes, and the
    /// rounding keeps the sizes a refused program is still checked with from being zero.
    pub fn nbytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    /// Whether elements are narrower than a byte (packed in memory).
    pub fn is_subbyte(self) -> bool {
        self.bits() < 8
    }

    /// Whether the type is one of the low-precision element types (8 bits or fewer, not
    /// `bool`): element types only, with no scalar variables.
    pub fn is_lowp(self) -> bool {
        matches!(self, DType::Int(_) | DType::UInt(_) | DType::Float { .. })
    }

    /// Whether the type is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F16 | DType::BF16 | DType::F32 | DType::Float { .. }
        )
    }

    /// Whether the type is an integer type.
    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::I32 | DType::U32 | DType::I64 | DType::U64 | DType::Int(_) | DType::UInt(_)
        )
    }

    /// Whether the type is a signed integer type.
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64 | DType::Int(_))
    }

    /// The format of a low-precision float (`None` for every other type).
    pub fn float_format(self) -> Option<FloatFormat> {
        match self {
            DType::Float { exp, man } if self.is_valid() => Some(FloatFormat::new(exp, man)),
            _ => None,
        }
    }

    /// The name used by the IR printer, in diagnostics and in generated code's helpers:
    /// `i4`, `u8`, `f8e4m3`, ...
    pub fn name(self) -> String {
        match self {
            DType::Bool => "bool".into(),
            DType::I32 => "i32".into(),
            DType::U32 => "u32".into(),
            DType::I64 => "i64".into(),
            DType::U64 => "u64".into(),
            DType::F16 => "f16".into(),
            DType::BF16 => "bf16".into(),
            DType::F32 => "f32".into(),
            DType::Int(b) => format!("i{b}"),
            DType::UInt(b) => format!("u{b}"),
            DType::Float { exp, man } => format!("f{}e{exp}m{man}", self.bits()),
        }
    }

    /// The type a name from [`DType::name`] names (`None` for any other text or a width out
    /// of range).
    pub fn from_name(s: &str) -> Option<DType> {
        let t = match s {
            "bool" => DType::Bool,
            "i32" => DType::I32,
            "u32" => DType::U32,
            "i64" => DType::I64,
            "u64" => DType::U64,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            "f32" => DType::F32,
            _ => {
                let num = |x: &str| x.parse::<u32>().ok().filter(|_| x.len() == 1);
                if let Some(b) = s.strip_prefix('i') {
                    return DType::int(num(b)?);
                }
                if let Some(b) = s.strip_prefix('u') {
                    return DType::uint(num(b)?);
                }
                let rest = s.strip_prefix('f')?;
                let (bits, rest) = rest.split_once('e')?;
                let (exp, man) = rest.split_once('m')?;
                let t = DType::float(num(exp)?, num(man)?)?;
                return (num(bits)? == t.bits()).then_some(t);
            }
        };
        Some(t)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every valid low-precision type, and a few invalid ones.
    fn lowp_types() -> Vec<DType> {
        let mut v = vec![];
        for b in 0..=9 {
            v.push(DType::Int(b));
            v.push(DType::UInt(b));
        }
        for exp in 0..=6 {
            for man in 0..=7 {
                v.push(DType::Float { exp, man });
            }
        }
        v
    }

    #[test]
    fn names_round_trip_and_widths_are_checked() {
        let mut valid = 0;
        for t in lowp_types() {
            if t.is_valid() {
                valid += 1;
                assert_eq!(DType::from_name(&t.name()), Some(t), "{t}");
                assert!(t.bits() <= 8 && t.bits() >= 1);
            } else {
                assert_eq!(DType::from_name(&t.name()), None, "{t:?}");
                assert_eq!(t.float_format(), None, "{t:?}");
            }
        }
        // 16 integers; floats: sign + e + m = 3..=7 with e in 1..=5, m >= 1 (15), and 2 of 8 bits
        assert_eq!(valid, 16 + 15 + 2);
        for t in [
            DType::F16,
            DType::BF16,
            DType::F32,
            DType::I32,
            DType::U32,
            DType::I64,
            DType::U64,
            DType::Bool,
        ] {
            assert_eq!(DType::from_name(&t.name()), Some(t));
        }
        assert_eq!(DType::F8E4M3.name(), "f8e4m3");
        assert_eq!(DType::F4E2M1.name(), "f4e2m1");
        assert_eq!(DType::from_name("f8e3m4"), None);
        assert_eq!(DType::from_name("f6e4m3"), None);
        assert_eq!(DType::from_name("i9"), None);
        assert_eq!(DType::from_name("i04"), None);
        assert!(DType::I4.is_subbyte() && !DType::I8.is_subbyte());
        assert!(DType::F4E2M1.is_float() && DType::U4.is_int() && DType::I4.is_signed_int());
        assert!(!DType::U4.is_signed_int());
    }
}
