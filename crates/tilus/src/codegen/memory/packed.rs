//! `load_global` and `store_global` on views of packed elements (narrower than a byte): each
//! thread moves whole bytes, `width * bits / 8` of them per vector (the verifier saw to it):
//! one access of 1, 2, 4, 8 or 16 bytes, or byte by byte for the other counts (3, 5, 6 and
//! 7-bit elements, whose vectors are not a power of two bytes long). An element's code is its bits in the
//! vector read as one little-endian number; one that crosses a word boundary (3, 5, 6 or 7
//! bits) joins the two words' parts. Where the view's end or a mask cuts a vector, loads read
//! only the bytes that hold an element inside, and stores rewrite each byte under the mask of
//! the elements they keep: the byte's other bits stay as they were (they belong to elements
//! past the view's end, which no other thread of the launch may write meanwhile).

use super::super::Emitter;
use super::global::{close_walk, constant, open_walk, set};
use super::{declare, layout, read, MemoryHelper};
use crate::codegen::Helper;
use crate::ir::{Expr, GlobalId, MemoryInst, RegView};

/// The C expression of element `j`'s code among the vector's words `{w}0, {w}1, ...`.
fn code_of(j: i64, bits: i64, w: &str) -> String {
    let (at, mask) = (j * bits, (1u32 << bits) - 1);
    let (i, off) = (at / 32, at % 32);
    if off + bits <= 32 {
        format!("(({w}{i} >> {off}) & {mask}u)")
    } else {
        format!(
            "((({w}{i} >> {off}) | ({w}{} << {})) & {mask}u)",
            i + 1,
            32 - off
        )
    }
}

/// How a vector of `bytes` bytes is accessed: as one scalar or one vector of 32-bit words
/// (its C type), or byte by byte (`None`); and the 32-bit words its codes are gathered in.
fn vector_type(bytes: i64) -> (Option<String>, i64) {
    let words = (bytes + 3) / 4;
    match bytes {
        1 => (Some("u8".into()), 1),
        2 => (Some("u16".into()), 1),
        4 | 8 | 16 => (Some(format!("tilus_vec<u32, {words}>")), words),
        _ => (None, words),
    }
}

pub(super) fn load_packed(e: &mut Emitter, i: &MemoryInst) {
    let MemoryInst::LoadGlobal {
        src,
        out,
        offsets,
        fill,
        vector,
    } = i
    else {
        return;
    };
    declare(e, *out);
    let width = vector.expect("vector widths are chosen by lowering") as i64;
    let dtype = e.p.global(*src).dtype;
    let bits = dtype.bits() as i64;
    let bytes = width * bits / 8;
    let l = layout(e, *out);
    let fill = constant(e, fill, dtype);
    let w = open_walk(e, *src, &l, offsets, width);
    let place = w.place.clone();
    let (ty, words) = vector_type(bytes);
    // 1. the whole vector inside: one access
    e.open(format!("if ({})", w.inside(width - 1)));
    match ty {
        Some(ty) if bytes >= 4 => {
            e.use_helper(Helper::Memory(MemoryHelper::Vec));
            e.line(format!(
                "const {ty} tilus_v = *reinterpret_cast<const {ty}*>({place});"
            ));
            for k in 0..words {
                e.line(format!("const u32 tilus_w{k} = tilus_v.v[{k}];"));
            }
        }
        Some(ty) => e.line(format!(
            "const u32 tilus_w0 = (u32)*reinterpret_cast<const {ty}*>({place});"
        )),
        None => {
            for k in 0..words {
                let parts: Vec<String> = (4 * k..(4 * k + 4).min(bytes))
                    .map(|b| format!("((u32)({place})[{b}] << {})", 8 * (b % 4)))
                    .collect();
                e.line(format!("const u32 tilus_w{k} = {};", parts.join(" | ")));
            }
        }
    }
    for j in 0..width {
        set(
            e,
            *out,
            &format!("l + {j}"),
            &format!("(u8){}", code_of(j, bits, "tilus_w")),
        );
    }
    e.close();
    e.open("else");
    if w.may_straddle {
        // 2. the view's end cuts it: the bytes holding an element inside (a byte is read when
        // the element its first bit belongs to is inside), the elements past the end filled
        for k in 0..words {
            e.line(format!("u32 tilus_w{k} = 0u;"));
        }
        let (c, n) = (w.last.0.clone(), w.last.1.clone());
        let outer = w.outer_or_true();
        for k in 0..bytes {
            let first = k * 8 / bits;
            e.line(format!(
                "if ({outer} && (u32)({c} + {first}) < (u32)({n})) tilus_w{} |= (u32)({place})[{k}] << {};",
                k / 4,
                8 * (k % 4)
            ));
        }
        for j in 0..width {
            let code = code_of(j, bits, "tilus_w");
            set(
                e,
                *out,
                &format!("l + {j}"),
                &format!("({outer} && (u32)({c} + {j}) < (u32)({n})) ? (u8){code} : {fill}"),
            );
        }
    } else {
        // 3. the whole vector outside the view
        for j in 0..width {
            set(e, *out, &format!("l + {j}"), &fill);
        }
    }
    e.close();
    close_walk(e);
}

/// `store_global` of `src` into packed view `dst` at `offsets` in vectors of `width`
/// elements, the elements `mask` keeps.
pub(super) fn store_packed(
    e: &mut Emitter,
    (dst, src, offsets, mask): (GlobalId, &RegView, &[Expr], Option<&RegView>),
    width: i64,
) {
    let g = e.p.global(dst);
    let (dtype, rank) = (g.dtype, g.shape.len());
    let bits = dtype.bits() as i64;
    let bytes = width * bits / 8;
    let l = layout(e, src.tensor).permute(&src.perm(rank));
    let w = open_walk(e, dst, &l, offsets, width);
    let place = w.place.clone();
    let (ty, words) = vector_type(bytes);
    // each element's code, and which words (and bytes) its bits fall in
    let codes: Vec<String> = (0..width)
        .map(|j| format!("(u32)({})", read(e, src.tensor, &format!("l + {j}"))))
        .collect();
    let part = |j: i64, word: i64| -> Option<String> {
        let (lo, hi) = (j * bits, j * bits + bits);
        let (wlo, whi) = (word * 32, word * 32 + 32);
        if hi <= wlo || lo >= whi {
            return None;
        }
        Some(if lo >= wlo {
            format!("({} << {})", codes[j as usize], lo - wlo)
        } else {
            format!("({} >> {})", codes[j as usize], wlo - lo)
        })
    };
    let word_of = |k: i64| -> String {
        let parts: Vec<String> = (0..width).filter_map(|j| part(j, k)).collect();
        parts.join(" | ")
    };
    let kept = |e: &Emitter, j: i64| mask.map(|m| read(e, m.tensor, &format!("l + {j}")));
    let whole = w.whole_and_kept(e, width, mask);
    // 1. the whole vector inside (and kept): one access
    e.open(format!("if ({whole})"));
    match ty {
        Some(ty) if bytes >= 4 => {
            e.use_helper(Helper::Memory(MemoryHelper::Vec));
            let ws: Vec<String> = (0..words).map(word_of).collect();
            e.line(format!(
                "*reinterpret_cast<{ty}*>({place}) = {ty}{{{{{}}}}};",
                ws.join(", ")
            ));
        }
        Some(ty) => e.line(format!(
            "*reinterpret_cast<{ty}*>({place}) = ({ty})({});",
            word_of(0)
        )),
        None => {
            for k in 0..words {
                e.line(format!("const u32 tilus_w{k} = {};", word_of(k)));
            }
            for b in 0..bytes {
                e.line(format!(
                    "({place})[{b}] = (u8)(tilus_w{} >> {});",
                    b / 4,
                    8 * (b % 4)
                ));
            }
        }
    }
    e.close();
    if w.may_straddle || mask.is_some() {
        // 2. some of its elements: each byte rewritten under the bits of those inside and kept
        e.open("else");
        let (c, n) = (w.last.0.clone(), w.last.1.clone());
        let outer = w.outer_or_true();
        let emask = (1u32 << bits) - 1;
        for k in 0..bytes {
            let (blo, bhi) = (k * 8, k * 8 + 8);
            let mut keep = vec![];
            let mut val = vec![];
            for j in 0..width {
                let (lo, hi) = (j * bits, j * bits + bits);
                if hi <= blo || lo >= bhi {
                    continue;
                }
                let (m, v) = if lo >= blo {
                    (
                        (emask << (lo - blo)) & 0xff,
                        format!("({} << {})", codes[j as usize], lo - blo),
                    )
                } else {
                    (
                        (emask >> (blo - lo)) & 0xff,
                        format!("({} >> {})", codes[j as usize], blo - lo),
                    )
                };
                let mut cond = format!("(u32)({c} + {j}) < (u32)({n})");
                if let Some(kj) = kept(e, j) {
                    cond = format!("{cond} && {kj}");
                }
                keep.push(format!("(({cond}) ? {m}u : 0u)"));
                val.push(v);
            }
            e.open("");
            e.line(format!("const u32 tilus_m = {};", keep.join(" | ")));
            e.line(format!(
                "if ({outer} && tilus_m != 0u) ({place})[{k}] = (u8)((({place})[{k}] & ~tilus_m) | (({}) & tilus_m));",
                val.join(" | ")
            ));
            e.close();
        }
        e.close();
    }
    close_walk(e);
}
