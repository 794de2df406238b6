//! Scripts of the arithmetic family and their CPU references: an `[rows, cols]` f32 tile per
//! block comes in through TMA and `load_shared`, one case of elementwise arithmetic or
//! reductions runs on it in registers, and the `[rows, cols]` f32 result is stored. The
//! interpreter tests check each case against its reference; the GPU tests check the GPU's
//! bits against the interpreter's (exactly where the case has no transcendental function).

use half::{bf16, f16};
use tilus::prelude::*;

/// What a case computes from the input tile `x`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ArithCase {
    /// `where(x > 0, 3x - 1.5, max(x / 7, -x * x))`: IEEE operations only (exact).
    Elementwise,
    /// `exp(x) + log(|x| + 1) + sqrt(|x|) * tanh(x) - rsqrt(x * x + 1) + sin(x)`.
    Transcendental,
    /// `x - sum(x, dim 1) / cols`: a row sum broadcast back along the columns.
    CenterRows,
    /// `x * max(x, dim 0) + min(x, dim 0)`: column reductions broadcast down the rows.
    ColumnExtremes,
    /// The softmax of each row (`exp(x - max) / sum`).
    Softmax,
    /// Through `i32`: `f32((3 * i + 7) / 5 max -i)` with `i = i32(x * 100)` (truncation).
    Integers,
    /// Through `f16`: `f32(f16(h * h + 1)) + f32(bf16(x) * 2)` with `h = f16(x)`: f32 inside,
    /// rounded once at the end of each compute.
    HalfFloats,
    /// `x + f32(f16 sum of the row of f16(x))`: f32 inside, rounded once.
    HalfSum,
    /// `where(any(x > 0.9, dim 1), 1, 0) + where(all(x > -0.9, dim 0), 2, 0)`.
    Logical,
    /// The hardware's approximations, asked for:
    /// `tanh_approx(x) + exp_approx(x) / 4 + recip_approx(x * x + 1) + exp2_approx(x) / 8`.
    FastMath,
    /// Fused multiply-adds, one rounding each: `mul_add(x, x, -0.3) + f32(mul_add(i, i, 7))`
    /// with `i = i32(x * 100)` (exact: the interpreter's `f32::mul_add` is `fma.rn`).
    MulAdd,
}

impl ArithCase {
    /// Every case.
    pub const ALL: [ArithCase; 11] = [
        ArithCase::Elementwise,
        ArithCase::Transcendental,
        ArithCase::CenterRows,
        ArithCase::ColumnExtremes,
        ArithCase::Softmax,
        ArithCase::Integers,
        ArithCase::HalfFloats,
        ArithCase::HalfSum,
        ArithCase::Logical,
        ArithCase::FastMath,
        ArithCase::MulAdd,
    ];

    /// Whether the GPU's bits must equal the interpreter's (no transcendental function:
    /// IEEE operations, conversions and reductions in the same order).
    pub fn bit_exact(self) -> bool {
        !matches!(
            self,
            ArithCase::Transcendental | ArithCase::Softmax | ArithCase::FastMath
        )
    }

    /// The largest relative difference from the CPU reference the interpreter's result may
    /// have: it computes the accurate functions where the GPU approximates them (fast math),
    /// so its bound is its own, not the GPU's.
    pub fn interp_tolerance(self) -> f32 {
        match self {
            ArithCase::FastMath => 1e-5,
            other => other.tolerance(),
        }
    }

    /// The largest relative difference from the CPU reference a GPU result may have.
    pub fn tolerance(self) -> f32 {
        match self {
            ArithCase::Elementwise | ArithCase::Integers | ArithCase::Logical => 0.0,
            ArithCase::HalfFloats | ArithCase::MulAdd => 0.0,
            ArithCase::ColumnExtremes => 0.0,
            // a row sum rounded to f16: one f16 ulp where the orders differ
            ArithCase::HalfSum => 2e-3,
            // tanh.approx.f32 (about 2^-11 relative) and ex2.approx on the GPU; the
            // interpreter computes the accurate functions
            ArithCase::FastMath => 2e-3,
            // sums in another order; exp and friends within a few ulps
            _ => 1e-5,
        }
    }
}

/// `(rows, cols, warps)`: tiles whose reductions stay in lanes, cross warps, or replicate.
pub const SHAPES: [(i32, i32, u32); 6] = [
    (16, 64, 4),
    (64, 32, 4),
    (8, 128, 2),
    (128, 16, 4),
    (32, 32, 1),
    (4, 8, 4),
];

/// One case on one tile shape; one block per `[rows, cols]` tile of the `[m, n]` input.
#[derive(Clone, Debug, Hash)]
pub struct ArithTile {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
    pub case: ArithCase,
}

impl ArithTile {
    /// `case` on `[rows, cols]` tiles of `warps` warps (an entry of [`SHAPES`]).
    pub fn new(case: ArithCase, (rows, cols, warps): (i32, i32, u32)) -> ArithTile {
        ArithTile {
            rows,
            cols,
            warps,
            case,
        }
    }
}

impl Script for ArithTile {
    type Args = (i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (m, n, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols)]);
        k.warps(self.warps);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let g = k.global_view::<f32>(src, [m, n]);
        let s = k.shared_tensor::<f32>([self.rows, self.cols]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [om, on], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let x = k.load_shared(&s);
        let y = case_body(k, self.case, x, self.cols);
        let out = k.global_view::<f32>(dst, [m, n]);
        k.store_global(&out, &y, [om, on]);
    }
}

fn case_body(
    k: &mut Kernel,
    case: ArithCase,
    x: RegisterTensor<f32>,
    cols: i32,
) -> RegisterTensor<f32> {
    match case {
        ArithCase::Elementwise => {
            k.compute(where_(x.gt(0.0), x * 3.0 - 1.5, (x / 7.0).maximum(-x * x)))
        }
        ArithCase::Transcendental => k.compute(
            x.exp() + (x.abs() + 1.0).log() + x.abs().sqrt() * x.tanh() - (x * x + 1.0).rsqrt()
                + x.sin(),
        ),
        ArithCase::FastMath => k.compute(
            x.tanh_approx()
                + x.exp_approx() / 4.0
                + (x * x + 1.0).recip_approx()
                + x.exp2_approx() / 8.0,
        ),
        ArithCase::MulAdd => {
            let i = k.compute::<i32>((x * 100.0).cast::<i32>());
            let j = k.compute(i.mul_add(i, 7));
            k.compute(x.mul_add(x, -0.3) + j.cast::<f32>())
        }
        ArithCase::CenterRows => {
            let s = k.sum(x, 1, true);
            k.compute(x - s / cols as f32)
        }
        ArithCase::ColumnExtremes => {
            let hi = k.max(x, 0, true);
            let lo = k.min(x, 0, false);
            k.compute(x * hi + lo)
        }
        ArithCase::Softmax => {
            let m = k.max(x, 1, true);
            let e = k.compute((x - m).exp());
            let s = k.sum(e, 1, true);
            k.compute(e / s)
        }
        ArithCase::Integers => {
            let i = k.compute::<i32>((x * 100.0).cast::<i32>());
            let r = k.compute(((i * 3 + 7) / 5).maximum(-i));
            k.compute(r.cast::<f32>())
        }
        ArithCase::HalfFloats => {
            let h = k.compute(x.cast::<f16>());
            let y = k.compute(h * h + 1.0);
            let b = k.compute((x.cast::<bf16>() * 2.0).cast::<bf16>());
            k.compute(y.cast::<f32>() + b.cast::<f32>())
        }
        ArithCase::HalfSum => {
            let h = k.compute(x.cast::<f16>());
            let s = k.sum(h, 1, true);
            k.compute(x + s.cast::<f32>())
        }
        ArithCase::Logical => {
            let any = k.any(x.gt(0.9), 1, true);
            let all = k.all(x.gt(-0.9), 0, true);
            k.compute(where_(any, 1.0, 0.0) + where_(all, 2.0, 0.0))
        }
    }
}

/// Random inputs in (-1, 1) with a fixed seed per call site.
pub fn input(m: usize, n: usize, seed: u64) -> Vec<f32> {
    crate::common::inputs::random_f32(m * n, seed)
}

/// The CPU reference of a case over the whole `[m, n]` input, tile by tile.
pub fn reference(
    case: ArithCase,
    x: &[f32],
    m: usize,
    n: usize,
    rows: usize,
    cols: usize,
) -> Vec<f32> {
    let mut out = vec![f32::NAN; m * n];
    for r0 in (0..m).step_by(rows) {
        for c0 in (0..n).step_by(cols) {
            // the tile, with TMA's zero fill past the edges
            let at = |r: usize, c: usize| {
                let (gr, gc) = (r0 + r, c0 + c);
                if gr < m && gc < n {
                    x[gr * n + gc]
                } else {
                    0.0
                }
            };
            let t: Vec<Vec<f32>> = (0..rows)
                .map(|r| (0..cols).map(|c| at(r, c)).collect())
                .collect();
            let y = reference_tile(case, &t, cols);
            for (r, row) in y.iter().enumerate() {
                for (c, &v) in row.iter().enumerate() {
                    if r0 + r < m && c0 + c < n {
                        out[(r0 + r) * n + c0 + c] = v;
                    }
                }
            }
        }
    }
    out
}

fn reference_tile(case: ArithCase, t: &[Vec<f32>], cols: usize) -> Vec<Vec<f32>> {
    let map = |f: &dyn Fn(usize, usize, f32) -> f32| -> Vec<Vec<f32>> {
        t.iter()
            .enumerate()
            .map(|(r, row)| row.iter().enumerate().map(|(c, &v)| f(r, c, v)).collect())
            .collect()
    };
    let row_sum = |r: usize| t[r].iter().map(|&v| v as f64).sum::<f64>() as f32;
    let col = |c: usize| t.iter().map(move |row| row[c]);
    match case {
        ArithCase::Elementwise => map(&|_, _, x| {
            if x > 0.0 {
                x * 3.0 - 1.5
            } else {
                (x / 7.0).max(-x * x)
            }
        }),
        ArithCase::Transcendental => map(&|_, _, x| {
            x.exp() + (x.abs() + 1.0).ln() + x.abs().sqrt() * x.tanh() - 1.0 / (x * x + 1.0).sqrt()
                + x.sin()
        }),
        ArithCase::FastMath => {
            map(&|_, _, x| x.tanh() + x.exp() / 4.0 + 1.0 / (x * x + 1.0) + x.exp2() / 8.0)
        }
        ArithCase::MulAdd => map(&|_, _, x| {
            let i = (x * 100.0) as i32;
            x.mul_add(x, -0.3) + (i * i + 7) as f32
        }),
        ArithCase::CenterRows => map(&|r, _, x| x - row_sum(r) / cols as f32),
        ArithCase::ColumnExtremes => map(&|_, c, x| {
            let hi = col(c).fold(f32::NEG_INFINITY, f32::max);
            let lo = col(c).fold(f32::INFINITY, f32::min);
            x * hi + lo
        }),
        ArithCase::Softmax => map(&|r, _, x| {
            let m = t[r].iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let s: f64 = t[r].iter().map(|&v| ((v - m) as f64).exp()).sum();
            ((x - m) as f64).exp() as f32 / s as f32
        }),
        ArithCase::Integers => map(&|_, _, x| {
            let i = (x * 100.0) as i32;
            ((3 * i + 7) / 5).max(-i) as f32
        }),
        ArithCase::HalfFloats => map(&|_, _, x| {
            let h = f16::from_f32(x).to_f32();
            let y = f16::from_f32(h * h + 1.0).to_f32();
            let b = bf16::from_f32(bf16::from_f32(x).to_f32() * 2.0).to_f32();
            y + b
        }),
        ArithCase::HalfSum => map(&|r, _, x| {
            let s: f32 = t[r].iter().map(|&v| f16::from_f32(v).to_f32()).sum();
            x + f16::from_f32(s).to_f32()
        }),
        ArithCase::Logical => map(&|r, c, _| {
            let any = t[r].iter().any(|&v| v > 0.9);
            let all = col(c).all(|v| v > -0.9);
            (if any { 1.0 } else { 0.0 }) + if all { 2.0 } else { 0.0 }
        }),
    }
}

/// The largest relative difference between two results (NaN anywhere is infinite).
pub fn max_rel_diff(got: &[f32], want: &[f32]) -> f32 {
    got.iter()
        .zip(want)
        .map(|(&g, &w)| {
            if g.is_nan() || w.is_nan() {
                f32::INFINITY
            } else {
                (g - w).abs() / w.abs().max(1.0)
            }
        })
        .fold(0.0, f32::max)
}

/// `out = x * (alpha * 2 - 1) + beta + gamma` over an `[n]` f32 vector, with float scalar
/// arguments of every width (`alpha: f32`, `beta: f16`, `gamma: bf16`) and a `let_f32`.
#[derive(Clone, Debug, Hash)]
pub struct FloatAffine;

impl FloatAffine {
    /// The scalars the tests pass.
    pub const ARGS: (f32, f16, bf16) = (
        0.37,
        f16::from_f32_const(-1.25),
        bf16::from_f32_const(0.015625),
    );

    /// The CPU reference, in f32 as the kernel computes.
    pub fn reference(x: &[f32]) -> Vec<f32> {
        let (alpha, beta, gamma) = Self::ARGS;
        let scale = alpha * 2.0 - 1.0;
        x.iter()
            .map(|&v| v * scale + beta.to_f32() + gamma.to_f32())
            .collect()
    }
}

impl Script for FloatAffine {
    type Args = (i32, f32, f16, bf16, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["n", "alpha", "beta", "gamma", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (n, alpha, beta, gamma, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(n, 256)]);
        k.warps(2);
        let o = k.let_i32(256 * k.block_idx().x);
        let g = k.global_view::<f32>(src, [n]);
        let x = k.load_global(&g, [o], [256]);
        let scale = k.let_f32(alpha * 2.0 - 1);
        let y = k.compute(x * scale + beta + gamma);
        let out = k.global_view::<f32>(dst, [n]);
        k.store_global(&out, &y, [o]);
    }
}
