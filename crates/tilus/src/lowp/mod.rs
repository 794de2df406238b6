//! Host-side low-precision elements: one code per value, conversions to and from `f32` with
//! the same rounding the kernels use, and packing of the codes narrower than a byte.
//!
//! The element types name the IR's [`DType::Int`], [`DType::UInt`] and [`DType::Float`]:
//! [`Int<4>`](Int) is `i4`, [`Float<4, 3>`](Float) is `f8e4m3` ([`F8E4M3`]). Each holds its
//! code in a byte, so a host slice of an 8-bit type is the bytes a device buffer holds
//! (`CudaSlice<F8E4M3>`, uploaded as any other slice). Elements narrower than a byte are
//! packed in memory ([`pack`]: the first element in the low bits of the first byte); tiles
//! in registers take every type, global views and shared tiles those of whole bytes.

use crate::ir::DType;

/// A two's-complement integer of `B` bits (1 to 8), its code in the low bits of a byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Int<const B: u8>(pub u8);

/// An unsigned integer of `B` bits (1 to 8), its code in the low bits of a byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct UInt<const B: u8>(pub u8);

/// A float with `E` exponent and `M` mantissa bits (see [`crate::ir::FloatFormat`]), its code
/// in the low bits of a byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Float<const E: u8, const M: u8>(pub u8);

/// `i8` as a low-precision element (the same bits as Rust's `i8`).
pub type I8 = Int<8>;
/// `u8` as a low-precision element.
pub type U8 = UInt<8>;
/// A signed 4-bit integer.
pub type I4 = Int<4>;
/// An unsigned 4-bit integer.
pub type U4 = UInt<4>;
/// A signed 2-bit integer.
pub type I2 = Int<2>;
/// An unsigned 2-bit integer.
pub type U2 = UInt<2>;
/// OCP FP8 E4M3 ([`DType::F8E4M3`]).
pub type F8E4M3 = Float<4, 3>;
/// OCP FP8 E5M2 ([`DType::F8E5M2`]).
pub type F8E5M2 = Float<5, 2>;
/// OCP FP6 E3M2 ([`DType::F6E3M2`]).
pub type F6E3M2 = Float<3, 2>;
/// OCP FP6 E2M3 ([`DType::F6E2M3`]).
pub type F6E2M3 = Float<2, 3>;
/// OCP FP4 E2M1 ([`DType::F4E2M1`]).
pub type F4E2M1 = Float<2, 1>;
/// A 3-bit float E1M1 ([`DType::F3E1M1`]).
pub type F3E1M1 = Float<1, 1>;

/// A low-precision element type on the host: its IR type and its code.
pub trait LowpElement: Copy {
    /// The IR type (checked for range where the type is used).
    const DTYPE: DType;
    /// The element's code (its low [`DType::bits`] bits).
    fn code(self) -> u8;
    /// The element of a code (bits above the type's width are dropped).
    fn from_code(code: u8) -> Self;
}

const fn checked(t: DType) -> DType {
    let ok = match t {
        DType::Int(b) | DType::UInt(b) => b >= 1 && b <= 8,
        DType::Float { exp, man } => {
            let bits = 1 + exp + man;
            exp >= 1
                && exp <= 5
                && man >= 1
                && bits >= 3
                && bits <= 8
                && (bits < 8 || (exp == 4 && man == 3) || (exp == 5 && man == 2))
        }
        _ => true,
    };
    assert!(ok, "no such low-precision type (see DType::is_valid)");
    t
}

fn low_bits(code: u8, bits: u32) -> u8 {
    if bits >= 8 {
        code
    } else {
        code & ((1u8 << bits) - 1)
    }
}

impl<const B: u8> LowpElement for Int<B> {
    const DTYPE: DType = checked(DType::Int(B));
    fn code(self) -> u8 {
        low_bits(self.0, B as u32)
    }
    fn from_code(code: u8) -> Self {
        Int(low_bits(code, B as u32))
    }
}

impl<const B: u8> LowpElement for UInt<B> {
    const DTYPE: DType = checked(DType::UInt(B));
    fn code(self) -> u8 {
        low_bits(self.0, B as u32)
    }
    fn from_code(code: u8) -> Self {
        UInt(low_bits(code, B as u32))
    }
}

impl<const E: u8, const M: u8> LowpElement for Float<E, M> {
    const DTYPE: DType = checked(DType::Float { exp: E, man: M });
    fn code(self) -> u8 {
        low_bits(self.0, 1 + E as u32 + M as u32)
    }
    fn from_code(code: u8) -> Self {
        Float(low_bits(code, 1 + E as u32 + M as u32))
    }
}

impl<const B: u8> Int<B> {
    /// The element holding `v`'s low `B` bits (as a C conversion between integers).
    pub fn wrapping(v: i64) -> Self {
        Self::from_code(crate::ir::wrap_to(v, Self::DTYPE) as u8)
    }
    /// Its value.
    pub fn value(self) -> i32 {
        crate::ir::wrap_to(i64::from(self.code()), Self::DTYPE) as i32
    }
}

impl<const B: u8> UInt<B> {
    /// The element holding `v`'s low `B` bits (as a C conversion between integers).
    pub fn wrapping(v: i64) -> Self {
        Self::from_code(crate::ir::wrap_to(v, Self::DTYPE) as u8)
    }
    /// Its value.
    pub fn value(self) -> u32 {
        u32::from(self.code())
    }
}

impl<const E: u8, const M: u8> Float<E, M> {
    fn format() -> crate::ir::FloatFormat {
        Self::DTYPE
            .float_format()
            .expect("`checked` keeps the type valid")
    }
    /// `x` rounded to nearest even and saturated, as a kernel's conversion from f32 does.
    pub fn from_f32(x: f32) -> Self {
        Self::from_code(Self::format().encode(f64::from(x)) as u8)
    }
    /// `x` rounded to nearest even and saturated (one rounding, from the exact value).
    pub fn from_f64(x: f64) -> Self {
        Self::from_code(Self::format().encode(x) as u8)
    }
    /// Its value (exact).
    pub fn to_f32(self) -> f32 {
        Self::format().decode(u32::from(self.code())) as f32
    }
    /// Its value (exact).
    pub fn to_f64(self) -> f64 {
        Self::format().decode(u32::from(self.code()))
    }
}

/// The bytes of `elems` packed: element `i` in bits `i * b .. (i + 1) * b` of the buffer
/// read as one little-endian number (`b` = the type's width); the last byte's high bits are
/// zero. Elements of whole bytes are their codes, one a byte.
pub fn pack<T: LowpElement>(elems: &[T]) -> Vec<u8> {
    let b = T::DTYPE.bits() as usize;
    let mut out = vec![0u8; (elems.len() * b).div_ceil(8)];
    for (i, e) in elems.iter().enumerate() {
        let (at, code) = (i * b, u16::from(e.code()));
        let word = code << (at % 8);
        out[at / 8] |= word as u8;
        if at % 8 + b > 8 {
            out[at / 8 + 1] |= (word >> 8) as u8;
        }
    }
    out
}

/// The first `n` elements of a packed buffer (the inverse of [`pack`]). Panics if the buffer
/// holds fewer.
pub fn unpack<T: LowpElement>(bytes: &[u8], n: usize) -> Vec<T> {
    let b = T::DTYPE.bits() as usize;
    assert!(
        bytes.len() * 8 >= n * b,
        "{} bytes hold fewer than {n} elements of {}",
        bytes.len(),
        T::DTYPE
    );
    (0..n)
        .map(|i| {
            let at = i * b;
            let lo = u16::from(bytes[at / 8]);
            let hi = bytes.get(at / 8 + 1).map_or(0, |&x| u16::from(x));
            T::from_code((((hi << 8) | lo) >> (at % 8)) as u8)
        })
        .collect()
}

// SAFETY: the byte-wide types are `repr(transparent)` over a `u8`: one byte, no padding, every
// bit pattern a valid code, all zeros the code of zero.
unsafe impl cudarc::driver::DeviceRepr for I8 {}
// SAFETY: as for `I8`.
unsafe impl cudarc::driver::ValidAsZeroBits for I8 {}
// SAFETY: as for `I8`.
unsafe impl cudarc::driver::DeviceRepr for U8 {}
// SAFETY: as for `I8`.
unsafe impl cudarc::driver::ValidAsZeroBits for U8 {}
// SAFETY: as for `I8`.
unsafe impl cudarc::driver::DeviceRepr for F8E4M3 {}
// SAFETY: as for `I8`.
unsafe impl cudarc::driver::ValidAsZeroBits for F8E4M3 {}
// SAFETY: as for `I8`.
unsafe impl cudarc::driver::DeviceRepr for F8E5M2 {}
// SAFETY: as for `I8`.
unsafe impl cudarc::driver::ValidAsZeroBits for F8E5M2 {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compile-time check of the element types (a `const fn`, so that `Int<9>` fails to
    /// compile) agrees with `DType::is_valid` on every width.
    #[test]
    fn the_const_check_agrees_with_is_valid() {
        let mut types = vec![];
        for b in 0..=9 {
            types.extend([DType::Int(b), DType::UInt(b)]);
        }
        for exp in 0..=6 {
            for man in 0..=7 {
                types.push(DType::Float { exp, man });
            }
        }
        for t in types {
            let passes = std::panic::catch_unwind(|| checked(t)).is_ok();
            assert_eq!(passes, t.is_valid(), "{t:?}");
        }
    }

    #[test]
    fn packing_is_little_endian_and_round_trips() {
        let v: Vec<U4> = [1u8, 2, 3, 0xf, 0].iter().map(|&c| UInt(c)).collect();
        assert_eq!(pack(&v), vec![0x21, 0xf3, 0x00]);
        assert_eq!(unpack::<U4>(&pack(&v), 5), v);
        // 3-bit codes straddle bytes
        let w: Vec<Int<3>> = (0..11).map(|i| Int::wrapping(i - 5)).collect();
        let p = pack(&w);
        assert_eq!(p.len(), 5);
        assert_eq!(unpack::<Int<3>>(&p, 11), w);
        assert_eq!(w[0].value(), 3, "-5 wraps to 3 in three bits");
        assert_eq!(Int::<3>::wrapping(-1).value(), -1);
        assert_eq!(UInt::<4>::wrapping(17).value(), 1);
        assert_eq!(UInt::<2>::wrapping(-1).value(), 3);
        assert_eq!(UInt::<8>::wrapping(200).code(), 200);
        let f: Vec<F6E3M2> = [0.0f32, 28.0, -0.0625, 100.0]
            .iter()
            .map(|&x| Float::from_f32(x))
            .collect();
        assert_eq!(unpack::<F6E3M2>(&pack(&f), 4), f);
        assert_eq!(f[3].to_f32(), 28.0, "saturates");
        // from f64, rounded once: 2.6 between 2 and 3 of e2m1, 5.1 between 4 and 6
        assert_eq!(F4E2M1::from_f64(2.6).to_f64(), 3.0);
        assert_eq!(F4E2M1::from_f64(5.1).to_f64(), 6.0);
        assert_eq!(F4E2M1::from_f64(-0.25).to_f64(), -0.0);
    }
}
