//! f16 arithmetic two elements at a time. A `compute` into a tile of f16 pairs whose
//! expression adds, subtracts and multiplies f16 values, each result rounded to f16, runs on
//! the f16x2 instructions: one instruction per pair instead of the f32 form's conversions in
//! and out around each operation. The typical case is dequantization, `codes.cast::<f16>() *
//! scale`: the codes become f16 pairs directly (small integers by the exponent trick, FP8 by
//! the hardware's pair conversion) and are scaled in one `mul.rn.f16x2` per pair.
//!
//! The bits are those of the f32 form, which the interpreter computes: every operand is an
//! f16 value (an f16 tile, or codes whose every value f16 holds exactly), and an operation on
//! two f16 values computed in f32 and rounded to f16 gives the correctly rounded f16 result
//! (a product of two 11-bit significands is exact in f32; for sums the f32 rounding before
//! the f16 one is harmless because 24 ≥ 2 · 11 + 2), which is what the f16x2 instructions
//! compute. An operation whose f32 result is not rounded to f16 right away (a sum inside a
//! product, with no cast between) keeps the f32 form.

use super::super::memory::{read, storage, Storage};
use super::super::{Emitter, Helper};
use super::ArithHelper;
use crate::ir::{BinaryOp, DType, Expr, Program, RegId, TileExpr};

/// Emits `out = x` in f16 pairs and returns true where `x` (the expression below the store's
/// own rounding) qualifies; returns false, emitting nothing, otherwise.
pub(super) fn emit(e: &mut Emitter, x: &TileExpr, out: RegId, tables: &[Vec<usize>]) -> bool {
    let d = e.p.register(out);
    if d.dtype != DType::F16 || storage(d) != Storage::Packed16 {
        return false;
    }
    // at least one operation: a lone tile or conversion has its own paths
    if !matches!(x, TileExpr::Binary(..)) || !rounded(e.p, x) {
        return false;
    }
    let name = d.name.clone();
    let n = super::super::memory::layout(e, out).local_size() as usize;
    e.open("");
    for w in 0..n / 2 {
        let lo: Vec<usize> = tables.iter().map(|t| t[2 * w]).collect();
        let hi: Vec<usize> = tables.iter().map(|t| t[2 * w + 1]).collect();
        let v = pair(e, x, &mut lo.iter(), &mut hi.iter());
        e.line(format!("const u32 tilus_p{w} = {v};"));
    }
    // every pair computed before any is stored: an `assign_tile` may read its own tile
    for w in 0..n / 2 {
        e.line(format!("{name}[{w}] = tilus_p{w};"));
    }
    e.close();
    true
}

/// The operations f16x2 has an instruction for (correctly rounded).
fn paired_op(op: BinaryOp) -> Option<&'static str> {
    match op {
        BinaryOp::Add => Some("add"),
        BinaryOp::Sub => Some("sub"),
        BinaryOp::Mul => Some("mul"),
        _ => None,
    }
}

/// Whether `x` is an operation of [`paired_op`] on f16 values whose result is rounded to
/// f16 (by the store, or by a cast around it).
fn rounded(p: &Program, x: &TileExpr) -> bool {
    match x {
        TileExpr::Binary(op, a, b) => {
            paired_op(*op).is_some()
                && a.dtype(p) == DType::F16
                && b.dtype(p) == DType::F16
                && f16_valued(p, a)
                && f16_valued(p, b)
        }
        _ => false,
    }
}

/// Whether `x`'s value is an f16 value exactly: an f16 tile, codes cast to f16 that f16
/// holds exactly, a rounded operation cast to f16, or an f16 constant.
fn f16_valued(p: &Program, x: &TileExpr) -> bool {
    match x {
        TileExpr::Tile(v) => p.register(v.tensor).dtype == DType::F16,
        TileExpr::Scalar(c) => f16_constant(c).is_some(),
        TileExpr::Cast(DType::F16, a) => match a.as_ref() {
            TileExpr::Tile(v) => exact_in_f16(p.register(v.tensor).dtype),
            inner => rounded(p, inner),
        },
        _ => false,
    }
}

/// The bits of an f16 constant (a literal of the script in an f16 expression).
fn f16_constant(c: &Expr) -> Option<u16> {
    match c {
        Expr::Float(bits, DType::F16) => {
            let v = f64::from_bits(*bits);
            let h = half::f16::from_f64(v);
            (h.to_f64() == v).then(|| h.to_bits())
        }
        _ => None,
    }
}

/// Whether every value of low-precision type `t` is an f16 value: integers of up to 10 bits
/// (the exponent trick's range), floats whose significands and exponents f16 holds.
fn exact_in_f16(t: DType) -> bool {
    match t {
        DType::Int(b) | DType::UInt(b) => b <= 10,
        t => t.float_format().is_some_and(|f| {
            f.man <= 10 && f.max_value() <= 65504.0 && f.decode(1) >= 2f64.powi(-24)
        }),
    }
}

/// The f16 pair (a `u32` C expression) of `x` at the two output elements whose operand
/// locals `lo` and `hi` give, in the order `expr_c` reads the tiles.
fn pair(
    e: &mut Emitter,
    x: &TileExpr,
    lo: &mut std::slice::Iter<'_, usize>,
    hi: &mut std::slice::Iter<'_, usize>,
) -> String {
    match x {
        TileExpr::Binary(op, a, b) => {
            // integer codes times a power of two: the factor taken into the conversion's own
            // constants (exact), no product of its own
            if let Some((r, times_log2)) = scaled_codes(e.p, *op, a, b) {
                // (the one tile the product reads is the codes, in either order)
                let (l, h) = (next(lo), next(hi));
                return int_codes_pair(e, r, (l, h), times_log2);
            }
            let (a, b) = (pair(e, a, lo, hi), pair(e, b, lo, hi));
            let op = paired_op(*op).expect("checked by `rounded`");
            e.use_helper(Helper::Arith(ArithHelper::F16x2(op)));
            format!("tilus_{op}_f16x2({a}, {b})")
        }
        TileExpr::Cast(_, a) => match a.as_ref() {
            TileExpr::Tile(v) => {
                let (l, h) = (next(lo), next(hi));
                codes_pair(e, v.tensor, l, h)
            }
            inner => pair(e, inner, lo, hi),
        },
        TileExpr::Scalar(c) => {
            let bits = f16_constant(c).expect("checked by `f16_valued`") as u32;
            format!("{:#x}u", bits * 0x1_0001)
        }
        TileExpr::Tile(v) => {
            let (l, h) = (next(lo), next(hi));
            let d = e.p.register(v.tensor);
            if storage(d) == Storage::Packed16 && l % 2 == 0 && h == l + 1 {
                super::super::memory::word(e, v.tensor, &l.to_string())
            } else if l == h {
                format!("((u32){} * 0x10001u)", read(e, v.tensor, &l.to_string()))
            } else {
                format!(
                    "((u32){} | ((u32){} << 16))",
                    read(e, v.tensor, &l.to_string()),
                    read(e, v.tensor, &h.to_string())
                )
            }
        }
        _ => unreachable!("checked by `rounded`"),
    }
}

/// `(codes, log2 of the factor)` where `a op b` is integer codes cast to f16 times a power
/// of two from 2^-4 to 2^4, in either order.
fn scaled_codes(p: &Program, op: BinaryOp, a: &TileExpr, b: &TileExpr) -> Option<(RegId, i32)> {
    if op != BinaryOp::Mul {
        return None;
    }
    let codes = |x: &TileExpr| match x {
        TileExpr::Cast(DType::F16, inner) => match inner.as_ref() {
            TileExpr::Tile(v) if matches!(p.register(v.tensor).dtype, DType::Int(b) | DType::UInt(b) if b <= 8) => {
                Some(v.tensor)
            }
            _ => None,
        },
        _ => None,
    };
    let power = |x: &TileExpr| match x {
        TileExpr::Scalar(c) => {
            let v = half::f16::from_bits(f16_constant(c)?).to_f64();
            let k = v.log2().round() as i32;
            (v > 0.0 && 2f64.powi(k) == v && (-4..=4).contains(&k)).then_some(k)
        }
        _ => None,
    };
    match (codes(a), power(b), codes(b), power(a)) {
        (Some(r), Some(k), _, _) | (_, _, Some(r), Some(k)) => Some((r, k)),
        _ => None,
    }
}

fn next(it: &mut std::slice::Iter<'_, usize>) -> usize {
    *it.next()
        .expect("a local for every tile the expression reads")
}

/// Two codes of a low-precision tile as an f16 pair, exactly.
fn codes_pair(e: &mut Emitter, r: RegId, l: usize, h: usize) -> String {
    let t = e.p.register(r).dtype;
    let (a, b) = (read(e, r, &l.to_string()), read(e, r, &h.to_string()));
    match t {
        DType::Int(_) | DType::UInt(_) => int_codes_pair(e, r, (l, h), 0),
        t if super::super::lowp::placeable(t).is_some() => {
            e.use_helper(Helper::Arith(ArithHelper::F16x2("mul")));
            // two codes unpacked from one word 16 bits apart: one shift and mask per field
            match one_word(e, r, (l, h)) {
                Some((word, s)) => super::super::lowp::small_float_pair_to_f16x2(t, &word, s),
                None => super::super::lowp::small_floats_to_f16x2(t, &a, &b),
            }
        }
        DType::F8E4M3 | DType::F8E5M2 => {
            e.use_helper(Helper::Lowp(super::super::lowp::LowpHelper::PairToF16(t)));
            format!(
                "tilus_f16x2_from_{}x2((u16)((u32){a} | ((u32){b} << 8)))",
                t.name()
            )
        }
        t => {
            // the other floats through their exact f32 values
            e.use_helper(Helper::Arith(ArithHelper::CvtF16));
            let (a, b) = (
                super::super::lowp::decode(e, t, &a),
                super::super::lowp::decode(e, t, &b),
            );
            format!("tilus_cvt_f16x2({a}, {b})")
        }
    }
}

/// Two codes of a small integer tile times `2^times_log2` as an f16 pair, exactly: two codes
/// unpacked from one word 16 bits apart take one `lop3` and one fused multiply-add.
fn int_codes_pair(e: &mut Emitter, r: RegId, (l, h): (usize, usize), times_log2: i32) -> String {
    let t = e.p.register(r).dtype;
    e.use_helper(Helper::Lowp(super::super::lowp::LowpHelper::FieldToF16));
    match one_word(e, r, (l, h)) {
        Some((word, s)) => super::super::lowp::small_int_pair_to_f16x2(t, &word, s, times_log2),
        None => {
            let (a, b) = (read(e, r, &l.to_string()), read(e, r, &h.to_string()));
            super::super::lowp::small_ints_to_f16x2(t, &a, &b, times_log2)
        }
    }
}

/// The word (a C expression) and shift of two codes of `r` (locals `l` and `h`) that
/// `unpack` took from one 32-bit word 16 bits apart, still in scope.
fn one_word(e: &mut Emitter, r: RegId, (l, h): (usize, usize)) -> Option<(String, u32)> {
    let (&(w, wl, s), &(w2, wl2, s2)) = (e.unpacked.get(&(r, l))?, e.unpacked.get(&(r, h))?);
    if (w, wl) != (w2, wl2) || s2 != s + 16 || !e.in_scope(w) {
        return None;
    }
    Some((read(e, w, &wl.to_string()), s))
}
