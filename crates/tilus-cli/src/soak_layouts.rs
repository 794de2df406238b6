//! `tilus soak --layouts`: many launches of the general GEMM (`tilus_kernels::gemm::general`)
//! over random problems: batches of 1 to 3 (an operand shared by the batch a quarter of the
//! time), A, B and C each row- or column-major, leading dimensions and batch strides padded
//! by 0 to 9 elements (most of them not multiples of 16 bytes, so staged or loaded), any K,
//! and scales drawn from (1, 0), (0.5, 0), (1, 1), (-0.75, 0.5). Every element of every C is
//! checked against its exact f64 value on the host (the products of f16 and bf16 are exact
//! in f64): a kernel error is an element farther from it than rounding after an f32
//! accumulation allows, a non-finite element where the exact value is finite, or an element
//! outside C that changed. Launches take three kernels in turn: two tiles with staging, and
//! 128 × 128 tiles with operands TMA cannot read loaded by the kernel's threads.

use crate::out::{outln, CliError, CliResult};
use half::{bf16, f16};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::Instant;
use tilus_bench::harness::{seed_inputs, Rng};
use tilus_bench::operand::Operand;
use tilus_bench::referee::allowed;
use tilus_kernels::gemm::general::{
    specialization, GemmGeneral, GemmProblem, Layout, MatmulGeneral, Order,
};
use tilus_kernels::gemm::persistent::MatmulPersistent;
use tilus_kernels::gemm::Matmuls;

/// The scales drawn: `(alpha, beta)`.
const SCALES: [(f32, f32); 4] = [(1.0, 0.0), (0.5, 0.0), (1.0, 1.0), (-0.75, 0.5)];

/// The options of `tilus soak --layouts`.
pub(crate) struct LayoutSoakArgs {
    pub launches: usize,
    /// Largest M and N (K up to twice it).
    pub max: u64,
    /// Distinct (N, K) pairs.
    pub pool: usize,
    pub seed: u64,
    pub dtype: String,
}

/// Runs the soak; prints a summary per kernel and returns whether everything was right.
pub fn soak_layouts(a: LayoutSoakArgs) -> CliResult<bool> {
    match a.dtype.as_str() {
        "f16" => run::<f16>(a),
        "bf16" => run::<bf16>(a),
        other => Err(CliError::Usage(format!(
            "unknown --dtype `{other}` (f16, bf16)"
        ))),
    }
}

/// The kernels the launches take in turn: (name, configuration, staging).
fn kernels() -> Vec<(&'static str, MatmulGeneral, bool)> {
    let tile = |block_m, block_n, ping_pong| MatmulGeneral {
        tile: MatmulPersistent {
            block_m,
            block_n,
            ping_pong,
            ..MatmulPersistent::default()
        },
    };
    vec![
        ("128x256 staged", tile(128, 256, 0), true),
        ("128x128 ping-pong staged", tile(128, 128, 1), true),
        ("128x128 loaded", tile(128, 128, 0), false),
    ]
}

/// One random problem on the pool's pair `(n, k)`; a column-major C (which runs as the
/// transposed product, M in N's place) takes its M from the pool's N values `ns`, so that
/// the specializations stay few.
fn draw_problem(rng: &mut Rng, (n, k): (usize, usize), ns: &[usize], max: usize) -> GemmProblem {
    let mut pick = |hi: usize| ((rng.next_f64() * hi as f64) as usize).min(hi - 1);
    let batch = 1 + pick(3);
    let m = 1 + pick(max);
    let order = |x: usize| {
        if x == 0 {
            Order::RowMajor
        } else {
            Order::ColMajor
        }
    };
    let (oa, ob, oc) = (order(pick(2)), order(pick(2)), order(pick(2)));
    let m = match oc {
        Order::RowMajor => m,
        Order::ColMajor => ns[pick(ns.len())],
    };
    let mut layout = |o: Order, (r, c): (usize, usize), shareable: bool| {
        let ld = match o {
            Order::RowMajor => c,
            Order::ColMajor => r,
        } + pick(10);
        let one = match o {
            Order::RowMajor => r * ld,
            Order::ColMajor => c * ld,
        };
        let stride = if shareable && pick(4) == 0 {
            0
        } else {
            one + pick(8)
        };
        Layout {
            order: o,
            ld,
            batch_stride: stride,
        }
    };
    let a = layout(oa, (m, k), true);
    let b = layout(ob, (k, n), true);
    let c = layout(oc, (m, n), false);
    let (alpha, beta) = SCALES[pick(SCALES.len())];
    GemmProblem::new(batch, (m, n, k))
        .a(a)
        .b(b)
        .c(c)
        .scales(alpha, beta)
}

/// What one launch found: kernel errors, non-finite elements, elements outside C changed.
#[derive(Default, Clone, Copy)]
struct Found {
    wrong: usize,
    non_finite: usize,
    outside: usize,
}

/// Checks `got` (C's buffer after the launch) against the exact result of `p` on `a`, `b`
/// and C's old values `c0`.
fn check<T: Operand>(p: &GemmProblem, (a, b, c0): (&[T], &[T], &[T]), got: &[T]) -> Found {
    let at = |l: &Layout, bt: usize, i: usize, j: usize| bt * l.batch_stride + l.offset(i, j);
    let rows: Vec<(usize, usize)> = (0..p.batch)
        .flat_map(|bt| (0..p.m).map(move |i| (bt, i)))
        .collect();
    let per_row: Vec<(Found, Vec<usize>)> = rows
        .par_iter()
        .map(|&(bt, i)| {
            let mut f = Found::default();
            let mut offsets = Vec::with_capacity(p.n);
            for j in 0..p.n {
                let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
                for x in 0..p.k {
                    let t = a[at(&p.a, bt, i, x)].to_f64() * b[at(&p.b, bt, x, j)].to_f64();
                    exact += t;
                    magnitude += t.abs();
                }
                let o = at(&p.c, bt, i, j);
                offsets.push(o);
                let old = if p.beta == 0.0 {
                    0.0
                } else {
                    p.beta as f64 * c0[o].to_f64()
                };
                let value = p.alpha as f64 * exact + old;
                let bound = allowed::<T>(
                    value,
                    (p.alpha as f64).abs() * magnitude + old.abs(),
                    p.k + 1,
                );
                let g = got[o].to_f64();
                if !g.is_finite() {
                    f.non_finite += 1;
                } else if (g - value).abs() > bound {
                    f.wrong += 1;
                }
            }
            (f, offsets)
        })
        .collect();
    let mut found = Found::default();
    let mut is_c = vec![false; got.len()];
    for (f, offsets) in per_row {
        found.wrong += f.wrong;
        found.non_finite += f.non_finite;
        for o in offsets {
            is_c[o] = true;
        }
    }
    found.outside = got
        .iter()
        .zip(c0)
        .zip(&is_c)
        .filter(|((g, w), &inside)| !inside && g.to_bits() != w.to_bits())
        .count();
    found
}

/// The soak in operand type `T`.
fn run<T: Operand + Matmuls>(a: LayoutSoakArgs) -> CliResult<bool> {
    let LayoutSoakArgs {
        launches,
        max,
        pool,
        seed,
        ..
    } = a;
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    if !(1..=4096).contains(&max) {
        return Err(CliError::Usage(format!(
            "--max {max}: the layouts soak checks every element on the host; 1 to 4096"
        )));
    }
    if pool == 0 {
        return Err(CliError::Usage("--pool must be at least 1".into()));
    }
    let device = tilus::runtime::Device::open(0)?;
    let stream = device.stream().clone();
    let mut rng = Rng::new(seed);
    let pairs: Vec<(usize, usize)> = (0..pool)
        .map(|_| {
            let n = 1 + ((rng.next_f64() * max as f64) as usize).min(max - 1);
            let k = 1 + ((rng.next_f64() * (2 * max) as f64) as usize).min(2 * max - 1);
            (n, k)
        })
        .collect();
    let kernels = kernels();
    let ns: Vec<usize> = pairs.iter().map(|p| p.0).collect();
    let problems: Vec<GemmProblem> = (0..launches)
        .map(|_| {
            let pair = pairs[((rng.next_f64() * pool as f64) as usize).min(pool - 1)];
            draw_problem(&mut rng, pair, &ns, max)
        })
        .collect();
    let gemms: Vec<GemmGeneral<T>> = kernels
        .iter()
        .map(|(_, config, staging)| {
            let g = GemmGeneral::fixed(config.clone(), &device);
            if *staging {
                g
            } else {
                g.without_staging()
            }
        })
        .collect();
    // every specialization the launches need, compiled and loaded up front in parallel (one
    // problem of each)
    let t = Instant::now();
    let mut keys = BTreeMap::new();
    for (i, p) in problems.iter().enumerate() {
        let (_, _, staging) = kernels[i % kernels.len()];
        let consts = specialization(p, std::mem::size_of::<T>(), staging)
            .map_err(|e| CliError::Failed(e.to_string()))?;
        keys.entry((i % kernels.len(), consts)).or_insert(*p);
    }
    keys.par_iter()
        .try_for_each(|((ki, _), p)| gemms[*ki].warm(p))
        .map_err(|e| CliError::Failed(e.to_string()))?;
    outln!(
        "compiled {} specializations of the general GEMM ({}) in {:.1} s",
        keys.len(),
        T::NAME,
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let mut totals = vec![Found::default(); kernels.len()];
    let mut elements = 0usize;
    for (i, p) in problems.iter().enumerate() {
        let ki = i % kernels.len();
        let (la, lb, lc) = p.lengths().map_err(CliError::Failed)?;
        let ha: Vec<T> = seed_inputs(la, p.k, &mut rng);
        let hb: Vec<T> = seed_inputs(lb, p.k, &mut rng);
        // C's old values; NaN where beta is 0 (the kernel must not read them)
        let hc: Vec<T> = if p.beta == 0.0 {
            vec![T::NAN; lc]
        } else {
            seed_inputs(lc, 1, &mut rng)
        };
        let up = |v: &[T]| {
            stream
                .clone_htod(v)
                .map_err(|e| CliError::Failed(format!("{e:?}")))
        };
        let (da, db, mut dc) = (up(&ha)?, up(&hb)?, up(&hc)?);
        gemms[ki]
            .run(&stream, p, &da, &db, &mut dc)
            .map_err(|e| CliError::Failed(format!("launch {i} ({p:?}): {e}")))?;
        let got = stream
            .clone_dtoh(&dc)
            .map_err(|e| CliError::Failed(format!("{e:?}")))?;
        let f = check(p, (&ha, &hb, &hc), &got);
        let total = &mut totals[ki];
        total.wrong += f.wrong;
        total.non_finite += f.non_finite;
        total.outside += f.outside;
        elements += p.batch * p.m * p.n;
        if (i + 1) % 500 == 0 {
            let bad: usize = totals
                .iter()
                .map(|f| f.wrong + f.non_finite + f.outside)
                .sum();
            outln!(
                "{} launches, {elements} elements checked, {bad} bad, {:.1} s",
                i + 1,
                t.elapsed().as_secs_f64()
            );
        }
        if f.wrong + f.non_finite + f.outside > 0 {
            outln!(
                "launch {i}: {} {p:?}: {} wrong, {} non-finite, {} outside C changed",
                kernels[ki].0,
                f.wrong,
                f.non_finite,
                f.outside
            );
        }
    }
    outln!(
        "{launches} launches ({elements} elements checked exactly) in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    for (ki, (name, _, _)) in kernels.iter().enumerate() {
        let f = totals[ki];
        outln!(
            "{name}: {} launches, {} wrong, {} NaN/inf, {} outside C changed",
            launches / kernels.len() + (ki < launches % kernels.len()) as usize,
            f.wrong,
            f.non_finite,
            f.outside
        );
    }
    Ok(totals
        .iter()
        .all(|f| f.wrong + f.non_finite + f.outside == 0))
}
