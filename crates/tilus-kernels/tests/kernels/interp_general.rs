//! The general GEMM on the CPU interpreter against an f64 reference: A and B in every order
//! (C row- and column-major), leading dimensions wider than the rows, batches with an
//! operand shared by every product (batch stride 0), `alpha` and `beta` (C read only where
//! beta is not 0), edges in M and N; and its refusals, before anything runs.

use half::{bf16, f16};
use tilus_kernels::gemm::general::{GemmGeneral, GemmProblem, Layout, MatmulGeneral, Order};
use tilus_kernels::gemm::persistent::MatmulPersistent;
use tilus_kernels::gemm::Matmuls;
use tilus_kernels::Error;

/// `len` values in `[-1, 1)` on a grid of 1/64 (exact in f16 and bf16), from `seed`.
pub(crate) fn values(len: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) % 128) as f64 / 64.0 - 1.0
        })
        .collect()
}

/// The f64 result of problem `p` on `a`, `b` and C's old values `c0`, at every element C's
/// layout addresses (the rest keep `c0`), and which elements those are.
pub(crate) fn reference(
    p: &GemmProblem,
    a: &[f64],
    b: &[f64],
    c0: &[f64],
) -> (Vec<f64>, Vec<bool>) {
    let mut c = c0.to_vec();
    let mut is_c = vec![false; c0.len()];
    let at = |l: &Layout, bt: usize, i: usize, j: usize| bt * l.batch_stride + l.offset(i, j);
    for bt in 0..p.batch {
        for i in 0..p.m {
            for j in 0..p.n {
                let dot: f64 = (0..p.k)
                    .map(|x| a[at(&p.a, bt, i, x)] * b[at(&p.b, bt, x, j)])
                    .sum();
                let o = at(&p.c, bt, i, j);
                let old = if p.beta == 0.0 {
                    0.0
                } else {
                    c0[o] * p.beta as f64
                };
                c[o] = p.alpha as f64 * dot + old;
                is_c[o] = true;
            }
        }
    }
    (c, is_c)
}

/// Runs `p` on the interpreter in `T` with `config` and checks every element of C against
/// the reference, within the output type's rounding (`eps` relative) of the f32 result.
fn check<T: Matmuls + Copy>(
    config: &MatmulGeneral,
    p: &GemmProblem,
    seed: u64,
    (from, to, eps): (fn(f64) -> T, fn(T) -> f64, f64),
) {
    let (la, lb, lc) = p.lengths().unwrap();
    let (a, b) = (values(la, seed), values(lb, seed + 1));
    // C's old values, NaN where beta is 0 (they must not be read)
    let c0: Vec<f64> = values(lc, seed + 2)
        .into_iter()
        .map(|v| if p.beta == 0.0 { f64::NAN } else { v })
        .collect();
    let (ha, hb): (Vec<T>, Vec<T>) = (
        a.iter().map(|&v| from(v)).collect(),
        b.iter().map(|&v| from(v)).collect(),
    );
    let mut hc: Vec<T> = c0.iter().map(|&v| from(v)).collect();
    GemmGeneral::<T>::interpret(config, p, &ha, &hb, &mut hc).unwrap();
    let (want, is_c) = reference(p, &a, &b, &c0);
    for (i, (g, w)) in hc.iter().zip(&want).enumerate() {
        let g = to(*g);
        if !is_c[i] {
            // not an element of C: untouched
            let same = g == to(from(*w)) || (g.is_nan() && w.is_nan());
            assert!(same, "{p:?}: element {i} outside C was written ({g})");
            continue;
        }
        assert!(
            (g - w).abs() <= eps * w.abs() + 1e-3,
            "{p:?} ({config:?}): element {i} is {g}, the product {w}"
        );
    }
}

fn f16s() -> (fn(f64) -> f16, fn(f16) -> f64, f64) {
    (f16::from_f64, f16::to_f64, 1.0 / 1024.0)
}

fn bf16s() -> (fn(f64) -> bf16, fn(bf16) -> f64, f64) {
    (bf16::from_f64, bf16::to_f64, 1.0 / 128.0)
}

/// A 128 × 128 cooperative tile (two consumer warp groups of 64 rows).
fn tile() -> MatmulGeneral {
    MatmulGeneral {
        tile: MatmulPersistent {
            block_m: 128,
            block_n: 128,
            stages: 3,
            ..MatmulPersistent::default()
        },
    }
}

/// Row- or column-major storage of an `r × c` matrix, `pad` elements wider than it needs.
pub(crate) fn stored(order: Order, (r, c): (usize, usize), pad: usize) -> Layout {
    match order {
        Order::RowMajor => Layout::row_major(c + pad),
        Order::ColMajor => Layout::col_major(r + pad),
    }
}

#[test]
fn every_order_of_a_and_b_with_either_c() {
    tilus_bench::test_cache!();
    let (m, n, k) = (136, 144, 96);
    let orders = [Order::RowMajor, Order::ColMajor];
    let mut seed = 200;
    for oa in orders {
        for ob in orders {
            for oc in orders {
                let p = GemmProblem::new(1, (m, n, k))
                    .a(stored(oa, (m, k), 8))
                    .b(stored(ob, (k, n), 16))
                    .c(stored(oc, (m, n), 8));
                check(&tile(), &p, seed, f16s());
                seed += 3;
            }
        }
    }
}

#[test]
fn batches_share_an_operand_of_stride_zero_and_scale() {
    tilus_bench::test_cache!();
    let (m, n, k) = (72, 136, 64);
    let a = stored(Order::ColMajor, (m, k), 8);
    let a = a.batched(a.ld * k + 64);
    // one B for every product
    let b = stored(Order::RowMajor, (k, n), 8);
    let c = Layout::row_major(n + 8).batched((n + 8) * m + 8);
    let p = GemmProblem::new(3, (m, n, k)).a(a).b(b).c(c);
    check(&tile(), &p, 300, f16s());
    check(&tile(), &p.scales(0.5, -1.5), 310, f16s());
    // ping-pong warp groups, bf16, alpha only
    let pp = MatmulGeneral {
        tile: MatmulPersistent {
            ping_pong: 1,
            ..tile().tile
        },
    };
    check(&pp, &p.scales(2.0, 0.0), 320, bf16s());
    // C stored from registers
    let regs = MatmulGeneral {
        tile: MatmulPersistent {
            tma_store: 0,
            ..tile().tile
        },
    };
    check(&regs, &p.scales(1.0, 1.0), 330, bf16s());
}

#[test]
fn problems_that_do_not_fit_are_refused_before_anything_runs() {
    let shape = |e: Error| match e {
        Error::Shape { message, .. } => message,
        e => panic!("not a shape error: {e}"),
    };
    let (a, b) = (vec![f16::ONE; 64 * 80], vec![f16::ONE; 64 * 80]);
    let mut c = vec![f16::NAN; 64 * 64];
    let run = |p: &GemmProblem, c: &mut [f16]| {
        GemmGeneral::<f16>::interpret(&tile(), p, &a, &b, c).map_err(shape)
    };
    let p = GemmProblem::new(1, (64, 64, 64));
    let cases = [
        (GemmProblem::new(1, (64, 64, 0)), "k = 0"),
        (
            p.a(Layout::row_major(32)),
            "leading dimension 32 is shorter",
        ),
        (p.c(Layout::row_major(68)), "needs at least"),
        (p.b(Layout::row_major(65)), "multiples of 16 bytes"),
        (
            GemmProblem::new(2, (32, 32, 32)).c(Layout::row_major(32).batched(16)),
            "overwrite each other",
        ),
    ];
    for (q, why) in cases {
        let e = run(&q, &mut c).unwrap_err();
        assert!(e.contains(why), "{q:?}: {e}");
    }
    assert!(c.iter().all(|v| v.is_nan()), "nothing ran");
    run(&p, &mut c).unwrap();
    assert!(c.iter().all(|&v| v == f16::from_f32(64.0)), "{:?}", &c[..4]);
}
