//! Index tiles (`k.arange`) and the masks made of them, run by the interpreter
//! (`interp/masks.rs`) and the GPU (`runtime/gpu.rs`) against the same host references, and
//! compiled by the compile tests (`compiler/codegen.rs`).

use half::f16;
use tilus::prelude::*;

/// `(rows, cols, warps)` of the row-wise mask, argmax and random tests: rows in lanes, across
/// warps, wide rows, one warp, a tile smaller than the threads (replicated).
pub const ROW_SHAPES: [(i32, i32, u32); 5] = [
    (16, 64, 4),
    (64, 32, 4),
    (8, 128, 2),
    (32, 32, 1),
    (4, 8, 4),
];

/// `(rows, cols, warps)` of the bit-view tests.
pub const VIEW_SHAPES: [(i32, i32, u32); 3] = [(16, 64, 4), (8, 128, 2), (4, 8, 4)];

/// `out[i][j] = a·bᵀ + 1000 j + i` for one `[16, 8 * n8]` tile: the index grid is added to an
/// mma accumulator, so it is computed in the accumulator's fragment layout (lanes and
/// registers that hold rows and columns in steps); `broadcast` builds it from a column
/// `arange([16, 1], 0)` and a row of lower rank `arange([n], 0)` (aligned with the last
/// dimension), otherwise from two full-shape ones.
#[derive(Clone, Copy, Debug, Hash)]
pub struct IndexOnAccumulator {
    pub n8: i32,
    pub broadcast: bool,
}

impl IndexOnAccumulator {
    /// The host's result for `a` `[16, 16]` and `b` `[n, 16]` (f16, row-major).
    pub fn expected(&self, a: &[f16], b: &[f16]) -> Vec<f32> {
        let n = 8 * self.n8 as usize;
        let mut out = vec![0.0; 16 * n];
        for i in 0..16 {
            for j in 0..n {
                let dot: f32 = (0..16)
                    .map(|k| a[i * 16 + k].to_f32() * b[j * 16 + k].to_f32())
                    .sum();
                out[i * n + j] = dot + (1000 * j + i) as f32;
            }
        }
        out
    }
}

impl Script for IndexOnAccumulator {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, out): Handles<Self::Args>) {
        let n = 8 * self.n8;
        k.blocks([1]);
        k.warps(1);
        let ga = k.global_view(a, [16, 16]);
        let gb = k.global_view(b, [n, 16]);
        let go = k.global_view(out, [16, n]);
        let ta = k.load_global(&ga, [0, 0], [16, 16]);
        let tb = k.load_global(&gb, [0, 0], [n, 16]);
        let acc = k.register_tensor::<f32>([16, n], 0.0);
        k.dot(&ta, &tb.transpose(), &acc, &acc);
        let grid = if self.broadcast {
            k.arange([n], 0) * 1000 + k.arange([16, 1], 0)
        } else {
            k.arange([16, n], 1) * 1000 + k.arange([16, n], 0)
        };
        k.assign_tile(&acc, acc + grid.cast::<f32>());
        k.store_global(&go, &acc, [0, 0]);
    }
}

/// Causal, length-masked row sums and maxima of `[rows, cols]` tiles of scores: block `b`
/// takes rows `b·rows ..` of `x` `[m, cols]`; element `(i, j)` counts when key `k0 + j` is
/// visible to query `q0 + i` (`k0 + j <= q0 + i`) and exists (`k0 + j < len`). A row with no
/// such key sums to 0 and has maximum −∞. `out` is `[m, 2]`: sum, maximum.
#[derive(Clone, Copy, Debug, Hash)]
pub struct CausalRows {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl CausalRows {
    /// The host's `[m, 2]` result.
    pub fn expected(&self, x: &[f32], m: usize, (q0, k0, len): (i32, i32, i32)) -> Vec<f32> {
        let cols = self.cols as usize;
        let mut out = vec![0.0; 2 * m];
        for i in 0..m {
            let (mut sum, mut max) = (0.0f64, f32::NEG_INFINITY);
            for j in 0..cols {
                let key = k0 + j as i32;
                if key <= q0 + i as i32 && key < len {
                    sum += f64::from(x[i * cols + j]);
                    max = max.max(x[i * cols + j]);
                }
            }
            out[2 * i] = sum as f32;
            out[2 * i + 1] = max;
        }
        out
    }
}

impl Script for CausalRows {
    type Args = (i32, i32, i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "q0", "k0", "len", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (m, q0, k0, len, x, out): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let gx = k.global_view(x, [m, Val::constant(cols)]);
        let go = k.global_view(out, [m, Val::constant(2)]);
        let first = k.let_i32(k.block_idx().x * rows);
        let t = k.load_global(&gx, (first, 0), [rows, cols]);
        let key = k.arange([1, cols], 1) + k0;
        let query = k.arange([rows, 1], 0) + first + q0;
        let keep = key.clone().le(query).and(key.lt(len));
        let sum = k.sum(where_(keep.clone(), t, 0.0), 1, true);
        let max = k.max(where_(keep, t, f32::NEG_INFINITY), 1, true);
        k.store_global(&go, &sum, (first, 0));
        k.store_global(&go, &max, (first, 1));
    }
}

/// `k.argmax` and `k.argmin` along rows of `[rows, cols]` tiles of `x` `[m, cols]`: `vals`
/// `[m, 2]` gets each row's maximum and minimum, `at` `[m, 2]` their first indices (the
/// maximum's reduced without its dimension, the minimum's keeping it).
#[derive(Clone, Copy, Debug, Hash)]
pub struct ArgExtremes {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl ArgExtremes {
    /// The host's `(vals, at)`.
    pub fn expected(&self, x: &[f32], m: usize) -> (Vec<f32>, Vec<i32>) {
        let n = self.cols as usize;
        let (mut vals, mut at) = (vec![0.0; 2 * m], vec![0; 2 * m]);
        for i in 0..m {
            let row = &x[i * n..(i + 1) * n];
            let hi = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lo = row.iter().copied().fold(f32::INFINITY, f32::min);
            vals[2 * i] = hi;
            vals[2 * i + 1] = lo;
            at[2 * i] = row.iter().position(|&v| v == hi).unwrap() as i32;
            at[2 * i + 1] = row.iter().position(|&v| v == lo).unwrap() as i32;
        }
        (vals, at)
    }
}

impl Script for ArgExtremes {
    type Args = (i32, Ptr<f32>, PtrMut<f32>, PtrMut<i32>);
    fn body(&self, k: &mut Kernel, (m, x, vals, at): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let gx = k.global_view(x, [m, Val::constant(cols)]);
        let gv = k.global_view(vals, [m, Val::constant(2)]);
        let ga = k.global_view(at, [m, Val::constant(2)]);
        let first = k.let_i32(k.block_idx().x * rows);
        let t = k.load_global(&gx, (first, 0), [rows, cols]);
        let (hi, hi_at) = k.argmax(t, 1, false);
        let (lo, lo_at) = k.argmin(t, 1, true);
        let hi = k.unsqueeze(&hi, 1);
        let hi_at = k.unsqueeze(&hi_at, 1);
        k.store_global(&gv, &hi, (first, 0));
        k.store_global(&ga, &hi_at, (first, 0));
        k.store_global(&gv, &lo, (first, 1));
        k.store_global(&ga, &lo_at, (first, 1));
    }
}

/// Random numbers over `[m, cols]` in `[rows, cols]` tiles, the offset of element `(i, j)` its
/// row-major index `i · cols + j`: `uniform` gets `rand`, `normal` `randn`, `ints` `randint`.
#[derive(Clone, Copy, Debug, Hash)]
pub struct RandomTiles {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl RandomTiles {
    /// The host's three results for `seed` (the generator of `tilus::ir::philox`, whose
    /// rounds its own known-answer test checks).
    pub fn expected(&self, seed: i32, m: usize) -> (Vec<f32>, Vec<f32>, Vec<u32>) {
        use tilus::ir::philox::{normal, uniform, words};
        let n = m * self.cols as usize;
        let w: Vec<[u32; 4]> = (0..n).map(|o| words(i64::from(seed), o as i64)).collect();
        (
            w.iter().map(|w| uniform(w[0])).collect(),
            w.iter().map(|w| normal(w[0], w[1])).collect(),
            w.iter().map(|w| w[0]).collect(),
        )
    }
}

impl Script for RandomTiles {
    type Args = (i32, i32, PtrMut<f32>, PtrMut<f32>, PtrMut<u32>);
    fn body(&self, k: &mut Kernel, (seed, m, uniform, normal, ints): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let gu = k.global_view(uniform, [m, Val::constant(cols)]);
        let gn = k.global_view(normal, [m, Val::constant(cols)]);
        let gi = k.global_view(ints, [m, Val::constant(cols)]);
        let first = k.let_i32(k.block_idx().x * rows);
        let offsets = (k.arange([rows, 1], 0) + first) * cols + k.arange([1, cols], 1);
        let u = k.compute(rand(seed, offsets.clone()));
        let n = k.compute(randn(seed, offsets.clone()));
        let i = k.compute(randint(seed, offsets));
        k.store_global(&gu, &u, (first, 0));
        k.store_global(&gn, &n, (first, 0));
        k.store_global(&gi, &i, (first, 0));
    }
}

/// Scans of `[rows, cols]` tiles of `x` (f32) and `xi` (i32) along `dim`: `out` is
/// `[5, m, cols]`: inclusive and exclusive running sums, running products, maxima and minima
/// of `x`; `outi` `[m, cols]` the inclusive running sums of `xi` (wrapping).
#[derive(Clone, Copy, Debug, Hash)]
pub struct Scans {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
    pub dim: usize,
}

impl Scans {
    /// `(rows, cols, warps)` of every test: lines across lanes and warps, and (rows of 4 f32,
    /// one 16-byte vector per thread) whole lines in each thread.
    pub const SHAPES: [(i32, i32, u32); 5] = [
        (16, 64, 4),
        (64, 32, 4),
        (8, 128, 2),
        (32, 8, 1),
        (128, 4, 4),
    ];

    /// The host's `(out, outi)`: each line combined in order, in f32 (and wrapping i32).
    pub fn expected(&self, x: &[f32], xi: &[i32], m: usize) -> (Vec<f32>, Vec<i32>) {
        let (rows, cols) = (self.rows as usize, self.cols as usize);
        let mut out = vec![0.0f32; 5 * m * cols];
        let mut outi = vec![0i32; m * cols];
        // the lines of each [rows, cols] tile along `dim`
        for tile in 0..m.div_ceil(rows) {
            let (lines, len) = if self.dim == 1 {
                (rows, cols)
            } else {
                (cols, rows)
            };
            for line in 0..lines {
                let at = |i: usize| {
                    let (r, c) = if self.dim == 1 { (line, i) } else { (i, line) };
                    (tile * rows + r < m).then_some((tile * rows + r) * cols + c)
                };
                let (mut s, mut p, mut hi, mut lo, mut si) =
                    (0.0f32, 1.0f32, f32::NEG_INFINITY, f32::INFINITY, 0i32);
                for i in 0..len {
                    // rows past `m` read 0 (load_global's fill) and are not written
                    let j = at(i);
                    let v = j.map_or(0.0, |j| x[j]);
                    let w = j.map_or(0, |j| xi[j]);
                    let before = s;
                    s += v;
                    p *= v;
                    hi = hi.max(v);
                    lo = lo.min(v);
                    si = si.wrapping_add(w);
                    if let Some(j) = j {
                        let n = m * cols;
                        out[j] = s;
                        out[n + j] = before;
                        out[2 * n + j] = p;
                        out[3 * n + j] = hi;
                        out[4 * n + j] = lo;
                        outi[j] = si;
                    }
                }
            }
        }
        (out, outi)
    }
}

impl Script for Scans {
    type Args = (i32, Ptr<f32>, Ptr<i32>, PtrMut<f32>, PtrMut<i32>);
    fn body(&self, k: &mut Kernel, (m, x, xi, out, outi): Handles<Self::Args>) {
        let (rows, cols, dim) = (self.rows, self.cols, self.dim);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let gx = k.global_view(x, [m, Val::constant(cols)]);
        let gi = k.global_view(xi, [m, Val::constant(cols)]);
        let go = k.global_view(out, [Val::constant(5), m, Val::constant(cols)]);
        let goi = k.global_view(outi, [m, Val::constant(cols)]);
        let first = k.let_i32(k.block_idx().x * rows);
        let t = k.load_global(&gx, (first, 0), [rows, cols]);
        let ti = k.load_global(&gi, (first, 0), [rows, cols]);
        let results = [
            k.cumsum(t, dim, false),
            k.cumsum(t, dim, true),
            k.cumprod(t, dim, false),
            k.cummax(t, dim, false),
            k.cummin(t, dim, false),
        ];
        for (i, r) in results.iter().enumerate() {
            let r = k.unsqueeze(r, 0);
            k.store_global(&go, &r, (i as i32, first, 0));
        }
        let si = k.cumsum(ti, dim, false);
        k.store_global(&goi, &si, (first, 0));
    }
}

/// Bit views (`view`) over `[rows, cols]` tiles of `x` (f32) and `h` (f16): `bits` gets each
/// f32's bits as u32, `next` the f32 whose bits are one more (`view::<i32>() + 1`, viewed
/// back), `hb` each f16's bits read as a bf16.
#[derive(Clone, Copy, Debug, Hash)]
pub struct BitViews {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl BitViews {
    /// The host's `(bits, next, hb)`.
    pub fn expected(x: &[f32], h: &[f16]) -> (Vec<u32>, Vec<f32>, Vec<half::bf16>) {
        (
            x.iter().map(|v| v.to_bits()).collect(),
            x.iter().map(|v| f32::from_bits(v.to_bits() + 1)).collect(),
            h.iter()
                .map(|v| half::bf16::from_bits(v.to_bits()))
                .collect(),
        )
    }
}

impl Script for BitViews {
    type Args = (
        i32,
        Ptr<f32>,
        Ptr<f16>,
        PtrMut<u32>,
        PtrMut<f32>,
        PtrMut<half::bf16>,
    );
    fn body(&self, k: &mut Kernel, (m, x, h, bits, next, hb): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let shape = [m, Val::constant(cols)];
        let (gx, gh) = (k.global_view(x, shape), k.global_view(h, shape));
        let (gb, gn, ghb) = (
            k.global_view(bits, shape),
            k.global_view(next, shape),
            k.global_view(hb, shape),
        );
        let first = k.let_i32(k.block_idx().x * rows);
        let tx = k.load_global(&gx, (first, 0), [rows, cols]);
        let th = k.load_global(&gh, (first, 0), [rows, cols]);
        let b = k.compute(tx.view::<u32>());
        let n = k.compute((tx.view::<i32>() + 1).view::<f32>());
        let v = k.compute(th.view::<half::bf16>());
        k.store_global(&gb, &b, (first, 0));
        k.store_global(&gn, &n, (first, 0));
        k.store_global(&ghb, &v, (first, 0));
    }
}

/// Running sums along the rows of a `[128, 8]` tile over 4 warps: loaded with 16-byte vectors
/// (two threads per row: the scan goes through shared memory), or with `annotate_layout`
/// giving each thread a whole row (the scan stays in registers).
#[derive(Clone, Copy, Debug, Hash)]
pub struct AnnotatedScan {
    pub annotate: bool,
}

impl Script for AnnotatedScan {
    type Args = (Ptr<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (x, out): Handles<Self::Args>) {
        use tilus::layout::RegisterLayout;
        k.blocks([1]);
        k.warps(4);
        let gx = k.global_view(x, [128, 8]);
        let go = k.global_view(out, [128, 8]);
        let t = k.load_global(&gx, [0, 0], [128, 8]);
        if self.annotate {
            let rows = RegisterLayout::spatial(&[128, 1]).compose(&RegisterLayout::local(&[1, 8]));
            k.annotate_layout(&t, rows);
        }
        let s = k.cumsum(t, 1, false);
        k.store_global(&go, &s, [0, 0]);
    }
}

/// Copies `[m, n]` f32 (row-major) in `[16, 64]` tiles; `assume`: the script promises
/// `n % 4 == 0`, so rows start on 16-byte boundaries and loads and stores move 16 bytes.
#[derive(Clone, Copy, Debug, Hash)]
pub struct AssumedRows {
    pub assume: bool,
}

impl Script for AssumedRows {
    type Args = (i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (m, n, x, out): Handles<Self::Args>) {
        k.blocks([cdiv(m, 16), cdiv(n, 64)]);
        k.warps(4);
        if self.assume {
            k.assume((n % 4).eq_(0));
        }
        let gx = k.global_view(x, [m, n]);
        let go = k.global_view(out, [m, n]);
        let (r0, c0) = (
            k.let_i32(k.block_idx().x * 16),
            k.let_i32(k.block_idx().y * 64),
        );
        let t = k.load_global(&gx, (r0, c0), [16, 64]);
        k.store_global(&go, &t, (r0, c0));
    }
}

/// A masked store: block `b` loads rows `b·rows ..` of an `[m, n]` f16 matrix and stores back
/// into an `[m, n]` output only the elements a causal mask keeps (column `c0 + j` at most row
/// `b·rows + i + shift`) below a ragged length (`c0 + j < len`), for column tiles `c0` across
/// the row; the output's other elements keep what the host put there. With `rows_only`, the
/// mask is one column wide (rows `b·rows + i + shift < len`), broadcast along each row.
#[derive(Clone, Debug, Hash)]
pub struct MaskedStore {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
    /// `k.assume(n % 8 == 0)`: rows of whole 16-byte vectors, so that the store is
    /// vectorized where the mask keeps a vector whole.
    pub aligned: bool,
    /// A mask of whole rows (`[rows, 1]`), not the causal one.
    pub rows_only: bool,
}

/// `(rows, cols, warps)`, `(m, n)` and `(shift, len)` of a masked-store test.
pub type MaskedCase = ((i32, i32, u32), (usize, usize), (i32, i32));

impl MaskedStore {
    /// Vectors the mask keeps whole, cuts and drops; ragged edges; rows of whole 16-byte
    /// vectors (`n % 8 == 0`: run `aligned`); a tile smaller than the threads.
    pub const CASES: [MaskedCase; 5] = [
        ((16, 64, 4), (48, 200), (0, 150)),
        ((16, 64, 4), (40, 264), (7, 259)),
        ((32, 32, 2), (70, 70), (5, 70)),
        ((8, 128, 4), (8, 300), (-3, 299)),
        ((4, 8, 4), (9, 13), (2, 11)),
    ];

    /// The host reference: `out` where the mask drops an element, `x` where it keeps it.
    pub fn expected(&self, x: &[f16], out: &[f16], n: usize, (shift, len): (i32, i32)) -> Vec<f16> {
        let mut want = out.to_vec();
        for (idx, w) in want.iter_mut().enumerate() {
            let (r, c) = ((idx / n) as i32, (idx % n) as i32);
            let kept = if self.rows_only {
                r + shift < len
            } else {
                c <= r + shift && c < len
            };
            if kept {
                *w = x[idx];
            }
        }
        want
    }
}

impl Script for MaskedStore {
    type Args = (i32, i32, i32, i32, Ptr<f16>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "shift", "len", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (m, n, shift, len, x, out): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        if self.aligned {
            k.assume((n % 8).eq_(0));
        }
        let gx = k.global_view(x, [m, n]);
        let go = k.global_view(out, [m, n]);
        let r0 = k.let_i32(k.block_idx().x * rows);
        k.for_range(0, cdiv(n, cols), 1, |k, t| {
            let c0 = k.let_i32(t * cols);
            let tile = k.load_global(&gx, [r0, c0], [rows, cols]);
            let (i, j) = (k.arange([rows, 1], 0), k.arange([1, cols], 1));
            if self.rows_only {
                k.store_global_where(&go, &tile, [r0, c0], (i + r0 + shift).lt(len));
            } else {
                let keep = (j.clone() + c0).le(i + r0 + shift).and((j + c0).lt(len));
                k.store_global_where(&go, &tile, [r0, c0], keep);
            }
        });
    }
}

/// A store of whole rows: block `b` copies rows `b·rows ..` of an `[m, cols]` f16 matrix (a
/// width known when compiling) through one `[rows, 64]` tile into `out` where the row is below
/// `len`; the mask is one column wide, so each 16-byte vector is kept or dropped whole. At
/// `cols = 64` the tile covers the rows exactly (no column check); narrower, its last vectors
/// lie past the rows' end and must not reach the next row.
#[derive(Clone, Debug, Hash)]
pub struct RowMaskedStore {
    pub rows: i32,
    pub warps: u32,
    pub cols: i32,
}

impl RowMaskedStore {
    /// The tile's width.
    pub const TILE: i32 = 64;

    /// `(rows, warps)`, `m`, `len` and `cols` of a test: rows cut by the mask, all kept, none
    /// kept; rows narrower than the tile.
    pub const CASES: [((i32, u32), usize, i32, i32); 5] = [
        ((16, 4), 40, 27, 64),
        ((32, 2), 32, 32, 64),
        ((8, 4), 9, 0, 64),
        ((16, 4), 40, 27, 56),
        ((8, 4), 9, 9, 40),
    ];

    /// The host reference: the rows below `len` from `x`, the others from `out`.
    pub fn expected(&self, x: &[f16], out: &[f16], len: usize) -> Vec<f16> {
        let cols = self.cols as usize;
        let keep = len.min(x.len() / cols) * cols;
        let mut want = out.to_vec();
        want[..keep].copy_from_slice(&x[..keep]);
        want
    }
}

impl Script for RowMaskedStore {
    type Args = (i32, i32, Ptr<f16>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "len", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (m, len, x, out): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let gx = k.global_view(x, [m.into(), Scalar::from(cols)]);
        let go = k.global_view(out, [m.into(), Scalar::from(cols)]);
        let r0 = k.let_i32(k.block_idx().x * rows);
        let tile = k.load_global(&gx, (r0, 0), [rows, Self::TILE]);
        let i = k.arange([rows, 1], 0);
        k.store_global_where(&go, &tile, (r0, 0), (i + r0).lt(len));
    }
}
