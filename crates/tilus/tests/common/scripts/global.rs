//! Scripts of global memory through registers (strided views, `load_global`, atomics) that
//! the interpreter (`interp/memory.rs`) and the GPU (`runtime/gpu.rs`) run against the same
//! CPU references, and the compile tests (`compiler/codegen.rs`) compile.

use half::f16;
use tilus::prelude::*;

/// Integer-valued f32 inputs in `[-50, 50]` (sums of a few of them are exact).
pub fn small_ints(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 33) % 101) as f32 - 50.0
        })
        .collect()
}

/// Copies an `[m, n]` f32 matrix held with leading dimension `ld` (row-major, or
/// column-major: element `(i, j)` at `j * ld + i`) into an f16 row-major matrix with leading
/// dimension `ld`: `load_global` → `cast` → `store_global`, one `[rows, cols]` tile per block.
/// The padding of each row of the destination is not written.
#[derive(Clone, Copy, Debug, Hash)]
pub struct StridedCopy {
    pub rows: i32,
    pub cols: i32,
    pub column_major: bool,
}

impl StridedCopy {
    /// `(m, n, ld, rows, cols)`: ragged sizes (row ends that cut vectors), exact tiles.
    pub const SHAPES: [(usize, usize, usize, i32, i32); 5] = [
        (100, 72, 104, 16, 32),
        (33, 40, 48, 32, 16),
        (37, 61, 64, 16, 32),
        (20, 100, 104, 8, 64),
        (64, 64, 64, 64, 64),
    ];

    /// The source buffer (`ld` times the number of rows, or of columns when column-major).
    pub fn input(&self, m: usize, n: usize, ld: usize) -> Vec<f32> {
        let len = ld * if self.column_major { n } else { m };
        (0..len).map(|i| (i % 2003) as f32 * 0.5 - 400.0).collect()
    }

    /// The destination after the copy, from a destination filled with `init`.
    pub fn expected(&self, m: usize, n: usize, ld: usize, src: &[f32], init: f16) -> Vec<f16> {
        let mut out = vec![init; ld * m];
        for i in 0..m {
            for j in 0..n {
                let at = if self.column_major {
                    j * ld + i
                } else {
                    i * ld + j
                };
                out[i * ld + j] = f16::from_f32(src[at]);
            }
        }
        out
    }
}

impl Script for StridedCopy {
    type Args = (i32, i32, Const<i32>, Ptr<f32>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "ld", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (m, n, ld, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols)]);
        k.warps(4);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let g = if self.column_major {
            k.global_view_strided(src, [m, n], (1, ld))
        } else {
            k.global_view_strided(src, [m, n], (ld, 1))
        };
        let t = k.load_global(&g, [om, on], [self.rows, self.cols]);
        let h: RegisterTensor<f16> = k.cast(&t);
        let d = k.global_view_strided(dst, [m, n], (ld, 1));
        k.store_global(&d, &h, [om, on]);
    }
}

/// Loads the `[16, 32]` box at `(om, 4 q)` of an `[m, n]` f32 view with leading dimension
/// `ld` into one tile, elements outside the view reading `fill`, and stores the whole tile
/// into a `[16, 32]` output: the loads are 4-wide vectors, masked where the view ends or the
/// offsets are negative.
#[derive(Clone, Copy, Debug, Hash)]
pub struct MaskedLoad {
    pub fill: i32,
}

impl MaskedLoad {
    /// The output for a source `src` and the arguments.
    pub fn expected(&self, m: i32, n: i32, ld: i32, om: i32, q: i32, src: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0; 16 * 32];
        for r in 0..16 {
            for c in 0..32 {
                let (i, j) = (om + r, 4 * q + c);
                let inside = (0..m).contains(&i) && (0..n).contains(&j);
                out[(r * 32 + c) as usize] = if inside {
                    src[(i * ld + j) as usize]
                } else {
                    self.fill as f32
                };
            }
        }
        out
    }
}

impl Script for MaskedLoad {
    type Args = (i32, i32, Const<i32>, i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "ld", "om", "q", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (m, n, ld, om, q, src, dst): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(2);
        let on = k.let_i32(q * 4);
        let g = k.global_view_strided(src, [m, n], (ld, 1));
        let t = k.load_global_or(&g, (om, on), [16, 32], self.fill as f64);
        let d = k.global_view(dst, [16, 32]);
        k.store_global(&d, &t, [0, 0]);
    }
}

/// Split-K style: `dst[i, j] += sum over s of src[s, i, j]` for an `[splits, m, n]` f32
/// source, one block per `[rows, cols]` tile and split, each adding its tile into the output
/// with `atomic_add` (the output seen as `[splits, m, n]` with strides `(0, n, 1)`).
#[derive(Clone, Copy, Debug, Hash)]
pub struct SplitSum {
    pub rows: i32,
    pub cols: i32,
}

impl SplitSum {
    /// `dst` after the kernel, from `dst` before it.
    pub fn expected(splits: usize, m: usize, n: usize, src: &[f32], dst: &[f32]) -> Vec<f32> {
        let mut out = dst.to_vec();
        for s in 0..splits {
            for (i, o) in out.iter_mut().enumerate() {
                *o += src[s * m * n + i];
            }
        }
        out
    }
}

impl Script for SplitSum {
    type Args = (i32, i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["splits", "m", "n", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (splits, m, n, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols), splits.into()]);
        k.warps(4);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let s = k.let_i32(k.block_idx().z);
        let g = k.global_view(src, [splits, m, n]);
        let t = k.load_global(&g, [s, om, on], [1, self.rows, self.cols]);
        let out = k.global_view_strided(dst, [splits, m, n], (0, n, 1));
        k.atomic_add(&out, &t, [s, om, on]);
    }
}

/// Column sums, maxima and minima of an `[m, n]` f32 matrix: every block loads a
/// `[rows, cols]` tile and combines it into the `[n]` outputs, seen as `[m, n]` with strides
/// `(0, 1)`, with `atomic_add`, `atomic_max` and `atomic_min`.
#[derive(Clone, Copy, Debug, Hash)]
pub struct ColumnStats {
    pub rows: i32,
    pub cols: i32,
}

impl ColumnStats {
    /// `(sums, maxima, minima)` of the columns, starting from 0, -inf and +inf.
    pub fn expected(m: usize, n: usize, src: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut s = vec![0.0f32; n];
        let mut hi = vec![f32::NEG_INFINITY; n];
        let mut lo = vec![f32::INFINITY; n];
        for i in 0..m {
            for j in 0..n {
                let x = src[i * n + j];
                s[j] += x;
                hi[j] = hi[j].max(x);
                lo[j] = lo[j].min(x);
            }
        }
        (s, hi, lo)
    }
}

impl Script for ColumnStats {
    type Args = (i32, i32, Ptr<f32>, PtrMut<f32>, PtrMut<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "src", "sums", "maxs", "mins"]
    }
    fn body(&self, k: &mut Kernel, (m, n, src, sums, maxs, mins): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols)]);
        k.warps(4);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let g = k.global_view(src, [m, n]);
        let t = k.load_global(&g, [om, on], [self.rows, self.cols]);
        let gs = k.global_view_strided(sums, [m, n], (0, 1));
        let gx = k.global_view_strided(maxs, [m, n], (0, 1));
        let gn = k.global_view_strided(mins, [m, n], (0, 1));
        k.atomic_add(&gs, &t, [om, on]);
        k.atomic_max(&gx, &t, [om, on]);
        k.atomic_min(&gn, &t, [om, on]);
    }
}

/// Scalar atomics, one thread per block: `ticket = counter[0]++` (add), `order[ticket] =
/// block` (exchange), `counter[1] = max(counter[1], block)`, `counter[2] = min(counter[2],
/// block)`, and a compare-and-swap of `flag` from 0 to `block + 1` whose old value goes to
/// `cas_old[block]`: exactly one block wins it.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Tickets;

impl Script for Tickets {
    type Args = (i32, PtrMut<i32>, PtrMut<i32>, PtrMut<u32>, PtrMut<u32>);
    fn arg_names() -> &'static [&'static str] {
        &["blocks", "counter", "order", "flag", "cas_old"]
    }
    fn body(&self, k: &mut Kernel, (nb, counter, order, flag, cas_old): Handles<Self::Args>) {
        k.blocks([nb]);
        k.warps(1);
        let c = k.global_view(counter, [3]);
        let o = k.global_view(order, [nb]);
        let f = k.global_view(flag, [1]);
        let co = k.global_view(cas_old, [nb]);
        k.single_thread(|k| {
            let bid = k.let_i32(k.block_idx().x);
            let ticket = k.atomic_add_scalar(&c, [0], 1);
            k.atomic_exchange_scalar(&o, [ticket], bid);
            k.atomic_max_scalar(&c, [1], bid);
            k.atomic_min_scalar(&c, [2], bid);
            let won = k.atomic_cas_scalar(&f, [0], 0u32, bid + 1);
            k.atomic_exchange_scalar(&co, [bid], won);
        });
    }
}

/// The last block sums: each of `blocks` blocks copies its row of `rows` (`[blocks, 32]`)
/// into a workspace, fences, and takes a ticket; the one thread that takes the last ticket
/// fences again and adds up the workspace's columns (read with atomics: one thread, scalars)
/// into `out`. The split-K-in-one-launch pattern, on i32 so that the sums are exact.
#[derive(Clone, Copy, Debug, Hash)]
pub struct LastBlockSums;

impl LastBlockSums {
    /// `out` for these rows of 32.
    pub fn reference(rows: &[i32]) -> Vec<i32> {
        (0..32)
            .map(|j| rows.chunks(32).map(|r| r[j]).sum())
            .collect()
    }
}

impl Script for LastBlockSums {
    type Args = (i32, Ptr<i32>, PtrMut<i32>, PtrMut<i32>, PtrMut<i32>);
    fn arg_names() -> &'static [&'static str] {
        &["blocks", "rows", "work", "ticket", "out"]
    }
    fn body(&self, k: &mut Kernel, (nb, rows, work, ticket, out): Handles<Self::Args>) {
        k.blocks([nb]);
        k.warps(1);
        let r = k.global_view(rows, [Scalar::from(nb), Scalar::from(32)]);
        let w = k.global_view(work, [Scalar::from(nb), Scalar::from(32)]);
        let t = k.global_view(ticket, [1]);
        let o = k.global_view(out, [32]);
        let bid = k.let_i32(k.block_idx().x);
        let row = k.load_global(&r, [bid, Val::constant(0)], [1, 32]);
        k.store_global(&w, &row, [bid, Val::constant(0)]);
        // the row is stored before the ticket is taken, as any block sees it
        k.fence_gpu();
        k.single_thread(|k| {
            let mine = k.atomic_add_scalar(&t, [0], 1);
            k.if_(mine.eq_(nb - 1), |k| {
                // every other block stored its row before its ticket; read them after ours
                k.fence_gpu();
                k.for_range(0, 32, 1, |k, j| {
                    let sum = k.var_i32(0);
                    k.for_range(0, nb, 1, |k, b| {
                        let v = k.atomic_add_scalar(&w, [b, j], 0);
                        k.assign(sum, sum + v);
                    });
                    k.atomic_exchange_scalar(&o, [j], sum);
                });
            });
        });
    }
}

/// Tile exchange and compare-and-swap: `x_old = x; x = y` over an `[m, n]` i32 matrix
/// (`atomic_exchange`), and `z_old = z; z = (z == expect) ? val : z` over an f32 one
/// (`atomic_cas`), one `[16, 32]` tile per block.
#[derive(Clone, Copy, Debug, Hash)]
pub struct SwapTiles;

impl Script for SwapTiles {
    type Args = (
        i32,
        i32,
        PtrMut<i32>,
        Ptr<i32>,
        PtrMut<i32>,
        PtrMut<f32>,
        Ptr<f32>,
        Ptr<f32>,
        PtrMut<f32>,
    );
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "x", "y", "x_old", "z", "expect", "val", "z_old"]
    }
    fn body(
        &self,
        k: &mut Kernel,
        (m, n, x, y, x_old, z, expect, val, z_old): Handles<Self::Args>,
    ) {
        k.blocks([cdiv(m, 16), cdiv(n, 32)]);
        k.warps(4);
        let om = k.let_i32(16 * k.block_idx().x);
        let on = k.let_i32(32 * k.block_idx().y);
        let at = [om, on];
        let (gx, gy, gxo) = (
            k.global_view(x, [m, n]),
            k.global_view(y, [m, n]),
            k.global_view(x_old, [m, n]),
        );
        let t = k.load_global(&gy, at, [16, 32]);
        let old = k.atomic_exchange(&gx, &t, at);
        k.store_global(&gxo, &old, at);
        let (gz, ge, gv, gzo) = (
            k.global_view(z, [m, n]),
            k.global_view(expect, [m, n]),
            k.global_view(val, [m, n]),
            k.global_view(z_old, [m, n]),
        );
        let e = k.load_global(&ge, at, [16, 32]);
        let v = k.load_global(&gv, at, [16, 32]);
        let old = k.atomic_cas(&gz, &e, &v, at);
        k.store_global(&gzo, &old, at);
    }
}

/// A TMA copy of the `[8, 16]` box at the origin of an `[m, 16]` f32 view with leading
/// dimension `ld` (a sub-matrix of a wider matrix) through shared memory into an `[8, 16]`
/// output: the tensor map takes the view's strides.
#[derive(Clone, Copy, Debug, Hash)]
pub struct StridedTma;

impl StridedTma {
    /// The output for `m` rows of a source whose element `i` is `i`.
    pub fn expected(m: usize, ld: usize) -> Vec<f32> {
        (0..8 * 16)
            .map(|i| {
                let (r, c) = (i / 16, i % 16);
                if r < m {
                    (r * ld + c) as f32
                } else {
                    0.0
                }
            })
            .collect()
    }
}

impl Script for StridedTma {
    type Args = (i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "ld", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (m, ld, src, dst): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(1);
        let g = k.global_view_strided(src, [m, Val::constant(16)], (ld, 1));
        let s = k.shared_tensor::<f32>([8, 16]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let r = k.load_shared(&s);
        let d = k.global_view(dst, [8, 16]);
        k.store_global(&d, &r, [0, 0]);
    }
}

/// Split-K matmul without shared memory: `c += a bᵀ` for `[m, k]` and `[n, k]` f16 operands,
/// one block per 64x128 tile of `c` and 32-wide slice of `k`: the operands come from
/// `load_global` in the mma fragments' layouts, the product from `dot`,
/// and the accumulator goes into `c` with `atomic_add` (the mma accumulator's layout).
#[derive(Clone, Copy, Debug, Hash)]
pub struct SplitKMatmul;

impl SplitKMatmul {
    /// `c + a bᵀ` in f64 (exact for the inputs of `inputs::matmul_inputs`).
    pub fn expected(m: usize, n: usize, k: usize, a: &[f16], b: &[f16], c: &[f32]) -> Vec<f32> {
        let mut out = c.to_vec();
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k)
                    .map(|x| a[i * k + x].to_f64() * b[j * k + x].to_f64())
                    .sum();
                out[i * n + j] += s as f32;
            }
        }
        out
    }
}

impl Script for SplitKMatmul {
    type Args = (i32, i32, i32, Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "k", "a", "b", "c"]
    }
    fn body(&self, k: &mut Kernel, (m, n, kk, a, b, c): Handles<Self::Args>) {
        k.blocks([cdiv(m, 64), cdiv(n, 128), cdiv(kk, 32)]);
        k.warps(4);
        let om = k.let_i32(64 * k.block_idx().x);
        let on = k.let_i32(128 * k.block_idx().y);
        let ok = k.let_i32(32 * k.block_idx().z);
        let ga = k.global_view(a, [m, kk]);
        let gb = k.global_view(b, [n, kk]);
        let ta = k.load_global(&ga, [om, ok], [64, 32]);
        let tb = k.load_global(&gb, [on, ok], [128, 32]);
        let acc = k.register_tensor::<f32>([64, 128], 0.0);
        k.dot(&ta, &tb.transpose(), &acc, &acc);
        let gc = k.global_view(c, [m, n]);
        k.atomic_add(&gc, &acc, [om, on]);
    }
}

/// Scatters over `[rows, cols]` tiles of `x` `[m, cols]` (f32): `out[perm[i], j] = x[i, j]`
/// (`store_global_at`; rows sent past the view are skipped) and `hist[bins[i, j]] +=
/// x[i, j]` over 16 bins (`atomic_add_at`).
#[derive(Clone, Copy, Debug, Hash)]
pub struct Scatters {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl Scatters {
    /// The forms every test runs.
    pub const FORMS: [Scatters; 3] = [
        Scatters {
            rows: 16,
            cols: 64,
            warps: 4,
        },
        Scatters {
            rows: 8,
            cols: 32,
            warps: 1,
        },
        Scatters {
            rows: 32,
            cols: 8,
            warps: 2,
        },
    ];

    /// The host's `(out, hist)` (`out` starts as NaN everywhere).
    pub fn expected(
        &self,
        x: &[f32],
        perm: &[i32],
        bins: &[i32],
        m: usize,
    ) -> (Vec<f32>, Vec<f32>) {
        let n = self.cols as usize;
        let mut out = vec![f32::NAN; m * n];
        let mut hist = vec![0.0f32; 16];
        for i in 0..m {
            let to = perm[i];
            for j in 0..n {
                if (0..m as i32).contains(&to) {
                    out[to as usize * n + j] = x[i * n + j];
                }
                hist[bins[i * n + j] as usize] += x[i * n + j];
            }
        }
        (out, hist)
    }
}

impl Script for Scatters {
    type Args = (i32, Ptr<f32>, Ptr<i32>, Ptr<i32>, PtrMut<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (m, x, perm, bins, out, hist): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let gx = k.global_view(x, [m, Val::constant(cols)]);
        let gp = k.global_view(perm, [m, Val::constant(1)]);
        let gb = k.global_view(bins, [m, Val::constant(cols)]);
        let go = k.global_view(out, [m, Val::constant(cols)]);
        let gh = k.global_view(hist, [16]);
        let first = k.let_i32(k.block_idx().x * rows);
        let t = k.load_global(&gx, (first, 0), [rows, cols]);
        // rows past `m` read a destination far outside the view: skipped
        let to = k.load_global_or(&gp, (first, 0), [rows, 1], -1.0);
        let b = k.load_global(&gb, (first, 0), [rows, cols]);
        let c = k.arange([1, cols], 1);
        k.store_global_at(&go, &t, (to, c));
        // rows past `m` read 0 from `x`: adding them changes nothing
        k.atomic_add_at(&gh, &t, (b,));
    }
}

/// Sums over segments the host lays out in memory (a packed batch's shape): block `b` reads
/// `offsets[b]` and `offsets[b + 1]` (`load_global_scalar`) and `weights[b]`, walks
/// `x[offsets[b] .. offsets[b + 1]]` 32 elements at a time, and writes the sum times the
/// weight to `out[b]`. The last block also reads `offsets[segments + 1]`, outside the view
/// (0), and stores it to `out[segments]`.
#[derive(Clone, Copy, Debug, Hash)]
pub struct SegmentSums;

impl SegmentSums {
    /// Segments of lengths `lens`: their offsets, the values (small integers, every sum
    /// exact) and a weight per segment.
    pub fn inputs(lens: &[i32]) -> (Vec<i32>, Vec<f32>, Vec<f32>) {
        let mut offsets = vec![0i32];
        for l in lens {
            offsets.push(offsets.last().unwrap() + l);
        }
        let n = *offsets.last().unwrap() as usize;
        let x: Vec<f32> = (0..n).map(|i| (i * 37 % 101) as f32 - 50.0).collect();
        let weights: Vec<f32> = (0..lens.len()).map(|i| 0.5 + i as f32).collect();
        (offsets, x, weights)
    }

    /// `out` for these segments.
    pub fn reference(x: &[f32], offsets: &[i32], weights: &[f32]) -> Vec<f32> {
        let mut out: Vec<f32> = offsets
            .windows(2)
            .zip(weights)
            .map(|(w, &f)| x[w[0] as usize..w[1] as usize].iter().sum::<f32>() * f)
            .collect();
        out.push(0.0);
        out
    }
}

impl Script for SegmentSums {
    type Args = (i32, i32, Ptr<f32>, Ptr<i32>, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["segments", "n", "x", "offsets", "weights", "out"]
    }
    fn body(&self, k: &mut Kernel, (segs, n, x, offsets, weights, out): Handles<Self::Args>) {
        k.blocks([segs]);
        k.warps(1);
        let gx = k.global_view(x, [n]);
        let go = k.global_view(offsets, [segs + 1]);
        let gw = k.global_view(weights, [segs]);
        let gout = k.global_view(out, [segs + 1]);
        let b = k.let_i32(k.block_idx().x);
        let start = k.load_global_scalar(&go, [b]);
        let end = k.load_global_scalar(&go, [b + 1]);
        let weight = k.load_global_scalar(&gw, [b]);
        let acc = k.register_tensor::<f32>([32], 0.0);
        k.for_range(start, end, 32, |k, i| {
            let t = k.load_global(&gx, [i], [32]);
            let keep = (k.arange([32], 0) + i).lt(end);
            k.assign_tile(&acc, acc + where_(keep, t, 0.0f32));
        });
        let total = k.sum(acc, 0, true);
        let weighted = k.compute(total * weight);
        k.store_global(&gout, &weighted, [b]);
        k.if_(b.eq_(segs - 1), |k| {
            let past = k.load_global_scalar(&go, [segs + 1]);
            let t = k.register_tensor::<f32>([1], 0.0);
            k.assign_tile(&t, t + past.cast::<f32>());
            k.store_global(&gout, &t, [segs]);
        });
    }
}

/// Bytes through shared memory: a `[16, 32]` u8 tile (signed bytes in `i8`, FP8 codes in
/// `F8E4M3`, ... are bytes too) loaded from global memory, stored to a shared tile by
/// ordinary stores, read back by every thread in another layout and stored out: `out`
/// equals `x`. The layout read back: each thread a column, so most bytes sit at odd
/// addresses (one byte a load); or, with `runs`, each thread 16 consecutive bytes of a row
/// (8 bytes a load).
#[derive(Clone, Copy, Debug, Hash)]
pub struct SharedBytes {
    /// Read back in runs of consecutive bytes instead of by columns.
    pub runs: bool,
}

impl Script for SharedBytes {
    type Args = (Ptr<u8>, PtrMut<u8>);
    fn body(&self, k: &mut Kernel, (x, out): Handles<Self::Args>) {
        use tilus::layout::RegisterLayout;
        k.blocks([1]);
        k.warps(1);
        let gx = k.global_view(x, [16, 32]);
        let go = k.global_view(out, [16, 32]);
        let t = k.load_global(&gx, [0, 0], [16, 32]);
        let s = k.shared_tensor::<u8>([16, 32]);
        k.store_shared(&s, &t);
        k.sync();
        let r = k.load_shared(&s);
        let layout = if self.runs {
            // lane t holds half a row: 16 bytes
            RegisterLayout::spatial(&[16, 2]).compose(&RegisterLayout::local(&[1, 16]))
        } else {
            // lane t holds column t of every row
            RegisterLayout::spatial(&[1, 32]).compose(&RegisterLayout::local(&[16, 1]))
        };
        k.annotate_layout(&r, layout);
        k.store_global(&go, &r, [0, 0]);
    }
}
