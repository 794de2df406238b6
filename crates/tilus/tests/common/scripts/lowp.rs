//! Low-precision element types against plain references written here from the formats'
//! definitions, apart from the library's codec: [`reference_value`] reads a code's fields,
//! [`reference_code`] searches every code for the nearest value.
//! - [`DecodeCodes`]: every code of an 8-bit type loaded from memory and cast to f32, f16 and
//!   bf16;
//! - [`EncodeValues`]: f32 and f16 values cast to an 8-bit type and stored as codes;
//! - [`RoundTrip`]: f32 → type → f32 in registers, for every type (those narrower than a byte
//!   included).
//!
//! Run by the interpreter (`interp/lowp.rs`) and the GPU (`runtime/gpu.rs`), compiled by the
//! compile tests (`compiler/codegen.rs`).

use half::{bf16, f16};
use std::marker::PhantomData;
use tilus::ir::DType;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// The value of `code` in `t`, from its fields: integers sign-extended or not; floats
/// `(-1)^s · 2^(e - bias) · 1.m`, or `0.m · 2^(1 - bias)` below the smallest exponent, with
/// the specials of the OCP formats (E5: infinities and NaNs at the top exponent; E4M3: NaN at
/// all ones; the others: none).
pub fn reference_value(t: DType, code: u32) -> f64 {
    match t {
        DType::Int(b) => {
            let c = code & ((1 << b) - 1);
            if c >= 1 << (b - 1) {
                c as f64 - (1u32 << b) as f64
            } else {
                c as f64
            }
        }
        DType::UInt(b) => (code & ((1 << b) - 1)) as f64,
        DType::Float { exp, man } => {
            let (exp, man) = (exp as u32, man as u32);
            let sign = (code >> (exp + man)) & 1;
            let e = (code >> man) & ((1 << exp) - 1);
            let m = code & ((1 << man) - 1);
            let top = (1 << exp) - 1;
            if exp == 5 && e == top {
                return if m != 0 {
                    f64::NAN
                } else if sign == 1 {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                };
            }
            if (exp, man) == (4, 3) && e == top && m == (1 << man) - 1 {
                return f64::NAN;
            }
            let bias = (1i32 << (exp - 1)) - 1;
            let fraction = m as f64 / (1u32 << man) as f64;
            let magnitude = if e == 0 {
                fraction * 2f64.powi(1 - bias)
            } else {
                (1.0 + fraction) * 2f64.powi(e as i32 - bias)
            };
            if sign == 1 {
                -magnitude
            } else {
                magnitude
            }
        }
        _ => unreachable!("not a low-precision type"),
    }
}

/// The code a conversion of `x` into float type `t` must give, by search: among the finite
/// codes of `x`'s sign, the nearest value (the largest past the top: saturation), ties to the
/// even code; NaN to the format's all-ones code where it has NaN, else to the largest positive.
pub fn reference_code(t: DType, x: f64) -> u32 {
    let bits = t.bits();
    let sign = 1u32 << (bits - 1);
    if x.is_nan() {
        let all = sign - 1;
        return if reference_value(t, all).is_nan() {
            all
        } else {
            (0..sign)
                .filter(|&c| reference_value(t, c).is_finite())
                .max_by(|&a, &b| reference_value(t, a).total_cmp(&reference_value(t, b)))
                .unwrap()
        };
    }
    let s = if x.is_sign_negative() { sign } else { 0 };
    // past twice the largest value (an infinity too) the largest is the nearest: clamp there,
    // where the distances still differ
    let largest = (0..sign)
        .map(|c| reference_value(t, c))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let a = x.abs().min(2.0 * largest);
    let mut best: Option<(f64, u32)> = None;
    for c in 0..sign {
        let v = reference_value(t, c);
        if !v.is_finite() {
            continue;
        }
        let d = (v - a).abs();
        best = match best {
            Some((bd, bc)) if bd < d || (bd == d && bc % 2 == 0) => Some((bd, bc)),
            _ => Some((d, c)),
        };
    }
    s | best.unwrap().1
}

/// f32 inputs that drive every branch of a conversion into float type `t`: every value,
/// the midpoints of neighbours and points a little either side, past the largest,
/// infinities, NaN, zeros of both signs, tiny values, and `random` values in range.
pub fn float_inputs(t: DType, random: &[f32]) -> Vec<f32> {
    let n = 1u32 << t.bits();
    let mut values: Vec<f64> = (0..n / 2)
        .map(|c| reference_value(t, c))
        .filter(|v| v.is_finite())
        .collect();
    values.sort_by(f64::total_cmp);
    let max = *values.last().unwrap();
    let mut x = vec![];
    for w in values.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let mid = (lo + hi) / 2.0;
        x.extend([lo, mid, mid - (hi - lo) / 16.0, mid + (hi - lo) / 16.0]);
    }
    x.extend([max, max * 1.01, max * 1.5, max * 1e6, 1e-30, 0.0]);
    let mut out: Vec<f32> = x.iter().flat_map(|&v| [v as f32, -(v as f32)]).collect();
    out.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -0.0]);
    out.extend(random.iter().map(|&r| r * max as f32 * 1.2));
    out
}

/// Every code of 8-bit type `T` loaded from memory (`[256]` codes) and cast to f32, f16 and
/// bf16 (all exact).
#[derive(Clone, Copy, Debug, Hash)]
pub struct DecodeCodes<T> {
    pub warps: u32,
    pub _t: PhantomData<fn() -> T>,
}

impl<T> DecodeCodes<T> {
    pub fn new(warps: u32) -> Self {
        DecodeCodes {
            warps,
            _t: PhantomData,
        }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for DecodeCodes<T> {
    type Args = (Ptr<T>, PtrMut<f32>, PtrMut<f16>, PtrMut<bf16>);
    fn body(&self, k: &mut Kernel, (codes, f, h, b): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(self.warps);
        let g = k.global_view(codes, [256]);
        let (gf, gh, gb) = (
            k.global_view(f, [256]),
            k.global_view(h, [256]),
            k.global_view(b, [256]),
        );
        let t = k.load_global(&g, [0], [256]);
        let tf = k.cast::<f32>(&t);
        let th = k.cast::<f16>(&t);
        let tb = k.cast::<bf16>(&t);
        k.store_global(&gf, &tf, [0]);
        k.store_global(&gh, &th, [0]);
        k.store_global(&gb, &tb, [0]);
    }
}

/// `n` f32 values and `n` f16 values cast to 8-bit type `T` and stored as codes.
#[derive(Clone, Copy, Debug, Hash)]
pub struct EncodeValues<T> {
    pub n: i32,
    pub warps: u32,
    pub _t: PhantomData<fn() -> T>,
}

impl<T> EncodeValues<T> {
    pub fn new(n: i32, warps: u32) -> Self {
        EncodeValues {
            n,
            warps,
            _t: PhantomData,
        }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for EncodeValues<T> {
    type Args = (Ptr<f32>, Ptr<f16>, PtrMut<T>, PtrMut<T>);
    fn body(&self, k: &mut Kernel, (x, h, cx, ch): Handles<Self::Args>) {
        let n = self.n;
        k.blocks([1]);
        k.warps(self.warps);
        let (gx, gh) = (k.global_view(x, [n]), k.global_view(h, [n]));
        let (gcx, gch) = (k.global_view(cx, [n]), k.global_view(ch, [n]));
        let tx = k.load_global(&gx, [0], [n]);
        let th = k.load_global(&gh, [0], [n]);
        let ox = k.cast::<T>(&tx);
        let oh = k.cast::<T>(&th);
        k.store_global(&gcx, &ox, [0]);
        k.store_global(&gch, &oh, [0]);
    }
}

/// `y = f32(T(x))` for `n` values, in registers: `T` any low-precision type. A second output
/// goes through an elementwise expression into a `T` tile (`z = f32(T(x · 1 + 0))`), the path
/// a kernel's arithmetic on such tiles takes.
#[derive(Clone, Copy, Debug, Hash)]
pub struct RoundTrip<T> {
    pub n: i32,
    pub warps: u32,
    pub _t: PhantomData<fn() -> T>,
}

impl<T> RoundTrip<T> {
    pub fn new(n: i32, warps: u32) -> Self {
        RoundTrip {
            n,
            warps,
            _t: PhantomData,
        }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for RoundTrip<T> {
    type Args = (Ptr<f32>, PtrMut<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (x, y, z): Handles<Self::Args>) {
        let n = self.n;
        k.blocks([1]);
        k.warps(self.warps);
        let gx = k.global_view(x, [n]);
        let (gy, gz) = (k.global_view(y, [n]), k.global_view(z, [n]));
        let tx = k.load_global(&gx, [0], [n]);
        let low = k.cast::<T>(&tx);
        let back = k.cast::<f32>(&low);
        k.store_global(&gy, &back, [0]);
        let mapped = k.compute::<T>((tx * 1.0 + 0.0).cast::<T>());
        let again = k.cast::<f32>(&mapped);
        k.store_global(&gz, &again, [0]);
    }
}

/// What `y` must hold for input `x` in [`RoundTrip`]: the value of the reference code for
/// floats; for integers, `x` truncated toward zero and wrapped to the type's bits.
pub fn round_trip_expected(t: DType, x: f32) -> f32 {
    match t {
        DType::Float { .. } => reference_value(t, reference_code(t, f64::from(x))) as f32,
        _ => {
            let i = x as i32; // toward zero, saturating, NaN to 0: as `__float2int_rz`
            reference_value(t, i as u32) as f32
        }
    }
}

/// Same value, or both NaN (a NaN's sign and payload are not compared).
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Checks [`DecodeCodes`]' outputs for type `t` (code `c` at index `c`).
pub fn check_decoded(t: DType, f: &[f32], h: &[f16], b: &[bf16]) {
    for c in 0..256u32 {
        let want = reference_value(t, c);
        let i = c as usize;
        assert!(
            same(f64::from(f[i]), want),
            "{t} code {c:#04x}: f32 {} vs {want}",
            f[i]
        );
        assert!(
            same(h[i].to_f64(), want),
            "{t} code {c:#04x}: f16 {} vs {want}",
            h[i]
        );
        assert!(
            same(b[i].to_f64(), want),
            "{t} code {c:#04x}: bf16 {} vs {want}",
            b[i]
        );
    }
}

/// [`EncodeValues`]' inputs for type `t`: f32 values and the same rounded to f16.
pub fn encode_inputs(t: DType) -> (Vec<f32>, Vec<f16>) {
    use crate::common::inputs::{fresh_seed, random_f32};
    let x = float_inputs(t, &random_f32(512, fresh_seed()));
    let h = x.iter().map(|&v| f16::from_f32(v)).collect();
    (x, h)
}

/// Checks [`EncodeValues`]' codes for type `t`.
pub fn check_encoded(t: DType, (x, h): (&[f32], &[f16]), cx: &[u8], ch: &[u8]) {
    for i in 0..x.len() {
        let want = reference_code(t, f64::from(x[i]));
        assert_eq!(
            u32::from(cx[i]),
            want,
            "{t}: f32 {} gave {:#04x}, not {want:#04x}",
            x[i],
            cx[i]
        );
        let want = reference_code(t, h[i].to_f64());
        assert_eq!(
            u32::from(ch[i]),
            want,
            "{t}: f16 {} gave {:#04x}, not {want:#04x}",
            h[i],
            ch[i]
        );
    }
}

/// [`RoundTrip`]'s inputs for type `t`: [`float_inputs`] for floats; for integers every value
/// in quarter steps past both ends, fractions of both signs, huge values and NaN.
pub fn round_trip_inputs(t: DType) -> Vec<f32> {
    use crate::common::inputs::{fresh_seed, random_f32};
    let random = random_f32(256, fresh_seed());
    match t {
        DType::Float { .. } => float_inputs(t, &random),
        _ => {
            let mut x: Vec<f32> = (-300..300).map(|v| v as f32 * 0.75).collect();
            x.extend([f32::NAN, 1e10, -1e10, -0.5, 0.5]);
            x.extend(random.iter().map(|r| r * 600.0));
            x
        }
    }
}

/// Checks [`RoundTrip`]'s outputs for type `t`.
pub fn check_round_trip(t: DType, x: &[f32], y: &[f32], z: &[f32]) {
    for i in 0..x.len() {
        let want = round_trip_expected(t, x[i]);
        assert!(
            same(f64::from(y[i]), f64::from(want)),
            "{t}: cast of {} gave {}, not {want}",
            x[i],
            y[i]
        );
        let want = round_trip_expected(t, x[i] * 1.0 + 0.0);
        assert!(
            same(f64::from(z[i]), f64::from(want)),
            "{t}: compute of {} gave {}, not {want}",
            x[i],
            z[i]
        );
    }
}

/// The types [`RoundTrip`] runs over: every float format of the issue and a few others
/// (E4M2, E5M1, E1M4, E1M2), integers of 8, 5, 4, 3 and 1 bits signed, 8, 4 and 2 unsigned.
#[macro_export]
macro_rules! for_round_trip_types {
    ($m:ident) => {
        $m!(
            tilus::lowp::F8E4M3,
            tilus::lowp::F8E5M2,
            tilus::lowp::Float<4, 2>,
            tilus::lowp::Float<5, 1>,
            tilus::lowp::F6E3M2,
            tilus::lowp::F6E2M3,
            tilus::lowp::Float<1, 4>,
            tilus::lowp::F4E2M1,
            tilus::lowp::Float<1, 2>,
            tilus::lowp::F3E1M1,
            tilus::lowp::I8,
            tilus::lowp::U8,
            tilus::lowp::Int<5>,
            tilus::lowp::I4,
            tilus::lowp::Int<3>,
            tilus::lowp::U4,
            tilus::lowp::U2,
            tilus::lowp::Int<1>
        )
    };
}

/// Packed views (elements narrower than a byte, `global_view_packed_strided`): a `[rows, cols]`
/// view with a row pitch of `ld` elements, loaded into a `[8, 128]` tile (the view smaller:
/// vectors the view's end cuts, rows past it), decoded to f32 and stored; and f32 values cast
/// to the type and stored into a second packed view of the same shape, whose bits past each
/// row's `cols` elements (the rest of its pitch) must stay as they were.
#[derive(Clone, Copy, Debug, Hash)]
pub struct PackedViews<T> {
    pub rows: i32,
    pub cols: i32,
    pub ld: i32,
    pub warps: u32,
    pub _t: PhantomData<fn() -> T>,
}

/// The tile [`PackedViews`] moves.
pub const PACKED_TILE: [i32; 2] = [8, 128];

impl<T> PackedViews<T> {
    pub fn new(rows: i32, cols: i32, ld: i32, warps: u32) -> Self {
        PackedViews {
            rows,
            cols,
            ld,
            warps,
            _t: PhantomData,
        }
    }

    /// Bytes of a packed `[rows, ld]` buffer of `t`.
    pub fn packed_bytes(&self, t: DType) -> usize {
        (self.rows as usize * self.ld as usize * t.bits() as usize).div_ceil(8)
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for PackedViews<T> {
    type Args = (Ptr<u8>, PtrMut<f32>, Ptr<f32>, PtrMut<u8>);
    fn body(&self, k: &mut Kernel, (w, dec, x, out): Handles<Self::Args>) {
        let (rows, cols, ld) = (self.rows, self.cols, self.ld);
        k.blocks([1]);
        k.warps(self.warps);
        let gw = k.global_view_packed_strided::<T>(w, [rows, cols], (ld, 1));
        let gd = k.global_view(dec, [rows, cols]);
        let gx = k.global_view(x, [rows, cols]);
        let go = k.global_view_packed_strided::<T>(out, [rows, cols], (ld, 1));
        let tw = k.load_global(&gw, [0, 0], PACKED_TILE);
        let tf = k.cast::<f32>(&tw);
        k.store_global(&gd, &tf, [0, 0]);
        let tx = k.load_global(&gx, [0, 0], PACKED_TILE);
        let to = k.cast::<T>(&tx);
        k.store_global(&go, &to, [0, 0]);
    }
}

/// The code of element `i` of a packed buffer of `t`.
pub fn packed_code(t: DType, bytes: &[u8], i: usize) -> u32 {
    let b = t.bits() as usize;
    let at = i * b;
    let lo = u32::from(bytes[at / 8]);
    let hi = bytes.get(at / 8 + 1).map_or(0, |&x| u32::from(x));
    (((hi << 8) | lo) >> (at % 8)) & ((1 << b) - 1)
}

impl<T: std::fmt::Debug> PackedViews<T> {
    /// Fresh inputs for type `t`: random packed bytes, f32 values over the type's range (and
    /// past it), and the output buffer's bytes before the launch.
    pub fn inputs(&self, t: DType) -> (Vec<u8>, Vec<f32>, Vec<u8>) {
        use crate::common::inputs::{fresh_seed, random_f32};
        let bytes = |seed: u64| -> Vec<u8> {
            random_f32(self.packed_bytes(t), seed)
                .iter()
                .map(|v| (v.to_bits() >> 7) as u8)
                .collect()
        };
        let range = match t {
            DType::Float { .. } => (0..1u32 << t.bits())
                .map(|c| reference_value(t, c))
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max) as f32,
            _ => (1u32 << t.bits()) as f32,
        };
        let n = (self.rows * self.cols) as usize;
        let x = random_f32(n, fresh_seed())
            .iter()
            .map(|v| v * range * 1.25)
            .collect();
        (bytes(fresh_seed()), x, bytes(fresh_seed()))
    }

    /// Checks a run: `dec` the reference values of `w`'s codes, `out`'s codes those of `x`
    /// converted, and every other bit of `out` as it was (`out0`).
    pub fn check(&self, t: DType, (w, x, out0): (&[u8], &[f32], &[u8]), dec: &[f32], out: &[u8]) {
        let (rows, cols, ld) = (self.rows as usize, self.cols as usize, self.ld as usize);
        let mut want = out0.to_vec();
        for r in 0..rows {
            for c in 0..cols {
                let v = reference_value(t, packed_code(t, w, r * ld + c));
                let got = f64::from(dec[r * cols + c]);
                assert!(
                    same(got, v),
                    "{t} {self:?} [{r}, {c}]: decoded {got}, not {v}"
                );
                let code = match t {
                    DType::Float { .. } => reference_code(t, f64::from(x[r * cols + c])),
                    _ => (x[r * cols + c] as i32) as u32 & ((1 << t.bits()) - 1),
                };
                let at = (r * ld + c) * t.bits() as usize;
                for bit in 0..t.bits() as usize {
                    let (byte, sh) = ((at + bit) / 8, (at + bit) % 8);
                    want[byte] = (want[byte] & !(1 << sh)) | ((((code >> bit) & 1) as u8) << sh);
                }
            }
        }
        for (i, (&g, &e)) in out.iter().zip(&want).enumerate() {
            assert_eq!(
                g, e,
                "{t} {self:?}: byte {i} of the packed output is {g:#04x}, not {e:#04x}"
            );
        }
    }
}

/// The forms [`PackedViews`] runs for `bits`-bit elements: a view that fills whole vectors,
/// one whose row ends cut vectors (with a pitch of whole bytes past it), and a single row.
pub fn packed_forms<T>(bits: u32) -> Vec<PackedViews<T>> {
    let step = (8 / gcd(bits, 8)) as i32;
    vec![
        PackedViews::new(8, 128, 128, 4),
        PackedViews::new(5, 77, 80 + 2 * step, 4),
        PackedViews::new(1, 100, 104, 2),
    ]
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Words unpacked into low-precision elements (`k.unpack`): `[rows, cols / k]` u32 words (`k`
/// elements of `T` each) loaded, unpacked, cast to f32 and stored as `[rows, cols]`; the same
/// from u8 words into a second output.
#[derive(Clone, Copy, Debug, Hash)]
pub struct UnpackWords<T> {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
    pub _t: PhantomData<fn() -> T>,
}

impl<T> UnpackWords<T> {
    pub fn new(rows: i32, cols: i32, warps: u32) -> Self {
        UnpackWords {
            rows,
            cols,
            warps,
            _t: PhantomData,
        }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for UnpackWords<T> {
    type Args = (Ptr<u32>, Ptr<u8>, PtrMut<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (w32, w8, y32, y8): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        let b = <T as LowpElement>::DTYPE.bits() as i32;
        k.blocks([1]);
        k.warps(self.warps);
        let g32 = k.global_view(w32, [rows, cols * b / 32]);
        let g8 = k.global_view(w8, [rows, cols * b / 8]);
        let (gy32, gy8) = (
            k.global_view(y32, [rows, cols]),
            k.global_view(y8, [rows, cols]),
        );
        let words = k.load_global(&g32, [0, 0], [rows, cols * b / 32]);
        let elems = k.unpack::<T>(&words);
        let vals = k.cast::<f32>(&elems);
        k.store_global(&gy32, &vals, [0, 0]);
        let bytes = k.load_global(&g8, [0, 0], [rows, cols * b / 8]);
        let elems = k.unpack::<T>(&bytes);
        let vals = k.cast::<f32>(&elems);
        k.store_global(&gy8, &vals, [0, 0]);
    }
}

impl<T: std::fmt::Debug> UnpackWords<T> {
    /// Packed bytes for `rows * cols` elements of `t`, every code in order first and random
    /// codes after, and the same as u32 words.
    pub fn inputs(&self, t: DType) -> (Vec<u32>, Vec<u8>) {
        use crate::common::inputs::{fresh_seed, random_f32};
        let (n, b) = ((self.rows * self.cols) as usize, t.bits() as usize);
        let random = random_f32(n, fresh_seed());
        let codes: Vec<u32> = (0..n)
            .map(|i| match i < 1 << b {
                true => i as u32,
                false => random[i].to_bits() >> 9,
            } & ((1 << b) - 1))
            .collect();
        let mut bytes = vec![0u8; n * b / 8];
        for (i, c) in codes.iter().enumerate() {
            bytes[i * b / 8] |= (c << (i * b % 8)) as u8;
        }
        let words = bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        (words, bytes)
    }

    /// Checks both outputs: element `i` the reference value of code `i` of the bytes.
    pub fn check(&self, t: DType, bytes: &[u8], y32: &[f32], y8: &[f32]) {
        for i in 0..(self.rows * self.cols) as usize {
            let want = reference_value(t, packed_code(t, bytes, i));
            assert!(
                same(f64::from(y32[i]), want),
                "{t} {self:?} [{i}] from u32: {} vs {want}",
                y32[i]
            );
            assert!(
                same(f64::from(y8[i]), want),
                "{t} {self:?} [{i}] from u8: {} vs {want}",
                y8[i]
            );
        }
    }
}

/// FP8 tensor cores: `c[m, n] = a · bᵀ` for one tile, `a [m, k]` and `b [n, k]` of FP8 types
/// `A` and `B` loaded by TMA into shared memory and multiplied by `wgmma` (K-major, 32 deep
/// per instruction), f32 accumulation.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Fp8Tile<A, B> {
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub _t: PhantomData<fn() -> (A, B)>,
}

impl<A, B> Fp8Tile<A, B> {
    pub fn new(m: i32, n: i32, k: i32) -> Self {
        Fp8Tile {
            m,
            n,
            k,
            _t: PhantomData,
        }
    }
}

impl<A, B> Script for Fp8Tile<A, B>
where
    A: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
    B: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    type Args = (Ptr<A>, Ptr<B>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a_ptr, b_ptr, c_ptr): Handles<Self::Args>) {
        let s = *self;
        k.blocks([1]);
        k.warps(4);
        let ga = k.global_view::<A>(a_ptr, [s.m, s.k]);
        let gb = k.global_view::<B>(b_ptr, [s.n, s.k]);
        let sa = k.shared_tensor::<A>([s.m, s.k]);
        let sb = k.shared_tensor::<B>([s.n, s.k]);
        let acc = k.register_tensor::<f32>([s.m, s.n], 0.0);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
            k.tma().global_to_shared(&ga, &sa, [0, 0], bar[0]);
            k.tma().global_to_shared(&gb, &sb, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        k.wgmma().fence();
        k.wgmma().mma(&sa, &sb.transpose(), &acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        let gc = k.global_view::<f32>(c_ptr, [s.m, s.n]);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

impl<A: LowpElement, B: LowpElement> Fp8Tile<A, B> {
    /// Inputs whose products and sums are exact in any accumulation: multiples of 1/2 in
    /// [-4, 4] (every partial sum a multiple of 1/4 below 2^11).
    pub fn inputs(&self) -> (Vec<A>, Vec<B>) {
        use crate::common::inputs::{fresh_seed, random_f32};
        let half_steps = |n: usize| -> Vec<f32> {
            random_f32(n, fresh_seed())
                .iter()
                .map(|v| (v * 8.0).round().clamp(-8.0, 8.0) / 2.0)
                .collect()
        };
        let code = |t: DType, x: f32| reference_code(t, f64::from(x)) as u8;
        let a = half_steps((self.m * self.k) as usize)
            .iter()
            .map(|&x| A::from_code(code(A::DTYPE, x)))
            .collect();
        let b = half_steps((self.n * self.k) as usize)
            .iter()
            .map(|&x| B::from_code(code(B::DTYPE, x)))
            .collect();
        (a, b)
    }

    /// Checks `c` against the host's product of the decoded operands (exact).
    pub fn check(&self, a: &[A], b: &[B], c: &[f32]) {
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k)
                    .map(|x| {
                        reference_value(A::DTYPE, u32::from(a[i * k + x].code()))
                            * reference_value(B::DTYPE, u32::from(b[j * k + x].code()))
                    })
                    .sum();
                assert_eq!(
                    f64::from(c[i * n + j]),
                    want,
                    "{}x{} C[{i}, {j}]",
                    A::DTYPE,
                    B::DTYPE
                );
            }
        }
    }
}

/// Elements packed into words (`k.pack`): `[rows, cols]` f32 values cast to `T`, packed into
/// u32 words and into u8 words, both stored; the host packs the reference codes the same way.
#[derive(Clone, Copy, Debug, Hash)]
pub struct PackWords<T> {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
    pub _t: PhantomData<fn() -> T>,
}

impl<T> PackWords<T> {
    pub fn new(rows: i32, cols: i32, warps: u32) -> Self {
        PackWords {
            rows,
            cols,
            warps,
            _t: PhantomData,
        }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for PackWords<T> {
    type Args = (Ptr<f32>, PtrMut<u32>, PtrMut<u8>);
    fn body(&self, k: &mut Kernel, (x, w32, w8): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        let b = <T as LowpElement>::DTYPE.bits() as i32;
        k.blocks([1]);
        k.warps(self.warps);
        let gx = k.global_view(x, [rows, cols]);
        let g32 = k.global_view(w32, [rows, cols * b / 32]);
        let g8 = k.global_view(w8, [rows, cols * b / 8]);
        let tx = k.load_global(&gx, [0, 0], [rows, cols]);
        let codes = k.cast::<T>(&tx);
        let words = k.pack::<u32>(&codes);
        k.store_global(&g32, &words, [0, 0]);
        let bytes = k.pack::<u8>(&codes);
        k.store_global(&g8, &bytes, [0, 0]);
    }
}

impl<T: std::fmt::Debug> PackWords<T> {
    /// Values over the type's range (and past it) for every element.
    pub fn inputs(&self, t: DType) -> Vec<f32> {
        use crate::common::inputs::{fresh_seed, random_f32};
        let range = match t {
            DType::Float { .. } => (0..1u32 << t.bits())
                .map(|c| reference_value(t, c))
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max) as f32,
            _ => (1u32 << t.bits()) as f32,
        };
        random_f32((self.rows * self.cols) as usize, fresh_seed())
            .iter()
            .map(|v| v * range * 1.25)
            .collect()
    }

    /// Checks both outputs: the words the host packs from each value's reference code.
    pub fn check(&self, t: DType, x: &[f32], w32: &[u32], w8: &[u8]) {
        let b = t.bits() as usize;
        let mut want = vec![0u8; x.len() * b / 8];
        for (i, &v) in x.iter().enumerate() {
            let code = match t {
                DType::Float { .. } => reference_code(t, f64::from(v)),
                _ => (v as i32) as u32 & ((1 << b) - 1),
            };
            want[i * b / 8] |= (code << (i * b % 8)) as u8;
        }
        assert_eq!(w8, &want[..], "{t} {self:?}: u8 words");
        let words: Vec<u32> = want
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(w32, &words[..], "{t} {self:?}: u32 words");
    }
}

/// Every code of 8-bit type `T` dequantized in f16, three ways, with a scale and a zero point
/// per element (`[256]` each): `c · s` and `round(c - z) · s` (each operation rounded to f16:
/// the code generator's f16-pair form) and `(c - z) · s` (the difference kept in f32: the f32
/// form), each rounded to f16 by the store.
#[derive(Clone, Copy, Debug, Hash)]
pub struct ScaledCodes<T> {
    pub _t: PhantomData<fn() -> T>,
}

impl<T> ScaledCodes<T> {
    pub fn new() -> Self {
        ScaledCodes { _t: PhantomData }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for ScaledCodes<T> {
    type Args = (Ptr<T>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);
    fn body(&self, k: &mut Kernel, (codes, s, z, out): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view(codes, [256]);
        let c = k.load_global(&g, [0], [256]);
        scaled_rows(k, &c, (s, z, out));
    }
}

/// The three rows of [`ScaledCodes`] from the loaded codes `c`: `c · s`, `(c - z)` rounded
/// times `s`, `(c - z) · s`.
fn scaled_rows<T: Element>(
    k: &mut Kernel,
    c: &RegisterTensor<T>,
    (s, z, out): (PtrVal<f16>, PtrVal<f16>, PtrVal<f16>),
) {
    let (gs, gz) = (k.global_view(s, [256]), k.global_view(z, [256]));
    let go = k.global_view(out, [3 * 256]);
    let (s, z) = (
        k.load_global(&gs, [0], [256]),
        k.load_global(&gz, [0], [256]),
    );
    let scaled = k.compute(c.cast::<f16>() * s);
    let rounded = k.compute((c.cast::<f16>() - z).cast::<f16>() * s);
    let wide = k.compute((c.cast::<f16>() - z) * s);
    for (row, t) in [scaled, rounded, wide].iter().enumerate() {
        k.store_global(&go, t, [row as i32 * 256]);
    }
}

/// [`ScaledCodes`] for types narrower than a byte, whose codes come packed
/// ([`tilus::lowp::pack`]): 256 codes (code `i` is `i` in the type's bits), one warp, eight
/// codes a thread (whole bytes for every width), the same three rows.
#[derive(Clone, Debug, Hash)]
pub struct ScaledPackedCodes<T> {
    pub _t: PhantomData<fn() -> T>,
}

impl<T> ScaledPackedCodes<T> {
    pub fn new() -> Self {
        ScaledPackedCodes { _t: PhantomData }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for ScaledPackedCodes<T> {
    type Args = (Ptr<u8>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);
    fn body(&self, k: &mut Kernel, (codes, s, z, out): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(1);
        let g = k.global_view_packed::<T>(codes, [256]);
        let c = k.load_global(&g, [0], [256]);
        let runs = tilus::layout::RegisterLayout::spatial(&[32])
            .compose(&tilus::layout::RegisterLayout::local(&[8]));
        k.annotate_layout(&c, runs);
        scaled_rows(k, &c, (s, z, out));
    }
}

/// 256 codes of `T` cast to f16 times a literal (its f64 bits: scripts hash their fields),
/// stored as f16: the pair form's codes times a constant.
#[derive(Clone, Debug, Hash)]
pub struct CodesTimes<T> {
    pub factor_bits: u64,
    pub _t: PhantomData<fn() -> T>,
}

impl<T> CodesTimes<T> {
    pub fn new(factor: f64) -> Self {
        CodesTimes {
            factor_bits: factor.to_bits(),
            _t: PhantomData,
        }
    }
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> Script for CodesTimes<T> {
    type Args = (Ptr<T>, PtrMut<f16>);
    fn body(&self, k: &mut Kernel, (codes, out): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view(codes, [256]);
        let c = k.load_global(&g, [0], [256]);
        let times = k.compute(c.cast::<f16>() * f64::from_bits(self.factor_bits));
        let go = k.global_view(out, [256]);
        k.store_global(&go, &times, [0]);
    }
}

/// The packed codes [`ScaledPackedCodes`] reads for type `T`: code `i` is `i` in `T`'s bits.
pub fn packed_codes<T: LowpElement>() -> Vec<u8> {
    let mask = (1u32 << T::DTYPE.bits()) - 1;
    let codes: Vec<T> = (0..256u32)
        .map(|i| T::from_code((i & mask) as u8))
        .collect();
    tilus::lowp::pack(&codes)
}

/// Scales and zero points for [`ScaledCodes`]: f16 values of every kind (subnormal, large
/// enough to overflow a product, negative, fractional zero points), from `random` in [0, 1).
pub fn scaled_codes_inputs(random: &[f32]) -> (Vec<f16>, Vec<f16>) {
    let s = random
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            let mag = match i % 4 {
                0 => 2f32.powi(-20) * (1.0 + r),
                1 => 1000.0 * r,
                2 => r / 64.0,
                _ => 0.01 + r,
            };
            f16::from_f32(if i % 3 == 0 { -mag } else { mag })
        })
        .collect();
    let z = random
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &r)| {
            f16::from_f32(if i % 2 == 0 {
                (r * 255.0).round()
            } else {
                r * 300.0 - 150.0
            })
        })
        .collect();
    (s, z)
}

/// Checks [`ScaledCodes`]'s three rows bit for bit against f16 rounding of exact (`f64`)
/// arithmetic on the reference values (the f32 difference of the third row rounded in f32).
pub fn check_scaled_codes(t: DType, (s, z): (&[f16], &[f16]), out: &[f16]) {
    for i in 0..256 {
        let c = reference_value(t, i as u32);
        let (s, z) = (s[i].to_f64(), z[i].to_f64());
        let want = [
            f16::from_f64(c * s),
            f16::from_f64(f16::from_f64(c - z).to_f64() * s),
            f16::from_f32(((c - z) as f32) * s as f32),
        ];
        for (row, w) in want.iter().enumerate() {
            let got = out[row * 256 + i];
            let same = got.to_bits() == w.to_bits() || (got.is_nan() && w.is_nan());
            assert!(
                same,
                "{t} code {i:#04x} row {row}: got {got:?}, want {w:?} (s {s}, z {z})"
            );
        }
    }
}
