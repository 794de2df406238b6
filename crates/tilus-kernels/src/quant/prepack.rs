//! The prepack step: quantized weights rewritten in the order the fragment kernel
//! ([`super::QuantMatmulFragments`]) reads them, so that each thread's plain load of a few
//! words brings exactly the codes of its tensor-core fragment and no data moves between
//! threads before the products.
//!
//! W is cut into tiles of [`TILE_N`] rows by [`TILE_K`] columns (the last ones padded with
//! code 0), tile row by tile row; a tile is 128 runs of words, one per thread of the warp
//! group, and thread `t`'s run holds, in its local order, the codes of the elements the
//! register-A fragment layout of WGMMA (`m64k16`, four deep) gives thread `t`: code `l` in
//! word `l / (32 / b)`, from its low bits up (as [`tilus::lowp::pack`] packs a row).

use super::Quantized;
use half::f16;
use tilus::ir::DType;
use tilus::layout::{RegisterLayout, WgmmaPlan};

/// Rows of W per tile: one WGMMA's M.
pub const TILE_N: usize = 64;
/// Columns of W per tile: four WGMMA steps of 16.
pub const TILE_K: usize = 64;
/// Threads that share a tile (a warp group).
pub const THREADS: usize = 128;
/// Codes per thread per tile.
pub const CODES: usize = TILE_N * TILE_K / THREADS;

/// The layout of a `[TILE_N, TILE_K]` tile of dequantized weights as WGMMA's register
/// operand: the order the prepacked codes follow.
pub fn fragment_layout() -> RegisterLayout {
    WgmmaPlan::choose(TILE_N as i64, 8, TILE_K as i64)
        .expect("a 64 x 64 operand is a WGMMA plan")
        .a_layout()
}

/// The order of a thread's codes in its words for type `t`: the fragment's registers
/// ([`fragment_layout`]) reordered so that the two elements of each f16 pair of the fragment
/// sit `16 / b` codes apart in one word — 8-bit codes `q` and `q + 2`, 4-bit `q` and `q + 4`,
/// 2-bit `q` and `q + 8`, 1-bit `q` and `q + 16` — where one shift and one mask
/// (`(w >> 4q) & 0x000f000f` for 4 bits) put both in their halves of a 32-bit word, ready for
/// the exponent trick; f4e2m1 as the 4-bit integers (its pairs' bits placed as f16 fields,
/// one shift and mask per field). FP8 keeps the fragment's order, each pair's two bytes side
/// by side as the hardware's pair conversion reads them.
pub fn code_layout(t: DType) -> RegisterLayout {
    let f = fragment_layout();
    // the fragment's local modes, outermost first: 4 column blocks of 8, two more columns,
    // rows +8, the column pair's two halves (`[d1:4, d1:2, d0:2, d1:2]`; the last is the
    // pair); a code's place in the thread's run is the reordered modes' row-major index, so
    // the pair's mode goes where its stride is 16 bits of a word (and the modes before it
    // pick the word)
    match t {
        DType::Int(8) | DType::UInt(8) => f.reorder_locals(&[0, 1, 3, 2]),
        DType::Int(4) | DType::UInt(4) | DType::F4E2M1 => f.reorder_locals(&[0, 3, 1, 2]),
        DType::Int(2) | DType::UInt(2) => f.reorder_locals(&[1, 3, 0, 2]),
        DType::Int(1) | DType::UInt(1) => f.reorder_locals(&[3, 0, 1, 2]),
        _ => f,
    }
}

/// Weights prepacked for the fragment kernel: the codes in fragment order (as words), the
/// scales and zero points as quantized.
#[derive(Clone, Debug)]
pub struct Prepacked {
    /// Rows and columns of W.
    pub shape: (usize, usize),
    /// The codes: `tiles_k · tiles_n · 128` runs of `words_per_thread` words, step by step
    /// along K, each step's tiles along N in turn: blocks walking K side by side read
    /// neighbouring memory at each step (HBM pages whole) instead of one stream a tile.
    pub words: Vec<u32>,
    /// One scale per group, `[groups, tiles_n · TILE_N]` (the quantizer's `[N, groups]`
    /// transposed, rows padded with zeros to whole tiles): a K step's scales of a tile are
    /// one contiguous run of 128 bytes, which TMA brings with the step's words.
    pub scales: Vec<f16>,
    /// One zero point per group for unsigned types, as the scales (empty otherwise).
    pub zeros: Vec<f16>,
    /// The groups.
    pub scheme: super::Scheme,
    /// The element type.
    pub dtype: DType,
}

impl Prepacked {
    /// Words of one thread's codes in one tile: its `CODES` codes of `b` bits.
    pub fn words_per_thread(dtype: DType) -> usize {
        CODES * dtype.bits() as usize / 32
    }

    /// Scales (and zero points) the kernel reads for weights of `[n, k]` in groups of
    /// `group` (0: one per row): `groups · tiles_n · TILE_N`.
    pub fn scale_count((n, k): (usize, usize), group: usize) -> usize {
        let groups = if group == 0 { 1 } else { k.div_ceil(group) };
        groups * n.div_ceil(TILE_N) * TILE_N
    }

    /// Tiles along N and along K.
    pub fn tiles(&self) -> (usize, usize) {
        (self.shape.0.div_ceil(TILE_N), self.shape.1.div_ceil(TILE_K))
    }
}

/// Whether the fragment kernel takes weights of type `t`: whole codes in each 32-bit word
/// (1, 2, 4 or 8 bits), or 3-bit integers in two planes ([`planes`]).
pub fn prepackable(t: DType) -> bool {
    t.is_lowp() && (matches!(t.bits(), 1 | 2 | 4 | 8) || planes(t).is_some())
}

/// Words of a thread's run that hold the low plane of a two-plane type.
pub const LOW_PLANE_WORDS: usize = CODES * 2 / 32;

/// The planes of a type whose codes do not divide a word: 3-bit integers as their low two
/// bits (`u2`, the first [`LOW_PLANE_WORDS`] words of every thread, runs of a step's rows 0 to
/// 3) and their top bit (`u1`, one word a thread after all of them: rows 4 and 5), each
/// plane in its own width's order ([`code_layout`]), so that both give their f16 pairs 16 bits
/// apart in one word. `None` for other types.
pub fn planes(t: DType) -> Option<(DType, DType)> {
    matches!(t, DType::Int(3) | DType::UInt(3)).then_some((DType::UInt(2), DType::UInt(1)))
}

/// One plane of codes as `prepack` writes it (the whole code for most types).
struct Plane {
    /// Each thread's elements of a tile, in the plane's local order.
    places: Vec<Vec<(usize, usize)>>,
    /// Bits of a code the plane holds.
    bits: usize,
    /// The lowest of them in the code.
    from: u32,
    /// Where thread 0's words start in a step's run of words.
    base: usize,
    /// Words between two threads' starts.
    stride: usize,
}

/// `q` prepacked for the fragment kernel, or why it cannot be (a type whose codes do not
/// divide a word, zero points that are not whole numbers of the codes' range).
pub fn prepack(q: &Quantized) -> crate::Result<Prepacked> {
    if !prepackable(q.dtype) {
        return Err(crate::Error::Shape {
            kernel: "quant_matmul",
            message: format!(
                "{} weights do not prepack: the fragment kernel takes types of 1, 2, 4 or 8 bits and 3-bit integers",
                q.dtype
            ),
        });
    }
    // the kernel subtracts a zero point from a code in f16 (exact for whole numbers of the
    // codes' range, as `quantize` makes them)
    let top = ((1u32 << q.dtype.bits()) - 1) as f32;
    if let Some(z) = q
        .zeros
        .iter()
        .find(|z| !(z.to_f32() == z.to_f32().round() && (0.0..=top).contains(&z.to_f32())))
    {
        return Err(crate::Error::Shape {
            kernel: "quant_matmul",
            message: format!(
                "zero point {z}: the fragment kernel takes whole zero points of the codes' range, 0 to {top} (as quantize makes them)"
            ),
        });
    }
    let (n, k) = q.shape;
    let bits = q.dtype.bits() as usize;
    let words_per_thread = Prepacked::words_per_thread(q.dtype);
    let (tiles_n, tiles_k) = (n.div_ceil(TILE_N), k.div_ceil(TILE_K));
    // each thread's elements of a tile in the local order of `layout`
    let places_of = |layout: &RegisterLayout| -> Vec<Vec<(usize, usize)>> {
        (0..THREADS)
            .map(|t| {
                (0..CODES)
                    .map(|l| {
                        let c = layout.coords(t as i64, l as i64);
                        (c[0] as usize, c[1] as usize)
                    })
                    .collect()
            })
            .collect()
    };
    let mut words = vec![0u32; tiles_n * tiles_k * THREADS * words_per_thread];
    // each plane: its places, its bits, the code's bits it takes, where thread `t`'s words
    // start in a step's run of words (`base + t · stride`)
    let planes = match planes(q.dtype) {
        Some((low, top)) => vec![
            Plane {
                places: places_of(&code_layout(low)),
                bits: 2,
                from: 0,
                base: 0,
                stride: LOW_PLANE_WORDS,
            },
            Plane {
                places: places_of(&code_layout(top)),
                bits: 1,
                from: 2,
                base: THREADS * LOW_PLANE_WORDS,
                stride: 1,
            },
        ],
        None => vec![Plane {
            places: places_of(&code_layout(q.dtype)),
            bits,
            from: 0,
            base: 0,
            stride: words_per_thread,
        }],
    };
    for tn in 0..tiles_n {
        for tk in 0..tiles_k {
            let step = (tk * tiles_n + tn) * THREADS * words_per_thread;
            for plane in &planes {
                let (bits, per_word) = (plane.bits, 32 / plane.bits);
                for (t, places) in plane.places.iter().enumerate() {
                    let run = step + plane.base + t * plane.stride;
                    for (l, &(r, c)) in places.iter().enumerate() {
                        let (row, col) = (tn * TILE_N + r, tk * TILE_K + c);
                        if row < n && col < k {
                            let code = (q.code(row, col) >> plane.from) & ((1 << bits) - 1);
                            words[run + l / per_word] |= code << ((l % per_word) * bits);
                        }
                    }
                }
            }
        }
    }
    let groups = q.scales.len() / n.max(1);
    // `[n, groups]` into `[groups, tiles_n · TILE_N]`, zeros past N
    let transposed = |v: &[f16]| -> Vec<f16> {
        if v.is_empty() {
            return vec![];
        }
        let width = tiles_n * TILE_N;
        let mut t = vec![f16::ZERO; groups * width];
        for r in 0..n {
            for g in 0..groups {
                t[g * width + r] = v[r * groups + g];
            }
        }
        t
    };
    Ok(Prepacked {
        shape: q.shape,
        words,
        scales: transposed(&q.scales),
        zeros: transposed(&q.zeros),
        scheme: q.scheme,
        dtype: q.dtype,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{quantize, Scheme};
    use tilus::lowp::{I4, I8};

    /// Every code lands once, where the fragment layout puts its element; padding is code 0.
    #[test]
    fn prepacked_codes_sit_where_the_fragments_read_them() {
        let (n, k) = (70, 128);
        let w: Vec<f32> = (0..n * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let q = quantize::<I4>(&w, (n, k), Scheme::grouped(64));
        let p = prepack(&q).unwrap();
        assert_eq!(p.tiles(), (2, 2));
        assert_eq!(p.words.len(), 2 * 2 * 128 * 4);
        let layout = code_layout(q.dtype);
        let mut seen = vec![0u32; n * k];
        for tn in 0..2 {
            for tk in 0..2 {
                for t in 0..128 {
                    for l in 0..CODES {
                        let word = p.words[((tk * 2 + tn) * 128 + t) * 4 + l / 8];
                        let code = (word >> ((l % 8) * 4)) & 15;
                        let c = layout.coords(t as i64, l as i64);
                        let (r, x) = (tn * 64 + c[0] as usize, tk * 64 + c[1] as usize);
                        if r < n {
                            assert_eq!(code, q.code(r, x), "({r}, {x})");
                            seen[r * k + x] += 1;
                        } else {
                            assert_eq!(code, 0, "padding ({r}, {x})");
                        }
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
        // the scales transposed, the rows past N zero
        assert_eq!(p.scales.len(), Prepacked::scale_count((n, k), 64));
        for r in 0..128 {
            for g in 0..2 {
                let want = if r < n {
                    q.scales[r * 2 + g]
                } else {
                    f16::ZERO
                };
                assert_eq!(p.scales[g * 128 + r], want, "row {r} group {g}");
            }
        }
        // thread 0 holds rows 0 and 8, columns 0, 1, 8, 9 of each step of 16
        let f = fragment_layout();
        assert_eq!(f.coords(0, 0), vec![0, 0]);
        assert_eq!(f.coords(0, 1), vec![0, 1]);
        // int4: the pair (0, 0), (0, 1) in codes 0 and 4 of the first word
        assert_eq!(layout.coords(0, 0), vec![0, 0]);
        assert_eq!(layout.coords(0, 4), vec![0, 1]);
        // and every f16 pair of the fragment 4 codes apart in one word
        for p in 0..CODES / 2 {
            let (a, b) = (f.coords(0, 2 * p as i64), f.coords(0, 2 * p as i64 + 1));
            let at = |c: &Vec<i64>| {
                (0..CODES as i64)
                    .find(|&l| layout.coords(0, l) == *c)
                    .unwrap()
            };
            let (la, lb) = (at(&a), at(&b));
            assert_eq!((la / 8, lb - la, la % 8 < 4), (lb / 8, 4, true), "pair {p}");
        }
        // every width: each pair 16 bits apart in one word, the first in the low half
        for (t, bits) in [
            (DType::I8, 8),
            (DType::Int(2), 2),
            (DType::UInt(1), 1),
            (DType::F4E2M1, 4),
        ] {
            let l = code_layout(t);
            let per_word = 32 / bits;
            for thread in [0, 37, 127] {
                for p in 0..CODES / 2 {
                    let c = |i: usize| f.coords(thread, i as i64);
                    let (a, b) = (c(2 * p), c(2 * p + 1));
                    let at = |c: &Vec<i64>| {
                        (0..CODES as i64)
                            .find(|&x| l.coords(thread, x) == *c)
                            .unwrap()
                    };
                    let (la, lb) = (at(&a), at(&b));
                    assert_eq!(
                        (la / per_word, lb - la, la % per_word < per_word / 2),
                        (lb / per_word, per_word / 2, true),
                        "{t} thread {thread} pair {p}"
                    );
                }
            }
        }
        let q8 = quantize::<I8>(&w, (n, k), Scheme::per_channel());
        assert_eq!(prepack(&q8).unwrap().words.len(), 2 * 2 * 128 * 8);
        let q5 = quantize::<tilus::lowp::Int<5>>(&w, (n, k), Scheme::per_channel());
        let e = prepack(&q5).unwrap_err().to_string();
        assert!(e.contains("i5 weights do not prepack"), "{e}");
        // 3-bit codes in two planes: each code's low two bits where the u2 order puts its
        // element in the thread's first two words, its top bit where the u1 order puts it in
        // the thread's word after all threads' low planes
        let q3 = quantize::<tilus::lowp::Int<3>>(&w, (n, k), Scheme::grouped(64));
        let p3 = prepack(&q3).unwrap();
        assert_eq!(p3.words.len(), 2 * 2 * 128 * 3);
        let (low, top) = (code_layout(DType::UInt(2)), code_layout(DType::UInt(1)));
        let mut seen = vec![0u32; n * k];
        for tn in 0..2 {
            for tk in 0..2 {
                let step = (tk * 2 + tn) * 128 * 3;
                for t in 0..128 {
                    for l in 0..CODES {
                        let at = |layout: &RegisterLayout| {
                            let c = layout.coords(t as i64, l as i64);
                            (tn * 64 + c[0] as usize, tk * 64 + c[1] as usize)
                        };
                        let lo = (p3.words[step + t * 2 + l / 16] >> ((l % 16) * 2)) & 3;
                        let hi = (p3.words[step + 256 + t] >> l) & 1;
                        let ((r, x), (r2, x2)) = (at(&low), at(&top));
                        if r < n {
                            assert_eq!(lo, q3.code(r, x) & 3, "low ({r}, {x})");
                            seen[r * k + x] += 1;
                        } else {
                            assert_eq!(lo, 0);
                        }
                        if r2 < n {
                            assert_eq!(hi, q3.code(r2, x2) >> 2, "top ({r2}, {x2})");
                            seen[r2 * k + x2] += 1;
                        } else {
                            assert_eq!(hi, 0);
                        }
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s == 2));
        // K past the last whole tile: every column past K is code 0, the others their code
        let (n2, k2) = (64, 72);
        let w2: Vec<f32> = (0..n2 * k2).map(|i| (i % 13) as f32 - 6.0).collect();
        let q4 = quantize::<I4>(&w2, (n2, k2), Scheme::per_channel());
        let p4 = prepack(&q4).unwrap();
        for t in 0..128 {
            for l in 0..CODES {
                // the second tile of K: columns 64 to 127
                let word = p4.words[(128 + t) * 4 + l / 8];
                let code = (word >> ((l % 8) * 4)) & 15;
                let c = layout.coords(t as i64, l as i64);
                let (r, x) = (c[0] as usize, 64 + c[1] as usize);
                let want = if x < k2 { q4.code(r, x) } else { 0 };
                assert_eq!(code, want, "({r}, {x})");
            }
        }
        // zero points: whole numbers of the codes' range only (the kernel subtracts in f16)
        let mut u = quantize::<tilus::lowp::U4>(&w, (n, k), Scheme::grouped(64));
        assert!(u.zeros.iter().all(|z| z.to_f32().fract() == 0.0));
        prepack(&u).unwrap();
        for bad in [7.5f32, -1.0, 16.0, f32::NAN] {
            u.zeros[3] = f16::from_f32(bad);
            let e = prepack(&u).unwrap_err().to_string();
            assert!(
                e.contains("whole zero points of the codes' range, 0 to 15"),
                "{e}"
            );
        }
    }
}
