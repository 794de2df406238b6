//! Conversions of the low-precision element types (`DType::Int`, `DType::UInt`,
//! `DType::Float`) between their codes and the compute types. A register tile of such a type
//! keeps one code per element (a `u8`); its values are computed in `float` (floats) or `i32`
//! (integers), as the 16-bit floats are in `float`.
//!
//! The floats follow `ir::FloatFormat`'s rules, bit for bit: decoding is exact, and encoding
//! rounds to nearest even and saturates. The FP8 formats encode with the hardware's
//! `cvt.rn.satfinite` (whose rules those are); the others through one integer algorithm: the
//! value's count of quanta (the format's spacing in its binade) rounded by `rintf`, which is
//! already the code once the binade's index is added in.

use super::{Emitter, Helper};
use crate::ir::{DType, FloatFormat};

/// A conversion function of one low-precision float type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum LowpHelper {
    /// `float tilus_from_<t>(u32 code)`: the exact value.
    Decode(DType),
    /// `u32 tilus_to_<t>(float x)`: the code, rounded and saturated.
    Encode(DType),
    /// `u32 tilus_f16x2_from_<t>x2(u16 codes)`: two FP8 codes (the first in the low byte) as
    /// two f16 (the first in the low half), by the hardware's exact conversion.
    PairToF16(DType),
    /// `u32 tilus_f16x2_from_field(u32 x, u32 mask, u32 magic, u32 scale, u32 minus)`: the
    /// field `mask` of each half of `x` made the low mantissa bits of an f16 of 1024.0 (one
    /// `lop3`: `(x & mask) ^ magic`), then `· scale + minus` in one packed fused multiply-add,
    /// exact ([`IntField`]).
    FieldToF16,
}

/// The compute-type value (a C expression) of the code `code` of low-precision type `t`.
pub(super) fn decode(e: &mut Emitter, t: DType, code: &str) -> String {
    match t {
        DType::Int(b) => {
            let s = 32 - b as u32;
            format!("(((i32)((u32)({code}) << {s})) >> {s})")
        }
        DType::UInt(b) => format!("((u32)({code}) & {}u)", mask(b)),
        _ => {
            e.use_helper(Helper::Lowp(LowpHelper::Decode(t)));
            format!("tilus_from_{}((u32)({code}))", t.name())
        }
    }
}

/// The code (a `u32` C expression) of a compute-type value `v` of type `from` converted to
/// low-precision type `t`. Integers keep their low bits (as C's conversions between integers
/// do); floats to integers truncate toward zero first.
pub(super) fn encode(e: &mut Emitter, t: DType, v: &str, from: DType) -> String {
    match t {
        DType::Int(b) | DType::UInt(b) => {
            let int = if from.is_float() {
                format!("(u32)__float2int_rz({v})")
            } else {
                format!("(u32)({v})")
            };
            format!("({int} & {}u)", mask(b))
        }
        _ => {
            e.use_helper(Helper::Lowp(LowpHelper::Encode(t)));
            let f = if from.is_float() {
                v.to_string()
            } else {
                format!("(float)({v})")
            };
            format!("tilus_to_{}({f})", t.name())
        }
    }
}

/// A small integer type's width and the offset that makes its codes unsigned (the sign bit
/// for signed types); `None` for any other type.
fn int_offset(t: DType) -> Option<(u8, u32)> {
    match t {
        DType::Int(b) => Some((b, 1u32 << (b - 1))),
        DType::UInt(b) => Some((b, 0)),
        _ => None,
    }
}

/// The `float` value (a C expression) of the code `code` of low-precision type `t` where a
/// fast form exists: small integers by the exponent trick (the code's bits, offset to unsigned,
/// become the low mantissa bits of 2^23, whose subtraction leaves the value exactly: one logic
/// operation and one add instead of the integer conversion at a quarter of the ALU's rate), FP8 by the
/// hardware's exact conversion to f16 (`cvt.rn.f16x2.e4m3x2`, the code alone in the pair)
/// and f16's to f32, instead of the decoder's integer arithmetic. `None` for the others.
pub(super) fn fast_to_f32(e: &mut Emitter, t: DType, code: &str) -> Option<String> {
    match t {
        DType::F8E4M3 | DType::F8E5M2 => {
            e.use_helper(Helper::Lowp(LowpHelper::PairToF16(t)));
            e.use_helper(Helper::Arith(super::arithmetic::ArithHelper::CvtF16));
            Some(format!(
                "tilus_f16_to_f32((u16)tilus_f16x2_from_{}x2((u16)((u32)({code}) & 255u)))",
                t.name()
            ))
        }
        t => int_offset(t).map(|(b, offset)| biased_to_f32(b, offset, code)),
    }
}

/// `(code & mask(b)) ^ offset` as a float, by the exponent trick: those bits become the low
/// mantissa bits of 2^23, whose subtraction (with the offset) leaves the value.
fn biased_to_f32(b: u8, offset: u32, code: &str) -> String {
    // (code & mask) ^ (2^23's bits | the sign bit): the unsigned code plus the offset
    let bits = format!(
        "((((u32)({code})) & {}u) ^ {:#x}u)",
        mask(b),
        0x4B00_0000u32 | offset
    );
    format!(
        "__fsub_rn(__uint_as_float({bits}), {}.0f)",
        (1u32 << 23) + offset
    )
}

/// Two codes `a`, `b` of a small integer type as an f16 pair (a `u32` C expression), by the
/// exponent trick of [`fast_to_f32`] in 16 bits: `1024 + u` is the f16 whose low mantissa
/// bits are `u`, less `1024 + offset` ([`IntField`] at shift 0 of the word the two codes
/// make), times `2^times_log2`. Needs [`LowpHelper::FieldToF16`].
pub(super) fn small_ints_to_f16x2(t: DType, a: &str, b: &str, times_log2: i32) -> String {
    let m = mask(
        int_offset(t)
            .expect("small_ints_to_f16x2 takes integer types")
            .0,
    );
    let word = format!("(((u32)({a}) & {m}u) | (((u32)({b}) & {m}u) << 16))");
    small_int_pair_to_f16x2(t, &word, 0, times_log2)
}

/// The two codes of a small integer type at bits `shift` and `shift + 16` of the 32-bit
/// word `word` as an f16 pair, exactly ([`IntField`]): at most one shift, by a whole byte,
/// then one `lop3` and one packed fused multiply-add, times `2^times_log2` (a power of two
/// from 2^-4 to 2^4, taken into the constants: exact). Needs [`LowpHelper::FieldToF16`].
pub(super) fn small_int_pair_to_f16x2(t: DType, word: &str, shift: u32, times_log2: i32) -> String {
    let f = IntField::of(t, shift, times_log2);
    let x = if f.word_shift == 0 {
        format!("(u32)({word})")
    } else {
        format!("((u32)({word}) >> {})", f.word_shift)
    };
    format!(
        "tilus_f16x2_from_field({x}, {:#x}u, {:#x}u, {:#x}u, {:#x}u)",
        f.mask, f.magic, f.scale, f.minus
    )
}

/// How two codes of a small integer type, at bits `s` and `s + 16` of a word, become an f16
/// pair. The word is shifted right by whole bytes only (`s` rounded down to one), so that
/// the fields of a byte share one shifted word (none for the codes of the low byte of each
/// half); each code stays `p = s mod 8` bits up in its half where `p + b ≤ 10`, made the
/// mantissa of an f16 `1024 + (u ^ offset) · 2^p` by masking and one xor (`offset` the sign
/// bit of signed types: the code then unsigned), and `· 2^-p - (2^(10-p) + offset)`, every
/// constant and result exact in f16, leaves its value. Where `p + b` would pass 10 the word
/// is shifted by `s` and `p` is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IntField {
    /// The right shift of the word.
    word_shift: u32,
    /// Both codes' bits in the shifted word.
    mask: u32,
    /// 1024.0's f16 bits in both halves, with the offset at the codes' top bits.
    magic: u32,
    /// 2^-p in both halves.
    scale: u32,
    /// -(2^(10-p) + offset) in both halves.
    minus: u32,
}

impl IntField {
    /// The field at `shift`, its value times `2^times_log2` (from 2^-4 to 2^4: the constants
    /// stay exact f16 values).
    fn of(t: DType, shift: u32, times_log2: i32) -> IntField {
        let (b, offset) = int_offset(t).expect("IntField takes integer types");
        let up = if shift % 8 + b as u32 <= 10 {
            shift % 8
        } else {
            0
        };
        let pair = |h: f32| half::f16::from_f32(h).to_bits() as u32 * 0x1_0001;
        IntField {
            word_shift: shift - up,
            mask: (mask(b) << up) * 0x1_0001,
            magic: (0x6400 | (offset << up)) * 0x1_0001,
            scale: pair(2f32.powi(times_log2 - up as i32)),
            minus: pair(-(2f32.powi(10 - up as i32) + offset as f32) * 2f32.powi(times_log2)),
        }
    }

    /// The pair the emitted C computes from `word` (each half's fused multiply-add exact in
    /// f16, as `fma.rn.f16x2` rounds it).
    #[cfg(test)]
    fn pair(self, word: u32) -> [half::f16; 2] {
        use half::f16;
        let x = ((word >> self.word_shift) & self.mask) ^ self.magic;
        let half = |v: u32, h: u32| f16::from_bits((v >> h) as u16).to_f64();
        [0, 16].map(|h| f16::from_f64(half(x, h) * half(self.scale, h) + half(self.minus, h)))
    }
}

/// The format of float type `t` when its codes become f16 values by placing their bits
/// ([`small_float_pair_to_f16x2`]): no infinities or NaN (a code's top exponent is an
/// ordinary binade, which f16's is not), at most 4 exponent bits (each exponent an f16
/// exponent below f16's top) and 10 mantissa bits — f4e2m1, f6e2m3, f6e3m2, f3e1m1.
pub(super) fn placeable(t: DType) -> Option<FloatFormat> {
    t.float_format()
        .filter(|f| !f.has_nan() && f.exp <= 4 && f.man <= 10)
}

/// How the codes of a placeable float format become f16 values ([`placeable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Placement {
    /// The sign's bit in a code (moved to bit 15 of its half).
    sign_at: u32,
    /// The exponent and mantissa bits of a code, from bit 0.
    fields: u32,
    /// Where they go in a half: f16's mantissa is 10 bits, the code's top mantissa bit
    /// below f16's exponent.
    fields_to: u32,
    /// The f16 bits of 2^(15 - bias), which restores the value.
    restore: u32,
}

impl Placement {
    fn of(f: FloatFormat) -> Placement {
        Placement {
            sign_at: f.exp + f.man,
            fields: (1u32 << (f.exp + f.man)) - 1,
            fields_to: 10 - f.man,
            // exponent field (15 - bias) + 15
            restore: ((30 - f.bias()) as u32) << 10,
        }
    }

    /// The placed pair (before the restoring multiplication) of the codes at bits `shift`
    /// and `shift + 16` of `word`: what the emitted C computes.
    #[cfg(test)]
    fn placed(self, word: u32, shift: u32) -> u32 {
        let moved = |from: u32, to: u32| {
            if to >= from {
                word << (to - from)
            } else {
                word >> (from - to)
            }
        };
        (moved(shift + self.sign_at, 15) & 0x8000_8000)
            | (moved(shift, self.fields_to) & ((self.fields << self.fields_to) * 0x1_0001))
    }
}

/// The two codes of float type `t` at bits `shift` and `shift + 16` of the 32-bit word
/// `word` as an f16 pair, exactly: each code's sign moved to bit 15 of its half, its exponent
/// and mantissa bits to the low bits of f16's exponent and the top of its mantissa (one
/// shift and one mask for each field, both halves at once), which gives the code's value
/// times 2^(bias - 15) — normals and subnormals alike, the two formats' subnormals sharing
/// their smallest normal exponent — and one packed multiplication by 2^(15 - bias), exact,
/// restores it. Needs `tilus_mul_f16x2`.
pub(super) fn small_float_pair_to_f16x2(t: DType, word: &str, shift: u32) -> String {
    let f = placeable(t).expect("small_float_pair_to_f16x2 takes placeable float types");
    let p = Placement::of(f);
    let moved = |from: u32, to: u32| {
        if to >= from {
            format!("((u32)({word}) << {})", to - from)
        } else {
            format!("((u32)({word}) >> {})", from - to)
        }
    };
    let sign = format!("({} & 0x80008000u)", moved(shift + p.sign_at, 15));
    let bits = format!(
        "({} & {:#x}u)",
        moved(shift, p.fields_to),
        (p.fields << p.fields_to) * 0x1_0001
    );
    format!(
        "tilus_mul_f16x2(({sign} | {bits}), {:#x}u)",
        p.restore * 0x1_0001
    )
}

/// Two codes `a`, `b` of a placeable float type as an f16 pair: placed in their halves of
/// one word, then as [`small_float_pair_to_f16x2`].
pub(super) fn small_floats_to_f16x2(t: DType, a: &str, b: &str) -> String {
    let f = placeable(t).expect("small_floats_to_f16x2 takes placeable float types");
    let m = (1u32 << f.bits()) - 1;
    let word = format!("(((u32)({a}) & {m}u) | (((u32)({b}) & {m}u) << 16))");
    small_float_pair_to_f16x2(t, &word, 0)
}

fn mask(b: u8) -> u32 {
    ((1u64 << b) - 1) as u32
}

/// The C text of a helper.
pub(crate) fn helper_text(h: LowpHelper) -> String {
    match h {
        LowpHelper::Decode(t) => decode_text(t),
        LowpHelper::Encode(t) => encode_text(t),
        LowpHelper::FieldToF16 => "// The field `mask` of each half of `x` made the low mantissa bits of an f16 of 1024.0\n\
             // (`magic`'s bits, with the xor that makes signed codes unsigned), then times `scale` plus\n\
             // `minus`: each integer's value, exact.\n\
             static __device__ __forceinline__ u32 tilus_f16x2_from_field(u32 x, u32 mask, u32 magic, u32 scale, u32 minus) {\n  \
             u32 t, r;\n  asm(\"lop3.b32 %0, %1, %2, %3, 0x6a;\" : \"=r\"(t) : \"r\"(x), \"r\"(mask), \"r\"(magic));\n  \
             asm(\"fma.rn.f16x2 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(t), \"r\"(scale), \"r\"(minus));\n  return r;\n}\n"
            .to_string(),
        LowpHelper::PairToF16(t) => {
            let (name, ptx) = (
                t.name(),
                if t == DType::F8E5M2 {
                    "e5m2x2"
                } else {
                    "e4m3x2"
                },
            );
            format!(
                "// Two {name} codes (the first in the low byte) as two f16 (the first in the low half), exact.\n\
                 static __device__ __forceinline__ u32 tilus_f16x2_from_{name}x2(u16 x) {{\n  \
                 u32 r;\n  asm(\"cvt.rn.f16x2.{ptx} %0, %1;\" : \"=r\"(r) : \"h\"(x));\n  return r;\n}}\n"
            )
        }
    }
}

fn format_of(t: DType) -> FloatFormat {
    t.float_format()
        .expect("lowp helpers are for the verified low-precision floats")
}

fn decode_text(t: DType) -> String {
    let f = format_of(t);
    let (name, e, m) = (t.name(), f.exp, f.man);
    let emask = (1u32 << e) - 1;
    let mmask = (1u32 << m) - 1;
    // subnormals: m quanta of 2^(1 - bias - man); normals: the f32 with the exponent rebiased
    let sub_scale = super::float_literal(f.decode(1));
    let rebias = 127 - f.bias();
    let special = if f.has_inf() {
        format!(
            "  if (e == {emask}u) v = m == 0u ? __int_as_float(0x7f800000) : __int_as_float(0x7fffffff);\n"
        )
    } else if f.has_nan() {
        format!("  if (e == {emask}u && m == {mmask}u) v = __int_as_float(0x7fffffff);\n")
    } else {
        String::new()
    };
    format!(
        "// {name} -> f32, exact (a sign bit; exponent: {e} bits, bias {bias}; mantissa: {m}).\n\
         static __device__ __forceinline__ float tilus_from_{name}(u32 c) {{\n  \
         const u32 e = (c >> {m}) & {emask}u, m = c & {mmask}u;\n  \
         float v = e == 0u ? (float)m * {sub_scale} : __uint_as_float(((e + {rebias}u) << 23) | (m << {shift}));\n\
         {special}  \
         return (c >> {sign}) & 1u ? -v : v;\n}}\n",
        bias = f.bias(),
        shift = 23 - m,
        sign = e + m,
    )
}

fn encode_text(t: DType) -> String {
    let f = format_of(t);
    let name = t.name();
    if f.bits() == 8 {
        let ptx = if f.has_inf() { "e5m2x2" } else { "e4m3x2" };
        return format!(
            "// f32 -> {name}: round to nearest even, saturate to the largest finite value\n\
             // (infinities included), NaN to NaN.\n\
             static __device__ __forceinline__ u32 tilus_to_{name}(float x) {{\n  \
             u16 r;\n  asm(\"cvt.rn.satfinite.{ptx}.f32 %0, %1, %2;\" : \"=h\"(r) : \"f\"(0.0f), \"f\"(x));\n  \
             return (u32)r & 0xffu;\n}}\n"
        );
    }
    let (e, m) = (f.exp, f.man);
    let emin = 1 - f.bias();
    let max = super::float_literal(f.max_value());
    let nan = f.nan_code().unwrap_or(f.max_code());
    format!(
        "// f32 -> {name}: round to nearest even, saturate to the largest finite value\n\
         // (infinities included); NaN becomes {nan:#x}. q counts quanta of the value's binade (at\n\
         // least the subnormals'), so the code is the binade's index times 2^{m} plus q.\n\
         static __device__ __forceinline__ u32 tilus_to_{name}(float x) {{\n  \
         const u32 s = (__float_as_uint(x) >> 31) << {sign};\n  \
         const float a = fabsf(x);\n  \
         if (a != a) return {nan}u;\n  \
         if (a >= {max}) return s | {maxc}u;\n  \
         const i32 b = max((i32)((__float_as_uint(a) >> 23) & 255u) - 127, {emin});\n  \
         const u32 q = (u32)rintf(a * __uint_as_float((u32)(127 + {m} - b) << 23));\n  \
         return s | min((u32)(b - ({emin})) * {step}u + q, {maxc}u);\n}}\n",
        sign = e + m,
        maxc = f.max_code(),
        step = 1u32 << m,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    /// Every code of every integer type of 1 to 8 bits, signed and unsigned, in either half of
    /// a word at every shift that leaves room for its partner, among random other bits, times
    /// each power of two from 2^-4 to 2^4: the emitted field conversion gives its value (times
    /// the factor), and shifts the word by whole bytes only
    /// (none within the low byte of each half for codes of up to 2 bits and 4-bit codes at 0
    /// and 4).
    #[test]
    fn integer_fields_are_their_values_in_f16() {
        let mut noise = 0x2545_f491u32;
        for b in 1..=8u8 {
            for t in [DType::Int(b), DType::UInt(b)] {
                let (_, offset) = int_offset(t).unwrap();
                for (shift, times) in
                    (0..=(16 - b as u32)).flat_map(|s| (-4..=4).map(move |k| (s, k)))
                {
                    let f = IntField::of(t, shift, times);
                    if b <= 2 || (b == 4 && shift % 4 == 0) {
                        assert_eq!(f.word_shift % 8, 0, "{t} at {shift}");
                    }
                    for code in 0..(1u32 << b) {
                        let partner = (code * 5 + 1) & mask(b);
                        noise = noise.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        let field = mask(b) << shift;
                        let word = (noise & !(field | (field << 16)))
                            | (code << shift)
                            | (partner << (shift + 16));
                        let value = |c: u32| {
                            let v = c as f64
                                - if c & offset != 0 {
                                    2.0 * offset as f64
                                } else {
                                    0.0
                                };
                            v * 2f64.powi(times)
                        };
                        let got = f.pair(word);
                        for (g, c) in got.iter().zip([code, partner]) {
                            assert_eq!(g.to_f64(), value(c), "{t} code {c:#x} at shift {shift}");
                        }
                    }
                }
            }
        }
    }

    /// The emitted pair conversion shifts the word by the field's whole bytes only, and not
    /// at all within the low byte: 4-bit codes at bits 4 and 12 read the word as it is and
    /// shifted by 8, with the field's own mask and constants.
    #[test]
    fn integer_pairs_shift_their_word_by_whole_bytes() {
        let at = |shift| small_int_pair_to_f16x2(DType::Int(4), "w", shift, 0);
        assert_eq!(
            at(4),
            "tilus_f16x2_from_field((u32)(w), 0xf000f0u, 0x64806480u, 0x2c002c00u, 0xd480d480u)"
        );
        assert_eq!(
            at(12),
            "tilus_f16x2_from_field(((u32)(w) >> 8), 0xf000f0u, 0x64806480u, 0x2c002c00u, 0xd480d480u)"
        );
        // 8-bit codes: at 8, the word shifted by a byte, no scaling
        let i8 = small_int_pair_to_f16x2(DType::Int(8), "w", 8, 0);
        assert_eq!(
            i8,
            "tilus_f16x2_from_field(((u32)(w) >> 8), 0xff00ffu, 0x64806480u, 0x3c003c00u, 0xe480e480u)"
        );
        // two separate codes: one word of both, masked, at shift 0
        let two = small_ints_to_f16x2(DType::UInt(2), "a", "b", 0);
        assert!(two.starts_with("tilus_f16x2_from_field((u32)((((u32)(a) & 3u) | (((u32)(b) & 3u) << 16))), 0x30003u, 0x64006400u, "), "{two}");
    }

    /// Every code of every placeable float format, in either half of a word at every shift
    /// that leaves room for its partner, among random other bits: placed and multiplied by
    /// the restoring power of two (each step exact in f16, as `mul.rn.f16x2` computes it), it
    /// is the code's value, bit for bit (negative zero included).
    #[test]
    fn placed_float_codes_are_their_values_in_f16() {
        let mut formats = vec![];
        for exp in 1..=5u8 {
            for man in 0..=(7 - exp) {
                let t = DType::Float { exp, man };
                if t.float_format().is_none() {
                    continue; // (no such type: fewer than 3 bits)
                }
                match placeable(t) {
                    Some(f) => formats.push(f),
                    // (e5 formats have infinities, e4m3 its NaN)
                    None => assert!(exp == 5 || (exp, man) == (4, 3), "{t}"),
                }
            }
        }
        assert!(formats.contains(&DType::F4E2M1.float_format().unwrap()));
        let mut noise = 0x9e37_79b9u32;
        for f in formats {
            let p = Placement::of(f);
            let restore = f16::from_bits(p.restore as u16);
            assert_eq!(restore.to_f64(), 2f64.powi(15 - f.bias()), "{f:?}");
            let bits = f.bits();
            for shift in 0..=(16 - bits) {
                for code in 0..(1u32 << bits) {
                    let partner = (code * 7 + 3) & ((1 << bits) - 1);
                    noise = noise.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    let field = ((1u32 << bits) - 1) << shift;
                    let word = (noise & !(field | (field << 16)))
                        | (code << shift)
                        | (partner << (shift + 16));
                    let placed = p.placed(word, shift);
                    for (half, c) in [(placed & 0xffff, code), (placed >> 16, partner)] {
                        let got = f16::from_bits(half as u16) * restore;
                        let want = f16::from_f64(f.decode(c));
                        assert_eq!(
                            got.to_bits(),
                            want.to_bits(),
                            "{f:?} code {c:#x} at shift {shift}: {got} against {want}"
                        );
                    }
                }
            }
        }
    }
}
