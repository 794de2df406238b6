//! Layout conversions (`k.convert_layout`): a tile loaded for coalesced reads converted to an
//! mma operand (threads exchange elements: through shared memory), and an mma accumulator
//! converted to the next product's operand (each thread holds its part already: renames). The
//! interpreter (`interp/convert.rs`) and the GPU (`runtime/gpu.rs`) run them against the same
//! host references; the compile tests (`compiler/codegen.rs`) compile them. Each has an
//! `implicit` form that leaves the conversion out: the compiler inserts it at the use.

use half::f16;
use tilus::prelude::*;

/// `c[m, n] = a · bᵀ` for one `[m, n]` tile with `k` = 16 · `k16`, `a` and `b` f16 row-major:
/// `a` is loaded with the global loads' own layout and converted to `dot`'s fragment layout,
/// over `warps` warps. `implicit`: `a` is pinned to the loads' vectorized layout
/// (`annotate_layout`) and given to `dot` as it is.
#[derive(Clone, Copy, Debug, Hash)]
pub struct ConvertedOperand {
    pub m: i32,
    pub n: i32,
    pub k16: i32,
    pub warps: u32,
    pub implicit: bool,
}

impl ConvertedOperand {
    /// The forms every test runs: one warp, and warps over rows and columns.
    pub const FORMS: [ConvertedOperand; 3] = [
        ConvertedOperand {
            m: 16,
            n: 8,
            k16: 1,
            warps: 1,
            implicit: false,
        },
        ConvertedOperand {
            m: 64,
            n: 32,
            k16: 2,
            warps: 4,
            implicit: false,
        },
        ConvertedOperand {
            m: 32,
            n: 64,
            k16: 4,
            warps: 2,
            implicit: false,
        },
    ];

    /// [`ConvertedOperand::FORMS`], explicit and implicit.
    pub fn both_forms() -> impl Iterator<Item = ConvertedOperand> {
        Self::FORMS.into_iter().flat_map(|s| {
            [
                s,
                ConvertedOperand {
                    implicit: true,
                    ..s
                },
            ]
        })
    }

    /// The host's product (f32 sums of f16 products).
    pub fn expected(&self, a: &[f16], b: &[f16]) -> Vec<f32> {
        let (m, n, k) = (self.m as usize, self.n as usize, 16 * self.k16 as usize);
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k)
                    .map(|x| a[i * k + x].to_f32() * b[j * k + x].to_f32())
                    .sum();
            }
        }
        c
    }
}

impl Script for ConvertedOperand {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        let (m, n, kk) = (self.m, self.n, 16 * self.k16);
        k.blocks([1]);
        k.warps(self.warps);
        let ga = k.global_view(a, [m, kk]);
        let gb = k.global_view(b, [n, kk]);
        let gc = k.global_view(c, [m, n]);
        let loaded = k.load_global(&ga, [0, 0], [m, kk]);
        let ta = if self.implicit {
            let coalesced = tilus::passes::infer_layout::vectorized_layout(
                &[i64::from(m), i64::from(kk)],
                32 * i64::from(self.warps),
                2,
            );
            k.annotate_layout(&loaded, coalesced);
            loaded
        } else {
            k.convert_layout(&loaded)
        };
        let tb = k.load_global(&gb, [0, 0], [n, kk]);
        let acc = k.register_tensor::<f32>([m, n], 0.0);
        k.dot(&ta, &tb.transpose(), &acc, &acc);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

/// `c[m, n] = f16(a) · bᵀ` as [`ConvertedOperand`], with `a` f32, pinned to the loads'
/// vectorized layout and cast to f16 for `dot`: the cast's source and result are laid out
/// apart, and the compiler converts the source just before the cast (through shared memory).
#[derive(Clone, Copy, Debug, Hash)]
pub struct CastOperand(pub ConvertedOperand);

impl CastOperand {
    /// The host's product of `a` rounded to f16 and `b`.
    pub fn expected(&self, a: &[f32], b: &[f16]) -> Vec<f32> {
        let a: Vec<f16> = a.iter().map(|&x| f16::from_f32(x)).collect();
        self.0.expected(&a, b)
    }
}

impl Script for CastOperand {
    type Args = (Ptr<f32>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        let s = self.0;
        let (m, n, kk) = (s.m, s.n, 16 * s.k16);
        k.blocks([1]);
        k.warps(s.warps);
        let ga = k.global_view(a, [m, kk]);
        let gb = k.global_view(b, [n, kk]);
        let gc = k.global_view(c, [m, n]);
        let loaded = k.load_global(&ga, [0, 0], [m, kk]);
        let coalesced = tilus::passes::infer_layout::vectorized_layout(
            &[i64::from(m), i64::from(kk)],
            32 * i64::from(s.warps),
            4,
        );
        k.annotate_layout(&loaded, coalesced);
        let ta = k.cast::<f16>(&loaded);
        let tb = k.load_global(&gb, [0, 0], [n, kk]);
        let acc = k.register_tensor::<f32>([m, n], 0.0);
        k.dot(&ta, &tb.transpose(), &acc, &acc);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

/// Two products chained as attention chains them, in one warp: `s = q · kᵀ` (`[16, 16]`,
/// f32), `p` = `s` rounded to f16 and converted to the next product's operand (each thread
/// holds its part of the operand in the accumulator already), `o = p · v` (`v` `[16, d]`).
/// `implicit`: `p` goes to the product as cast (the compiler converts it).
#[derive(Clone, Copy, Debug, Hash)]
pub struct ChainedProducts {
    pub d: i32,
    pub implicit: bool,
}

impl ChainedProducts {
    /// The host's result: `s` in f32, rounded to f16, times `v` in f32.
    pub fn expected(&self, q: &[f16], kt: &[f16], v: &[f16]) -> Vec<f32> {
        let d = self.d as usize;
        let mut p = vec![0.0f32; 16 * 16];
        for i in 0..16 {
            for j in 0..16 {
                let s: f32 = (0..16)
                    .map(|x| q[i * 16 + x].to_f32() * kt[j * 16 + x].to_f32())
                    .sum();
                p[i * 16 + j] = f16::from_f32(s).to_f32();
            }
        }
        let mut o = vec![0.0; 16 * d];
        for i in 0..16 {
            for j in 0..d {
                o[i * d + j] = (0..16).map(|x| p[i * 16 + x] * v[x * d + j].to_f32()).sum();
            }
        }
        o
    }
}

impl Script for ChainedProducts {
    type Args = (Ptr<f16>, Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (q, kt, v, o): Handles<Self::Args>) {
        let d = self.d;
        k.blocks([1]);
        k.warps(1);
        let gq = k.global_view(q, [16, 16]);
        let gk = k.global_view(kt, [16, 16]);
        let gv = k.global_view(v, [16, d]);
        let go = k.global_view(o, [16, d]);
        let tq = k.load_global(&gq, [0, 0], [16, 16]);
        let tk = k.load_global(&gk, [0, 0], [16, 16]);
        let s = k.register_tensor::<f32>([16, 16], 0.0);
        k.dot(&tq, &tk.transpose(), &s, &s);
        let p16 = k.cast::<f16>(&s);
        let p = if self.implicit {
            p16
        } else {
            k.convert_layout(&p16)
        };
        let tv = k.load_global(&gv, [0, 0], [16, d]);
        let acc = k.register_tensor::<f32>([16, d], 0.0);
        k.dot(&p, &tv, &acc, &acc);
        k.store_global(&go, &acc, [0, 0]);
    }
}

/// [`ChainedProducts`] on WGMMA, as a flash attention forward chains them in one warp group:
/// `s = q · kᵀ` (`[64, 64]`, f32, both operands from shared memory), `p` = `s` rounded to f16
/// and converted to the register A operand of the next product (the accumulator's fragment
/// and the operand's coincide per thread: renames), `o = p · v` with `v` `[64, d]` read as
/// stored (an MN-major B operand). `implicit`: `p` goes to the product as cast.
#[derive(Clone, Copy, Debug, Hash)]
pub struct ChainedWgmma {
    pub d: i32,
    pub implicit: bool,
}

impl ChainedWgmma {
    /// Keys (the first product's N, the second's K) and the head width of `q` and `k`.
    pub const KEYS: usize = 64;
    /// The head width of `q` and `k` (the first product's K).
    pub const HEAD: usize = 16;

    /// The host's result: `s` in f32, rounded to f16, times `v` in f32 (64 query rows).
    pub fn expected(&self, q: &[f16], kt: &[f16], v: &[f16]) -> Vec<f32> {
        let (d, keys, head) = (self.d as usize, Self::KEYS, Self::HEAD);
        let mut p = vec![0.0f32; 64 * keys];
        for i in 0..64 {
            for j in 0..keys {
                let s: f32 = (0..head)
                    .map(|x| q[i * head + x].to_f32() * kt[j * head + x].to_f32())
                    .sum();
                p[i * keys + j] = f16::from_f32(s).to_f32();
            }
        }
        let mut o = vec![0.0; 64 * d];
        for i in 0..64 {
            for j in 0..d {
                o[i * d + j] = (0..keys)
                    .map(|x| p[i * keys + x] * v[x * d + j].to_f32())
                    .sum();
            }
        }
        o
    }
}

impl Script for ChainedWgmma {
    type Args = (Ptr<f16>, Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (q, kt, v, o): Handles<Self::Args>) {
        let (d, keys, head) = (self.d, Self::KEYS as i32, Self::HEAD as i32);
        k.blocks([1]);
        k.warps(4);
        let gq = k.global_view(q, [64, head]);
        let gk = k.global_view(kt, [keys, head]);
        let gv = k.global_view(v, [keys, d]);
        let go = k.global_view(o, [64, d]);
        let sq = k.shared_tensor::<f16>([64, head]);
        let sk = k.shared_tensor::<f16>([keys, head]);
        let sv = k.shared_tensor::<f16>([keys, d]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            let bytes = sq.nbytes() + sk.nbytes() + sv.nbytes();
            k.mbarrier().arrive_and_expect_tx(bar[0], bytes);
            k.tma().global_to_shared(&gq, &sq, [0, 0], bar[0]);
            k.tma().global_to_shared(&gk, &sk, [0, 0], bar[0]);
            k.tma().global_to_shared(&gv, &sv, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let s = k.register_tensor::<f32>([64, keys], 0.0);
        k.wgmma().fence();
        k.wgmma().mma(&sq, &sk.transpose(), &s);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        let p16 = k.cast::<f16>(&s);
        let p = if self.implicit {
            p16
        } else {
            k.convert_layout(&p16)
        };
        let acc = k.register_tensor::<f32>([64, d], 0.0);
        k.wgmma().fence();
        k.wgmma().mma(&p, &sv, &acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        k.store_global(&go, &acc, [0, 0]);
    }
}

/// `out = 2·x + y` over `[128, 8]` f32 tiles whose layouts the script pins apart (`x` a row per
/// thread, `y` a column of 8 rows per thread): the expression's operands meet through a
/// conversion the compiler inserts (through shared memory: the threads exchange elements).
#[derive(Clone, Copy, Debug, Hash)]
pub struct ImplicitConvert;

impl ImplicitConvert {
    /// The host's result.
    pub fn expected(x: &[f32], y: &[f32]) -> Vec<f32> {
        x.iter().zip(y).map(|(a, b)| 2.0 * a + b).collect()
    }
}

impl Script for ImplicitConvert {
    type Args = (Ptr<f32>, Ptr<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (x, y, out): Handles<Self::Args>) {
        use tilus::layout::RegisterLayout;
        k.blocks([1]);
        k.warps(4);
        let gx = k.global_view(x, [128, 8]);
        let gy = k.global_view(y, [128, 8]);
        let go = k.global_view(out, [128, 8]);
        let tx = k.load_global(&gx, [0, 0], [128, 8]);
        let ty = k.load_global(&gy, [0, 0], [128, 8]);
        // x: thread t holds row t
        let rows = RegisterLayout::spatial(&[128, 1]).compose(&RegisterLayout::local(&[1, 8]));
        k.annotate_layout(&tx, rows);
        // y: thread t holds column t % 8 of rows 8·(t / 8) .. +8
        let columns = RegisterLayout::spatial(&[16, 8]).compose(&RegisterLayout::local(&[8, 1]));
        k.annotate_layout(&ty, columns);
        let r = k.compute(tx * 2.0 + ty);
        k.store_global(&go, &r, [0, 0]);
    }
}

/// Repetitions of a `[rows, cols]` tile of `x` (f32): `tiled` gets it 3 times along the rows'
/// dimension 1 (`[rows, 3 cols]`), `interleaved` each row twice (`[2 rows, cols]`), and
/// `scaled` the tile times per-group scales (`s` `[rows, cols / 8]` interleaved 8 times along
/// 1, the way group-wise dequantization spreads its scales).
#[derive(Clone, Copy, Debug, Hash)]
pub struct Repeats {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl Repeats {
    /// The forms every test runs: warps over rows and columns, one warp.
    pub const FORMS: [Repeats; 3] = [
        Repeats {
            rows: 16,
            cols: 64,
            warps: 4,
        },
        Repeats {
            rows: 8,
            cols: 128,
            warps: 2,
        },
        Repeats {
            rows: 32,
            cols: 16,
            warps: 1,
        },
    ];

    /// The host's `(tiled, interleaved, scaled)`.
    pub fn expected(&self, x: &[f32], s: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (r, c) = (self.rows as usize, self.cols as usize);
        let tiled = (0..r * 3 * c)
            .map(|i| x[(i / (3 * c)) * c + i % (3 * c) % c])
            .collect();
        let inter = (0..2 * r * c).map(|i| x[(i / c / 2) * c + i % c]).collect();
        let scaled = (0..r * c)
            .map(|i| x[i] * s[(i / c) * (c / 8) + (i % c) / 8])
            .collect();
        (tiled, inter, scaled)
    }
}

impl Script for Repeats {
    type Args = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, PtrMut<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (x, s, tiled, inter, scaled): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([1]);
        k.warps(self.warps);
        let gx = k.global_view(x, [rows, cols]);
        let gs = k.global_view(s, [rows, cols / 8]);
        let gt = k.global_view(tiled, [rows, 3 * cols]);
        let gi = k.global_view(inter, [2 * rows, cols]);
        let gc = k.global_view(scaled, [rows, cols]);
        let t = k.load_global(&gx, [0, 0], [rows, cols]);
        let ts = k.load_global(&gs, [0, 0], [rows, cols / 8]);
        let r1 = k.repeat(&t, 1, 3);
        let r2 = k.repeat_interleave(&t, 0, 2);
        let spread = k.repeat_interleave(&ts, 1, 8);
        let prod = k.compute(t * spread);
        k.store_global(&gt, &r1, [0, 0]);
        k.store_global(&gi, &r2, [0, 0]);
        k.store_global(&gc, &prod, [0, 0]);
    }
}
